"""Measuring the winner precisely: sampling until its median is known well enough to judge.

Tuning takes only as many samples as it needs to rank candidates; the gate needs to know
how precise the winner's median is (`measure_precisely`), and on a CPU a calibration read
beside each sample (`measure_winner`).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from typing import Any

from pytest_autotune.calibration import CALIBRATION_KIND
from pytest_autotune.gate.samples import Calibration, Measurement
from pytest_autotune.tune.benchmark import NS_PER_S, SampleStats, check_sample, sample_ns

DEFAULT_TARGET_RSE = 0.01
DEFAULT_TIME_CAP = 2.0
DEFAULT_MIN_SAMPLES = 10
DEFAULT_MAX_SAMPLES = 10_000


def measure_precisely(
    sample: Callable[[], float],
    *,
    target_rse: float = DEFAULT_TARGET_RSE,
    time_cap: float = DEFAULT_TIME_CAP,
    min_samples: int = DEFAULT_MIN_SAMPLES,
    max_samples: int = DEFAULT_MAX_SAMPLES,
    now: Callable[[], float] = time.perf_counter,
    name: str | None = None,
    error: Callable[[Sequence[float]], float] | None = None,
) -> tuple[float, ...]:
    """Sample the winner (seconds per call of `sample()`) until its median is known to
    `target_rse`, or `time_cap` seconds of wall clock have passed, or `max_samples` are taken.

    Tuning takes only as many samples as it needs to rank candidates; comparing one with
    a baseline needs to know how precise its median is, and the error term of the gate
    shrinks with it. `min_samples` are always taken, even past the cap: with fewer, the
    standard error itself is too uncertain to trust, and a gate that silently stops
    comparing on a slow kernel is worse than one that runs a little long. The error is
    checked after each sample up to 40, then every 5% more samples. The caller warms
    the winner up first; every sample here counts. `name` names the candidate in the error
    a non-positive or non-finite sample raises (`AutotuneError`, invalid samples). `error`
    gives the relative error to drive below `target_rse` from the samples so far (by
    default the median's, `SampleStats.median_rse`).
    """
    if min_samples < 2:
        raise ValueError(f"min_samples must be at least 2 to estimate an error, got {min_samples}")
    if max_samples < min_samples:
        raise ValueError(f"max_samples ({max_samples}) is below min_samples ({min_samples})")
    start = now()
    samples: list[float] = []
    next_check = min_samples
    while True:
        samples.append(check_sample(name or "winner", sample()))
        n = len(samples)
        if n < min_samples:
            continue
        if n >= max_samples or now() - start >= time_cap:
            return tuple(samples)
        if n >= next_check:
            # Statistics of n samples cost O(n log n): checked after every sample they
            # would dominate a short kernel's measurement, so past 40 samples the error is
            # checked every 5% more samples, overshooting the target by at most that.
            if (error or _median_rse)(samples) < target_rse:
                return tuple(samples)
            next_check = n + max(1, n // 20)


def _median_rse(samples: Sequence[float]) -> float:
    return SampleStats.of(samples).median_rse


def measure_winner(
    sample: Callable[[], float],
    *,
    calibration: Callable[[], float] | None = None,
    calibration_kind: str = CALIBRATION_KIND,
    name: str | None = None,
    **limits: Any,
) -> Measurement:
    """The winner's precise measurement (`measure_precisely`, with its `limits`), and with
    `calibration` (seconds of one calibration read, of `calibration_kind`) a calibration
    sample right after each of the winner's, so both meet the machine in the same state.

    The measurement stops when the error of the ratio the gate compares (the winner's and
    the read's errors together) reaches the target. A calibration read the clock cannot see
    (a sample of zero: a fake client, a GPU client asked to time host work) is dropped, not
    failed: it only ever refines the comparison.
    """
    if calibration is None:
        return Measurement(_whole_ns(measure_precisely(sample, name=name, **limits)))
    reads: list[float] = []
    usable = True

    def paired() -> float:
        nonlocal usable
        seconds = sample()
        if usable:
            read = calibration()
            usable = math.isfinite(read) and read > 0
            reads.append(read)
        return seconds

    def ratio_rse(samples: Sequence[float]) -> float:
        if not usable:
            return _median_rse(samples)
        return math.hypot(_median_rse(samples), _median_rse(reads))

    samples = measure_precisely(paired, name=name, error=ratio_rse, **limits)
    return Measurement(
        _whole_ns(samples),
        Calibration(_whole_ns(reads), calibration_kind) if usable else None,
    )


def _whole_ns(samples: Sequence[float]) -> tuple[float, ...]:
    """`samples` in whole nanoseconds, as the group's record and the cache file hold them: a
    CPU sample is a loop's time over its calls (3054.6 ns), and the gate's message gave its
    median as 3.05 us beside the 3.06 us of the table, read from the record's 3055 ns, and
    `compare` of the run's records judged other figures than the run did. A sample under half
    a nanosecond (a client's cost model) is one nanosecond, as those files write it."""
    return tuple(sample_ns(s) / NS_PER_S for s in samples)
