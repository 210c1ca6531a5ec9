"""How two outputs compare (`compare_outputs`): the one comparison every check uses, which
takes each kind of value to its rules (arrays in `array_comparison`, containers and plain
objects' attributes in `containers`; numbers, dataclasses and the rest here) and names each
difference by its position in the output."""

from __future__ import annotations

import collections
import dataclasses
import math
from collections.abc import Iterator, Mapping, ValuesView
from concurrent.futures import Future
from typing import Any, Protocol, cast, runtime_checkable

import numpy as np
import numpy.typing as npt

from pytest_autotune.tune.array_comparison import (
    Rules,
    compare_arrays,
    compare_masked,
    holds_numbers,
)
from pytest_autotune.tune.clone import is_random_state
from pytest_autotune.tune.containers import (
    compare_attributes,
    compare_mappings,
    compare_sequences,
    plain_attributes,
)
from pytest_autotune.tune.device_compare import agree_on_device
from pytest_autotune.tune.differences import (
    EXACT_FLOAT_INTEGERS,
    LISTED_DIFFERENCES,
    PYTHON_NUMBERS,
    exact_note,
    float_precision,
    mismatch,
    text_difference,
)
from pytest_autotune.tune.errors import AutotuneError
from pytest_autotune.tune.host_arrays import host_array, same_values_dtype
from pytest_autotune.tune.library_outputs import compare_library_output
from pytest_autotune.tune.loaded import instance_of
from pytest_autotune.tune.plain_numbers import real_number
from pytest_autotune.tune.torch_tensors import (
    dtype_difference,
    is_generator,
    is_module,
    is_nested,
    is_optimizer,
    is_tensor,
    widened_precision,
)
from pytest_autotune.tune.wording import counted, short_repr

DEFAULT_RTOL = 1e-5


DEFAULT_ATOL = 1e-8


@runtime_checkable
class AutotuneOutput(Protocol):
    """An output type that knows how to compare itself (the seed's `AutotuneOutput`).

    `compare_outputs` understands arrays, numbers and containers of them; a result type of
    your own (a sparse matrix, a struct of arrays) implements this method instead.
    """

    def autotune_compare(self, other: object, rtol: float, atol: float, /) -> str | None:
        """None when `other` equals `self` within the tolerances, else why it does not.

        Called positionally: an implementation may name its parameters as it likes
        (`def autotune_compare(self, expected, r, a)`), which a protocol naming them
        would refuse under pyright."""


_PLAIN_TYPES = frozenset({int, float, complex, bool, str, bytes, tuple, list, dict, type(None)})
"""Types that hold no `autotune_compare`, passed over without asking each value."""


def compare_outputs(
    reference: object,
    actual: object,
    rtol: float = DEFAULT_RTOL,
    atol: float = DEFAULT_ATOL,
    equal_nan: bool = True,
) -> str | None:
    """None when `actual` equals `reference`, else a readable account of the differences
    (the first `LISTED_DIFFERENCES` in full, the rest counted).

    Understands NumPy and CuPy arrays, NumPy scalars, Python numbers, bool, None, tuples,
    lists, dicts and dataclasses of them (field by field), SimpleNamespaces and objects of
    classes that keep `object`'s identity `==` (attribute by attribute), and
    `AutotuneOutput` types (the reference's method decides); an `==` that raises is a
    difference that says so.
    Floating point values compare with `|actual - reference| <= atol + rtol*|reference|`;
    integers and booleans compare exactly; NaN must sit at the same positions
    (`equal_nan=False` makes any NaN a difference). Arrays must agree in dtype and shape,
    but for a string's width and the byte order, which store the same values.
    A Python number (str, bytes) carries no dtype, so against a NumPy scalar or a 0-d array
    it compares by value. NumPy and CuPy arrays compare with each other by value, so a NumPy
    implementation can serve as the reference of CuPy kernels. A masked array's mask must
    equal the other's (a plain array masks nothing); the values under a mask are ignored.
    A pandas Series or DataFrame compares by its labels and values, a scipy.sparse matrix by
    value (`library_outputs`). A structured array compares field by field; ml_dtypes'
    bfloat16 and float8 as floats; a memoryview and an `array.array` as arrays; a deque and
    a view of a dict's values item by item, as a list; a complex NaN part by part. A
    NamedTuple is not a plain tuple; sets compare exactly, naming what is missing and
    unexpected; an iterator (a generator, a `map`) is a difference: it cannot be compared,
    only consumed. Long values are shown as excerpts (a string around its first difference).
    """
    for name, tolerance in (("rtol", rtol), ("atol", atol)):
        number = real_number(tolerance)
        if number is None or not 0 <= number < math.inf:
            # A str or None failed inside NumPy's isclose ("ufunc 'multiply' did not
            # contain a loop"), and a negative one made equal values differ.
            raise ValueError(f"compare_outputs: {name} must be a number >= 0, got {tolerance!r}")
    # `_compare` looked up here, not bound once: a test may wrap it to count its calls.
    problems = _compare(reference, actual, "output", Rules(rtol, atol, equal_nan, _compare))
    if len(problems) > LISTED_DIFFERENCES:
        more = counted(len(problems) - LISTED_DIFFERENCES, "more difference")
        problems = [*problems[:LISTED_DIFFERENCES], f"... and {more}"]
    return "\n".join(problems) if problems else None


def _compare(  # noqa: C901, PLR0911, PLR0912 - one branch per kind of value compared
    reference: object, actual: object, where: str, rules: Rules
) -> list[str]:
    """Every difference between two outputs, each message naming its position."""
    # `hasattr`, which is what the protocol's isinstance tests, at a hundredth of its cost:
    # the runtime check took some 35 us a value, most of a list of 100 000 tuples' check.
    if type(reference) not in _PLAIN_TYPES and hasattr(reference, "autotune_compare"):
        return _compare_own(cast(AutotuneOutput, reference), actual, where, rules)
    if reference is None or actual is None:
        return [] if reference is actual else [mismatch(where, reference, actual)]

    if agree_on_device(reference, actual, rules.rtol, rules.atol, rules.equal_nan):
        return []  # two CuPy arrays that agree: no copy to the host (tune/device_compare.py)
    if is_tensor(reference) and is_tensor(actual):
        difference = dtype_difference(reference, actual)
        if difference is not None:
            return [f"{where}: {difference}"]
        if is_nested(reference) or is_nested(actual):
            return _compare_nested(reference, actual, where, rules)
        # A bfloat16 tensor reads as float32 on the host: a too fine rtol is judged by its own
        # eps, not float32's.
        rules = dataclasses.replace(rules, widened_from=widened_precision(reference))
    ref_array, act_array = host_array(reference), host_array(actual)
    if ref_array is not None and act_array is not None:
        if not same_values_dtype(ref_array.dtype, act_array.dtype):
            return [f"{where}: dtype differs: expected {ref_array.dtype}, got {act_array.dtype}"]
        if ref_array.dtype.names and ref_array.shape == act_array.shape:
            # A record array compared with `==` failed a correct candidate on a NaN in a
            # float field, and on any rounding: each field compares as an array of its own
            # (a masked one's with its own mask: the masks of all fields at once raised).
            return [
                problem
                for name in ref_array.dtype.names
                for problem in rules.compare(ref_array[name], act_array[name], f"{where}[{name!r}]")
            ]
        if isinstance(ref_array, np.ma.MaskedArray) or isinstance(act_array, np.ma.MaskedArray):
            return compare_masked(ref_array, act_array, where, rules)
        return compare_arrays(ref_array, act_array, where, rules)
    for array, other in ((ref_array, actual), (act_array, reference)):
        if array is not None and np.ma.is_masked(array) and _is_single(array, other):
            # A masked single value (`np.ma.mean` of a wholly masked array) holds no value,
            # but its `.item()` is the data beneath the mask: a candidate's 0.0 passed against
            # `np.ma.masked`. As 0-d arrays, their masks must agree as an array's do.
            pair = (array, np.asarray(other))
            return compare_masked(*(pair if array is ref_array else pair[::-1]), where, rules)
    # A Python number carries no dtype, nor a str a width: against a single typed value it
    # compares by value (`np.str_` of `words[i]` read "expected <U3 scalar abc, got str").
    for array in (ref_array, act_array):
        other = actual if array is ref_array else reference
        if array is not None and _is_single(array, other):
            # Compared as Python numbers, the dtype's resolution is still what `rtol` must
            # allow: `np.float16(0.1)` against 0.1 failed with no word of float16's eps.
            precision = float_precision(array.dtype)
            rules = (
                rules if precision is None else dataclasses.replace(rules, widened_from=precision)
            )
            if array is ref_array:
                reference = _single_value(array)
            else:
                actual = _single_value(array)
    if isinstance(reference, PYTHON_NUMBERS) and isinstance(actual, PYTHON_NUMBERS):
        return _compare_numbers(reference, actual, where, rules)

    for side, value in (("expected", reference), ("got", actual)):
        unreadable = uncomparable(value)
        if unreadable is not None:
            return [f"{where}: {side} {unreadable}"]
    # An xarray Dataset is a Mapping of its variables: compared as one, its coordinates that
    # no variable uses were never looked at (`library_outputs` compares them all).
    if isinstance(reference, Mapping) and not instance_of(reference, "xarray", "Dataset"):
        if not isinstance(actual, Mapping):
            return [mismatch(where, reference, actual)]
        return compare_mappings(reference, actual, where, rules)
    if isinstance(reference, (tuple, list)):
        return compare_sequences(reference, actual, where, rules)
    if isinstance(reference, (collections.deque, ValuesView)):
        # Item by item, as a list: a deque's `==` needed floats exactly equal, and two views
        # of a dict's values are equal only if one object (two that read alike differed).
        if type(actual) is not type(reference):
            return [mismatch(where, reference, actual)]
        items = list(reference), list(actual)
        return compare_sequences(*items, where, rules)
    library_problems = compare_library_output(reference, actual, where, rules)
    if library_problems is not None:
        return library_problems

    return _compare_objects(reference, actual, where, rules)


def uncomparable(value: object) -> str | None:
    """What `value` is, and what to return instead, where it is an output that holds no
    values to compare; else None. A generator or `map` returned by mistake, compared by
    identity, read "expected <generator object at 0x...>, got <generator object at 0x...>";
    an executor's future, by its attributes, read its locks and state ("output._state:
    expected 'PENDING', got 'RUNNING'") for two candidates that computed the same."""
    kind = type(value).__name__
    if isinstance(value, Iterator):
        return (
            f"a {kind}, an iterator that yields its values once and cannot be compared:"
            " return them in a list (list(...))"
        )
    if isinstance(value, Future):
        return (
            f"a {kind}, whose value comes later and cannot be compared: return its result"
            " (.result())"
        )
    return None


def _compare_nested(reference: Any, actual: Any, where: str, rules: Rules) -> list[str]:
    """Two PyTorch tensors of which one is nested (rows of their own lengths), row by row.
    A nested tensor has no dense values to read: the check raised torch's "to_dense does
    not support layout Jagged" out of every candidate's test, the reference's too."""
    if not (reference.is_nested and actual.is_nested):
        if reference.is_nested:
            return [f"{where}: expected a nested tensor, got one that is not nested"]
        return [f"{where}: expected a tensor that is not nested, got a nested one"]
    return compare_sequences(list(reference.unbind()), list(actual.unbind()), where, rules)


def _compare_own(reference: AutotuneOutput, actual: object, where: str, rules: Rules) -> list[str]:
    """A reference that compares itself (`AutotuneOutput`): its method's answer, or why that
    answer is none."""
    try:
        message = reference.autotune_compare(actual, rules.rtol, rules.atol)
    except Exception as exc:
        # The user's method meeting an output of another type (`other.low` of a float):
        # that output is not the reference's, a difference to name. Raised, it ended the
        # checks, and a tuning with checks on, for every candidate.
        raised = AutotuneError.from_exception("", exc).message
        message = f"{type(reference).__name__}.autotune_compare raised {raised}"
    if message is not None and (not isinstance(message, str) or not message):
        # `return np.allclose(...)` failed a right candidate with "output: True", and an
        # empty reason read "output: " alone: say what the method must return.
        message = (
            f"{type(reference).__name__}.autotune_compare returned {short_repr(message)}:"
            " it must return None where the outputs are equal, else a str saying why not"
        )
    return [] if message is None else [f"{where}: {message}"]


def _compare_objects(reference: object, actual: object, where: str, rules: Rules) -> list[str]:
    """Two values that are no array, number, iterator or container: random generators by
    their states, PyTorch models and optimizers by their `state_dict()`, dataclasses field
    by field, plain objects attribute by attribute, the rest by their `==`."""
    if type(reference) is not type(actual):
        return [mismatch(where, reference, actual)]
    if is_random_state(reference):
        return _compare_random_states(reference, actual, where, rules)
    if is_module(reference) or is_optimizer(reference):
        # A PyTorch model or optimizer (one a candidate trained in place) by its state: its
        # `==` is identity, so two models trained alike read "expected Linear(...), got
        # Linear(...)" and every right candidate but the reference failed.
        states = cast(Any, reference).state_dict(), cast(Any, actual).state_dict()
        return rules.compare(*states, f"{where}.state_dict()")
    if dataclasses.is_dataclass(reference):
        # Its generated `==` compares array fields with `==`, whose truth NumPy refuses; field
        # by field, each is compared as an output of its own, tolerances included. A field
        # declared `compare=False` is left out, as its `==` leaves it out.
        problems = []
        for field in dataclasses.fields(reference):
            if field.compare:
                ref_value, act_value = getattr(reference, field.name), getattr(actual, field.name)
                problems += rules.compare(ref_value, act_value, f"{where}.{field.name}")
        return problems
    if plain_attributes(reference):
        return compare_attributes(reference, actual, where, rules)
    return _compare_equal(reference, actual, where)


def _compare_equal(reference: object, actual: object, where: str) -> list[str]:
    """Two values of one type compared by their `==`: strings and sets say where they differ."""
    name = type(reference).__name__
    try:
        equal = reference == actual
    except Exception as exc:
        # An `==` that meets arrays (a view of a dict's items holding them, a class whose
        # `__eq__` uses `and` on array fields) raised out of the check: a traceback of ours,
        # and under --autotune the group's tuning ended, its right candidates failed too.
        raised = AutotuneError.from_exception("", exc).message
        return [
            f"{where}: cannot compare values of type {name} (its == raised {raised});"
            " give it an autotune_compare method"
        ]
    if not isinstance(equal, bool):
        return [
            f"{where}: cannot compare values of type {name}; give it an autotune_compare method"
        ]
    if equal:
        return []
    if isinstance(reference, (str, bytes, bytearray)) and type(reference) is type(actual):
        return [text_difference(where, reference, actual)]  # type: ignore[arg-type]
    if isinstance(reference, (set, frozenset)) and isinstance(actual, (set, frozenset)):
        # Both printed whole, the one element of 1000 that differed could not be found.
        # Elements are found by hash: no tolerance can apply, which the message says.
        missing, unexpected = reference - actual, actual - reference
        parts = [f"missing {short_repr(missing)}"] if missing else []
        parts += [f"unexpected {short_repr(unexpected)}"] if unexpected else []
        name = type(reference).__name__
        return [f"{where}: {name} differs (elements compare exactly): {', '.join(parts)}"]
    return [f"{where}: expected {short_repr(reference)}, got {short_repr(actual)}"]


def _compare_random_states(reference: Any, actual: Any, where: str, rules: Rules) -> list[str]:
    """Two random generators of one type, by their states. Copied for each call (`clone`),
    a generator among an in-place kernel's inputs (its output, `Tuner._check`) was compared
    by identity: every right candidate "differed from the reference"."""
    if not rules.exact().compare(_random_state(reference), _random_state(actual), where):
        return []
    return [
        f"{where}: {type(reference).__name__}'s state differs: the candidate drew other"
        " numbers from it than the reference did"
    ]


def _random_state(generator: Any) -> object:
    """The state of a random generator (`clone.is_random_state`), which its draws move."""
    if is_generator(generator):
        return generator.get_state()
    if isinstance(generator, np.random.Generator):
        return generator.bit_generator.state
    if isinstance(generator, np.random.BitGenerator):
        return generator.state
    if isinstance(generator, np.random.RandomState):
        return generator.get_state(legacy=False)
    return generator.getstate()


def _compare_numbers(
    reference: complex,
    actual: complex,
    where: str,
    rules: Rules,
) -> list[str]:
    if isinstance(reference, bool) != isinstance(actual, bool):
        return [mismatch(where, reference, actual)]
    if isinstance(reference, int) and isinstance(actual, int):
        # Exact, and in Python's unbounded integers: a NumPy conversion could overflow.
        if reference == actual:
            return []
        expected, got = short_repr(reference), short_repr(actual)
        # Two long ints read alike once cut short: their difference tells them apart.
        gap = f" (got - expected = {short_repr(actual - reference)})" if expected == got else ""
        # Past a float's exact integers the tolerance is no question a user asks (and
        # `rtol * abs(reference)` of a huge int overflows).
        within = (
            not isinstance(reference, bool)
            and abs(reference) <= EXACT_FLOAT_INTEGERS
            and abs(actual - reference) <= rules.atol + rules.rtol * abs(reference)
        )
        return [f"{where}: expected {expected}, got {got}{gap}{exact_note(within)}"]
    dtype = (
        np.complex128
        if isinstance(reference, complex) or isinstance(actual, complex)
        else np.float64
    )
    try:
        ref_array, act_array = np.asarray(reference, dtype=dtype), np.asarray(actual, dtype=dtype)
    except OverflowError:
        # An int past a float's range (10**400 against a float) raised out of the check. No
        # float holds it, so no float is within a tolerance of it: Python's exact `==`.
        if reference == actual:
            return []
        return [f"{where}: expected {short_repr(reference)}, got {short_repr(actual)}"]
    return compare_arrays(ref_array, act_array, where, rules)


def _is_single(array: npt.NDArray[Any], other: object) -> bool:
    """Whether `array` is one value of the kind of `other`, a Python number, str or bytes."""
    if array.shape != ():
        return False
    if isinstance(other, PYTHON_NUMBERS):
        return array.dtype.kind in "biufc" or holds_numbers(array.dtype)
    kinds = "UT" if isinstance(other, str) else "S" if isinstance(other, bytes) else ""
    return array.dtype.kind in kinds


def _single_value(array: npt.NDArray[Any]) -> object:
    """The one value of a 0-d array, as the Python number, str or bytes it holds; a float
    wider than Python's (longdouble, quad precision) as the nearest one. `np.longdouble(1.5)`
    against a candidate's `1.5` read "expected float128 scalar 1.5, got 1.5"."""
    value = array.item()
    if isinstance(value, (*PYTHON_NUMBERS, str, bytes)):
        return value
    return complex(value) if array.dtype.kind == "c" else float(value)
