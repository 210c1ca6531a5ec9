"""The seed's own tests of its `tune` module, ported one for one.

The seed is CubeCL's `cubecl-runtime` crate, module `tune`: the unit tests in
`src/tune/{base,bounds_generator,sampler,schedule,local}.rs` and the autotune tests of
`tests/integration_test.rs` (dummy kernels on a dummy device), as of its history up to
August 2026. Each test below names the Rust test it ports. Its dummy device is our fake
client, whose clock moves only when a candidate says so: the seed's "slow" kernels sleep,
ours advance the clock. Where our behaviour differs on purpose, the comment says why.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from pytest_autotune import (
    AutotuneBound,
    AutotuneConfig,
    AutotuneError,
    AutotuneErrorKind,
    AutotuneLogContext,
    AutotuneOutcome,
    AutotuneSkip,
    BenchConfig,
    Bounds,
    LocalTuner,
    Thresholds,
    Tunable,
    TunableSet,
    TuneCacheResult,
    TuneGroup,
    Work,
    anchor,
    calculate_bounds,
)
from pytest_autotune.backends import cpu
from pytest_autotune.tune.schedule import adaptive_round_robin
from pytest_autotune.tune.tunable import tune_plan
from tests.fakes import FakeClient, Script

US = 1e-6
MS = 1e-3
NAMES = ["k0", "k1", "k2", "k3"]


def kinds(ctx, kind):
    return [e for e in ctx.events if type(e).__name__ == kind]


# ---------------------------------------------------------------------------------------
# src/tune/base.rs: the tune plan


def fake(*_):
    return None


def plain():
    return Tunable("fake", fake)


def drain(key, tunables):
    return [i for batch in tune_plan(key, tunables) for i in batch]


# Rust: base.rs test_plan_order
def test_plan_order():
    group0 = TuneGroup("group0", lambda _: 2)
    group1 = TuneGroup("group1", lambda _: 1)
    tunables = [
        plain(),
        plain().group(group0, lambda _: 1),
        plain().group(group0, lambda _: 2),
        plain().group(group1, lambda _: 2),
    ]
    assert tune_plan("key", tunables) == [(0, 2), (1,), (3,)]


# Rust: base.rs test_plan_order_multi_groups_same_priority
def test_plan_order_multi_groups_same_priority():
    group0 = TuneGroup("group0", lambda _: 2)
    group1 = TuneGroup("group1", lambda _: 1)
    group2 = TuneGroup("group2", lambda _: 1)
    tunables = [
        plain(),
        plain().group(group0, lambda _: 1),
        plain().group(group0, lambda _: 2),
        plain().group(group1, lambda _: 2),
        plain().group(group2, lambda _: 2),
    ]
    assert tune_plan("key", tunables) == [(0, 2), (1,), (3, 4)]


# Rust: base.rs test_plan_order_tunable_multiple_groups
def test_plan_order_tunable_multiple_groups():
    group0 = TuneGroup("group0", lambda _: 1)
    group1 = TuneGroup("group1", lambda _: 2)
    tunables = [
        plain(),
        plain().group(group0, lambda _: 1).group(group1, lambda _: 2),
        plain().group(group0, lambda _: 2),
        plain().group(group1, lambda _: 3),
    ]
    assert tune_plan("key", tunables) == [(0, 3), (1,), (2,)]


# Rust: base.rs test_plan_negative_priority
def test_plan_negative_priority():
    group0 = TuneGroup("group0", lambda _: 2)
    group1 = TuneGroup("group1", lambda _: 1)
    tunables = [
        plain(),
        plain().group(group0, lambda _: -1),
        plain().group(group0, lambda _: 2),
        plain().group(group1, lambda _: 2),
    ]
    assert tune_plan("key", tunables) == [(0, 2), (3,)]


# Rust: base.rs test_plan_no_group
def test_plan_no_group():
    assert tune_plan("key", [plain(), plain()]) == [(0, 1)]


# Rust: base.rs test_plan_falls_through_when_all_group_tunables_fail
def test_plan_falls_through_when_all_group_tunables_fail():
    group0 = TuneGroup("group0", lambda _: 2)
    group1 = TuneGroup("group1", lambda _: 1)
    tunables = [
        plain().group(group0, lambda _: 1),
        plain().group(group0, lambda _: 2),
        plain().group(group1, lambda _: 1),
        plain().group(group1, lambda _: 2),
    ]
    assert drain("key", tunables) == [1, 0, 3, 2]


# Rust: base.rs test_plan_single_group_exhausts_all_intra_priorities
def test_plan_single_group_exhausts_all_intra_priorities():
    group0 = TuneGroup("group0", lambda _: 0)
    tunables = [plain().group(group0, lambda _, p=p: p) for p in (1, 2, 3)]
    assert tune_plan("key", tunables) == [(2,), (1,), (0,)]


# Rust: base.rs test_plan_all_negative_group_advances_to_next_group
def test_plan_all_negative_group_advances_to_next_group():
    group0 = TuneGroup("group0", lambda _: 2)
    group1 = TuneGroup("group1", lambda _: 1)
    tunables = [
        plain().group(group0, lambda _: -1),
        plain().group(group0, lambda _: -2),
        plain().group(group1, lambda _: 1),
    ]
    assert tune_plan("key", tunables) == [(2,)]


# Rust: base.rs test_plan_no_group_tunables_only_emitted_once_even_on_failures
def test_plan_no_group_tunables_only_emitted_once_even_on_failures():
    group0 = TuneGroup("group0", lambda _: 2)
    group1 = TuneGroup("group1", lambda _: 1)
    tunables = [
        plain(),
        plain().group(group0, lambda _: 1),
        plain().group(group1, lambda _: 1),
    ]
    assert tune_plan("key", tunables) == [(0, 1), (2,)]


# Rust: base.rs test_plan_multi_group_tunable_not_duplicated_across_failed_groups
def test_plan_multi_group_tunable_not_duplicated_across_failed_groups():
    group0 = TuneGroup("group0", lambda _: 1)
    group1 = TuneGroup("group1", lambda _: 2)
    tunables = [
        plain().group(group0, lambda _: 1).group(group1, lambda _: 1),
        plain().group(group0, lambda _: 2),
    ]
    assert drain("key", tunables) == [0, 1]


# Rust: base.rs test_plan_recurses_when_batch_is_fully_already_returned
def test_plan_recurses_when_batch_is_fully_already_returned():
    group_hi = TuneGroup("hi", lambda _: 2)
    group_lo = TuneGroup("lo", lambda _: 1)
    tunables = [
        plain().group(group_hi, lambda _: 1).group(group_lo, lambda _: 2),
        plain().group(group_lo, lambda _: 1),
    ]
    assert tune_plan("key", tunables) == [(0,), (1,)]


# ---------------------------------------------------------------------------------------
# src/tune/bounds_generator.rs: roofline time limits (seconds here, `Duration` there)


def bound(amount, peak, threshold):
    return AutotuneBound("compute", amount, threshold, peak)


# Rust: bounds_generator.rs time_limit_is_ops_over_throughput_scaled_by_threshold
def test_time_limit_is_ops_over_throughput_scaled_by_threshold():
    assert bound(8, 4.0, 0.5).time_limit() == 4.0


# Rust: bounds_generator.rs time_limit_is_none_when_inputs_are_not_normal
def test_time_limit_is_none_when_inputs_are_not_normal():
    assert bound(8, 0.0, 0.5).time_limit() is None
    assert bound(8, math.nan, 0.5).time_limit() is None
    assert bound(8, math.inf, 0.5).time_limit() is None
    assert bound(8, 4.0, 0.0).time_limit() is None


# Rust: bounds_generator.rs vec_time_limit_takes_the_roofline_max_not_min
def test_vec_time_limit_takes_the_roofline_max_not_min():
    # The seed's `Vec<AutotuneBound>` is our `Bounds` with no launch overhead.
    compute = bound(8, 4.0, 1.0)
    memory = AutotuneBound("memory", 8, 1.0, 8.0)
    assert Bounds([compute, memory]).time_limit() == 2.0
    assert Bounds([compute, memory]).binding_resource() == "compute"


# Rust: bounds_generator.rs vec_time_limit_skips_non_normal_bounds_and_is_none_when_empty
def test_vec_time_limit_skips_non_normal_bounds_and_is_none_when_empty():
    assert Bounds([bound(8, 0.0, 1.0), bound(8, 4.0, 1.0)]).time_limit() == 2.0
    assert Bounds([]).time_limit() is None


# Rust: bounds_generator.rs bounds_time_limit_adds_launch_overhead
def test_bounds_time_limit_adds_launch_overhead():
    assert Bounds([bound(8, 4.0, 1.0)], launch_overhead=0.5).time_limit() == 2.5


# Rust: bounds_generator.rs calculate_bounds_applies_a_threshold_per_resource
def test_calculate_bounds_applies_a_threshold_per_resource():
    bounds = calculate_bounds(Work(compute_ops=8, bytes=16), Thresholds(0.5, 1.0), 0.0, 0.0)
    assert [(b.resource, b.amount, b.threshold) for b in bounds.bounds] == [
        ("compute", 8, 0.5),
        ("memory", 16, 1.0),
    ]
    # Peaks of zero (the seed's `ThroughputValue::ZERO`) give no limit.
    assert bounds.time_limit() is None


# Rust: bounds_generator.rs the_default_threshold_is_the_roofline_itself
def test_the_default_threshold_is_the_roofline_itself():
    assert Thresholds() == Thresholds.uniform(1.0)
    assert Thresholds().compute == 1.0


# Rust: bounds_generator.rs bounds_time_limit_is_none_without_usable_bounds
def test_bounds_time_limit_is_none_without_usable_bounds():
    assert Bounds([], launch_overhead=0.5).time_limit() is None


# ---------------------------------------------------------------------------------------
# src/tune/sampler.rs: one candidate's samples. The seed tests its `SampleSet` alone; ours
# lives inside the round robin, so each is checked through a batch of two candidates,
# candidate 0 being the seed's set (its first scripted time is its warm-up).


# Rust: sampler.rs keeps_every_sample_below_the_discard_threshold
def test_keeps_every_sample_below_the_discard_threshold():
    script = Script([1 * MS, 10 * MS, 20 * MS], 30 * MS)
    config = BenchConfig(min_samples=2, max_samples=2)
    outcome = adaptive_round_robin([0, 1], NAMES, script, config).results[0]
    assert outcome.effective_samples == (10 * MS, 20 * MS)
    assert not outcome.dropped_first


# Rust: sampler.rs drops_the_warmup_biased_first_sample_once_enough_remain
def test_drops_the_warmup_biased_first_sample_once_enough_remain():
    script = Script([1 * MS, 5 * MS, 20 * MS, 21 * MS], 30 * MS)
    config = BenchConfig(min_samples=2, max_samples=3)
    outcome = adaptive_round_robin([0, 1], NAMES, script, config).results[0]
    assert outcome.dropped_first
    assert len(outcome.effective_samples) == 2
    assert outcome.best == 20 * MS


# Rust: sampler.rs converges_after_consecutive_non_improving_samples
def test_converges_after_consecutive_non_improving_samples():
    ctx = AutotuneLogContext()
    script = Script([1 * MS, 100 * MS, 20 * MS, 20 * MS, 20 * MS, 20 * MS], 30 * MS)
    adaptive_round_robin([0, 1], NAMES, script, BenchConfig(), ctx=ctx)
    assert [e.samples for e in kinds(ctx, "Converged") if e.index == 0] == [5]


# Rust: sampler.rs aging_out_the_biased_sample_does_not_count_as_a_stall
def test_aging_out_the_biased_sample_does_not_count_as_a_stall():
    ctx = AutotuneLogContext()
    script = Script([1 * MS, 5 * MS, 20 * MS, 21 * MS, 20 * MS, 20 * MS], 30 * MS)
    adaptive_round_robin([0, 1], NAMES, script, BenchConfig(), ctx=ctx)
    assert [e.samples for e in kinds(ctx, "Converged") if e.index == 0] == [5]


# Rust: sampler.rs a_real_improvement_resets_convergence
def test_sampler_a_real_improvement_resets_convergence():
    # Candidate 1 keeps improving, so the rounds go on past candidate 0's convergence.
    ctx = AutotuneLogContext()
    improving = [40 * MS * 0.9**i for i in range(12)]
    script = Script([1 * MS] + [20 * MS] * 5 + [5 * MS], improving)
    result = adaptive_round_robin([0, 1], NAMES, script, BenchConfig(), ctx=ctx)
    assert [e.samples for e in kinds(ctx, "Converged") if e.index == 0] == [5, 8]
    assert result.results[0].best == 5 * MS


# Rust: sampler.rs short_circuit_needs_independent_confirmations
@pytest.mark.parametrize(("times", "short_circuited"), [([5, 50], False), ([5, 50, 6], True)])
def test_short_circuit_needs_independent_confirmations(times, short_circuited):
    a = [1] + times + [50] * 10
    script = Script([t * MS for t in a], 30 * MS)
    result = adaptive_round_robin(
        [0, 1], NAMES, script, BenchConfig(), time_limit=10 * MS, short_circuit_samples=2
    )
    assert result.short_circuited is short_circuited
    assert result.winner == (0 if short_circuited else 1)


# Rust: sampler.rs computation_is_built_from_the_reliable_samples_only
def test_computation_is_built_from_the_reliable_samples_only():
    # The rival (9 ms) is held, not cut as hopeless: a candidate left alone stops at
    # min_samples, and the seed's set of three samples would not be reached.
    script = Script([1 * MS, 1 * MS, 20 * MS, 30 * MS], 9 * MS)
    config = BenchConfig(min_samples=2, max_samples=3)
    outcome = adaptive_round_robin([0, 1], NAMES, script, config).results[0]
    assert outcome.stats.min == 20 * MS
    assert max(outcome.effective_samples) == 30 * MS


# Rust: sampler.rs empty_set_has_no_best
def test_empty_set_has_no_best():
    # A candidate never sampled (a short circuit ended the batch first) has no samples and
    # no best: it is a SKIP result, never an outcome of zero samples.
    script = Script(0.5 * MS, 2 * MS)
    result = adaptive_round_robin(
        [0, 1], NAMES, script, BenchConfig(), time_limit=1 * MS, short_circuit_samples=2
    )
    assert script.calls[1] == 0
    skipped = result.results[1]
    assert isinstance(skipped, AutotuneError)
    assert skipped.kind is AutotuneErrorKind.SKIP


# ---------------------------------------------------------------------------------------
# src/tune/schedule.rs: elimination, short circuit and the decision, through a batch


# Rust: schedule.rs eliminates_a_candidate_that_is_clearly_behind
def test_eliminates_a_candidate_that_is_clearly_behind():
    ctx = AutotuneLogContext()
    script = Script(100 * US, 105 * US, 900 * US)
    result = adaptive_round_robin([0, 1, 2], NAMES, script, BenchConfig(), ctx=ctx)
    assert [e.index for e in kinds(ctx, "Eliminated")] == [2]
    assert result.winner == 0


# Rust: schedule.rs keeps_a_candidate_within_the_speed_factor
def test_keeps_a_candidate_within_the_speed_factor():
    ctx = AutotuneLogContext()
    script = Script(100 * US, 105 * US, 140 * US)
    adaptive_round_robin([0, 1, 2], NAMES, script, BenchConfig(), ctx=ctx)
    assert not kinds(ctx, "Eliminated") + kinds(ctx, "Held")


# Rust: schedule.rs a_noisy_candidate_is_judged_on_its_best_run
def test_a_noisy_candidate_is_judged_on_its_best_run():
    ctx = AutotuneLogContext()
    script = Script(100 * US, 100 * US, [110 * US, 110 * US, 900 * US, 120 * US])
    adaptive_round_robin([0, 1, 2], NAMES, script, BenchConfig(), ctx=ctx)
    assert not kinds(ctx, "Eliminated") + kinds(ctx, "Held")


# Rust: schedule.rs never_drops_below_the_survivor_floor
def test_never_drops_below_the_survivor_floor():
    # The seed keeps the closer outclassed candidate live; we keep it too, as the winner's
    # rival, but take no more samples of it (`Held`, README "The seed's names in Python").
    ctx = AutotuneLogContext()
    script = Script(100 * US, 900 * US, 950 * US)
    result = adaptive_round_robin([0, 1, 2], NAMES, script, BenchConfig(), ctx=ctx)
    assert [e.index for e in kinds(ctx, "Eliminated")] == [2]
    assert [e.index for e in kinds(ctx, "Held")] == [1]
    assert isinstance(result.results[1], AutotuneOutcome)
    assert result.winner == 0


# Rust: schedule.rs spares_candidates_that_lack_the_minimum_samples
def test_spares_candidates_that_lack_the_minimum_samples():
    # A round robin samples every live candidate each round, so the one nine times slower
    # has min_samples (3) raw samples when it goes, not one.
    ctx = AutotuneLogContext()
    script = Script(100 * US, 100 * US, 900 * US)
    result = adaptive_round_robin([0, 1, 2], NAMES, script, BenchConfig(min_samples=3), ctx=ctx)
    assert [e.index for e in kinds(ctx, "Eliminated")] == [2]
    assert len(result.results[2].samples) == 3


# Rust: schedule.rs short_circuit_requires_the_configured_confirmations
def test_short_circuit_requires_the_configured_confirmations():
    def run(times):
        script = Script([1 * MS] + [t * US for t in times], 1 * MS)
        return adaptive_round_robin(
            [0, 1], NAMES, script, BenchConfig(), time_limit=200 * US, short_circuit_samples=2
        )

    assert not run([100, 900]).short_circuited
    hit = run([100, 900, 150])
    assert hit.short_circuited
    assert NAMES[hit.winner] == "k0"


# Rust: schedule.rs short_circuit_stays_off_without_a_limit
def test_short_circuit_stays_off_without_a_limit():
    script = Script(1 * US, 1 * US)
    result = adaptive_round_robin([0, 1], NAMES, script, BenchConfig(), short_circuit_samples=2)
    assert not result.short_circuited


# Rust: schedule.rs unreached_candidates_are_reported_as_skipped
def test_unreached_candidates_are_reported_as_skipped():
    script = Script(0.5 * MS, 2 * MS, 2 * MS, 2 * MS)
    result = adaptive_round_robin(
        [0, 1, 2, 3], NAMES, script, BenchConfig(), time_limit=1 * MS, short_circuit_samples=2
    )
    assert result.results[3].kind is AutotuneErrorKind.SKIP


# Rust: schedule.rs a_candidate_that_failed_late_is_disqualified_despite_good_samples
def test_a_candidate_that_failed_late_is_disqualified_despite_good_samples():
    script = Script([10 * US] * 4 + [ValueError("invalid samples")], 20 * US)
    result = adaptive_round_robin([0, 1], NAMES, script, BenchConfig())
    assert isinstance(result.results[0], AutotuneError)
    assert result.winner == 1


# Rust: schedule.rs an_eliminated_candidate_never_wins_on_its_shorter_sample_set
def test_an_eliminated_candidate_never_wins_on_its_shorter_sample_set():
    # Candidate 2 is dropped at three tight samples while 0 and 1 sample on and pick up
    # spread, so 2 scores better on the arithmetic alone.
    a = [t * MS for t in (1.0, 1.0, 9, 1.0, 8, 9)]
    b = [t * MS for t in (1.2, 1.2, 8, 1.2, 9, 8)]
    ctx = AutotuneLogContext()
    result = adaptive_round_robin([0, 1, 2], NAMES, Script(a, b, 1.6 * MS), BenchConfig(), ctx=ctx)
    assert [e.index for e in kinds(ctx, "Eliminated")] == [2]
    assert result.results[2].score < min(result.results[i].score for i in (0, 1))
    assert result.winner == 0


# Rust: schedule.rs the_fastest_survivor_is_the_one_declared
def test_the_fastest_survivor_is_the_one_declared():
    script = Script(100 * US, 40 * US, 70 * US)
    assert adaptive_round_robin([0, 1, 2], NAMES, script, BenchConfig()).winner == 1


# Rust: schedule.rs no_survivor_leaves_the_decision_open
def test_no_survivor_leaves_the_decision_open():
    script = Script([10 * US, ValueError("invalid samples")], RuntimeError("boom"))
    result = adaptive_round_robin([0, 1], NAMES, script, BenchConfig())
    assert result.winner is None
    assert all(isinstance(r, AutotuneError) for r in result.results.values())


# Rust: schedule.rs a_sampled_candidate_reports_its_measurements
def test_a_sampled_candidate_reports_its_measurements():
    # Candidate 0 at 200 us is held beside the leader rather than cut as hopeless (as 1 ms
    # would be), so candidate 1 is not left alone, which stops at min_samples.
    script = Script(200 * US, [1 * MS, 50 * US, 60 * US, 70 * US])
    config = BenchConfig(min_samples=2, max_samples=3)
    outcome = adaptive_round_robin([0, 1], NAMES, script, config).results[1]
    assert isinstance(outcome, AutotuneOutcome)
    assert outcome.index == 1
    assert outcome.stats.min == 60 * US


# ---------------------------------------------------------------------------------------
# src/tune/local.rs (August 2026): a cached winner that fails when called


def cloning_set(*candidates):
    tunables = TunableSet(lambda _x: "FakeKey")
    for name, fn in candidates:
        tunables = tunables.with_(Tunable(name, fn))
    return tunables


# Rust: local.rs cache_hit_winner_failure_falls_back
def test_cache_hit_winner_failure_falls_back(tmp_path):
    # The seed runs the other candidates in order after a winner that fails on a hit; ours
    # tunes the key again (README: "A winner that declines its key when called ... has the
    # key tuned again on those inputs"), so the new winner is measured and saved, not only
    # the first that runs. A winner that declines says so with `AutotuneSkip`.
    client = FakeClient()
    ran = []
    broken = {"winner_now_invalid": False}

    def log(name, ok):
        def fn(_x):
            ran.append(name)
            if broken.get(name):
                raise AutotuneSkip("invalid config")
            if not ok:
                raise RuntimeError("invalid config")
            client.clock.advance(1 * MS if name == "works" else 1 * US)
            return name

        return fn

    tunables = cloning_set(
        ("winner_now_invalid", log("winner_now_invalid", True)),
        ("also_broken", log("also_broken", False)),
        ("works", log("works", True)),
    )
    local = LocalTuner("fallback", AutotuneConfig(cache_dir=tmp_path))
    assert local.execute(client.device_id, client, tunables, (7,)) == "winner_now_invalid"
    broken["winner_now_invalid"] = True
    ran.clear()
    assert local.execute(client.device_id, client, tunables, (7,)) == "works"
    assert ran[0] == "winner_now_invalid"
    assert ran[-1] == "works"
    assert "also_broken" in ran


# Rust: local.rs cache_hit_winner_success_runs_alone
def test_cache_hit_winner_success_runs_alone(tmp_path):
    client = FakeClient()
    ran = []

    def log(name, seconds):
        def fn(_x):
            ran.append(name)
            client.clock.advance(seconds)

        return fn

    tunables = cloning_set(("winner", log("winner", 1 * US)), ("unused", log("unused", 1 * MS)))
    local = LocalTuner("alone", AutotuneConfig(cache_dir=tmp_path))
    local.execute(client.device_id, client, tunables, (7,))
    ran.clear()
    local.execute(client.device_id, client, tunables, (7,))
    assert ran == ["winner"]


# ---------------------------------------------------------------------------------------
# tests/integration_test.rs: LocalTuner on dummy kernels. `out` is written in place, as the
# seed's kernels write their output handle; the "slow wrong" kernels copy `lhs`.


class Dummy:
    """The seed's dummy kernels on the fake clock, counting their calls."""

    def __init__(self, client):
        self.client = client
        self.calls: dict[str, int] = {}

    def kernel(self, name, seconds, op):
        def fn(lhs, rhs, out):
            self.calls[name] = self.calls.get(name, 0) + 1
            self.client.clock.advance(seconds(lhs.size) if callable(seconds) else seconds)
            out[:] = op(lhs, rhs)

        fn.__name__ = name
        return fn

    def add(self, name="add"):
        return Tunable(name, self.kernel(name, 10 * US, np.add))

    def add_slow_wrong(self, name="add_slow_wrong"):
        return Tunable(name, self.kernel(name, 3 * MS, lambda lhs, _rhs: lhs))


def log_shape_key(prefix):
    """The seed's `log_shape_input_key`: sizes rounded up to a power of two."""
    return lambda lhs, rhs, out: f"{prefix}-{anchor(lhs.size)}"


def handles(lhs, rhs):
    lhs, rhs = np.array(lhs), np.array(rhs)
    return lhs, rhs, np.zeros_like(lhs)


def run(local, client, tunables, inputs):
    local.execute(client.device_id, client, tunables, inputs)
    return inputs[2].tolist()


@pytest.fixture
def cache_dir(tmp_path):
    return tmp_path / ".autotune"


def tuner(name, cache_dir, **settings):
    return LocalTuner(name, AutotuneConfig(cache_dir=cache_dir, **settings))


# Rust: integration_test.rs autotune_basic_addition_execution
def test_autotune_basic_addition_execution(cache_dir):
    client = FakeClient()
    dummy = Dummy(client)
    tunables = TunableSet(log_shape_key("add")).with_(dummy.add()).with_(dummy.add_slow_wrong())
    local = tuner("autotune_basic_addition_execution", cache_dir)
    assert run(local, client, tunables, handles([0, 1, 2], [4, 4, 4])) == [4, 5, 6]


# Rust: integration_test.rs autotune_basic_multiplication_execution
def test_autotune_basic_multiplication_execution(cache_dir):
    client = FakeClient()
    dummy = Dummy(client)
    tunables = (
        TunableSet(log_shape_key("mul"))
        .with_(Tunable("mul_slow_wrong", dummy.kernel("mul_slow_wrong", 3 * MS, lambda a, _: a)))
        .with_(Tunable("mul", dummy.kernel("mul", 10 * US, np.multiply)))
    )
    local = tuner("autotune_basic_multiplication_execution", cache_dir)
    assert run(local, client, tunables, handles([0, 1, 2], [4, 4, 4])) == [0, 4, 8]


def cache_test_set(dummy, second="cache_test_slow_on_3"):
    """The seed's `cache_test_set`: a kernel fast on size 3 that returns lhs, and one slow
    on size 3 (fast on the others) that returns rhs; sizes 3 and 4 share a key."""
    return (
        TunableSet(log_shape_key("cache_test"))
        .with_(
            Tunable(
                "cache_test_fast_on_3",
                dummy.kernel("fast_on_3", lambda n: 1 * US if n == 3 else 1 * MS, lambda a, _: a),
            )
        )
        .with_(
            Tunable(
                second,
                dummy.kernel("slow_on_3", lambda n: 1 * MS if n == 3 else 1 * US, lambda _, b: b),
            )
        )
    )


def tuned_on_size_3(cache_dir):
    """The start of the seed's cache tests: a `cache_test` tuner that has tuned a
    `cache_test_set` on size 3; with its client, the set's dummy and the set."""
    client = FakeClient()
    dummy = Dummy(client)
    local = tuner("cache_test", cache_dir)
    tunables = cache_test_set(dummy)
    run(local, client, tunables, handles([0, 1, 2], [4, 4, 4]))
    return local, client, dummy, tunables


# Rust: integration_test.rs autotune_cache_same_key_return_a_cache_hit
def test_autotune_cache_same_key_return_a_cache_hit(cache_dir):
    local, client, _, tunables = tuned_on_size_3(cache_dir)
    # Size 4 shares size 3's key, so the size-3 winner runs, returning lhs.
    assert run(local, client, tunables, handles([0, 1, 2, 3], [5, 6, 7, 8])) == [0, 1, 2, 3]


# Rust: integration_test.rs autotune_cache_no_cache_on_disk_return_a_cache_miss
def test_autotune_cache_no_cache_on_disk_return_a_cache_miss(cache_dir):
    local, client, _, tunables = tuned_on_size_3(cache_dir)
    # The seed clears its tuner and deletes the cache file: the key is tuned again, and
    # on size 4 the kernel fast there (returning rhs) wins.
    local.clear()
    (cache_dir / client.device_id / "cache_test.json").unlink()
    assert local.tuner(client.device_id).fastest("cache_test-4").kind == "miss"
    assert run(local, client, tunables, handles([0, 1, 2, 3], [5, 6, 7, 8])) == [5, 6, 7, 8]
    # Size 5 has a key of its own: a miss too.
    assert run(local, client, tunables, handles([0, 1, 2, 3, 4], [5, 6, 7, 8, 9])) == [
        5,
        6,
        7,
        8,
        9,
    ]
    saved = tuner("cache_test", cache_dir).tuner(client.device_id)
    assert saved.fastest("cache_test-4").kind == "unchecked"
    assert saved.fastest("cache_test-8").kind == "unchecked"


# Rust: integration_test.rs autotune_cache_file_path_creation_works_when_path_does_not_exist_yet
def test_autotune_cache_file_path_creation_works_when_path_does_not_exist_yet(tmp_path):
    client = FakeClient()
    folder = tmp_path / "not" / "there" / "yet"
    local = tuner("cache_test", folder)
    run(local, client, cache_test_set(Dummy(client)), handles([0, 1, 2], [4, 4, 4]))
    path = folder / client.device_id / "cache_test.json"
    assert path.parent.is_dir()
    assert path.is_file()


# Rust: integration_test.rs autotune_cache_different_keys_return_a_cache_miss
def test_autotune_cache_different_keys_return_a_cache_miss(cache_dir):
    local, client, _, tunables = tuned_on_size_3(cache_dir)
    assert local.tuner(client.device_id).fastest("cache_test-8") == TuneCacheResult("miss")
    assert run(local, client, tunables, handles([0, 1, 2, 3, 4], [5, 6, 7, 8, 9])) == [
        5,
        6,
        7,
        8,
        9,
    ]


# Rust: integration_test.rs autotune_cache_different_checksums_return_a_cache_miss
def test_autotune_cache_different_checksums_return_a_cache_miss(cache_dir):
    # The seed forces a new checksum with `with_custom_checksum`; ours is the checksum of
    # the candidate names, so a renamed candidate changes it (README, "The runtime library").
    local, client, dummy, _ = tuned_on_size_3(cache_dir)
    local.clear()  # the seed's `TEST_TUNER.clear()`: the file still holds the entry
    renamed = cache_test_set(dummy, second="cache_test_slow_on_3_v2")
    assert run(local, client, renamed, handles([0, 1, 2, 3], [5, 6, 7, 8])) == [5, 6, 7, 8]


# Rust: integration_test.rs autotune_resets_when_the_environment_switches
def test_autotune_resets_when_the_environment_switches(tmp_path):
    # The seed's environment root is our cache folder: one per LocalTuner config.
    client = FakeClient()
    dummy = Dummy(client)
    tunables = TunableSet(log_shape_key("add")).with_(dummy.add()).with_(dummy.add_slow_wrong())
    first, second = tmp_path / "first", tmp_path / "second"
    inputs = handles([0, 1, 2], [4, 4, 4])
    key = tunables.key_gen(*inputs)

    in_first = tuner("environment-switch", first)
    run(in_first, client, tunables, inputs)
    assert in_first.tuner(client.device_id).fastest(key).kind == "hit"

    in_second = tuner("environment-switch", second)
    assert in_second.tuner(client.device_id).fastest(key).kind == "miss"
    run(in_second, client, tunables, inputs)
    assert in_second.tuner(client.device_id).fastest(key).kind == "hit"

    # Back in the first: served from its file, with no third tuning.
    back = tuner("environment-switch", first)
    assert back.tuner(client.device_id).fastest(key).kind == "unchecked"
    slow_calls = dummy.calls["add_slow_wrong"]
    assert run(back, client, tunables, inputs) == [4, 5, 6]
    assert back.tuner(client.device_id).fastest(key).kind == "hit"
    assert dummy.calls["add_slow_wrong"] == slow_calls


def bounded(dummy, peak, threshold, short_circuit=None):
    tunables = (
        TunableSet(log_shape_key("add_bounded"))
        .with_(dummy.add_slow_wrong())
        .with_(dummy.add())
        .with_bounds(
            lambda key, inputs, client: Bounds([AutotuneBound("compute", 1, threshold, peak)])
        )
    )
    return tunables if short_circuit is None else tunables.with_short_circuit(short_circuit)


@pytest.mark.parametrize(
    ("peak", "short_circuit", "expected", "add_runs"),
    [
        # time limit = 1 / 1.0 / 1.0 = 1 s, far above the slow kernel's 3 ms.
        pytest.param(
            1.0,
            None,
            [0, 1, 2],
            False,
            id="autotune_bounds_short_circuit_accepts_first_within_limit",
        ),
        # time limit = 1 / 1e12 / 1.0 = 1 ps: nothing qualifies.
        pytest.param(
            1e12, None, [4, 5, 6], True, id="autotune_bounds_unreachable_limit_benchmarks_all"
        ),
        pytest.param(
            1.0, False, [4, 5, 6], True, id="autotune_short_circuit_disabled_benchmarks_all"
        ),
    ],
)
def test_autotune_bounds_short_circuit(cache_dir, peak, short_circuit, expected, add_runs):
    """Rust: integration_test.rs, the test of the case's id: the wrong slow kernel first,
    then `add`, under a compute bound of `peak` at threshold 1.0."""
    client = FakeClient()
    dummy = Dummy(client)
    local = tuner("autotune_bounds", cache_dir)
    tunables = bounded(dummy, peak, 1.0, short_circuit)
    assert run(local, client, tunables, handles([0, 1, 2], [4, 4, 4])) == expected
    assert ("add" in dummy.calls) == add_runs


def raising(name, calls, error):
    def fn(lhs, rhs, out):
        calls.append(name)
        raise error

    return Tunable(name, fn)


@pytest.mark.parametrize(
    ("error", "last"),
    [
        pytest.param(
            RuntimeError("unsupported by this device"),
            False,
            id="autotune_stops_sampling_a_rejected_candidate",
        ),
        # Removed from the seed since.
        pytest.param(
            ZeroDivisionError("kernel boom"), False, id="autotune_survives_a_panicking_candidate"
        ),
        # The failing candidate goes last, as in the seed: nothing runs after it in the
        # tuning.
        pytest.param(
            SyntaxError("cannot compile"),
            True,
            id="autotune_skips_a_candidate_that_fails_compilation",
        ),
    ],
)
def test_autotune_serves_the_others_beside_a_raising_candidate(cache_dir, error, last):
    """Rust: integration_test.rs, the test of the case's id: a candidate that raises `error`
    (before `add`, or `last`) is called once, recorded as failed, and `add` is served."""
    client = FakeClient()
    dummy = Dummy(client)
    calls: list[str] = []
    failing = raising("add_failing", calls, error)
    tunables = TunableSet(log_shape_key("add_failing"))
    for candidate in [dummy.add(), failing] if last else [failing, dummy.add()]:
        tunables = tunables.with_(candidate)
    local = tuner("autotune_failing_candidate", cache_dir)
    assert run(local, client, tunables, handles([0, 1, 2], [4, 4, 4])) == [4, 5, 6]
    assert calls == ["add_failing"]
    decision = local.tuner(client.device_id).decision("add_failing-4")
    assert decision is not None
    assert isinstance(decision.results[1 if last else 0], AutotuneError)
    # The tuner keeps serving afterwards.
    assert run(local, client, tunables, handles([1, 1, 1], [1, 1, 1])) == [2, 2, 2]


# Rust: integration_test.rs autotune_stops_sampling_an_eliminated_candidate
def test_autotune_stops_sampling_an_eliminated_candidate(cache_dir):
    client = FakeClient()
    dummy = Dummy(client)
    # Five times slower: eliminated on the numbers, not cut as hopeless at the first pass
    # (ten times and more, README "The seed's names in Python").
    tunables = (
        TunableSet(log_shape_key("add_slow"))
        .with_(dummy.add())
        .with_(dummy.add("add_other"))
        .with_(Tunable("add_slow_wrong", dummy.kernel("add_slow_wrong", 50 * US, lambda a, _: a)))
    )
    local = tuner("autotune_eliminated_candidate", cache_dir)
    bench = local.config.bench
    assert run(local, client, tunables, handles([0, 1, 2], [4, 4, 4])) == [4, 5, 6]
    slow, fast = dummy.calls["add_slow_wrong"], dummy.calls["add"]
    assert slow > bench.min_samples
    assert slow < bench.max_samples + 1
    assert slow < fast


# Rust: cubecl-std tests/tuner.rs test_tuner_short_circuit_with_memory_direct (GPU; removed
# since): three copies of one buffer, the first on one cube, the other two on all of them.
def test_tuner_short_circuit_with_memory_direct(cache_dir):
    client = FakeClient()
    dummy = Dummy(client)
    # The bound is the copy at the measured peak: 1 ms, reached by "fast" and "never".
    peak = 1.0 / MS
    tunables = (
        TunableSet(lambda lhs, rhs, out: "memory_direct_test")
        .with_(Tunable("slow", dummy.kernel("slow", 10 * MS, lambda a, _: a)))
        .with_(Tunable("fast", dummy.kernel("fast", 1 * MS, lambda a, _: a)))
        .with_(Tunable("never", dummy.kernel("never", 1 * MS, lambda a, _: a)))
        .with_bounds(lambda key, inputs, client: Bounds([AutotuneBound("memory", 1, 1.0, peak)]))
    )
    local = tuner("test_tuner", cache_dir)
    run(local, client, tunables, handles([0, 1, 2], [4, 4, 4]))
    assert dummy.calls["slow"] > 0
    assert dummy.calls["fast"] > 0
    assert "never" not in dummy.calls
    assert local.tuner(client.device_id).fastest("memory_direct_test") == TuneCacheResult("hit", 1)


# Rust: integration_test.rs profile_reraises_panic_from_profiled_closure
def test_profile_reraises_panic_from_profiled_closure():
    # The seed's `client.profile` is our client's `time`: what the call raises reaches its
    # caller as itself, which is how the tuner records a candidate's own error.
    def boom():
        raise ValueError("kernel boom")

    with pytest.raises(ValueError, match=r"^kernel boom$"):
        cpu().time(boom, ())


# Rust: integration_test.rs profile_returns_ok_on_success
def test_profile_returns_ok_on_success():
    # Ours returns the seconds only; the seed's `(value, duration)` has no counterpart.
    seconds = cpu().time(lambda: 123, ())
    assert seconds > 0
    assert math.isfinite(seconds)


# No Rust test: `anchor` (util.rs) has none. Parity with its formula, where ours differs on
# purpose in two ways (the docstring of `anchor` says both): the full level still clamps to
# [min, max], and a power of a scaled base is found exactly, not through a float logarithm
# (the seed's log(125, 5) = 3.0000000000000004 anchors 125 to 625 at the minimal level).
def seed_anchor(x, max_=None, min_=None, base=None, level="balanced"):
    factor = {"minimal": 1.25, "balanced": 1.0, "extensive": 0.75}[level]
    b = max((base or 2) * factor, 1.1)
    power = 0 if x == 0 else math.ceil(b ** math.ceil(math.log(x, b)))
    power = power if max_ is None else min(power, max_)
    return power if min_ is None else max(power, min_)


@pytest.mark.parametrize("level", ["minimal", "balanced", "extensive"])
@pytest.mark.parametrize("base", [None, 2, 3, 10])
def test_anchor_matches_the_seeds_formula(level, base):
    for x in range(0, 2049):
        for max_, min_ in ((None, None), (512, None), (None, 16), (512, 16)):
            assert anchor(x, max_, min_, base, level=level) == seed_anchor(
                x, max_, min_, base, level
            ), (x, max_, min_)


def test_anchor_at_the_full_level():
    assert [anchor(x, level="full") for x in (0, 1, 3, 1000, 1025)] == [0, 1, 3, 1000, 1025]
