"""What the gate judges of one group (`GroupCase`): its tuning, its device and its settings,
as the session hands it to the gate's policy (`gate_policy`, `update_policy`).
"""

from __future__ import annotations

from collections.abc import Mapping
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
    thread_env: Mapping[str, str] | None = None
    """The caps of BLAS, OpenMP and Numba threads its client's fingerprint names (a CPU
    client's `thread_env`), None where it names none: a baseline measured under other caps
    is not comparable, and an update does not join it."""


__all__ = ["GroupCase"]
