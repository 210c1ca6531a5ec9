"""`LocalTuner` as the seed's: one set per init function, and no valid kernel is an error."""

import pytest

from pytest_autotune.tune.config import AutotuneConfig
from pytest_autotune.tune.errors import AutotuneError, AutotuneErrorKind, AutotuneSkip
from pytest_autotune.tune.local import LocalTuner
from pytest_autotune.tune.tunable_set import TunableSet
from tests.fakes import FakeClient, candidate, failing


def test_init_keeps_one_set_per_init_function():
    tuner = LocalTuner("t")

    def make_a():
        return TunableSet.of(len, {"a": len})

    def make_b():
        return TunableSet.of(len, {"b": len})

    a = tuner.init(make_a)
    b = tuner.init(make_b)
    assert (a.names, b.names) == (("a",), ("b",))
    assert tuner.init(make_a) is a
    assert tuner.init(make_b) is b


def test_execute_raises_no_valid_kernel_found_naming_each_candidates_error():
    client = FakeClient()
    local = LocalTuner("t", AutotuneConfig(disable_cache=True))

    def declines(x):
        raise AutotuneSkip("too small")

    tunables = TunableSet.of(len, {"boom": failing("boom"), "picky": declines})
    with pytest.raises(AutotuneError) as raised:
        local.execute(client.device_id, client, tunables, ([1],))
    assert raised.value.kind is AutotuneErrorKind.NO_VALID_KERNEL_FOUND
    assert "boom: unknown: RuntimeError: boom exploded" in str(raised.value)
    assert "picky: skip: too small" in str(raised.value)


def test_the_fallback_is_never_a_candidate_that_declined_or_failed():
    client = FakeClient()
    local = LocalTuner("t", AutotuneConfig(disable_cache=True))
    called = []

    def declines(x):
        called.append("picky")
        raise AutotuneSkip("too small")

    untimed = candidate(client.clock, 0.0, "untimed", result="untimed")
    tunables = TunableSet.of(len, {"picky": declines, "boom": failing("boom"), "untimed": untimed})
    assert local.execute(client.device_id, client, tunables, ([1],)) == "untimed"
    called.clear()
    assert local.execute(client.device_id, client, tunables, ([2],)) == "untimed"
    assert called == []


def test_a_hit_of_several_inputs_calls_the_winner_with_all_of_them():
    client = FakeClient()
    local = LocalTuner("t", AutotuneConfig(disable_cache=True))
    seen = []

    def fast(a, b, c):
        client.clock.advance(1e-3)
        seen.append((a, b, c))
        return "fast"

    def key(a, b, c):
        return len(a) + b + c

    tunables = TunableSet.of(key, {"fast": fast, "slow": candidate(client.clock, 2e-3, "slow")})
    local.execute(client.device_id, client, tunables, ([1], 2, 3))
    seen.clear()
    assert local.execute(client.device_id, client, tunables, ([9], 2, 3)) == "fast"
    assert seen == [([9], 2, 3)]


@pytest.mark.parametrize("bound", [False, True])
def test_a_key_another_set_of_the_tuner_decided_runs_this_sets_candidate_at_that_index(bound):
    # The seed's hit is an index resolved in the set the call passes (`fastest(index)`):
    # two operations sharing a tuner and a key may share a decision, never a function.
    client = FakeClient()
    local = LocalTuner("t", AutotuneConfig(disable_cache=True))

    def make_sum():
        return TunableSet.of(
            len,
            {
                "slow_sum": candidate(client.clock, 2e-3, result="slow_sum"),
                "fast_sum": candidate(client.clock, 1e-3, result="fast_sum"),
            },
        )

    def make_max():
        return TunableSet.of(len, {"max_a": lambda x: "max_a", "max_b": lambda x: "max_b"})

    sums, maxes = local.init(make_sum), local.init(make_max)
    if bound:
        run_sum = local.bind(client.device_id, client, sums)
        run_max = local.bind(client.device_id, client, maxes)
    else:

        def run_sum(x):
            return local.execute(client.device_id, client, sums, (x,))

        def run_max(x):
            return local.execute(client.device_id, client, maxes, (x,))

    assert run_sum([1, 2]) == "fast_sum"
    assert run_max([1, 2]) == "max_b"
    assert run_max([3, 4]) == "max_b"
    assert run_sum([3, 4]) == "fast_sum"


@pytest.mark.parametrize("bound", [False, True])
def test_a_key_decided_at_an_index_a_shorter_set_lacks_is_named_not_an_index_error(bound):
    # The seed panics there; a library's caller gets what to do instead of IndexError.
    client = FakeClient()
    local = LocalTuner("t", AutotuneConfig(disable_cache=True))
    three = local.init(
        lambda: TunableSet.of(
            len,
            {
                "a": candidate(client.clock, 3e-3, result="a"),
                "b": candidate(client.clock, 2e-3, result="b"),
                "c": candidate(client.clock, 1e-3, result="c"),
            },
        )
    )
    one = local.init(lambda: TunableSet.of(len, {"only": lambda x: "only"}))
    assert local.execute(client.device_id, client, three, ([1, 2],)) == "c"
    run = (
        local.bind(client.device_id, client, one)
        if bound
        else (lambda x: local.execute(client.device_id, client, one, (x,)))
    )
    with pytest.raises(
        IndexError, match=r"key 2 was decided for a set with a candidate at index 2"
    ):
        run([1, 2])
