"""pytest's own fixtures that hold a test's state (`monkeypatch`, `caplog`, `recwarn`,
`capsys`, ...) in a candidate's test body: given to each call as pytest made them, never
copied with the inputs.

The inputs are copied for each call, and an object holding a list is copied with it: the
body's `monkeypatch` was a copy whose patches the test's teardown never undid (a variable
set in the body stayed set for the rest of the session), `caplog.set_level` left the
logger's level changed, and `recwarn` recorded nothing.

And each call has them as the single call of a plain test does (`EachCall`): a patch is
undone, and the log records and warnings cleared, before the next call. The body is
called for each candidate (the reference in every other candidate's test) and thousands
of times when tuned: the next candidate's body saw the last one's patch, and under
--autotune `caplog.records` held every timed call's records.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass
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


@dataclass(frozen=True)
class EachCall:
    """The test function, each call of it with a `monkeypatch` of its own (undone when the
    call ends; what fixtures patched before the test stays) and `caplog` and `recwarn`
    cleared: `patches` and `cleared` name those arguments. Where it takes `recwarn`
    (`warned`), each call also has warning filters of its own: `recwarn` records a
    warning once where it is raised (the "default" action), and from the second call on
    the body's warning went unrecorded. It pickles where the test function does."""

    test: Callable[..., Any]
    patches: tuple[str, ...]
    cleared: tuple[str, ...]
    warned: bool

    def __call__(self, **arguments: Any) -> Any:
        # Inside the timed call: a plain MonkeyPatch and try/finally cost about 2 us a
        # call on the 2-core VM, `monkeypatch.context()` in an ExitStack 4.7 us.
        for name in self.cleared:
            arguments[name].clear()
        patches = []
        for name in self.patches:
            arguments[name] = patch = pytest.MonkeyPatch()
            patches.append(patch)
        try:
            if self.warned:
                # Entered, it makes Python forget which warnings it has shown.
                with warnings.catch_warnings():
                    return self.test(**arguments)
            return self.test(**arguments)
        finally:
            for patch in patches:
                patch.undo()


def each_call(test: Callable[..., Any], kept: Mapping[str, Any]) -> Callable[..., Any]:
    """`test` as `EachCall` where it takes a fixture each call needs fresh, else itself
    (most tests: their calls pay nothing)."""
    patches = tuple(n for n, v in kept.items() if isinstance(v, pytest.MonkeyPatch))
    records = (pytest.LogCaptureFixture, pytest.WarningsRecorder)
    cleared = tuple(n for n, v in kept.items() if isinstance(v, records))
    warned = any(isinstance(v, pytest.WarningsRecorder) for v in kept.values())
    return EachCall(test, patches, cleared, warned) if patches or cleared else test


__all__ = ["KEPT", "EachCall", "each_call", "kept_fixtures"]
