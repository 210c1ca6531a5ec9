"""The per-candidate time limit: a hung call fails by name, others run unlimited."""

from __future__ import annotations

import signal
import threading
import time
from typing import Any

import pytest

from pytest_autotune.time_limit import TimeLimit, TimeLimitExceeded

pytestmark = pytest.mark.skipif(not hasattr(signal, "SIGALRM"), reason="needs SIGALRM")


def test_a_call_past_the_limit_is_stopped_and_named() -> None:
    limit = TimeLimit(0.1)
    with limit.armed(), pytest.raises(TimeLimitExceeded) as error:
        limit.call("sleepy", time.sleep, 30)
    assert error.value.name == "sleepy"
    assert "time limit of 0.1 s" in str(error.value)


def _jit_compiled(compile_seconds: float, run: Any) -> Any:
    """A function whose first call spends `compile_seconds` in a frame of Numba's compiler
    module, as an `@njit` function's does, and then runs `run`."""
    compiler: dict[str, Any] = {"__name__": "numba.core.compiler", "time": time}
    exec("def compile_extra(seconds):\n    time.sleep(seconds)\n", compiler)

    def dispatcher(*args: Any) -> Any:
        if not dispatcher.compiled:  # type: ignore[attr-defined]
            compiler["compile_extra"](compile_seconds)
            dispatcher.compiled = True  # type: ignore[attr-defined]
        return run(*args)

    dispatcher.compiled = False  # type: ignore[attr-defined]
    return dispatcher


def test_a_jit_compile_on_the_first_call_does_not_count_toward_the_limit() -> None:
    # A 10 us Numba kernel compiled for 0.3 s at its first call: stopped at a limit of
    # 0.1 s, it failed "ran past its time limit" in plain pytest and under --autotune.
    limit = TimeLimit(0.1)
    kernel = _jit_compiled(0.35, lambda x: x + 1)
    with limit.armed():
        assert limit.call("njit_kernel", kernel, 1) == 2
        assert limit.call("njit_kernel", kernel, 2) == 3


def test_the_limit_counts_from_the_compiles_end() -> None:
    # Counted from the alarm that found the call compiling, a 0.08 s call after a 0.22 s
    # compile was stopped at a limit of 0.1 s four times in six. Here the alarms come at
    # 0.2 and 0.4 s, in the compile, and at 0.6 s, in the 0.13 s run that follows it.
    limit = TimeLimit(0.2)
    kernel = _jit_compiled(0.5, lambda: time.sleep(0.13) or "ran")
    with limit.armed():
        assert limit.call("njit_kernel", kernel) == "ran"


def test_a_call_that_hangs_after_its_compile_is_still_stopped() -> None:
    limit = TimeLimit(0.1)
    kernel = _jit_compiled(0.25, time.sleep)
    start = time.perf_counter()
    with limit.armed(), pytest.raises(TimeLimitExceeded) as error:
        limit.call("hangs", kernel, 30)
    assert error.value.name == "hangs"
    assert time.perf_counter() - start < 0.25 + 2 * 0.1 + 1.0


def test_calls_within_the_limit_return_their_value_and_the_handler_is_restored() -> None:
    before = signal.getsignal(signal.SIGALRM)
    limit = TimeLimit(0.2)
    with limit.armed():
        assert [limit.call("quick", int, i) for i in range(1000)] == list(range(1000))
        limit.call("short", time.sleep, 0.05)
    assert signal.getsignal(signal.SIGALRM) is before


def test_without_a_limit_nothing_is_armed() -> None:
    before = signal.getsignal(signal.SIGALRM)
    limit = TimeLimit(None)
    with limit.armed():
        assert signal.getsignal(signal.SIGALRM) is before
        assert limit.call("any", lambda: 3) == 3


def test_another_handlers_alarm_is_passed_on() -> None:
    """pytest-timeout's signal method uses SIGALRM too: its alarm must still fire."""
    fired: list[int] = []

    def other(signum: int, frame: object) -> None:
        fired.append(signum)

    previous = signal.signal(signal.SIGALRM, other)
    try:
        with TimeLimit(5.0).armed():
            signal.raise_signal(signal.SIGALRM)
        assert fired == [signal.SIGALRM]
    finally:
        signal.signal(signal.SIGALRM, previous)


def test_the_watchdog_thread_runs_untraced_under_coverage() -> None:
    # coverage.py traces each new thread (`threading.settrace`). On Python 3.12+ one traced
    # thread alive keeps line events on for every thread, so the watchdog, traced, made the
    # calls timed with the tracer put aside (`backends.tracing`) read 2-8 times their time.
    calls: list[str] = []

    def tracer(frame: Any, event: str, arg: Any) -> None:
        if event == "call" and threading.current_thread() is not threading.main_thread():
            calls.append(frame.f_code.co_name)

    hook = threading.gettrace()
    threading.settrace(tracer)
    try:
        limit = TimeLimit(5.0)
        with limit.armed():
            limit.call("quick", time.sleep, 0.01)
    finally:
        threading.settrace(hook)
    assert "_watch" in calls  # the tracer did reach the thread
    assert calls[-1] == "_watch"  # and saw nothing it called


def _double(x: int) -> int:
    return 2 * x


def test_a_limited_function_runs_under_its_limit_and_pickles_and_measures_bare() -> None:
    import pickle

    from pytest_autotune.time_limit import Limited, unlimited

    limit = TimeLimit(5.0)
    limited = Limited(_double, limit, "double")
    with limit.armed():
        assert limited(21) == 42
    # A fresh process gets the function itself; the gate measures it bare.
    assert pickle.loads(pickle.dumps(limited)) is _double
    assert unlimited(limited) is _double
    assert unlimited(_double) is _double
