"""The gate's sample value objects: a winner's measurement, its calibration read, and what one
`--autotune-update` session kept.

Each holds positive samples in seconds (or medians of them) and reads and writes the JSON
form the cache file stores.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeGuard

from pytest_autotune.calibration import CALIBRATION_KIND, long_enough
from pytest_autotune.tune.benchmark import SampleStats
from pytest_autotune.tune.files import json_text


class CalibratedBaseline(Protocol):
    """What `Measurement.calibrated_against` reads of a baseline (`gate.baseline.Baseline`),
    named by its use so that the baseline's module can build on this one."""

    @property
    def calibration(self) -> Calibration | None: ...

    def read_follows(self) -> bool: ...


def _checked_samples(samples: tuple[float, ...], owner: str) -> tuple[float, ...]:
    samples = tuple(float(s) for s in samples)
    bad = [s for s in samples if not (math.isfinite(s) and s > 0)]
    if not samples or bad:
        raise ValueError(f"{owner}: samples must be positive finite seconds, got {samples!r}")
    return samples


class Samples:
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
    def median(self) -> float:
        return self._stats.median

    @property
    def se_log(self) -> float:
        """Standard error of ln(median): by the delta method, the median's relative
        standard error (infinite with one sample, which then can never show a change)."""
        return self._stats.median_rse


@dataclass(frozen=True, slots=True)
class Calibration(Samples):
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
        found, in the file's terms (a hand edit's sample named by its place, in
        nanoseconds), as a result's samples are."""
        if not isinstance(data, Mapping):
            raise TypeError(f"is {json_text(data)}, expected an object with kind and samples_ns")
        kind, samples = _json_field(data, "kind"), _json_field(data, "samples_ns")
        if not isinstance(kind, str):
            raise TypeError(f"kind is {json_text(kind)}, expected a string")
        if not isinstance(samples, list) or not samples:
            raise TypeError(
                f"samples_ns is {json_text(samples)}, expected a list of positive integers"
            )
        for i, sample in enumerate(samples):
            _check_nanoseconds(f"samples_ns[{i}]", sample)
        return cls(tuple(s / 1e9 for s in samples), kind)


@dataclass(frozen=True, slots=True)
class Measurement(Samples):
    """The precise measurement of a winner in this run: its samples, in seconds, and the
    calibration read taken beside them (CPU only; None elsewhere)."""

    samples: tuple[float, ...]
    calibration: Calibration | None = None
    load: float | None = None
    """Runnable threads per CPU while it was measured (the 1-minute load average), on a
    CPU; None elsewhere (`gate.contention`)."""
    pressure: float | None = None
    """The share of the measurement's wall time during which runnable threads waited for a
    CPU (Linux's pressure-stall counters over the samples), on a CPU where the kernel
    counts it; None elsewhere (`gate.contention.pressure_share`)."""
    helpers: float | None = None
    """The CPU time the process's other threads used during the samples, over their wall
    time: about 1 for a call on two BLAS threads, 0 for a one-thread call; on a CPU, None
    elsewhere (`gate.contention.HelperClock`)."""
    neighbours: float | None = None
    """The share of the other CPUs' time that other processes used during the samples, from
    0 to 1 (on two CPUs, 1.0 for the other one kept busy); on a CPU where the machine's
    counters tell, None elsewhere (`gate.contention.neighbours`)."""
    _stats: SampleStats = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        self._set_samples("Measurement")

    def calibrated_against(self, baseline: CalibratedBaseline) -> bool:
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
        """Read `to_json`'s form; anything else is a TypeError or ValueError naming the
        field as the file holds it: "got BaselineSession(median=0.0, read=None)" showed
        seconds the file never holds for the `"median_ns": 0` of a hand edit."""
        if not isinstance(data, Mapping):
            raise TypeError(f"is {json_text(data)}, expected an object with median_ns and read_ns")
        median = _check_nanoseconds("median_ns", _json_field(data, "median_ns"))
        read = data.get("read_ns")
        if read is not None:
            read = _check_nanoseconds("read_ns", read, " or null")
        return cls(median / 1e9, None if read is None else read / 1e9)


def _json_field(data: Mapping[str, Any], name: str) -> Any:
    if name not in data:
        raise TypeError(f"missing field {name!r}")
    return data[name]


def _check_nanoseconds(name: str, value: object, also: str = "") -> int:
    """`value`, a time the file holds in nanoseconds: a positive integer."""
    if not _is_int(value) or value <= 0:
        raise ValueError(
            f"{name} is {json_text(value)}, expected a positive integer (nanoseconds){also}"
        )
    return value


def _is_int(value: object) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)
