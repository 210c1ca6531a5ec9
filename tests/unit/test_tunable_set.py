"""`TunableSet`: the builder, the checksum of its candidate list, and the default input copies."""

import hashlib

import numpy as np
import pytest

from pytest_autotune.tune.bounds import Bounds, Thresholds, Work, calculate_bounds
from pytest_autotune.tune.tunable import Tunable, TuneGroup
from pytest_autotune.tune.tunable_set import (
    CloneInputGenerator,
    TunableSet,
    checksum_of,
    clone_value,
)
from tests.fakes import FakeClient


def by_size(x):
    return len(x)


def first(x):
    return "first"


def second(x):
    return "second"


def third(x):
    return "third"


# -- the builder ----------------------------------------------------------------------------


def test_an_empty_set_has_no_candidates():
    tunables = TunableSet(by_size)
    assert len(tunables) == 0
    assert tunables.names == ()
    assert tunables.fns == ()


def test_with_adds_candidates_in_order():
    tunables = TunableSet(by_size).with_(Tunable("a", first)).with_(Tunable("b", second))
    assert tunables.names == ("a", "b")
    assert tunables.fns == (first, second)
    assert len(tunables) == 2


def test_with_takes_a_name_and_function_pair():
    tunables = TunableSet(by_size).with_(("a", first))
    assert tunables.tunables == (Tunable("a", first),)


def test_with_keeps_a_tunables_groups():
    big = TuneGroup("big", lambda key: 1)
    tunable = Tunable("a", first).group(big, lambda key: 2)
    assert TunableSet(by_size).with_(tunable).tunables[0].groups == tunable.groups


def test_the_builder_returns_new_sets_and_leaves_the_old_one_as_it_was():
    base = TunableSet(by_size).with_(("a", first))
    grown = base.with_(("b", second))
    short = grown.with_short_circuit(3)
    assert base.names == ("a",)
    assert grown.names == ("a", "b")
    assert grown.short_circuit_samples is None
    assert short.short_circuit_samples == 3
    assert short.names == ("a", "b")


def test_the_builder_keeps_the_key_and_input_generators():
    def inputs(key, inputs):
        return inputs

    tunables = TunableSet(by_size, input_gen=inputs).with_(("a", first)).with_short_circuit(1)
    assert tunables.key_gen is by_size
    assert tunables.input_gen is inputs


def test_of_builds_ungrouped_candidates_from_a_mapping_in_its_order():
    tunables = TunableSet.of(by_size, {"c": third, "a": first, "b": second})
    assert tunables.names == ("c", "a", "b")
    assert all(t.groups == () for t in tunables.tunables)


def test_a_set_without_bounds_has_none():
    assert TunableSet(by_size).bounds(2, ([1, 2],), FakeClient()) is None


def test_with_bounds_calls_the_generator_with_key_inputs_and_client():
    client = FakeClient()
    seen = []
    made = Bounds(())

    def bounds_gen(key, inputs, client):
        seen.append((key, inputs, client))
        return made

    tunables = TunableSet(by_size).with_bounds(bounds_gen)
    assert tunables.bounds(2, ([1, 2],), client) is made
    assert seen == [(2, ([1, 2],), client)]


def test_with_work_bounds_the_work_by_the_clients_peaks_and_launch_overhead():
    client = FakeClient()  # 1e9 bytes/s and 1e9 fp32 ops/s
    client.launch_overhead = 2e-6

    def work(x):
        return Work(compute_ops=len(x) * 1e6, bytes=len(x) * 4e6)

    tunables = TunableSet(by_size).with_work(work, Thresholds(compute=0.5, memory=0.8))
    bounds = tunables.bounds(3, ([0, 0, 0],), client)
    assert bounds == calculate_bounds(
        Work(3e6, 12e6), Thresholds(compute=0.5, memory=0.8), 1e9, 1e9, 2e-6, "DRAM"
    )
    # memory binds: 12e6 B / 1e9 B/s / 0.8 = 15 ms, over compute's 3e6 / 1e9 / 0.5 = 6 ms.
    assert bounds.binding_resource() == "memory"
    assert bounds.time_limit() == pytest.approx(15e-3 + 2e-6, rel=1e-12)


def test_with_work_defaults_to_the_full_roof():
    client = FakeClient()
    tunables = TunableSet(by_size).with_work(lambda x: Work(bytes=1e6))
    assert tunables.bounds(1, ([0],), client).time_limit() == pytest.approx(1e-3, rel=1e-12)


def test_with_short_circuit_sets_the_samples_under_the_limit_that_end_a_batch():
    assert TunableSet(by_size).with_short_circuit(1).short_circuit_samples == 1


@pytest.mark.parametrize("samples", [0, -1])
def test_a_short_circuit_of_fewer_than_one_sample_is_refused(samples):
    with pytest.raises(
        ValueError,
        match=(
            f"with_short_circuit: expected True, False or a number of samples >= 1, got {samples}"
        ),
    ):
        TunableSet(by_size).with_short_circuit(samples)


# -- names and checksum ---------------------------------------------------------------------


def test_duplicate_candidate_names_are_refused_and_named():
    with pytest.raises(ValueError, match=r"candidate names must be unique, repeated: \['a'\]"):
        TunableSet(by_size).with_(("a", first)).with_(("b", second)).with_(("a", third))


def test_every_repeated_name_is_listed_once_in_order():
    with pytest.raises(ValueError, match=r"repeated: \['a', 'b'\]"):
        TunableSet(
            by_size,
            tunables=(
                Tunable("b", first),
                Tunable("a", first),
                Tunable("b", second),
                Tunable("a", third),
            ),
        )


def test_the_checksum_depends_on_the_names():
    one = TunableSet.of(by_size, {"a": first, "b": second})
    renamed = TunableSet.of(by_size, {"a": first, "c": second})
    assert one.checksum != renamed.checksum


def test_the_checksum_depends_on_the_order():
    one = TunableSet.of(by_size, {"a": first, "b": second})
    swapped = TunableSet.of(by_size, {"b": second, "a": first})
    assert one.checksum != swapped.checksum


def test_the_checksum_depends_on_the_count():
    one = TunableSet.of(by_size, {"a": first, "b": second})
    more = one.with_(("c", third))
    assert one.checksum != more.checksum


def test_the_checksum_does_not_depend_on_the_functions_or_generators():
    one = TunableSet.of(by_size, {"a": first, "b": second})
    other = TunableSet.of(len, {"a": third, "b": first}).with_short_circuit(2)
    assert one.checksum == other.checksum


def test_names_that_join_alike_still_have_different_checksums():
    assert checksum_of(("ab", "c")) != checksum_of(("a", "bc"))


def test_the_checksum_is_sixteen_hex_digits_and_the_same_in_every_process():
    # sha256 of "a\nb", not Python's salted hash: a cache file is read by other processes.
    expected = hashlib.sha256(b"a\nb").hexdigest()[:16]
    assert checksum_of(("a", "b")) == expected
    assert TunableSet.of(by_size, {"a": first, "b": second}).checksum == expected


# -- CloneInputGenerator --------------------------------------------------------------------


def test_cloned_arrays_are_copies_with_the_same_values():
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    (copy,) = CloneInputGenerator()(None, (x,))
    assert copy is not x
    assert not np.shares_memory(copy, x)
    np.testing.assert_array_equal(copy, x)
    assert copy.dtype == x.dtype


def test_a_candidate_writing_into_its_copy_leaves_the_callers_array_alone():
    x = np.ones(4)
    (copy,) = CloneInputGenerator()(None, (x,))
    copy *= 3
    np.testing.assert_array_equal(x, np.ones(4))


def test_arrays_nested_in_tuples_lists_and_dicts_are_copied():
    a, b, c = np.zeros(2), np.ones(3), np.full(1, 7.0)
    inputs = ((a, [b, {"c": c, "n": 5}]),)
    ((a2, (b2, d2)),) = CloneInputGenerator()(None, inputs)
    assert isinstance(inputs[0][1], list)
    assert type(d2) is dict
    for copy, original in ((a2, a), (b2, b), (d2["c"], c)):
        assert copy is not original
        assert not np.shares_memory(copy, original)
        np.testing.assert_array_equal(copy, original)
    assert d2["n"] == 5


def test_cloning_keeps_the_kinds_of_containers():
    (cloned,) = CloneInputGenerator()(None, (([1], (2,), {"k": 3}),))
    assert type(cloned) is tuple
    assert [type(v) for v in cloned] == [list, tuple, dict]
    assert cloned == ([1], (2,), {"k": 3})


def test_containers_are_rebuilt_so_the_callers_lists_are_not_shared():
    items = [np.zeros(1)]
    (cloned,) = CloneInputGenerator()(None, (items,))
    cloned.append("extra")
    assert len(items) == 1


def test_scalars_and_other_objects_are_shared_not_copied():
    scalar = np.float32(2.5)
    marker = object()
    big = 10**30
    inputs = (3, 2.5, "text", None, marker, big, scalar)
    cloned = CloneInputGenerator()(None, inputs)
    assert all(c is o for c, o in zip(cloned, inputs, strict=True) if o is not scalar)
    assert cloned[-1] == scalar


def test_the_clone_is_a_tuple_of_as_many_inputs():
    cloned = CloneInputGenerator()("key", (np.zeros(1), 2))
    assert type(cloned) is tuple
    assert len(cloned) == 2


def test_the_default_input_generator_clones():
    assert isinstance(TunableSet(by_size).input_gen, CloneInputGenerator)


def test_a_clone_copies_the_arrays_an_object_holds_and_shares_other_objects() -> None:
    import numpy as np

    class State:
        def __init__(self) -> None:
            self.buffer = np.zeros(3)
            self.label = "s"

    class Plain:
        def __init__(self) -> None:
            self.size = 3

    state, plain = State(), Plain()
    cloned_state, cloned_plain = clone_value((state, plain))
    cloned_state.buffer[:] = 1.0
    assert state.buffer.sum() == 0.0
    assert cloned_state is not state and cloned_state.label == "s"
    assert cloned_plain is plain


def _one(x):
    return x


def _two(x, y):
    return x


def _defaulted(x, y=1):
    return x


def _star(*xs):
    return xs


def _keyword(x, *, scale):
    return x


@pytest.mark.parametrize(
    ("key_gen", "unary"),
    [(_one, True), (_two, False), (_defaulted, False), (_star, False), (_keyword, False),
     (lambda x: x, True), (len, True), (max, False)],
)  # fmt: skip
def test_a_set_knows_whether_its_key_generator_takes_exactly_one_input(key_gen, unary):
    assert TunableSet.of(key_gen, {"a": _one}).unary is unary
