"""A CPU winner measured again in a process of its own (`pytest_autotune.fresh_process`)."""

from __future__ import annotations

import time
from typing import Any

import numpy as np
import pytest

from pytest_autotune.fresh_process import measure_fresh
from pytest_autotune.gate_policy import measure_candidate

SLOW_HERE = [False]
"""A state of this process only: a fresh process imports this module anew, with False."""


def candidate(x: np.ndarray[Any, Any]) -> Any:
    if SLOW_HERE[0]:
        time.sleep(2e-3)
    return x.sum()


def failing(x: np.ndarray[Any, Any]) -> Any:
    raise ValueError("boom")


def test_a_fresh_process_measures_the_candidate_without_what_this_process_keeps() -> None:
    x = np.arange(1024, dtype=np.float64)
    SLOW_HERE[0] = True
    try:
        fresh = measure_fresh(candidate, (x,), "candidate", measure_candidate)
    finally:
        SLOW_HERE[0] = False
    assert fresh is not None
    # Here every call sleeps 2 ms; there the module was imported anew and none does.
    assert fresh.median < 1e-3
    assert len(fresh.samples) >= 10
    assert fresh.helpers is not None and fresh.helpers < 0.1


def test_a_candidate_that_does_not_pickle_or_fails_there_gives_none() -> None:
    x = np.arange(16, dtype=np.float64)
    assert measure_fresh(lambda x: x.sum(), (x,), "lambda", measure_candidate) is None
    assert measure_fresh(failing, (x,), "failing", measure_candidate) is None


def test_inputs_past_the_size_limit_stay_in_this_process(monkeypatch: pytest.MonkeyPatch) -> None:
    def no_spawn(method: str) -> None:
        raise AssertionError("started a process for inputs past the limit")

    monkeypatch.setattr("pytest_autotune.fresh_process.multiprocessing.get_context", no_spawn)
    monkeypatch.setattr("pytest_autotune.fresh_process.MAX_INPUT_BYTES", 1024)
    nested = ([np.zeros(100)], {"b": np.zeros(100)})  # 1,600 bytes of arrays
    assert measure_fresh(candidate, nested, "candidate", measure_candidate) is None
