"""The roofline a decision's candidates are judged against: its work under the two roofs,
the bounds' own peaks where the record has them, else its device's measured peaks."""

from __future__ import annotations

import math
from dataclasses import dataclass

from pytest_autotune.report.html.records import Extra, read_work
from pytest_autotune.report.html.views import MISSING
from pytest_autotune.report.svg import RooflinePoint, format_si
from pytest_autotune.tune.bounds import (
    COMPUTE,
    MEMORY,
    Bounds,
    Work,
    binding_resource,
    fraction_of_roof,
)
from pytest_autotune.tune.peaks import Peaks


def _roofs(peaks: Peaks | None, bounds: Bounds | None, unit: str = "fp32") -> tuple[float, float]:
    """(compute, memory) peaks: the bounds' own peaks where the record has a bound of that
    resource (they are what the decision was tuned against), else the device's measured
    peaks (the compute roof of the work's `unit`, as the gate uses); 0.0 when unknown."""
    by_resource = {b.resource: b.peak for b in bounds.bounds} if bounds is not None else {}
    compute = by_resource.get(COMPUTE, peaks.compute_peak(unit) if peaks else 0.0)
    memory = by_resource.get(MEMORY, peaks.memory_peak if peaks else 0.0)
    return (
        compute if math.isfinite(compute) else 0.0,
        memory if math.isfinite(memory) else 0.0,
    )


@dataclass(frozen=True, slots=True)
class Roofline:
    """What a decision's candidates are judged against: its work and the two roofs."""

    work: Work | None
    compute_peak: float
    memory_peak: float
    memory_level: str | None = None
    """The memory level whose rate `memory_peak` is (L2, DRAM, ...), where the bound said."""

    def fraction(self, seconds: float) -> float | None:
        if self.work is None:
            return None
        return fraction_of_roof(self.work, seconds, self.compute_peak, self.memory_peak)

    def binding(self) -> str | None:
        """Which roof `fraction` is of: the binding resource of its bounds, the memory one
        named by its level where the bound said; None without work."""
        if self.work is None:
            return None
        resource = binding_resource(self.work, self.compute_peak, self.memory_peak)
        if resource == MEMORY:
            return self.memory_level or MEMORY
        return resource

    def point(self, name: str, seconds: float) -> RooflinePoint | None:
        work = self.work
        if work is None or work.compute_ops <= 0 or work.bytes <= 0:
            return None
        return RooflinePoint(name, work.compute_ops / work.bytes, work.compute_ops / seconds)

    def describe(self) -> tuple[str, str]:
        """(work, roofs) as the decision's card shows them."""
        work = MISSING
        if self.work is not None:
            work = f"{format_si(self.work.compute_ops)}op, {format_si(self.work.bytes)}B"
            if self.work.compute_ops > 0 and self.work.bytes > 0:
                work += f" ({self.work.compute_ops / self.work.bytes:.3g} op/B)"
        roofs = []
        if self.memory_peak > 0:
            level = f" ({self.memory_level})" if self.memory_level else ""
            roofs.append(f"memory{level} {format_si(self.memory_peak)}B/s")
        if self.compute_peak > 0:
            roofs.append(f"compute {format_si(self.compute_peak)}op/s")
        return work, ", ".join(roofs) or MISSING


def roofline_of(extra: Extra, bounds: Bounds | None, peaks: Peaks | None) -> Roofline:
    """The roofline a decision is drawn against: its work under its device's roofs."""
    level = next((b.level for b in bounds.bounds if b.resource == MEMORY), None) if bounds else None
    work = read_work(extra, bounds)
    roofs = _roofs(peaks, bounds, work.unit if work is not None else "fp32")
    return Roofline(work, *roofs, memory_level=level)
