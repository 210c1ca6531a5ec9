"""Roofline bounds: time limits, the binding resource, the floor, and their JSON form."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from pytest_autotune.backends.peaks import MemoryLevel, MemoryRoof, Peaks
from pytest_autotune.tune.bounds import (
    COMPUTE,
    AutotuneBound,
    Bounds,
    Thresholds,
    TimeBound,
    Work,
    calculate_bounds,
    fraction_of_roof,
    meets_thresholds,
    roofline,
)

NO_LIMIT = [0.0, math.nan, math.inf, 5e-324]  # the last subnormal: not `is_normal` in the seed


def test_a_bound_allows_its_amount_over_the_peak_divided_by_the_threshold() -> None:
    assert AutotuneBound("memory", 8e9, 0.5, 4e12).time_limit() == 8e9 / 4e12 / 0.5


@pytest.mark.parametrize("peak", [*NO_LIMIT, -1.0])
def test_a_peak_that_is_zero_nan_infinite_or_subnormal_gives_no_limit(peak: float) -> None:
    assert AutotuneBound("compute", 1e9, 1.0, peak).time_limit() is None


@pytest.mark.parametrize("threshold", NO_LIMIT)
def test_a_threshold_that_is_zero_nan_infinite_or_subnormal_gives_no_limit(
    threshold: float,
) -> None:
    assert AutotuneBound("compute", 1e9, threshold, 1e12).time_limit() is None


def test_a_limit_that_overflows_is_no_limit() -> None:
    # Normal figures whose quotient is infinite: a limit no sample can miss, which would
    # short-circuit the batch on whichever candidate ran first.
    assert AutotuneBound("memory", 1e300, 1e-10, 1e-10).time_limit() is None


def test_the_binding_resource_is_the_one_with_the_largest_limit() -> None:
    bounds = Bounds(
        (AutotuneBound("compute", 1e9, 1.0, 1e12), AutotuneBound("memory", 4e9, 1.0, 1e12))
    )
    assert bounds.binding_resource() == "memory"
    assert bounds.time_limit() == 4e9 / 1e12


def test_the_threshold_can_make_the_smaller_resource_bind() -> None:
    bounds = calculate_bounds(
        Work(compute_ops=1e9, bytes=4e9), Thresholds(compute=0.1, memory=1.0), 1e12, 1e12
    )
    assert bounds.binding_resource() == "compute"
    assert bounds.time_limit() == 1e9 / 1e12 / 0.1


def test_launch_overhead_is_added_to_the_binding_limit() -> None:
    bounds = calculate_bounds(Work(bytes=1e9), Thresholds(), 0.0, 1e12, launch_overhead=7e-6)
    assert bounds.time_limit() == 1e9 / 1e12 + 7e-6


def test_a_bound_without_a_limit_is_never_binding() -> None:
    bounds = calculate_bounds(Work(compute_ops=1e15, bytes=1e9), Thresholds(), math.nan, 1e12)
    assert bounds.binding_resource() == "memory"
    assert bounds.time_limit() == 1e9 / 1e12


def test_bounds_without_any_limit_have_no_time_limit_and_no_binding_resource() -> None:
    bounds = calculate_bounds(Work(compute_ops=1, bytes=1), Thresholds(), 0.0, math.inf, 1e-6)
    assert bounds.time_limit() is None
    assert bounds.binding_resource() is None
    assert Bounds(()).time_limit() is None


def test_a_resource_the_work_does_not_use_gets_no_bound() -> None:
    assert calculate_bounds(Work(bytes=1e6), Thresholds(), 1e12, 1e12).bounds == (
        AutotuneBound("memory", 1e6, 1.0, 1e12),
    )
    assert calculate_bounds(Work(compute_ops=5), Thresholds(), 1e12, 1e12).bounds == (
        AutotuneBound("compute", 5, 1.0, 1e12),
    )
    assert calculate_bounds(Work(), Thresholds(), 1e12, 1e12).bounds == ()


def test_uniform_thresholds_set_every_resource_to_the_same_fraction() -> None:
    assert Thresholds.uniform(0.8) == Thresholds(compute=0.8, memory=0.8)
    assert Thresholds() == Thresholds.uniform(1.0)


@pytest.mark.parametrize("value", [80, 1.5])
def test_a_threshold_past_the_roof_is_refused_as_a_percentage_would_be(value: float) -> None:
    # 80 for 80%: a floor no kernel reaches, and every gate of the group failed.
    with pytest.raises(ValueError) as info:
        Thresholds(memory=value)
    assert str(info.value) == (
        "Thresholds: memory is a fraction of the roof, from 0 to 1 (0.8 for 80%; 0, NaN or"
        f" infinity: no limit), got {value!r}"
    )
    assert Thresholds(memory=1.0, compute=math.inf).compute == math.inf  # inf: no bound


def test_a_negative_threshold_or_amount_is_refused_with_its_name() -> None:
    with pytest.raises(ValueError, match="memory"):
        Thresholds(memory=-0.3)
    with pytest.raises(ValueError, match="bytes"):
        Work(bytes=-1)
    with pytest.raises(ValueError, match="compute_ops"):
        Work(compute_ops=math.nan)
    with pytest.raises(ValueError, match="launch_overhead"):
        Bounds((), launch_overhead=math.inf)


def test_numpy_numbers_are_numbers_to_work_and_thresholds() -> None:
    # A work model counts with NumPy (`2 * np.prod(x.shape) * k`, an np.int64): it was
    # refused as "compute_ops must be a number, got np.int64(524288)".
    x = np.ones((64, 64), np.float32)
    work = Work(2 * np.prod(x.shape) * 64, np.int64(3 * x.nbytes), working_set=np.float64(8))
    assert work == Work(524288, 3 * x.nbytes, working_set=8.0)
    assert type(work.compute_ops) is int
    assert Thresholds(np.float32(0.5), memory=np.int64(1)) == Thresholds(0.5, 1)
    json.dumps(calculate_bounds(work, Thresholds.uniform(np.float64(0.5)), 1e12, 1e11).to_json())
    with pytest.raises(TypeError, match="compute_ops must be a number"):
        Work(compute_ops=np.bool_(True))  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="bytes must be a finite number >= 0"):
        Work(bytes=np.float64(-1.0))


def test_a_bound_made_of_numpy_numbers_is_written_as_json() -> None:
    # A bounds generator's `np.prod(shape) * 4` (np.int64) passed into the decision, whose
    # record then failed in json.dumps: "Object of type int64 is not JSON serializable",
    # raised from `execute` after the key was tuned.
    bound = AutotuneBound("memory", np.int64(4096), np.float32(0.5), np.float64(1e10))
    bounds = Bounds((bound,), launch_overhead=np.float32(0.0))
    assert json.loads(json.dumps(bounds.to_json()))["bounds"][0]["amount"] == 4096
    assert bounds.time_limit() == pytest.approx(4096 / 1e10 / 0.5)
    with pytest.raises(TypeError, match="AutotuneBound: amount must be a number, got '4096'"):
        AutotuneBound("memory", "4096", 1.0, 1e10)  # type: ignore[arg-type]


def test_numpy_scalars_are_numbers_and_stored_as_python_numbers() -> None:
    # `np.prod(x.shape)` is an np.int64 and `np.finfo(np.float32).eps` an np.float32: both
    # were refused as "must be a number", and a NumPy scalar kept would not write as JSON.
    work = Work(compute_ops=2 * np.prod((64, 64)), bytes=np.float32(1024.0))
    assert work == Work(compute_ops=8192, bytes=1024.0)
    assert type(work.compute_ops) is int
    assert type(work.bytes) is float
    json.dumps([work.compute_ops, work.bytes])
    thresholds = Thresholds.uniform(np.float32(0.5))
    assert thresholds == Thresholds(compute=0.5, memory=0.5)
    assert type(thresholds.memory) is float
    with pytest.raises(TypeError, match="compute must be a number"):
        Thresholds(compute=np.bool_(True))  # type: ignore[arg-type]


def test_an_integer_past_a_floats_range_is_refused_as_not_finite() -> None:
    with pytest.raises(ValueError, match="bytes must be a finite number"):
        Work(bytes=10**400)


def test_bounds_and_a_single_bound_are_time_bounds() -> None:
    assert isinstance(Bounds(()), TimeBound)
    assert isinstance(AutotuneBound("memory", 1, 1, 1), TimeBound)


def test_bounds_survive_a_json_round_trip_through_a_file() -> None:
    bounds = calculate_bounds(
        Work(compute_ops=2e9, bytes=3e9), Thresholds(0.5, 0.9), 6.3e13, 4.28e12, 7e-6
    )
    data = json.loads(json.dumps(bounds.to_json(), allow_nan=False))
    assert data["launch_overhead_ns"] == 7000
    assert Bounds.from_json(data) == bounds


def test_an_unmeasured_peak_is_written_as_strict_json_and_read_back() -> None:
    bounds = Bounds(
        (AutotuneBound("compute", 1.0, 1.0, math.nan), AutotuneBound("memory", 1.0, 1.0, math.inf))
    )
    text = json.dumps(bounds.to_json(), allow_nan=False)
    back = Bounds.from_json(json.loads(text))
    assert math.isnan(back.bounds[0].peak)
    assert back.bounds[1].peak == math.inf
    assert back.time_limit() is None


def test_the_fraction_of_roof_is_the_one_reached_on_the_binding_resource() -> None:
    work = Work(compute_ops=1e9, bytes=4e9)
    # 8 ms: memory at 0.5 TB/s of 1 TB/s, compute at 0.125 of its roof.
    assert fraction_of_roof(work, 8e-3, 1e12, 1e12) == 0.5


@pytest.mark.parametrize("seconds", [0.0, -1.0, math.nan, math.inf])
def test_a_duration_that_is_not_positive_has_no_fraction_of_roof(seconds: float) -> None:
    assert fraction_of_roof(Work(bytes=1e9), seconds, 1e12, 1e12) is None


def test_without_a_measured_peak_for_the_work_there_is_no_fraction_of_roof() -> None:
    assert fraction_of_roof(Work(bytes=1e9), 1e-3, 1e12, 0.0) is None


def test_the_floor_is_met_at_exactly_the_time_limit_and_missed_just_above_it() -> None:
    work = Work(bytes=1e9)
    thresholds = Thresholds(memory=0.5)
    limit = 1e9 / 1e12 / 0.5 + 1e-6
    assert meets_thresholds(work, limit, thresholds, 1e12, 1e12, launch_overhead=1e-6) is True
    assert meets_thresholds(work, limit * 1.001, thresholds, 1e12, 1e12, 1e-6) is False


def test_the_floor_is_met_when_the_looser_resource_is_reached() -> None:
    # Memory needs 4 ms at 100%; compute at 10% allows 10 ms: the limit is the larger one.
    work = Work(compute_ops=1e9, bytes=4e9)
    assert meets_thresholds(work, 9e-3, Thresholds(compute=0.1, memory=1.0), 1e12, 1e12)


def test_a_floor_without_a_measured_peak_cannot_be_judged() -> None:
    assert meets_thresholds(Work(bytes=1e9), 1.0, Thresholds(memory=0.5), 1e12, 0.0) is None


def test_the_roofline_of_a_device_uses_its_memory_roof_and_the_dtype_compute_peak() -> None:
    peaks = Peaks(
        memory={"read": 2e12, "copy": 3e12, "write": 9e12}, compute={"fp32": 5e13, "fp16": 7e14}
    )
    bounds = roofline(Work(compute_ops=1e12, bytes=3e9), peaks, dtype="fp16", launch_overhead=1e-6)
    assert bounds == calculate_bounds(
        Work(1e12, 3e9), Thresholds(), 7e14, 3e12, 1e-6, "DRAM", compute_unit="fp16"
    )
    # The compute bound names its unit, for a gate that scales by today's peak of it.
    assert bounds.bounds[0].level == "fp16"


def test_a_works_dtype_picks_its_compute_roof_wherever_it_is_bounded() -> None:
    # NumPy computes in float64: a float64 matmul was bounded, and its fraction of roof
    # read, against the fp32 peak, twice its own on most hardware.
    peaks = Peaks(memory={"copy": 3e12}, compute={"fp32": 6e13, "fp64": 3e13})
    for dtype in (np.float64, np.dtype("float64"), "float64", "fp64"):
        work = Work(compute_ops=6e12, bytes=1e9, dtype=dtype)
        assert work.dtype == work.unit == "fp64"
        assert _compute_peak(roofline(work, peaks)) == 3e13
    assert Work(1.0).unit == "fp32" and Work(1.0).dtype is None
    assert _compute_peak(roofline(Work(6e12, 1e9), peaks)) == 6e13
    # An explicit dtype still wins over the work's own.
    work = Work(compute_ops=6e12, bytes=1e9, dtype="fp64")
    assert _compute_peak(roofline(work, peaks, dtype="fp32")) == 6e13


@pytest.mark.parametrize("dtype", ["fp46", "float99", object()])
def test_a_work_dtype_that_names_nothing_is_refused_by_name(dtype: object) -> None:
    # Its peak was 0: the compute bound, the short circuit and the floor went off silently.
    with pytest.raises(ValueError, match=r"neither a NumPy dtype nor a unit.*fp64, fp32"):
        Work(compute_ops=1.0, dtype=dtype)


@pytest.mark.parametrize("dtype", ["int32", np.int64, np.dtype("uint8")])
def test_an_integer_works_compute_has_no_roof_and_its_memory_has(dtype: object) -> None:
    # An integer kernel's `Work(dtype=x.dtype)` failed its test; no probe measures integer
    # arithmetic, so its compute has no roof and the memory roof bounds it.
    peaks = Peaks(memory={"copy": 1e10}, compute={"fp32": 1e11})
    bounds = roofline(Work(compute_ops=1e6, bytes=1e6, dtype=dtype), peaks)
    assert _compute_peak(bounds) == 0.0
    assert bounds.binding_resource() == "memory"


def _compute_peak(bounds: Bounds) -> float:
    return next(b.peak for b in bounds.bounds if b.resource == COMPUTE)


LEVELS = Peaks(
    memory={"copy": 1e10, "read": 8e9},
    compute={"fp32": 1e11},
    levels=(
        MemoryLevel("L1", 48 << 10, {"copy": 2e11}),
        MemoryLevel("L2", 2 << 20, {"copy": 1e11, "read": 4e10}),
        MemoryLevel("L3", 32 << 20, {"copy": 3e10}),
    ),
)


@pytest.mark.parametrize(
    ("working_set", "level", "peak"),
    [
        (16 << 10, "L1", 2e11),
        (48 << 10, "L1", 2e11),  # a working set that fills a level still fits it
        (1 << 20, "L2", 1e11),
        (20 << 20, "L3", 3e10),
        (1 << 30, "DRAM", 1e10),
        (None, "DRAM", 1e10),  # an unknown working set gets the outermost roof
    ],
)
def test_a_problem_is_bounded_by_the_level_its_working_set_fits_in(
    working_set: float | None, level: str, peak: float
) -> None:
    assert LEVELS.memory_roof(working_set) == MemoryRoof(level, peak)


def test_the_roofline_names_the_level_whose_rate_bound_it() -> None:
    bounds = roofline(Work(bytes=3 << 20, working_set=2 << 20), LEVELS)
    assert bounds.binding_level() == "L2"
    assert bounds.time_limit() == pytest.approx((3 << 20) / 1e11)
    # Without a working set the bytes decide: 3 MiB does not fit L2.
    assert roofline(Work(bytes=3 << 20), LEVELS).binding_level() == "L3"
    assert roofline(Work(compute_ops=1e12, bytes=1), LEVELS).binding_level() is None


def test_an_inner_level_that_measured_slower_never_bounds_tighter_than_an_outer_one() -> None:
    peaks = Peaks(
        memory={"copy": 1e10},
        compute={},
        levels=(
            MemoryLevel("L1", 1 << 15, {"copy": 5e9}),
            MemoryLevel("L2", 1 << 20, {"copy": 3e10}),
        ),
    )
    assert peaks.memory_roof(1 << 10) == MemoryRoof("L1", 3e10)


def test_a_bound_keeps_its_level_through_json_and_reads_old_bounds_without_one() -> None:
    bound = AutotuneBound("memory", 1e6, 1.0, 1e11, "L2")
    assert AutotuneBound.from_json(bound.to_json()) == bound
    old = {"resource": "memory", "amount": 1e6, "threshold": 1.0, "peak": 1e11}
    assert AutotuneBound.from_json(old).level is None
    assert "level" not in AutotuneBound("memory", 1e6, 1.0, 1e11).to_json()


def test_bounds_compose_as_the_seed_writes_them_from_calculate_bounds() -> None:
    # DESIGN.md and the seed: calculate_bounds makes the bounds, Bounds(bounds,
    # launch_overhead) adds the overhead; given its Bounds, the port raised "'Bounds' object
    # is not iterable" from inside the dataclass.
    made = calculate_bounds(Work(1e9, 1e9), Thresholds(), 1e12, 1e11)
    composed = Bounds(made, 1e-6)
    assert composed.bounds == made.bounds
    assert composed.time_limit() == pytest.approx(1e9 / 1e11 + 1e-6)


@pytest.mark.parametrize("given", [3, [1.0], ["memory"]])
def test_bounds_of_anything_but_bounds_is_a_type_error_naming_it(given: object) -> None:
    with pytest.raises(TypeError, match=r"^Bounds: expected AutotuneBound items"):
        Bounds(given)  # type: ignore[arg-type]
