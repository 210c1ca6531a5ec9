"""A device's peak rates: the value the roofline divides by, and its JSON form.

Measuring them is the client's job (`pytest_autotune.backends.peaks` probes and caches
them); the engine only reads them, so they live here, below everything that uses them.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Any


def _rates(kind: str, rates: Mapping[str, Any]) -> Mapping[str, float]:
    """A read-only copy, so a frozen `Peaks` stays what was measured."""
    checked: dict[str, float] = {}
    for name, rate in rates.items():
        if isinstance(rate, bool) or not isinstance(rate, (int, float)):
            raise TypeError(f"{kind} peak {name!r} is {rate!r}, expected a number")
        if not (rate >= 0 and math.isfinite(rate)):
            raise ValueError(f"{kind} peak {name!r} is {rate!r}, expected a finite rate >= 0")
        checked[str(name)] = float(rate)
    return MappingProxyType(checked)


NUMPY_DTYPES = {
    "float64": "fp64",
    "float32": "fp32",
    "float16": "fp16",
    "bfloat16": "bf16",
}
"""The peaks' names of NumPy's (and CuPy's) floating dtypes: a work model has `x.dtype`."""

COMPUTE_UNITS = ("fp64", "fp32", "fp16", "bf16", "tf32")
"""The compute units the probes measure (fp32 and fp64 everywhere, the rest on a GPU)."""


def compute_unit(dtype: object) -> str:
    """The peaks' name of a compute unit given as one ("fp64") or as a NumPy dtype, type or
    name (`x.dtype`, `np.float64`, "float64"), or a PyTorch dtype (a tensor's `x.dtype`)."""
    # A type (`np.float32`), a dtype (`x.dtype`, also byte-swapped: its `name`), a name.
    name = getattr(dtype, "__name__", None) or getattr(dtype, "name", None) or str(dtype)
    # A PyTorch dtype has no name but its str, "torch.float64".
    name = name.removeprefix("torch.")
    return NUMPY_DTYPES.get(name, name)


@dataclass(frozen=True, slots=True)
class MemoryLevel:
    """One cache level's measured bandwidth: what a problem whose working set fits in
    `capacity` bytes can stream at, by access pattern (the keys of `Peaks.memory`)."""

    name: str
    capacity: int
    rates: Mapping[str, float]

    def __post_init__(self) -> None:
        object.__setattr__(self, "rates", _rates(f"{self.name} memory", self.rates))
        if (
            isinstance(self.capacity, bool)
            or not isinstance(self.capacity, int)
            or self.capacity < 1
        ):
            raise TypeError(
                f"memory level {self.name!r}: capacity is {self.capacity!r}, expected bytes >= 1"
            )

    @property
    def peak(self) -> float:
        """The level's roof, chosen as `Peaks.memory_peak` chooses the outermost one's."""
        return _roof(self.rates)

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "capacity_bytes": self.capacity,
            "bytes_per_s": dict(sorted(self.rates.items())),
        }

    @classmethod
    def from_json(cls, data: Any) -> MemoryLevel:
        if not isinstance(data, dict) or not isinstance(data.get("bytes_per_s"), dict):
            raise TypeError(f"memory level {data!r}: expected an object with 'bytes_per_s'")
        capacity: Any = data.get("capacity_bytes")
        return cls(str(data.get("name")), capacity, data["bytes_per_s"])


@dataclass(frozen=True, slots=True)
class MemoryRoof:
    """The memory roof that bounds one working set: the level it fits in and its rate."""

    level: str
    peak: float


ROOF_PATTERNS = ("read", "copy", "add", "update")
"""The access patterns whose rates set a memory roof: each counts the bytes a kernel's
`Work` states, and real kernels stream at them (a reduction reads, an elementwise kernel
copies, `y += x` adds, `y *= 2` updates one buffer in place). "write" is left out (see
`Peaks.memory_peak`)."""


def _larger(a: Mapping[str, float], b: Mapping[str, float]) -> dict[str, float]:
    return {name: max(a.get(name, 0.0), b.get(name, 0.0)) for name in {**a, **b}}


def _roof(rates: Mapping[str, float]) -> float:
    return max((rates[name] for name in ROOF_PATTERNS if name in rates), default=0.0)


@dataclass(frozen=True, slots=True)
class Peaks:
    """Measured peak rates of one device.

    `memory` holds bytes per second by access pattern: "copy" (bytes read plus bytes
    written, the way `Work.bytes` counts them), "read" and "write". `compute` holds
    operations per second by dtype ("fp32", "fp64", "fp16", "bf16", "tf32"). `threads` is
    the number of threads the probes could use; `details` says how they measured (sizes,
    repetitions), so two files can be compared knowing what each number means.

    `memory` is the outermost level (`outer_level`: DRAM on a CPU, HBM on a GPU), streamed
    with buffers far beyond every cache. `levels` are the caches inside it, innermost
    first, each measured with a working set that fits it: a problem whose working set fits
    a cache runs from it, and bounding it by the outermost roof would read above 100%.
    Files written before the levels were measured have none, and bound every problem by
    the outermost level, as they did.
    """

    memory: Mapping[str, float]
    compute: Mapping[str, float]
    threads: int | None = None
    details: Mapping[str, Any] = field(default_factory=dict)
    levels: tuple[MemoryLevel, ...] = ()
    outer_level: str = "DRAM"

    def __post_init__(self) -> None:
        object.__setattr__(self, "memory", _rates("memory", self.memory))
        levels = tuple(sorted(self.levels, key=lambda level: level.capacity))
        object.__setattr__(self, "levels", levels)
        object.__setattr__(self, "compute", _rates("compute", self.compute))
        object.__setattr__(self, "details", MappingProxyType(dict(self.details)))
        if self.threads is not None and (
            isinstance(self.threads, bool) or not isinstance(self.threads, int) or self.threads < 1
        ):
            raise TypeError(f"threads is {self.threads!r}, expected an integer >= 1 or null")

    @property
    def memory_peak(self) -> float:
        """Bytes per second of the memory roof: the largest of the read, copy and add rates
        (`ROOF_PATTERNS`); 0.0 (no bound) when none was measured.

        All count the bytes a kernel's `Work` states, and real kernels reach them: a
        reduction streams at the read rate, an elementwise kernel at the copy rate, saxpy
        at the add rate and a scaling in place at the update rate, where a CPU probe
        measured them. The
        write rate is left out: a store-only stream is a special case (streaming stores on
        a CPU skip the read-for-ownership a mixed kernel pays), and a roof set by it would
        be one that no kernel reading its inputs can reach.
        """
        return _roof(self.memory)

    def memory_roof(self, working_set: float | None = None) -> MemoryRoof:
        """The roof of a problem whose working set is `working_set` bytes: the innermost
        measured level that holds it, else the outermost (also for None: unknown).

        A level's rate was measured at the small end of its working sets, where it streams
        fastest, so a problem anywhere in the level stays under its roof. Its roof is never
        below an outer level's: an inner level that measured slower (a probe dominated by
        call overhead, a noisy moment) must not bound a small problem tighter than a large
        one."""
        holding = [
            level
            for level in self.levels
            if working_set is not None and working_set <= level.capacity and level.peak > 0
        ]
        name = holding[0].name if holding else self.outer_level
        return MemoryRoof(name, max([self.memory_peak, *(level.peak for level in holding)]))

    def level_peak(self, level: str | None) -> float:
        """The roof of the memory level named `level`; the outermost for None or a level
        these peaks did not measure (a baseline from a file without levels)."""
        for measured in self.levels:
            if measured.name == level:
                return measured.peak
        return self.memory_peak

    def compute_peak(self, dtype: object = "fp32") -> float:
        """Operations per second for `dtype` ("fp32", or a NumPy dtype, type or name:
        `x.dtype`, `np.float32`, "float32"); 0.0 (no bound) when it was not measured."""
        return self.compute.get(compute_unit(dtype), 0.0)

    def at_least(self, other: Peaks) -> Peaks:
        """Each rate the larger of these peaks' and `other`'s, measured the same way: a
        probe is a best-of run, so a slower second read of one roof is the moment's, not
        the device's. Levels are matched by name; one only `other` measured is kept."""
        levels = {level.name: level for level in self.levels}
        for level in other.levels:
            mine = levels.get(level.name)
            levels[level.name] = (
                level if mine is None else replace(mine, rates=_larger(mine.rates, level.rates))
            )
        return replace(
            self,
            memory=_larger(self.memory, other.memory),
            compute=_larger(self.compute, other.compute),
            levels=tuple(levels.values()),
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "memory_bytes_per_s": dict(sorted(self.memory.items())),
            "compute_ops_per_s": dict(sorted(self.compute.items())),
            "threads": self.threads,
            "details": dict(self.details),
            "memory_levels": [level.to_json() for level in self.levels],
            "outer_memory_level": self.outer_level,
        }

    @classmethod
    def from_json(cls, data: Any) -> Peaks:
        """Peaks written by `to_json`; TypeError or ValueError naming the field that is wrong."""
        if not isinstance(data, dict):
            raise TypeError(f"peaks are {data!r}, expected an object")
        parts: dict[str, Any] = {}
        for key in ("memory_bytes_per_s", "compute_ops_per_s", "details"):
            if not isinstance(data.get(key), dict):
                raise TypeError(f"peaks field {key!r} is {data.get(key)!r}, expected an object")
            parts[key] = data[key]
        levels = data.get("memory_levels", [])
        if not isinstance(levels, list):
            raise TypeError(f"peaks field 'memory_levels' is {levels!r}, expected a list")
        outer = data.get("outer_memory_level", "DRAM")
        if not isinstance(outer, str):
            raise TypeError(f"peaks field 'outer_memory_level' is {outer!r}, expected a string")
        return cls(
            memory=parts["memory_bytes_per_s"],
            compute=parts["compute_ops_per_s"],
            threads=data.get("threads"),
            details=parts["details"],
            levels=tuple(MemoryLevel.from_json(level) for level in levels),
            outer_level=outer,
        )


def device_peaks(device: Mapping[str, Any] | None) -> Peaks | None:
    """The peaks a device block holds (a cache file's or a record's `device`), None where
    it holds none that read: a comparison then goes without scaling rather than fail."""
    data = device.get("peaks") if device else None
    if data is None:
        return None
    try:
        return Peaks.from_json(data)
    except (TypeError, ValueError):
        return None
