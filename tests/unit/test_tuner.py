"""The Tuner: cache lookups, the plan's batches, checks, persistence and threads."""

import threading
import time

import numpy as np
import pytest

from pytest_autotune.tune.benchmark import AutotuneOutcome
from pytest_autotune.tune.bounds import Work
from pytest_autotune.tune.cache import PersistentCache
from pytest_autotune.tune.config import AutotuneConfig, BenchConfig
from pytest_autotune.tune.errors import AutotuneError, AutotuneErrorKind, AutotuneSkip
from pytest_autotune.tune.records import Recorder, read_records
from pytest_autotune.tune.tunable import Tunable, TuneGroup
from pytest_autotune.tune.tunable_set import TunableSet
from pytest_autotune.tune.tuner import Tuner
from tests.fakes import FakeClient, candidate, failing


def by_size(x):
    return len(x)


def make(clock, **times):
    return TunableSet.of(by_size, {n: candidate(clock, t, n, result=n) for n, t in times.items()})


@pytest.fixture
def client():
    return FakeClient()


def test_a_set_of_one_candidate_is_a_hit_without_benchmarking(client):
    tunables = make(client.clock, only=1e-3)
    tuner = Tuner("t", client.device_id)
    assert tuner.execute(tunables, ([1, 2],), client) == "only"
    assert client.timed == []
    assert tuner.fastest(2).kind == "hit"


def test_a_new_key_is_tuned_once_then_served_from_memory(client):
    tunables = make(client.clock, slow=3e-3, fast=1e-3, mid=2e-3)
    tuner = Tuner("t", client.device_id)
    assert tuner.fastest(2).kind == "miss"
    assert tuner.execute(tunables, ([1, 2],), client) == "fast"
    calls = [fn.calls for fn in tunables.fns]
    assert tuner.execute(tunables, ([3, 4],), client) == "fast"
    assert [fn.calls for fn in tunables.fns] == [calls[0], calls[1] + 1, calls[2]]
    assert tuner.fastest(2).fastest_index == 1


def test_another_key_is_tuned_on_its_own(client):
    clock = client.clock
    a = candidate(clock, [1e-3], "a", "a")
    b = candidate(clock, [2e-3], "b", "b")
    tunables = TunableSet.of(by_size, {"a": a, "b": b})
    tuner = Tuner("t", client.device_id)
    tuner.execute(tunables, ([1],), client)
    assert tuner.fastest(2).kind == "miss"


def test_tuning_stops_at_the_first_batch_with_a_success(client):
    clock = client.clock
    first = TuneGroup("first", lambda key: 2)
    second = TuneGroup("second", lambda key: 1)
    later = candidate(clock, 1e-4, "later")
    tunables = (
        TunableSet(by_size)
        .with_(Tunable("a", candidate(clock, 1e-3, "a")).group(first, lambda k: 0))
        .with_(Tunable("later", later).group(second, lambda k: 0))
    )
    decision = Tuner("t", client.device_id).tune(2, tunables, ([1, 2],), client)
    assert decision.fastest_name == "a"
    assert later.calls == 0
    skipped = decision.results[1]
    assert (skipped.kind, skipped.name) == (AutotuneErrorKind.SKIP, "later")
    assert skipped.message == "not reached: batch 0 found a winner first"


def test_every_candidate_has_a_result_at_its_own_index(client, tmp_path):
    # The first batch holds the candidates at indices 1 and 2; the one at 0 is never
    # reached, yet the file and the record keep one result per candidate, in index order.
    clock = client.clock
    big = TuneGroup("big", lambda key: 1)
    small = TuneGroup("small", lambda key: 0)
    tunables = (
        TunableSet(by_size)
        .with_(Tunable("alt", candidate(clock, 1.2e-3, "alt")).group(small, lambda k: 0))
        .with_(Tunable("fast", candidate(clock, 1e-3, "fast")).group(big, lambda k: 0))
        .with_(Tunable("slow", candidate(clock, 3e-3, "slow")).group(big, lambda k: 0))
    )
    cache = PersistentCache(tmp_path / "t.json")
    decision = Tuner("t", client.device_id, persistent=cache).tune(2, tunables, ([1, 2],), client)
    (value,) = cache.load().values()
    assert value.fastest_index == 1
    assert [r.name for r in value.results] == ["alt", "fast", "slow"]
    assert value.results[value.fastest_index].name == "fast"
    assert [r["index"] for r in decision.result_list()] == [0, 1, 2]


def test_when_a_whole_batch_fails_the_next_batch_is_tried(client):
    clock = client.clock
    first = TuneGroup("first", lambda key: 2)
    second = TuneGroup("second", lambda key: 1)
    tunables = (
        TunableSet(by_size)
        .with_(Tunable("broken", failing("broken")).group(first, lambda k: 0))
        .with_(Tunable("works", candidate(clock, 1e-3, "works")).group(second, lambda k: 0))
    )
    decision = Tuner("t", client.device_id).tune(2, tunables, ([1, 2],), client)
    assert decision.fastest_name == "works"
    assert decision.measured
    assert "broken exploded" in str(decision.results[0])


def test_a_candidate_may_decline_a_key_with_autotune_skip(client):
    def declines(x):
        raise AutotuneSkip("only even sizes")

    tunables = TunableSet.of(by_size, {"picky": declines, "any": candidate(client.clock, 1e-3)})
    decision = Tuner("t", client.device_id).tune(1, tunables, ([1],), client)
    assert decision.fastest_name == "any"
    assert decision.results[0].kind.value == "skip"


def test_an_all_failed_decision_is_kept_in_memory_only(client, tmp_path):
    cache = PersistentCache(tmp_path / "t.json")
    tunables = TunableSet.of(by_size, {"x": failing("x"), "y": failing("y")})
    tuner = Tuner("t", client.device_id, persistent=cache)
    decision = tuner.tune(1, tunables, ([1],), client)
    assert not decision.measured
    assert not (tmp_path / "t.json").exists()


def test_when_every_candidate_fails_execute_raises_no_valid_kernel_found_naming_each_error(
    client,
):
    def declines(x):
        raise AutotuneSkip("only even sizes")

    tunables = TunableSet.of(by_size, {"x": failing("x"), "picky": declines, "y": failing("y")})
    tuner = Tuner("t", client.device_id)
    with pytest.raises(AutotuneError) as raised:
        tuner.execute(tunables, ([1],), client)
    error = raised.value
    assert error.kind is AutotuneErrorKind.NO_VALID_KERNEL_FOUND
    assert "x: unknown: RuntimeError: x exploded" in error.message
    assert "picky: skip: only even sizes" in error.message
    assert "y: unknown: RuntimeError: y exploded" in error.message
    # The next call raises the same error without tuning again.
    with pytest.raises(AutotuneError, match="no candidate succeeded"):
        tuner.execute(tunables, ([2],), client)


def test_when_nothing_could_be_measured_the_fallback_is_the_first_candidate_that_ran(client):
    # "picky" declines and "broken" fails: neither may run for the caller. "untimed" runs,
    # but its timer gives no valid duration, so it is the fallback.
    def declines(x):
        raise AutotuneSkip("not this key")

    untimed = candidate(client.clock, 0.0, "untimed", result="untimed")
    tunables = TunableSet.of(
        by_size, {"picky": declines, "broken": failing("broken"), "untimed": untimed}
    )
    tuner = Tuner("t", client.device_id)
    assert tuner.execute(tunables, ([1],), client) == "untimed"
    decision = tuner.decision(1)
    assert (decision.fastest_name, decision.measured) == ("untimed", False)


def test_a_persisted_winner_is_used_without_benchmarking(client, tmp_path):
    path = tmp_path / "t.json"
    tunables = make(client.clock, slow=3e-3, fast=1e-3)
    Tuner("t", client.device_id, persistent=PersistentCache(path)).execute(tunables, ([1],), client)
    assert path.exists()

    again = make(client.clock, slow=3e-3, fast=1e-3)
    tuner = Tuner("t", client.device_id, persistent=PersistentCache(path))
    assert tuner.fastest(1).kind == "unchecked"
    assert tuner.execute(again, ([1],), client) == "fast"
    assert [fn.calls for fn in again.fns] == [0, 1]


def test_a_changed_candidate_list_re_tunes(client, tmp_path):
    path = tmp_path / "t.json"
    Tuner("t", client.device_id, persistent=PersistentCache(path)).execute(
        make(client.clock, slow=3e-3, fast=1e-3), ([1],), client
    )
    renamed = make(client.clock, slow=3e-3, quick=1e-3)
    tuner = Tuner("t", client.device_id, persistent=PersistentCache(path))
    assert tuner.execute(renamed, ([1],), client) == "quick"
    assert renamed.fns[0].calls > 0


def limited(clock, config=None, **times):
    """A set whose bounds give a time limit of 1 ms on the fake client."""
    return make(clock, **times).with_work(lambda x: Work(bytes=1e6))


def test_a_candidate_under_the_time_limit_ends_tuning_before_later_candidates_run(client):
    tunables = limited(client.clock, b=2e-3, a=0.5e-3, c=0.4e-3)
    decision = Tuner("t", client.device_id).tune(1, tunables, ([1],), client)
    assert decision.fastest_name == "a"
    assert [fn.calls for fn in tunables.fns] == [2, 3, 0]
    assert decision.results[2].kind is AutotuneErrorKind.SKIP


def test_with_short_circuit_false_samples_every_candidate_whatever_the_limit(client):
    tunables = limited(client.clock, a=0.5e-3, b=2e-3, c=0.4e-3).with_short_circuit(False)
    decision = Tuner("t", client.device_id).tune(1, tunables, ([1],), client)
    assert decision.fastest_name == "c"
    assert all(isinstance(r, AutotuneOutcome) for r in decision.results.values())


def test_a_config_setting_turns_the_short_circuit_off(client):
    config = AutotuneConfig(bench=BenchConfig(short_circuit=False))
    tunables = limited(client.clock, a=0.5e-3, b=2e-3, c=0.4e-3)
    decision = Tuner("t", client.device_id, config).tune(1, tunables, ([1],), client)
    assert decision.fastest_name == "c"


def test_with_short_circuit_true_keeps_the_configured_samples_not_one(client):
    config = AutotuneConfig(bench=BenchConfig(short_circuit=False, short_circuit_samples=3))
    tunables = limited(client.clock, a=0.5e-3, b=2e-3).with_short_circuit(True)
    Tuner("t", client.device_id, config).tune(1, tunables, ([1],), client)
    # One warm-up, then three samples under the limit end the batch.
    assert [fn.calls for fn in tunables.fns] == [4, 0]


def test_a_wrong_candidate_is_caught_by_the_checks_and_never_wins(client):
    clock = client.clock
    tunables = TunableSet.of(
        by_size,
        {
            "right": candidate(clock, 2e-3, "right", result=np.arange(4.0)),
            "wrong_but_fast": candidate(clock, 1e-4, "wrong", result=np.arange(4.0) + 1),
        },
    )
    tuner = Tuner("t", client.device_id, AutotuneConfig(checks=True))
    decision = tuner.tune(4, tunables, ([0] * 4,), client)
    assert decision.fastest_name == "right"
    assert [c.passed for c in decision.checks] == [True, False]
    assert "failed its check" in str(decision.results[1])


def test_an_explicit_reference_judges_every_candidate(client):
    clock = client.clock
    tunables = TunableSet.of(
        by_size,
        {
            "off": candidate(clock, 1e-4, "off", result=np.zeros(2)),
            "ok": candidate(clock, 2e-3, "ok", result=np.ones(2)),
        },
    )
    tuner = Tuner(
        "t", client.device_id, AutotuneConfig(checks=True), reference=lambda x: np.ones(2)
    )
    decision = tuner.tune(2, tunables, ([0, 0],), client)
    assert [c.passed for c in decision.checks] == [False, True]
    assert decision.fastest_name == "ok"


def test_an_in_place_candidate_corrupts_neither_the_callers_arrays_nor_another_candidates(client):
    seen = []

    def in_place(x):
        client.clock.advance(1e-4)
        x += 1
        return x

    def reader(x):
        client.clock.advance(2e-3)
        seen.append(x.copy())
        return x

    x = np.zeros(8)
    tunables = TunableSet.of(len, {"in_place": in_place, "reader": reader})
    Tuner("t", client.device_id).tune(8, tunables, (x,), client)
    assert np.all(x == 0)
    assert seen and all(np.all(s == 0) for s in seen)


def test_each_decision_is_recorded(client, tmp_path):
    path = tmp_path / "records.jsonl"
    tunables = make(client.clock, slow=3e-3, fast=1e-3)
    tuner = Tuner("t", client.device_id, recorder=Recorder(path))
    tuner.execute(tunables, ([1],), client)
    tuner.execute(tunables, ([1, 2],), client)
    records = read_records(path)
    assert [(r.key, r.fastest_name) for r in records] == [(1, "fast"), (2, "fast")]
    assert records[0].checksum == tunables.checksum


def test_two_threads_meeting_a_new_key_tune_it_once():
    started = threading.Barrier(2)
    tunings = []

    class SlowClient(FakeClient):
        def time(self, fn, inputs):
            time.sleep(0.01)  # long enough for the other thread to arrive while pending
            return super().time(fn, inputs)

    client = SlowClient()
    tunables = make(client.clock, a=1e-3, b=2e-3)
    tuner = Tuner("t", client.device_id)
    original = tuner.tune

    def counting_tune(*args, **kwargs):
        tunings.append(1)
        return original(*args, **kwargs)

    tuner.tune = counting_tune
    out = []

    def work():
        started.wait()
        out.append(tuner.execute(tunables, ([1],), client))

    threads = [threading.Thread(target=work) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert out == ["a", "a"]
    assert len(tunings) == 1


def test_concurrent_tuners_on_one_file_lose_no_entry(client, tmp_path):
    path = tmp_path / "t.json"

    def work(n):
        c = FakeClient()
        Tuner("t", c.device_id, persistent=PersistentCache(path)).execute(
            make(c.clock, a=1e-3, b=2e-3), ([0] * n,), c
        )

    threads = [threading.Thread(target=work, args=(n,)) for n in range(1, 9)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(PersistentCache(path).load()) == 8


def test_a_candidate_calling_its_own_tuner_while_tuned_runs_the_first_planned_candidate(client):
    tuner = Tuner("t", client.device_id)
    inner = []

    def reentrant(x):
        client.clock.advance(2e-3)
        inner.append(tuner.execute(tunables, (x,), client))
        return "reentrant"

    def plain(x):
        client.clock.advance(1e-3)
        return "plain"

    tunables = TunableSet.of(by_size, {"plain": plain, "reentrant": reentrant})
    assert tuner.execute(tunables, ([1],), client) == "plain"
    assert inner and set(inner) == {"plain"}


def test_a_set_whose_plan_skips_every_candidate_has_no_valid_kernel(client):
    never = TuneGroup("never", lambda key: -1)
    tunables = (
        TunableSet(by_size)
        .with_(Tunable("a", candidate(client.clock, 1e-3, "a", "a")).group(never, lambda k: 0))
        .with_(Tunable("b", candidate(client.clock, 1e-3, "b", "b")).group(never, lambda k: 0))
    )
    tuner = Tuner("t", client.device_id)
    decision = tuner.tune(1, tunables, ([1],), client)
    assert (decision.fastest_index, decision.measured) == (0, False)
    assert [r.message for r in decision.results.values()] == [
        "not reached: no group prioritized for this key holds it"
    ] * 2
    with pytest.raises(AutotuneError, match="no candidate succeeded"):
        tuner.execute(tunables, ([1],), client)


@pytest.mark.parametrize(("warm", "slow_calls"), [(False, 2), (True, 1)])
def test_a_client_that_says_its_first_timing_is_warm_lets_a_hopeless_warm_up_end_a_candidate(
    warm: bool, slow_calls: int
) -> None:
    class Client(FakeClient):
        warm_first_sample = warm

    client = Client()
    tunables = make(client.clock, fast=43e-6, hopeless=17e-3, other=50e-6)
    decision = Tuner("t", client.device_id).tune(1, tunables, ([1],), client)
    assert decision.fastest_name == "fast"
    assert client.timed.count("hopeless") == slow_calls


class WarmClient(FakeClient):
    """A client whose first timing of a call is warm, with a hopeless margin of its own and
    its first timing of a call of 2 ms or more kept as a sample (as the CUDA client)."""

    warm_first_sample = True
    hopeless_factor = 4.0
    long_call = 2e-3


@pytest.mark.parametrize(
    ("client_type", "config", "naive_calls"),
    [
        (WarmClient, AutotuneConfig(), 1),
        (FakeClient, AutotuneConfig(), 4),
        (WarmClient, AutotuneConfig(bench=BenchConfig(hopeless_factor=10)), 3),
        (WarmClient, AutotuneConfig.from_env({"PYTEST_AUTOTUNE_HOPELESS_FACTOR": "10"}), 3),
    ],
    ids=["warm-client-default", "cold-client", "set-in-code", "set-in-environment"],
)
def test_the_clients_hopeless_factor_applies_where_its_first_sample_is_warm_unless_one_is_set(
    client_type: type[FakeClient], config: AutotuneConfig, naive_calls: int
) -> None:
    # matmul: cuBLAS 2.7 ms, naive 25.5 ms (9.4x). The client's margin of 4 cuts naive on
    # its first call; the default margin of 10, or one set, samples it until elimination
    # (a warm client keeping its long warm-up as its first sample: one call fewer).
    client = client_type()
    tunables = make(client.clock, cublas=2.7e-3, reg4x4=5.8e-3, naive=25.5e-3)
    decision = Tuner("t", client.device_id, config).tune(1, tunables, ([1],), client)
    assert decision.fastest_name == "cublas"
    assert client.timed.count("naive") == naive_calls


class WarmClientOfNoLongCall(WarmClient):
    long_call = None


@pytest.mark.parametrize(("client_type", "calls"), [(WarmClient, 1), (WarmClientOfNoLongCall, 2)])
def test_a_long_first_candidate_costs_one_call_on_a_client_that_keeps_long_first_timings(
    client_type: type[FakeClient], calls: int
) -> None:
    # The sum family's atomic_naive (0.47 s) first: no leader yet, yet one call, where a
    # client without `long_call` pays its warm-up and a first sample.
    client = client_type()
    tunables = make(client.clock, atomic_naive=0.47, float4=0.25e-3, tree=0.32e-3)
    decision = Tuner("t", client.device_id).tune(1, tunables, ([1],), client)
    assert decision.fastest_name == "float4"
    assert client.timed.count("atomic_naive") == calls
