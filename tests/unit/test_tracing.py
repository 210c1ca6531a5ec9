"""Which profiler the timed loops leave on, by the name a user knows it by."""

from __future__ import annotations

import _lsprof

from pytest_autotune.backends.tracing import unsuspended


def test_the_profiler_of_python_m_cprofile_is_named_cprofile() -> None:
    # Under `python -m cProfile -m pytest`, its profiler's class is `__main__.Profile`.
    profile = type("Profile", (_lsprof.Profiler,), {"__module__": "__main__"})()
    profile.enable()
    try:
        name = unsuspended()
    finally:
        profile.disable()
    assert name == "cProfile"


def test_no_profiler_is_named_where_none_runs() -> None:
    assert unsuspended() is None
