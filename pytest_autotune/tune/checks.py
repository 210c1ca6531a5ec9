"""Output checks: every candidate must compute the same answer as the reference.

A fast wrong kernel is a bug, so with checks on each candidate runs once and its output is
compared with the reference's. The comparison is strict where strictness is free (dtype,
shape, integers, NaN positions) and tolerant only where floating point rounding makes
exact equality meaningless (`rtol`/`atol` on inexact values).
"""

from __future__ import annotations

import array
import cmath
import collections
import contextlib
import dataclasses
import enum
import importlib
import math
import types
import warnings
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence, ValuesView
from contextvars import ContextVar
from typing import Any, Protocol, cast, runtime_checkable

import numpy as np
import numpy.typing as npt

from pytest_autotune.tune.check_result import RAISED, SKIPPED, UNCHECKABLE, CheckResult
from pytest_autotune.tune.clone import RANDOM_STATES, clone_value
from pytest_autotune.tune.device_compare import agree_on_device
from pytest_autotune.tune.errors import AutotuneError, AutotuneErrorKind, CandidateStopped
from pytest_autotune.tune.wording import counted

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

SHORT_SEQUENCE = 16
"""Up to this many numbers compare one by one in Python (`_differing_short`): the row of a
list of tuples took some 50 us through NumPy, and a list of 100 000 rows, seconds."""


class WrittenInputs(tuple):  # type: ignore[type-arg]
    """The inputs an in-place call wrote into, standing for the output it did not return;
    compared as the tuple it is, and named as what it is where a call that wrote nothing
    fails against it (`returned_none`)."""


def in_place_output(written: tuple[Any, ...], before: tuple[Any, ...]) -> object:
    """The output of a call that returned None: the inputs it was given (`written`, its own
    copies) where it wrote into them, compared with a copy of them as they were (`before`);
    else None, nothing to compare. A library's in-place kernel (a CuPy kernel launched into
    an `out` argument) returns nothing, and what it wrote is its answer; a function that
    forgot its `return` wrote nothing, and none of its candidates may pass unchecked."""
    wrote = compare_outputs(before, written, 0.0, 0.0) is not None
    return WrittenInputs(written) if wrote else None


LISTED_DIFFERENCES = 10
"""Differences listed in full; the rest are counted. A list or dict of numbers has one per
element that differs: a `tolist()` output wrong everywhere made a message of megabytes."""


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
    A structured array compares field by field; ml_dtypes' bfloat16 and float8 as floats; a
    memoryview and an `array.array` as arrays; a deque and a view of a dict's values item
    by item, as a list; a complex NaN part by part. A NamedTuple is not a
    plain tuple; sets compare exactly, naming what is missing and unexpected; an iterator
    (a generator, a `map`) is a difference: it cannot be compared, only consumed. Long
    values are shown as excerpts (a string around its first difference).
    """
    problems = _compare(reference, actual, "output", rtol, atol, equal_nan)
    if len(problems) > LISTED_DIFFERENCES:
        more = counted(len(problems) - LISTED_DIFFERENCES, "more difference")
        problems = [*problems[:LISTED_DIFFERENCES], f"... and {more}"]
    return "\n".join(problems) if problems else None


NOTHING_TO_COMPARE = (
    "{} returned None, so there is nothing to compare (return the output from the test"
    " body or the set's functions, or pass check_output=False to the marker or the"
    " autotune(...) call)"
)
"""Why a reference output of None fails: None equals None, so a test body without `return`
would pass every candidate, a wrong one included. It names both places the option goes: a
test of the `autotune` fixture has no marker, and was told to pass it "to the marker"."""

ITERATOR_TO_COMPARE = (
    "{} returned a {}, an iterator that yields its values once and cannot be compared:"
    " return them in a list (list(...))"
)
"""A reference that returns an iterator is none: compared with itself, its candidate
passed under --autotune and failed in a plain run, where its own test compares it."""


def returned_none(label: str, expected: object) -> str:
    """Why a candidate that returned None fails, where the reference (`label`) returned
    `expected`: in both modes alike. Where the reference too returned None, having written
    into its inputs (`WrittenInputs`), the candidate wrote nothing into its own."""
    if isinstance(expected, WrittenInputs):
        return (
            f"returned None and wrote nothing into its inputs, where {label} returned None"
            " having written into its inputs"
        )
    return f"returned None, where {label} returned {_describe(expected)}"


def unusable_reference(output: object, label: str, require_output: bool = True) -> str | None:
    """Why a reference's output (`label` names the reference) shows no candidate right, where
    it does not: None where an output is required, or an iterator. The one rule of the
    checks in both modes and of an explicit reference."""
    if output is None and require_output:
        return NOTHING_TO_COMPARE.format(label)
    if isinstance(output, Iterator):
        return ITERATOR_TO_COMPARE.format(label, type(output).__name__)
    return None


def check_candidates(
    names: Sequence[str],
    run: Callable[[int], object],
    reference: int | Callable[[], object] | None = None,
    rtol: float = DEFAULT_RTOL,
    atol: float = DEFAULT_ATOL,
    equal_nan: bool = True,
    require_output: bool = False,
    last: Collection[int] = (),
    compare: bool = True,
) -> list[CheckResult]:
    """Run every candidate once and compare its output with the reference's.

    `run(i)` calls candidate `i` on fresh inputs and returns its output. The reference is
    the output of `reference()` when it is a callable, of candidate `reference` when it is
    an index, else of the first candidate that succeeds, those in `last` (expected to be
    wrong: their tests are marked `xfail`) tried after every other. Candidates run one at a time and
    each output is compared as soon as it exists, so only the reference's output is kept
    alive (GPU memory holds two outputs, not one per candidate). A candidate that raises
    fails with the exception's text and is never compared; one that raises `AutotuneSkip`
    passes as skipped. A reference that declines the key so leaves the others checked as
    without one, against the first that succeeds. When the reference itself fails or
    produces nothing, every candidate that ran fails with that reason: none of them can be
    shown correct. Results come in the
    order of `names`. With `require_output`, a reference output of None is such a case:
    a None before any output waits (`_Judge.none_waits`), and is that case only where no
    candidate returns an output; otherwise the candidates that returned None fail alone.
    Without `compare` (`check_output=False`: nothing to compare), every candidate that runs
    passes and no reference is called, as in plain pytest's check of each candidate.
    """
    if not compare:
        return [_ran(names[index], run, index) for index in range(len(names))]
    # An imprecise candidate listed first was the reference: it passed, and every
    # correct one failed as differing from it.
    order = [i for i in range(len(names)) if i not in last]
    order += [i for i in range(len(names)) if i in last]
    judge = _Judge(names, rtol, atol, equal_nan, require_output, last)
    if callable(reference):
        judge.explicit(reference)
    elif reference is not None:
        if not 0 <= reference < len(names):
            raise IndexError(
                f"reference index {reference} is out of range for {len(names)} candidates"
            )
        order.remove(reference)
        order.insert(0, reference)
        # Its None is the reference, as its caller asked, not an output yet to come.
        judge.none_waits = False
    for index in order:
        try:
            output = run(index)
        except Exception as exc:
            judge.results[index] = _raised(names[index], exc)
        else:
            judge.output(index, output)
            # Dropped before the next candidate runs: still bound, it was a third output in
            # memory (beside the kept reference and the next one), and a candidate that fits
            # beside the reference ran out of (device) memory beside two.
            del output
        if index == reference and not judge.have_reference:
            if judge.results[index].skipped:
                # It declined the key: the others are checked against the first that
                # succeeds, as where no reference is named (plain pytest skipped them all as
                # declining, and tuning failed them all as "cannot be checked").
                judge.none_waits = True
            elif judge.no_reference is None:
                # It raised. An output that shows nothing (its None, an iterator) said why
                # already: told "failed", the others sent the user looking for an error.
                judge.no_reference = f"the reference {names[index]!r} failed"
    judge.nothing_returned()
    judge.name_agreeing()
    return [judge.results[i] for i in range(len(names))]


class _Judge:
    """`check_candidates`' reference and each candidate's result, as the outputs come."""

    def __init__(
        self,
        names: Sequence[str],
        rtol: float,
        atol: float,
        equal_nan: bool,
        require_output: bool,
        last: Collection[int] = (),
    ) -> None:
        self.names = names
        self.last = last
        self.tolerances = (rtol, atol, equal_nan)
        self.require_output = require_output
        self.results: dict[int, CheckResult] = {}
        self.ref_output: object = None
        self.ref_label = ""
        self.have_reference = False
        self.no_reference: str | None = None
        """Why no candidate can be shown correct (the reference failed or gave nothing)."""
        self.none_waits = True
        """Whether a None before any output is no output (an in-place kernel's, or a
        forgotten `return`) rather than the reference: judged once a candidate returns one,
        or at the end (`nothing_returned`)."""
        self.returned_none: list[int] = []
        self.differing: tuple[int, object] | None = None
        """The first candidate that differed from the reference, and its output: one more
        output kept, only once a check has failed."""
        self.agreeing: list[int] = []
        """The candidates that differed from the reference as `differing` did."""

    def explicit(self, reference: Callable[[], object]) -> None:
        output, self.no_reference, declined = _explicit_reference(reference, self.require_output)
        if declined:
            return  # as without one: the first candidate that succeeds is the reference
        self.ref_label = "the explicit reference"
        self.ref_output = output
        self.have_reference = self.no_reference is None

    def output(self, index: int, output: object) -> None:
        name = self.names[index]
        if self.have_reference and output is None:
            # As plain pytest says it: "expected WrittenInputs of 2 items, got None" named
            # an in-place reference's written inputs by a type of ours.
            self.results[index] = CheckResult(
                name, False, returned_none(self.ref_label, self.ref_output)
            )
        elif self.have_reference:
            diff = compare_outputs(self.ref_output, output, *self.tolerances)
            self.results[index] = (
                CheckResult(name, True)
                if diff is None
                else CheckResult(name, False, f"differs from {self.ref_label}: {diff}")
            )
            if diff is not None and index not in self.last:
                self._differed(index, output)
        elif self.no_reference is not None:
            self.results[index] = CheckResult(name, False, f"{UNCHECKABLE}{self.no_reference}")
        elif output is None and self.none_waits:
            first = not self.returned_none
            self.results[index] = CheckResult(name, True, "reference" if first else "")
            self.returned_none.append(index)
        elif (
            unusable := unusable_reference(output, f"the reference {name!r}", self.require_output)
        ) is not None:
            self.no_reference = unusable
            self.results[index] = CheckResult(name, False, unusable)
        else:
            self.ref_output, self.have_reference = copy_output(output), True
            self.ref_label = f"the reference {name!r}"
            self.results[index] = CheckResult(name, True, "reference")
            for earlier in self.returned_none:
                # A candidate that forgot its `return` was the reference where it came
                # first: it won the tuning, every correct one failing as "expected None".
                self.results[earlier] = CheckResult(
                    self.names[earlier], False, returned_none(self.ref_label, output)
                )

    def nothing_returned(self) -> None:
        """Where an output is required and no candidate returned one, those that returned
        None fail as the first of them, the reference, gives nothing to compare. Judged at
        the end: a first candidate that forgot its `return` failed every right one after
        it as "cannot be checked", with advice to return the output from the test body,
        which did return it."""
        if not self.require_output or self.have_reference or not self.returned_none:
            return
        first, *others = self.returned_none
        unusable = NOTHING_TO_COMPARE.format(f"the reference {self.names[first]!r}")
        self.results[first] = CheckResult(self.names[first], False, unusable)
        for index in others:
            self.results[index] = CheckResult(self.names[index], False, f"{UNCHECKABLE}{unusable}")

    def _differed(self, index: int, output: object) -> None:
        if self.differing is None:
            self.differing = (index, copy_output(output))
        elif compare_outputs(self.differing[1], output, *self.tolerances) is None:
            self.agreeing.append(index)

    def name_agreeing(self) -> None:
        """Candidates that differ from the reference but agree with each other say so: the
        first candidate, the reference by default, was the wrong one (a QA round's `* 1.01`
        in it failed both correct candidates, and it won), and nothing said which to
        suspect. Those that agree may still share a bug: a hint, not a verdict."""
        if self.differing is None or not self.agreeing:
            return
        group = [self.differing[0], *self.agreeing]
        for index in group:
            others = ", ".join(repr(self.names[i]) for i in group if i != index)
            result = self.results[index]
            self.results[index] = dataclasses.replace(
                result,
                message=f"{result.message}; it agrees with {others}: is {self.ref_label} the"
                " wrong one? (reference= names the candidate the others are checked against)",
            )


def _raised(name: str, exc: Exception) -> CheckResult:
    """The check of a candidate that raised: failed with its error, or skipped where it
    declined the key (`AutotuneSkip`, or the seed's `AutotuneError::Skip` raised), as it
    does when the candidate is timed."""
    error = AutotuneError.from_exception(name, exc)
    declined = error.kind is AutotuneErrorKind.SKIP
    stopped = isinstance(exc, CandidateStopped)
    said = SKIPPED if declined else "" if stopped else RAISED
    message = f"{said}{error.message}"
    return CheckResult(
        name, declined, message, skipped=declined, stopped=stopped, trace=error.trace
    )


def _ran(name: str, run: Callable[[int], object], index: int) -> CheckResult:
    """The check of a candidate whose output is not compared: passed where it ran."""
    try:
        run(index)
    except Exception as exc:
        return _raised(name, exc)
    return CheckResult(name, True)


def _explicit_reference(
    reference: Callable[[], object], require_output: bool
) -> tuple[object, str | None, bool]:
    """The output of an explicit reference, or None and why it cannot serve as one; and
    whether it declined the key (`AutotuneSkip`), which leaves the group without one."""
    try:
        output = reference()
    except Exception as exc:
        error = AutotuneError.from_exception("", exc)
        if error.kind is AutotuneErrorKind.SKIP:
            return None, None, True
        return None, f"the reference raised {error.message}", False
    unusable = unusable_reference(output, "the explicit reference", require_output)
    if unusable is not None:
        return None, unusable, False
    return copy_output(output), None, False


def copy_output(output: object) -> object:
    """An output as kept while another candidate runs: a copy of its arrays. An in-place
    reference returns its input, and where the input generator gives every call the same
    arrays (`lambda key, inputs: inputs`), the next in-place candidate wrote over it and was
    compared with its own output: a wrong one passed (so too with a module-level workspace
    every candidate writes into and returns). One copy, made once, while the original is
    dropped: memory still holds two outputs, the kept one and one other."""
    kept: object = clone_value(output)
    if isinstance(output, WrittenInputs):
        # Ours, no user's type: kept uncopied as one, an in-place reference's inputs were
        # the next candidate's (a generator handing every call the same arrays), and a
        # wrong candidate was compared with what it wrote itself, and passed.
        return WrittenInputs(cast(tuple[Any, ...], kept))
    # A dict or tuple subclass of the user's is copied as a plain one, which would lose its
    # own `autotune_compare`: such a value is kept as it is.
    return kept if type(kept) is type(output) else output


_PYTHON_NUMBERS = (bool, int, float, complex)


def _compare(  # noqa: C901, PLR0911, PLR0912 - one branch per kind of value compared
    reference: object, actual: object, where: str, rtol: float, atol: float, equal_nan: bool
) -> list[str]:
    """Every difference between two outputs, each message naming its position."""
    # `hasattr`, which is what the protocol's isinstance tests, at a hundredth of its cost:
    # the runtime check took some 35 us a value, most of a list of 100 000 tuples' check.
    if type(reference) not in _PLAIN_TYPES and hasattr(reference, "autotune_compare"):
        reference = cast(AutotuneOutput, reference)
        try:
            message = reference.autotune_compare(actual, rtol, atol)
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
                f"{type(reference).__name__}.autotune_compare returned {_short_repr(message)}:"
                " it must return None where the outputs are equal, else a str saying why not"
            )
        return [] if message is None else [f"{where}: {message}"]
    if reference is None or actual is None:
        return [] if reference is actual else [_mismatch(where, reference, actual)]

    if agree_on_device(reference, actual, rtol, atol, equal_nan):
        return []  # two CuPy arrays that agree: no copy to the host (tune/device_compare.py)
    ref_array, act_array = _host_array(reference), _host_array(actual)
    if ref_array is not None and act_array is not None:
        if not _same_values_dtype(ref_array.dtype, act_array.dtype):
            return [f"{where}: dtype differs: expected {ref_array.dtype}, got {act_array.dtype}"]
        if ref_array.dtype.names and ref_array.shape == act_array.shape:
            # A record array compared with `==` failed a correct candidate on a NaN in a
            # float field, and on any rounding: each field compares as an array of its own
            # (a masked one's with its own mask: the masks of all fields at once raised).
            return [
                problem
                for name in ref_array.dtype.names
                for problem in _compare(
                    ref_array[name], act_array[name], f"{where}[{name!r}]", rtol, atol, equal_nan
                )
            ]
        if isinstance(ref_array, np.ma.MaskedArray) or isinstance(act_array, np.ma.MaskedArray):
            return _compare_masked(ref_array, act_array, where, rtol, atol, equal_nan)
        return _compare_arrays(ref_array, act_array, where, rtol, atol, equal_nan)
    # A Python number carries no dtype, nor a str a width: against a single typed value it
    # compares by value (`np.str_` of `words[i]` read "expected <U3 scalar abc, got str").
    if ref_array is not None and _is_single(ref_array, actual):
        reference = ref_array.item()
    if act_array is not None and _is_single(act_array, reference):
        actual = act_array.item()
    if isinstance(reference, _PYTHON_NUMBERS) and isinstance(actual, _PYTHON_NUMBERS):
        return _compare_numbers(reference, actual, where, rtol, atol, equal_nan)

    for side, value in (("expected", reference), ("got", actual)):
        if isinstance(value, Iterator):
            # A generator or `map` returned by mistake: compared by identity, two of them
            # read "expected <generator object at 0x...>, got <generator object at 0x...>".
            return [
                f"{where}: {side} a {type(value).__name__}, an iterator that yields its values"
                " once and cannot be compared: return them in a list (list(...))"
            ]
    if isinstance(reference, Mapping):
        if not isinstance(actual, Mapping):
            return [_mismatch(where, reference, actual)]
        return _compare_mappings(reference, actual, where, rtol, atol, equal_nan)
    if isinstance(reference, (tuple, list)):
        return _compare_sequences(reference, actual, where, rtol, atol, equal_nan)
    if isinstance(reference, (collections.deque, ValuesView)):
        # Item by item, as a list: a deque's `==` needed floats exactly equal, and two views
        # of a dict's values are equal only if one object (two that read alike differed).
        if type(actual) is not type(reference):
            return [_mismatch(where, reference, actual)]
        items = list(reference), list(actual)
        return _compare_sequences(*items, where, rtol, atol, equal_nan)

    if type(reference) is not type(actual):
        return [_mismatch(where, reference, actual)]
    if isinstance(reference, RANDOM_STATES):
        return _compare_random_states(reference, actual, where)
    if dataclasses.is_dataclass(reference):
        # Its generated `==` compares array fields with `==`, whose truth NumPy refuses; field
        # by field, each is compared as an output of its own, tolerances included. A field
        # declared `compare=False` is left out, as its `==` leaves it out.
        problems = []
        for field in dataclasses.fields(reference):
            if field.compare:
                ref_value, act_value = getattr(reference, field.name), getattr(actual, field.name)
                problems += _compare(
                    ref_value, act_value, f"{where}.{field.name}", rtol, atol, equal_nan
                )
        return problems
    if _plain_attributes(reference):
        return _compare_attributes(reference, actual, where, rtol, atol, equal_nan)
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
        return [_text_difference(where, reference, actual)]  # type: ignore[arg-type]
    if isinstance(reference, (set, frozenset)) and isinstance(actual, (set, frozenset)):
        # Both printed whole, the one element of 1000 that differed could not be found.
        # Elements are found by hash: no tolerance can apply, which the message says.
        missing, unexpected = reference - actual, actual - reference
        parts = [f"missing {_short_repr(missing)}"] if missing else []
        parts += [f"unexpected {_short_repr(unexpected)}"] if unexpected else []
        name = type(reference).__name__
        return [f"{where}: {name} differs (elements compare exactly): {', '.join(parts)}"]
    return [f"{where}: expected {_short_repr(reference)}, got {_short_repr(actual)}"]


def _compare_random_states(reference: Any, actual: Any, where: str) -> list[str]:
    """Two random generators of one type, by their states. Copied for each call (`clone`),
    a generator among an in-place kernel's inputs (its output, `Tuner._check`) was compared
    by identity: every right candidate "differed from the reference"."""
    if not _compare(_random_state(reference), _random_state(actual), where, 0.0, 0.0, False):
        return []
    return [
        f"{where}: {type(reference).__name__}'s state differs: the candidate drew other"
        " numbers from it than the reference did"
    ]


def _random_state(generator: Any) -> object:
    """The state of a random generator of `RANDOM_STATES`, which its draws move."""
    if isinstance(generator, np.random.Generator):
        return generator.bit_generator.state
    if isinstance(generator, np.random.BitGenerator):
        return generator.state
    if isinstance(generator, np.random.RandomState):
        return generator.get_state(legacy=False)
    return generator.getstate()


def _plain_attributes(value: object) -> dict[str, Any]:
    """The attributes `value` compares by: those of a `SimpleNamespace`, or of an object of
    a class of one's own that keeps `object`'s `==` (identity); empty for any other value.
    A SimpleNamespace's `==` compares its attributes with `==`, which raised on arrays
    among them; identity told a right candidate's struct of results from the reference's,
    always, with two `<... object at 0x...>` for a message. An Enum member, a callable or
    an object of no attributes keeps its `==`."""
    kind = type(value)
    if kind is not types.SimpleNamespace and (
        kind.__eq__ is not object.__eq__
        or kind.__module__ == "builtins"
        or isinstance(value, enum.Enum)
        or callable(value)
    ):
        return {}
    return _attributes(value)


def _attributes(value: object) -> dict[str, Any]:
    """An object's attributes: its `__dict__`, and the `__slots__` of its classes that are
    set. A class of `__slots__` (no `__dict__`), as a struct of results made many times
    often is, was still compared by identity, every right candidate failing."""
    attributes = getattr(value, "__dict__", None)
    found = dict(attributes) if isinstance(attributes, dict) else {}
    for kind in type(value).__mro__:
        slots = kind.__dict__.get("__slots__", ())
        for name in (slots,) if isinstance(slots, str) else slots:
            if name not in ("__dict__", "__weakref__") and name not in found:
                # A private slot's descriptor goes by its mangled name (`_Class__name`).
                private = name.startswith("__") and not name.endswith("__")
                stored = f"_{kind.__name__.lstrip('_')}{name}" if private else name
                with contextlib.suppress(AttributeError):  # a slot never set
                    found[name] = getattr(value, stored)
    return found


def _compare_attributes(
    reference: object, actual: object, where: str, rtol: float, atol: float, equal_nan: bool
) -> list[str]:
    """Two objects of one type, attribute by attribute (`_plain_attributes`), each compared as
    an output of its own, tolerances included, and named `output.name`. A pair met again
    inside its own comparison (a node's `parent` that points back at it) adds nothing: the
    comparison that met it first reports what differs."""
    pair = (id(reference), id(actual))
    comparing = _COMPARING.get()
    if pair in comparing:
        # Followed again, it recursed until Python's limit: a RecursionError out of the
        # check, where identity's `==` had at least said "differs".
        return []
    token = _COMPARING.set(comparing | {pair})
    try:
        return _compare_attribute_values(reference, actual, where, rtol, atol, equal_nan)
    finally:
        _COMPARING.reset(token)


_COMPARING: ContextVar[frozenset[tuple[int, int]]] = ContextVar("_COMPARING", default=frozenset())
"""The pairs of objects (`id`s) whose attributes are being compared, outermost first: per
thread and task, as checks run in any thread of a library's program."""


def _compare_attribute_values(
    reference: object, actual: object, where: str, rtol: float, atol: float, equal_nan: bool
) -> list[str]:
    ref_vars, act_vars = _attributes(reference), _attributes(actual)
    problems: list[str] = []
    missing = [name for name in ref_vars if name not in act_vars]
    unexpected = [name for name in act_vars if name not in ref_vars]
    if missing:
        problems.append(f"{where}: missing attributes {_short_repr(missing)}")
    if unexpected:
        problems.append(f"{where}: unexpected attributes {_short_repr(unexpected)}")
    for name, ref_value in ref_vars.items():
        if name in act_vars:
            problems += _compare(
                ref_value, act_vars[name], f"{where}.{name}", rtol, atol, equal_nan
            )
    return problems


LONG_REPR = 200
"""Characters of a value's repr shown in a message. A 1 MB string (or a set of 100 000
numbers) that differed was printed whole, twice: it flooded the terminal and the JUnit XML,
and the difference could not be found in it."""

EXCERPT = 30
"""Characters shown on each side of the first difference of two long strings."""


def _cut(text: str) -> str:
    return text if len(text) <= LONG_REPR else f"{text[:LONG_REPR]}... ({len(text)} characters)"


def _short_repr(value: object) -> str:
    try:
        text = repr(value)
    except ValueError:
        if not isinstance(value, int):
            raise
        # Python prints no int of more than 4300 digits (`sys.set_int_max_str_digits`):
        # the message raised from inside the check, in place of naming a wrong bigint.
        return f"an int of about {int(value.bit_length() * math.log10(2)) + 1} digits"
    return _cut(text)


def _text_difference(where: str, reference: str | bytes, actual: str | bytes) -> str:
    """Two long strings (or bytes) that differ: where the first difference is, the length of
    each, and an excerpt of each around it; two short ones whole, as they read best."""
    if len(repr(reference)) + len(repr(actual)) <= 2 * EXCERPT + 20:
        return f"{where}: expected {reference!r}, got {actual!r}"
    # The common prefix, by halving: slices compare in C, where a loop over a 1 MB string's
    # characters takes a good part of a second.
    low, high = 0, min(len(reference), len(actual))
    while low < high:
        middle = (low + high + 1) // 2
        if reference[:middle] == actual[:middle]:
            low = middle
        else:
            high = middle - 1
    unit = "characters" if isinstance(reference, str) else "bytes"

    def excerpt(text: str | bytes) -> str:
        start, stop = max(0, low - EXCERPT), low + EXCERPT + 1
        before, after = ("..." if start > 0 else ""), ("..." if stop < len(text) else "")
        return f"{before}{text[start:stop]!r}{after}"

    return (
        f"{where}: {type(reference).__name__} differs at index {low} (expected"
        f" {len(reference)} {unit}, got {len(actual)}): expected {excerpt(reference)},"
        f" got {excerpt(actual)}"
    )


_EXACT_TYPES = frozenset({str, bytes, bool, int, type(None), np.str_, np.bytes_})
"""Types whose values compare exactly, by `==` alone, in a list as alone (`np.str_` of
`list(words)` by value, whatever its width)."""

EXACT_FLOAT_INTEGERS = 2**53
"""Integers of at most this magnitude are exact as float64: a list holding none larger
compares as an array, and integers within it that differ get exact float error figures."""


def _differing_numbers(
    reference: Sequence[Any],
    actual: Sequence[Any],
    rtol: float,
    atol: float,
    equal_nan: bool,
) -> list[int] | None:
    """The positions where two lists (or tuples) of one length that hold only Python floats,
    complex numbers and ints (np.float64 and np.complex128 counting as Python's) differ,
    compared as arrays; None where they hold anything else, to be compared element by
    element (strings, booleans, ints or None alone by `!=`). Element by element, each took
    some 40 us: a pure-Python candidate's list of 100 000 floats (or complex numbers: a
    DFT's) took seconds. The results are those of the
    element-wise rules: floats within the tolerances, NaN to NaN (with `equal_nan`; a
    complex NaN part by part), an int and a float by value, two ints exactly."""
    types = {type(v) for v in reference} | {type(v) for v in actual}
    if len(types) == 1 and types <= _EXACT_TYPES:
        # Strings, booleans, ints or None alone, which compare exactly: by `!=`, as one by
        # one, where a million strings took 4.5 s (booleans 2.3 s) through `_compare`.
        pairs = zip(reference, actual, strict=True)
        return [i for i, (r, a) in enumerate(pairs) if r != a]
    if len(types) == 1 and _one_numpy_type(*types):
        # `list(x)` of a float32 or int64 array: its scalars, of one dtype on both sides,
        # compare as arrays of that dtype, by the rules of two such scalars. One by one, a
        # list of 100 000 took 9 s (and an object array of floats 1e6 apart, 85 s).
        return _differing_of_one_type(reference, actual, types.pop(), rtol, atol, equal_nan)
    # A np.float64 (of `list(array)`) follows a Python float's every rule here, and a
    # np.complex128 a Python complex's.
    real = {float, int, np.float64}
    if not types <= real | {complex, np.complex128}:
        return None  # bool, other NumPy scalars, arrays...: rules of their own
    dtype = np.float64 if types <= real else np.complex128
    if int in types and any(
        type(v) is int and not -EXACT_FLOAT_INTEGERS <= v <= EXACT_FLOAT_INTEGERS
        for v in (*reference, *actual)
    ):
        return None  # as float64 it would round; element-wise, two ints compare exactly
    if len(reference) <= SHORT_SEQUENCE:
        return _differing_short(reference, actual, rtol, atol, equal_nan)
    ref, act = np.array(reference, dtype=dtype), np.array(actual, dtype=dtype)
    bad = np.zeros(len(ref), dtype=bool)
    for start in range(0, len(ref), BLOCK_ELEMENTS):
        block = slice(start, start + BLOCK_ELEMENTS)
        bad[block], _ = _differing(ref[block], act[block], True, rtol, atol, equal_nan)
    if int in types:
        # Two ints compare exactly, not within the tolerances.
        ints = np.fromiter(
            (type(r) is int and type(a) is int for r, a in zip(reference, actual, strict=True)),
            dtype=bool,
            count=len(ref),
        )
        bad[ints] = ref[ints] != act[ints]
    return [int(i) for i in np.flatnonzero(bad)]


def _differing_short(
    reference: Sequence[Any],
    actual: Sequence[Any],
    rtol: float,
    atol: float,
    equal_nan: bool,
) -> list[int]:
    """`_differing_numbers` of a few Python floats, complex numbers and ints, by NumPy's
    `isclose` rules written out: two ints exactly, else as float64 (complex128) within
    `atol + rtol * |reference|`, an infinity only to itself, NaN to NaN with `equal_nan`;
    a complex with a NaN part by part, as `_differing` judges it."""
    bad = []
    for i, (r, a) in enumerate(zip(reference, actual, strict=True)):
        if type(r) is int and type(a) is int:
            if r != a:
                bad.append(i)
            continue
        if isinstance(r, complex) or isinstance(a, complex):
            ref, act = complex(r), complex(a)
            parts = ((ref.real, act.real), (ref.imag, act.imag))
            if any(math.isnan(v) for pair in parts for v in pair):
                if not all(_close(*pair, rtol, atol, equal_nan) for pair in parts):
                    bad.append(i)
            elif not _close(ref, act, rtol, atol, equal_nan):
                bad.append(i)
        elif not _close(float(r), float(a), rtol, atol, equal_nan):
            bad.append(i)
    return bad


def _close(ref: complex, act: complex, rtol: float, atol: float, equal_nan: bool) -> bool:
    """One pair of floats (or complex numbers of no NaN part) by `isclose`'s rule."""
    if ref == act:
        return True
    if cmath.isnan(ref) or cmath.isnan(act):
        return equal_nan and cmath.isnan(ref) and cmath.isnan(act)
    if cmath.isinf(ref) or cmath.isinf(act):
        return False
    return abs(act - ref) <= atol + rtol * abs(ref)


def _one_numpy_type(kind: type) -> bool:
    """Whether values of type `kind` are NumPy numbers or booleans (np.float32, np.int64,
    np.complex64, np.bool_...), which an array of their dtype holds exactly."""
    return issubclass(kind, (np.number, np.bool_))


def _differing_of_one_type(
    reference: Sequence[Any],
    actual: Sequence[Any],
    kind: type,
    rtol: float,
    atol: float,
    equal_nan: bool,
) -> list[int]:
    """The positions where two sequences of one length, holding NumPy scalars of the one type
    `kind`, differ: as two arrays of its dtype, block by block."""
    dtype = np.dtype(kind)
    ref, act = np.array(reference, dtype=dtype), np.array(actual, dtype=dtype)
    inexact = dtype.kind in "fc"
    bad = np.zeros(len(ref), dtype=bool)
    for start in range(0, len(ref), BLOCK_ELEMENTS):
        block = slice(start, start + BLOCK_ELEMENTS)
        bad[block], _ = _differing(ref[block], act[block], inexact, rtol, atol, equal_nan)
    return [int(i) for i in np.flatnonzero(bad)]


def _compare_sequences(
    reference: tuple[Any, ...] | list[Any],
    actual: object,
    where: str,
    rtol: float,
    atol: float,
    equal_nan: bool,
) -> list[str]:
    """A tuple or list reference against any output: item by item, named by position."""
    # A tuple and a list are different results: a caller may index or unpack them alike,
    # but one may also hash the tuple or append to the list.
    if not isinstance(actual, tuple if isinstance(reference, tuple) else list):
        return [_mismatch(where, reference, actual)]
    named = hasattr(reference, "_fields") or hasattr(actual, "_fields")
    if named and type(reference) is not type(actual):
        # A NamedTuple's caller reads `result.mean`, which a plain tuple lacks.
        return [_mismatch(where, reference, actual)]
    if len(reference) != len(actual):
        return [f"{where}: expected {counted(len(reference), 'item')}, got {len(actual)}"]
    differing = _differing_numbers(reference, actual, rtol, atol, equal_nan)
    indices = range(len(reference)) if differing is None else differing
    problems: list[str] = []
    for i in indices:
        if differing is not None and len(problems) > LISTED_DIFFERENCES:
            # A number known to differ, only counted past here (`compare_outputs`): a
            # placeholder stands for it, and the slow element-wise wording is skipped.
            problems.append(f"{where}[{i}]: differs")
            continue
        ref_item, act_item = reference[i], actual[i]
        problems += _compare(ref_item, act_item, f"{where}[{i}]", rtol, atol, equal_nan)
    return problems


def _compare_mappings(
    reference: Mapping[Any, Any],
    actual: Mapping[Any, Any],
    where: str,
    rtol: float,
    atol: float,
    equal_nan: bool,
) -> list[str]:
    missing = [k for k in reference if k not in actual]
    unexpected = [k for k in actual if k not in reference]
    problems: list[str] = []
    # Each list cut short, its length said: 100 000 keys of the wrong type flooded it.
    if missing:
        many = f"{len(missing)} " if len(repr(missing)) > LONG_REPR else ""
        problems.append(f"{where}: missing {many}keys {_short_repr(missing)}")
    if unexpected:
        many = f"{len(unexpected)} " if len(repr(unexpected)) > LONG_REPR else ""
        problems.append(f"{where}: unexpected {many}keys {_short_repr(unexpected)}")
    keys = [k for k in reference if k in actual]
    # Numbers compare as arrays, as a list's do: 100 000 of them took some 4 s one by one.
    values = [reference[k] for k in keys], [actual[k] for k in keys]
    differing = _differing_numbers(*values, rtol, atol, equal_nan)
    listed = 0
    for i in range(len(keys)) if differing is None else differing:
        k = keys[i]
        if differing is not None and listed > LISTED_DIFFERENCES:
            problems.append(f"{where}[{k!r}]: differs")  # only counted (`compare_outputs`)
            continue
        found = _compare(reference[k], actual[k], f"{where}[{k!r}]", rtol, atol, equal_nan)
        listed += len(found)
        problems += found
    return problems


def _compare_numbers(
    reference: complex,
    actual: complex,
    where: str,
    rtol: float,
    atol: float,
    equal_nan: bool,
) -> list[str]:
    if isinstance(reference, bool) != isinstance(actual, bool):
        return [_mismatch(where, reference, actual)]
    if isinstance(reference, int) and isinstance(actual, int):
        # Exact, and in Python's unbounded integers: a NumPy conversion could overflow.
        if reference == actual:
            return []
        expected, got = _short_repr(reference), _short_repr(actual)
        # Two long ints read alike once cut short: their difference tells them apart.
        gap = f" (got - expected = {_short_repr(actual - reference)})" if expected == got else ""
        # Past a float's exact integers the tolerance is no question a user asks (and
        # `rtol * abs(reference)` of a huge int overflows).
        within = (
            not isinstance(reference, bool)
            and abs(reference) <= EXACT_FLOAT_INTEGERS
            and abs(actual - reference) <= atol + rtol * abs(reference)
        )
        return [f"{where}: expected {expected}, got {got}{gap}{_exact_note(within)}"]
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
        return [f"{where}: expected {_short_repr(reference)}, got {_short_repr(actual)}"]
    return _compare_arrays(ref_array, act_array, where, rtol, atol, equal_nan)


def _is_single(array: npt.NDArray[Any], other: object) -> bool:
    """Whether `array` is one value of the kind of `other`, a Python number, str or bytes."""
    if array.shape != ():
        return False
    if isinstance(other, _PYTHON_NUMBERS):
        return array.dtype.kind in "biufc"
    kinds = "UT" if isinstance(other, str) else "S" if isinstance(other, bytes) else ""
    return array.dtype.kind in kinds


BLOCK_ELEMENTS = 1 << 16
"""Elements compared at once. `np.isclose` makes several temporaries of its operands' size:
over a whole 1 GiB output that was GiBs beyond the outputs themselves, over a block it is a
few MiB, and a block is large enough that the loop costs nothing beside the comparison."""


def _compare_arrays(
    reference: npt.NDArray[Any],
    actual: npt.NDArray[Any],
    where: str,
    rtol: float,
    atol: float,
    equal_nan: bool,
) -> list[str]:
    """Values of two host arrays; their dtypes were checked, or one side is a Python number."""
    if reference.shape != actual.shape:
        return [_shape_differs(where, reference, actual)]
    wider = _wider_type(reference.dtype)
    inexact = reference.dtype.kind in "fc" or actual.dtype.kind in "fc" or wider is np.float32
    bad_count = moved = 0
    first: tuple[int, Any, Any] | None = None
    max_errors: tuple[float, float] | None = None
    max_time: int | None = None  # the largest gap of differing times, in their unit
    for ref_raw, act_raw, offset in _blocks(reference, actual, 0):
        ref_block = ref_raw if wider is None else ref_raw.astype(wider)
        act_block = act_raw if wider is None else act_raw.astype(wider)
        bad, nan_moved = _differing(ref_block, act_block, inexact, rtol, atol, equal_nan)
        moved += int(np.count_nonzero(nan_moved))
        count = int(np.count_nonzero(bad))
        if count == 0:
            continue
        bad_count += count
        if first is None:
            i = int(np.flatnonzero(bad)[0])
            first = offset + i, ref_block.reshape(-1)[i], act_block.reshape(-1)[i]
        gap = _time_error(ref_block, act_block, bad)
        if gap is not None:
            max_time = gap if max_time is None else max(gap, max_time)
        errors = _errors(ref_block, act_block, bad)
        if errors is not None and max_errors is not None:
            errors = max(errors[0], max_errors[0]), max(errors[1], max_errors[1])
        max_errors = max_errors if errors is None else errors
    if first is None:
        return []
    flat_index, expected, got = first
    quoted = _ambiguous(expected) or _ambiguous(got)
    expected, got = _element_text(expected, quoted), _element_text(got, quoted)

    errors_text = _errors_text(max_errors, max_time, reference.dtype)
    tolerance = f" (rtol={rtol:g}, atol={atol:g})" if inexact else ""
    exact = ""
    if not inexact and max_errors is not None:
        exact = _exact_note(max_errors[0] <= atol or max_errors[1] <= rtol)
    if reference.shape == ():
        note = exact + _too_fine(reference.dtype, rtol, max_errors)
        return [f"{where}: expected {expected}, got {got}{errors_text}{tolerance}{note}"]
    index = _index_text(flat_index, reference.shape)
    message = (
        f"{where}: {bad_count} of {reference.size} elements differ{tolerance}{errors_text}; "
        f"first at [{index}]: expected {expected}, got {got}"
    )
    if moved:
        missing = "NaT" if reference.dtype.kind in "mM" else "NaN"
        message += f"; {missing} positions differ at {counted(moved, 'element')}"
    return [message + exact + _too_fine(reference.dtype, rtol, max_errors)]


def _ambiguous(value: object) -> bool:
    """Whether `value` is a string that reads as nothing, or as another, unquoted: empty,
    or beginning or ending with spaces ("expected , got x" read as a garbled message)."""
    return isinstance(value, str) and (not value or value != value.strip())


def _element_text(value: object, quoted: bool) -> str:
    """One element as a message shows it, cut short (one may be a 1 MB string); a string
    `quoted` where it or the element it is shown beside is `_ambiguous`."""
    text = repr(str(value)) if quoted and isinstance(value, str) else str(value)
    return _cut(text)


def _errors_text(
    max_errors: tuple[float, float] | None, max_time: int | None, dtype: np.dtype[Any]
) -> str:
    """The largest errors of the elements that differ, as a message gives them."""
    if max_errors is not None:
        return f", max abs error {max_errors[0]:.6g}, max rel error {max_errors[1]:.6g}"
    if max_time is not None:
        return f", max abs error {_time_text(max_time, dtype)}"
    return ""


def _exact_note(within: bool) -> str:
    """A note where integers that differ lie within the tolerances: `rtol=0.5` and two
    ints 5% apart failed with "expected 20, got 21", and no word that the marker's
    tolerances apply to floating point values only."""
    if not within:
        return ""
    return "; integers compare exactly: rtol and atol apply to floating point values"


def _shape_differs(where: str, reference: npt.NDArray[Any], actual: npt.NDArray[Any]) -> str:
    return f"{where}: shape differs: expected {reference.shape}, got {actual.shape}"


def _index_text(flat_index: int, shape: tuple[int, ...]) -> str:
    """An element's index in `shape` as the messages write it: `3, 1` for [3, 1]."""
    return ", ".join(str(int(i)) for i in np.unravel_index(flat_index, shape))


ROUNDING_STEPS = 64
"""Relative errors up to this many times a dtype's eps read as rounding, which a finer
`rtol` than the dtype holds fails (`_too_fine`); larger ones as a wrong answer."""


def _too_fine(dtype: np.dtype[Any], rtol: float, max_errors: tuple[float, float] | None) -> str:
    """A note where `rtol` is below the resolution of a float dtype (float16 and the
    default 1e-5): only bit-equal values pass, and a correct half-precision kernel that
    rounds once otherwise failed with no word why. Only where the errors (`max_errors`,
    absolute and relative) are a rounding's: "set rtol for this dtype" told a candidate
    wrong by 200%, or one that overflowed to inf, to loosen the tolerance."""
    if max_errors is None:
        return ""
    if dtype.kind not in "fcV":
        return ""
    try:
        eps = float(np.finfo(dtype).eps)
    except (TypeError, ValueError):
        try:  # ml_dtypes' bfloat16 and float8 types have a finfo of their own
            eps = float(importlib.import_module("ml_dtypes").finfo(dtype).eps)
        except Exception:
            return ""
    if not 0 < rtol < eps:
        return ""  # rtol=0 asks for no relative tolerance at all (atol alone, or exactness)
    if not max_errors[1] <= ROUNDING_STEPS * eps:
        return ""
    return (
        f"; rtol={rtol:g} is finer than {dtype} can hold (its eps is {eps:.3g}), so only"
        " bit-equal values pass: set rtol for this dtype"
    )


def _compare_masked(
    reference: npt.NDArray[Any],
    actual: npt.NDArray[Any],
    where: str,
    rtol: float,
    atol: float,
    equal_nan: bool,
) -> list[str]:
    """Two arrays, one masked at least: a masked element is no value, so the masks must
    agree and the values under a mask are never compared (a plain array masks nothing).
    Compared as plain arrays, a mask read as NaN positions ("expected --, got 2.0; NaN
    positions differ"), a wording about values no candidate computed."""
    if reference.shape != actual.shape:
        return [_shape_differs(where, reference, actual)]
    ref_mask, act_mask = np.ma.getmaskarray(reference), np.ma.getmaskarray(actual)
    ref_data, act_data = np.ma.getdata(reference), np.ma.getdata(actual)
    problems: list[str] = []
    moved = np.flatnonzero(ref_mask != act_mask)
    if moved.size:
        i = int(moved[0])
        index = _index_text(i, reference.shape)
        expected = "masked" if ref_mask.flat[i] else _cut(str(ref_data.flat[i]))
        got = "masked" if act_mask.flat[i] else _cut(str(act_data.flat[i]))
        problems.append(
            f"{where}: the masks differ at {moved.size} of {reference.size} elements (masked"
            " positions must agree; the values under a mask are ignored); first at"
            f" [{index}]: expected {expected}, got {got}"
        )
    # Where either side is masked, the reference's value on both: only values compare.
    hidden = ref_mask | act_mask
    shown = np.where(hidden, ref_data, act_data) if hidden.any() else act_data
    return problems + _compare_arrays(ref_data, shown, where, rtol, atol, equal_nan)


def _wider_type(dtype: np.dtype[Any]) -> type[np.int64 | np.float32] | None:
    """The NumPy type a type NumPy does not know as a number converts to exactly: ml_dtypes'
    bfloat16 and float8 types (JAX's) have kind "V" and compared as bytes, exactly: a
    rounding difference failed with the tolerances ignored and no error figures, and NaN
    never equalled NaN. float32 for those, int64 for its int4 types (still exact); None
    for every other dtype."""
    if dtype.kind != "V" or dtype.names is not None or dtype.shape != ():
        return None
    if np.can_cast(dtype, np.int64):
        return np.int64
    return np.float32 if np.can_cast(dtype, np.float32) else None


def _blocks(
    reference: npt.NDArray[Any], actual: npt.NDArray[Any], offset: int
) -> Iterator[tuple[npt.NDArray[Any], npt.NDArray[Any], int]]:
    """Views of both arrays of at most `BLOCK_ELEMENTS` (or one row of the last axis), each
    with the flat C-order index of its first element. Slices along the leading axis are views
    in any memory order, so a Fortran-ordered or strided output is never copied whole."""
    if reference.ndim == 0 or reference.size <= BLOCK_ELEMENTS:
        yield reference, actual, offset
        return
    row = reference.size // reference.shape[0]
    if row > BLOCK_ELEMENTS:
        for i in range(reference.shape[0]):
            yield from _blocks(reference[i], actual[i], offset + i * row)
        return
    step = BLOCK_ELEMENTS // row
    for start in range(0, reference.shape[0], step):
        stop = start + step
        yield reference[start:stop], actual[start:stop], offset + start * row


def _differing(
    reference: npt.NDArray[Any],
    actual: npt.NDArray[Any],
    inexact: bool,
    rtol: float,
    atol: float,
    equal_nan: bool,
) -> tuple[npt.NDArray[np.bool_], npt.NDArray[np.bool_]]:
    """Which elements differ, and where only one side is NaN (or NaT)."""
    with np.errstate(all="ignore"):
        if inexact:
            close = np.isclose(actual, reference, rtol=rtol, atol=atol, equal_nan=equal_nan)
            nan_moved = np.isnan(reference) != np.isnan(actual)
            if reference.dtype.kind == "c" or actual.dtype.kind == "c":
                # `isclose` takes a complex with NaN in either part for NaN: nan+1j equalled
                # nan+2j and 1+nanj, and a wrong candidate passed. Where NaN is, each part
                # must agree: NaN where the other's is, within the tolerances elsewhere.
                ref_parts, act_parts = (reference.real, reference.imag), (actual.real, actual.imag)
                nan_moved = np.zeros(reference.shape, dtype=bool)
                for ref_part, act_part in zip(ref_parts, act_parts, strict=True):
                    nan_moved |= np.isnan(ref_part) != np.isnan(act_part)
                # So are infinite ones: NumPy 1.x's `isclose` made inf+0j inf+nanj (a
                # product by ones), so inf+0j equalled inf+1j and differed from itself.
                some_nan = np.isnan(reference) | np.isnan(actual)
                some_nan |= np.isinf(reference) | np.isinf(actual)
                if some_nan.any():
                    parts_close = np.ones(reference.shape, dtype=bool)
                    for ref_part, act_part in zip(ref_parts, act_parts, strict=True):
                        parts_close &= np.isclose(
                            act_part, ref_part, rtol=rtol, atol=atol, equal_nan=equal_nan
                        )
                    close = np.where(some_nan, parts_close, close)
        else:
            close = _equal_elements(reference, actual, rtol, atol, equal_nan)
            nan_moved = np.zeros(reference.shape, dtype=bool)
            if reference.dtype.kind in "mM":
                # NaT != NaT as NaN != NaN: a missing time at the same place is the same answer.
                ref_nat, act_nat = np.isnat(reference), np.isnat(actual)
                nan_moved = ref_nat != act_nat
                if equal_nan:
                    close = close | (ref_nat & act_nat)
    return ~np.asarray(close, dtype=bool), np.asarray(nan_moved, dtype=bool)


def _equal_elements(
    reference: npt.NDArray[Any],
    actual: npt.NDArray[Any],
    rtol: float,
    atol: float,
    equal_nan: bool,
) -> npt.NDArray[np.bool_]:
    """Which elements of two exact arrays are equal. The elements of an object array that
    are arrays themselves (a ragged array) are compared one by one as outputs of their own,
    tolerances included: `==` on two of them gives an array, whose truth NumPy refuses.
    The elements of an object array that `==` finds unequal are compared so too: floats
    among them are equal within the tolerances, and NaN to NaN, as in a list."""
    try:
        # NumPy before 1.25 did not raise here: it warned ("elementwise comparison failed",
        # a DeprecationWarning, or a FutureWarning where it gave up) and returned one False
        # for the whole array, so only the first element was compared again and a wrong
        # ragged output passed; in a project with `filterwarnings = error`, the warning
        # failed the check instead. As errors, they take the path of NumPy's later ValueError.
        with warnings.catch_warnings():
            warnings.simplefilter("error", DeprecationWarning)
            warnings.simplefilter("error", FutureWarning)
            equal = np.asarray(reference == actual, dtype=bool)
    except (ValueError, DeprecationWarning, FutureWarning):
        pairs = zip(reference.flat, actual.flat, strict=True)
        each = [not _compare(r, a, "", rtol, atol, equal_nan) for r, a in pairs]
        return np.array(each, dtype=bool).reshape(reference.shape)
    if reference.dtype.kind == "O":
        flat = equal.reshape(-1)  # a view: `equal` is a new array of its own
        unequal = np.flatnonzero(~flat)
        ref_items = [reference.flat[i] for i in unequal]
        act_items = [actual.flat[i] for i in unequal]
        # Numbers as a list's are, all at once: one by one, 1e6 floats that differ by a
        # rounding took 85 s.
        differing = _differing_numbers(ref_items, act_items, rtol, atol, equal_nan)
        if differing is not None:
            flat[unequal] = True
            flat[unequal[differing]] = False
            return equal
        for i, ref_item, act_item in zip(unequal, ref_items, act_items, strict=True):
            flat[i] = not _compare(ref_item, act_item, "", rtol, atol, equal_nan)
    return equal


def _errors(
    reference: npt.NDArray[Any], actual: npt.NDArray[Any], bad: npt.NDArray[np.bool_]
) -> tuple[float, float] | None:
    """Largest absolute and relative errors among the elements that differ, where both are
    finite: the figures that tell a rounding slip from a wrong algorithm."""
    if reference.dtype.kind not in "iufc" or actual.dtype.kind not in "iufc":
        return None
    if reference.dtype.kind in "iu" and actual.dtype.kind in "iu":
        exact = _integer_errors(reference[bad], actual[bad])
        if exact is not None:
            return exact
    common = np.result_type(reference.dtype, actual.dtype, np.float64)
    # Only the differing elements are converted: all of them would be two more copies.
    ref, act = reference[bad].astype(common), actual[bad].astype(common)
    finite = np.isfinite(ref) & np.isfinite(act)
    if not finite.any():
        return None
    if not finite.all():
        ref, act = ref[finite], act[finite]
    with np.errstate(all="ignore"):
        abs_error = np.abs(act - ref)
        magnitude = np.abs(ref)
        rel_error = np.divide(
            abs_error, magnitude, out=np.full_like(abs_error, np.inf), where=magnitude != 0
        )
    return float(abs_error.max()), float(rel_error.max())


def _time_error(
    reference: npt.NDArray[Any], actual: npt.NDArray[Any], bad: npt.NDArray[np.bool_]
) -> int | None:
    """The largest gap between differing datetimes or timedeltas where neither is NaT, in
    steps of their unit (`_time_text` names it), else None: "expected 2020-01-01T00, got
    2020-01-01T01" told an hour's shift of one element from one of every element, or of a
    day. Exact, as `_integer_errors` is: times far apart overflowed to a few nanoseconds."""
    if reference.dtype.kind not in "mM" or actual.dtype.kind not in "mM":
        return None
    ref, act = reference[bad], actual[bad]
    known = ~(np.isnat(ref) | np.isnat(act))
    if not known.any():
        return None
    # By value, not a view of the bytes: a big-endian array's read as another number.
    steps_ref, steps_act = ref[known].astype(np.int64), act[known].astype(np.int64)
    wide_ref, wide_act = steps_ref.astype(np.uint64), steps_act.astype(np.uint64)
    gaps = np.where(steps_act >= steps_ref, wide_act - wide_ref, wide_ref - wide_act)
    return int(gaps.max())


def _time_text(steps: int, dtype: np.dtype[Any]) -> str:
    """`steps` of `dtype`'s unit, as NumPy names a timedelta of it ("5 hours")."""
    unit, count = np.datetime_data(dtype)
    name = str(np.array([2], dtype=f"m8[{unit}]")[0]).split(" ", 1)[-1]  # "2 hours"
    return f"{steps * count} {name}"


def _integer_errors(
    reference: npt.NDArray[Any], actual: npt.NDArray[Any]
) -> tuple[float, float] | None:
    """The exact errors of differing integers past float64's exact range (two arrays of one
    dtype); None for those within it, whose float figures are exact. As floats, int64 values
    past 2**53 that differ by a few read "max abs error 0, max rel error 0", though they
    differ."""
    ends = [int(end) for a in (reference, actual) if a.size for end in (a.min(), a.max())]
    if all(abs(end) <= EXACT_FLOAT_INTEGERS for end in ends):
        return None
    # In uint64, whose subtraction wraps: two integers of 64 bits differ by less than 2**64,
    # so the wrapped difference, negated where `actual` is the smaller, is exact. In Python
    # ints, one by one, 10**7 differing int64 took 5 s.
    ref, act = reference.astype(np.uint64), actual.astype(np.uint64)
    errors = np.where(actual >= reference, act - ref, ref - act)
    abs_error = int(errors.max())
    with np.errstate(all="ignore"):
        magnitude = np.abs(reference.astype(np.float64))
        relative = np.divide(
            errors.astype(np.float64),
            magnitude,
            out=np.full(errors.shape, np.inf),
            where=magnitude != 0,
        )
    return float(abs_error), float(relative.max())


def _host_array(value: object) -> npt.NDArray[Any] | None:
    """A NumPy view of an array or NumPy scalar (CuPy arrays copied to the host), else None."""
    if isinstance(value, np.matrix):
        # Its rows stay 2-d when indexed (a scipy.sparse `.todense()` is one): as a plain
        # array, its elements can be counted and the first bad one named.
        return np.asarray(value)
    if isinstance(value, np.ndarray):
        return value
    if isinstance(value, (np.generic, memoryview, array.array)):
        # A memoryview compared with `==` needed floats exactly equal, and a difference read
        # "expected <memory at 0x...>": as the array it views, it has a dtype and a shape
        # (an `array.array` of the standard library too, whose `==` is exact as well).
        return np.asarray(value)
    if type(value).__module__.startswith("cupy"):
        # Imported only here: CuPy is optional, and only a CuPy value can get this far.
        cupy = importlib.import_module("cupy")
        host: npt.NDArray[Any] = cupy.asnumpy(value)
        if host.dtype.hasobject and host.shape == () and host.item() is value:
            # No array (a cupyx sparse matrix): `asnumpy` held it in a 0-d object array,
            # whose element was compared as an output again, and again, until the checks
            # ended in a RecursionError. It compares as other objects do.
            return None
        return host
    return None


def _same_values_dtype(reference: np.dtype[Any], actual: np.dtype[Any]) -> bool:
    """Whether two dtypes hold the same kind of values, their storage aside: a string's width
    and the byte order. `np.char.upper` keeps its input's `<U10` where a list of the same
    words makes a `<U3`, and an array read from a big-endian file (FITS) is `>f8`: a right
    candidate failed as "dtype differs", and two `np.str_` that differed read so too."""
    if reference == actual:
        return True
    if reference.kind == actual.kind == "S":
        return True
    if reference.kind in "UT" and actual.kind in "UT":
        return True  # NumPy 2's variable-width StringDType ("T") holds the same str values
    if reference.names is not None and actual.names is not None:
        # Field by field, as the values are compared: a record's name field as wide as
        # each of its producers made it.
        return reference.names == actual.names and all(
            _same_values_dtype(reference[name].base, actual[name].base)
            and reference[name].shape == actual[name].shape
            for name in reference.names
        )
    try:
        return reference.newbyteorder("=") == actual.newbyteorder("=")
    except TypeError:  # a new style dtype (StringDType) has no byte order
        return False


def _mismatch(where: str, reference: object, actual: object) -> str:
    return f"{where}: expected {_describe(reference)}, got {_describe(actual)}"


def _describe(value: object) -> str:
    if isinstance(value, np.generic):
        return f"{value.dtype} scalar {value}"
    dtype, shape = getattr(value, "dtype", None), getattr(value, "shape", None)
    if dtype is not None and shape is not None:
        return f"{dtype} array of shape {shape}"
    if value is None or isinstance(value, _PYTHON_NUMBERS):
        return repr(value)
    if isinstance(value, (tuple, list)):
        return f"{type(value).__name__} of {counted(len(value), 'item')}"
    return type(value).__name__
