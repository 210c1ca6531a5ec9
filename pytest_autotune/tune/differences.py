"""How a difference between two outputs reads: values cut short, a long string's excerpt
around its first difference, an array's first differing element, the largest errors of those
that differ (the figures that tell a rounding slip from a wrong algorithm), and notes on what
the tolerances do not cover."""

from __future__ import annotations

import importlib
import math
from typing import Any

import numpy as np
import numpy.typing as npt

from pytest_autotune.tune.wording import counted, cut

PYTHON_NUMBERS = (bool, int, float, complex)


LISTED_DIFFERENCES = 10
"""Differences listed in full; the rest are counted. A list or dict of numbers has one per
element that differs: a `tolist()` output wrong everywhere made a message of megabytes."""


EXCERPT = 30
"""Characters shown on each side of the first difference of two long strings."""


def text_difference(where: str, reference: str | bytes, actual: str | bytes) -> str:
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


EXACT_FLOAT_INTEGERS = 2**53
"""Integers of at most this magnitude are exact as float64: a list holding none larger
compares as an array, and integers within it that differ get exact float error figures."""


def ambiguous(value: object) -> bool:
    """Whether `value` is a string that reads as nothing, or as another, unquoted: empty,
    or beginning or ending with spaces ("expected , got x" read as a garbled message)."""
    return isinstance(value, str) and (not value or value != value.strip())


def element_text(value: object, quoted: bool) -> str:
    """One element as a message shows it, cut short (one may be a 1 MB string); a string
    `quoted` where it or the element it is shown beside is `ambiguous`."""
    text = repr(str(value)) if quoted and isinstance(value, str) else str(value)
    return cut(text)


def errors_text(
    max_errors: tuple[float, float] | None, max_time: int | None, dtype: np.dtype[Any]
) -> str:
    """The largest errors of the elements that differ, as a message gives them."""
    if max_errors is not None:
        return f", max abs error {max_errors[0]:.6g}, max rel error {max_errors[1]:.6g}"
    if max_time is not None:
        return f", max abs error {_time_text(max_time, dtype)}"
    return ""


def exact_note(within: bool) -> str:
    """A note where integers that differ lie within the tolerances: `rtol=0.5` and two
    ints 5% apart failed with "expected 20, got 21", and no word that the marker's
    tolerances apply to floating point values only."""
    if not within:
        return ""
    return "; integers compare exactly: rtol and atol apply to floating point values"


def shape_differs(where: str, reference: npt.NDArray[Any], actual: npt.NDArray[Any]) -> str:
    return f"{where}: shape differs: expected {reference.shape}, got {actual.shape}"


def index_text(flat_index: int, shape: tuple[int, ...]) -> str:
    """An element's index in `shape` as the messages write it: `3, 1` for [3, 1]."""
    return ", ".join(str(int(i)) for i in np.unravel_index(flat_index, shape))


ROUNDING_STEPS = 64
"""Relative errors up to this many times a dtype's eps read as rounding, which a finer
`rtol` than the dtype holds fails (`too_fine`); larger ones as a wrong answer."""


def float_precision(dtype: np.dtype[Any]) -> tuple[str, float] | None:
    """The name and eps of a floating point dtype (ml_dtypes' too), else None."""
    if dtype.kind not in "fcV":
        return None
    try:
        return str(dtype), float(np.finfo(dtype).eps)
    except (TypeError, ValueError):
        try:  # ml_dtypes' bfloat16 and float8 types have a finfo of their own
            return str(dtype), float(importlib.import_module("ml_dtypes").finfo(dtype).eps)
        except Exception:
            return None


def too_fine(
    dtype: np.dtype[Any],
    rtol: float,
    max_errors: tuple[float, float] | None,
    widened_from: tuple[str, float] | None = None,
) -> str:
    """A note where `rtol` is below the resolution of a float dtype (float16 and the
    default 1e-5): only bit-equal values pass, and a correct half-precision kernel that
    rounds once otherwise failed with no word why. Only where the errors (`max_errors`,
    absolute and relative) are a rounding's: "set rtol for this dtype" told a candidate
    wrong by 200%, or one that overflowed to inf, to loosen the tolerance. `widened_from`
    names the dtype, and its eps, that values NumPy has no dtype for were read from."""
    if max_errors is None:
        return ""
    precision = widened_from if widened_from is not None else float_precision(dtype)
    if precision is None:
        return ""
    name, eps = precision
    if not 0 < rtol < eps:
        return ""  # rtol=0 asks for no relative tolerance at all (atol alone, or exactness)
    if not max_errors[1] <= ROUNDING_STEPS * eps:
        return ""
    return (
        f"; rtol={rtol:g} is finer than {name} can hold (its eps is {eps:.3g}), so only"
        " bit-equal values pass: set rtol for this dtype"
    )


def near_zero(rtol: float, max_abs_error: float, magnitude: float) -> str:
    """A note where every element that differs is within `rtol` of the output's largest
    `magnitude` (`max_abs_error` the largest of their errors, all finite), though not of
    its own value: the elements a sum cancels to near zero (a matmul's, a convolution's)
    carry the rounding of the large terms summed, which rtol of each small result does not
    cover. A correct float32 matmul of 512x512, blocked against np.dot, failed at 1.5% of
    its elements with "max rel error 0.02", which read as a wrong kernel; an atol of rtol
    times that magnitude, the rounding the output's scale allows, passes them."""
    bound = rtol * magnitude
    if not 0 < max_abs_error <= bound < math.inf:
        return ""
    # Two digits, rounded up, so that the atol named passes every element that differs.
    # Below 1e-322 the step underflows to 0, where a subnormal bound has two digits at
    # most; past float64's largest the rounding up does, and no atol is named.
    step = 10.0 ** (math.floor(math.log10(bound)) - 1)
    atol = math.ceil(bound / step) * step if step > 0 else bound
    if not math.isfinite(atol):
        return ""
    return (
        f"; every element that differs is within rtol of the output's largest magnitude"
        f" ({magnitude:.6g}), as roundings are where a sum cancels to near zero, which rtol"
        f" of each element does not cover: atol={atol:.2g} passes them"
    )


def largest_errors(
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


def time_error(
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


def mismatch(where: str, reference: object, actual: object) -> str:
    return f"{where}: expected {describe(reference)}, got {describe(actual)}"


def describe(value: object) -> str:
    if isinstance(value, np.generic):
        return f"{value.dtype} scalar {value}"
    dtype, shape = getattr(value, "dtype", None), getattr(value, "shape", None)
    if dtype is not None and shape is not None:
        if type(value).__module__.partition(".")[0] in ("numpy", "cupy"):
            return f"{dtype} array of shape {shape}"
        # A sparse matrix or a Series against an array read as two arrays alike: "expected
        # float64 array of shape (100, 100), got float64 array of shape (100, 100)".
        return f"{type(value).__name__} of {dtype} and shape {shape}"
    if value is None or isinstance(value, PYTHON_NUMBERS):
        return repr(value)
    if isinstance(value, (tuple, list)):
        return f"{type(value).__name__} of {counted(len(value), 'item')}"
    return type(value).__name__
