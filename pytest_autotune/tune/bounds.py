"""Roofline bounds: how fast a problem could possibly run, so tuning can stop close to it.

A problem's `Work` (minimum operations and bytes) over a device's peak rates gives the time
the hardware needs at best for each resource. Divided by a threshold (the fraction of peak
the user calls good enough), that is a time limit: a candidate that lands under it cannot
be beaten by much, so the batch may end early (the short circuit), and a winner that stays
above it misses the floor the CI gate checks.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from pytest_autotune.tune.benchmark import NS_PER_S
from pytest_autotune.tune.client import Client
from pytest_autotune.tune.files import json_kind, json_number
from pytest_autotune.tune.peaks import COMPUTE_UNITS, Peaks, compute_unit
from pytest_autotune.tune.plain_numbers import RealNumber, finite, real_number

if TYPE_CHECKING:
    from numpy.typing import DTypeLike
else:
    # What `typing.get_type_hints(Work)` resolves `dtype` to at run time: importing
    # `numpy.typing` here would import NumPy wherever a `Work` is read (a cache file's
    # report, the plugin's settings), which needs none.
    DTypeLike = Any


class TorchDType(Protocol):
    """A PyTorch dtype (`torch.float16`, a tensor's `x.dtype`), as far as a type checker
    needs to tell it: `Work(dtype=x.dtype)` is taken at run time, and NumPy's `DTypeLike`
    names no torch dtype, so a checked user's code was refused where it ran. Structural, so
    that neither this package nor its users' type checks import torch."""

    @property
    def is_floating_point(self) -> bool: ...
    @property
    def is_complex(self) -> bool: ...
    @property
    def itemsize(self) -> int: ...


COMPUTE = "compute"
MEMORY = "memory"


def _gives_limit(value: float) -> bool:
    """A peak or threshold that is zero, negative, NaN, infinite or subnormal (the seed's
    `is_normal`) was not measured or set in a way that means anything, so it must switch
    its bound off rather than yield a limit of 0 or infinity that would short-circuit
    everything or nothing (a threshold of 5e-324 gave an infinite limit: the first
    candidate tried, however slow, won)."""
    return sys.float_info.min <= value < math.inf


def _plain_number(owner: Any, name: str) -> float:
    """A field's value as a plain Python number, set back on the frozen `owner` (a NumPy
    scalar, such as `np.prod(shape)`, is one, and the records write it as JSON); a field
    given a string or another type is named, not left to fail a comparison."""
    __tracebackhide__ = True  # pytest shows the user's line that built it, not this one
    value = getattr(owner, name)
    plain = real_number(value)
    if plain is None:
        raise TypeError(f"{type(owner).__name__}: {name} must be a number, got {value!r}")
    object.__setattr__(owner, name, plain)
    return plain


def _check_amount(owner: Any, name: str) -> None:
    __tracebackhide__ = True
    value = _plain_number(owner, name)
    if not (value >= 0 and finite(value)):
        kind = type(owner).__name__
        raise ValueError(f"{kind}: {name} must be a finite number >= 0, got {value!r}")


def _numpy_dtype(value: object) -> bool:
    """Whether NumPy reads `value` as a dtype (`x.dtype`, `np.int32`, "int32")."""
    import numpy as np

    try:
        np.dtype(value)  # type: ignore[call-overload]
    except (TypeError, ValueError):
        return False
    return True


@dataclass(frozen=True, slots=True)
class Work:
    """Work required by a problem, in minimum compute operations and bytes transferred.

    Minimum means what no implementation can avoid (each input read once, each output
    written once), so the roofline time is a bound every candidate is measured against.

    `working_set` is the bytes the problem holds at once (its inputs and outputs, each
    counted once, where `bytes` counts an array read and written twice): it decides which
    memory level the problem runs from, and so which roof bounds it. None takes `bytes`,
    which is never smaller, so an unstated working set never picks too fast a level.

    `dtype` is the arithmetic `compute_ops` run in, whose measured peak bounds them: a NumPy
    dtype (`x.dtype`, `np.float64`, "float64"), a PyTorch one (a tensor's `x.dtype`) or the
    peaks' name ("fp64", "fp16"); None is fp32. NumPy computes in float64 by default, at
    half fp32's rate or less, so a float64 kernel judged against the fp32 roof would read
    half as close to it as it is. It is typed as what it accepts (`Work(dtype=x.dtype)`
    type-checks in a user's code); it holds the peaks' name, or None, once built (`unit`
    reads it as a str).
    """

    compute_ops: float = 0
    bytes: float = 0
    working_set: float | None = None
    dtype: DTypeLike | TorchDType | None = None

    if TYPE_CHECKING:
        # What it is built from, wider than what it holds: an amount may be a NumPy scalar
        # (`Work(compute_ops=np.prod(x.shape))`, an `np.int64`, which no type checker takes
        # for a float), held as the Python number it equals.

        def __init__(
            self,
            compute_ops: RealNumber = 0,
            bytes: RealNumber = 0,
            working_set: RealNumber | None = None,
            dtype: DTypeLike | TorchDType | None = None,
        ) -> None: ...

    def __post_init__(self) -> None:
        __tracebackhide__ = True
        _check_amount(self, "compute_ops")
        _check_amount(self, "bytes")
        if self.working_set is not None:
            _check_amount(self, "working_set")
        if self.dtype is not None:
            unit = compute_unit(self.dtype)
            # A NumPy dtype no probe measures (an integer kernel's `x.dtype`, a tensor's
            # `torch.int32` read as "int32") is kept: its work is bounded by memory alone,
            # as the README says.
            if not (unit in COMPUTE_UNITS or _numpy_dtype(unit) or _numpy_dtype(self.dtype)):
                # A name that is neither (a typo, "fp46") has no peak: the compute bound,
                # the short circuit and the floor would be switched off without a word.
                raise ValueError(
                    f"Work: dtype {self.dtype!r} is neither a NumPy dtype nor a unit the peaks"
                    f" measure ({', '.join(COMPUTE_UNITS)})"
                )
            object.__setattr__(self, "dtype", unit)

    @property
    def unit(self) -> str:
        """The peaks' name of the compute unit that bounds `compute_ops` ("fp32" unless set)."""
        return compute_unit(self.dtype) if self.dtype is not None else "fp32"

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

    if TYPE_CHECKING:
        # Built from a NumPy scalar as well (`Thresholds(memory=np.float32(0.8))`), held
        # as the Python float it equals, as `Work` takes its amounts.

        def __init__(self, compute: RealNumber = 1.0, memory: RealNumber = 1.0) -> None: ...

    def __post_init__(self) -> None:
        # Zero, NaN and infinity are accepted: each switches its bound off. A negative
        # fraction is a typo that would otherwise silently switch it off too, and one past
        # 1 (80 for 80%) a floor above the roof that no kernel reaches: every gate fails.
        __tracebackhide__ = True
        for name in (COMPUTE, MEMORY):
            value = _plain_number(self, name)
            if value < 0:
                raise ValueError(
                    f"Thresholds: {name} must be >= 0 (0, NaN or infinity: no limit), got {value!r}"
                )
            if 1 < value < math.inf:
                raise ValueError(
                    f"Thresholds: {name} is a fraction of the roof, from 0 to 1 (0.8 for"
                    f" 80%; 0, NaN or infinity: no limit), got {value!r}"
                )

    @classmethod
    def uniform(cls, fraction: RealNumber) -> Thresholds:
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
    whose rate it used (L1, L2, L3, DRAM, HBM), where the peaks said; a compute bound names
    its unit there (fp64, fp16, ...) where it is not fp32."""

    resource: str
    amount: float
    threshold: float
    peak: float
    level: str | None = None

    def __post_init__(self) -> None:
        # A bounds generator computes with NumPy: its numbers go into records and cache
        # files, which hold Python numbers only. Zero, NaN and infinity stay: no limit.
        __tracebackhide__ = True
        for name in ("amount", "threshold", "peak"):
            _plain_number(self, name)

    def time_limit(self) -> float | None:
        """`amount / peak / threshold` seconds, or None when the peak or the threshold is
        zero, NaN, infinite or subnormal, or the quotient overflows."""
        if not (_gives_limit(self.peak) and _gives_limit(self.threshold)):
            return None
        limit = self.amount / self.peak / self.threshold
        return limit if math.isfinite(limit) else None  # normal figures can still overflow

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
        """Read `to_json`'s form; a value of the wrong shape (a hand-edited cache file) is a
        KeyError, TypeError or ValueError, which the readers report with the file's name."""
        if not isinstance(data, dict):
            raise TypeError(f"a bound is {json_kind(data)}, not a JSON object")
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

    bounds: Sequence[AutotuneBound]
    """Given as any sequence (the seed's `Vec`, ported as a list), held as a tuple. The
    `Bounds` that `calculate_bounds` returns is taken too (its bounds), so that the seed's
    composition `Bounds(calculate_bounds(...), launch_overhead)` runs as written there;
    `calculate_bounds(..., launch_overhead=...)` is the typed spelling."""
    launch_overhead: float = 0.0

    def __post_init__(self) -> None:
        given: object = self.bounds
        if isinstance(given, Bounds):
            given = given.bounds
        bounds: tuple[object, ...] = (
            tuple(given) if isinstance(given, Iterable) else (given,)  # named below
        )
        wrong = [b for b in bounds if not isinstance(b, AutotuneBound)]
        if wrong:
            raise TypeError(
                f"Bounds: expected AutotuneBound items (or the Bounds calculate_bounds"
                f" returns), got {type(wrong[0]).__name__} {wrong[0]!r}"
            )
        object.__setattr__(self, "bounds", bounds)
        _check_amount(self, "launch_overhead")

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
        """The memory level of the binding bound (or a compute bound's unit where it is not
        fp32), None when it names none."""
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
        """Read `to_json`'s form; a wrong shape raises as `AutotuneBound.from_json` does."""
        bounds = data["bounds"]
        if not isinstance(bounds, list):
            raise TypeError(f"'bounds' is {json_kind(bounds)}, not a JSON array")
        return cls(
            bounds=tuple(AutotuneBound.from_json(b) for b in bounds),
            launch_overhead=int(data["launch_overhead_ns"]) / NS_PER_S,
        )


BoundsGenerator = Callable[[Any, tuple[Any, ...], "Client"], "Bounds | None"]
"""`bounds_gen(key, inputs, client) -> Bounds | None`: produces the bounds for a key and its
reference inputs on the client's device, whose peaks the roofline needs (None: this key has
no useful roofline, tune without a short circuit). The key is typed `Any`, as the input
generator's and a priority function's are: a set's generators get the keys of its own key
generator, so a typed one names that type (`def bounds(key: SumKey, ...)`), which a
parameter typed as every kind of key would refuse under `mypy --strict`."""


def calculate_bounds(
    work: Work,
    thresholds: Thresholds,
    compute_peak: float,
    memory_peak: float,
    launch_overhead: float = 0.0,
    memory_level: str | None = None,
    compute_unit: str | None = None,
) -> Bounds:
    """Standardizes the creation of compute and memory bounds.

    A resource the work does not use (amount 0) gets no bound: its limit of 0 s would say
    nothing, and it must not be named the binding resource. The compute bound names its
    unit (`compute_unit`, else the work's `dtype`) where it is not fp32, in the bound's
    `level`: a gate scaling a time by today's peak over the baseline's must read today's
    peak of the same unit (`Baseline.peak_ratio`).
    """
    bounds: list[AutotuneBound] = []
    if work.compute_ops > 0:
        unit = compute_unit if compute_unit is not None else work.unit
        bounds.append(
            AutotuneBound(
                COMPUTE,
                work.compute_ops,
                thresholds.compute,
                compute_peak,
                None if unit == "fp32" else unit,
            )
        )
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
    dtype: object = None,
) -> Bounds:
    """The bounds of `work` on a device with measured `peaks`: `calculate_bounds` with the
    compute peak of `dtype` (the peaks' name, "fp32", or a NumPy dtype: `x.dtype`; None
    takes the work's own, `Work.unit`) and the roof of the memory level the work's working
    set fits in, for a generator that has a client at hand
    (`roofline(work, client.peaks(), launch_overhead=client.launch_overhead)`).
    """
    memory = peaks.memory_roof(work.footprint)
    unit = work.unit if dtype is None else compute_unit(dtype)
    return calculate_bounds(
        work,
        thresholds if thresholds is not None else Thresholds(),
        peaks.compute_peak(unit),
        memory.peak,
        launch_overhead,
        memory.level,
        unit,
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


def binding_resource(work: Work, compute_peak: float, memory_peak: float) -> str | None:
    """The resource whose roof `fraction_of_roof` is a fraction of: the one whose peak time
    is largest (thresholds of 1), None when no used resource has a measured peak. The gate
    and the report name that roof beside the fraction, each in its own words."""
    return calculate_bounds(work, Thresholds(), compute_peak, memory_peak).binding_resource()


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
