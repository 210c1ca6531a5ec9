"""Samples of one candidate, their statistics and score, and the seed's `tune_benchmark`."""

from __future__ import annotations

import math
import numbers
import statistics
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from pytest_autotune.tune.client import Client
from pytest_autotune.tune.errors import AutotuneError, AutotuneErrorKind
from pytest_autotune.tune.files import json_text

NS_PER_S = 1_000_000_000

MAD_TO_STD = 1.4826
"""The median absolute deviation of normal data times this is their standard deviation
(1 / 0.6745, the normal's third quartile): a robust spread on the scale of `std`."""


@dataclass(frozen=True, slots=True)
class SampleStats:
    """Order statistics of a sample set, in seconds."""

    count: int
    min: float
    median: float
    mean: float
    std: float
    """Population standard deviation: a spread of the times seen, not an estimate error."""
    mad: float
    """Median absolute deviation from the median, times `MAD_TO_STD`: the same spread as
    `std` for normal data, but one outlier among three or more samples barely moves it."""
    median_rse: float
    """Relative standard error of the median (`median_rse`)."""

    @classmethod
    def of(cls, samples: Sequence[float]) -> SampleStats:
        if not samples:
            raise ValueError("no samples")
        n = len(samples)
        median = statistics.median(samples)
        mean = math.fsum(samples) / n
        std = statistics.pstdev(samples, mean)
        mad = MAD_TO_STD * statistics.median(abs(s - median) for s in samples)
        return cls(n, min(samples), median, mean, std, mad, median_rse(samples, median, std))


Z95 = 1.959963984540054
"""Two-sided normal quantile of 0.95."""

ORDER_STATISTICS_FROM = 10
"""From this many samples on, the median's error comes from the order statistics around
it; below, too few lie there to bound it, and it comes from the standard deviation."""


def median_rse(samples: Sequence[float], median: float, std: float) -> float:
    """The relative standard error of the median of `samples`: the figure the gate's precise
    measurement drives below 1% and its intervals are built from.

    From `ORDER_STATISTICS_FROM` samples on it is distribution-free: the order statistics
    at ranks n/2 -/+ 1.96 sqrt(n)/2 bound the median at about 95% whatever the
    distribution, and half their distance over 1.96 is its standard error (on normal data
    the same 1.2533 std / sqrt(n) as below). A few preempted samples, tens of
    milliseconds in a millisecond kernel on a shared machine, move neither end, where they
    blew the standard deviation up: on the loaded 2-core VM the std-based error read 46-96%
    while the median's change moved by 2-3.5% from session to session (BENCHMARKS.md,
    issue 9), and every comparison there was "too noisy". With fewer samples it is
    1.2533 std / sqrt(n), the median's error on roughly normal data. Checked by simulation
    (normal samples, 4000 sets each): the reported error is 1.38x the true one at 10
    samples, 1.12x at 20, 0.95-0.98x at 50 and 200, and with 5% of samples 5-30 times too
    long 1.11x at 20 and 0.95x at 50.
    """
    n = len(samples)
    if n < 2 or median <= 0:
        return math.inf
    if n < ORDER_STATISTICS_FROM:
        return 1.2533 * std / math.sqrt(n) / median
    ordered = sorted(samples)
    half = Z95 * math.sqrt(n) / 2
    low = max(0, math.floor(n / 2 - half))
    high = min(n - 1, math.ceil(n / 2 + half) - 1)
    return (ordered[high] - ordered[low]) / (2 * Z95) / median


def score(samples: Sequence[float]) -> float:
    """The score of a sample set, the seed's with a robust spread term; lower is better.

    `(0.8*min + 0.2*median) * (1 + mad/(1+median))`, computed in nanoseconds, where `mad`
    is `SampleStats.mad` (1.4826 times the median absolute deviation): the best run carries
    most of the weight because noise only ever adds time, the median keeps one lucky sample
    from deciding, and the spread term penalises a candidate that is unstable from run to
    run by roughly its coefficient of variation (the `1+` only guards a zero median).

    The seed's spread term is `std/(1+mean)`, which a single outlier moves: on a shared VM
    that preempts about 1% of samples, by up to milliseconds, one preempted sample made a
    200 us candidate look unstable enough to lose to a 210 us one. The median absolute
    deviation ignores one outlier among three or more samples in either direction, yet
    grows when most samples scatter, which is what an unstable candidate does; the median
    in the denominator keeps the term as robust. Measured on `benchmarks/decision.py`'s
    busy waits, 5% apart, re-judging the same samples by both terms (BENCHMARKS.md): the
    adaptive round robin, judging three samples per candidate, chose the true fastest in
    12412/12600 tunings with `std/(1+mean)` and 12599/12600 with this term in a quiet
    phase, 9010/10000 and 9984/10000 under a competing load; the fixed pass of 10
    samples, 7072/10000 and 9986/10000 under that load. On two samples the terms tie
    (9279/10000 each): the median absolute deviation of two is their std, so no spread of
    two is robust, and `min_samples` counts the samples left after the dropped first one.
    """
    stats = SampleStats.of([s * NS_PER_S for s in _seconds(samples, "score")])
    return (0.8 * stats.min + 0.2 * stats.median) * (1.0 + stats.mad / (1.0 + stats.median))


def median_score(samples: Sequence[float]) -> float:
    """The score of samples whose noise runs both ways: their median, in nanoseconds as
    `score`'s, so that outcomes scored either way compare.

    `score` leans on the best sample because noise only ever adds time to a device's
    timing. A caller-timed sample of a host-bound call on a GPU (the host's time to enqueue
    a loop of eager calls) is not so: the host has fast spells as well as slow ones, and one
    loop of 24 calls read 8.3 us where the same candidate's others read 10.0-11.3 us. Such a
    sample won tunings for a candidate 5-8% slower in a long eager loop. Re-judged by the
    median, the same samples of 900 tunings of a 2048x1024 layernorm on H200 hosts agreed
    with the long loop in 881 against 848 by `score`, better on six of nine hosts' runs,
    worse on one (93 against 94; `benchmarks/rejudge_short_calls.py`), and on 3500 more
    tunings of one host in 3248 against 3216. Tuned live, alternating with the seed's score
    on that host, it picked that slower candidate 29 times in 1700 tunings against 72 in
    1800 and reached 100/100 in 6 processes of 17 against 2 of 18, while the totals stayed
    level (1562/1700 against 1673/1800: in each arm a few processes' truth moved, to
    58-85 of 100): between processes the host's state outweighs the rule, which the
    re-judging of the same samples leaves out (BENCHMARKS.md). The lower quartile, which
    re-judging 832 tunings of later hosts favoured (9 picks of the never-faster candidates
    against 27), picked them 27 times in 400 live tunings against 18 by the median, side
    by side on one host (twenty-fourth session)."""
    return statistics.median(_seconds(samples, "median_score")) * NS_PER_S


def _seconds(samples: Iterable[float], name: str) -> tuple[float, ...]:
    """`samples`, refused unless a sequence of times (real numbers >= 0, finite): a negative
    one scored -3.8e9, and None or a str failed inside `statistics` naming neither."""
    __tracebackhide__ = True
    if isinstance(samples, (str, bytes)) or not isinstance(samples, Iterable):
        raise TypeError(
            f"{name}: samples must be a list of times in seconds, got {type(samples).__name__}"
        )
    samples = tuple(samples)  # a generator, a NumPy array: read once, here
    if not samples:
        raise ValueError(f"{name}: no samples")
    for sample in samples:
        if (
            isinstance(sample, bool)
            or not isinstance(sample, numbers.Real)
            or not (0 <= sample < math.inf)
        ):
            raise ValueError(f"{name}: samples must be seconds >= 0, got {sample!r}")
    return samples


STATISTICS: dict[str, Callable[[Sequence[float]], float]] = {
    "score": score,
    "median": median_score,
}
"""How an outcome's samples are scored, by name: `score` (the seed's) where noise only adds
time, `median` where it runs both ways (a client's `sample_statistic` says which)."""


@dataclass(frozen=True, slots=True)
class AutotuneOutcome:
    """The measured outcome of one candidate: its samples, in seconds, as timed."""

    name: str
    index: int
    samples: tuple[float, ...]
    dropped_first: bool = False
    """The first sample is left out of the statistics (kept in files). The adaptive round
    robin sets it once three samples exist: its first sample follows a single warm-up, so it
    still carries allocation and clock ramp costs. The fixed pass keeps every sample, since
    its warm-ups have already absorbed those costs."""
    statistic: str = "score"
    """The name of the rule that scores the samples (`STATISTICS`); written to files only
    where it is not the seed's `score`."""
    _stats: SampleStats = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.statistic not in STATISTICS:
            raise ValueError(
                f"statistic is {self.statistic!r}, expected one of {', '.join(STATISTICS)}"
            )
        if not self.effective_samples:
            # Said with the candidate's name: SampleStats' bare "no samples" named neither it
            # nor that a dropped first sample counts out.
            raise ValueError(
                f"AutotuneOutcome {self.name!r} [#{self.index}]: no samples"
                + (" once the first is dropped" if self.samples else "")
            )
        object.__setattr__(self, "_stats", SampleStats.of(self.effective_samples))

    @property
    def effective_samples(self) -> tuple[float, ...]:
        return self.samples[1:] if self.dropped_first else self.samples

    @property
    def stats(self) -> SampleStats:
        return self._stats

    @property
    def median(self) -> float:
        return self._stats.median

    @property
    def best(self) -> float:
        return self._stats.min

    @property
    def score(self) -> float:
        return STATISTICS[self.statistic](self.effective_samples)

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "name": self.name,
            "index": self.index,
            "samples_ns": [sample_ns(s) for s in self.samples],
            "dropped_first": self.dropped_first,
        }
        if self.statistic != "score":
            data["statistic"] = self.statistic
        return data


AutotuneResult = AutotuneOutcome | AutotuneError
"""The result of one candidate: an outcome with samples, or the error it failed with."""


def result_to_json(result: AutotuneResult, index: int) -> dict[str, Any]:
    if isinstance(result, AutotuneOutcome):
        return result.to_json()
    return {"name": result.name, "index": index, "error": result.to_json()}


_OUTCOME_FIELDS = frozenset({"name", "index", "samples_ns", "dropped_first", "statistic"})
_ERROR_FIELDS = frozenset({"name", "index", "error"})


def result_from_json(data: dict[str, Any]) -> AutotuneResult:
    """Read a result written by `result_to_json` (a cache entry or a record); a missing
    field is a KeyError, a field of the wrong type or an unknown one a ValueError naming it.

    Strict, as the entry around it is: a cache rewrite writes back what was read, so a
    hand-edited `"dropped_first": "false"` read loosely came back as `true`, a `null` name
    as `"None"`, and an unknown field was dropped, each without a word."""
    unknown = data.keys() - (_ERROR_FIELDS if "error" in data else _OUTCOME_FIELDS)
    if unknown:
        raise ValueError(f"unknown fields {sorted(unknown)}")
    name = _typed(data, "name", str, "a string")
    if "index" in data or "error" not in data:
        # An error's index is its place in the list, which older records left out.
        index = _typed(data, "index", int, "a non-negative integer")
        if index < 0:
            raise ValueError(f"index is {index}, expected a non-negative integer")
    if "error" in data:
        error = _typed(data, "error", dict, "an object with 'kind' and 'message'")
        return AutotuneError.from_json(error, name)
    samples = data["samples_ns"]
    # A string is iterable too: "999" must not read as the samples 9, 9 and 9.
    if not isinstance(samples, list):
        raise ValueError(
            f"samples_ns is {json_text(samples)}, expected a list of positive integers"
        )
    for i, sample in enumerate(samples):
        # Named by its place: a winner's hundreds of samples in the message would hide it.
        if not _is_positive_int(sample):
            raise ValueError(
                f"samples_ns[{i}] is {json_text(sample)}, expected a positive integer (nanoseconds)"
            )
    return AutotuneOutcome(
        name=name,
        index=index,
        samples=tuple(s / NS_PER_S for s in samples),
        dropped_first=_typed(data, "dropped_first", bool, "true or false", default=False),
        statistic=_typed(data, "statistic", str, "a string", default="score"),
    )


_REQUIRED: Any = object()


def _typed(data: dict[str, Any], name: str, kind: type, what: str, default: Any = _REQUIRED) -> Any:
    """`data[name]`, which must be a `kind` (a KeyError when missing without a default)."""
    if name not in data and default is not _REQUIRED:
        return default
    value = data[name]
    # bool is an int to isinstance, but `true` is never an index.
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise ValueError(f"{name} is {json_text(value)}, expected {what}")
    return value


def sample_ns(seconds: float) -> int:
    """A sample as a file holds it: whole nanoseconds, and at least one, since a sample is
    positive (`check_sample`) and `result_from_json` reads nothing else back. A client may
    time a call under half a nanosecond (a cost model's figure, a loop's time over many
    calls); written as 0, it made the cache file its own tuner wrote unreadable at the next
    load, each later key kept in memory only."""
    return max(1, round(seconds * NS_PER_S))


def _is_positive_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value > 0


IMPLAUSIBLE_FACTOR = 1e6
"""A sample is refused as no number of seconds where it exceeds this many times the wall
time of the call that took it, plus `IMPLAUSIBLE_SLACK_S` (`check_sample`): nanoseconds
read as seconds are 1e9 times the wall time, and a client that times by a model of its
device (a cost model's figures, a test's virtual clock) may read far more than the host's
clock without reaching this."""

IMPLAUSIBLE_SLACK_S = 60.0
"""Seconds a sample may exceed its call's wall time by, whatever that time: a virtual
clock's slow candidate (a test's 5 s call that returns at once) is a sample."""


def check_sample(name: str, seconds: float, wall: float | None = None) -> float:
    """A duration must be positive and finite to mean anything. A client whose `time`
    returns no number at all (None, a forgotten `return`) is said so too: `math.isfinite`
    raised TypeError, read as each candidate's own error.

    Where `wall`, the seconds the client's `time` took on the wall clock, is given, a
    sample far beyond it is refused: a client of `time.perf_counter_ns` that returns its
    nanoseconds read a 5 us call as 5,000 s, and was tuned, gated and written as such."""
    # A float, what every built-in client returns, skips the ABC's slower isinstance.
    if type(seconds) is not float and (
        isinstance(seconds, bool) or not isinstance(seconds, numbers.Real)
    ):
        raise AutotuneError(
            AutotuneErrorKind.INVALID_SAMPLES,
            f"the client's timer returned {seconds!r}, not a number of seconds",
            name,
        )
    if not (math.isfinite(seconds) and seconds > 0):
        raise AutotuneError(
            AutotuneErrorKind.INVALID_SAMPLES, f"timer returned {seconds!r} s", name
        )
    if wall is not None and seconds > IMPLAUSIBLE_FACTOR * wall + IMPLAUSIBLE_SLACK_S:
        raise AutotuneError(
            AutotuneErrorKind.INVALID_SAMPLES,
            f"the client's time() returned {seconds:g} for a call that took {wall:.3g} s on"
            " the wall clock: it must return seconds (nanoseconds of"
            " time.perf_counter_ns() are divided by 1e9)",
            name,
        )
    return seconds


def tune_benchmark(
    client: Client,
    fn: Callable[..., object],
    inputs: tuple[Any, ...],
    samples: int,
    warmups: int = 0,
) -> tuple[float, ...]:
    """Benchmark how long `fn(*inputs)` takes for a number of samples, in seconds."""
    if not isinstance(inputs, (tuple, list)):
        # A bare array would be unpacked into its elements, as `Tuner.execute` says too.
        raise TypeError(
            f"tune_benchmark: inputs must be a tuple of the arguments of"
            f" {getattr(fn, '__name__', 'fn')}, got {type(inputs).__name__}; pass (x,) for"
            " one input"
        )
    # `range` took -1 as none and refused 2.5 with its own words; no samples (warm-ups
    # alone) stays a way to ask for none.
    for what, count in (("samples", samples), ("warmups", warmups)):
        if isinstance(count, bool) or not isinstance(count, int) or count < 0:
            raise ValueError(f"tune_benchmark: {what} must be a whole number >= 0, got {count!r}")
    for _ in range(warmups):
        client.time(fn, inputs)
    return tuple(
        check_sample(getattr(fn, "__name__", "fn"), client.time(fn, inputs)) for _ in range(samples)
    )
