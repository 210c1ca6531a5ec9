"""Arrays, and lists of numbers as arrays, compared element by element: exactly where
strictness is free (integers, NaN positions), within `rtol`/`atol` on inexact values, block
by block so that a large output costs little memory beside itself.

An object array's elements are outputs of their own, compared by the comparison of outputs
(`comparison`) that its caller passes in with the `Rules`: this module sits below it.
"""

from __future__ import annotations

import cmath
import math
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import numpy.typing as npt

from pytest_autotune.tune.differences import (
    EXACT_FLOAT_INTEGERS,
    PYTHON_NUMBERS,
    ambiguous,
    element_text,
    errors_text,
    exact_note,
    index_text,
    largest_errors,
    near_zero,
    shape_differs,
    time_error,
    too_fine,
)
from pytest_autotune.tune.host_arrays import BLOCK_ELEMENTS, blocks, wider_type
from pytest_autotune.tune.wording import counted, cut


def tolerance_may_overflow(dtype: np.dtype[Any], rtol: float, atol: float) -> bool:
    """Whether `atol + rtol * |reference|`, computed in `dtype` as `isclose` computes it, can
    exceed the dtype's largest value for a finite reference (a complex one's magnitude
    reaching sqrt(2) times it): then it is inf, and an infinite candidate passes. True for
    a dtype of no `finfo` (ml_dtypes' own), which is not looked into."""
    try:
        largest = float(np.finfo(dtype).max)
    except (TypeError, ValueError):
        return True
    reach = math.sqrt(2) if dtype.kind == "c" else 1.0
    return atol + rtol * reach * largest >= largest


@dataclass(frozen=True)
class Rules:
    """What two outputs compare by: floats within `atol + rtol * |reference|`, NaN equal to
    NaN where `equal_nan`, and the comparison of outputs (`comparison._compare`) that an
    object array's elements and a container's items go back to, each an output of its own.
    One value, passed down whole: the four travelled as loose arguments through thirteen
    signatures, where one passed out of order would be a wrong verdict that no type caught."""

    rtol: float
    atol: float
    equal_nan: bool
    outputs: Callable[[object, object, str, Rules], list[str]]
    widened_from: tuple[str, float] | None = None
    """The name and eps of the dtype the arrays' values were widened from, where the arrays
    compared no longer carry it (a PyTorch bfloat16 tensor read as float32, a NumPy float16
    scalar compared with a Python float as one): the resolution `too_fine` judges `rtol`
    against, which the wider dtype's eps hid."""

    def compare(self, reference: object, actual: object, where: str) -> list[str]:
        """Every difference between two outputs by these rules, each naming its position."""
        return self.outputs(reference, actual, where, self)

    def isclose(
        self, reference: npt.NDArray[Any], actual: npt.NDArray[Any]
    ) -> npt.NDArray[np.bool_]:
        """Which elements are within the tolerances, by NumPy's `isclose` (whose tolerance
        scales with its second argument: the reference)."""
        close = np.isclose(
            actual, reference, rtol=self.rtol, atol=self.atol, equal_nan=self.equal_nan
        )
        # Its tolerance is computed in the reference's dtype, where it may overflow (float16's
        # rtol=2 of 40000): an infinite candidate then passed "within inf". The tolerances
        # are finite, so an infinity is close to nothing but itself. Looked for only where
        # the tolerance can reach the dtype's largest value: the look costs a check of 2^24
        # float32 values 5-15% more, for tolerances no default comes near.
        if tolerance_may_overflow(reference.dtype, self.rtol, self.atol):
            close &= ~np.isinf(actual) | (actual == reference)
        return np.asarray(close, dtype=bool)

    def exact(self) -> Rules:
        """These rules with no tolerance, and NaN equal to nothing."""
        return replace(self, rtol=0.0, atol=0.0, equal_nan=False)


SHORT_SEQUENCE = 16
"""Up to this many numbers compare one by one in Python (`_differing_short`): the row of a
list of tuples took some 50 us through NumPy, and a list of 100 000 rows, seconds."""


_EXACT_TYPES = frozenset({str, bytes, bool, int, type(None), np.str_, np.bytes_})
"""Types whose values compare exactly, by `==` alone, in a list as alone (`np.str_` of
`list(words)` by value, whatever its width)."""


def differing_numbers(
    reference: Sequence[Any],
    actual: Sequence[Any],
    rules: Rules,
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
        # one, where a million strings took 4.5 s (booleans 2.3 s) through `comparison._compare`.
        pairs = zip(reference, actual, strict=True)
        return [i for i, (r, a) in enumerate(pairs) if r != a]
    if len(types) == 1 and _one_numpy_type(*types):
        # `list(x)` of a float32 or int64 array: its scalars, of one dtype on both sides,
        # compare as arrays of that dtype, by the rules of two such scalars. One by one, a
        # list of 100 000 took 9 s (and an object array of floats 1e6 apart, 85 s).
        return _differing_of_one_type(reference, actual, types.pop(), rules)
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
        return _differing_short(reference, actual, rules)
    ref, act = np.array(reference, dtype=dtype), np.array(actual, dtype=dtype)
    bad = np.zeros(len(ref), dtype=bool)
    for start in range(0, len(ref), BLOCK_ELEMENTS):
        block = slice(start, start + BLOCK_ELEMENTS)
        bad[block], _ = _differing(ref[block], act[block], True, rules)
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
    rules: Rules,
) -> list[int]:
    """`differing_numbers` of a few Python floats, complex numbers and ints, by NumPy's
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
                if not all(_close(*pair, rules) for pair in parts):
                    bad.append(i)
            elif not _close(ref, act, rules):
                bad.append(i)
        elif not _close(float(r), float(a), rules):
            bad.append(i)
    return bad


def _close(ref: complex, act: complex, rules: Rules) -> bool:
    """One pair of floats (or complex numbers of no NaN part) by `isclose`'s rule."""
    if ref == act:
        return True
    if cmath.isnan(ref) or cmath.isnan(act):
        return rules.equal_nan and cmath.isnan(ref) and cmath.isnan(act)
    if cmath.isinf(ref) or cmath.isinf(act):
        return False
    return abs(act - ref) <= rules.atol + rules.rtol * abs(ref)


def _one_numpy_type(kind: type) -> bool:
    """Whether values of type `kind` are NumPy numbers or booleans (np.float32, np.int64,
    np.complex64, np.bool_...), or ml_dtypes' bfloat16, float8 and int4 scalars, which an
    array of their dtype holds exactly. Those of ml_dtypes are no `np.number`: a list of
    100 000 took 4.6 s one by one, against 0.01 s for float32."""
    if issubclass(kind, (np.number, np.bool_)):
        return True
    return issubclass(kind, np.generic) and wider_type(np.dtype(kind)) is not None


def _differing_of_one_type(
    reference: Sequence[Any],
    actual: Sequence[Any],
    kind: type,
    rules: Rules,
) -> list[int]:
    """The positions where two sequences of one length, holding NumPy scalars of the one type
    `kind`, differ: as two arrays of its dtype, block by block."""
    dtype = np.dtype(kind)
    ref, act = np.array(reference, dtype=dtype), np.array(actual, dtype=dtype)
    wider = wider_type(dtype)
    if wider is not None:
        # As `compare_arrays` reads them: bfloat16 as float32, within the tolerances and
        # NaN equal to NaN; compared as they are, their kind "V" compared them as bytes.
        ref, act = ref.astype(wider), act.astype(wider)
    inexact = ref.dtype.kind in "fc"
    bad = np.zeros(len(ref), dtype=bool)
    for start in range(0, len(ref), BLOCK_ELEMENTS):
        block = slice(start, start + BLOCK_ELEMENTS)
        bad[block], _ = _differing(ref[block], act[block], inexact, rules)
    return [int(i) for i in np.flatnonzero(bad)]


def compare_arrays(
    reference: npt.NDArray[Any],
    actual: npt.NDArray[Any],
    where: str,
    rules: Rules,
) -> list[str]:
    """Values of two host arrays; their dtypes were checked, or one side is a Python number."""
    if reference.shape != actual.shape:
        return [shape_differs(where, reference, actual)]
    wider = wider_type(reference.dtype)
    inexact = wider is np.float32 or any(_inexact(a.dtype) for a in (reference, actual))
    bad_count = moved = 0
    first: tuple[int, Any, Any] | None = None
    max_errors: tuple[float, float] | None = None
    max_time: int | None = None  # the largest gap of differing times, in their unit
    all_finite = True  # whether every element that differs is a finite float on both sides
    for ref_raw, act_raw, offset in blocks(reference, actual, 0):
        ref_block = ref_raw if wider is None else ref_raw.astype(wider)
        act_block = act_raw if wider is None else act_raw.astype(wider)
        bad, nan_moved = _differing(ref_block, act_block, inexact, rules)
        moved += int(np.count_nonzero(nan_moved))
        count = int(np.count_nonzero(bad))
        if count == 0:
            continue
        bad_count += count
        if first is None:
            i = int(np.flatnonzero(bad)[0])
            first = offset + i, ref_block.reshape(-1)[i], act_block.reshape(-1)[i]
        all_finite = all_finite and inexact and _finite(ref_block[bad], act_block[bad])
        gap = time_error(ref_block, act_block, bad)
        if gap is not None:
            max_time = gap if max_time is None else max(gap, max_time)
        errors = largest_errors(ref_block, act_block, bad)
        if errors is not None and max_errors is not None:
            errors = max(errors[0], max_errors[0]), max(errors[1], max_errors[1])
        max_errors = max_errors if errors is None else errors
    # Nothing differs, or an object array's first differing rows say what differs in them.
    inside = [] if first is None else _difference_inside(where, first, bad_count, reference, rules)
    if first is None or inside:
        return inside
    flat_index, expected, got = first
    quoted = ambiguous(expected) or ambiguous(got)
    expected, got = element_text(expected, quoted), element_text(got, quoted)

    largest = errors_text(max_errors, max_time, reference.dtype)
    rtol, atol = rules.rtol, rules.atol
    tolerance = f" (rtol={rtol:g}, atol={atol:g})" if inexact else ""
    exact = ""
    if not inexact and max_errors is not None:
        exact = exact_note(max_errors[0] <= atol or max_errors[1] <= rtol)
    if reference.shape == ():
        note = exact + too_fine(reference.dtype, rtol, max_errors, rules.widened_from)
        return [f"{where}: expected {expected}, got {got}{largest}{tolerance}{note}"]
    index = index_text(flat_index, reference.shape)
    message = (
        f"{where}: {bad_count} of {reference.size} elements differ{tolerance}{largest}; "
        f"first at [{index}]: expected {expected}, got {got}"
    )
    if moved:
        missing = "NaT" if reference.dtype.kind in "mM" else "NaN"
        message += f"; {missing} positions differ at {counted(moved, 'element')}"
    note = exact + too_fine(reference.dtype, rtol, max_errors, rules.widened_from)
    if not note and all_finite and max_errors is not None:
        note = near_zero(rtol, max_errors[0], _largest_magnitude(reference, wider))
    return [message + note]


_SINGLE_VALUES = (*PYTHON_NUMBERS, str, bytes, np.generic, type(None))
"""Elements of an object array that its message shows whole, as `expected 7.0, got 7.5`."""


def _difference_inside(
    where: str,
    first: tuple[int, Any, Any],
    bad_count: int,
    reference: npt.NDArray[Any],
    rules: Rules,
) -> list[str]:
    """The message of an object array whose first differing elements (`first`: their flat
    index, expected and got) are arrays or containers (a ragged batch's rows): what differs
    inside them, as their own comparison names it, at their full position (`output[0]:
    dtype differs: ...`, `output[1]['a']: 1 of 20 elements differ ...`); none for single
    values, which the message shows whole. Their `str` hid it: a float32 row against a
    float64 one read "expected [1. 1.], got [1. 1.]", and a row of 1000 wrong at one
    element showed neither the element nor by how much."""
    flat_index, expected, got = first
    if isinstance(expected, _SINGLE_VALUES) and isinstance(got, _SINGLE_VALUES):
        return []
    # Named by its full position, as a list's item is: "first at [0]: 3 of 3 elements
    # differ ...; first at [0]: ..." read as one element twice. Passed down, so that a row
    # that is itself an object array names its own row in full too, not as "first [1]".
    at = where if reference.shape == () else f"{where}[{index_text(flat_index, reference.shape)}]"
    problems = rules.compare(expected, got, at)
    if not problems:
        return []
    more = len(problems) - 1
    inside = problems[0] + (f" (and {counted(more, 'more difference')} in it)" if more else "")
    if reference.shape == ():
        return [inside]
    return [f"{where}: {bad_count} of {reference.size} elements differ; first {inside}"]


def _finite(reference: npt.NDArray[Any], actual: npt.NDArray[Any]) -> bool:
    """Whether every value of two arrays is a finite NumPy float or complex number (a
    user-defined dtype's values, quad precision's, have no error figures to judge)."""
    if reference.dtype.kind not in "fc" or actual.dtype.kind not in "fc":
        return False
    return bool(np.isfinite(reference).all() and np.isfinite(actual).all())


def _largest_magnitude(array: npt.NDArray[Any], wider: type[np.generic] | None) -> float:
    """The largest magnitude among an inexact array's finite values (0 where it has none),
    block by block as the comparison reads it."""
    largest = 0.0
    for block, _, _ in blocks(array, array, 0):
        values = block if wider is None else block.astype(wider)
        with np.errstate(all="ignore"):
            magnitudes = np.abs(values[np.isfinite(values)])
        largest = max(largest, float(magnitudes.max(initial=0)))
    return largest


_NUMPY_KINDS = frozenset("biufcmMOSUVT")
"""The kinds of NumPy's own dtypes; a dtype of another kind is a user-defined one
(numpy-quaddtype's `QuadPrecDType`, of kind NUL)."""


def _inexact(dtype: np.dtype[Any]) -> bool:
    """Whether a dtype holds floating point values: NumPy's floats and complex numbers, and a
    user-defined dtype that holds every float64 (numpy-quaddtype's quad precision), whose
    values compared by `==`, a rounding in the 34th digit failing a right candidate and NaN
    never equal to NaN."""
    if dtype.kind in "fc":
        return True
    return dtype.kind not in _NUMPY_KINDS and np.can_cast(np.float64, dtype)


def holds_numbers(dtype: np.dtype[Any]) -> bool:
    """Whether a dtype that NumPy knows as no number holds numbers: ml_dtypes' bfloat16,
    float8 and int4 types, and numpy-quaddtype's quad precision."""
    return wider_type(dtype) is not None or _inexact(dtype)


def compare_masked(
    reference: npt.NDArray[Any],
    actual: npt.NDArray[Any],
    where: str,
    rules: Rules,
) -> list[str]:
    """Two arrays, one masked at least: a masked element is no value, so the masks must
    agree and the values under a mask are never compared (a plain array masks nothing).
    Compared as plain arrays, a mask read as NaN positions ("expected --, got 2.0; NaN
    positions differ"), a wording about values no candidate computed."""
    if reference.shape != actual.shape:
        return [shape_differs(where, reference, actual)]
    ref_mask, act_mask = np.ma.getmaskarray(reference), np.ma.getmaskarray(actual)
    ref_data, act_data = np.ma.getdata(reference), np.ma.getdata(actual)
    problems: list[str] = []
    moved = np.flatnonzero(ref_mask != act_mask)
    if moved.size:
        i = int(moved[0])
        index = index_text(i, reference.shape)
        expected = "masked" if ref_mask.flat[i] else cut(str(ref_data.flat[i]))
        got = "masked" if act_mask.flat[i] else cut(str(act_data.flat[i]))
        rule = "masked positions must agree; the values under a mask are ignored"
        if reference.shape == ():
            # One value: "the masks differ at 1 of 1 elements ...; first at []" said it twice.
            problems.append(f"{where}: expected {expected}, got {got} ({rule})")
        else:
            problems.append(
                f"{where}: the masks differ at {moved.size} of {reference.size} elements"
                f" ({rule}); first at [{index}]: expected {expected}, got {got}"
            )
    # Where either side is masked, the reference's value on both: only values compare.
    hidden = ref_mask | act_mask
    shown = np.where(hidden, ref_data, act_data) if hidden.any() else act_data
    return problems + compare_arrays(ref_data, shown, where, rules)


def _differing(
    reference: npt.NDArray[Any],
    actual: npt.NDArray[Any],
    inexact: bool,
    rules: Rules,
) -> tuple[npt.NDArray[np.bool_], npt.NDArray[np.bool_]]:
    """Which elements differ, and where only one side is NaN (or NaT)."""
    with np.errstate(all="ignore"):
        if inexact:
            close = rules.isclose(reference, actual)
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
                        parts_close &= rules.isclose(ref_part, act_part)
                    close = np.where(some_nan, parts_close, close)
        else:
            close = _equal_elements(reference, actual, rules)
            nan_moved = np.zeros(reference.shape, dtype=bool)
            ref_missing, act_missing = _missing(reference), _missing(actual)
            if ref_missing is not None or act_missing is not None:
                # NaT != NaT as NaN != NaN: a missing value at the same place is the same answer.
                none = np.zeros(reference.shape, dtype=bool)
                ref_missing = none if ref_missing is None else ref_missing
                act_missing = none if act_missing is None else act_missing
                nan_moved = ref_missing != act_missing
                if rules.equal_nan:
                    close = close | (ref_missing & act_missing)
    return ~np.asarray(close, dtype=bool), np.asarray(nan_moved, dtype=bool)


def _missing(array: npt.NDArray[Any]) -> npt.NDArray[np.bool_] | None:
    """Where an exact array holds a missing value that equals nothing, itself included: NaT
    among times, and NaN as NumPy 2's `StringDType(na_object=np.nan)` holds it (pandas'
    strings), where a right candidate's missing strings read "expected nan, got nan". None
    for an array that holds none."""
    if array.dtype.kind in "mM":
        return np.asarray(np.isnat(array), dtype=bool)
    if array.dtype.kind == "T":
        return np.asarray(np.isnan(array), dtype=bool)
    return None


def _equal_elements(
    reference: npt.NDArray[Any],
    actual: npt.NDArray[Any],
    rules: Rules,
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
    except (ValueError, TypeError, DeprecationWarning, FutureWarning):
        # TypeError: an object array holding `pd.NA` (a pandas `string` array's values),
        # whose `==` is NA, and whose truth pandas refuses.
        pairs = zip(reference.flat, actual.flat, strict=True)
        each = [not rules.compare(r, a, "") for r, a in pairs]
        return np.array(each, dtype=bool).reshape(reference.shape)
    if reference.dtype.kind == "O":
        flat = equal.reshape(-1)  # a view: `equal` is a new array of its own
        unequal = np.flatnonzero(~flat)
        ref_items = [reference.flat[i] for i in unequal]
        act_items = [actual.flat[i] for i in unequal]
        # Numbers as a list's are, all at once: one by one, 1e6 floats that differ by a
        # rounding took 85 s.
        differing = differing_numbers(ref_items, act_items, rules)
        if differing is not None:
            flat[unequal] = True
            flat[unequal[differing]] = False
            return equal
        for i, ref_item, act_item in zip(unequal, ref_items, act_items, strict=True):
            flat[i] = not rules.compare(ref_item, act_item, "")
    return equal
