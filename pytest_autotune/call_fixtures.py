"""pytest's own fixtures that hold a test's state (`monkeypatch`, `caplog`, `recwarn`,
`capsys`, ...) in a candidate's test body: given to each call as pytest made them, never
copied with the inputs.

The inputs are copied for each call, and an object holding a list is copied with it: the
body's `monkeypatch` was a copy whose patches the test's teardown never undid (a variable
set in the body stayed set for the rest of the session), `caplog.set_level` left the
logger's level changed, and `recwarn` recorded nothing.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

KEPT = (
    pytest.MonkeyPatch,
    pytest.LogCaptureFixture,
    pytest.WarningsRecorder,
    pytest.CaptureFixture,
    pytest.TempPathFactory,
    pytest.Config,
)
"""The types of the fixture values that are the test's own state, never an input."""


def kept_fixtures(arguments: Mapping[str, Any]) -> dict[str, Any]:
    """The arguments that are pytest's stateful fixtures (`KEPT`), by name: `monkeypatch`
    itself, or a fixture of the user's that returns it."""
    return {name: value for name, value in arguments.items() if isinstance(value, KEPT)}


__all__ = ["KEPT", "kept_fixtures"]
