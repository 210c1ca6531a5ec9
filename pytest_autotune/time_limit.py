"""A per-candidate time limit: a hung candidate fails by name instead of hanging CI.

A call is never timed with a timer of its own: arming `setitimer` around each call would
add a system call or two to every sample, a microsecond that would read as a regression of
a small kernel against a baseline measured without it. A call records only that it
started; a watchdog thread, which sleeps a whole limit at a time, interrupts the main
thread with SIGALRM when the same call is still running a limit later, so a hung call ends
between one and two limits after it started. SIGALRM is the signal pytest-timeout's
default method uses: while armed, our handler passes every SIGALRM that is not ours to the
handler that was there before, so pytest-timeout's limit for the whole test still fires.

Needs SIGALRM and the main thread (POSIX); elsewhere calls run without a limit. A call
blocked inside C code that does not return to Python is interrupted only when it does.
"""

from __future__ import annotations

import signal
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import FrameType
from typing import Any

from pytest_autotune.tune.errors import AutotuneError, AutotuneSkip, CandidateStopped


class TimeLimitExceeded(CandidateStopped):
    """A candidate's call ran past the time limit; the message names the candidate."""

    def __init__(self, name: str, seconds: float) -> None:
        super().__init__(f"ran past its time limit of {seconds:g} s and was stopped")
        self.name = name
        self.seconds = seconds

    def __reduce__(self) -> tuple[Any, ...]:
        # By an Exception's `args` (the message alone) it could not be unpickled.
        return (type(self), (self.name, self.seconds), self.__dict__)


_STOPPED_IN = "autotune_stopped_in"


def stopped_in(exc: BaseException) -> str | None:
    """The candidate whose call `exc` stopped, where another SIGALRM handler raised it
    (pytest-timeout's alarm) while a call ran under a `TimeLimit`; else None."""
    name = getattr(exc, _STOPPED_IN, None)
    return name if isinstance(name, str) else None


def crashed(exc: BaseException) -> bool:
    """Whether `exc`, raised by a candidate's call, is its crash, whose traceback its test
    shows (`failing.raise_again`): not a decline (`AutotuneSkip`, an `AutotuneError`), nor
    the stop at the time limit, which its test says in a line of its own."""
    return not isinstance(exc, (AutotuneSkip, AutotuneError, TimeLimitExceeded))


class Limited:
    """`fn` called under `limit` as the candidate `name`: a production set's candidate
    (the `autotune` fixture's), which the tuner calls without a test body around it.

    It costs a few hundred nanoseconds a call, which a small kernel's baseline must not
    carry: the gate measures the function itself (`unlimited`). It pickles as `fn` alone,
    since a fresh process that measures a CPU winner again (`fresh_process`) runs it
    under that process's own timeout."""

    __slots__ = ("__weakref__", "fn", "limit", "name", "raised")

    def __init__(
        self, fn: Callable[..., Any], limit: TimeLimit, name: str, raised: set[str] | None = None
    ) -> None:
        self.fn, self.limit, self.name, self.raised = fn, limit, name, raised

    def __call__(self, *values: Any) -> Any:
        try:
            return self.limit.call(self.name, self.fn, *values)
        except Exception as exc:
            # Its name kept (`raised`), for its test to show the traceback: the tuner
            # keeps only the exception's text. A decline is no crash: kept, it was the
            # one called again, and the crash of another candidate showed no traceback.
            if self.raised is not None and crashed(exc):
                self.raised.add(self.name)
            raise

    def __reduce__(self) -> tuple[Any, ...]:
        return (unlimited, (self.fn,))

    def __repr__(self) -> str:
        return f"Limited({self.fn!r}, {self.limit.seconds} s)"


def unlimited(fn: Callable[..., Any]) -> Callable[..., Any]:
    """The function a `Limited` calls; any other function as it is."""
    return fn.fn if isinstance(fn, Limited) else fn


JIT_COMPILERS = ("numba.core.compiler",)
"""Modules whose frames on the stack mean the call is being compiled, not run: Numba compiles
an `@njit` function (a `@vectorize` one without signatures, a `parallel=True` one) at its
first call with new argument types, which took 0.3 s for a 10 us kernel."""


COMPILE_POLL_S = 0.05
"""How often the watchdog looks whether a call still compiles, once it found it compiling."""


def _compiling(frame: FrameType | None) -> bool:
    """Whether `frame`, or a frame that called it, runs in a JIT compiler (`JIT_COMPILERS`):
    a compile is no hung call, and stopped it would fail a fast kernel by its first call."""
    while frame is not None:
        if str(frame.f_globals.get("__name__", "")).startswith(JIT_COMPILERS):
            return True
        frame = frame.f_back
    return False


class Watchdog(threading.Thread):
    """The thread that watches a test's candidate calls (`TimeLimit.armed`). It touches no
    device, and a CUDA capture beside it stays on the blocking stream
    (`GraphReplays._capture_stream`)."""


class TimeLimit:
    """The limit of one test's candidate calls; `call` runs one, inside `armed()`. The time
    a JIT compiler spends in a call does not count (`JIT_COMPILERS`)."""

    def __init__(self, seconds: float | None) -> None:
        self.seconds = seconds
        self._calls = 0
        self._running: str | None = None
        self._fired = False
        self._armed = threading.Event()
        self._done = threading.Condition()

    def call(self, name: str, fn: Callable[..., Any], *args: Any) -> Any:
        """`fn(*args)`, stopped with `TimeLimitExceeded` if it runs past the limit."""
        __tracebackhide__ = True  # a candidate's traceback shows the user's frames alone
        self._calls += 1
        self._running = name
        try:
            return fn(*args)
        finally:
            self._running = None

    @contextmanager
    def armed(self) -> Iterator[None]:
        """Watch the calls made inside this block (a no-op without a limit or SIGALRM)."""
        usable = (
            self.seconds is not None
            and hasattr(signal, "SIGALRM")
            and threading.current_thread() is threading.main_thread()
        )
        if not usable:
            yield
            return
        previous = signal.getsignal(signal.SIGALRM)

        def handler(signum: int, frame: FrameType | None) -> None:
            if self._fired:
                self._fired = False
                # Else the call ended as the signal came, or it is compiling: the watchdog
                # fires again a limit later, while the same call runs.
                if self._running is not None and not _compiling(frame):
                    raise TimeLimitExceeded(self._running, float(self.seconds or 0))
                return
            if callable(previous):
                try:
                    previous(signum, frame)
                except BaseException as exc:
                    # pytest-timeout's alarm, raised inside whichever call runs: a group is
                    # tuned in its first test, so the test it fails is often a fast
                    # candidate's, and its message names none (`stopped_in`).
                    if self._running is not None:
                        setattr(exc, _STOPPED_IN, self._running)
                    raise

        signal.signal(signal.SIGALRM, handler)
        watchdog = Watchdog(target=self._watch, args=(threading.main_thread().ident,), daemon=True)
        self._armed.set()
        watchdog.start()
        try:
            yield
        finally:
            with self._done:
                self._armed.clear()
                self._done.notify_all()
            watchdog.join()
            signal.signal(signal.SIGALRM, previous)

    def _watch(self, main: int | None) -> None:
        assert self.seconds is not None and main is not None
        # Untraced, though coverage.py traces every new thread: on Python 3.12+ one traced
        # thread alive keeps line events on for all, and the calls timed beside this one
        # with the tracer put aside (`backends.tracing`) read 2-8 times their time.
        sys.settrace(None)
        sys.setprofile(None)
        while True:
            seen = (self._calls, self._running)
            with self._done:
                self._done.wait(self.seconds)
                if not self._armed.is_set():
                    return
            if seen[1] is not None and (self._calls, self._running) == seen:
                if _compiling(sys._current_frames().get(main)):
                    # The limit counts from the compile's end: counted from the alarm that
                    # found it compiling, a 0.08 s call after a 0.22 s compile was stopped
                    # at a limit of 0.1 s four times in six.
                    self._wait_compiled(main, seen)
                    continue
                self._fired = True
                signal.pthread_kill(main, signal.SIGALRM)

    def _wait_compiled(self, main: int, seen: tuple[int, str | None]) -> None:
        """Return once the call `seen` has left the JIT compiler (or ended, or the block
        did), looking every `COMPILE_POLL_S` at most."""
        assert self.seconds is not None
        step = min(self.seconds / 10, COMPILE_POLL_S)
        while (self._calls, self._running) == seen:
            if not _compiling(sys._current_frames().get(main)):
                return
            with self._done:
                self._done.wait(step)
                if not self._armed.is_set():
                    return
