"""Sampling a batch: the fixed pass and the adaptive round robin, under exact fake times."""

import math

import pytest

from pytest_autotune.tune import batch, schedule
from pytest_autotune.tune.benchmark import AutotuneOutcome
from pytest_autotune.tune.config import BenchConfig
from pytest_autotune.tune.errors import AutotuneError, AutotuneErrorKind
from pytest_autotune.tune.log import (
    AutotuneLogContext,
    AutotuneLogLevel,
    CandidateSampled,
    Preferred,
)
from pytest_autotune.tune.schedule import LongCalls, adaptive_round_robin, fixed_pass
from tests.fakes import Script

NAMES = ["a", "b", "c", "d"]
ADAPTIVE = BenchConfig()


def test_the_fixed_pass_warms_up_three_times_then_takes_max_samples_each():
    script = Script(2e-3, 1e-3)
    result = fixed_pass([0, 1], NAMES, script, BenchConfig(adaptive=False, max_samples=10))
    assert script.calls == [13, 13]
    assert result.winner == 1
    assert len(result.results[0].samples) == 10


def test_the_fixed_pass_keeps_its_first_sample():
    # Its three warm-ups absorb the ramp, so the first sample, here the fastest, counts.
    script = Script([9e-3, 9e-3, 9e-3, 0.9e-3, 1e-3], 2e-3)
    result = fixed_pass([0, 1], NAMES, script, BenchConfig(adaptive=False, max_samples=4))
    outcome = result.results[0]
    assert isinstance(outcome, AutotuneOutcome)
    assert not outcome.dropped_first
    assert outcome.effective_samples == (0.9e-3, 1e-3, 1e-3, 1e-3)
    assert outcome.best == 0.9e-3


def test_the_adaptive_round_robin_starts_with_one_warm_up_and_one_sample_each():
    script = Script(1e-3, 1e-3, 1e-3)
    result = adaptive_round_robin([0, 1, 2], NAMES, script, ADAPTIVE)
    # Constant times stall on the second sample, the third drops the first (no stall), and
    # two more stalls converge them: one warm-up + five samples each.
    assert script.calls == [6, 6, 6]
    assert all(len(r.samples) == 5 for r in result.results.values())


def test_the_push_that_drops_the_biased_first_sample_is_not_a_stall():
    # Seed parity: a candidate converges after five samples at least, not four.
    ctx = AutotuneLogContext()
    adaptive_round_robin([0, 1], NAMES, Script(1e-3, 1.2e-3), ADAPTIVE, ctx=ctx)
    converged = [e.samples for e in ctx.events if type(e).__name__ == "Converged"]
    assert converged == [5, 5]


@pytest.mark.parametrize(("min_samples", "effective"), [(2, 4), (3, 4), (5, 5)])
def test_an_adaptive_decision_rests_on_at_least_min_samples_after_the_dropped_first(
    min_samples, effective
):
    script = Script(1e-3, 1.2e-3)
    result = adaptive_round_robin([0, 1], NAMES, script, BenchConfig(min_samples=min_samples))
    for outcome in result.results.values():
        assert outcome.dropped_first
        assert len(outcome.effective_samples) == effective


def test_a_single_preempted_sample_does_not_outweigh_a_five_percent_lead():
    # A 200 us busy wait preempted once for 23 us, against a steady 210 us rival; its first
    # three samples as benchmarks/decision.py measured them. It needs both rules: judged on
    # the two samples after the dropped one it scores 214.0 us under the seed's spread term
    # (219 us under the robust one), and on three under the seed's, 211.0 us.
    fast = [200.5e-6, 200.5e-6, 223.5e-6, 200.9e-6, 200.7e-6]
    script = Script(fast, 210e-6)
    result = adaptive_round_robin([0, 1], NAMES, script, ADAPTIVE)
    assert result.results[0].effective_samples == (223.5e-6, 200.9e-6, 200.7e-6, 200.7e-6)
    assert result.winner == 0


def test_a_candidate_that_keeps_improving_is_sampled_up_to_max_samples():
    improving = [1e-3 * 0.9**i for i in range(20)]
    script = Script(improving, 5e-4)
    result = adaptive_round_robin([0, 1], NAMES, script, BenchConfig(max_samples=10))
    assert len(result.results[0].samples) == 10


def test_converged_candidates_keep_being_sampled_until_all_have_converged():
    # "b" converges at five samples, but "a" keeps improving: the seed samples both, so
    # the rivals are compared over the same phase of the machine.
    improving = [1e-3 * 0.9**i for i in range(20)]
    ctx = AutotuneLogContext()
    script = Script(improving, 5e-4)
    result = adaptive_round_robin([0, 1], NAMES, script, BenchConfig(max_samples=10), ctx=ctx)
    assert [(e.name, e.samples) for e in ctx.events if type(e).__name__ == "Converged"] == [
        ("b", 5)
    ]
    assert len(result.results[1].samples) == 10


def test_a_real_improvement_resets_convergence():
    # "a" converges at five samples, then its sixth is twice as fast: it is no longer
    # converged, samples on, and converges again on two stalls of the new best.
    a = [1e-3] * 6 + [0.5e-3]
    b = [2e-3 * 0.9**i for i in range(12)]
    ctx = AutotuneLogContext()
    result = adaptive_round_robin([0, 1], NAMES, Script(a, b), BenchConfig(max_samples=10), ctx=ctx)
    assert [e.samples for e in ctx.events if type(e).__name__ == "Converged" and e.index == 0] == [
        5,
        8,
    ]
    assert result.results[0].best == 0.5e-3


def test_the_winner_is_the_best_scoring_survivor():
    script = Script(3e-3, 1e-3, 2e-3)
    assert adaptive_round_robin([0, 1, 2], NAMES, script, ADAPTIVE).winner == 1


def test_a_noisy_candidate_is_judged_on_its_best_run():
    # "a" has one slow outlier among fast runs; "b" is steady but slower than a's best.
    a = [1.0e-3, 1.0e-3, 1.6e-3, 1.0e-3, 1.0e-3, 1.0e-3]
    script = Script(a, 1.3e-3)
    assert fixed_pass([0, 1], NAMES, script, BenchConfig(adaptive=False, max_samples=6)).winner == 0


def test_the_first_warm_up_biased_sample_is_dropped_once_three_exist():
    # The warm-up takes 9 ms, the first sample after it still 5 ms, then 1 ms steadily.
    script = Script([9e-3, 5e-3, 1e-3, 1e-3], 2e-3)
    result = adaptive_round_robin([0, 1], NAMES, script, ADAPTIVE)
    outcome = result.results[0]
    assert isinstance(outcome, AutotuneOutcome)
    assert outcome.samples[0] == 5e-3
    assert outcome.dropped_first
    assert set(outcome.effective_samples) == {1e-3}
    assert outcome.stats.median == 1e-3


def test_a_slow_candidate_is_eliminated_after_min_samples():
    script = Script(1e-3, 1.1e-3, 1e-2)
    ctx = AutotuneLogContext()
    result = adaptive_round_robin([0, 1, 2], NAMES, script, ADAPTIVE, ctx=ctx)
    # Ten times slower is not yet hopeless (that takes more than ten): eliminated at the
    # end of the round that gave it min_samples (3) raw samples.
    assert len(result.results[2].samples) == 3
    assert result.winner == 0
    assert any(type(e).__name__ == "Eliminated" and e.index == 2 for e in ctx.events)


def test_never_drops_below_the_survivor_floor():
    script = Script(1e-3, 1e-2, 2e-2)
    ctx = AutotuneLogContext()
    adaptive_round_robin([0, 1, 2], NAMES, script, BenchConfig(max_samples=6), ctx=ctx)
    eliminated = [e.index for e in ctx.events if type(e).__name__ == "Eliminated"]
    # Both are far slower than the leader, but only the slowest goes: two must remain.
    assert eliminated == [2]


def test_a_speed_factor_of_one_keeps_only_the_leader_and_one_rival():
    # As the seed allows: anything slower than the leader goes at min_samples, but the
    # survivor floor keeps the nearest rival on; a tie with the leader is not slower.
    script = Script(1e-3, 1.01e-3, 1.02e-3, 1e-3)
    ctx = AutotuneLogContext()
    result = adaptive_round_robin(
        [0, 1, 2, 3], NAMES, script, BenchConfig(speed_factor=1.0), ctx=ctx
    )
    eliminated = sorted(e.index for e in ctx.events if type(e).__name__ == "Eliminated")
    assert eliminated == [1, 2]
    assert result.winner in (0, 3)


def test_elimination_opens_at_min_samples_raw_samples_so_it_saves_samples():
    # Seed parity: "c" goes once it has three raw samples, while the survivors take the
    # five they need to converge; eliminated with them, it would have saved nothing.
    script = Script(1e-3, 1.1e-3, 2e-3)
    result = adaptive_round_robin([0, 1, 2], NAMES, script, ADAPTIVE)
    assert [len(result.results[i].samples) for i in range(3)] == [5, 5, 3]


def test_a_hopeless_candidate_takes_no_sample_after_its_first():
    # A 17 ms candidate against a 43 us leader (the histogram family of issue 14): its
    # warm-up and first sample are both far beyond any noise, so it stops there.
    ctx = AutotuneLogContext()
    script = Script(43e-6, 17e-3, 50e-6)
    result = adaptive_round_robin([0, 1, 2], NAMES, script, ADAPTIVE, ctx=ctx)
    assert script.calls[1] == 2
    assert result.winner == 0
    (event,) = [e for e in ctx.events if type(e).__name__ == "Eliminated"]
    assert event.index == 1
    assert event.reason.startswith("hopeless")


def test_why_a_candidate_was_cut_gives_its_times_in_the_units_the_report_shows():
    # The report's tuning log read "over 10 x leader 4.300e-05 s (first 1.700e-02 s)"
    # beside the candidate table's 43.0 us and 17.0 ms.
    cut = AutotuneLogContext()
    adaptive_round_robin([0, 1, 2], NAMES, Script(43e-6, 17e-3, 50e-6), ADAPTIVE, ctx=cut)
    warm = AutotuneLogContext()
    script = Script(43e-6, 17e-3, 50e-6)
    adaptive_round_robin([0, 1, 2], NAMES, script, ADAPTIVE, ctx=warm, warm_up_judges=True)
    slow = AutotuneLogContext()
    adaptive_round_robin([0, 1, 2], NAMES, Script(1e-3, 1.1e-3, 2e-3), ADAPTIVE, ctx=slow)
    reasons = [
        e.reason
        for ctx in (cut, warm, slow)
        for e in ctx.events
        if type(e).__name__ == "Eliminated"
    ]
    assert reasons == [
        "hopeless: warm-up and first sample over 10 x leader 43.0 us (first 17.0 ms)",
        "hopeless: warm warm-up 17.0 ms over 10 x leader 43.0 us",
        "best 2.00 ms > 1.5 x leader 1.00 ms",
    ]


def test_a_slow_warm_up_alone_does_not_make_a_candidate_hopeless():
    # A first call that compiles (17 ms) then runs at 40 us: the warm-up is not evidence.
    script = Script(43e-6, [17e-3, 40e-6])
    assert adaptive_round_robin([0, 1], NAMES, script, ADAPTIVE).winner == 1


def test_a_client_whose_warm_up_is_warm_drops_a_hopeless_candidate_after_that_one_call():
    # On a client that warms a call itself before timing it (a CUDA graph capture), the
    # 17 ms warm-up is evidence: one timed call, kept as the candidate's one sample.
    ctx = AutotuneLogContext()
    script = Script(43e-6, 17e-3, 50e-6)
    result = adaptive_round_robin([0, 1, 2], NAMES, script, ADAPTIVE, ctx=ctx, warm_up_judges=True)
    assert script.calls[1] == 1
    assert result.winner == 0
    outcome = result.results[1]
    assert isinstance(outcome, AutotuneOutcome) and outcome.samples == (17e-3,)
    (event,) = [e for e in ctx.events if type(e).__name__ == "Eliminated"]
    assert event.index == 1 and event.reason.startswith("hopeless: warm warm-up")


def test_a_warm_warm_up_judges_only_against_a_candidate_already_sampled():
    # The first candidate has no leader to be judged against; the fast one after it does
    # not make the slow first one hopeless until the first pass is over.
    script = Script(17e-3, 43e-6, 50e-6)
    result = adaptive_round_robin([0, 1, 2], NAMES, script, ADAPTIVE, warm_up_judges=True)
    assert script.calls[0] == 2
    assert result.winner == 1


def test_a_long_warm_up_is_the_first_sample_so_a_hopeless_first_candidate_costs_one_call():
    # The 0.47 s sum candidate comes first, with no leader to judge it: its warm-up, a call
    # the client timed in full, is its sample, and the fast ones after it cut it.
    ctx = AutotuneLogContext()
    script = Script(0.47, 0.25e-3, 0.32e-3)
    result = adaptive_round_robin(
        [0, 1, 2], NAMES, script, ADAPTIVE, ctx=ctx, warm_up_judges=True, long_calls=LongCalls(2e-3)
    )
    assert script.calls[0] == 1
    assert result.results[0].samples == (0.47,)
    assert result.winner == 1
    (event,) = [e for e in ctx.events if type(e).__name__ == "Eliminated"]
    assert event.index == 0 and event.reason.startswith("hopeless")


def test_a_long_candidate_kept_on_is_never_called_for_a_sample_it_does_not_keep():
    # Three long candidates close to each other: every call of each is one of its samples.
    script = Script(5.8e-3, 5.5e-3, 7e-3)
    result = adaptive_round_robin(
        [0, 1, 2], NAMES, script, ADAPTIVE, warm_up_judges=True, long_calls=LongCalls(2e-3)
    )
    assert result.winner == 1
    assert [len(result.results[i].samples) for i in range(3)] == script.calls
    assert min(script.calls) >= 5  # within speed_factor: sampled to convergence


def test_a_long_call_is_judged_by_speed_factor_on_its_second_sample():
    # matmul on an H200: cuBLAS 2.5 ms, reg4x4 2.15 times it. Two warm figures are enough
    # to hold it as the rival: two calls, where waiting for min_samples took three.
    ctx = AutotuneLogContext()
    script = Script(2.5e-3, 5.4e-3)
    result = adaptive_round_robin(
        [0, 1], NAMES, script, ADAPTIVE, ctx=ctx, warm_up_judges=True, long_calls=LongCalls(2e-3)
    )
    assert script.calls[1] == 2
    assert result.results[1].samples == (5.4e-3, 5.4e-3)
    assert result.winner == 0
    held = [e for e in ctx.events if type(e).__name__ == "Held"]
    assert [(e.name, e.samples) for e in held] == [("b", 2)]
    # A third long one as far behind is eliminated outright; the floor holds the closer.
    script = Script(2.5e-3, 5.4e-3, 8e-3)
    result = adaptive_round_robin(
        [0, 1, 2], NAMES, script, ADAPTIVE, warm_up_judges=True, long_calls=LongCalls(2e-3)
    )
    assert script.calls[1:] == [2, 2]
    assert result.winner == 0


def test_one_slow_long_figure_does_not_hold_a_candidate_that_is_faster():
    # A long figure may be a host-bound call's caller timing, whose first read a stall
    # inflated: "b" reads 3.5 ms once (over 1.5 x the leader's 2.2 ms), then 2.0 ms.
    script = Script(2.2e-3, [3.5e-3, 2.0e-3])
    result = adaptive_round_robin(
        [0, 1], NAMES, script, ADAPTIVE, warm_up_judges=True, long_calls=LongCalls(2e-3)
    )
    assert result.winner == 1


def test_a_short_call_still_waits_for_min_samples_before_elimination():
    # 3x the leader but 300 us: a figure that may carry a host's stall, judged at three.
    for long_calls in (LongCalls(2e-3), None):
        script = Script(100e-6, 300e-6)
        adaptive_round_robin(
            [0, 1], NAMES, script, ADAPTIVE, warm_up_judges=True, long_calls=long_calls
        )
        assert script.calls[1] == 4, long_calls


def test_a_long_call_within_speed_factor_is_not_held_on_its_first_sample():
    script = Script(2.5e-3, 3.5e-3)  # 1.4x
    ctx = AutotuneLogContext()
    adaptive_round_robin(
        [0, 1], NAMES, script, ADAPTIVE, ctx=ctx, warm_up_judges=True, long_calls=LongCalls(2e-3)
    )
    assert not [e for e in ctx.events if type(e).__name__ == "Held"]
    assert script.calls[1] >= 5


def test_the_hopeless_factor_set_is_the_margin_of_the_cut():
    # matmul's naive candidate, 9.4x cuBLAS: under the default 10 it is only outclassed,
    # so the floor of two holds it as the rival; under 4 it is hopeless, floor or not.
    for factor, event, calls in ((None, "Held", 2), (4.0, "Eliminated", 1)):
        script = Script(2.7e-3, 25.5e-3)
        ctx = AutotuneLogContext()
        config = BenchConfig(hopeless_factor=factor)
        adaptive_round_robin(
            [0, 1], NAMES, script, config, ctx=ctx, warm_up_judges=True, long_calls=LongCalls(2e-3)
        )
        assert script.calls[1] == calls, factor
        (judged,) = [e for e in ctx.events if type(e).__name__ in ("Held", "Eliminated")]
        assert type(judged).__name__ == event, factor


def test_a_clients_margin_for_long_calls_judges_long_figures_only():
    # The client's margin of 4 cuts a 25.5 ms candidate against 2.7 ms; a 600 us one
    # against 100 us, as far behind but short, keeps the config's 10 and is sampled on.
    long_calls = LongCalls(2e-3, hopeless_factor=4.0)
    for times, calls in (((2.7e-3, 2.9e-3, 25.5e-3), 1), ((100e-6, 105e-6, 600e-6), 4)):
        script = Script(*times)
        adaptive_round_robin(
            [0, 1, 2], NAMES, script, ADAPTIVE, warm_up_judges=True, long_calls=long_calls
        )
        assert script.calls[2] == calls, times


def test_a_warm_up_shorter_than_a_long_call_is_followed_by_a_first_sample():
    script = Script(1e-3, 0.25e-3, 0.3e-3)
    result = adaptive_round_robin(
        [0, 1, 2], NAMES, script, ADAPTIVE, warm_up_judges=True, long_calls=LongCalls(2e-3)
    )
    assert script.calls == [len(result.results[i].samples) + 1 for i in range(3)]


def test_a_warm_up_within_the_margin_is_sampled_on_as_usual():
    script = Script(43e-6, 300e-6, 50e-6)
    adaptive_round_robin([0, 1, 2], NAMES, script, ADAPTIVE, warm_up_judges=True)
    assert script.calls[1] >= 2


def test_one_preempted_first_sample_does_not_make_a_candidate_hopeless():
    script = Script(43e-6, [40e-6, 17e-3, 40e-6])
    assert adaptive_round_robin([0, 1], NAMES, script, ADAPTIVE).winner == 1


def test_two_candidates_are_never_eliminated():
    script = Script(1e-3, 5e-3)
    ctx = AutotuneLogContext()
    adaptive_round_robin([0, 1], NAMES, script, ADAPTIVE, ctx=ctx)
    assert not [e for e in ctx.events if type(e).__name__ == "Eliminated"]


def test_an_outclassed_rival_the_floor_keeps_is_held_at_min_samples():
    # "b" is five times slower: elimination would drop it but for the floor of two, so it
    # stays the winner's rival with its three samples and takes no more, while "a" samples
    # on to convergence.
    script = Script(1e-3, 5e-3)
    ctx = AutotuneLogContext()
    result = adaptive_round_robin([0, 1], NAMES, script, ADAPTIVE, ctx=ctx)
    assert script.calls == [6, 4]
    assert [len(result.results[i].samples) for i in range(2)] == [5, 3]
    assert isinstance(result.results[1], AutotuneOutcome)
    assert result.winner == 0
    held = [e for e in ctx.events if type(e).__name__ == "Held"]
    assert [(e.name, e.samples) for e in held] == [("b", 3)]
    assert "best 5.00 ms > 1.5 x leader 1.00 ms" in str(held[0])


def test_the_floor_holds_the_closer_of_two_outclassed_candidates():
    # Five and eight times slower: outclassed, yet not hopeless (that takes ten).
    script = Script(1e-3, 5e-3, 8e-3)
    ctx = AutotuneLogContext()
    result = adaptive_round_robin([0, 1, 2], NAMES, script, ADAPTIVE, ctx=ctx)
    kinds = [(type(e).__name__, e.index) for e in ctx.events if type(e).__name__ != "Converged"]
    assert kinds == [("Eliminated", 2), ("Held", 1)]
    assert [len(result.results[i].samples) for i in range(3)] == [5, 3, 3]


def test_a_rival_within_speed_factor_is_sampled_to_convergence():
    script = Script(1e-3, 1.4e-3)
    ctx = AutotuneLogContext()
    result = adaptive_round_robin([0, 1], NAMES, script, ADAPTIVE, ctx=ctx)
    assert [len(result.results[i].samples) for i in range(2)] == [5, 5]
    assert not [e for e in ctx.events if type(e).__name__ == "Held"]


def test_a_candidate_that_fails_once_is_disqualified_even_if_other_samples_were_good():
    script = Script([1e-4, 1e-4, 1e-4, RuntimeError("flaky")], 1e-3)
    result = adaptive_round_robin([0, 1], NAMES, script, ADAPTIVE)
    error = result.results[0]
    assert isinstance(error, AutotuneError)
    assert error.kind is AutotuneErrorKind.UNKNOWN
    assert "flaky" in error.message
    assert result.winner == 1


def test_a_candidate_failing_its_warm_up_is_disqualified():
    script = Script(RuntimeError("no"), 1e-3)
    result = fixed_pass([0, 1], NAMES, script, BenchConfig(adaptive=False))
    assert isinstance(result.results[0], AutotuneError)
    assert script.calls[0] == 1
    assert result.winner == 1


def test_a_candidate_cut_for_speed_wins_when_every_survivor_fails_after_the_cut():
    # "b" is hopeless beside "a"'s first sample; "a" then fails its second. "b" ran well:
    # a batch with a candidate that succeeded has a winner.
    script = Script([1e-3, 1e-3, RuntimeError("late")], 20e-3)
    ctx = AutotuneLogContext()
    result = adaptive_round_robin([0, 1], NAMES, script, ADAPTIVE, ctx=ctx)
    assert [e.index for e in ctx.events if type(e).__name__ == "Eliminated"] == [1]
    assert isinstance(result.results[0], AutotuneError)
    assert result.winner == 1


def test_of_candidates_cut_for_speed_the_fastest_wins_when_the_survivors_fail():
    late = [1e-3, 1e-3, 1e-3, 1e-3, RuntimeError("late")]
    script = Script(late, late, 5e-3, 4e-3)
    result = adaptive_round_robin([0, 1, 2, 3], NAMES, script, ADAPTIVE)
    assert isinstance(result.results[0], AutotuneError)
    assert isinstance(result.results[1], AutotuneError)
    assert result.winner == 3


def test_a_whole_batch_that_fails_has_no_winner():
    script = Script(RuntimeError("x"), ValueError("y"))
    result = adaptive_round_robin([0, 1], NAMES, script, ADAPTIVE)
    assert result.winner is None
    assert all(isinstance(r, AutotuneError) for r in result.results.values())


def test_a_sample_that_is_not_a_positive_finite_time_is_invalid():
    script = Script([1e-3, math.nan], 1e-3)
    result = adaptive_round_robin([0, 1], NAMES, script, ADAPTIVE)
    assert result.results[0].kind is AutotuneErrorKind.INVALID_SAMPLES


def test_a_first_pass_sample_under_the_time_limit_is_confirmed_at_once():
    # Seed parity: "b" lands under the limit in the first pass and is sampled again at
    # once; its second sample under the limit ends the batch before "c" ever runs.
    script = Script(5e-3, 0.9e-3, 2e-3)
    ctx = AutotuneLogContext()
    result = adaptive_round_robin(
        [0, 1, 2], NAMES, script, ADAPTIVE, time_limit=1e-3, short_circuit_samples=2, ctx=ctx
    )
    assert result.short_circuited
    assert result.winner == 1
    assert script.calls == [2, 3, 0]
    assert [type(e).__name__ for e in ctx.events].count("ShortCircuit") == 1
    skipped = result.results[2]
    assert isinstance(skipped, AutotuneError)
    assert skipped.kind is AutotuneErrorKind.SKIP
    assert skipped.message == "not reached: b short-circuited the batch"


def test_the_short_circuit_is_checked_when_a_round_is_complete():
    # "a" reaches its second sample under the limit in round two; "b" still takes its
    # sample of that round before the batch ends.
    script = Script([2e-3, 2e-3, 0.9e-3], 1.5e-3)
    result = adaptive_round_robin(
        [0, 1], NAMES, script, ADAPTIVE, time_limit=1e-3, short_circuit_samples=2
    )
    assert result.short_circuited
    assert result.winner == 0
    assert script.calls == [4, 4]


def test_a_short_circuit_never_rests_on_one_sample():
    # "a" is under the limit and confirmed; "c", faster still, must not win on the one
    # sample it would have had when the short circuit fired.
    script = Script(0.9e-3, 2e-3, 0.5e-3)
    result = adaptive_round_robin(
        [0, 1, 2], NAMES, script, ADAPTIVE, time_limit=1e-3, short_circuit_samples=2
    )
    assert result.short_circuited
    assert len(result.results[result.winner].samples) >= 2


def test_one_sample_under_the_limit_decides_when_configured_so():
    script = Script(5e-3, 0.9e-3, 2e-3)
    result = adaptive_round_robin(
        [0, 1, 2], NAMES, script, ADAPTIVE, time_limit=1e-3, short_circuit_samples=1
    )
    assert (result.winner, script.calls) == (1, [2, 2, 0])


def test_without_a_short_circuit_every_candidate_is_sampled_whatever_the_limit():
    script = Script(5e-3, 0.9e-3, 2e-3)
    result = adaptive_round_robin(
        [0, 1, 2], NAMES, script, ADAPTIVE, time_limit=1e-3, short_circuit_samples=None
    )
    assert not result.short_circuited
    assert all(isinstance(r, AutotuneOutcome) for r in result.results.values())


def test_one_sample_under_the_limit_does_not_short_circuit_when_two_are_needed():
    script = Script(5e-3, [0.9e-3, 1.5e-3], 2e-3)
    result = adaptive_round_robin(
        [0, 1, 2], NAMES, script, ADAPTIVE, time_limit=1e-3, short_circuit_samples=2
    )
    assert not result.short_circuited


def test_the_fixed_pass_short_circuits_too():
    script = Script(0.5e-3, 2e-3)
    result = fixed_pass(
        [0, 1], NAMES, script, BenchConfig(adaptive=False), time_limit=1e-3, short_circuit_samples=2
    )
    assert result.short_circuited
    assert script.calls == [5, 0]
    assert result.results[1].kind is AutotuneErrorKind.SKIP


@pytest.mark.parametrize("strategy", [adaptive_round_robin, fixed_pass])
def test_a_candidate_scored_by_its_median_loses_its_lucky_sample(strategy):
    # "a" is 5% slower in all but one sample, a fast spell of the host: the seed's score,
    # leaning on the best sample, picks it; scored by the median, "b" wins.
    # (After the fixed pass's three warm-ups, and past the round robin's dropped first one.)
    lucky = [1.05e-3] * 5 + [0.8e-3] + [1.05e-3] * 12
    config = BenchConfig(adaptive=strategy is adaptive_round_robin, max_samples=10)
    assert strategy([0, 1], NAMES, Script(lucky, 1e-3), config).winner == 0
    result = strategy([0, 1], NAMES, Script(lucky, 1e-3), config, statistic=lambda i: "median")
    assert result.winner == 1
    assert {r.statistic for r in result.results.values()} == {"median"}


def _ms(*values):
    """A script's list: a warm-up of 2 ms, then `values` in milliseconds."""
    return [2e-3] + [v * 1e-3 for v in values]


def MEDIAN(index):
    """Every candidate scored by its median."""
    return "median"


def test_an_open_race_of_medians_is_sampled_until_the_right_candidate_leads(monkeypatch):
    # "a" pays 1.00 ms a call and "b" 1.06, but a slow spell met a's first samples and a
    # fast one b's: both converge at five samples (their bests stall), b ahead by 1.9%
    # within the noise of the two medians. Sampled on, the race goes to "a".
    a = _ms(1.0, 1.02, 1.08, 1.05, 1.07, *[0.99, 1.0, 1.01] * 3)
    b = _ms(1.06, 1.0, 1.06, 1.03, 1.05, *[1.06, 1.07, 1.05] * 3)
    monkeypatch.setattr(schedule, "RESOLVE_RACES", False)
    stopped = adaptive_round_robin([0, 1], NAMES, Script(a, b), ADAPTIVE, statistic=MEDIAN)
    assert stopped.winner == 1
    assert [len(r.samples) for r in stopped.results.values()] == [5, 5]
    monkeypatch.setattr(schedule, "RESOLVE_RACES", True)
    raced = adaptive_round_robin([0, 1], NAMES, Script(a, b), ADAPTIVE, statistic=MEDIAN)
    assert raced.winner == 0
    assert raced.results[0].score < 0.97 * raced.results[1].score


def test_a_tie_of_medians_samples_every_live_candidate_to_max_samples():
    # The rounds stay the seed's, over every live candidate, "c" too: a slow spell of the
    # host then lands on all of them alike.
    tie = _ms(1.02, 1.06, 1.03, 1.05, 1.04, 1.06, 1.03, 1.05, 1.04, 1.06)
    tied = _ms(1.05, 1.03, 1.06, 1.04, 1.05, 1.03, 1.06, 1.04, 1.05, 1.03)
    script = Script(tie, tied, 1.2e-3)
    result = adaptive_round_robin([0, 1, 2], NAMES, script, ADAPTIVE, statistic=MEDIAN)
    assert [len(result.results[i].samples) for i in range(3)] == [10, 10, 10]
    assert script.calls == [11, 11, 11]


def test_a_held_leader_races_its_rival_without_another_sample_of_its_own(monkeypatch):
    # "b" is held (its best over 1.5 x a's) and leads by its median all the same (1.6 ms
    # against a's noisy 2.5): the race samples "a" on, "b" takes no more samples.
    a = _ms(1.0, 2.6, 1.02, 2.5, 1.01, 2.7, 1.03, 2.4, 1.0, 2.6)
    monkeypatch.setattr(schedule, "RESOLVE_RACES", False)
    seed = Script(a, 1.6e-3)
    adaptive_round_robin([0, 1], NAMES, seed, ADAPTIVE, statistic=MEDIAN)
    monkeypatch.setattr(schedule, "RESOLVE_RACES", True)
    raced = Script(a, 1.6e-3)
    ctx = AutotuneLogContext()
    result = adaptive_round_robin([0, 1], NAMES, raced, ADAPTIVE, statistic=MEDIAN, ctx=ctx)
    assert [type(e).__name__ for e in ctx.events] == ["Held", "Converged"]
    assert raced.calls[0] > seed.calls[0] == 6
    assert raced.calls[1] == seed.calls[1] == 4
    assert result.winner == 1


def test_a_held_leader_and_a_rival_at_max_samples_end_the_batch():
    # "a" spread over 1.0-2.2 ms to the end, its median never clear of held b's 1.6: it
    # samples to max_samples and the batch ends there, the race still open and nobody
    # left to sample (b held after four samples).
    script = Script(_ms(*[1.0, 1.7, 2.2] * 4), 1.6e-3)
    adaptive_round_robin([0, 1], NAMES, script, BenchConfig(max_samples=10), statistic=MEDIAN)
    assert script.calls == [11, 5]


def test_a_race_of_a_median_and_a_device_time_is_sampled_on():
    # "b" is scored by the seed's score (device times), "a" by its median, 0.5% apart
    # within a's noise: one median in the pair is enough to hold the batch open.
    tie = _ms(1.02, 1.06, 1.03, 1.05, 1.04, 1.06, 1.03, 1.05, 1.04, 1.06)
    script = Script(tie, 1.04e-3)
    adaptive_round_robin(
        [0, 1], NAMES, script, ADAPTIVE, statistic=lambda i: "median" if i == 0 else "score"
    )
    assert script.calls == [11, 11]


def test_a_race_the_samples_resolve_ends_at_convergence():
    # 5% apart, each median's error under 1%: a gap of over RACE_Z (2) errors is called.
    fast = _ms(1.0, 1.0, 1.02, 0.98, 1.01, 0.99, 1.0, 1.02, 0.98, 1.0)
    slow = _ms(1.05, 1.05, 1.07, 1.03, 1.06, 1.04, 1.05, 1.07, 1.03, 1.05)
    script = Script(fast, slow)
    result = adaptive_round_robin([0, 1], NAMES, script, ADAPTIVE, statistic=MEDIAN)
    assert (result.winner, script.calls) == (0, [6, 6])


@pytest.mark.parametrize("statistic", [None, lambda index: "score"])
def test_races_of_best_weighted_scores_stay_the_seeds(statistic):
    # Device times, whose noise only adds: the seed's convergence ends the batch.
    tie = _ms(1.02, 1.06, 1.03, 1.05, 1.04, 1.06, 1.03, 1.05, 1.04, 1.06)
    tied = _ms(1.05, 1.03, 1.06, 1.04, 1.05, 1.03, 1.06, 1.04, 1.05, 1.03)
    script = Script(tie, tied)
    adaptive_round_robin([0, 1], NAMES, script, ADAPTIVE, statistic=statistic)
    assert script.calls == [6, 6]


def test_the_statistic_is_asked_per_candidate_and_not_of_a_failed_one():
    asked = []

    def statistic(index):
        asked.append(index)
        return "median" if index == 1 else "score"

    script = Script(1e-3, 2e-3, RuntimeError("boom"))
    result = adaptive_round_robin([0, 1, 2], NAMES, script, ADAPTIVE, statistic=statistic)
    assert [r.statistic for r in (result.results[0], result.results[1])] == ["score", "median"]
    assert isinstance(result.results[2], AutotuneError)
    assert 2 not in asked


# The seed's own tests of its schedule and sampler, where test names above do not already
# carry them (elimination and sampler internals are checked through a whole batch).


def test_keeps_a_candidate_within_the_speed_factor():
    ctx = AutotuneLogContext()
    script = Script(100e-6, 105e-6, 140e-6)
    result = adaptive_round_robin([0, 1, 2], NAMES, script, ADAPTIVE, ctx=ctx)
    assert not [e for e in ctx.events if type(e).__name__ in ("Eliminated", "Held")]
    assert all(isinstance(r, AutotuneOutcome) for r in result.results.values())
    assert result.winner == 0


def test_an_eliminated_candidate_never_wins_on_its_shorter_sample_set():
    # "c" is dropped at three tight samples while "a" and "b" sample on and pick up spread,
    # so "c" scores better on the arithmetic alone; elimination decided it is not eligible.
    a = [1.0e-3, 1.0e-3, 9e-3, 1.0e-3, 8e-3, 9e-3]
    b = [1.2e-3, 1.2e-3, 8e-3, 1.2e-3, 9e-3, 8e-3]
    ctx = AutotuneLogContext()
    result = adaptive_round_robin([0, 1, 2], NAMES, Script(a, b, 1.6e-3), ADAPTIVE, ctx=ctx)
    eliminated = [e.index for e in ctx.events if type(e).__name__ == "Eliminated"]
    assert eliminated == [2]
    assert result.results[2].score < min(result.results[i].score for i in (0, 1))
    assert result.winner == 0


def test_keeps_every_sample_below_the_discard_threshold():
    result = adaptive_round_robin(
        [0, 1], NAMES, Script(10e-3, 20e-3), BenchConfig(min_samples=2, max_samples=2)
    )
    outcome = result.results[0]
    assert (outcome.samples, outcome.dropped_first) == ((10e-3, 10e-3), False)


def test_computation_is_built_from_the_reliable_samples_only():
    outcome = AutotuneOutcome("k", 1, (1e-3, 20e-3, 30e-3), dropped_first=True)
    assert (outcome.stats.min, outcome.stats.median, outcome.stats.count) == (20e-3, 25e-3, 2)
    assert max(outcome.effective_samples) == 30e-3


def test_a_candidate_that_failed_late_is_disqualified_despite_good_samples():
    script = Script([1e-3, 1e-3, 1e-3, RuntimeError("late")], 2e-3)
    result = adaptive_round_robin([0, 1], NAMES, script, ADAPTIVE)
    assert isinstance(result.results[0], AutotuneError)
    assert "late" in str(result.results[0])
    assert result.winner == 1


@pytest.mark.parametrize("strategy", [fixed_pass, adaptive_round_robin])
def test_the_full_log_level_gets_every_kept_sample_as_it_is_taken(strategy):
    # The full level is "every event as it happens, samples included", and records made at
    # it keep the samples as events; no strategy ever emitted one.
    ctx = AutotuneLogContext(level=AutotuneLogLevel.FULL)
    result = strategy([0, 1], NAMES, Script(1e-3, 2e-3), ADAPTIVE, ctx=ctx)
    sampled = [e for e in ctx.events if isinstance(e, CandidateSampled)]
    for index in (0, 1):
        samples = [e.seconds for e in sampled if e.index == index]
        assert samples == list(result.results[index].samples)
    assert {e.name for e in sampled} == {"a", "b"}
    quiet = AutotuneLogContext(level=AutotuneLogLevel.MINIMAL)
    strategy([0, 1], NAMES, Script(1e-3, 2e-3), ADAPTIVE, ctx=quiet)
    assert not [e for e in quiet.events if isinstance(e, CandidateSampled)]


@pytest.mark.parametrize("strategy", ["fixed", "adaptive"])
def test_a_preference_picks_the_winner_of_live_candidates_and_is_logged(strategy):
    # "b" scores lowest; the preference takes "c" and is given the live candidates' scores
    # by index ("a" failed and is not among them); with one live candidate it is not asked.
    asked = []

    def prefer(scores):
        asked.append(sorted(scores))
        return 2

    def run(script, indices):
        ctx = AutotuneLogContext(level=AutotuneLogLevel.DISABLED)
        if strategy == "fixed":
            config = BenchConfig(adaptive=False, max_samples=4)
            result = fixed_pass(indices, NAMES, script, config, ctx=ctx, prefer=prefer)
        else:
            result = adaptive_round_robin(indices, NAMES, script, ADAPTIVE, ctx=ctx, prefer=prefer)
        return result, ctx

    result, ctx = run(Script(RuntimeError("boom"), 1.00e-3, 1.01e-3), [0, 1, 2])
    assert result.winner == 2
    assert asked == [[1, 2]]
    assert [str(e) for e in ctx.events if isinstance(e, Preferred)] == [
        "c [#2] wins over b [#1], whose score is lower: a tie the client broke"
    ]
    asked.clear()
    result, _ = run(Script(RuntimeError("boom"), 1.00e-3), [0, 1])
    assert result.winner == 1 and asked == []


# The speed the host ran at while each candidate took its sample of a round, its usual (1)
# or 1.45 times slower: a spell may end between two samples of one round. The first
# sample is the one the scores leave out.
SPEEDS_OF_A = (1, 1, 1.45, 1.45, 1.45, 1.45, 1.45, 1.45, 1, 1.45)
SPEEDS_OF_B = (1, 1, 1.45, 1.45, 1, 1, 1, 1.45, 1, 1)


def test_median_scored_candidates_are_judged_round_by_round(monkeypatch):
    # "a" is 7% faster than "b" at one speed, and faster in most rounds, but met more of
    # the slow phases: by its own median it is the slower. Round by round it wins, and the
    # log says why.
    a = _ms(*(1.0 * s for s in SPEEDS_OF_A))
    b = _ms(*(1.07 * s for s in SPEEDS_OF_B))
    config = BenchConfig(max_samples=10)
    ctx = AutotuneLogContext()
    script = Script(a, b)
    result = adaptive_round_robin([0, 1], NAMES, script, config, statistic=MEDIAN, ctx=ctx)
    assert script.calls[0] == script.calls[1] >= 6  # a warm-up, then rounds of both
    assert result.results[0].score > 1.3 * result.results[1].score  # by their own medians
    assert result.winner == 0
    assert [str(e) for e in ctx.events if isinstance(e, Preferred)] == [
        "a [#0] wins over b [#1], whose score is lower: faster than it in most rounds,"
        " which met the machine's slow spells alike"
    ]
    monkeypatch.setattr(batch, "PAIRED", False)
    assert adaptive_round_robin([0, 1], NAMES, Script(a, b), config, statistic=MEDIAN).winner == 1


def test_paired_scores_are_each_ones_median_over_the_rounds_fastest_times_their_median():
    trials = [batch.Trial(0, "a", True), batch.Trial(1, "b", True)]
    trials[0].samples = [9.0, 1.0, 2.0, 1.0, 2.0]  # the first is left out (three or more)
    trials[1].samples = [9.0, 1.1, 2.2, 1.1, 2.2]
    paired = batch.paired_scores(trials, MEDIAN)
    assert paired == pytest.approx({0: 1.5, 1: 1.65})  # the fastest: 1, 2, 1, 2 (median 1.5)
    # A candidate held after two samples is compared over the rounds it shared, and a
    # round only one candidate took (the others' later rounds) says nothing of it.
    trials.append(batch.Trial(2, "c", True))
    trials[2].samples = [9.0, 1.2]  # under three samples: its first stays
    paired = batch.paired_scores(trials, MEDIAN)
    assert paired is not None and paired[2] == pytest.approx(1.5 * 1.2)
    # Device times alone (the seed's score for every candidate): the seed's rule, unpaired.
    assert batch.paired_scores(trials, lambda i: "score") is None
    assert batch.paired_scores(trials[:1], MEDIAN) is None


def test_the_fixed_pass_is_not_paired():
    # Each candidate's samples in turn, not in rounds: its samples are not compared by
    # place, whatever the statistic.
    config = BenchConfig(adaptive=False, max_samples=4)
    a = [5e-3] * 3 + [1.0e-3, 1.0e-3, 1.0e-3, 1.45e-3]  # three warm-ups first
    b = [5e-3] * 3 + [0.95e-3, 0.95e-3, 1.4e-3, 1.4e-3]
    result = fixed_pass([0, 1], NAMES, Script(a, b), config, statistic=MEDIAN)
    assert result.winner == 0  # medians 1.0 against 1.175; by place, b leads 3 of 4


def test_a_first_pass_confirmation_is_paired_with_its_own_round():
    # "a" took three samples in the first pass (confirmed under a time limit, the last
    # over it), so its samples are not in step with b's: each is compared with b's sample
    # of the same round, where both met the same speed, and "a" is 10% faster in each.
    a, b = batch.Trial(0, "a", True), batch.Trial(1, "b", True)
    a.samples, a.rounds = [0.9, 0.9, 1.0, 1.0, 1.45, 1.45], [0, 0, 0, 1, 2, 3]
    b.samples, b.rounds = [1.2, 1.1, 1.6, 1.6, 1.1], [0, 1, 2, 3, 4]
    paired = batch.paired_scores([a, b], MEDIAN)
    assert paired is not None
    assert paired[1] / paired[0] == pytest.approx(1.1, rel=0.02)
    # Where a trial's rounds were not kept, sample k stands for round k.
    a.rounds = []
    misread = batch.paired_scores([a, b], MEDIAN)
    assert misread is not None and misread[1] / misread[0] > 1.3


def test_a_candidate_left_alone_stops_at_min_samples_as_the_seed_does():
    # Its rival raised at once: nothing is left to decide, and a candidate whose times keep
    # improving would otherwise be sampled up to max_samples (seed: 1 warm-up + min_samples).
    improving = [1e-3 * 0.9**i for i in range(20)]
    script = Script(improving, RuntimeError("no"))
    result = adaptive_round_robin([0, 1], NAMES, script, BenchConfig(max_samples=10))
    assert script.calls[0] == 1 + ADAPTIVE.min_samples
    assert result.winner == 0


def test_a_batch_of_one_candidate_stops_at_min_samples():
    script = Script([1e-3 * 0.9**i for i in range(20)])
    result = adaptive_round_robin([0], NAMES, script, BenchConfig(max_samples=10))
    assert script.calls == [1 + ADAPTIVE.min_samples]
    assert len(result.results[0].samples) == ADAPTIVE.min_samples
