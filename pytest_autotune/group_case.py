"""What the gate judges of one group (`GroupCase`): its tuning, its device and its settings,
as the session hands it to the gate's policy (`gate_policy`, `update_policy`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pytest_autotune.plugin_settings import PluginSettings
from pytest_autotune.tune.decision import TuneDecision
from pytest_autotune.tune.tunable_set import TunableSet


@dataclass(frozen=True)
class GroupCase:
    """What the gate judges of one group: its tuning, its device and its settings."""

    group: str
    key: Any
    inputs: tuple[Any, ...]
    tunables: TunableSet
    decision: TuneDecision
    device_id: str
    settings: PluginSettings
    """The group's: the session's under its marker."""


__all__ = ["GroupCase"]
