"""The hooks that hold each test of a pytest-xdist worker that tunes to the shared locks of
`quiet`, so that no test runs beside another worker's measurement, and pytest-timeout's
timer of a test, which says whether a test that tunes may wait inside its set-up."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import pytest

from pytest_autotune.stash_keys import SESSION


@pytest.hookimpl(hookwrapper=True, tryfirst=True)
def pytest_runtest_protocol(item: pytest.Item) -> Any:
    """On a pytest-xdist worker that tunes, an ordinary test (setup, call and teardown)
    holds its shared locks, so that it never runs beside another worker's measurement
    (`pytest_autotune.quiet`). A test that tunes waits for the device lock instead.
    Outside every other plugin's wrapper, whichever loaded first: the wait for another
    worker's measurement is no part of the test, and pytest-timeout's alarm, where its
    wrapper held this one, fired in it outside any phase of the test, an INTERNALERROR."""
    state = item.config.stash.get(SESSION, None)
    quiet = state.quiet if state is not None else None
    if quiet is None:
        yield
        return
    if item.get_closest_marker("autotune") is not None:
        # It holds the shared locks for its set-up (`pytest_runtest_setup`), inside
        # pytest-timeout's window: waiting there for another worker's measurement failed
        # the test with a bare "Timeout" naming neither. The wait is made here first.
        with quiet.testing():
            pass
        yield
        return
    with quiet.testing():
        yield


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_setup(item: pytest.Item) -> Any:
    """A test that tunes holds the shared locks for its set-up, as an ordinary test does
    for all of it: its fixtures (inputs made on the GPU, 256 MiB of random numbers) ran
    beside another worker's measurement, which its body alone waits for."""
    with _set_up_or_torn_down(item):
        yield


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_teardown(item: pytest.Item) -> Any:
    """A test that tunes holds the shared locks for its teardown (`pytest_runtest_setup`)."""
    with _set_up_or_torn_down(item):
        yield


@contextlib.contextmanager
def _set_up_or_torn_down(item: pytest.Item) -> Iterator[None]:
    state = item.config.stash.get(SESSION, None)
    quiet = state.quiet if state is not None else None
    if quiet is None or item.get_closest_marker("autotune") is None:
        yield  # an ordinary test holds them already, for its whole protocol
        return
    if TEST_TIMER in item.stash:
        # Inside pytest-timeout's window, a wait for another worker's measurement failed the
        # test with a bare "Timeout", naming neither: such a test waited before it began
        # (`pytest_runtest_protocol`), and holds nothing here. (A hold given up on its own
        # timeout left, on Python 3.10's sqlite3, the other workers' holds waiting.)
        yield
        return
    with quiet.testing():
        yield


TEST_TIMER = pytest.StashKey[float]()
"""The seconds of pytest-timeout's timer of a test, where it times the test's set-up and
teardown too (not `func_only`)."""


@pytest.hookimpl(optionalhook=True, tryfirst=True)
def pytest_timeout_set_timer(item: pytest.Item, settings: Any) -> None:
    """pytest-timeout's timer of a test starts (its own hook; it sets the timer itself)."""
    seconds = getattr(settings, "timeout", None)
    if (
        isinstance(seconds, (int, float))
        and seconds > 0
        and not getattr(settings, "func_only", False)
    ):
        item.stash[TEST_TIMER] = float(seconds)
