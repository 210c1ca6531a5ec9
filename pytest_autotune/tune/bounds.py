"""Roofline bounds: how fast a problem could possibly run, so tuning can stop close to it.

A problem's `Work` (minimum operations and bytes) over a device's peak rates gives the time
the hardware needs at best for each resource. Divided by a threshold (the fraction of peak
the user calls good enough), that is a time limit: a candidate that lands under it cannot
be beaten by much, so the batch may end early (the short circuit), and a winner that stays
above it misses the floor the CI gate checks.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from pytest_autotune.tune.benchmark import NS_PER_S
from pytest_autotune.tune.files import json_number
from pytest_autotune.tune.key import Key

if TYPE_CHECKING:
    from pytest_autotune.tune.client import Client
    from pytest_autotune.tune.peaks import Peaks

COMPUTE = "compute"
MEMORY = "memory"


def _gives_limit(value: float) -> bool:
    """A peak or threshold that is zero, negative, NaN or infinite was not measured or set
    in a way that means anything, so it must switch its bound off rather than yield a
    limit of 0 or infinity that would short-circuit everything or nothing."""
    return value > 0 and math.isfinite(value)


def _check_number(owner: str, name: str, value: object) -> None:
    """A field given a string or another type is named, not left to fail a comparison."""
    __tracebackhide__ = True  # pytest shows the user's line that built it, not this one
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{owner}: {name} must be a number, got {value!r}")


def _check_amount(owner: str, name: str, value: float) -> None:
    __tracebackhide__ = True
    _check_number(owner, name, value)
    if not (value >= 0 and math.isfinite(value)):
        raise ValueError(f"{owner}: {name} must be a finite number >= 0, got {value!r}")


@dataclass(frozen=True, slots=True)
class Work:
    """Work required by a problem, in minimum compute operations and bytes transferred.

    Minimum means what no implementation can avoid (each input read once, each output
    written once), so the roofline time is a bound every candidate is measured against.

    `working_set` is the bytes the problem holds at once (its inputs and outputs, each
    counted once, where `bytes` counts an array read and written twice): it decides which
    memory level the problem runs from, and so which roof bounds it. None takes `bytes`,
    which is never smaller, so an unstated working set never picks too fast a level.
    """

    compute_ops: float = 0
    bytes: float = 0
    working_set: float | None = None

    def __post_init__(self) -> None:
        __tracebackhide__ = True
        _check_amount("Work", "compute_ops", self.compute_ops)
        _check_amount("Work", "bytes", self.bytes)
        if self.working_set is not None:
            _check_amount("Work", "working_set", self.working_set)

    @property
    def footprint(self) -> float:
        """The working set in bytes: `working_set` where stated, else `bytes`."""
        return self.bytes if self.working_set is None else self.working_set


@dataclass(frozen=True, slots=True)
class Thresholds:
    """Target fractions of the modeled peak compute and memory throughput.

    The default, 1.0 each, is the roofline itself: only a candidate at the measured peak
    short-circuits tuning. A test that sets lower fractions also asks the CI gate for a
    floor: the winner must reach them.
    """

    compute: float = 1.0
    memory: float = 1.0

    def __post_init__(self) -> None:
        # Zero, NaN and infinity are accepted: each switches its bound off. A negative
        # fraction is a typo that would otherwise silently switch it off too.
        __tracebackhide__ = True
        for name in (COMPUTE, MEMORY):
            value = getattr(self, name)
            _check_number("Thresholds", name, value)
            if value < 0:
                raise ValueError(f"Thresholds: {name} must be >= 0, got {value!r}")

    @classmethod
    def uniform(cls, fraction: float) -> Thresholds:
        """The same fraction of peak for every resource."""
        return cls(compute=fraction, memory=fraction)


@runtime_checkable
class TimeBound(Protocol):
    """A calculator that determines the time limit for autotune bounds."""

    def time_limit(self) -> float | None:
        """Seconds under which a candidate is close enough to the roof; None for no limit."""


@dataclass(frozen=True, slots=True)
class AutotuneBound:
    """A bound for autotuning a throughput kernel: an amount of one resource (operations
    for "compute", bytes for "memory"), the device's peak rate of it per second, and the
    fraction of that peak the user calls good enough. A memory bound names the `level`
    whose rate it used (L1, L2, L3, DRAM, HBM), where the peaks said."""

    resource: str
    amount: float
    threshold: float
    peak: float
    level: str | None = None

    def time_limit(self) -> float | None:
        """`amount / peak / threshold` seconds, or None when the peak or the threshold is
        zero, NaN or infinite."""
        if not (_gives_limit(self.peak) and _gives_limit(self.threshold)):
            return None
        return self.amount / self.peak / self.threshold

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "resource": self.resource,
            "amount": json_number(self.amount),
            "threshold": json_number(self.threshold),
            "peak": json_number(self.peak),
        }
        if self.level is not None:
            data["level"] = self.level
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> AutotuneBound:
        level = data.get("level")
        return cls(
            resource=str(data["resource"]),
            amount=float(data["amount"]),
            threshold=float(data["threshold"]),
            peak=float(data["peak"]),
            level=None if level is None else str(level),
        )


@dataclass(frozen=True, slots=True)
class Bounds:
    """The bounds of one key on its reference inputs, with the device's launch overhead.

    The time limit is the largest of the bounds' limits: the resource that takes longest
    (the binding one) decides how fast the problem can run, the others are hidden under it.
    The launch overhead is added because even an empty call costs it, and a small problem
    would otherwise get a limit no candidate can reach.
    """

    bounds: tuple[AutotuneBound, ...]
    launch_overhead: float = 0.0

    def __post_init__(self) -> None:
        object.__setattr__(self, "bounds", tuple(self.bounds))
        _check_amount("Bounds", "launch_overhead", self.launch_overhead)

    def _binding(self) -> tuple[AutotuneBound, float] | None:
        limits = [(b, limit) for b in self.bounds if (limit := b.time_limit()) is not None]
        return max(limits, key=lambda pair: pair[1]) if limits else None

    def time_limit(self) -> float | None:
        """Seconds: the binding bound's limit plus the launch overhead; None when no bound
        gives a limit."""
        binding = self._binding()
        return binding[1] + self.launch_overhead if binding is not None else None

    def binding_resource(self) -> str | None:
        """The resource whose bound gives the largest limit, None when none gives one."""
        binding = self._binding()
        return binding[0].resource if binding is not None else None

    def binding_level(self) -> str | None:
        """The memory level of the binding bound, None when it is not a memory bound that
        names one."""
        binding = self._binding()
        return binding[0].level if binding is not None else None

    def to_json(self) -> dict[str, Any]:
        """A plain dict for cache files and records; durations in integer nanoseconds."""
        return {
            "bounds": [b.to_json() for b in self.bounds],
            "launch_overhead_ns": round(self.launch_overhead * NS_PER_S),
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Bounds:
        return cls(
            bounds=tuple(AutotuneBound.from_json(b) for b in data["bounds"]),
            launch_overhead=int(data["launch_overhead_ns"]) / NS_PER_S,
        )


BoundsGenerator = Callable[[Key, tuple[Any, ...], "Client"], "Bounds | None"]
"""`bounds_gen(key, inputs, client) -> Bounds | None`: produces the bounds for a key and its
reference inputs on the client's device, whose peaks the roofline needs (None: this key has
no useful roofline, tune without a short circuit)."""


def calculate_bounds(
    work: Work,
    thresholds: Thresholds,
    compute_peak: float,
    memory_peak: float,
    launch_overhead: float = 0.0,
    memory_level: str | None = None,
) -> Bounds:
    """Standardizes the creation of compute and memory bounds.

    A resource the work does not use (amount 0) gets no bound: its limit of 0 s would say
    nothing, and it must not be named the binding resource.
    """
    bounds: list[AutotuneBound] = []
    if work.compute_ops > 0:
        bounds.append(AutotuneBound(COMPUTE, work.compute_ops, thresholds.compute, compute_peak))
    if work.bytes > 0:
        bounds.append(
            AutotuneBound(MEMORY, work.bytes, thresholds.memory, memory_peak, memory_level)
        )
    return Bounds(tuple(bounds), launch_overhead)


def roofline(
    work: Work,
    peaks: Peaks,
    thresholds: Thresholds | None = None,
    *,
    launch_overhead: float = 0.0,
    dtype: str = "fp32",
) -> Bounds:
    """The bounds of `work` on a device with measured `peaks`: `calculate_bounds` with the
    compute peak of `dtype` and the roof of the memory level the work's working set fits
    in, for a generator that has a client at hand
    (`roofline(work, client.peaks(), launch_overhead=client.launch_overhead)`)."""
    memory = peaks.memory_roof(work.footprint)
    return calculate_bounds(
        work,
        thresholds if thresholds is not None else Thresholds(),
        peaks.compute_peak(dtype),
        memory.peak,
        launch_overhead,
        memory.level,
    )


def fraction_of_roof(
    work: Work, seconds: float, compute_peak: float, memory_peak: float
) -> float | None:
    """The fraction of the binding roof a run of `seconds` reached, for reports and the floor.

    The binding resource is the one whose peak time is largest, so this is the largest of
    the achieved rates over their peaks; None when no used resource has a measured peak or
    the duration is not a positive number.
    """
    if not _gives_limit(seconds):
        return None
    fractions = [
        amount / seconds / peak
        for amount, peak in ((work.compute_ops, compute_peak), (work.bytes, memory_peak))
        if amount > 0 and _gives_limit(peak)
    ]
    return max(fractions) if fractions else None


def meets_thresholds(
    work: Work,
    seconds: float,
    thresholds: Thresholds,
    compute_peak: float,
    memory_peak: float,
    launch_overhead: float = 0.0,
) -> bool | None:
    """Whether a run of `seconds` reaches `thresholds` on the binding resource: the gate's floor.

    It is the same test as the short circuit (at most the bounds' time limit), so a winner
    that short-circuited tuning always passes its floor. None when no bound gives a limit:
    a floor that cannot be judged is reported as such, neither passed nor failed.
    """
    limit = calculate_bounds(
        work, thresholds, compute_peak, memory_peak, launch_overhead
    ).time_limit()
    return None if limit is None else seconds <= limit
