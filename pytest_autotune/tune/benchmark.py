"""Samples of one candidate, their statistics and score, and the seed's `tune_benchmark`."""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Union

from pytest_autotune.tune.errors import AutotuneError, AutotuneErrorKind

if TYPE_CHECKING:
    from pytest_autotune.backends.client import Client

NS_PER_S = 1_000_000_000


@dataclass(frozen=True, slots=True)
class SampleStats:
    """Order statistics of a sample set, in seconds."""

    count: int
    min: float
    median: float
    mean: float
    std: float
    """Population standard deviation: a spread of the times seen, not an estimate error."""
    median_rse: float
    """Relative standard error of the median (1.2533 * std / sqrt(n) / median)."""

    @classmethod
    def of(cls, samples: Sequence[float]) -> SampleStats:
        if not samples:
            raise ValueError("no samples")
        n = len(samples)
        median = statistics.median(samples)
        mean = math.fsum(samples) / n
        std = statistics.pstdev(samples, mean)
        # The standard error of a median is sqrt(pi/2) ~ 1.2533 times that of a mean for
        # roughly normal data; it is the figure the precise measurement drives below 1%.
        rse = 1.2533 * std / math.sqrt(n) / median if n > 1 and median > 0 else math.inf
        return cls(n, min(samples), median, mean, std, rse)


def score(samples: Sequence[float]) -> float:
    """The seed's score of a sample set; lower is better.

    `(0.8*min + 0.2*median) * (1 + std/(1+mean))`, computed in nanoseconds: the best run
    carries most of the weight because noise only ever adds time, the median keeps one
    lucky sample from deciding, and the spread term penalises an unstable candidate by
    roughly its coefficient of variation (the `1+` only guards a zero mean).
    """
    stats = SampleStats.of([s * NS_PER_S for s in samples])
    return (0.8 * stats.min + 0.2 * stats.median) * (1.0 + stats.std / (1.0 + stats.mean))


@dataclass(frozen=True, slots=True)
class AutotuneOutcome:
    """The measured outcome of one candidate: its samples, in seconds, as timed."""

    name: str
    index: int
    samples: tuple[float, ...]
    dropped_first: bool = False
    """The first sample followed a single warm-up, so it still carries allocation and clock
    ramp costs; once three samples exist it is left out of the statistics (kept in files)."""
    _stats: SampleStats = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
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
        return score(self.effective_samples)

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "index": self.index,
            "samples_ns": [round(s * NS_PER_S) for s in self.samples],
            "dropped_first": self.dropped_first,
        }


AutotuneResult = Union[AutotuneOutcome, AutotuneError]
"""The result of one candidate: an outcome with samples, or the error it failed with."""


def result_to_json(result: AutotuneResult, index: int) -> dict[str, Any]:
    if isinstance(result, AutotuneOutcome):
        return result.to_json()
    return {"name": result.name, "index": index, "error": result.to_json()}


def result_from_json(data: dict[str, Any]) -> AutotuneResult:
    """Read a result written by `result_to_json` (a cache entry or a record)."""
    name = str(data["name"])
    if "error" in data:
        return AutotuneError.from_json(data["error"], name)
    return AutotuneOutcome(
        name=name,
        index=int(data["index"]),
        samples=tuple(int(s) / NS_PER_S for s in data["samples_ns"]),
        dropped_first=bool(data.get("dropped_first", False)),
    )


def check_sample(name: str, seconds: float) -> float:
    """A duration must be positive and finite to mean anything."""
    if not (math.isfinite(seconds) and seconds > 0):
        raise AutotuneError(
            AutotuneErrorKind.INVALID_SAMPLES, f"timer returned {seconds!r} s", name
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
    for _ in range(warmups):
        client.time(fn, inputs)
    return tuple(check_sample(getattr(fn, "__name__", "fn"), client.time(fn, inputs)) for _ in range(samples))
