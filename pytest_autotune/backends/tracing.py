"""A tracer or profiler (coverage.py, a debugger, `profile`) put aside while calls are timed,
and one untimed call left to it, so it still sees the candidate's lines.

Python calls a trace function at every line and a profile function at every call, which
slows Python code and not the C it calls: under `pytest --cov` (coverage.py's C tracer) a
3 us pure-Python loop read 5.6-12 us and a NumPy call 1.3-2 times its time, so a user's
`addopts = --cov=mypkg` made the gate read a false +78% regression against baselines
recorded without it, tuning picked the NumPy candidate, and baselines recorded under it
hid slowdowns. With the trace function put aside for the timed loop, the same calls read
their untraced times (Python 3.11-3.13). From Python 3.12, one traced thread alive keeps
line events on for every thread (so `time_limit`'s watchdog runs untraced): a traced
thread of the user's own, running beside the timed calls, still costs them part of the
tracer's cost. coverage.py's `sys.monitoring` core
(`COVERAGE_CORE=sysmon`) turns each event off once it has seen it, so it costs the timed
calls nothing measurable and is left alone. A function that `sys.settrace` could not put
back (installed from C without a callable object: cProfile's on Python 3.11), and a
profiler or debugger of `sys.monitoring` (cProfile's from 3.12), whose events could be
turned off only by re-instrumenting every function, inside the timed loop, stay on:
`unsuspended` names them, so that a run can say its times carry their cost (cProfile read
a 3 us NumPy call as 10 us).
"""

from __future__ import annotations

import os
import sys
import threading
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")


def tracing() -> bool:
    """Whether this thread's calls are traced or profiled by a function `untraced` puts aside."""
    return callable(sys.gettrace()) or callable(sys.getprofile())


def unsuspended() -> str | None:
    """The profiler or debugger that slows this thread's calls and that `untraced` leaves on,
    by name (`cProfile`); None where there is none."""
    for hook in (sys.getprofile(), sys.gettrace()):
        if hook is not None and not callable(hook):
            return _package_of(hook)
    monitoring = getattr(sys, "monitoring", None)  # Python 3.12 on
    if monitoring is not None:
        for tool in (monitoring.PROFILER_ID, monitoring.DEBUGGER_ID):
            name = monitoring.get_tool(tool)
            if name is not None and monitoring.get_events(tool):
                return str(name)
    return None


def _package_of(hook: object) -> str:
    """The package whose class `hook` is: under `python -m cProfile` its class is
    `__main__.Profile`, so the first class of a module by name counts, and cProfile's C
    base class `_lsprof.Profiler` is cProfile's."""
    for cls in type(hook).__mro__:
        if cls.__module__ not in ("__main__", "builtins"):
            package = cls.__module__.split(".")[0]
            return "cProfile" if package == "_lsprof" else package
    return type(hook).__qualname__


def untraced(call: Callable[..., T], *args: Any) -> T:
    """`call(*args)` with this thread's trace and profile functions, and those threads it
    starts would get, put aside; all put back after, even when it raises.

    They are put aside and back in this one frame, around the whole call: coverage.py's C
    tracer keeps a stack of the frames it saw enter, and a frame that entered traced but
    returned untraced (a context manager's `__enter__` that put it aside) left it a frame
    off: with `--cov-branch` it recorded arcs from one function's lines to another's.
    """
    trace, profile = sys.gettrace(), sys.getprofile()
    # Only what `settrace` and `setprofile` can put back: coverage's CTracer is callable for
    # just this (`sys.settrace(sys.gettrace())`), cProfile's profiler is not.
    trace = trace if callable(trace) else None
    profile = profile if callable(profile) else None
    if trace is None and profile is None and _THREAD_HOOKS.unset():
        return call(*args)
    if trace is not None:
        sys.settrace(None)
    if profile is not None:
        sys.setprofile(None)
    _THREAD_HOOKS.put_aside()
    try:
        return call(*args)
    finally:
        if trace is not None:
            sys.settrace(trace)
        if profile is not None:
            sys.setprofile(profile)
        _THREAD_HOOKS.put_back()


class _ThreadHooks:
    """The trace and profile functions `threading` gives the threads started from now on:
    one pair for the whole process, so put aside by the first of the threads timing at
    once and put back by the last. Each putting back what it read, the first to finish put
    them back under the others, and the last put back the None it had read meanwhile: the
    threads started after it went untraced for the rest of the run (coverage lost)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._timing = 0
        self._held: tuple[Any, Any] = (None, None)

    def unset(self) -> bool:
        """Whether no hook is set, nor put aside by a thread timing now."""
        with self._lock:
            hooks = threading.gettrace(), threading.getprofile()
            return self._timing == 0 and hooks == (None, None)

    def put_aside(self) -> None:
        with self._lock:
            if self._timing == 0:
                self._held = threading.gettrace(), threading.getprofile()
                threading.settrace(None)
                threading.setprofile(None)
            self._timing += 1

    def put_back(self) -> None:
        with self._lock:
            if self._timing == 0:  # a child forked while it timed: `after_fork` put them back
                return
            self._timing -= 1
            if self._timing == 0:
                threading.settrace(self._held[0])
                threading.setprofile(self._held[1])
                self._held = (None, None)

    def after_fork(self) -> None:
        """In a forked child, which has only the thread that forked: the threads timing in
        the parent are not there to put the hooks back, nor to release the lock."""
        self._lock = threading.Lock()
        if self._timing:
            threading.settrace(self._held[0])
            threading.setprofile(self._held[1])
        self._timing, self._held = 0, (None, None)


_THREAD_HOOKS = _ThreadHooks()
if hasattr(os, "register_at_fork"):  # POSIX
    os.register_at_fork(after_in_child=_THREAD_HOOKS.after_fork)


__all__ = ["tracing", "unsuspended", "untraced"]
