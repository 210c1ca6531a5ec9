"""Samples of one candidate: their statistics, the score, the JSON form, `tune_benchmark`."""

import json
import math
import statistics

import numpy as np
import pytest

from pytest_autotune.tune.benchmark import (
    AutotuneOutcome,
    SampleStats,
    result_from_json,
    result_to_json,
    score,
    tune_benchmark,
)
from pytest_autotune.tune.errors import AutotuneError, AutotuneErrorKind
from tests.fakes import FakeClient, candidate, failing


def ns(*values):
    """Durations given in nanoseconds, as the seconds the API takes."""
    return tuple(v / 1e9 for v in values)


def robust_score(samples_ns):
    mn = min(samples_ns)
    median = statistics.median(samples_ns)
    mad = 1.4826 * statistics.median(abs(s - median) for s in samples_ns)
    return (0.8 * mn + 0.2 * median) * (1 + mad / (1 + median))


def seed_score(samples_ns):
    """The seed's score, whose spread term `std/(1+mean)` one outlier moves."""
    mn = min(samples_ns)
    median = statistics.median(samples_ns)
    mean = sum(samples_ns) / len(samples_ns)
    std = statistics.pstdev(samples_ns)
    return (0.8 * mn + 0.2 * median) * (1 + std / (1 + mean))


# -- score ----------------------------------------------------------------------------------


def test_the_score_is_the_seeds_formula_with_a_robust_spread_in_nanoseconds():
    # min 1000, median 2000; deviations from it 1000, 0, 1000, so a MAD of 1000.
    expected = (0.8 * 1000 + 0.2 * 2000) * (1 + 1.4826 * 1000 / (1 + 2000))
    assert score(ns(1000, 2000, 3000)) == pytest.approx(expected, rel=1e-12)
    assert score(ns(1000, 2000, 3000)) == pytest.approx(2089.1154, rel=1e-7)


@pytest.mark.parametrize(
    "samples_ns",
    [(100, 120, 110, 400), (5,), (7, 7, 7), (1_000_000, 1_250_000), (3, 1, 4, 1, 5, 9, 2, 6)],
)
def test_the_score_weights_the_best_run_over_the_median_and_penalises_spread(samples_ns):
    assert score(ns(*samples_ns)) == pytest.approx(robust_score(samples_ns), rel=1e-12)


def test_the_score_of_steady_samples_is_their_time_in_nanoseconds():
    assert score(ns(2500, 2500, 2500)) == pytest.approx(2500, rel=1e-12)


def test_the_spread_term_is_scale_aware_because_it_is_computed_in_nanoseconds():
    # In seconds, `1 + median` would swamp the spread and two spreads would tie.
    steady = score(ns(2000, 2000, 2000))
    shaky = score(ns(1000, 2000, 3000))
    assert shaky / steady == pytest.approx(1200 * (1 + 1482.6 / 2001) / 2000, rel=1e-12)
    assert shaky / steady > 1.0


def us(*values):
    """Durations given in microseconds, as whole nanoseconds."""
    return tuple(round(v * 1000) for v in values)


@pytest.mark.parametrize(
    ("fast_ns", "slow_ns"),
    [
        # Three samples of a 200 us busy wait, one preempted for 40 us, against 210 us.
        (us(200, 200.5, 240), us(210, 210, 210.5)),
        # Ten, one preempted for 1.9 ms, against 220.5 us (measured by benchmarks/decision.py).
        (
            us(200.3, 2104.1, 202.3, 201.0, 201.1, 200.6, 201.0, 201.0, 201.1, 200.7),
            us(222.6, 221.2, 221.0, 221.1, 221.5, 221.5, 221.2, 220.8, 221.2, 221.2),
        ),
    ],
)
def test_a_single_preempted_sample_does_not_outweigh_a_five_percent_lead(fast_ns, slow_ns):
    assert score(ns(*fast_ns)) < score(ns(*slow_ns))
    # The seed's `std/(1+mean)` read the one outlier as instability and chose the slower.
    assert seed_score(fast_ns) > seed_score(slow_ns)


def test_the_spread_term_ignores_one_outlier_among_three_in_either_direction():
    assert SampleStats.of(ns(2000, 2000, 2700)).mad == 0
    assert SampleStats.of(ns(500, 2000, 2000)).mad == 0


def test_a_consistently_unstable_candidate_loses_to_a_steady_one_with_a_worse_best_run():
    unstable = ns(1000, 1500, 2000, 2500, 3000)
    steady = ns(1300, 1300, 1300, 1300, 1300)
    # Its best run and median alone would win (0.8 * 1000 + 0.2 * 2000 = 1200); the spread
    # of its runs, 741 ns, costs it 37%.
    assert 0.8 * 1000 + 0.2 * 2000 < 1300
    assert score(steady) < score(unstable)


def test_one_lucky_sample_does_not_outweigh_a_median_twice_as_slow():
    # The spread term ignores a lone outlier either way, so the median's fifth of the weight
    # is the guard: it holds while 0.8 * lucky + 0.2 * median stays above the rival.
    lucky = ns(800, 2000, 2000, 2000, 2000)
    steady = ns(1000, 1000, 1000, 1000, 1000)
    assert score(steady) < score(lucky)


def test_the_score_of_no_samples_is_an_error():
    with pytest.raises(ValueError, match="no samples"):
        score(())


# -- SampleStats ----------------------------------------------------------------------------


def test_sample_stats_are_order_statistics_and_the_population_and_robust_spreads():
    stats = SampleStats.of([4.0, 1.0, 3.0, 2.0])
    assert stats.count == 4
    assert stats.min == 1.0
    assert stats.median == 2.5
    assert stats.mean == 2.5
    assert stats.std == pytest.approx(math.sqrt(1.25), rel=1e-15)
    # Deviations from the median 1.5, 1.5, 0.5, 0.5: their median is 1.
    assert stats.mad == 1.4826
    assert stats.median_rse == pytest.approx(1.2533 * math.sqrt(1.25) / 2 / 2.5, rel=1e-15)


def test_from_ten_samples_the_medians_error_comes_from_the_order_statistics_around_it():
    # n = 20: ranks 10 -/+ 4.38 give the sorted samples 5 and 14 (0-based), 9 apart.
    samples = [float(v) for v in range(1, 21)]
    stats = SampleStats.of(samples)
    assert stats.median_rse == pytest.approx((15.0 - 6.0) / (2 * 1.959963984540054) / 10.5)


def test_a_few_preempted_samples_do_not_widen_the_error_of_the_median():
    # Twenty samples of 1 ms +- 1%, two of them preempted to 30 ms: the median barely moves
    # and its error stays about 0.4%, where the standard deviation's read over 100%.
    steady = [1e-3 * (1 + 0.01 * ((i * 7) % 11 - 5) / 5) for i in range(18)]
    stats = SampleStats.of([*steady, 30e-3, 31e-3])
    assert stats.median_rse < 0.01
    assert 1.2533 * stats.std / math.sqrt(stats.count) / stats.median > 1.0


def test_below_ten_samples_the_medians_error_comes_from_the_standard_deviation():
    samples = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0]
    stats = SampleStats.of(samples)
    assert stats.median_rse == pytest.approx(1.2533 * stats.std / 3 / 5.0, rel=1e-12)


def test_the_median_of_an_odd_count_is_the_middle_sample():
    assert SampleStats.of([9.0, 1.0, 5.0]).median == 5.0


def test_one_sample_has_no_spread_and_an_unknown_error():
    stats = SampleStats.of([3e-6])
    assert (stats.count, stats.min, stats.median, stats.mean, stats.std) == (1, 3e-6, 3e-6, 3e-6, 0)
    assert stats.mad == 0
    assert stats.median_rse == math.inf


def test_equal_samples_have_no_spread_and_no_error():
    stats = SampleStats.of([2e-6] * 5)
    assert stats.std == 0
    assert stats.mad == 0
    assert stats.median_rse == 0


def test_two_samples_have_no_robust_spread_only_a_rescaled_std():
    # The median of two is their mean and both deviate from it alike: one outlier moves
    # every statistic, which is why min_samples counts three after the dropped first one.
    stats = SampleStats.of([1.0, 3.0])
    assert stats.mad == pytest.approx(1.4826 * stats.std, rel=1e-15)


def test_stats_of_no_samples_are_an_error():
    with pytest.raises(ValueError, match="no samples"):
        SampleStats.of([])


# -- AutotuneOutcome ------------------------------------------------------------------------


def test_an_outcome_keeps_every_sample_and_judges_on_the_effective_ones():
    outcome = AutotuneOutcome("warm", 2, ns(9000, 1000, 1200, 1100), dropped_first=True)
    assert outcome.samples == ns(9000, 1000, 1200, 1100)
    assert outcome.effective_samples == ns(1000, 1200, 1100)
    assert outcome.best == 1000 / 1e9
    assert outcome.median == 1100 / 1e9
    assert outcome.stats.count == 3
    assert outcome.score == score(ns(1000, 1200, 1100))


def test_an_outcome_that_keeps_its_first_sample_judges_on_all_of_them():
    outcome = AutotuneOutcome("cold", 0, ns(900, 1000, 1200))
    assert outcome.effective_samples == outcome.samples
    assert outcome.best == 900 / 1e9


def test_an_outcome_needs_samples_and_says_whose_are_missing():
    with pytest.raises(ValueError, match=r"^AutotuneOutcome 'none' \[#0\]: no samples$"):
        AutotuneOutcome("none", 0, ())
    with pytest.raises(ValueError, match=r"'one' \[#3\]: no samples once the first is dropped"):
        AutotuneOutcome("one", 3, (1e-3,), dropped_first=True)


def test_an_outcome_is_written_in_integer_nanoseconds():
    outcome = AutotuneOutcome("a", 1, (1.5e-6, 2.25e-3, 1.0), dropped_first=True)
    assert result_to_json(outcome, 1) == {
        "name": "a",
        "index": 1,
        "samples_ns": [1500, 2_250_000, 1_000_000_000],
        "dropped_first": True,
    }


@pytest.mark.parametrize("dropped_first", [False, True])
def test_an_outcome_survives_a_json_round_trip(dropped_first):
    outcome = AutotuneOutcome("tiled", 3, ns(1234, 1200, 1300, 999_999_999), dropped_first)
    text = json.dumps(result_to_json(outcome, 3))
    back = result_from_json(json.loads(text))
    assert back == outcome
    assert back.samples == outcome.samples
    assert back.dropped_first is dropped_first
    assert back.score == outcome.score


def test_an_outcome_scored_by_its_median_says_so_in_json_and_reads_back_the_same():
    outcome = AutotuneOutcome("warp", 0, ns(9000, 12_000, 8300, 10_500, 10_200), True, "median")
    # The median of the effective samples, in nanoseconds as the seed's score is.
    assert outcome.score == pytest.approx(10_350)
    assert AutotuneOutcome("warp", 0, outcome.samples, True).score < outcome.score
    data = result_to_json(outcome, 0)
    assert data["statistic"] == "median"
    back = result_from_json(json.loads(json.dumps(data)))
    assert back == outcome and back.score == outcome.score
    # The seed's score is the default and is not written: files stay as they were.
    assert "statistic" not in result_to_json(AutotuneOutcome("a", 0, ns(1, 2)), 0)


def test_an_outcome_with_an_unknown_statistic_is_refused_naming_the_known_ones():
    with pytest.raises(ValueError, match="statistic is 'mean', expected one of score, median"):
        AutotuneOutcome("a", 0, ns(1, 2), statistic="mean")
    with pytest.raises(ValueError, match="statistic is 'mean'"):
        result_from_json({"name": "a", "index": 0, "samples_ns": [1, 2], "statistic": "mean"})


def test_an_outcome_read_from_json_rounds_sub_nanosecond_times_to_the_nanosecond():
    outcome = AutotuneOutcome("a", 0, (1.4e-9, 2.6e-9))
    assert result_from_json(result_to_json(outcome, 0)).samples == ns(1, 3)


def test_an_old_outcome_without_dropped_first_keeps_its_first_sample():
    back = result_from_json({"name": "a", "index": 0, "samples_ns": [5, 6, 7]})
    assert isinstance(back, AutotuneOutcome)
    assert back.dropped_first is False


@pytest.mark.parametrize(
    "error",
    [
        AutotuneError(AutotuneErrorKind.UNKNOWN, "RuntimeError: boom", "naive"),
        AutotuneError(AutotuneErrorKind.SKIP, "declined the key", "naive"),
        AutotuneError(AutotuneErrorKind.INVALID_SAMPLES, "timer returned 0.0 s", "naive"),
        AutotuneError(AutotuneErrorKind.NO_VALID_KERNEL_FOUND, "", "naive"),
    ],
)
def test_a_failed_result_survives_a_json_round_trip_with_its_kind_message_and_name(error):
    data = result_to_json(error, 4)
    assert data == {
        "name": "naive",
        "index": 4,
        "error": {"kind": error.kind.value, "message": error.message},
    }
    back = result_from_json(json.loads(json.dumps(data)))
    assert isinstance(back, AutotuneError)
    assert back == error
    assert (back.kind, back.message, back.name) == (error.kind, error.message, "naive")


# -- tune_benchmark -------------------------------------------------------------------------


def test_tune_benchmark_returns_one_time_per_sample_in_seconds():
    client = FakeClient()
    fn = candidate(client.clock, [1e-3, 2e-3, 3e-3], "steps")
    assert tune_benchmark(client, fn, (), samples=3) == pytest.approx((1e-3, 2e-3, 3e-3), abs=0)


def test_tune_benchmark_runs_the_warmups_first_and_drops_their_times():
    client = FakeClient()
    fn = candidate(client.clock, [5e-3, 5e-3, 1e-3], "cold")
    assert tune_benchmark(client, fn, (), samples=2, warmups=2) == (1e-3, 1e-3)
    assert fn.calls == 4


def test_tune_benchmark_calls_the_candidate_with_the_inputs_unpacked():
    client = FakeClient()
    seen = []

    def add(a, b):
        seen.append((a, b))
        client.clock.advance(1e-6)

    tune_benchmark(client, add, (1, 2), samples=2)
    assert seen == [(1, 2), (1, 2)]


def test_tune_benchmark_given_a_bare_input_says_to_pass_a_tuple():
    # `tune_benchmark(client, np.sum, x, 3)` called np.sum with x's elements as arguments:
    # "sum() takes from 1 to 7 positional arguments but 10 were given".
    client = FakeClient()
    fn = candidate(client.clock, 1e-3, "sum")
    with pytest.raises(TypeError, match=r"got ndarray; pass \(x,\) for one input"):
        tune_benchmark(client, fn, np.ones(10), samples=3)  # type: ignore[arg-type]
    assert fn.calls == 0


def test_tune_benchmark_of_no_samples_runs_only_the_warmups():
    client = FakeClient()
    fn = candidate(client.clock, 1e-3, "w")
    assert tune_benchmark(client, fn, (), samples=0, warmups=3) == ()
    assert fn.calls == 3


def test_a_time_that_is_not_positive_is_an_invalid_samples_error_naming_the_candidate():
    client = FakeClient()
    instant = candidate(client.clock, 0.0, "instant")
    with pytest.raises(AutotuneError) as error:
        tune_benchmark(client, instant, (), samples=1)
    assert error.value.kind is AutotuneErrorKind.INVALID_SAMPLES
    assert error.value.name == "instant"
    assert str(error.value) == "instant: invalid_samples: timer returned 0.0 s"


def test_a_candidate_that_raises_raises_out_of_tune_benchmark():
    with pytest.raises(RuntimeError, match="boom exploded"):
        tune_benchmark(FakeClient(), failing("boom"), (), samples=1)


@pytest.mark.parametrize(
    "counts", [{"samples": -1}, {"samples": 2.5}, {"samples": 3, "warmups": -2}]
)
def test_tune_benchmark_refuses_a_negative_or_fractional_count(counts):
    # samples=-1 returned () as if none were asked for.
    client = FakeClient()
    fn = candidate(client.clock, 1e-3, "w")
    name = "warmups" if "warmups" in counts else "samples"
    with pytest.raises(ValueError, match=f"tune_benchmark: {name} must be a whole number >= 0"):
        tune_benchmark(client, fn, (), **counts)
    assert fn.calls == 0


def test_a_client_whose_timer_returns_no_number_is_said_so():
    # math.isfinite(None) raised TypeError, read as the candidate's own error.
    class NoTime(FakeClient):
        def time(self, fn, inputs):
            fn(*inputs)

    with pytest.raises(AutotuneError, match="the client's timer returned None, not a number"):
        tune_benchmark(NoTime(), lambda: None, (), samples=1)


def test_a_timer_returning_a_numpy_scalar_is_a_number():
    class Float32Time(FakeClient):
        def time(self, fn, inputs):
            fn(*inputs)
            return np.float32(2e-3)

    assert tune_benchmark(Float32Time(), lambda: None, (), samples=2) == pytest.approx((2e-3, 2e-3))


def test_a_score_of_anything_but_times_is_refused_by_name() -> None:
    with pytest.raises(ValueError, match=r"score: samples must be seconds >= 0, got -1\.0"):
        score([-1.0, 2.0])
    with pytest.raises(ValueError, match="score: samples must be seconds >= 0, got 'x'"):
        score([1.0, "x"])  # type: ignore[list-item]
    with pytest.raises(TypeError, match="score: samples must be a list of times in seconds"):
        score(None)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="score: no samples"):
        score([])
    # Any iterable of times: a NumPy array, a generator.
    assert score(np.array([1e-3, 2e-3])) == score(s for s in (1e-3, 2e-3)) == score([1e-3, 2e-3])
