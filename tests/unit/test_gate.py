"""The CI gate: precise measurement, the baseline, the regression and floor checks, verdicts.

Measurements are built from chosen samples, so every standard error is known exactly and
every case sits at a computed distance from the gate's threshold: no timing, no flakes.
The thresholds quoted in test names follow from the defaults: the smallest slowdown that
can fail is exp(ln(1 + max_regression) + 3.09*sigma) - 1, which with exact medians
(sigma = sigma_between) is 7.886% on a GPU and 20.685% on a CPU.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from pathlib import Path

import pytest

from pytest_autotune.backends.peaks import Peaks
from pytest_autotune.gate import (
    DEFAULT_MAX_REGRESSION,
    DEFAULT_SIGMA_BETWEEN,
    Baseline,
    BaselineError,
    Comparison,
    FloorCheck,
    GroupVerdict,
    Measurement,
    RegressionCheck,
    Verdict,
    device_kind,
    format_change,
    format_interval,
    judge,
    measure_precisely,
)
from pytest_autotune.report.figures import counted
from pytest_autotune.tune.benchmark import AutotuneOutcome
from pytest_autotune.tune.bounds import Thresholds, Work, calculate_bounds
from pytest_autotune.tune.cache import PersistentCache, PersistentCacheKey, PersistentCacheValue
from pytest_autotune.tune.errors import AutotuneError, AutotuneErrorKind
from pytest_autotune.tune.key import stable_key
from pytest_autotune.tune.log import format_duration

GPU = "cuda-nvidia-h200"
CPU = "cpu-amd-epyc-7b13-2t"
CHECKSUM = "0123456789abcdef"
SOURCE = ".autotune/cuda-nvidia-h200/test_saxpy.json"
T = 100e-6


def exact(seconds: float, n: int = 10) -> Measurement:
    """A measurement whose median has no error at all (every sample equal)."""
    return Measurement((seconds,) * n)


def spread(median: float, rse: float, n: int = 10) -> Measurement:
    """A measurement of `n` (even) samples whose median's relative standard error is `rse`:
    half at median*(1-e), half at median*(1+e). From ten samples on the error is read off
    the order statistics around the median (here one of each half, 2*e*median apart, over
    2*1.96); below, off the standard deviation (median*e)."""
    e = rse * 1.959963984540054 if n >= 10 else rse * math.sqrt(n) / 1.2533
    return Measurement((median * (1 - e),) * (n // 2) + (median * (1 + e),) * (n // 2))


def baseline(
    median: float = T,
    rse: float = 0.0,
    device_id: str = GPU,
    checksum: str = CHECKSUM,
    **fields: object,
) -> Baseline:
    samples = spread(median, rse).samples if rse else (median,) * 10
    return Baseline(
        device_id=device_id,
        checksum=checksum,
        fastest_name="float4",
        samples=samples,
        source=SOURCE,
        **fields,  # type: ignore[arg-type]
    )


# The rule's arithmetic below is worked at a GPU noise of 1.5% (the default before
# 2026-11-30's measurement moved it to 1%), so its figures stay the ones derived by hand.
GPU_CHECK = RegressionCheck(max_regression=0.03, sigma_between=0.015)
CPU_CHECK = RegressionCheck.for_device(CPU)


# -- defaults -------------------------------------------------------------------------------


def test_a_cuda_device_id_is_a_gpu_and_anything_else_a_cpu() -> None:
    assert device_kind("cuda-nvidia-h200") == "gpu"
    assert device_kind("cpu-amd-epyc-7b13-2t") == "cpu"
    assert device_kind("fake-device") == "cpu"


def test_the_defaults_are_three_percent_on_a_gpu_and_ten_on_a_cpu() -> None:
    assert DEFAULT_MAX_REGRESSION == {"gpu": 0.03, "cpu": 0.10}
    assert DEFAULT_SIGMA_BETWEEN == {"gpu": 0.010, "cpu": 0.03}
    assert RegressionCheck.for_device(GPU) == RegressionCheck(0.03, 0.010, z=3.09)
    assert RegressionCheck(max_regression=0.10, sigma_between=0.03, z=3.09) == CPU_CHECK


def test_a_given_tolerance_or_noise_replaces_the_device_default() -> None:
    assert RegressionCheck.for_device(GPU, 0.05, 0.02) == RegressionCheck(0.05, 0.02)


@pytest.mark.parametrize("field", ["max_regression", "sigma_between", "z"])
@pytest.mark.parametrize("value", [-0.01, math.nan, math.inf])
def test_a_negative_or_non_finite_setting_is_refused(field: str, value: float) -> None:
    settings = {"max_regression": 0.03, "sigma_between": 0.015, "z": 3.09, field: value}
    with pytest.raises(ValueError, match=field):
        RegressionCheck(**settings)


# -- the regression rule --------------------------------------------------------------------


def test_with_exact_medians_a_gpu_slowdown_of_7_89_percent_fails_and_7_88_passes() -> None:
    assert GPU_CHECK.fails(exact(T * 1.0789), baseline()) is not None
    assert GPU_CHECK.fails(exact(T * 1.0788), baseline()) is None


def test_so_an_8_percent_gpu_slowdown_can_just_fail() -> None:
    assert GPU_CHECK.delta(exact(T * 1.08), baseline()).failed


def test_with_tight_errors_of_half_a_percent_the_gpu_line_moves_to_8_42_percent() -> None:
    current, base = spread(T * 1.084, 0.005), baseline(rse=0.005)
    assert current.se_log == pytest.approx(0.005, rel=1e-9)
    assert base.se_log == pytest.approx(0.005, rel=1e-9)
    assert GPU_CHECK.fails(current, base) is None
    assert GPU_CHECK.fails(spread(T * 1.085, 0.005), base) is not None


def test_the_design_detection_target_a_10_percent_gpu_slowdown_fails_with_tight_errors() -> None:
    assert GPU_CHECK.fails(spread(T * 1.10, 0.005), baseline(rse=0.005)) is not None


@pytest.mark.parametrize("rse", [0.0, 0.001, 0.005, 0.05])
def test_a_3_percent_gpu_slowdown_never_fails_however_precise_the_measurement(rse: float) -> None:
    current = spread(T * 1.03, rse) if rse else exact(T * 1.03)
    assert GPU_CHECK.fails(current, baseline(rse=rse)) is None


def test_with_exact_medians_a_cpu_slowdown_of_20_7_percent_fails_and_20_6_passes() -> None:
    base = baseline(device_id=CPU)
    assert CPU_CHECK.fails(exact(T * 1.207), base) is not None
    assert CPU_CHECK.fails(exact(T * 1.206), base) is None


def test_the_design_detection_target_a_25_percent_cpu_slowdown_fails_with_tight_errors() -> None:
    assert CPU_CHECK.fails(spread(T * 1.25, 0.005), baseline(rse=0.005, device_id=CPU)) is not None


def test_a_noisy_measurement_widens_the_interval_so_a_15_percent_slowdown_passes() -> None:
    # se 4% on the current side: sigma = sqrt(0.04^2 + 0.015^2), the line at 17.5%.
    assert GPU_CHECK.fails(spread(T * 1.15, 0.04), baseline()) is None
    assert GPU_CHECK.fails(exact(T * 1.15), baseline()) is not None


def test_a_single_sample_baseline_can_never_show_a_regression() -> None:
    single = Baseline(GPU, CHECKSUM, "float4", (T,), source=SOURCE)
    comparison = GPU_CHECK.delta(exact(T * 10), single)
    assert not comparison.failed
    assert (comparison.low, comparison.high) == (-1.0, math.inf)


def test_a_faster_kernel_is_never_a_regression() -> None:
    comparison = GPU_CHECK.delta(exact(T * 0.5), baseline())
    assert comparison.delta == pytest.approx(-0.5)
    assert not comparison.failed


def test_the_comparison_is_the_change_with_its_interval_at_z_sigma() -> None:
    comparison = GPU_CHECK.delta(exact(T * 1.08), baseline())
    d, margin = math.log(1.08), 3.09 * 0.015
    assert comparison == Comparison(
        delta=pytest.approx(0.08, rel=1e-12),  # type: ignore[arg-type]
        low=pytest.approx(math.expm1(d - margin), rel=1e-12),  # type: ignore[arg-type]
        high=pytest.approx(math.expm1(d + margin), rel=1e-12),  # type: ignore[arg-type]
        failed=True,
    )


def test_a_machine_10_percent_slower_today_does_not_make_the_kernel_a_regression() -> None:
    # Same kernel, memory probe at 90% of the baseline's: the time is 1/0.9 = 11.1% longer.
    current = exact(T / 0.9)
    assert GPU_CHECK.fails(current, baseline(), peak_ratio=0.9) is None
    assert GPU_CHECK.delta(current, baseline(), peak_ratio=0.9).delta == pytest.approx(0.0)
    assert GPU_CHECK.fails(current, baseline()) is not None


@pytest.mark.parametrize("ratio", [0.0, -1.0, math.nan, math.inf])
def test_a_peak_ratio_that_is_not_a_positive_number_is_a_bug(ratio: float) -> None:
    with pytest.raises(ValueError, match="peak_ratio"):
        GPU_CHECK.delta(exact(T), baseline(), peak_ratio=ratio)


def test_the_regression_message_says_by_how_much_and_against_what() -> None:
    assert GPU_CHECK.fails(exact(T * 1.08), baseline()) == (
        "regression of +8.0% [+3.1%, +13.1%]: median 108 us against the baseline median"
        f" 100 us (float4 on {GPU}, {SOURCE}); tolerated 3.0%"
    )


def test_the_message_shows_the_scaled_times_the_verdict_used_and_the_scale() -> None:
    message = GPU_CHECK.fails(exact(T * 1.2), baseline(), peak_ratio=0.95)
    assert message == (
        "regression of +14.0% [+8.8%, +19.4%]: median 114 us against the baseline median"
        f" 100 us (float4 on {GPU}, {SOURCE}); this run's 120 us scaled x0.950 by this run's"
        " peak over the baseline's; tolerated 3.0%"
    )


# -- the floor ------------------------------------------------------------------------------

PEAKS = Peaks(memory={"read": 1e12, "copy": 0.9e12}, compute={"fp32": 1e13})


def test_a_winner_below_the_memory_floor_fails_naming_the_resource_fraction_and_floor() -> None:
    # 1 GB at 1 TB/s takes 1 ms; in 2 ms the winner reaches 50% against a floor of 80%.
    message = FloorCheck(Thresholds(memory=0.8)).fails(Work(bytes=1e9), 2e-3, PEAKS)
    assert message == (
        "below the floor: 50.0% of the DRAM memory roof (1e+12 B/s measured in this run)"
        " in 2.00 ms, the floor is 80.0%"
    )


def test_a_winner_at_the_floor_passes() -> None:
    assert FloorCheck(Thresholds(memory=0.8)).fails(Work(bytes=1e9), 1.25e-3, PEAKS) is None


def test_the_floor_is_judged_on_the_binding_resource_of_the_chosen_dtype() -> None:
    # 1e12 flop at 10 Tflop/s is 0.1 s, the binding bound at a 50% compute floor.
    floor = FloorCheck(Thresholds(compute=0.5, memory=0.5))
    message = floor.fails(Work(compute_ops=1e12, bytes=1e6), 0.4, PEAKS)
    assert message is not None
    assert message.startswith("below the floor: 25.0% of the fp32 compute roof (1e+13 op/s")


def test_a_floor_failed_on_both_roofs_names_the_other_and_its_unset_floor() -> None:
    # A matmul with Thresholds(memory=0.05): the table's roof column said "32.5% fp32
    # compute" and the floor "1.9% of the memory roof", with no word of the compute floor
    # that an unset field makes 100%: the winner passes by reaching either.
    floor = FloorCheck(Thresholds(memory=0.05))
    message = floor.fails(Work(compute_ops=1e12, bytes=1e10), 0.4, PEAKS)
    assert message == (
        "below the floor: 2.5% of the DRAM memory roof (1e+12 B/s measured in this run) in"
        " 400 ms, the floor is 5.0%; 25.0% of the fp32 compute roof, whose floor is 100.0% (a"
        " Thresholds field left unset is 1.0, the roof): reaching either floor passes"
    )


def test_the_launch_overhead_counts_as_in_the_short_circuit() -> None:
    floor = FloorCheck(Thresholds(memory=0.8), launch_overhead=1e-4)
    assert floor.fails(Work(bytes=1e9), 1.35e-3, PEAKS) is None
    assert floor.fails(Work(bytes=1e9), 1.36e-3, PEAKS) is not None


def test_a_floor_that_no_measured_peak_can_judge_is_not_a_failure() -> None:
    no_memory_peak = Peaks(memory={}, compute={"fp32": 1e13})
    assert FloorCheck(Thresholds(memory=0.8)).fails(Work(bytes=1e9), 1.0, no_memory_peak) is None


def test_a_floor_that_no_bound_can_judge_says_why_for_each_resource() -> None:
    no_memory_peak = Peaks(memory={}, compute={"fp32": 1e13})
    floor = FloorCheck(Thresholds(compute=0.0, memory=0.8))
    assert floor.unjudged(Work(compute_ops=1e9, bytes=1e9), no_memory_peak) == (
        "Thresholds.compute is 0.0, no limit; no memory peak was measured"
    )
    assert FloorCheck(Thresholds(memory=0.8)).unjudged(Work(bytes=1e9), PEAKS) is None


# -- measuring precisely --------------------------------------------------------------------


class Clock:
    """Wall clock that advances by each sample's duration."""

    def __init__(self, samples: list[float]) -> None:
        self.now = 0.0
        self.samples = samples
        self.taken = 0

    def sample(self) -> float:
        value = self.samples[min(self.taken, len(self.samples) - 1)]
        self.taken += 1
        self.now += value
        return value


def test_a_steady_winner_is_sampled_only_min_samples_times() -> None:
    clock = Clock([1e-3])
    samples = measure_precisely(clock.sample, min_samples=10, now=lambda: clock.now)
    assert samples == (1e-3,) * 10


def one_over_n(samples: Sequence[float]) -> float:
    """An error that falls as 1/n: under 5% from 21 samples, under 0.5% from 201."""
    return 1 / len(samples)


def test_up_to_40_samples_the_error_is_checked_after_every_sample() -> None:
    clock = Clock([1e-3])
    samples = measure_precisely(
        clock.sample, target_rse=0.05, min_samples=3, time_cap=1e9, error=one_over_n
    )
    assert len(samples) == 21


def test_past_40_samples_the_error_is_checked_every_5_percent_more_samples() -> None:
    clock = Clock([1e-3])
    samples = measure_precisely(
        clock.sample, target_rse=0.005, min_samples=3, time_cap=1e9, error=one_over_n
    )
    # Checks at 40, 42, 44, ..., 182, 191, 200 (1/200 is not under 0.5%), then 210.
    assert len(samples) == 210


def test_one_preempted_sample_does_not_keep_the_measurement_going() -> None:
    clock = Clock([1.5e-3] + [1e-3] * 500)
    samples = measure_precisely(clock.sample, target_rse=0.005, min_samples=10, time_cap=1e9)
    assert len(samples) == 10


def test_sampling_stops_at_the_time_cap() -> None:
    clock = Clock([1.0, 2.0] * 100)
    samples = measure_precisely(clock.sample, time_cap=5.0, min_samples=3, now=lambda: clock.now)
    assert samples == (1.0, 2.0, 1.0, 2.0)


def test_min_samples_are_taken_even_past_the_time_cap() -> None:
    clock = Clock([10.0, 20.0])
    samples = measure_precisely(clock.sample, time_cap=1.0, min_samples=5, now=lambda: clock.now)
    assert len(samples) == 5


def test_sampling_stops_at_max_samples() -> None:
    clock = Clock([1.0, 2.0] * 100)
    samples = measure_precisely(
        clock.sample, min_samples=3, max_samples=7, time_cap=1e9, now=lambda: clock.now
    )
    assert len(samples) == 7


def test_a_sample_that_is_not_a_positive_duration_is_an_invalid_samples_error() -> None:
    with pytest.raises(AutotuneError) as raised:
        measure_precisely(lambda: 0.0, name="float4")
    assert raised.value.kind is AutotuneErrorKind.INVALID_SAMPLES
    assert raised.value.name == "float4"


def test_fewer_than_two_min_samples_is_refused() -> None:
    with pytest.raises(ValueError, match="min_samples"):
        measure_precisely(lambda: 1.0, min_samples=1)


def test_a_measurement_refuses_samples_that_are_not_positive_seconds() -> None:
    with pytest.raises(ValueError, match="positive finite"):
        Measurement((1e-3, 0.0))
    with pytest.raises(ValueError, match="positive finite"):
        Measurement(())


# -- the baseline from the cache -------------------------------------------------------------


def cache_value(
    winner: AutotuneOutcome | AutotuneError | None = None,
    bounds: dict[str, object] | None = None,
) -> PersistentCacheValue:
    return PersistentCacheValue(
        key="n1024",
        fastest_index=1,
        fastest_name="float4",
        results=(
            AutotuneOutcome("block256", 0, (3e-6, 3e-6, 3e-6)),
            winner
            or AutotuneOutcome("float4", 1, (9e-6, 1e-6, 1.1e-6, 1.2e-6), dropped_first=True),
        ),
        bounds=bounds,
    )


BOUNDS = calculate_bounds(Work(compute_ops=1e6, bytes=1e9), Thresholds(), 1e13, 4e12).to_json()


def test_a_baseline_is_the_winners_effective_samples_with_its_binding_peak_and_noise() -> None:
    found = Baseline.from_cache_entry(
        cache_value(bounds=BOUNDS),
        CHECKSUM,
        device={"id": GPU, "fingerprint": {}},
        metadata={"sigma_between": 0.012},
        source=SOURCE,
    )
    assert found == Baseline(
        device_id=GPU,
        checksum=CHECKSUM,
        fastest_name="float4",
        samples=(1e-6, 1.1e-6, 1.2e-6),
        peak=4e12,
        peak_resource="memory",
        sigma_between=0.012,
        source=SOURCE,
        work=(("compute", 1e6), ("memory", 1e9)),
    )


def test_a_baseline_without_bounds_or_noise_has_neither() -> None:
    found = Baseline.from_cache_entry(cache_value(), CHECKSUM, device={"id": GPU}, metadata={})
    assert (found.peak, found.peak_resource, found.sigma_between) == (None, None, None)
    assert found.work is None


@pytest.mark.parametrize(
    "bounds",
    [
        {"bounds": "x", "launch_overhead_ns": 0},
        {"bounds": [1], "launch_overhead_ns": 0},
        {"bounds": [None], "launch_overhead_ns": 0},
        {"bounds": {"peak": 1}, "launch_overhead_ns": 0},
    ],
)
def test_hand_edited_bounds_of_wrong_types_are_a_baseline_error_naming_the_key(
    bounds: dict[str, object],
) -> None:
    # A bound that is no JSON object failed every test of the group with an
    # AttributeError from our internals, instead of the message of a baseline that does
    # not read.
    with pytest.raises(BaselineError, match=r"^cache\.json: key \"n1024\": bounds do not read"):
        Baseline.from_cache_entry(
            cache_value(bounds=bounds),
            CHECKSUM,
            device={"id": GPU},
            metadata={},
            source="cache.json",
        )


def test_the_peak_ratio_is_this_runs_peak_over_the_baselines_on_its_resource() -> None:
    memory = baseline(peak=4e12, peak_resource="memory")
    compute = baseline(peak=1e13, peak_resource="compute")
    today = Peaks(memory={"read": 3.6e12}, compute={"fp32": 1.1e13, "fp16": 5e14})
    assert memory.peak_ratio(today) == pytest.approx(0.9)
    assert compute.peak_ratio(today) == pytest.approx(1.1)
    # A compute baseline names its unit: today's peak of that unit, whoever asks.
    fp16 = baseline(peak=1e13, peak_resource="compute", peak_level="fp16")
    assert fp16.peak_ratio(today) == pytest.approx(50.0)


def test_a_float64_baseline_is_scaled_by_the_fp64_peak_whoever_judges_it() -> None:
    # The baseline's bound came from a Work(dtype=float64): judged without the work (as
    # `compare` judges two runs' records), the fp32 peak over the fp64 one read a false
    # +100% regression on an unchanged kernel.
    from pytest_autotune.gate.baseline import binding_peak
    from pytest_autotune.tune.bounds import roofline

    peaks = Peaks(memory={"read": 1e15, "copy": 1e15}, compute={"fp32": 6e13, "fp64": 3e13})
    bounds = roofline(Work(compute_ops=3e10, bytes=8, dtype="float64"), peaks)
    peak, resource, unit = binding_peak(bounds.to_json(), "r.jsonl")
    assert (peak, resource, unit) == (3e13, "compute", "fp64")
    then = baseline(peak=peak, peak_resource=resource, peak_level=unit)
    assert then.peak_ratio(peaks) == pytest.approx(1.0)
    verdict = judge(spread(T, 0.002), then, device_id=GPU, checksum=CHECKSUM, peaks=peaks)
    assert verdict.verdict is Verdict.PASS, verdict.message


def test_without_a_peak_on_either_side_the_time_is_not_normalised() -> None:
    today = Peaks(memory={}, compute={"fp32": 1e13})
    assert baseline().peak_ratio(today) == 1.0
    assert baseline(peak=4e12, peak_resource="memory").peak_ratio(today) == 1.0


def test_a_baseline_is_found_in_a_cache_file_written_by_the_cache(tmp_path: Path) -> None:
    path = tmp_path / GPU / "test_saxpy.json"
    cache = PersistentCache(path)
    cache.load()
    value = cache_value(bounds=BOUNDS)
    cache.save(
        {PersistentCacheKey(stable_key("n1024"), CHECKSUM): value},
        device={"id": GPU},
        metadata={"sigma_between": 0.01},
    )
    reader = PersistentCache(path)
    entries = reader.load()
    found = Baseline.find(
        entries,
        stable_key("n1024"),
        CHECKSUM,
        device=reader.device(),
        metadata=reader.metadata(),
        source=str(path),
    )
    assert found is not None
    assert found.samples == (1e-6, 1.1e-6, 1.2e-6)
    assert (found.sigma_between, found.source) == (0.01, str(path))
    missing = Baseline.find(
        entries, stable_key("n2048"), CHECKSUM, device=reader.device(), metadata={}
    )
    assert missing is None


def test_an_entry_of_another_candidate_list_is_found_so_it_can_be_called_not_comparable() -> None:
    entries = {PersistentCacheKey('"n1024"', "old"): cache_value()}
    found = Baseline.find(entries, '"n1024"', CHECKSUM, device={"id": GPU}, metadata={})
    assert found is not None and found.checksum == "old"


def test_the_entry_with_the_current_checksum_is_preferred() -> None:
    entries = {
        PersistentCacheKey('"n1024"', "old"): cache_value(),
        PersistentCacheKey('"n1024"', CHECKSUM): cache_value(),
    }
    found = Baseline.find(entries, '"n1024"', CHECKSUM, device={"id": GPU}, metadata={})
    assert found is not None and found.checksum == CHECKSUM


def test_a_winner_that_failed_cannot_be_a_baseline_and_the_error_names_file_and_key() -> None:
    failed = AutotuneError(AutotuneErrorKind.UNKNOWN, "boom", "float4")
    with pytest.raises(BaselineError) as raised:
        Baseline.from_cache_entry(
            cache_value(failed), CHECKSUM, device={"id": GPU}, metadata={}, source=SOURCE
        )
    assert str(raised.value) == f'{SOURCE}: key "n1024": the winner float4 has no samples'


def test_a_file_without_a_device_id_cannot_give_a_baseline() -> None:
    with pytest.raises(BaselineError, match="device block has no 'id'"):
        Baseline.from_cache_entry(cache_value(), CHECKSUM, device=None, metadata={})


@pytest.mark.parametrize("device_id", [5, "", None])
def test_a_device_id_edited_to_a_wrong_type_is_said_to_be_wrong_not_missing(
    device_id: object,
) -> None:
    # The message said "has no 'id'" of a device block whose id was there: 5.
    with pytest.raises(BaselineError) as raised:
        Baseline.from_cache_entry(cache_value(), CHECKSUM, device={"id": device_id}, metadata={})
    assert str(raised.value).endswith(
        f"the file's device block's 'id' is {json.dumps(device_id)}, expected a device id"
    )


@pytest.mark.parametrize("sigma", [-0.1, "1%", True])
def test_a_sigma_between_that_is_not_a_number_is_a_baseline_error(sigma: object) -> None:
    with pytest.raises(BaselineError, match="sigma_between"):
        Baseline.from_cache_entry(
            cache_value(), CHECKSUM, device={"id": GPU}, metadata={"sigma_between": sigma}
        )


@pytest.mark.parametrize("sigma", [3, 1.5])
def test_a_sigma_between_past_1_is_a_baseline_error_asking_for_a_fraction(sigma: float) -> None:
    # 3 meant as 3% read as 300% noise: every group of the file "too noisy", and the
    # message named other causes.
    with pytest.raises(BaselineError, match=f"'sigma_between' is {sigma}, expected a fraction"):
        Baseline.from_cache_entry(
            cache_value(), CHECKSUM, device={"id": GPU}, metadata={"sigma_between": sigma}
        )
    found = Baseline.from_cache_entry(
        cache_value(), CHECKSUM, device={"id": GPU}, metadata={"sigma_between": 1}
    )
    assert found.sigma_between == 1.0


# -- verdicts -------------------------------------------------------------------------------


def gate(
    current: Measurement | None,
    base: Baseline | None = None,
    **options: object,
) -> GroupVerdict:
    return judge(current, base, device_id=GPU, checksum=CHECKSUM, **options)  # type: ignore[arg-type]


def test_an_unchanged_kernel_passes() -> None:
    verdict = gate(exact(T * 1.01), baseline())
    assert (verdict.verdict, verdict.failed, verdict.message) == (Verdict.PASS, False, "")
    assert verdict.comparison is not None
    assert verdict.comparison.delta == pytest.approx(0.01)


def test_a_regression_fails_with_its_comparison() -> None:
    verdict = gate(exact(T * 1.2), baseline())
    assert (verdict.verdict, verdict.failed) == (Verdict.REGRESSION, True)
    assert verdict.message.startswith("regression of +20.0%")
    assert verdict.comparison is not None and verdict.comparison.failed


def test_the_max_regression_given_to_the_gate_is_the_tolerance() -> None:
    # The line at 15% and 3.09 sigmas of the GPU's 1%: +18.6%.
    assert gate(exact(T * 1.18), baseline(), max_regression=0.15).verdict is Verdict.PASS
    assert gate(exact(T * 1.18), baseline()).verdict is Verdict.REGRESSION


def test_the_noise_stored_with_the_baseline_replaces_the_default() -> None:
    assert gate(exact(T * 1.08), baseline()).verdict is Verdict.REGRESSION
    # With 5% between sessions the interval could not catch even a 10% slowdown.
    noisy = gate(exact(T * 1.08), baseline(sigma_between=0.05))
    assert noisy.verdict is Verdict.TOO_NOISY and not noisy.failed


def test_too_noisy_by_the_files_own_noise_names_it_and_what_would_help() -> None:
    # More sessions or a quieter runner cannot narrow a noise the file sets by hand: the
    # message said only those.
    noisy = gate(exact(T), baseline(sigma_between=0.05)).message
    assert (
        f'the between-session noise is the 5.0% that {SOURCE} sets (its "sigma_between"),'
        " in place of the 1.0% the gate would use; what would help: a smaller"
        f' "sigma_between" in {SOURCE}, or none'
    ) in noisy
    assert "more baseline sessions" not in noisy
    # A file's noise narrower than the default's is not why a comparison is too noisy.
    single = Baseline(GPU, CHECKSUM, "float4", (T,), source=SOURCE, sigma_between=0.005)
    assert "sigma_between" not in gate(exact(T), single).message


def test_a_wide_interval_wholly_under_the_tolerance_is_a_pass_not_too_noisy() -> None:
    # With 5% between sessions: a 38% speedup's interval rules out any slowdown past the
    # tolerance, though it could not catch one of twice the tolerance.
    faster = gate(exact(T * 0.62), baseline(sigma_between=0.05))
    assert faster.comparison is not None and faster.comparison.high < 0.1
    assert (faster.verdict, faster.failed) == (Verdict.PASS, False)
    assert gate(exact(T * 0.62), baseline(sigma_between=0.05), strict=True).verdict is Verdict.PASS
    # Unchanged, its interval reaches past the tolerance: still too noisy.
    assert gate(exact(T), baseline(sigma_between=0.05)).verdict is Verdict.TOO_NOISY


def test_the_gate_normalises_by_the_peaks_of_this_run() -> None:
    base = baseline(peak=4e12, peak_resource="memory")
    slower_machine = Peaks(memory={"read": 3.6e12}, compute={})
    assert gate(exact(T / 0.9), base, peaks=slower_machine).verdict is Verdict.PASS
    assert gate(exact(T / 0.9), base).verdict is Verdict.REGRESSION


def test_a_cpu_time_is_compared_raw_because_its_probes_do_not_track_its_kernels() -> None:
    base = baseline(device_id="cpu-intel-xeon-2t", peak=4e12, peak_resource="memory")
    slower_probe = Peaks(memory={"read": 2e12}, compute={})
    verdict = judge(
        exact(T * 1.02), base, device_id="cpu-intel-xeon-2t", checksum=CHECKSUM, peaks=slower_probe
    )
    assert verdict.verdict is Verdict.PASS
    assert verdict.comparison is not None
    assert verdict.comparison.delta == pytest.approx(0.02)


def test_an_error_is_never_reported_as_a_regression() -> None:
    verdict = gate(exact(T * 2), baseline(), error="every candidate failed: RuntimeError")
    assert verdict == GroupVerdict(
        Verdict.ERROR, "every candidate failed: RuntimeError", None, None, True
    )


def test_a_group_that_measured_nothing_is_an_error() -> None:
    verdict = gate(None, baseline())
    assert (verdict.verdict, verdict.failed, verdict.comparison) == (Verdict.ERROR, True, None)


def test_a_missing_baseline_is_reported_and_fails_only_in_strict_mode() -> None:
    relaxed, strict = gate(exact(T)), gate(exact(T), strict=True)
    assert (relaxed.verdict, relaxed.failed) == (Verdict.NO_BASELINE, False)
    assert (strict.verdict, strict.failed) == (Verdict.NO_BASELINE, True)
    assert "--autotune-update records one" in relaxed.message


def test_a_baseline_of_another_device_is_not_comparable_and_never_fails() -> None:
    for strict in (False, True):
        verdict = gate(exact(T * 2), baseline(device_id="cuda-nvidia-a100"), strict=strict)
        assert (verdict.verdict, verdict.failed, verdict.comparison) == (
            Verdict.NOT_COMPARABLE,
            False,
            None,
        )
        assert verdict.message == (
            f"the baseline in {SOURCE} was measured on cuda-nvidia-a100, this run is on {GPU}"
        )


def test_a_baseline_of_another_candidate_list_is_not_comparable() -> None:
    verdict = gate(exact(T * 2), baseline(checksum="fedcba9876543210"))
    assert (verdict.verdict, verdict.failed) == (Verdict.NOT_COMPARABLE, False)
    assert "another candidate list (checksum fedcba9876543210, now 0123456789abcdef)" in (
        verdict.message
    )


def test_the_fraction_of_roof_is_reported_with_this_runs_peaks() -> None:
    verdict = gate(exact(2e-3), baseline(2e-3), work=Work(bytes=1e9), peaks=PEAKS)
    assert verdict.fraction_of_roof == pytest.approx(0.5)


def test_a_winner_below_its_floor_fails_even_without_a_baseline() -> None:
    verdict = gate(
        exact(2e-3), work=Work(bytes=1e9), peaks=PEAKS, thresholds=Thresholds(memory=0.8)
    )
    assert (verdict.verdict, verdict.failed) == (Verdict.FLOOR, True)
    assert verdict.message.startswith("below the floor: 50.0% of the DRAM memory roof")


def test_a_regression_below_the_floor_reports_both() -> None:
    verdict = gate(
        exact(2e-3),
        baseline(1e-3),
        work=Work(bytes=1e9),
        peaks=PEAKS,
        thresholds=Thresholds(memory=0.8),
    )
    assert verdict.verdict is Verdict.REGRESSION
    regression, floor = verdict.message.split("\n")
    assert regression.startswith("regression of +100.0%")
    assert floor.startswith("below the floor")


def test_a_suspected_regression_that_the_re_measurement_clears_passes() -> None:
    calls: list[int] = []

    def remeasure() -> Measurement:
        calls.append(1)
        return exact(T * 1.01)

    verdict = gate(exact(T * 1.2), baseline(), remeasure=remeasure)
    assert (verdict.verdict, verdict.failed, verdict.remeasured) == (Verdict.PASS, False, True)
    assert verdict.measurement == exact(T * 1.01)
    assert calls == [1]


def test_a_regression_fails_only_when_the_re_measurement_confirms_it() -> None:
    verdict = gate(exact(T * 1.2), baseline(), remeasure=lambda: exact(T * 1.25))
    assert (verdict.verdict, verdict.failed, verdict.remeasured) == (
        Verdict.REGRESSION,
        True,
        True,
    )
    assert verdict.message.startswith("regression of +25.0%")


def test_with_two_confirmations_a_regression_fails_only_if_both_re_measurements_fail() -> None:
    # A slow episode of a shared CPU lasts through the first re-measurement; a regression of
    # the code lasts through every one.
    episode = iter([exact(T * 1.31), exact(T * 1.0)])
    cleared = gate(exact(T * 1.31), baseline(), remeasure=lambda: next(episode), confirmations=2)
    assert (cleared.verdict, cleared.failed, cleared.remeasured) == (Verdict.PASS, False, True)
    assert cleared.measurement == exact(T * 1.0)
    assert "measured 3 times" not in cleared.message  # a pass says no reads

    regressed = iter([exact(T * 1.3), exact(T * 1.28), exact(T * 1.0)])
    verdict = gate(exact(T * 1.3), baseline(), remeasure=lambda: next(regressed), confirmations=2)
    assert (verdict.verdict, verdict.failed) == (Verdict.REGRESSION, True)
    assert verdict.message.startswith("regression of +28.0%")
    # Every read that failed is said: the message's figures are the last one's.
    assert verdict.message.endswith("; measured 3 times: +30.0%, +30.0%, +28.0%")
    assert next(regressed) == exact(T * 1.0)  # a third was never taken


def test_the_first_re_measurement_that_clears_a_suspected_failure_ends_the_confirmations() -> None:
    taken: list[int] = []

    def remeasure() -> Measurement:
        taken.append(1)
        return exact(T)

    verdict = gate(exact(T * 1.3), baseline(), remeasure=remeasure, confirmations=3)
    assert verdict.verdict is Verdict.PASS and taken == [1]


def test_a_floor_failure_is_re_measured_too() -> None:
    verdict = gate(
        exact(2e-3),
        work=Work(bytes=1e9),
        peaks=PEAKS,
        thresholds=Thresholds(memory=0.8),
        remeasure=lambda: exact(1e-3),
    )
    assert (verdict.verdict, verdict.remeasured) == (Verdict.NO_BASELINE, True)


def test_the_reads_are_said_on_a_regressions_line_and_not_for_a_floor_alone() -> None:
    # 1e9 bytes at 1e12 B/s: 1 ms is the roof; 2 ms is 50% of it, under a floor of 80%.
    floor = {"work": Work(bytes=1e9), "peaks": PEAKS, "thresholds": Thresholds(memory=0.8)}
    alone = gate(exact(2e-3), baseline(2e-3), remeasure=lambda: exact(2e-3), **floor)
    assert (alone.verdict, alone.remeasured) == (Verdict.FLOOR, True)
    assert "times:" not in alone.message  # its reads' change against the baseline: 0%
    both = gate(exact(2.4e-3), baseline(2e-3), remeasure=lambda: exact(2.4e-3), **floor)
    assert both.verdict is Verdict.REGRESSION
    regression, floor_line = both.message.split("\n")
    assert regression.endswith("; measured 2 times: +20.0%, +20.0%")
    assert "times:" not in floor_line


def test_a_passing_group_is_not_re_measured() -> None:
    def remeasure() -> Measurement:
        raise AssertionError("re-measured a passing group")

    assert gate(exact(T), baseline(), remeasure=remeasure).remeasured is False


def test_a_winner_that_fails_while_re_measured_is_an_error_not_a_regression() -> None:
    def remeasure() -> Measurement:
        raise AutotuneError(AutotuneErrorKind.INVALID_SAMPLES, "timer returned 0.0 s", "float4")

    verdict = gate(exact(T * 1.2), baseline(), remeasure=remeasure)
    assert (verdict.verdict, verdict.failed, verdict.comparison) == (Verdict.ERROR, True, None)
    assert "float4: invalid_samples: timer returned 0.0 s" in verdict.message


def test_an_update_never_fails_but_says_what_would_have() -> None:
    verdict = gate(exact(T * 1.2), baseline(), update=True, remeasure=lambda: exact(T * 1.3))
    assert (verdict.verdict, verdict.failed, verdict.remeasured) == (
        Verdict.UPDATED,
        False,
        True,
    )
    assert verdict.comparison is not None and verdict.comparison.failed
    assert verdict.message.startswith(
        "recorded as the new baseline; without --autotune-update: regression of +30.0%"
    )
    assert verdict.message.endswith("; measured 2 times: +20.0%, +30.0%")


def test_an_updates_slowdown_is_measured_again_before_it_starts_a_new_baseline() -> None:
    # A VM's slow phase read unchanged code +131% in an update, and that one session
    # became the baseline. Measured again, it joins the old one (`update_policy.history`
    # starts a new baseline only from a comparison that fails) with the second read.
    cleared = gate(exact(T * 2.31), baseline(), update=True, remeasure=lambda: exact(T * 1.01))
    assert (cleared.verdict, cleared.remeasured) == (Verdict.UPDATED, True)
    assert cleared.measurement == exact(T * 1.01)
    assert cleared.comparison is not None and not cleared.comparison.failed
    assert cleared.message == "recorded as the new baseline"
    unchanged = gate(exact(T * 1.0), baseline(), update=True, remeasure=lambda: exact(T * 2))
    assert unchanged.remeasured is False and unchanged.measurement == exact(T)


def test_an_updates_speedup_is_measured_again_before_it_starts_a_new_baseline() -> None:
    # In a fast spell of a VM an update read unchanged code -43% and became the baseline;
    # unchanged code then failed at +110%. Measured again, the spell passes and the session
    # joins the old baseline with the second read; a kernel made faster stays faster.
    cleared = gate(exact(T * 0.57), baseline(), update=True, remeasure=lambda: exact(T * 0.99))
    assert (cleared.verdict, cleared.remeasured) == (Verdict.UPDATED, True)
    assert cleared.measurement == exact(T * 0.99)
    assert cleared.comparison is not None and cleared.comparison.high > 0
    assert cleared.message == "recorded as the new baseline"
    faster = gate(exact(T * 0.57), baseline(), update=True, remeasure=lambda: exact(T * 0.58))
    assert faster.comparison is not None and faster.comparison.high < 0
    assert faster.message.endswith("; measured 2 times: -43.0%, -42.0%")  # once on a GPU


def test_an_updates_change_read_the_other_way_when_measured_again_is_not_confirmed() -> None:
    # On the 2-core VM an update read an unchanged kernel +35.6%, then -15.2%, then
    # +31.8%: each read past the tolerance, so the loop went on, and the third read alone
    # started a new baseline that the second had contradicted. The reads disagree: no
    # change is confirmed, and the session joins its baseline (`update_policy.history`).
    reads = iter([exact(T * 0.85), exact(T * 1.32)])
    verdict = gate(
        exact(T * 1.356), baseline(), update=True, remeasure=lambda: next(reads), confirmations=2
    )
    assert (verdict.verdict, verdict.unconfirmed) == (Verdict.UPDATED, True)
    assert verdict.measurement == exact(T * 0.85)  # measured twice, not three times
    assert verdict.message.endswith("; measured 2 times, the reads disagree: +35.6%, -15.0%")
    slower = iter([exact(T * 1.3), exact(T * 1.32)])
    confirmed = gate(
        exact(T * 1.356), baseline(), update=True, remeasure=lambda: next(slower), confirmations=2
    )
    assert confirmed.unconfirmed is False
    assert confirmed.message.endswith("; measured 3 times: +35.6%, +30.0%, +32.0%")


def test_an_updates_speedup_within_the_tolerance_joins_without_being_measured_again() -> None:
    # `update_policy.history` starts a new baseline only past the tolerance: a smaller
    # speedup joins the old baseline anyway, and measuring it again only cost time.
    def remeasure() -> Measurement:
        raise AssertionError("measured again")

    verdict = gate(exact(T * 0.96), baseline(), update=True, remeasure=remeasure)
    assert (verdict.verdict, verdict.remeasured) == (Verdict.UPDATED, False)
    assert verdict.comparison is not None and verdict.comparison.high < 0
    assert verdict.message == "recorded as the new baseline"


def test_an_update_without_a_baseline_records_one() -> None:
    verdict = gate(exact(T), update=True, strict=True)
    assert (verdict.verdict, verdict.failed, verdict.message) == (
        Verdict.UPDATED,
        False,
        "recorded as the new baseline",
    )


# -- formatting -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        (189e-6, "189 us"),
        (1.234e-3, "1.23 ms"),
        (12.34e-9, "12.3 ns"),
        (999.96e-6, "1.00 ms"),
        (4.5, "4.50 s"),
        (0.0, "0.00 ns"),
    ],
)
def test_durations_read_in_the_unit_that_keeps_three_digits(seconds: float, text: str) -> None:
    assert format_duration(seconds) == text


def test_changes_carry_their_sign_and_an_unbounded_end_reads_inf() -> None:
    assert (format_change(0.08), format_change(-0.031), format_change(math.inf)) == (
        "+8.0%",
        "-3.1%",
        "+inf%",
    )
    # A too-noisy interval's far end reads in whole percent.
    assert (format_change(98.94881), format_change(9.994), format_change(-0.99)) == (
        "+9895%",
        "+999.4%",
        "-99.0%",
    )


def test_a_count_takes_its_nouns_number() -> None:
    assert (counted(1, "entry", "entries"), counted(3, "entry", "entries")) == (
        "1 entry",
        "3 entries",
    )
    assert (counted(1, "session"), counted(0, "session")) == ("1 session", "0 sessions")


def test_an_entry_whose_winner_index_and_name_disagree_is_not_comparable() -> None:
    # Written by a version that left out the candidates a groups= plan never reached: the
    # result at fastest_index is another candidate's, whose samples must not be judged.
    value = PersistentCacheValue(
        key="n1024",
        fastest_index=0,
        fastest_name="float4",
        results=(AutotuneOutcome("block256", 1, (3e-6, 3e-6, 3e-6)),),
    )
    found = Baseline.from_cache_entry(
        value, CHECKSUM, device={"id": GPU}, metadata={}, source=SOURCE
    )
    for strict in (False, True):
        verdict = judge(exact(T * 2), found, device_id=GPU, checksum=CHECKSUM, strict=strict)
        assert (verdict.verdict, verdict.failed, verdict.comparison) == (
            Verdict.NOT_COMPARABLE,
            False,
            None,
        )
    assert verdict.message == (
        f"the baseline in {SOURCE} is out of line with its candidates: the result at"
        " fastest_index 0 is 'block256', not the winner 'float4'; --autotune-update re-records it"
    )


def test_an_entry_whose_winner_index_holds_another_candidates_skip_names_the_mismatch() -> None:
    # fastest_index names an unreached candidate's slot while the winner's samples sit at
    # another index: the error said "the winner float4 has no samples", though it has.
    value = PersistentCacheValue(
        key="n1024",
        fastest_index=0,
        fastest_name="float4",
        results=(
            AutotuneError(AutotuneErrorKind.SKIP, "not reached", "block256"),
            AutotuneOutcome("float4", 1, (3e-6, 3e-6, 3e-6)),
        ),
    )
    with pytest.raises(BaselineError) as raised:
        Baseline.from_cache_entry(value, CHECKSUM, device={"id": GPU}, metadata={}, source=SOURCE)
    assert str(raised.value) == (
        f'{SOURCE}: key "n1024": out of line with its candidates:'
        " the result at fastest_index 0 is 'block256', not the winner 'float4'"
    )


# -- too noisy to judge (issue 9, item 6) -----------------------------------------------------


def test_an_interval_too_wide_to_catch_the_promised_slowdown_is_too_noisy_not_a_pass() -> None:
    verdict = gate(spread(T * 1.05, 0.06), baseline())
    assert verdict.verdict is Verdict.TOO_NOISY and not verdict.failed
    assert verdict.message.startswith("too noisy to judge: +5.0% [")
    assert "would catch 95 in 100 slowdowns only past" in verdict.message
    assert "what would help" in verdict.message


def test_a_single_sample_side_reads_as_no_interval_and_says_which_side() -> None:
    # A cache entry a program's tuning wrote can keep one sample of its winner; its error
    # is infinite, and the message read "+60.0% [-100.0%, +inf%]" and asked for more
    # sessions or a quieter runner, which would not help.
    single = Baseline(GPU, CHECKSUM, "float4", (T,), source=SOURCE)
    verdict = gate(exact(T * 1.6), single)
    assert verdict.verdict is Verdict.TOO_NOISY and not verdict.failed
    assert verdict.comparison is not None
    assert format_interval(verdict.comparison) == "+60.0% [no interval]"
    assert verdict.message.startswith("too noisy to judge: +60.0% [no interval]: median")
    assert (
        "; the baseline's winner is a single sample, whose error cannot be measured, so the"
        " change has no interval (tolerated 3.0%); what would help: a measurement of several"
        " samples on each side" in verdict.message
    )
    assert "inf%" not in verdict.message and "10x slowdown" not in verdict.message
    both = gate(Measurement((T * 1.6,)), single).message
    assert "this run's winner and the baseline's winner are single samples" in both
    # A condition of the run keeps its own advice beside the samples'.
    loaded = judge(
        Measurement((T * 1.6,) * 10, load=3.0),
        Baseline(CPU, CHECKSUM, "float4", (T,), source=SOURCE),
        device_id=CPU,
        checksum=CHECKSUM,
    ).message
    assert "what would help: a measurement of several samples on each side" in loaded
    assert "a runner with free CPUs" in loaded


def test_too_noisy_fails_only_in_strict_mode() -> None:
    assert gate(spread(T * 1.05, 0.06), baseline(), strict=True).failed


def test_a_precise_comparison_is_judged_not_called_noisy() -> None:
    assert gate(exact(T * 1.01), baseline()).verdict is Verdict.PASS


def test_a_clear_regression_fails_even_when_the_interval_is_wide() -> None:
    assert gate(spread(T * 2, 0.06), baseline()).verdict is Verdict.REGRESSION


def test_no_baseline_names_the_devices_that_have_one() -> None:
    verdict = gate(exact(T), None, baseline_devices=("cuda-nvidia-h100", "cuda-nvidia-a100"))
    assert verdict.verdict is Verdict.NO_BASELINE
    assert verdict.message == (
        f"no baseline for this key on {GPU}; --autotune-update records one; baselines of this"
        " test exist for cuda-nvidia-a100, cuda-nvidia-h100 (--autotune-runner names the one"
        " to use)"
    )


def test_no_baseline_offers_the_runner_option_only_for_a_device_of_this_kind() -> None:
    # --autotune-runner files a GPU's baselines under cuda-<runner>: a CPU's are not reachable.
    cpus = gate(exact(T), None, baseline_devices=("cpu-amd-epyc-4t", "cpu-intel-xeon-2t"))
    assert cpus.message == (
        f"no baseline for this key on {GPU}; --autotune-update records one; baselines of this"
        " test exist for cpu-amd-epyc-4t, cpu-intel-xeon-2t"
    )
    mixed = gate(exact(T), None, baseline_devices=("cpu-amd-epyc-4t", "cuda-nvidia-h100"))
    assert mixed.message.endswith(
        "exist for cpu-amd-epyc-4t, cuda-nvidia-h100"
        " (--autotune-runner names the one to use of cuda-nvidia-h100)"
    )


def test_no_baseline_does_not_name_this_device_for_another_key_of_its_file() -> None:
    verdict = gate(exact(T), None, baseline_devices=(GPU,))
    assert verdict.message == f"no baseline for this key on {GPU}; --autotune-update records one"


def test_a_runner_class_names_the_baselines_under_the_devices_kind() -> None:
    from pytest_autotune.gate import runner_device_id

    assert runner_device_id("cpu-intel-xeon-2t", None) == "cpu-intel-xeon-2t"
    assert runner_device_id("cpu-intel-xeon-2t", "github-x64") == "cpu-github-x64"
    assert runner_device_id("cuda-nvidia-h200", "h200-pool") == "cuda-h200-pool"
    assert runner_device_id("cpu-amd-epyc-4t", "cpu-hosted") == "cpu-hosted"


@pytest.mark.parametrize(
    ("before", "now", "said"),
    [
        (("a", "b"), ("a", "b", "c"), "added 'c'"),
        (("a", "b", "c"), ("a", "c"), "removed 'b'"),
        (("a", "b"), ("a", "z"), "added 'z'; removed 'b'"),
        (("a", "b"), ("b", "a"), "reordered: now 'b', 'a'"),
        ((), ("a",), None),
    ],
)
def test_a_changed_candidate_list_is_said_as_the_user_changed_it(
    before: tuple[str, ...], now: tuple[str, ...], said: str | None
) -> None:
    from pytest_autotune.gate.comparable import candidate_change

    assert candidate_change(before, now) == said


def test_an_interval_too_wide_to_catch_a_tenfold_slowdown_says_so_in_words() -> None:
    # "would catch 95 in 100 slowdowns only past +125254%" (a contended multithreaded
    # matmul, seen by a user) reads as a figure when it means nothing can be caught.
    verdict = gate(Measurement((T / 20,) * 5 + (T,) + (T * 20,) * 5), baseline())
    assert verdict.verdict is Verdict.TOO_NOISY
    assert "this comparison would not catch even a 10x slowdown 95 times in 100" in verdict.message
    assert "only past" not in verdict.message
