"""The CI gate: measure the winner precisely, compare it with the committed baseline, judge.

A flaky gate is worse than no gate (people learn to rerun until it is green), so every rule
here errs on the side of passing unless the evidence is strong: the comparison is on the log
scale with an explicit noise model, a baseline that measured something else is "not
comparable" rather than a failure, an error is never reported as a regression, and a
suspected failure is measured again before it counts.

The checks are small classes with a `fails(...) -> str | None` method returning the message
a person reads, as pytest-benchmark's regression checks do; `judge` combines them into one
`GroupVerdict` per tuned group. Nothing here imports pytest: the plugin feeds it.
"""

from __future__ import annotations

import enum
import math
import statistics
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, TypeGuard

from pytest_autotune.calibration import CALIBRATION_KIND, long_enough
from pytest_autotune.tune.benchmark import AutotuneOutcome, SampleStats, check_sample
from pytest_autotune.tune.bounds import (
    COMPUTE,
    MEMORY,
    Bounds,
    Thresholds,
    Work,
    calculate_bounds,
    fraction_of_roof,
    meets_thresholds,
)
from pytest_autotune.tune.cache import PersistentCacheKey, PersistentCacheValue
from pytest_autotune.tune.errors import AutotuneError
from pytest_autotune.tune.files import json_number
from pytest_autotune.tune.key import serialize_key_json
from pytest_autotune.tune.log import format_duration
from pytest_autotune.tune.peaks import Peaks

DeviceKind = Literal["gpu", "cpu"]

DEFAULT_MAX_REGRESSION: Mapping[DeviceKind, float] = {"gpu": 0.03, "cpu": 0.10}
"""The slowdown the gate tolerates by default: what a kernel developer calls "the same
speed" on each kind of device (a GPU kernel's time is far more repeatable than a CPU's)."""

DEFAULT_SIGMA_BETWEEN: Mapping[DeviceKind, float] = {"gpu": 0.015, "cpu": 0.03}
"""Between-session noise of ln(time) until measured: two sessions on the same machine differ
by more than their within-session errors say (clocks, placement, thermal state). A baseline
file may carry a measured `sigma_between`, which wins."""

CALIBRATED_MAX_REGRESSION = 0.03
"""The slowdown tolerated on a CPU when both sides carry the calibration read: with the
machine's share divided out, what is left of a CPU's session-to-session noise is carried
by sigma_between (below), and "the same speed" means what it means on a GPU. On the
shared 2-core VM (benchmarks/gate_reliability.py, BENCHMARKS.md runs E-I) an unchanged
kernel's calibrated change never passed +10% against a baseline of five sessions, while a
25% slowdown read +12% to +35%: a line near 15% separates them, which is this tolerance
plus 3.09 sigma."""

CALIBRATED_SIGMA_BETWEEN = 0.03
"""Between-session noise of ln(time / calibration read) on a CPU, when both sides carry the
calibration read (`pytest_autotune.calibration`): measured 1-4.8% on the shared 2-core VM
(runs E and G, every group), where the raw times moved 5-8.5%."""

PRIOR_SESSIONS = 8
"""How many sessions' worth of evidence the default `sigma_between` counts for, when a
baseline's own sessions measure their spread: the two pool by their degrees of freedom
(`RegressionCheck.for_device`). Five sessions measure a spread to about +-35%, so they
move the default only part of the way; eight move it halfway."""

NORMALISE_BY_PEAKS: Mapping[DeviceKind, bool] = {"gpu": True, "cpu": False}
"""Whether a time is scaled by this run's peak probe over the baseline's, by device kind,
when the two sides do not both carry a calibration read (which then scales it instead).

On the H200 the probes are repeatable and measure what the kernels use. On the shared
2-core CPU VM they are not (benchmarks/gate_reliability.py, 100 sessions): the copy and
read probes correlated -0.1 to -0.45 with the kernels' session-to-session changes, and
under load the 2-thread BLAS probe of the baseline session read half the usual rate,
made compute the binding resource of a 64x64 matmul and scaled every later run's time
by 2.1: 91 false failures in 100 unchanged runs. A CPU's times are scaled by the
calibration read measured beside them, or compared raw."""

NOISY_FACTOR = 3.0
"""A comparison is too noisy to judge when it could not catch a slowdown of this many times
`max_regression` (nor the kind's `PROMISED_CATCH`, whichever is larger): passing it would
claim a check that was not made."""

PROMISED_CATCH: Mapping[DeviceKind, float] = {"gpu": 0.10, "cpu": 0.25}
"""The slowdown the gate is built to catch by default on each kind of device (at least 95
runs in 100, benchmarks/gate_reliability.py and its GPU twin): a comparison whose interval
is too wide to catch it says so rather than passing."""

DEFAULT_Z = 3.09
"""One-sided normal quantile of 0.999: an unchanged kernel fails at most once in a thousand
comparisons, before the re-measurement cuts that further."""

DEFAULT_TARGET_RSE = 0.01
DEFAULT_TIME_CAP = 2.0
DEFAULT_MIN_SAMPLES = 10
DEFAULT_MAX_SAMPLES = 10_000


def device_kind(device_id: str) -> DeviceKind:
    """The kind of device an id names, which picks the gate's defaults: `cuda-...` is a GPU,
    anything else runs on the CPU."""
    return "gpu" if device_id.startswith("cuda-") else "cpu"


def runner_device_id(device_id: str, runner: str | None) -> str:
    """The id baselines are filed under: `device_id`, or with a runner class named, the
    runner's under the device's kind (`cpu-<runner>`, `cuda-<runner>`), so that the gate's
    defaults for the kind still apply."""
    if runner is None:
        return device_id
    prefix = "cuda-" if device_kind(device_id) == "gpu" else "cpu-"
    return runner if runner.startswith(prefix) else prefix + runner


# -- formatting shared by the gate's messages and the report's tables --------------------


def format_change(fraction: float) -> str:
    """A relative change with its sign, `+8.0%`; an unbounded end of an interval is `+inf%`."""
    if math.isinf(fraction):
        return "+inf%" if fraction > 0 else "-inf%"
    percent = round(fraction * 100, 1)
    return f"{percent + 0.0:+.1f}%"  # + 0.0 turns a rounded -0.0 into 0.0: no "-0.0%"


def format_fraction(fraction: float | None) -> str:
    """A fraction of a roof or a threshold as a percentage, `-` when there is none."""
    return "-" if fraction is None else f"{fraction * 100:.1f}%"


def format_interval(comparison: Comparison) -> str:
    """`+8.0% [+2.1%, +14.2%]`: the change and the interval the gate judged it by."""
    return (
        f"{format_change(comparison.delta)}"
        f" [{format_change(comparison.low)}, {format_change(comparison.high)}]"
    )


# -- measuring the winner -----------------------------------------------------------------


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
    name: str | None = None,
    **limits: Any,
) -> Measurement:
    """The winner's precise measurement (`measure_precisely`, with its `limits`), and with
    `calibration` (seconds of one calibration read) a calibration sample right after each of
    the winner's, so both meet the machine in the same state.

    The measurement stops when the error of the ratio the gate compares (the winner's and
    the read's errors together) reaches the target. A calibration read the clock cannot see
    (a sample of zero: a fake client, a GPU client asked to time host work) is dropped, not
    failed: it only ever refines the comparison.
    """
    if calibration is None:
        return Measurement(measure_precisely(sample, name=name, **limits))
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
    return Measurement(samples, Calibration(tuple(reads)) if usable else None)


def _checked_samples(samples: tuple[float, ...], owner: str) -> tuple[float, ...]:
    samples = tuple(float(s) for s in samples)
    bad = [s for s in samples if not (math.isfinite(s) and s > 0)]
    if not samples or bad:
        raise ValueError(f"{owner}: samples must be positive finite seconds, got {samples!r}")
    return samples


class _Samples:
    """What a measurement and a baseline share: positive samples in seconds, and the
    statistics of ln(median) the regression rule compares."""

    __slots__ = ()
    samples: tuple[float, ...]
    _stats: SampleStats

    def _set_samples(self, owner: str) -> None:
        samples = _checked_samples(self.samples, owner)
        object.__setattr__(self, "samples", samples)
        object.__setattr__(self, "_stats", SampleStats.of(samples))

    @property
    def stats(self) -> SampleStats:
        return self._stats

    @property
    def median(self) -> float:
        return self._stats.median

    @property
    def se_log(self) -> float:
        """Standard error of ln(median): by the delta method, the median's relative
        standard error (infinite with one sample, which then can never show a change)."""
        return self._stats.median_rse


@dataclass(frozen=True, slots=True)
class Calibration(_Samples):
    """The calibration read's samples (seconds) beside a measurement, and which read it was."""

    samples: tuple[float, ...]
    kind: str = CALIBRATION_KIND
    _stats: SampleStats = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        self._set_samples("Calibration")

    def to_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "samples_ns": [round(s * 1e9) for s in self.samples]}

    @classmethod
    def from_json(cls, data: object) -> Calibration:
        """Read `to_json`'s form; anything else is a TypeError or ValueError saying what was
        found."""
        if not isinstance(data, Mapping):
            raise TypeError(f"expected an object, got {data!r}")
        kind, samples = data.get("kind"), data.get("samples_ns")
        if not isinstance(kind, str) or not isinstance(samples, list):
            raise TypeError(f"expected 'kind' and a list 'samples_ns', got {dict(data)!r}")
        if not all(_is_int(s) for s in samples):
            raise TypeError(f"'samples_ns' must be integers, got {samples!r}")
        return cls(tuple(s / 1e9 for s in samples), kind)


@dataclass(frozen=True, slots=True)
class Measurement(_Samples):
    """The precise measurement of a winner in this run: its samples, in seconds, and the
    calibration read taken beside them (CPU only; None elsewhere)."""

    samples: tuple[float, ...]
    calibration: Calibration | None = None
    _stats: SampleStats = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        self._set_samples("Measurement")

    def calibrated_against(self, baseline: Baseline) -> bool:
        """Whether the calibration read scales the time: both sides carry the same read, each
        long enough to time (`calibration.MIN_READ_SECONDS`), and the baseline's sessions
        do not show it moving apart from the winner (`Baseline.read_follows`). A read that
        fails either is timer noise or another workload, and would only add its own
        changes to a steady measurement."""
        return (
            self.calibration is not None
            and baseline.calibration is not None
            and self.calibration.kind == baseline.calibration.kind
            and long_enough(self.calibration.median)
            and long_enough(baseline.calibration.median)
            and baseline.read_follows()
        )


# -- the baseline -------------------------------------------------------------------------


class BaselineError(ValueError):
    """A cache entry that cannot serve as a baseline; the message names the file and key."""


MAX_BASELINE_SESSIONS = 8
"""How many `--autotune-update` sessions a baseline keeps (the newest): enough that their
mean is a third of one session's noise, few enough to follow a slow drift."""


@dataclass(frozen=True, slots=True)
class BaselineSession:
    """What one `--autotune-update` session measured: its winner's median and, when it
    had one, its calibration read's median, in seconds."""

    median: float
    read: float | None = None

    def __post_init__(self) -> None:
        for value in (self.median, self.read):
            if value is not None and not (math.isfinite(value) and value > 0):
                raise ValueError(f"a session's times must be positive, got {self!r}")

    def to_json(self) -> dict[str, Any]:
        read = None if self.read is None else round(self.read * 1e9)
        return {"median_ns": round(self.median * 1e9), "read_ns": read}

    @classmethod
    def from_json(cls, data: object) -> BaselineSession:
        if not isinstance(data, Mapping):
            raise TypeError(f"expected an object, got {data!r}")
        median, read = data.get("median_ns"), data.get("read_ns")
        if not _is_int(median) or not (read is None or _is_int(read)):
            raise TypeError(f"expected integer 'median_ns' and 'read_ns', got {dict(data)!r}")
        return cls(median / 1e9, None if read is None else read / 1e9)


def _is_int(value: object) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)


@dataclass(frozen=True, slots=True)
class Baseline(_Samples):
    """What the committed cache says about one group: the winner measured then, and how.

    `peak` is the roof the baseline's winner was measured against (the binding bound's
    peak when the entry was tuned, of `peak_resource`), so a run on a machine that is
    slower today can be normalised; None when the entry has no bounds.
    """

    device_id: str
    checksum: str
    fastest_name: str
    samples: tuple[float, ...]
    peak: float | None = None
    peak_resource: str | None = None
    peak_level: str | None = None
    """The memory level of `peak` (L2, DRAM, ...) where the bound named one."""
    sigma_between: float | None = None
    """The between-session noise measured on this device and stored with the cache."""
    source: str = ""
    """The cache file, for messages."""
    calibration: Calibration | None = None
    """The calibration read measured beside the baseline's winner, when it had one."""
    history: tuple[BaselineSession, ...] = ()
    """Earlier update sessions of the same winner, oldest first (the samples above are the
    newest session's): a baseline of several sessions is not one session's luck."""
    mismatch: str | None = None
    """Why the entry's winner index and name disagree (its samples are not the winner's),
    None when they agree: such a baseline is not comparable."""
    _stats: SampleStats = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        self._set_samples("Baseline")

    def sessions(self) -> tuple[BaselineSession, ...]:
        """Every session the baseline holds, oldest first, the stored samples' last."""
        read = None if self.calibration is None else self.calibration.median
        return (*self.history, BaselineSession(self.median, read))

    def level(self, calibrated: bool) -> tuple[float, float]:
        """ln of the baseline's time (over its calibration read when `calibrated`), and the
        standard error of that figure.

        One session gives its median's, with the median's error. Several give the mean over
        them (those with a read, when `calibrated`), with the error of that mean from their
        spread: that spread holds the between-session noise which the newest session's
        own error cannot show, and which one session's offset would carry into every
        comparison against it.
        """
        own = self.se_log**2
        if calibrated and self.calibration is not None:
            own += self.calibration.se_log**2
        logs = self._session_logs(calibrated)
        if len(logs) < 2:
            return logs[-1], math.sqrt(own)
        k = len(logs)
        return statistics.fmean(logs), math.sqrt((statistics.variance(logs) + own) / k)

    def read_follows(self) -> bool:
        """Whether dividing by the calibration read steadies the winner's time across the
        baseline's sessions (their spread of ln(time / read) no wider than of ln(time));
        True with fewer than three sessions with a read, too few to show otherwise."""
        calibrated, raw = self.spread(calibrated=True), self.spread(calibrated=False)
        return calibrated is None or raw is None or calibrated[0] <= raw[0]

    def spread(self, calibrated: bool) -> tuple[float, int] | None:
        """The standard deviation of ln(time) between its sessions, a measured
        `sigma_between`, and how many sessions it comes from; None with fewer than three,
        too few to say."""
        logs = self._session_logs(calibrated)
        return (statistics.stdev(logs), len(logs)) if len(logs) >= 3 else None

    def typical(self, calibrated: bool = False) -> tuple[float, float | None]:
        """The winner's time and the calibration read's to show: the geometric means over
        the sessions (the read's None where no session had one)."""
        sessions = self.sessions()
        reads = [s.read for s in sessions if s.read is not None]
        if calibrated:
            sessions = tuple(s for s in sessions if s.read is not None)
        median = math.exp(statistics.fmean(math.log(s.median) for s in sessions))
        read = math.exp(statistics.fmean(math.log(r) for r in reads)) if reads else None
        return median, read

    def _session_logs(self, calibrated: bool) -> list[float]:
        return [
            math.log(s.median) - (math.log(s.read) if calibrated and s.read else 0.0)
            for s in self.sessions()
            if not calibrated or s.read is not None
        ]

    def peak_ratio(self, peaks: Peaks, dtype: str = "fp32") -> float:
        """This run's peak over the baseline's, on the baseline's binding resource.

        1.0 (no normalisation) when either side has no usable peak: a missing probe must not
        turn into a scaling of the kernel's time by 0 or infinity.
        """
        if self.peak is None or self.peak_resource is None:
            return 1.0
        current = (
            peaks.level_peak(self.peak_level)
            if self.peak_resource == MEMORY
            else peaks.compute_peak(dtype)
        )
        usable = current > 0 and math.isfinite(current) and self.peak > 0
        return current / self.peak if usable and math.isfinite(self.peak) else 1.0

    @classmethod
    def from_cache_entry(
        cls,
        value: PersistentCacheValue,
        checksum: str,
        *,
        device: Mapping[str, Any] | None,
        metadata: Mapping[str, Any],
        source: str = "",
    ) -> Baseline:
        """The baseline in one entry of a cache file (`PersistentCache.load()`, `.device()`,
        `.metadata()`, `.path`).

        The samples are the winner's effective samples (`results[fastest_index]`, the warm-up
        biased first one left out as in tuning). Raises `BaselineError` naming the file and
        key when the entry cannot serve: no device id, a winner without samples, bounds or a
        `sigma_between` that do not read.
        """
        where = f"{source or 'cache'}: key {serialize_key_json(value.key)}"
        device_id = device.get("id") if device is not None else None
        if not isinstance(device_id, str) or not device_id:
            raise BaselineError(f"{where}: the file's device block has no 'id'")
        if value.fastest_index >= len(value.results):
            raise BaselineError(
                f"{where}: fastest_index {value.fastest_index} is past the"
                f" {len(value.results)} results"
            )
        winner = value.results[value.fastest_index]
        mismatch = None
        if value.winner() is None:
            # Results out of line with the candidates: the samples at the winner's index
            # are another candidate's, so this baseline cannot be compared with anything.
            mismatch = (
                f"the baseline in {source or 'the cache'} is out of line with its candidates:"
                f" the result at fastest_index {value.fastest_index} is {winner.name!r}, not"
                f" the winner {value.fastest_name!r}; --autotune-update re-records it"
            )
        if not isinstance(winner, AutotuneOutcome):
            raise BaselineError(f"{where}: the winner {value.fastest_name} has no samples")
        peak, resource, level = _baseline_peak(value.bounds, where)
        calibration = None
        history: tuple[BaselineSession, ...] = ()
        try:
            if value.calibration is not None:
                calibration = Calibration.from_json(value.calibration)
        except (TypeError, ValueError) as error:
            raise BaselineError(f"{where}: calibration does not read: {error}") from None
        try:
            history = tuple(BaselineSession.from_json(s) for s in value.sessions or ())
        except (TypeError, ValueError) as error:
            raise BaselineError(f"{where}: sessions do not read: {error}") from None
        return cls(
            device_id=device_id,
            checksum=checksum,
            fastest_name=value.fastest_name,
            samples=winner.effective_samples,
            peak=peak,
            peak_resource=resource,
            peak_level=level,
            sigma_between=_sigma_between(metadata, where),
            source=source,
            calibration=calibration,
            history=history,
            mismatch=mismatch,
        )

    @classmethod
    def find(
        cls,
        entries: Mapping[PersistentCacheKey, PersistentCacheValue],
        key: str,
        checksum: str,
        *,
        device: Mapping[str, Any] | None,
        metadata: Mapping[str, Any],
        source: str = "",
    ) -> Baseline | None:
        """The baseline of `key` (its `stable_key`) in a loaded cache, None when it has none.

        The entry with `checksum` is preferred; an entry with another checksum still comes
        back, so that `judge` reports it as not comparable instead of as missing.
        """
        matches = sorted(
            (pk for pk in entries if pk.key == key), key=lambda pk: pk.checksum != checksum
        )
        if not matches:
            return None
        found = matches[0]
        return cls.from_cache_entry(
            entries[found], found.checksum, device=device, metadata=metadata, source=source
        )


def _baseline_peak(
    bounds: dict[str, Any] | None, where: str
) -> tuple[float | None, str | None, str | None]:
    """The binding bound's peak, resource and memory level."""
    if bounds is None:
        return None, None, None
    try:
        parsed = Bounds.from_json(bounds)
    except (KeyError, TypeError, ValueError) as error:
        raise BaselineError(f"{where}: bounds do not read: {error!r}") from None
    resource = parsed.binding_resource()
    binding = [b for b in parsed.bounds if b.resource == resource]
    return (binding[0].peak, resource, binding[0].level) if binding else (None, None, None)


def _sigma_between(metadata: Mapping[str, Any], where: str) -> float | None:
    value = metadata.get("sigma_between")
    if value is None:
        return None
    if (
        isinstance(value, bool)
        or not isinstance(value, (int, float))
        or not (math.isfinite(value) and value >= 0)
    ):
        raise BaselineError(f"{where}: sigma_between is {value!r}, expected a number >= 0")
    return float(value)


# -- the checks ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Comparison:
    """The winner's change against the baseline, as fractions: +0.08 is 8% slower.

    `low` and `high` bound the change at the gate's confidence (d -/+ z*sigma, back from the
    log scale); `failed` says whether the low end is above the tolerated slowdown.
    """

    delta: float
    low: float
    high: float
    failed: bool

    def to_json(self) -> dict[str, Any]:
        """Plain values for pytest-xdist and records; an unbounded end is a string."""
        return {
            "delta": self.delta,
            "low": json_number(self.low),
            "high": json_number(self.high),
            "failed": self.failed,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Comparison:
        return cls(
            delta=float(data["delta"]),
            low=float(data["low"]),
            high=float(data["high"]),
            failed=bool(data["failed"]),
        )


def _check_fraction(owner: str, name: str, value: float) -> None:
    if not (math.isfinite(value) and value >= 0):
        raise ValueError(f"{owner}: {name} must be a finite number >= 0, got {value!r}")


@dataclass(frozen=True, slots=True)
class RegressionCheck:
    """Is the winner slower than the baseline by more than noise and the tolerance explain?

    With d = ln(t/t_base) and sigma = sqrt(se_cur^2 + se_base^2 + sigma_between^2), a
    regression is d - z*sigma > ln(1 + max_regression): even the optimistic end of the
    interval is past the tolerance. On the log scale a change is a ratio, so it reads the
    same for a 2 us and a 2 s kernel, and standard errors of ln(median) are the relative
    errors the measurement already drives below 1%.
    """

    max_regression: float
    sigma_between: float
    z: float = DEFAULT_Z

    def __post_init__(self) -> None:
        _check_fraction("RegressionCheck", "max_regression", self.max_regression)
        _check_fraction("RegressionCheck", "sigma_between", self.sigma_between)
        _check_fraction("RegressionCheck", "z", self.z)

    @classmethod
    def for_device(
        cls,
        device_id: str,
        max_regression: float | None = None,
        sigma_between: float | None = None,
        calibrated: bool = False,
        measured: tuple[float, int] | None = None,
    ) -> RegressionCheck:
        """The check with each value given, else the default of the device's kind (of a CPU
        comparison scaled by the calibration read when `calibrated`).

        `measured` is the spread between a baseline's sessions and their number. It is
        pooled with the default `sigma_between`, which counts as `PRIOR_SESSIONS` sessions
        (the variances weighted by their degrees of freedom), and the pool can only widen
        the default: a few sessions recorded back to back measure a spread too roughly to
        narrow it, and may all sit in one quiet spell of the machine, while one noisy
        machine's spread should be believed.
        """
        kind = device_kind(device_id)
        calibrated_cpu = calibrated and kind == "cpu"
        if max_regression is None:
            max_regression = (
                CALIBRATED_MAX_REGRESSION if calibrated_cpu else DEFAULT_MAX_REGRESSION[kind]
            )
        if sigma_between is None:
            sigma_between = (
                CALIBRATED_SIGMA_BETWEEN if calibrated_cpu else DEFAULT_SIGMA_BETWEEN[kind]
            )
            if measured is not None:
                spread, sessions = measured
                pooled = (PRIOR_SESSIONS * sigma_between**2 + (sessions - 1) * spread**2) / (
                    PRIOR_SESSIONS + sessions - 1
                )
                sigma_between = max(sigma_between, math.sqrt(pooled))
        return cls(max_regression=max_regression, sigma_between=sigma_between)

    def delta(
        self, current: Measurement, baseline: Baseline, peak_ratio: float = 1.0
    ) -> Comparison:
        """The change of `current` against `baseline`, its interval, and the verdict.

        The current time is multiplied by `peak_ratio` (this run's peak probe over the
        baseline's): on a machine whose memory is 5% slower today (ratio 0.95) the kernel's
        time is scaled down by that, so the machine's state does not read as the kernel's.
        When both sides carry the same calibration read, its ratio (the baseline's median
        read over this run's) scales the time instead, and its errors join sigma. A
        baseline of several sessions compares with their mean (`Baseline.level`).
        """
        if not (math.isfinite(peak_ratio) and peak_ratio > 0):
            raise ValueError(f"peak_ratio must be a positive finite number, got {peak_ratio!r}")
        calibrated = current.calibrated_against(baseline)
        now, variance = math.log(current.median), current.se_log**2
        if calibrated:
            assert current.calibration is not None
            now -= math.log(current.calibration.median)
            variance += current.calibration.se_log**2
        else:
            now += math.log(peak_ratio)
        then, error = baseline.level(calibrated)
        d = now - then
        sigma = math.sqrt(variance + error**2 + self.sigma_between**2)
        margin = self.z * sigma
        return Comparison(
            delta=math.expm1(d),
            low=math.expm1(d - margin),
            high=math.expm1(d + margin),
            failed=d - margin > math.log1p(self.max_regression),
        )

    def catches(self, comparison: Comparison) -> float:
        """The smallest slowdown this comparison would have failed: the tolerance plus its
        margin of error (infinite where the interval is unbounded)."""
        margin = math.log1p(comparison.high) - math.log1p(comparison.delta)
        return math.expm1(math.log1p(self.max_regression) + margin)

    def too_noisy(self, comparison: Comparison, device_id: str) -> bool:
        """Whether the interval is too wide to catch a slowdown of `NOISY_FACTOR` times the
        tolerance, or the kind's `PROMISED_CATCH` where that is larger."""
        promise = max(NOISY_FACTOR * self.max_regression, PROMISED_CATCH[device_kind(device_id)])
        return self.catches(comparison) > promise

    def figures(self, current: Measurement, baseline: Baseline, peak_ratio: float = 1.0) -> str:
        """The two times the change was computed from, then the scale applied to this run's
        measured median: the first over the second is exactly 1 + the change judged."""
        calibrated = current.calibrated_against(baseline)
        then_log, _ = baseline.level(calibrated)
        _, then_read = baseline.typical(calibrated)
        if calibrated:
            assert current.calibration is not None and then_read is not None
            scale = then_read / current.calibration.median
            then = math.exp(then_log) * then_read
            how = (
                f" by the calibration read of the inputs"
                f" ({format_duration(current.calibration.median)} here,"
                f" {format_duration(then_read)} in the baseline)"
            )
        else:
            scale, then = peak_ratio, math.exp(then_log)
            how = " by this run's peak over the baseline's"
        count = len(baseline.sessions())
        sessions = f" (mean of {count} sessions)" if count > 1 else ""
        scaled = (
            ""
            if scale == 1.0 and not calibrated
            else f"; this run's {format_duration(current.median)} scaled x{scale:.3f}{how}"
        )
        return (
            f"median {format_duration(current.median * scale)} against the baseline median"
            f" {format_duration(then)}{sessions} ({baseline.fastest_name} on"
            f" {baseline.device_id}, {baseline.source or 'cache'}){scaled}"
        )

    def fails(
        self, current: Measurement, baseline: Baseline, peak_ratio: float = 1.0
    ) -> str | None:
        """The regression message, None when there is none."""
        comparison = self.delta(current, baseline, peak_ratio)
        if not comparison.failed:
            return None
        return (
            f"regression of {format_interval(comparison)}:"
            f" {self.figures(current, baseline, peak_ratio)};"
            f" tolerated {format_fraction(self.max_regression)}"
        )


@dataclass(frozen=True, slots=True)
class FloorCheck:
    """Does the winner reach the test's `thresholds` on the binding roofline resource?

    The peaks are the ones measured in this run, so the floor judges the kernel on today's
    machine. It is the short circuit's test (`meets_thresholds`, launch overhead included),
    so a winner that short-circuited tuning always passes its floor.
    """

    thresholds: Thresholds
    dtype: str = "fp32"
    launch_overhead: float = 0.0

    def fails(self, work: Work, seconds: float, peaks: Peaks) -> str | None:
        """The floor message, None when reached or when no bound can judge it."""
        compute_peak, memory = peaks.compute_peak(self.dtype), peaks.memory_roof(work.footprint)
        met = meets_thresholds(
            work, seconds, self.thresholds, compute_peak, memory.peak, self.launch_overhead
        )
        if met is None or met:
            return None
        bounds = calculate_bounds(
            work, self.thresholds, compute_peak, memory.peak, self.launch_overhead, memory.level
        )
        resource = bounds.binding_resource()
        bound = next(b for b in bounds.bounds if b.resource == resource)
        reached = bound.amount / seconds / bound.peak
        unit = "B/s" if resource == MEMORY else "op/s"
        which = f"{memory.level} memory" if resource == MEMORY else f"{self.dtype} {COMPUTE}"
        return (
            f"below the floor: {format_fraction(reached)} of the {which} roof"
            f" ({bound.peak:.3g} {unit} measured in this run) in {format_duration(seconds)},"
            f" the floor is {format_fraction(bound.threshold)}"
        )


# -- verdicts -----------------------------------------------------------------------------


class Verdict(enum.Enum):
    """What the gate concluded for one group."""

    PASS = "pass"
    REGRESSION = "regression"
    FLOOR = "floor"
    NO_BASELINE = "no baseline"
    """Reported; a failure only in strict mode."""
    NOT_COMPARABLE = "not comparable"
    """The baseline measured another device or candidate list: reported, never a failure."""
    ERROR = "error"
    """Nothing could be measured (every candidate failed, a check failed): a failure of the
    test, never reported as a regression."""
    UPDATED = "updated"
    """`--autotune-update`: the measurement becomes the baseline; never a failure."""
    TOO_NOISY = "too noisy"
    """The interval is too wide to catch the slowdown the gate is built to catch: reported
    with what would help; a failure only in strict mode."""


UPDATED_MESSAGE = "recorded as the new baseline"
"""The head of an UPDATED verdict's message, which the session replaces by what the update
did with the old baseline (joined it, or started a new one)."""


@dataclass(frozen=True, slots=True)
class GroupVerdict:
    """The gate's conclusion for one group, with what the summary and the report show."""

    verdict: Verdict
    message: str
    comparison: Comparison | None
    fraction_of_roof: float | None
    failed: bool
    measurement: Measurement | None = None
    """The measurement the verdict rests on: the re-measurement when there was one."""
    remeasured: bool = False
    roof: str | None = None
    """The roof `fraction_of_roof` is of: the memory level that bound the problem (L1, L2,
    L3, DRAM, HBM) or the compute unit ("fp32 compute"); None without work or peaks."""


def judge(
    current: Measurement | None,
    baseline: Baseline | None,
    *,
    device_id: str,
    checksum: str,
    work: Work | None = None,
    peaks: Peaks | None = None,
    thresholds: Thresholds | None = None,
    dtype: str = "fp32",
    launch_overhead: float = 0.0,
    max_regression: float | None = None,
    error: str | None = None,
    strict: bool = False,
    update: bool = False,
    remeasure: Callable[[], Measurement] | None = None,
    baseline_devices: Sequence[str] = (),
) -> GroupVerdict:
    """Judge one group: its winner's `current` measurement against the `baseline`.

    `error` (or no measurement) makes the verdict ERROR whatever the baseline says: a group
    that measured nothing has no speed to compare. `peaks` are this run's; with `work` they
    give the fraction of roof, with `thresholds` too the floor, and with the baseline's
    peak the normalisation of the time. `max_regression` None takes the device kind's
    default; `sigma_between` comes from the baseline's file, else the kind's default.
    `baseline_devices` are the devices that have a baseline of this test, which a
    NO_BASELINE verdict names. A comparison too wide to catch the slowdown the gate is
    built to catch is TOO_NOISY, a failure only when `strict`, as a missing baseline is.

    A suspected failure (REGRESSION or FLOOR) is measured again with `remeasure` and fails
    only if the re-measurement fails too. The re-measurement alone decides, rather than its
    samples pooled with the first: what a confirmation guards against is a transient (a
    clock dip, another process on the device) that shifted the whole first measurement,
    and pooling would carry half of that shift into the verdict. An independent second
    measurement of an unchanged kernel fails with the same small probability as the first,
    so the pair rarely fails together, while a real slowdown shows in both. A winner that
    fails while re-measured (`AutotuneError`) gives ERROR, never a regression.
    """
    if error is not None or current is None:
        return GroupVerdict(Verdict.ERROR, error or "nothing was measured", None, None, True)

    def once(measurement: Measurement, remeasured: bool) -> GroupVerdict:
        return _judge_once(
            measurement,
            baseline,
            device_id=device_id,
            checksum=checksum,
            work=work,
            peaks=peaks,
            floor=(
                FloorCheck(thresholds, dtype, launch_overhead) if thresholds is not None else None
            ),
            dtype=dtype,
            max_regression=max_regression,
            strict=strict,
            update=update,
            remeasured=remeasured,
            baseline_devices=baseline_devices,
        )

    verdict = once(current, remeasured=False)
    if remeasure is None or verdict.verdict not in (Verdict.REGRESSION, Verdict.FLOOR):
        return verdict
    try:
        second = remeasure()
    except AutotuneError as exc:
        return GroupVerdict(
            Verdict.ERROR,
            f"the winner failed while re-measured to confirm a suspected failure: {exc}",
            None,
            verdict.fraction_of_roof,
            True,
            current,
        )
    return once(second, remeasured=True)


def _judge_once(
    current: Measurement,
    baseline: Baseline | None,
    *,
    device_id: str,
    checksum: str,
    work: Work | None,
    peaks: Peaks | None,
    floor: FloorCheck | None,
    dtype: str,
    max_regression: float | None,
    strict: bool,
    update: bool,
    remeasured: bool,
    baseline_devices: Sequence[str],
) -> GroupVerdict:
    fraction: float | None = None
    floor_message: str | None = None
    roof: str | None = None
    if work is not None and peaks is not None:
        fraction, roof = _fraction_of_roof(work, current.median, peaks, dtype)
        if floor is not None:
            floor_message = floor.fails(work, current.median, peaks)

    comparison: Comparison | None = None
    regression_message: str | None = None
    noisy_message: str | None = None
    other = _not_comparable(baseline, device_id, checksum)
    if baseline is not None and other is None:
        calibrated = current.calibrated_against(baseline)
        check = RegressionCheck.for_device(
            device_id,
            max_regression,
            baseline.sigma_between,
            calibrated=calibrated,
            measured=baseline.spread(calibrated),
        )
        normalise = peaks is not None and NORMALISE_BY_PEAKS[device_kind(device_id)]
        ratio = baseline.peak_ratio(peaks, dtype) if normalise and peaks is not None else 1.0
        comparison = check.delta(current, baseline, ratio)
        regression_message = check.fails(current, baseline, ratio)
        if regression_message is None and check.too_noisy(comparison, device_id):
            noisy_message = (
                f"too noisy to judge: {format_interval(comparison)}:"
                f" {check.figures(current, baseline, ratio)}; this comparison would catch"
                f" only a slowdown past {format_change(check.catches(comparison))}"
                f" (tolerated {format_fraction(check.max_regression)}); what would help:"
                " more baseline sessions (run --autotune-update again), a quieter runner,"
                " or a longer measurement"
            )

    def verdict(kind: Verdict, message: str, failed: bool) -> GroupVerdict:
        return GroupVerdict(kind, message, comparison, fraction, failed, current, remeasured, roof)

    failures = [m for m in (regression_message, floor_message) if m is not None]
    if update:
        would = f"; without --autotune-update: {'; '.join(failures)}" if failures else ""
        return verdict(Verdict.UPDATED, f"{UPDATED_MESSAGE}{would}", False)
    if regression_message is not None:
        return verdict(Verdict.REGRESSION, "\n".join(failures), True)
    # The first that applies, in this order: a floor missed fails whatever else is true.
    outcomes = (
        (Verdict.FLOOR, floor_message, True),
        (Verdict.NO_BASELINE, _no_baseline(device_id, baseline_devices, baseline), strict),
        (Verdict.TOO_NOISY, noisy_message, strict),
        (Verdict.NOT_COMPARABLE, other, False),
    )
    for kind, message, failed in outcomes:
        if message is not None:
            return verdict(kind, message, failed)
    return verdict(Verdict.PASS, "", False)


def _fraction_of_roof(
    work: Work, seconds: float, peaks: Peaks, dtype: str
) -> tuple[float | None, str | None]:
    """The fraction of the binding roof reached, and which roof that is: the memory level
    the working set fits in, or the compute unit of `dtype`."""
    compute_peak, memory = peaks.compute_peak(dtype), peaks.memory_roof(work.footprint)
    fraction = fraction_of_roof(work, seconds, compute_peak, memory.peak)
    if fraction is None:
        return None, None
    binding = calculate_bounds(work, Thresholds(), compute_peak, memory.peak, 0.0, memory.level)
    resource = binding.binding_resource()
    return fraction, memory.level if resource == MEMORY else f"{dtype} {COMPUTE}"


def _no_baseline(
    device_id: str, baseline_devices: Sequence[str], baseline: Baseline | None
) -> str | None:
    """The message of a missing baseline, naming the devices that have one; None when there
    is a baseline."""
    if baseline is not None:
        return None
    elsewhere = (
        f"; baselines of this test exist for {', '.join(sorted(baseline_devices))}"
        " (--autotune-runner names the one to use)"
        if baseline_devices
        else ""
    )
    return f"no baseline for this key on {device_id}; --autotune-update records one{elsewhere}"


def _not_comparable(baseline: Baseline | None, device_id: str, checksum: str) -> str | None:
    """Why the baseline measured something else, None when it is comparable (or missing)."""
    if baseline is None:
        return None
    where = baseline.source or "the cache"
    if baseline.mismatch is not None:
        return baseline.mismatch
    if baseline.device_id != device_id:
        return (
            f"the baseline in {where} was measured on {baseline.device_id},"
            f" this run is on {device_id}"
        )
    if baseline.checksum != checksum:
        return (
            f"the baseline in {where} was tuned over another candidate list"
            f" (checksum {baseline.checksum}, now {checksum}); --autotune-update re-records it"
        )
    return None
