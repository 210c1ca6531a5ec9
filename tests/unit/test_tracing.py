"""Which profiler the timed loops leave on, by the name a user knows it by."""

from __future__ import annotations

import _lsprof
import sys
import threading
from collections.abc import Iterator

import pytest

from pytest_autotune.backends.tracing import unsuspended, untraced


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


def _hook(*args: object) -> None:
    return None


@pytest.fixture
def thread_hooks() -> Iterator[None]:
    """A trace function for the threads started from now on, as coverage.py sets one."""
    before = threading.gettrace(), threading.getprofile()
    threading.settrace(_hook)
    yield
    threading.settrace(before[0])
    threading.setprofile(before[1])


def test_two_threads_timing_at_once_leave_the_new_threads_trace_function(thread_hooks) -> None:
    # A tuned operation called from two threads (a thread pool over new keys) times in
    # both at once: the first to finish put back the hook for new threads, and the second
    # then "put back" the None it had read meanwhile, so threads started later (in later
    # tests too) went untraced, their lines missing from coverage.
    first_in, second_in, first_out = threading.Event(), threading.Event(), threading.Event()

    def first() -> None:
        sys.settrace(_hook)
        untraced(lambda: (first_in.set(), second_in.wait(5)))
        first_out.set()

    def second() -> None:
        first_in.wait(5)
        sys.settrace(_hook)
        untraced(lambda: (second_in.set(), first_out.wait(5)))

    threads = [threading.Thread(target=first), threading.Thread(target=second)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert threading.gettrace() is _hook
