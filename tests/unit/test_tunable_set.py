"""`TunableSet`: the builder, the checksum of its candidate list, and the default input copies."""

import collections
import dataclasses
import functools
import hashlib
import re
from typing import Any

import numpy as np
import pytest

from pytest_autotune.tune.bounds import Bounds, Thresholds, Work, calculate_bounds
from pytest_autotune.tune.config import BenchConfig
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
    # A NumPy integer (a count read from an array's shape) was refused as no number.
    samples = TunableSet(by_size).with_short_circuit(np.int64(3)).short_circuit_samples
    assert samples == 3 and type(samples) is int


@pytest.mark.parametrize("samples", [1.5, "3", None])
def test_a_short_circuit_of_no_whole_number_is_refused(samples):
    with pytest.raises(ValueError, match="expected True, False or a number of samples >= 1"):
        TunableSet(by_size).with_short_circuit(samples)


def test_with_short_circuit_true_after_a_number_goes_back_to_the_configs_samples():
    # The builder's last call wins, as `True` after `False` turns it back on: `True` is the
    # config's samples, as documented, not the number an earlier call gave.
    tunables = TunableSet(by_size).with_short_circuit(3).with_short_circuit(True)
    assert tunables.short_circuit_for(BenchConfig(short_circuit_samples=2)) == 2


@pytest.mark.parametrize("samples", [0, -1])
def test_a_short_circuit_of_fewer_than_one_sample_is_refused(samples):
    with pytest.raises(
        ValueError,
        match=(
            f"with_short_circuit: expected True, False or a number of samples >= 1, got {samples}"
        ),
    ):
        TunableSet(by_size).with_short_circuit(samples)


# -- misuse of the builders ----------------------------------------------------------------


def test_a_candidate_that_is_not_callable_is_refused_when_built_and_named():
    with pytest.raises(TypeError, match=r"Tunable 'a': expected a callable, got int 5"):
        Tunable("a", 5)
    with pytest.raises(TypeError, match=r"Tunable 'a': expected a callable, got int 5"):
        TunableSet.of(by_size, {"a": 5, "b": first})
    with pytest.raises(TypeError, match=r"Tunable 'a': expected a callable"):
        TunableSet(by_size).with_(("a", "not a function"))


async def _sum_later(x):
    return sum(x)


def _sums(x):
    yield sum(x)


@pytest.mark.parametrize(
    ("fn", "what"),
    [
        (_sum_later, "an `async def` function"),
        (functools.partial(_sum_later), "an `async def` function"),
        (_sums, "a generator function"),
    ],
)
def test_a_candidate_whose_call_runs_nothing_is_refused_when_built_and_named(fn, what):
    # Called as fn(*inputs) and never awaited or iterated, it ran nothing: timed, it was
    # all but free and won; checked, it was a coroutine every other candidate "differed" from.
    with pytest.raises(TypeError, match=rf"Tunable 'later': {re.escape(what)}"):
        Tunable("later", fn)


@pytest.mark.parametrize("name", ["", 3, None])
def test_a_candidate_name_must_be_a_non_empty_string(name):
    with pytest.raises(TypeError, match="Tunable: the name must be a non-empty str"):
        Tunable(name, first)


def test_a_candidate_name_with_a_line_break_is_refused_as_its_checksum_would_be_anothers():
    # The checksum joins the names with line breaks: ["a\nb", "c"] and ["a", "b\nc"] were
    # one candidate list to the cache, and a winner's index was served to the other set.
    with pytest.raises(ValueError, match=r"^Tunable: the name 'a\\nb' holds a control character"):
        Tunable("a\nb", first)
    with pytest.raises(ValueError, match=r"^TuneGroup: the name 'x\\ty' holds a control character"):
        TuneGroup("x\ty", lambda key: 0)


def test_with_refuses_what_is_neither_a_tunable_nor_a_pair():
    with pytest.raises(TypeError, match=r"a candidate must be a Tunable.* got function"):
        TunableSet(by_size).with_(first)


def test_a_set_refuses_candidates_that_are_not_tunables():
    with pytest.raises(TypeError, match=r"a candidate must be a Tunable.* got function"):
        TunableSet(by_size, tunables=(first,))


def test_a_set_takes_name_fn_pairs_as_its_error_says_it_does():
    # Refused as "must be a Tunable(name, fn) or a (name, fn) pair, got tuple".
    tunables = TunableSet(by_size, tunables=[("a", first), Tunable("b", first)])
    assert tunables.names == ("a", "b")


def test_a_set_given_a_list_of_candidates_holds_them_as_a_tuple():
    tunables = TunableSet(by_size, tunables=[Tunable("a", first)])
    assert tunables.tunables == (Tunable("a", first),)
    assert tunables.with_(("b", second)).names == ("a", "b")


def test_of_refuses_candidates_that_are_not_a_mapping():
    with pytest.raises(TypeError, match="candidates must be a mapping of name -> function"):
        TunableSet.of(by_size, [first, second])


def test_generators_that_are_not_callable_are_refused():
    with pytest.raises(TypeError, match="TunableSet: key generator: expected a callable"):
        TunableSet(5)
    with pytest.raises(TypeError, match="TunableSet: input generator: expected a callable"):
        TunableSet(by_size, input_gen=None)


def test_an_input_generator_that_cannot_take_the_key_and_the_inputs_is_refused_by_name():
    # It is called as input_gen(key, inputs): one written as `lambda inputs: ...` failed at
    # every candidate's first call, each recorded as that candidate's TypeError, and the key
    # was remembered as one no candidate can run.
    with pytest.raises(TypeError, match=r"TunableSet: the input generator is called as"):
        TunableSet(by_size, lambda inputs: inputs)
    with pytest.raises(TypeError, match=r"input_gen\(key, inputs\)"):
        TunableSet(by_size, input_gen=lambda key, inputs, extra: inputs)
    # What can take two arguments stays accepted, a signature that cannot be read too.
    TunableSet(by_size, lambda key, inputs, extra=None: inputs)
    TunableSet(by_size, lambda *args: args[1])
    TunableSet(by_size, CloneInputGenerator())
    TunableSet(by_size, max)


def test_the_clone_input_generator_given_as_the_seed_writes_it_clones_the_inputs():
    # The seed's `TunableSet::new(key_gen, CloneInputGenerator)` passes its unit struct;
    # ported as written, the class was refused as an input generator it cannot call.
    tunables = TunableSet(by_size, CloneInputGenerator)
    assert isinstance(tunables.input_gen, CloneInputGenerator)
    x = np.arange(3.0)
    (copy,) = tunables.generate_inputs(3, (x,))
    assert copy is not x
    assert np.array_equal(copy, x)


def test_a_bounds_generator_without_the_client_is_refused_by_name():
    # The seed's bounds generator takes the key and the inputs; ours also the client whose
    # peaks the roofline needs. One ported as `lambda key, inputs: ...` raised "takes 2
    # positional arguments but 3 were given" from inside the tuner at the first new key.
    with pytest.raises(TypeError, match=r"bounds_gen\(key, inputs, client\)"):
        TunableSet(by_size).with_bounds(lambda key, inputs: None)
    with pytest.raises(TypeError, match=r"bounds_gen\(key, inputs, client\)"):
        TunableSet(by_size, bounds_gen=lambda key, inputs: None)
    TunableSet(by_size).with_bounds(lambda key, inputs, client: None)


def test_bounds_or_a_work_model_of_the_wrong_type_are_named_with_their_key():
    # They failed in the tuner, on `.to_json` of an int or `.footprint` of a tuple, naming
    # neither the generator nor the key.
    client = FakeClient()
    wrong = TunableSet(by_size).with_bounds(lambda key, inputs, client: 5)
    with pytest.raises(TypeError, match=r"bounds generator of key 2 returned int 5, not Bounds"):
        wrong.bounds(2, ([1, 2],), client)
    pair = TunableSet(by_size).with_work(lambda x: (len(x), 4 * len(x)))
    with pytest.raises(TypeError, match=r"work model of key 2 returned tuple \(2, 8\), not a Work"):
        pair.bounds(2, ([1, 2],), client)


def test_a_work_model_written_as_the_seeds_bounds_generator_is_refused_by_name():
    # `with_work(lambda key, inputs: ...)`, ported from the seed's bounds generator, raised
    # "<lambda>() missing 1 required positional argument" from inside the tuner.
    client = FakeClient()
    seed_like = TunableSet(by_size).with_work(lambda key, inputs: Work(len(inputs), 8))
    with pytest.raises(TypeError, match=r"the work model is called as work\(\*inputs\)"):
        seed_like.bounds(2, ([1, 2],), client)
    per_input = TunableSet(by_size).with_work(lambda x: Work(len(x), 8 * len(x)))
    assert per_input.bounds(2, ([1, 2],), client) is not None


def test_group_priorities_that_are_not_callable_are_refused_and_named():
    with pytest.raises(TypeError, match="TuneGroup 'big': priority: expected a callable"):
        TuneGroup("big", 2)
    big = TuneGroup("big", lambda key: 2)
    with pytest.raises(TypeError, match="Tunable 'a': priority in group 'big': expected a"):
        Tunable("a", first).group(big, 1)
    with pytest.raises(TypeError, match=r"group\(\) takes a TuneGroup, got str"):
        Tunable("a", first).group("big", lambda key: 1)


# -- names and checksum ---------------------------------------------------------------------


def test_duplicate_candidate_names_are_refused_and_named():
    with pytest.raises(ValueError, match=r"candidate names must be unique, repeated: \['a'\]"):
        TunableSet(by_size).with_(("a", first)).with_(("b", second)).with_(("a", third))


def test_a_set_that_fails_its_checks_still_shows_in_a_traceback():
    # pytest shows `self` in the frame that raised: the set's repr read `names`, not set
    # yet, and printed "<[AttributeError(...) raised in repr()] TunableSet object>".
    with pytest.raises(ValueError) as info:
        TunableSet(by_size).with_(("a", first)).with_(("a", third))
    half_built = [
        entry.frame.f_locals["self"]
        for entry in info.traceback
        if isinstance(entry.frame.f_locals.get("self"), TunableSet)
    ]
    # The innermost is the set being built (the outer ones, the set `with_` was called on).
    assert half_built and "names=()" in repr(half_built[-1])


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


def test_a_copy_keeps_the_memory_layout_of_the_callers_array():
    # A Fortran-ordered input was copied in C order: candidates were timed (and checked) on a
    # layout the caller never passes, so a column-wise kernel could win a tuning it loses in
    # use, and one that needs Fortran order (a BLAS or LAPACK call) failed only in its test.
    x = np.asfortranarray(np.arange(12, dtype=np.float32).reshape(3, 4))
    transposed = np.arange(12.0).reshape(3, 4).T
    copy, copy_of_view = CloneInputGenerator()(None, (x, transposed))
    assert copy.flags.f_contiguous
    assert copy.strides == x.strides
    assert copy_of_view.strides == transposed.strides
    np.testing.assert_array_equal(copy, x)


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


def test_an_array_type_given_as_an_input_is_shared_not_copied():
    # `parametrize("dtype", [np.float32, np.float64])` hands the class itself: it has
    # `__array__`, `copy` and `shape` as unbound attributes, and calling `np.float32.copy()`
    # failed every candidate with "unbound method generic.copy() needs an argument".
    inputs = (np.float32, np.float64, np.ndarray, np.dtype("float32"))
    cloned = CloneInputGenerator()(None, inputs)
    assert all(c is o for c, o in zip(cloned, inputs, strict=True))


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


def test_a_clone_copies_the_arrays_an_object_with_slots_holds() -> None:
    # A state class declared with __slots__ (to keep it small) has no __dict__: it was
    # shared, and a candidate writing into its buffer wrote into the caller's, and into
    # every later candidate's input, at each call of a tuning.
    import numpy as np

    class Base:
        __slots__ = ("buffer",)

    class State(Base):
        __slots__ = ("label", "unset")

        def __init__(self) -> None:
            self.buffer = np.zeros(3)
            self.label = "s"

    state = State()
    (cloned,) = CloneInputGenerator()(None, (state,))
    cloned.buffer[:] = 1.0
    assert state.buffer.sum() == 0.0
    assert type(cloned) is State and cloned.label == "s"
    assert not hasattr(cloned, "unset")


def test_an_array_given_twice_is_copied_once_and_stays_one_array() -> None:
    # `op(x, x)` (an in-place candidate whose output is its input, `np.add(x, y, out=y)`)
    # was given two unrelated copies: its write no longer reached its other argument, and
    # every call held twice the memory of its inputs.
    import numpy as np

    x = np.arange(4.0)

    class State:
        def __init__(self) -> None:
            self.buffer = x

    a, b, state = CloneInputGenerator()(None, (x, x, State()))
    assert a is b and a is not x
    assert state.buffer is a
    np.add(a, b, out=b)
    assert a.tolist() == [0.0, 2.0, 4.0, 6.0] and x.tolist() == [0.0, 1.0, 2.0, 3.0]


def test_an_object_met_first_below_the_depth_limit_is_still_copied_nearer_the_top() -> None:
    import numpy as np

    class Holder:
        def __init__(self, inner: object) -> None:
            self.inner = inner

    b = Holder(np.zeros(3))
    a = Holder(Holder(Holder(b)))
    _, cloned_b = clone_value((a, b))
    assert cloned_b is not b and cloned_b.inner is not b.inner


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


def test_a_named_tuple_is_cloned_as_itself():
    # It was cloned as a plain tuple: a candidate reading `params.scale` of a fixture that
    # returns a NamedTuple raised AttributeError, and a NamedTuple output with its own
    # `autotune_compare`, kept as the reference's, lost the method.
    from typing import NamedTuple

    class Params(NamedTuple):
        values: np.ndarray
        scale: float

    params = Params(np.ones(2), 2.0)
    cloned = clone_value(params)
    assert type(cloned) is Params
    assert cloned.scale == 2.0
    assert cloned.values is not params.values
    assert (cloned.values == params.values).all()


def test_a_list_of_plain_numbers_is_copied_without_visiting_each_number(monkeypatch) -> None:
    # Each number went through the copy's every rule, some 3.5 us: a 100 000-float list,
    # as an input, or as the reference's output kept for the checks, took 0.35 s a copy.
    from pytest_autotune.tune import clone as clone_module

    visits = 0
    clone = clone_module._clone

    def counting(*args: Any) -> Any:
        nonlocal visits
        visits += 1
        return clone(*args)

    monkeypatch.setattr(clone_module, "_clone", counting)
    values = [0.5 * i for i in range(1000)] + [1, "a", None, True]
    cloned = clone_value(values)
    assert cloned == values and cloned is not values  # a new list: appending to it is safe
    numbers = tuple(values)
    assert clone_value(numbers) == numbers
    assert visits < 10
    # A list holding an array still has the array copied.
    holder = [1.0, np.zeros(2)]
    assert clone_value(holder)[1] is not holder[1]


def test_a_deque_subclass_with_a_constructor_of_its_own_is_shared_not_refused() -> None:
    # Copied as `type(d)(items, maxlen=...)`, a subclass whose constructor takes other
    # arguments failed every tuning of its set with a TypeError; before deques were
    # copied it was shared, as any object the copy cannot make.
    class Window(collections.deque):  # type: ignore[type-arg]
        def __init__(self, size: int) -> None:
            super().__init__(maxlen=size)

    window = Window(3)
    window.extend([1, 2])
    assert CloneInputGenerator()(None, (window,))[0] is window
    plain = collections.deque([1, 2], maxlen=3)
    copied = CloneInputGenerator()(None, (plain,))[0]
    assert copied == plain and copied is not plain and copied.maxlen == 3


def test_a_work_given_for_the_work_model_is_refused_where_the_set_is_built():
    # It was taken, and the first tuning failed with "'Work' object is not callable".
    with pytest.raises(TypeError, match=r"with_work: work is a function of the inputs"):
        TunableSet(by_size).with_work(Work(1, 8))
    with pytest.raises(TypeError, match=r"with_work: work: expected a callable, got int 3"):
        TunableSet(by_size).with_work(3)


def test_a_fraction_given_for_the_thresholds_is_refused_where_the_set_is_built():
    # It was taken, and the first tuning failed with "'float' object has no attribute
    # 'compute'".
    with pytest.raises(TypeError, match=r"thresholds must be Thresholds\(compute, memory\)"):
        TunableSet(by_size).with_work(lambda x: Work(len(x), 8), 0.5)


@pytest.mark.parametrize("tunables", [None, Tunable("a", len)], ids=["none", "one-tunable"])
def test_tunables_that_are_no_list_are_refused_with_how_to_build_a_set(tunables):
    # They failed as "'Tunable' object is not iterable" (or 'NoneType'), from inside the set.
    with pytest.raises(TypeError, match="TunableSet: tunables must be a list of Tunable"):
        TunableSet(len, tunables=tunables)


def test_a_set_built_through_its_type_parameter_is_a_set_on_every_python():
    # `TunableSet[np.float32](key_gen)` raised "super(type, obj): obj must be an instance or
    # subtype of type" before Python 3.13: typing's `__orig_class__` met the frozen, slotted
    # dataclass's own `__setattr__`.
    tunables = TunableSet[int](len).with_(("a", len))
    assert tunables.names == ("a",)
    with pytest.raises(dataclasses.FrozenInstanceError, match="cannot assign to field 'names'"):
        tunables.names = ("b",)  # type: ignore[misc]
