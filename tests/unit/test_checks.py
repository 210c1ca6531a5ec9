"""Output checks: comparing outputs, and checking every candidate against the reference."""

from __future__ import annotations

import array
import collections
import concurrent.futures
import dataclasses
import sys
import time
import tracemalloc
import types
import weakref

import numpy as np
import pytest

from pytest_autotune.tune.array_comparison import Rules, differing_numbers
from pytest_autotune.tune.check_result import CheckResult
from pytest_autotune.tune.checks import check_candidates
from pytest_autotune.tune.clone import clone_value
from pytest_autotune.tune.comparison import compare_outputs
from pytest_autotune.tune.errors import AutotuneError, AutotuneErrorKind, AutotuneSkip


def test_equal_arrays_compare_equal():
    assert compare_outputs(np.arange(6.0).reshape(2, 3), np.arange(6.0).reshape(2, 3)) is None


def test_floats_within_the_tolerances_are_equal():
    ref = np.array([1.0, 100.0, 0.0], dtype=np.float32)
    act = ref + np.array([1e-6, 1e-4, 0.0], dtype=np.float32)
    assert compare_outputs(ref, act, rtol=1e-5, atol=1e-8) is None


def test_a_float_difference_is_reported_with_errors_count_and_first_bad_index():
    ref = np.zeros((2, 3), dtype=np.float64) + 2.0
    act = ref.copy()
    act[1, 2] = 2.5
    act[0, 1] = 3.0
    message = compare_outputs(ref, act)
    assert message == (
        "output: 2 of 6 elements differ (rtol=1e-05, atol=1e-08), max abs error 1, "
        "max rel error 0.5; first at [0, 1]: expected 2.0, got 3.0"
    )


def test_the_tolerance_is_relative_to_the_reference():
    # |1.5 - 1| = 0.5 is within 40% of 1.5 but not of 1: the reference sets the scale.
    assert compare_outputs(np.array([1.0]), np.array([1.5]), rtol=0.4, atol=0) is not None
    assert compare_outputs(np.array([1.5]), np.array([1.0]), rtol=0.4, atol=0) is None


def test_nan_positions_must_match():
    ref = np.array([1.0, np.nan, 3.0, 4.0])
    assert compare_outputs(ref, ref.copy()) is None
    moved = np.array([1.0, 2.0, np.nan, 4.0])
    assert compare_outputs(ref, moved) == (
        "output: 2 of 4 elements differ (rtol=1e-05, atol=1e-08); "
        "first at [1]: expected nan, got 2.0; NaN positions differ at 2 elements"
    )


def test_without_equal_nan_any_nan_is_a_difference():
    ref = np.array([np.nan, 1.0])
    assert compare_outputs(ref, ref.copy(), equal_nan=False) == (
        "output: 1 of 2 elements differ (rtol=1e-05, atol=1e-08);"
        " first at [0]: expected nan, got nan"
    )


def test_not_a_time_compares_as_nan_does():
    # NaT != NaT, as NaN != NaN: the same missing timestamps failed a correct candidate with
    # "expected NaT, got NaT".
    ref = np.array(["2024-01-01", "NaT", "2024-01-03"], dtype="datetime64[D]")
    assert compare_outputs(ref, ref.copy()) is None
    assert compare_outputs(ref.astype("timedelta64[D]"), ref.astype("timedelta64[D]")) is None
    moved = np.array(["2024-01-01", "2024-01-02", "NaT"], dtype="datetime64[D]")
    assert compare_outputs(ref, moved) == (
        "output: 2 of 3 elements differ; first at [1]: expected NaT, got 2024-01-02;"
        " NaT positions differ at 2 elements"
    )
    assert compare_outputs(ref, ref.copy(), equal_nan=False) == (
        "output: 1 of 3 elements differ; first at [1]: expected NaT, got NaT"
    )


def test_times_that_differ_give_their_largest_gap():
    # "expected 2020-01-01T00, got 2020-01-01T01" alone told an hour's shift of one element
    # from one of every element, or of a day.
    ref = np.array(["2020-01-01T00", "2020-01-02T00", "NaT"], dtype="datetime64[h]")
    shifted = ref + np.array([1, 5, 0], dtype="timedelta64[h]")
    assert compare_outputs(ref, shifted) == (
        "output: 2 of 3 elements differ, max abs error 5 hours; first at [0]:"
        " expected 2020-01-01T00, got 2020-01-01T01"
    )
    assert compare_outputs(np.timedelta64(3, "ms"), np.timedelta64(5, "ms")) == (
        "output: expected 3 milliseconds, got 5 milliseconds, max abs error 2 milliseconds"
    )
    # Exact where the gap overflows int64 (it read "3 nanoseconds"), and in steps of 5 s.
    far = compare_outputs(
        np.array([2**63 - 2], dtype="datetime64[ns]"),
        np.array([-(2**63) + 2], dtype="datetime64[ns]"),
    )
    assert far is not None and "max abs error 18446744073709551612 nanoseconds" in far
    steps = compare_outputs(np.array([0, 1], "M8[5s]"), np.array([0, 3], "M8[5s]"))
    assert steps is not None and "max abs error 10 seconds" in steps
    # Of either byte order, which stores the same times (it read "1634813261804818411 hours").
    swapped = compare_outputs(ref, shifted.astype(">M8[h]"))
    assert swapped is not None and "max abs error 5 hours" in swapped


def test_infinities_must_match_in_sign():
    assert compare_outputs(np.array([np.inf]), np.array([np.inf])) is None
    assert compare_outputs(np.array([np.inf]), np.array([-np.inf])) == (
        "output: 1 of 1 elements differ (rtol=1e-05, atol=1e-08);"
        " first at [0]: expected inf, got -inf"
    )


def test_large_arrays_are_compared_without_full_size_temporaries():
    # np.isclose over the whole output made several temporaries of its size (three for two
    # equal float32 arrays, five with a difference): a check of a 1 GiB output needed GiBs
    # more than the outputs themselves. Compared in blocks, it needs a block's worth.
    ref = np.random.default_rng(0).random(1 << 22, dtype=np.float32)
    for act in (ref.copy(), ref + np.float32(1.0)):
        tracemalloc.start()
        try:
            compare_outputs(ref, act)
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
        assert peak < ref.nbytes // 2


def test_differences_in_far_apart_blocks_are_all_counted_and_measured():
    ref = np.zeros((4, 1 << 19))
    act = ref.copy()
    act[0, 7] = 1.0
    act[3, 5] = -4.0
    act[3, 6] = np.nan
    assert compare_outputs(ref, act) == (
        "output: 3 of 2097152 elements differ (rtol=1e-05, atol=1e-08), max abs error 4,"
        " max rel error inf; first at [0, 7]: expected 0.0, got 1.0;"
        " NaN positions differ at 1 element"
    )
    assert compare_outputs(np.asfortranarray(ref), np.asfortranarray(act)) == (
        compare_outputs(ref, act)
    )


def test_an_infinity_is_no_finite_value_even_where_the_tolerance_overflows_its_dtype():
    # NumPy's `isclose` computes `atol + rtol * |reference|` in the reference's dtype: in
    # float16, rtol=2 of 40000 overflowed to inf, and a candidate's inf passed "within inf".
    ref = np.full(4, 40000.0, dtype=np.float16)
    wrong = ref.copy()
    wrong[3] = np.inf
    said = compare_outputs(ref, wrong, rtol=2)
    # The expected value reads 4e+04 under NumPy 2, 40000.0 under NumPy 1.
    assert said is not None
    assert said.startswith("output: 1 of 4 elements differ (rtol=2, atol=1e-08); first at [3]")
    assert said.endswith(("expected 4e+04, got inf", "expected 40000.0, got inf"))
    assert compare_outputs(ref, ref * np.float16(1.5), rtol=2) is None  # within, and finite
    single = np.ones(2, dtype=np.float32)
    assert compare_outputs(single, np.array([1.0, -np.inf], np.float32), atol=1e39) is not None
    complex_ref = np.full(2, 40000 + 1j, dtype=np.complex64)
    assert compare_outputs(complex_ref, complex_ref * np.inf, atol=1e39) is not None
    assert compare_outputs(ref * np.inf, ref * np.inf, rtol=2) is None


def test_integers_compare_exactly_whatever_the_tolerance():
    ref = np.array([10, 20, 30], dtype=np.int32)
    act = np.array([10, 21, 30], dtype=np.int32)
    assert compare_outputs(ref, act, rtol=0.5, atol=5) == (
        "output: 1 of 3 elements differ, max abs error 1, max rel error 0.05; "
        "first at [1]: expected 20, got 21; integers compare exactly: rtol and atol apply to"
        " floating point values"
    )


def test_int64_values_past_float_precision_that_differ_give_their_exact_errors():
    # As float64, 2**62 and 2**62 + 3 are one number: they read "max abs error 0, max rel
    # error 0" though they differ.
    ref = np.array([1 << 62, 5], dtype=np.int64)
    act = np.array([(1 << 62) + 3, 5], dtype=np.int64)
    assert compare_outputs(ref, act) == (
        "output: 1 of 2 elements differ, max abs error 3, max rel error 6.50521e-19;"
        " first at [0]: expected 4611686018427387904, got 4611686018427387907;"
        " integers compare exactly: rtol and atol apply to floating point values"
    )
    extremes = np.array([np.iinfo(np.int64).min], dtype=np.int64)
    message = compare_outputs(extremes, np.array([np.iinfo(np.int64).max], dtype=np.int64))
    assert message is not None and "max abs error 1.84467e+19, max rel error 2;" in message
    top = np.array([np.iinfo(np.uint64).max, 7], dtype=np.uint64)
    message = compare_outputs(top, np.array([0, 9], dtype=np.uint64))
    assert message is not None and "max abs error 1.84467e+19, max rel error 1;" in message


def test_many_int64_values_past_float_precision_are_compared_as_fast_as_floats():
    # Their exact errors were found in Python ints, one by one: 10**7 that differed took
    # 5 s to say so, some 30 times a float array's comparison of the same size.
    def seconds(ref: np.ndarray, act: np.ndarray) -> float:
        best = float("inf")
        for _ in range(3):
            start = time.perf_counter()
            assert compare_outputs(ref, act) is not None
            best = min(best, time.perf_counter() - start)
        return best

    floats = np.arange(1_000_000, dtype=np.float64)
    ints = np.full(floats.size, 1 << 62, dtype=np.int64)
    assert seconds(ints, ints + 3) < 10 * seconds(floats, floats + 1)


def test_booleans_compare_exactly_without_error_figures():
    assert compare_outputs(np.array([True, False]), np.array([True, True])) == (
        "output: 1 of 2 elements differ; first at [1]: expected False, got True"
    )


def test_a_dtype_mismatch_is_a_failure_even_with_equal_values():
    message = compare_outputs(np.ones(3, dtype=np.float32), np.ones(3, dtype=np.float64))
    assert message == "output: dtype differs: expected float32, got float64"


def test_strings_of_another_width_compare_by_value():
    # np.char.upper keeps its input's width, a list of the same words makes its own.
    words = np.array(["abc", "de"], dtype="U10")
    assert compare_outputs(np.char.upper(words), np.array([w.upper() for w in words])) is None
    assert compare_outputs(np.array([b"ab"]), np.array([b"ab"], dtype="S5")) is None
    assert compare_outputs(np.array(["abc", "de"], dtype="U10"), np.array(["abc", "dx"])) == (
        "output: 1 of 2 elements differ; first at [1]: expected de, got dx"
    )
    assert compare_outputs(np.str_("abc"), np.str_("abcd")) == "output: expected abc, got abcd"
    records = np.array([("abc", 1.0)], dtype=[("name", "U3"), ("v", "f8")])
    wider = np.array([("abc", 1.0)], dtype=[("name", "U8"), ("v", "f8")])
    assert compare_outputs(records, wider) is None
    assert compare_outputs(records, wider.astype([("name", "U8"), ("v", "i8")])) == (
        "output: dtype differs: expected [('name', '<U3'), ('v', '<f8')],"
        " got [('name', '<U8'), ('v', '<i8')]"
    )


def test_numpy_2s_variable_width_strings_compare_with_fixed_width_ones_by_value():
    dtypes = pytest.importorskip("numpy.dtypes")
    if not hasattr(dtypes, "StringDType"):
        pytest.skip("NumPy before 2.0 has no StringDType")
    words = np.array(["abc", "de"], dtype=dtypes.StringDType())
    assert compare_outputs(words, np.array(["abc", "de"])) is None
    assert compare_outputs(np.array(["abc", "dx"]), words) == (
        "output: 1 of 2 elements differ; first at [1]: expected dx, got de"
    )
    assert compare_outputs(np.array("abc", dtype=dtypes.StringDType()), "abc") is None
    # A dtype of no byte order against another kind raised out of the check.
    assert compare_outputs(words, np.ones(2)) == (
        "output: dtype differs: expected StringDType(), got float64"
    )


def test_numpy_2s_strings_missing_as_nan_at_the_same_places_are_equal():
    # `StringDType(na_object=np.nan)` (pandas' missing strings) holds a NaN that equals
    # nothing: a right candidate read "expected nan, got nan".
    dtypes = pytest.importorskip("numpy.dtypes")
    strings = dtypes.StringDType(na_object=np.nan)
    words = np.array(["a", np.nan, "c"], dtype=strings)
    assert compare_outputs(words, words.copy()) is None
    assert compare_outputs(words, np.array(["a", "b", "c"], dtype=strings)) == (
        "output: 1 of 3 elements differ; first at [1]: expected nan, got b;"
        " NaN positions differ at 1 element"
    )
    assert compare_outputs(words, words.copy(), equal_nan=False).startswith(
        "output: 1 of 3 elements differ"
    )


def test_a_numpy_string_and_a_python_string_compare_by_value():
    assert compare_outputs(np.array(["abc"])[0], "abc") is None
    assert compare_outputs(b"ab", np.bytes_(b"ab")) is None
    assert compare_outputs("abc", np.str_("abd")) == "output: expected 'abc', got 'abd'"


def test_arrays_of_another_byte_order_compare_by_value():
    # Read from a big-endian file (FITS), against the same values computed natively.
    big = np.arange(4.0).astype(">f8")
    assert compare_outputs(big, np.arange(4.0)) is None
    assert compare_outputs(np.arange(4.0), big + 1).startswith("output: 4 of 4 elements differ")


def test_a_shape_mismatch_is_a_failure():
    message = compare_outputs(np.ones((2, 3)), np.ones((3, 2)))
    assert message == "output: shape differs: expected (2, 3), got (3, 2)"


@pytest.mark.filterwarnings("ignore:the matrix subclass:PendingDeprecationWarning")
def test_a_matrix_is_compared_as_its_array_and_names_its_first_bad_element():
    # A scipy.sparse `.todense()` is an np.matrix, whose rows stay 2-d when indexed: the
    # first bad element's lookup raised IndexError from inside the check.
    reference = np.matrix([[1.0, 2.0, 3.0]])
    wrong = np.matrix([[1.0, 5.0, 3.0]])
    assert compare_outputs(reference, reference.copy()) is None
    message = compare_outputs(reference, wrong)
    assert message is not None
    assert "1 of 3 elements differ" in message
    assert "first at [0, 1]: expected 2.0, got 5.0" in message


def test_a_ragged_object_array_is_compared_element_by_element():
    # Its elements are arrays, and `==` on two object arrays of arrays raised "the truth
    # value of an array is ambiguous" from inside the check.
    def ragged(*rows):
        out = np.empty(len(rows), dtype=object)
        out[:] = [np.asarray(row, dtype=float) for row in rows]
        return out

    reference = ragged([1.0, 2.0], [3.0, 4.0, 5.0])
    assert compare_outputs(reference, ragged([1.0, 2.0], [3.0, 4.0, 5.0 + 1e-9])) is None
    message = compare_outputs(reference, ragged([1.0, 2.0], [3.0, 0.0, 5.0]))
    assert message is not None
    assert "1 of 2 elements differ; first output[1]: 1 of 3 elements differ" in message


def test_a_ragged_object_arrays_row_says_what_differs_in_it():
    # A row of another dtype or length, or wrong at its tenth element, read "first at [0]:
    # expected [1. 1.], got [1. 1.]": the rows' str hid what the row's own comparison knew.
    # The first such row now reads as a list's item does, by its full position.
    def ragged(*rows: object) -> np.ndarray:
        out = np.empty(len(rows), dtype=object)
        out[:] = list(rows)
        return out

    reference = ragged(np.ones(2), np.ones(3))
    assert compare_outputs(reference, ragged(np.ones(2, np.float32), np.ones(3))) == (
        "output: 1 of 2 elements differ; first output[0]: dtype differs: expected float64,"
        " got float32"
    )
    assert compare_outputs(reference, ragged(np.ones(2), np.ones(4))) == (
        "output: 1 of 2 elements differ; first output[1]: shape differs: expected (3,), got (4,)"
    )
    rows = ragged({"a": np.arange(20.0), "b": 1.0}, {"a": np.arange(3.0), "b": 1.0})
    wrong = ragged({"a": np.arange(20.0), "b": 1.0}, {"a": np.arange(3.0), "b": 2.0})
    wrong[0]["a"][9] = 0.5
    assert compare_outputs(rows, wrong) == (
        "output: 2 of 2 elements differ; first output[0]['a']: 1 of 20 elements differ"
        " (rtol=1e-05, atol=1e-08), max abs error 8.5, max rel error 0.944444; first at"
        " [9]: expected 9.0, got 0.5"
    )
    # One row alone (a 0-d object array) reads as the row's own difference.
    one = np.empty((), dtype=object)
    one[()] = np.ones(2)
    other = np.empty((), dtype=object)
    other[()] = np.ones(2, np.float32)
    assert compare_outputs(one, other) == "output: dtype differs: expected float64, got float32"
    # A row that is an object array itself names its own differing row in full.
    nested = ragged(ragged(np.ones(2), np.ones(3)), 1.0)
    assert compare_outputs(nested, ragged(ragged(np.ones(2), np.zeros(3)), 1.0)) == (
        "output: 1 of 2 elements differ; first output[0]: 1 of 2 elements differ; first"
        " output[0][1]: 3 of 3 elements differ (rtol=1e-05, atol=1e-08), max abs error 1, max"
        " rel error 1; first at [0]: expected 1.0, got 0.0"
    )


@pytest.mark.filterwarnings("ignore")
def test_a_wrong_ragged_output_is_found_where_warnings_are_not_errors():
    # NumPy before 1.25 did not raise on `==` of two object arrays of arrays: it warned and
    # returned one False for the whole array. Only the first element was then compared
    # again, and in a project that does not turn warnings into errors a wrong second row
    # passed the check.
    def ragged(*rows):
        out = np.empty(len(rows), dtype=object)
        out[:] = [np.asarray(row, dtype=float) for row in rows]
        return out

    message = compare_outputs(ragged([1.0, 2.0], [3.0, 4.0]), ragged([1.0, 2.0], [3.0, 9.0]))
    assert message is not None
    assert "1 of 2 elements differ; first output[1]: 1 of 2 elements differ" in message


def test_the_numbers_of_an_object_array_compare_as_numbers_do():
    # An object array of floats (mixed with None, as a column with missing values is) was
    # compared with `==`: NaN failed against NaN, and the tolerances were ignored, as a
    # list of the same floats would not be.
    reference = np.array([1.0, np.nan, None, "label"], dtype=object)
    close = np.array([1.0 + 1e-12, np.nan, None, "label"], dtype=object)
    assert compare_outputs(reference, close) is None
    assert compare_outputs(reference, np.array([2.0, np.nan, None, "label"], object)) == (
        "output: 1 of 4 elements differ; first at [0]: expected 1.0, got 2.0"
    )


def test_a_numpy_scalar_and_a_python_float_compare_by_value():
    assert compare_outputs(np.float32(0.1), 0.1) is None
    assert compare_outputs(0.1, np.float32(0.1)) is None
    assert compare_outputs(np.float64(2.0), 2.5) == (
        "output: expected 2.0, got 2.5, max abs error 0.5, max rel error 0.25 "
        "(rtol=1e-05, atol=1e-08)"
    )


def test_a_float_wider_than_pythons_and_a_python_number_compare_by_value():
    # Its `.item()` is no Python float: `np.longdouble(1.5)` against a candidate's `1.5`
    # read "expected float128 scalar 1.5, got 1.5".
    assert compare_outputs(np.longdouble(1.5), 1.5) is None
    assert compare_outputs(2.0, np.asarray(np.longdouble(2.0))) is None
    assert compare_outputs(np.clongdouble(1 + 2j), 1 + 2j) is None
    assert compare_outputs(np.longdouble(1.5), 1.6).startswith("output: expected 1.5, got 1.6")


def test_extension_number_types_and_a_python_number_compare_by_value():
    ml_dtypes = pytest.importorskip("ml_dtypes")
    assert compare_outputs(np.asarray(1.5, dtype=ml_dtypes.bfloat16), 1.5) is None
    assert compare_outputs(np.asarray(3, dtype=ml_dtypes.int4), 3) is None


def test_quad_precision_compares_within_the_tolerances_and_nan_to_nan():
    # numpy-quaddtype's dtype, of no NumPy kind, compared by `==`: a rounding in the 34th
    # digit failed a right candidate, NaN never equalled NaN, and its sum against a float
    # read "expected QuadPrecDType(backend='sleef') scalar 3.0, got 3.0".
    quad = pytest.importorskip("numpy_quaddtype").QuadPrecDType()
    values = np.array([1.0, 2.0, np.nan]).astype(quad)
    rounded = np.array([1.0 + 1e-12, 2.0, np.nan]).astype(quad)
    assert compare_outputs(values, rounded) is None
    wrong = values.copy()
    wrong[1] = 2.5
    assert compare_outputs(values, wrong) == (
        "output: 1 of 3 elements differ (rtol=1e-05, atol=1e-08); first at [1]: expected 2.0,"
        " got 2.5"
    )
    assert compare_outputs(values, wrong, rtol=0.5) is None
    assert compare_outputs(values[:2].sum(), 3.0) is None


def test_a_zero_d_array_and_a_numpy_scalar_of_one_dtype_are_the_same_output():
    assert compare_outputs(np.float32(3.0), np.asarray(np.float32(3.0))) is None


def test_numpy_scalars_of_different_dtypes_differ():
    assert compare_outputs(np.int32(3), np.int64(3)) == (
        "output: dtype differs: expected int32, got int64"
    )


def test_an_array_is_not_a_python_number():
    assert compare_outputs(np.ones(3, dtype=np.float32), 1.0) == (
        "output: expected float32 array of shape (3,), got 1.0"
    )


def test_a_python_number_against_an_array_that_is_no_single_number_is_a_difference():
    # The reverse of the test above: the reference a Python float, a candidate's output an
    # array of one element (or a 0-d array of text) recursed until Python's limit.
    assert compare_outputs(1.0, np.array([1.0])) == (
        "output: expected 1.0, got float64 array of shape (1,)"
    )
    assert compare_outputs(1.0, np.array("1.0")) == (
        "output: expected 1.0, got <U3 array of shape ()"
    )
    assert compare_outputs(3, np.ones((2, 2), dtype=np.int64)) == (
        "output: expected 3, got int64 array of shape (2, 2)"
    )


def test_python_integers_compare_exactly_beyond_int64():
    big = 1 << 70
    assert compare_outputs(big, big) is None
    assert compare_outputs(big, big + 1) == f"output: expected {big}, got {big + 1}"
    assert compare_outputs(np.int64(7), 7) is None
    assert compare_outputs(np.int64(7), 8) == "output: expected 7, got 8"


def test_a_bool_is_not_an_integer():
    assert compare_outputs(True, True) is None
    assert compare_outputs(True, 1) == "output: expected True, got 1"
    assert compare_outputs(np.bool_(True), 1) == "output: expected True, got 1"
    assert compare_outputs(np.array([True]), True) == (
        "output: expected bool array of shape (1,), got True"
    )


def test_python_floats_use_the_tolerances():
    assert compare_outputs(1.0, 1.0 + 1e-9) is None
    assert compare_outputs(1, 1.0) is None
    assert compare_outputs(1.0, float("nan")) is not None
    assert compare_outputs(float("nan"), float("nan")) is None


def test_none_only_equals_none():
    assert compare_outputs(None, None) is None
    assert compare_outputs(None, 0) == "output: expected None, got 0"


def test_tuples_compare_item_by_item_and_name_the_position():
    ref = (np.ones(2), 3, (1.0, 2.0))
    act = (np.ones(2), 4, (1.0, 2.5))
    assert compare_outputs(ref, act) == (
        "output[1]: expected 3, got 4\n"
        "output[2][1]: expected 2.0, got 2.5, max abs error 0.5, max rel error 0.25 "
        "(rtol=1e-05, atol=1e-08)"
    )


def test_a_long_list_that_differs_everywhere_lists_its_first_differences_and_counts_the_rest():
    # A candidate returning `x.tolist()` wrong at every element made one line per element:
    # megabytes of failure message for a list of 100 000 floats.
    ref = [float(i) for i in range(1000)]
    message = compare_outputs(ref, [v + 1 for v in ref])
    assert message is not None
    lines = message.splitlines()
    assert lines[0] == (
        "output[0]: expected 0.0, got 1.0, max abs error 1, max rel error inf"
        " (rtol=1e-05, atol=1e-08)"
    )
    assert lines[9].startswith("output[9]: expected 9.0, got 10.0")
    assert lines[10:] == ["... and 990 more differences"]


def test_sequences_of_different_length_differ():
    assert compare_outputs((1, 2, 3), (1, 2)) == "output: expected 3 items, got 2"


def test_counts_of_one_read_in_the_singular():
    assert compare_outputs((1,), ()) == "output: expected 1 item, got 0"
    assert compare_outputs((1,), [1]) == "output: expected tuple of 1 item, got list of 1 item"
    message = compare_outputs(np.array([np.nan, 1.0]), np.array([1.0, 1.0]))
    assert message is not None and message.endswith("NaN positions differ at 1 element")


def test_a_tuple_is_not_a_list():
    assert (
        compare_outputs((1, 2), [1, 2]) == "output: expected tuple of 2 items, got list of 2 items"
    )


def test_dicts_need_the_same_keys_and_equal_values():
    ref = {"values": np.zeros(2), "count": 2}
    assert compare_outputs(ref, {"values": np.zeros(2), "count": 2}) is None
    assert compare_outputs(ref, {"values": np.ones(2), "extra": 1}) == (
        "output: missing keys ['count']\n"
        "output: unexpected keys ['extra']\n"
        "output['values']: 2 of 2 elements differ (rtol=1e-05, atol=1e-08), max abs error 1, "
        "max rel error inf; first at [0]: expected 0.0, got 1.0"
    )


def test_dataclasses_compare_field_by_field_and_name_the_field():
    # A result dataclass holding arrays is how numeric code returns several outputs; its
    # generated `==` compares the arrays with `==`, whose truth NumPy refuses: the check
    # raised ValueError from inside the comparison, for a correct candidate too.
    @dataclasses.dataclass
    class Result:
        values: np.ndarray
        count: int
        note: str = dataclasses.field(default="", compare=False)

    ref = Result(np.array([1.0, 2.0]), 2, "reference")
    assert compare_outputs(ref, Result(np.array([1.0, 2.0 + 1e-9]), 2, "fast")) is None
    assert compare_outputs(ref, Result(np.array([1.0, 3.0]), 3)) == (
        "output.values: 1 of 2 elements differ (rtol=1e-05, atol=1e-08), max abs error 1, "
        "max rel error 0.5; first at [1]: expected 2.0, got 3.0\n"
        "output.count: expected 2, got 3"
    )
    assert compare_outputs(ref, (np.array([1.0, 2.0]), 2)) == (
        "output: expected Result, got tuple of 2 items"
    )


def test_a_type_with_autotune_compare_decides_for_itself():
    class Interval:
        def __init__(self, low: float, high: float) -> None:
            self.low, self.high = low, high

        def autotune_compare(self, other: object, rtol: float, atol: float) -> str | None:
            assert isinstance(other, Interval)
            return None if other.low >= self.low and other.high <= self.high else "outside"

    assert compare_outputs(Interval(0, 10), Interval(2, 3)) is None
    assert compare_outputs((Interval(0, 10),), (Interval(-1, 3),)) == "output[0]: outside"


def test_an_output_the_references_autotune_compare_raises_on_fails_that_candidate_alone():
    # Written as users write it, assuming its own type: a candidate returning another type
    # made it raise, which ended the checks (and a tuning with checks on) for every one.
    class Interval:
        def __init__(self, low: float, high: float) -> None:
            self.low, self.high = low, high

        def autotune_compare(self, other: object, rtol: float, atol: float) -> str | None:
            low, high = other.low, other.high  # type: ignore[attr-defined]
            return None if low >= self.low and high <= self.high else "outside"

    results = check_candidates(
        ["first", "scalar", "same"], outputs(Interval(0, 10), 3.0, Interval(1, 2))
    )
    assert results == [
        CheckResult("first", True, "reference"),
        CheckResult(
            "scalar",
            False,
            "differs from the reference 'first': output: Interval.autotune_compare raised"
            " AttributeError: 'float' object has no attribute 'low'",
        ),
        CheckResult("same", True),
    ]


def test_an_uncomparable_type_asks_for_autotune_compare():
    class Opaque:
        def __eq__(self, other: object) -> object:
            return np.array([True])

        __hash__ = None  # type: ignore[assignment]

    assert compare_outputs(Opaque(), Opaque()) == (
        "output: cannot compare values of type Opaque; give it an autotune_compare method"
    )


def test_cupy_arrays_are_copied_to_the_host_and_compared(monkeypatch):
    class FakeDeviceArray:
        def __init__(self, host: np.ndarray) -> None:
            self.host = host

    FakeDeviceArray.__module__ = "cupy._core.core"
    fake_cupy = types.SimpleNamespace(asnumpy=lambda a: a.host)
    monkeypatch.setitem(sys.modules, "cupy", fake_cupy)

    device = FakeDeviceArray(np.array([1.0, 2.0], dtype=np.float32))
    assert compare_outputs(device, FakeDeviceArray(np.array([1.0, 2.0], dtype=np.float32))) is None
    assert compare_outputs(np.array([1.0, 2.0], dtype=np.float32), device) is None
    assert compare_outputs(device, FakeDeviceArray(np.array([1.0, 3.0], dtype=np.float32))) == (
        "output: 1 of 2 elements differ (rtol=1e-05, atol=1e-08), max abs error 1, "
        "max rel error 0.5; first at [1]: expected 2.0, got 3.0"
    )


def outputs(*values: object):
    """A `run(i)` returning `values[i]`, raising it when it is an exception."""

    def run(index: int) -> object:
        value = values[index]
        if isinstance(value, BaseException):
            raise value
        return value

    return run


def test_the_first_candidate_that_succeeds_is_the_reference():
    results = check_candidates(
        ["crash", "first", "same", "wrong"],
        outputs(RuntimeError("boom"), np.ones(2), np.ones(2), np.zeros(2)),
    )
    assert results == [
        CheckResult("crash", False, "raised RuntimeError: boom"),
        CheckResult("first", True, "reference"),
        CheckResult("same", True),
        CheckResult(
            "wrong",
            False,
            "differs from the reference 'first': output: 2 of 2 elements differ "
            "(rtol=1e-05, atol=1e-08), max abs error 1, max rel error 1; "
            "first at [0]: expected 1.0, got 0.0",
        ),
    ]


def test_a_skip_is_not_a_failure():
    results = check_candidates(
        ["declines", "works"], outputs(AutotuneSkip("only even sizes"), np.ones(2))
    )
    assert results[0] == CheckResult("declines", True, "skipped: only even sizes", skipped=True)
    assert results[1] == CheckResult("works", True, "reference")


def test_an_autotune_error_of_kind_skip_declines_as_autotune_skip_does():
    # The seed's candidate declines with Err(AutotuneError::Skip); raised here, it declined
    # when timed but failed its check ("not my shape"), so a run with checks failed it.
    skip = AutotuneError(AutotuneErrorKind.SKIP, "not my shape")
    results = check_candidates(["declines", "works"], outputs(skip, np.ones(2)))
    assert results[0] == CheckResult("declines", True, "skipped: not my shape", skipped=True)
    assert results[1] == CheckResult("works", True, "reference")


def test_an_explicit_reference_judges_every_candidate():
    results = check_candidates(
        ["a", "b"], outputs(np.ones(2), np.zeros(2)), reference=lambda: np.zeros(2)
    )
    assert [r.passed for r in results] == [False, True]
    assert results[0].message.startswith("differs from the explicit reference: output: ")


def test_a_reference_index_runs_that_candidate_first():
    calls: list[int] = []

    def run(index: int) -> object:
        calls.append(index)
        return [1.0, 2.0, 3.0][index]

    results = check_candidates(["a", "b", "c"], run, reference=2)
    assert calls == [2, 0, 1]
    assert results[2] == CheckResult("c", True, "reference")
    assert results[0].message == (
        "differs from the reference 'c': output: expected 3.0, got 1.0, max abs error 2, "
        "max rel error 0.666667 (rtol=1e-05, atol=1e-08)"
    )


def test_without_a_reference_output_no_candidate_can_pass():
    results = check_candidates(["a", "b"], outputs(ValueError("bad"), 1.0), reference=0)
    assert results == [
        CheckResult("a", False, "raised ValueError: bad"),
        CheckResult("b", False, "cannot be checked: the reference 'a' failed"),
    ]
    raised = check_candidates(["a"], outputs(1.0), reference=lambda: 1 / 0)
    assert raised == [
        CheckResult(
            "a",
            False,
            "cannot be checked: the reference raised ZeroDivisionError: division by zero",
        )
    ]


def test_a_reference_that_declines_the_key_leaves_the_others_checked_as_without_one():
    # A named reference that declined (`AutotuneSkip`) failed every other candidate with
    # "cannot be checked: the reference 'exact' skipped", where plain pytest skipped them.
    named = check_candidates(
        ["a", "b", "exact"], outputs(2.0, 3.0, AutotuneSkip("needs mpmath")), reference=2
    )
    assert named[0] == CheckResult("a", True, "reference")
    assert not named[1].passed and "differs from the reference 'a'" in named[1].message
    assert named[2].skipped
    explicit = check_candidates(
        ["a", "b"], outputs(2.0, 2.0), reference=lambda: (_ for _ in ()).throw(AutotuneSkip())
    )
    assert explicit == [CheckResult("a", True, "reference"), CheckResult("b", True)]


def test_a_reference_index_out_of_range_is_a_programming_error():
    with pytest.raises(IndexError, match="reference index 3 is out of range for 2 candidates"):
        check_candidates(["a", "b"], outputs(1, 1), reference=3)


def test_check_results_round_trip_through_json():
    result = CheckResult("a", True, "skipped: no", skipped=True)
    assert CheckResult.from_json(result.to_json()) == result
    assert result.to_json() == {
        "name": "a",
        "passed": True,
        "message": "skipped: no",
        "skipped": True,
    }


def test_a_reference_output_of_none_fails_every_candidate_when_an_output_is_required() -> None:
    results = check_candidates(["a", "b"], lambda i: None, require_output=True)
    assert [r.passed for r in results] == [False, False]
    assert "returned None" in results[0].message and "nothing to compare" in results[1].message


def test_an_explicit_reference_returning_none_fails_every_candidate_too() -> None:
    results = check_candidates(["a"], lambda i: 3, reference=lambda: None, require_output=True)
    assert not results[0].passed and "returned None" in results[0].message


def test_a_first_candidate_returning_none_fails_where_a_later_one_returns_an_output() -> None:
    # A candidate that forgot its `return`, listed first, was the reference: it won the
    # tuning, and every correct candidate failed as "expected None".
    outputs = [None, np.arange(4.0), None, np.arange(4.0)]
    checks = check_candidates(["forgot", "good", "also_forgot", "good2"], outputs.__getitem__)
    assert [c.passed for c in checks] == [False, True, False, True]
    assert checks[0].message == (
        "returned None, where the reference 'good' returned float64 array of shape (4,)"
    )
    # One after the reference reads alike, as plain pytest says it (not "differs ... got None").
    assert checks[2].message == checks[0].message


def test_candidates_that_differ_from_the_reference_but_agree_with_each_other_say_so() -> None:
    # The reference (first) was off by 1%: both correct candidates failed against it, it
    # won, and nothing said which to suspect.
    outputs = [np.arange(4.0) * 1.01, np.arange(4.0), np.arange(4.0), np.arange(4.0) + 5]
    checks = check_candidates(["pairwise", "reduce", "dot", "off"], outputs.__getitem__)
    assert [c.passed for c in checks] == [True, False, False, False]
    hint = "is the reference 'pairwise' the wrong one? (reference= names the candidate"
    assert checks[1].message.endswith(
        f"; it agrees with 'dot': {hint} the others are checked against)"
    )
    assert "it agrees with 'reduce'" in checks[2].message
    assert "agrees" not in checks[3].message  # off on its own


def test_candidates_expected_to_be_wrong_are_no_evidence_against_the_reference() -> None:
    outputs = [np.arange(4.0), np.arange(4.0) * 2, np.arange(4.0) * 2]
    checks = check_candidates(["ref", "imprecise", "also"], outputs.__getitem__, last=[1, 2])
    assert not any("agrees" in c.message for c in checks)


def test_candidates_that_all_return_none_pass_with_nothing_to_compare() -> None:
    # In-place kernels writing into an output argument: None is each one's output.
    checks = check_candidates(["a", "b"], lambda i: None)
    assert [(c.passed, c.message) for c in checks] == [(True, "reference"), (True, "")]


def test_a_reference_named_by_index_that_returns_none_stays_the_reference() -> None:
    checks = check_candidates(["a", "b"], [np.ones(2), None].__getitem__, reference=1)
    assert [c.passed for c in checks] == [False, True]


def test_a_candidate_expected_to_be_wrong_is_the_reference_only_where_no_other_succeeds():
    outputs = [3.0, 2.0, 2.0]
    checks = check_candidates(["imprecise", "a", "b"], outputs.__getitem__, last=[0])
    assert [(c.passed, c.message) for c in checks] == [
        (
            False,
            "differs from the reference 'a': output: expected 2.0, got 3.0, max abs error"
            " 1, max rel error 0.5 (rtol=1e-05, atol=1e-08)",
        ),
        (True, "reference"),
        (True, ""),
    ]
    alone = check_candidates(["imprecise"], outputs.__getitem__, last=[0])
    assert [(c.passed, c.message) for c in alone] == [(True, "reference")]


def test_a_long_string_that_differs_shows_an_excerpt_around_the_first_difference():
    # A 1 MB string output was printed whole, twice, in the failure message: it flooded the
    # terminal and the JUnit XML, and the difference could not be found in it.
    ref = "a" * 500_000 + "b" + "z" * 500_000
    act = "a" * 500_000 + "c" + "z" * 400_000
    message = compare_outputs(ref, act)
    assert message is not None
    assert len(message) < 400
    assert message.startswith(
        "output: str differs at index 500000 (expected 1000001 characters, got 900001): "
    )
    assert "aaaaaaaaaabzzzzzzzzzz" in message and "aaaaaaaaaaczzzzzzzzzz" in message
    assert compare_outputs(b"x" * 10_000 + b"1", b"x" * 10_000 + b"2") == (
        "output: bytes differs at index 10000 (expected 10001 bytes, got 10001): "
        "expected ...b'xxxxxxxxxxxxxxxxxxxxxxxxxxxxxx1', got ...b'xxxxxxxxxxxxxxxxxxxxxxxxxxxxxx2'"
    )
    # One a prefix of the other: the difference is where the shorter one ends.
    message = compare_outputs("q" * 1000, "q" * 2000)
    assert message is not None and len(message) < 400
    assert message.startswith("output: str differs at index 1000 (expected 1000 characters")
    # Short strings read as before.
    assert compare_outputs("ab", "ac") == "output: expected 'ab', got 'ac'"


def test_any_other_long_value_that_differs_is_cut_short():
    from fractions import Fraction

    message = compare_outputs(Fraction(10**1000, 3), Fraction(10**1000 + 1, 3))
    assert message is not None and len(message) < 600
    assert message.startswith("output: expected Fraction(1000")


def test_a_long_list_of_numbers_is_compared_at_once_with_the_same_results(compare_calls):
    # A pure-Python candidate's list of floats was compared element by element, some 40 us
    # each: a list of 100 000 floats took seconds per candidate. It is compared as arrays
    # now; the element-wise comparison runs only for the few differences the message lists.
    nan = float("nan")
    ref = [float(i) for i in range(100_000)] + [nan, 2**52, 7]
    assert compare_outputs(ref, [v * (1 + 1e-9) for v in ref[:-2]] + [2**52, 7.0]) is None
    assert len(compare_calls) < 100
    wrong = [*ref]
    wrong[3] = 4.0
    wrong[-3] = 0.0  # NaN moved
    wrong[-1] = 8  # an integer compares exactly, whatever the tolerance
    assert compare_outputs(ref, wrong) == (
        "output[3]: expected 3.0, got 4.0, max abs error 1, max rel error 0.333333"
        " (rtol=1e-05, atol=1e-08)\n"
        "output[100000]: expected nan, got 0.0 (rtol=1e-05, atol=1e-08)\n"
        "output[100002]: expected 7, got 8"
    )
    assert compare_outputs((1.0, nan), (1.0, nan), equal_nan=False) is not None
    everywhere = compare_outputs(ref, [v + 1 for v in ref])
    assert everywhere is not None and everywhere.endswith("... and 99992 more differences")
    assert len(compare_calls) < 200


@pytest.mark.parametrize("equal_nan", [True, False])
def test_a_short_row_of_numbers_is_judged_as_a_long_list_judges_it(equal_nan):
    # A list of 100 000 (int, float) rows took seconds: each row went through NumPy (and
    # the protocol check of `AutotuneOutput`). A row of a few numbers is judged in Python
    # now, by the same rules as the arrays of a long list: each pair below is judged as a
    # row of two, and inside a list of forty, where NumPy judges it.
    from pytest_autotune.tune import comparison

    inf, nan = float("inf"), float("nan")
    pairs = [
        (1.0, 1.0 + 1e-6), (1.0, 1.001), (0.0, 1e-9), (0.0, 1e-7), (1e-8, -1e-8),
        (inf, inf), (inf, -inf), (inf, 1e308), (nan, nan), (nan, 0.0), (1.0, nan),
        (3, 3.0), (3, 3.00001), (2**52, 2**52 + 1), (2**40, 2**40 + 1.0), (7, 8),
        (1e308, -1e308), (np.float64(0.5), 0.5 + 1e-7), (-0.0, 0.0), (100.0, 100.0011),
    ]  # fmt: skip
    rules = Rules(1e-5, 1e-8, equal_nan, comparison._compare)
    for ref, act in pairs:
        short = differing_numbers([ref, 0], [act, 0], rules)
        long = differing_numbers([ref] * 40, [act] * 40, rules)
        assert short == ([0] if long else []), (ref, act)
        assert long in ([], list(range(40))), (ref, act)
    rows = [(i, i * 0.5) for i in range(1000)]
    assert compare_outputs(rows, [(i, x * (1 + 1e-9)) for i, x in rows]) is None
    wrong = [*rows]
    wrong[7] = (7, 3.6)
    assert compare_outputs(rows, wrong) == (
        "output[7][1]: expected 3.5, got 3.6, max abs error 0.1, max rel error 0.0285714"
        " (rtol=1e-05, atol=1e-08)"
    )


@pytest.mark.parametrize("equal_nan", [True, False])
def test_complex_numbers_in_a_list_are_judged_at_once_as_one_by_one(equal_nan, compare_calls):
    # A pure-Python DFT's list of 100 000 complex numbers took 4 s to compare, each one
    # through NumPy alone. Short rows or long lists, each pair is judged as alone.
    from pytest_autotune.tune import comparison

    inf, nan = float("inf"), float("nan")
    pairs = [
        (1 + 1j, 1 + 1j), (1 + 1j, 1 + 1.001j), (1j, 1e-9j), (complex(nan, 1), complex(nan, 1)),
        (complex(nan, 1), complex(nan, 2)), (complex(1, nan), complex(nan, 1)),
        (complex(inf, 0), complex(inf, 0)), (complex(inf, 0), complex(inf, 1)),
        (complex(inf, nan), complex(inf, nan)), (2.0, 2 + 0j), (3, 3 + 1e-9j),
        (nan, complex(nan, 0)), (np.complex128(1 + 2j), 1 + 2j), (1 + 0j, 1.001),
    ]  # fmt: skip
    rules = Rules(1e-5, 1e-8, equal_nan, comparison._compare)
    for ref, act in pairs:
        alone = compare_outputs(ref, act, equal_nan=equal_nan) is not None
        short = differing_numbers([ref, 0], [act, 0], rules)
        long = differing_numbers([ref] * 40, [act] * 40, rules)
        assert short == ([0] if alone else []), (ref, act)
        assert long == (list(range(40)) if alone else []), (ref, act)
    compare_calls.clear()  # counted from here: the long list's comparison alone
    spectrum = [complex(i, -i) for i in range(100_000)]
    assert compare_outputs(spectrum, [v * (1 + 1e-9) for v in spectrum]) is None
    wrong = compare_outputs(spectrum, [*spectrum[:5], 0j, *spectrum[6:]])
    assert len(compare_calls) < 100
    assert wrong == (
        "output[5]: expected (5-5j), got 0j, max abs error 7.07107, max rel error 1"
        " (rtol=1e-05, atol=1e-08)"
    )


def test_a_long_list_of_strings_booleans_or_ints_is_compared_without_visiting_each(compare_calls):
    # One by one through `_compare`, a million strings took 4.5 s, booleans 2.3 s.
    words = [str(i) for i in range(100_000)]
    flags = [i % 3 == 0 for i in range(100_000)]
    big = [2**60 + i for i in range(100_000)]
    for values in (words, flags, big, list(np.array(words))):
        assert compare_outputs(values, list(values)) is None
        assert (
            compare_outputs({i: v for i, v in enumerate(values)}, dict(enumerate(values))) is None
        )
    assert len(compare_calls) < 10
    wrong = [*words]
    wrong[7] = "x"
    assert compare_outputs(words, wrong) == "output[7]: expected '7', got 'x'"
    assert compare_outputs([True, 1], [1, True]) == (
        "output[0]: expected True, got 1\noutput[1]: expected 1, got True"
    )


class _ComparesItself:
    def __init__(self, value: float) -> None:
        self.value = value

    def autotune_compare(self, other: object, rtol: float, atol: float) -> str | None:
        return None if getattr(other, "value", None) == self.value else "other value"


def test_an_output_that_compares_itself_is_asked_whether_a_class_or_instance_holds_it():
    assert compare_outputs(_ComparesItself(1.0), _ComparesItself(1.0)) is None
    assert compare_outputs(_ComparesItself(1.0), _ComparesItself(2.0)) == "output: other value"
    inside = [(1, _ComparesItself(1.0))]
    assert compare_outputs(inside, [(1, _ComparesItself(3.0))]) == "output[0][1]: other value"


def test_lists_that_are_not_all_plain_numbers_keep_their_element_wise_rules():
    assert compare_outputs([1, 2], [True, 2]) == "output[0]: expected 1, got True"
    assert compare_outputs([2**60 + 1], [float(2**60)]) is None  # as 2**60 + 1 vs 2.0**60
    assert compare_outputs([2**60 + 1], [2**60]) == (
        f"output[0]: expected {2**60 + 1}, got {2**60}"
    )
    assert compare_outputs([1.0, np.float32(2.0)], [1.0, 2.0]) is None
    # Past the listed differences, a list of other values still counts only what differs.
    mixed = [1.0, True] * 20
    assert compare_outputs(mixed, [2.0, True] * 20) == "\n".join(
        [
            *[
                f"output[{i}]: expected 1.0, got 2.0, max abs error 1, max rel error 1"
                " (rtol=1e-05, atol=1e-08)"
                for i in range(0, 20, 2)
            ],
            "... and 10 more differences",
        ]
    )


def test_a_masked_record_array_compares_field_by_field_with_each_fields_mask():
    # The masks of all fields at once (a record of bools each) raised TypeError from the
    # check ("ufunc 'bitwise_or' not supported").
    records = np.ma.masked_array(
        np.zeros(3, dtype=[("a", "f8"), ("b", "i4")]), mask=[(0, 1), (0, 0), (1, 0)]
    )
    hidden = records.copy()
    hidden["a"].data[2] = 9.0  # under field a's mask
    assert compare_outputs(records, hidden) is None
    shown = records.copy()
    shown["a"][1] = 5.0
    assert compare_outputs(records, shown) == (
        "output['a']: 1 of 3 elements differ (rtol=1e-05, atol=1e-08), max abs error 5,"
        " max rel error inf; first at [1]: expected 0.0, got 5.0"
    )


def test_masked_arrays_must_agree_on_the_mask_and_ignore_the_values_it_hides():
    # The mask was read as NaN positions ("expected --, got 2.0; NaN positions differ"), a
    # wording about values no candidate computed. A masked element is no value: masks must
    # agree, and what lies beneath a mask is never compared.
    ref = np.ma.array([1.0, 2.0, 3.0, 4.0], mask=[0, 1, 0, 0])
    assert compare_outputs(ref, np.ma.array([1.0, 99.0, 3.0, 4.0], mask=[0, 1, 0, 0])) is None
    assert compare_outputs(ref, np.ma.array([1.0, 2.0, 3.0, 4.0], mask=[0, 0, 0, 1])) == (
        "output: the masks differ at 2 of 4 elements (masked positions must agree; the values"
        " under a mask are ignored); first at [1]: expected masked, got 2.0"
    )
    assert compare_outputs(ref, np.ma.array([1.0, 2.0, 3.5, 4.0], mask=[0, 1, 0, 0])) == (
        "output: 1 of 4 elements differ (rtol=1e-05, atol=1e-08), max abs error 0.5,"
        " max rel error 0.166667; first at [2]: expected 3.0, got 3.5"
    )
    # A plain array masks nothing: it equals a masked array with nothing masked.
    assert compare_outputs(np.arange(3.0), np.ma.array(np.arange(3.0))) is None
    assert compare_outputs(np.arange(3.0), np.ma.array(np.arange(3.0), mask=[0, 0, 1])) == (
        "output: the masks differ at 1 of 3 elements (masked positions must agree; the values"
        " under a mask are ignored); first at [2]: expected 2.0, got masked"
    )


def test_a_masked_single_value_is_no_value_against_a_python_number():
    # `np.ma.mean` of a wholly masked array is `np.ma.masked`, whose one value read as its
    # data (0.0): a candidate returning 0.0 there passed, and a right 0.5 against it read
    # "expected 0.0, got 0.5".
    nothing = np.ma.mean(np.ma.array([1.0, 2.0], mask=[1, 1]))
    assert compare_outputs(nothing, 0.0) == (
        "output: expected masked, got 0.0 (masked positions must agree; the values under a"
        " mask are ignored)"
    )
    assert compare_outputs(0.5, np.ma.masked) == (
        "output: expected 0.5, got masked (masked positions must agree; the values under a"
        " mask are ignored)"
    )
    assert compare_outputs(np.ma.masked_array(1.0, mask=True), 1.0) is not None
    assert compare_outputs(np.ma.masked_array(1.0, mask=True), np.float64(1.0)) == (
        "output: expected masked, got 1.0 (masked positions must agree; the values under a"
        " mask are ignored)"
    )
    # Unmasked, it is the number it holds.
    assert compare_outputs(np.ma.masked_array(1.0, mask=False), 1.0) is None
    assert compare_outputs(nothing, np.ma.masked) is None


def test_structured_arrays_compare_field_by_field_with_the_tolerances():
    # A record was compared with `==`: NaN in a float field failed a correct candidate
    # ("expected (nan, 1), got (nan, 1)"), and a rounding difference failed it too.
    record = np.dtype([("x", "f8"), ("n", "i4"), ("v", "f4", (2,))])
    ref = np.array([(1.0, 1, (0.5, 0.5)), (np.nan, 2, (1.0, 2.0))], dtype=record)
    close = ref.copy()
    close["x"][0] += 1e-12
    assert compare_outputs(ref, close) is None
    wrong = ref.copy()
    wrong["n"][1] = 3
    wrong["v"][1, 1] = 2.5
    assert compare_outputs(ref, wrong) == (
        "output['n']: 1 of 2 elements differ, max abs error 1, max rel error 0.5;"
        " first at [1]: expected 2, got 3\n"
        "output['v']: 1 of 4 elements differ (rtol=1e-05, atol=1e-08), max abs error 0.5,"
        " max rel error 0.25; first at [1, 1]: expected 2.0, got 2.5"
    )


def test_an_iterator_returned_by_mistake_is_named_not_compared():
    # Two generators compared by identity read "expected <generator object <genexpr> at
    # 0x7f...>, got <generator object ...>": a failure that did not say what was wrong.
    def squares(n: int) -> object:
        return (i * i for i in range(n))

    # The reference itself is none: as the first candidate, it passed under --autotune,
    # where its own test compared it with nothing, and failed in a plain run.
    why = (
        "the reference 'a' returned a generator, an iterator that yields its values once"
        " and cannot be compared: return them in a list (list(...))"
    )
    assert check_candidates(["a", "b"], lambda i: squares(3)) == [
        CheckResult("a", False, why),
        CheckResult("b", False, f"cannot be checked: {why}"),
    ]
    explicit = check_candidates(["a"], lambda i: [0, 1, 4], reference=lambda: squares(3))
    assert explicit == [
        CheckResult(
            "a",
            False,
            "cannot be checked: the explicit reference returned a generator, an iterator that"
            " yields its values once and cannot be compared: return them in a list (list(...))",
        )
    ]
    assert compare_outputs([0, 1, 4], map(int, "014")) == (
        "output: got a map, an iterator that yields its values once and cannot be compared:"
        " return them in a list (list(...))"
    )
    assert compare_outputs({"a": iter([1])}, {"a": iter([1])}) == (
        "output['a']: expected a list_iterator, an iterator that yields its values once and"
        " cannot be compared: return them in a list (list(...))"
    )
    assert compare_outputs(range(3), range(3)) is None  # a range is a sequence, not an iterator


def test_a_future_returned_is_named_not_compared():
    # An executor's future compared as an object read its locks and state, seven lines of
    # "output._condition.acquire: expected <built-in method acquire of _thread.RLock ...>"
    # and "output._state: expected 'PENDING', got 'RUNNING'", for two candidates that
    # computed the same; against a NumPy reference, "got Future".
    def submitted(value: float) -> concurrent.futures.Future[float]:
        future: concurrent.futures.Future[float] = concurrent.futures.Future()
        future.set_result(value)
        return future

    why = (
        "the reference 'a' returned a Future, whose value comes later and cannot be"
        " compared: return its result (.result())"
    )
    assert check_candidates(["a", "b"], lambda i: submitted(1.0)) == [
        CheckResult("a", False, why),
        CheckResult("b", False, f"cannot be checked: {why}"),
    ]
    assert compare_outputs(1.0, submitted(1.0)) == (
        "output: got a Future, whose value comes later and cannot be compared: return its"
        " result (.result())"
    )


def test_a_complex_number_with_a_nan_part_must_agree_on_the_other_part():
    # NumPy's isclose takes a complex with NaN in either part for NaN, so nan+1j equalled
    # nan+2j, and 1+nanj: a wrong candidate passed.
    nan = float("nan")
    assert compare_outputs(complex(nan, 1), complex(nan, 1)) is None
    assert compare_outputs(complex(nan, 1), complex(nan, 1 + 1e-9)) is None
    assert compare_outputs(complex(nan, 1), complex(nan, 2)) is not None
    ref = np.array([1 + 1j, complex(nan, 1)])
    assert compare_outputs(ref, np.array([1 + 1j, complex(1, nan)])) == (
        "output: 1 of 2 elements differ (rtol=1e-05, atol=1e-08); first at [1]:"
        " expected (nan+1j), got (1+nanj); NaN positions differ at 1 element"
    )
    message = compare_outputs(ref, np.array([1 + 1j, complex(nan, 3)]))
    assert message is not None and message.startswith("output: 1 of 2 elements differ")
    assert "NaN positions" not in message


def test_a_memoryview_compares_as_the_array_it_views():
    # It compared with `==`: floats needed exact equality, and a difference read
    # "expected <memory at 0x7f...>, got <memory at 0x7f...>".
    ref = np.array([1.0, 2.0, 3.0])
    assert compare_outputs(memoryview(ref), memoryview(ref * (1 + 1e-9))) is None
    assert compare_outputs(memoryview(ref), memoryview(ref + np.array([0, 0, 1]))) == (
        "output: 1 of 3 elements differ (rtol=1e-05, atol=1e-08), max abs error 1,"
        " max rel error 0.333333; first at [2]: expected 3.0, got 4.0"
    )
    assert compare_outputs(memoryview(b"ab"), memoryview(b"ab")) is None
    assert compare_outputs(memoryview(ref), memoryview(ref.astype(np.float32))) == (
        "output: dtype differs: expected float64, got float32"
    )


def test_the_standard_librarys_sequences_compare_with_the_tolerances():
    # An `array.array` and a deque compared with `==` (floats exactly), and two views of a
    # dict's values never compared equal: `==` is identity for them, and the message showed
    # two `dict_values([1.0])` that read alike.
    near, far = 1.0 + 1e-9, 1.5
    for kind in (
        lambda v: array.array("d", v),
        collections.deque,
        lambda v: dict(enumerate(v)).values(),
    ):
        assert compare_outputs(kind([1.0, 2.0]), kind([near, 2.0])) is None
        message = compare_outputs(kind([1.0, 2.0]), kind([far, 2.0]))
        assert message is not None and "expected 1.0, got 1.5" in message
    assert compare_outputs(collections.deque([1.0]), [1.0]) == (
        "output: expected deque, got list of 1 item"
    )
    assert compare_outputs(array.array("d", [1.0]), array.array("f", [1.0])) == (
        "output: dtype differs: expected float64, got float32"
    )


def test_a_candidate_writing_into_the_reference_output_is_still_compared_with_the_reference():
    # An input generator that gives every call the same arrays (`lambda key, inputs:
    # inputs`) and an in-place reference returning its argument: the reference's output was
    # the input itself, the next candidate wrote over it and was compared with itself, and
    # a wrong candidate passed.
    x = np.ones(3)

    def twice(x: np.ndarray) -> np.ndarray:
        x *= 2
        return x

    def thrice(x: np.ndarray) -> np.ndarray:
        x *= 3
        return x

    results = check_candidates(["twice", "thrice"], lambda i: (twice, thrice)[i](x))
    assert results[1].passed is False
    assert results[1].message.startswith(
        "differs from the reference 'twice': output: 3 of 3 elements differ"
    )


def test_a_wrong_in_place_candidate_on_a_ragged_object_array_fails():
    # The rows of an object array were shared by its copies: the reference scaled them, its
    # kept output held them, and the wrong candidate scaled them again, in both.
    def ragged() -> np.ndarray:
        rows = np.empty(2, dtype=object)
        rows[0], rows[1] = np.ones(3), np.ones(5)
        return rows

    def twice(rows: np.ndarray) -> np.ndarray:
        for row in rows:
            np.multiply(row, 2, out=row)
        return rows

    def thrice(rows: np.ndarray) -> np.ndarray:
        for row in rows:
            np.multiply(row, 3, out=row)
        return rows

    x = ragged()  # each call on a copy of it, as the plugin and the tuner call candidates
    results = check_candidates(["twice", "thrice"], lambda i: (twice, thrice)[i](clone_value(x)))
    assert results[1].passed is False
    assert results[1].message == (
        "differs from the reference 'twice': output: 2 of 2 elements differ; first"
        " output[0]: 3 of 3 elements differ (rtol=1e-05, atol=1e-08), max abs error 1, max"
        " rel error 0.5; first at [0]: expected 2.0, got 3.0"
    )


def test_a_reference_output_of_a_container_type_of_its_own_keeps_its_autotune_compare():
    # The reference's output is kept as a copy, which made a dict or tuple subclass a plain
    # dict or tuple: its own `autotune_compare` no longer decided.
    class Loose(dict):  # type: ignore[type-arg]
        def autotune_compare(self, other: object, rtol: float, atol: float) -> str | None:
            return None  # any values will do

    results = check_candidates(["a", "b"], lambda i: Loose(x=np.full(2, float(i))))
    assert [r.passed for r in results] == [True, True]


def test_bfloat16_and_other_extension_floats_compare_as_floats():
    # ml_dtypes' bfloat16 (JAX's, and PyTorch's through .numpy() of a view) has NumPy kind
    # "V": it compared exactly, as bytes, so a rounding difference failed with no error
    # figures and the tolerances ignored, and NaN never equalled NaN.
    ml_dtypes = pytest.importorskip("ml_dtypes")
    bf16 = ml_dtypes.bfloat16
    ref = np.array([1.0, 2.0, 3.0, np.nan], dtype=bf16)
    assert compare_outputs(ref, ref.copy()) is None
    rounded = np.array([1.0, 2.0, 3.015625, np.nan], dtype=bf16)
    assert compare_outputs(ref, rounded, rtol=1e-2) is None
    assert compare_outputs(ref, rounded) == (
        "output: 1 of 4 elements differ (rtol=1e-05, atol=1e-08), max abs error 0.015625,"
        " max rel error 0.00520833; first at [2]: expected 3.0, got 3.015625; rtol=1e-05 is"
        " finer than bfloat16 can hold (its eps is 0.00781), so only bit-equal values pass:"
        " set rtol for this dtype"
    )
    # Its int4 compares exactly, as integers do.
    small = np.array([1, 2], dtype=ml_dtypes.int4)
    assert compare_outputs(small, np.array([1, 3], dtype=ml_dtypes.int4)) == (
        "output: 1 of 2 elements differ, max abs error 1, max rel error 0.5;"
        " first at [1]: expected 2, got 3"
    )


def test_a_list_of_bfloat16_scalars_is_compared_at_once_by_the_rules_of_floats(compare_calls):
    # `list(x)` of a bfloat16 or float8 array (ml_dtypes', JAX's) took the element-wise
    # path that NumPy's own scalars had left: 100 000 of them took 4.6 s a check, against
    # 0.01 s for float32. At once, they compare as the array of their dtype does.
    ml_dtypes = pytest.importorskip("ml_dtypes")
    values = np.linspace(1, 2, 1000).astype(ml_dtypes.bfloat16)
    values[7] = np.nan
    rounded = values.copy()
    rounded[3] = values[3] + ml_dtypes.bfloat16(0.0078125)
    assert compare_outputs(list(values), list(rounded), rtol=1e-2) is None
    small = list(np.tile(np.arange(-8, 8), 100).astype(ml_dtypes.int4))
    assert compare_outputs(small, small.copy()) is None
    assert len(compare_calls) < 10
    # What differs is worded as before, element by element: as floats, not as bytes.
    assert compare_outputs(list(values), list(rounded)) == (
        "output[3]: expected 1.0, got 1.0078125, max abs error 0.0078125, max rel error"
        " 0.0078125 (rtol=1e-05, atol=1e-08); rtol=1e-05 is finer than bfloat16 can hold (its"
        " eps is 0.00781), so only bit-equal values pass: set rtol for this dtype"
    )


def test_a_list_of_numpy_float64_scalars_is_compared_at_once_too(compare_calls):
    # `list(array)` and `[f(v) for v in array]` give np.float64 scalars, which equal Python
    # floats in every rule: they took the element-wise path, some 50 us each.
    ref = list(np.arange(1000.0))
    assert compare_outputs(ref, [float(v) * (1 + 1e-9) for v in ref]) is None
    assert len(compare_calls) < 10
    assert compare_outputs([np.float64(1.0), 2], [1.0, np.float64(2.5)]) == (
        "output[1]: expected 2.0, got 2.5, max abs error 0.5, max rel error 0.25"
        " (rtol=1e-05, atol=1e-08)"
    )
    # Another NumPy type keeps its rule: a float32 is not a float64.
    assert compare_outputs([np.float64(1.0)], [np.float32(1.0)]) == (
        "output[0]: dtype differs: expected float64, got float32"
    )


def test_a_set_that_differs_names_the_missing_and_the_unexpected_elements():
    # Both sets were printed whole: the one element of 1000 that differed was not found.
    ref = set(range(1000))
    assert compare_outputs(ref, (ref - {7}) | {1000}) == (
        "output: set differs (elements compare exactly): missing {7}, unexpected {1000}"
    )
    assert compare_outputs(frozenset({1.0}), frozenset({1.0, 2.0})) == (
        "output: frozenset differs (elements compare exactly): unexpected frozenset({2.0})"
    )
    assert compare_outputs({1, 2}, {2, 1}) is None


def test_a_tolerance_finer_than_the_dtype_can_hold_is_named():
    # float16 holds about 3 digits: with the default rtol=1e-5 only bit-equal values pass,
    # and a correct half-precision kernel rounding once otherwise failed with no word why.
    ref = np.array([1.0, 2.0], dtype=np.float16)
    act = np.array([1.0, 2.001953125], dtype=np.float16)  # one step of float16 away
    message = compare_outputs(ref, act)
    assert message is not None
    assert message.endswith(
        "; rtol=1e-05 is finer than float16 can hold (its eps is 0.000977), so only"
        " bit-equal values pass: set rtol for this dtype"
    )
    assert compare_outputs(ref, act, rtol=2e-3) is None
    one = compare_outputs(np.float16(2.0), np.float16(2.001953125))
    assert one is not None and one.endswith("set rtol for this dtype")
    # float32 holds what rtol=1e-5 asks: no such note.
    wide = compare_outputs(np.ones(2, np.float32), np.full(2, 2, np.float32))
    assert wide is not None and "finer than" not in wide
    # rtol=0 asks for no relative tolerance (atol alone, or exactness): no note either.
    exact = compare_outputs(ref, act, rtol=0.0, atol=0.0)
    assert exact is not None and "finer than" not in exact


def test_a_half_precision_scalar_against_a_python_float_names_the_tolerance_too_fine():
    # Compared by value, as Python floats, a float16 sum against a candidate's exact float
    # failed with "expected 0.0999755859375, got 0.1" and no word of float16's resolution.
    note = (
        "; rtol=1e-05 is finer than float16 can hold (its eps is 0.000977), so only"
        " bit-equal values pass: set rtol for this dtype"
    )
    for reference, actual in ((np.float16(0.1), 0.1), (0.1, np.float16(0.1))):
        message = compare_outputs(reference, actual)
        assert message is not None and message.endswith(note)
        assert compare_outputs(reference, actual, rtol=1e-3) is None
    wrong = compare_outputs(np.float16(0.1), 0.2)
    assert wrong is not None and "finer than" not in wrong


def test_a_float16_answer_wrong_beyond_rounding_is_not_told_to_loosen_rtol():
    # "set rtol for this dtype" followed every float16 difference: a sign flipped, an
    # overflow to inf, a candidate wrong by 50%.
    ref = np.array([1.0, 60000.0], dtype=np.float16)
    for act in ([1.0, -60000.0], [1.0, np.inf], [1.5, 60000.0]):
        message = compare_outputs(ref, np.array(act, dtype=np.float16))
        assert message is not None and "finer than" not in message, act
    rounded = compare_outputs(ref, np.array([1.0, 60032.0], dtype=np.float16))
    assert rounded is not None and rounded.endswith("set rtol for this dtype")


def test_roundings_near_zero_that_only_atol_covers_are_named_with_the_atol():
    # A correct float32 matmul (blocked, against np.dot) failed at 1.5% of its elements
    # with "max rel error 0.02", which read as a wrong kernel: the elements a sum cancels to
    # near zero carry the rounding of the large terms summed, which rtol of each small
    # result does not cover. Every such error lies within rtol of the output's largest
    # magnitude, and an atol of rtol times it passes them.
    ref = np.array([100.0, 1e-3, -50.0], dtype=np.float32)
    act = np.array([100.0, 1.5e-3, -50.0], dtype=np.float32)
    message = compare_outputs(ref, act)
    assert message is not None
    assert message.endswith(
        "; every element that differs is within rtol of the output's largest magnitude"
        " (100), as roundings are where a sum cancels to near zero, which rtol of each"
        " element does not cover: atol=0.001 passes them"
    )
    assert compare_outputs(ref, act, atol=0.001) is None

    rng = np.random.default_rng(1)
    a, b = (rng.standard_normal((256, 256), dtype=np.float32) for _ in range(2))
    blocked = sum(a[:, k : k + 64] @ b[k : k + 64] for k in range(0, 256, 64))
    matmul = compare_outputs(a @ b, blocked)
    assert matmul is not None and "passes them" in matmul
    atol = float(matmul.rpartition("atol=")[2].split()[0])
    assert compare_outputs(a @ b, blocked, atol=atol) is None


def test_errors_past_rtol_of_the_largest_magnitude_are_not_told_to_set_atol():
    # A wrong answer, a NaN where a number belongs, or a single value: no such note.
    ref = np.array([100.0, 1e-3], dtype=np.float32)
    for act in ([100.0, 2e-3 + 1e-3], [100.0, np.nan], [101.0, 1e-3]):
        message = compare_outputs(ref, np.array(act, dtype=np.float32))
        assert message is not None and "passes them" not in message, act
    one = compare_outputs(np.float32(1e-3), np.float32(1.5e-3))
    assert one is not None and "passes them" not in one


@pytest.mark.parametrize(
    ("reference", "actual", "rtol"),
    [
        ([1e308, 0.0], [1e308, 1e300], 10.0),  # rtol times the magnitude is past float64's
        ([3e-323, 0.0], [3e-323, 5e-324], 1.0),  # a subnormal bound, whose step underflows
    ],
)
def test_the_near_zero_note_at_the_ends_of_float64_names_an_atol_or_nothing(
    reference: list[float], actual: list[float], rtol: float
):
    # Working out the atol to name raised OverflowError and ZeroDivisionError out of the
    # comparison, a traceback from inside the check where a message belonged.
    message = compare_outputs(np.array(reference), np.array(actual), rtol=rtol, atol=0)
    assert message is not None and "1 of 2 elements differ" in message, message
    if message.endswith("passes them"):
        atol = float(message.rpartition("atol=")[2].split()[0])
        assert compare_outputs(np.array(reference), np.array(actual), rtol=rtol, atol=atol) is None


def test_a_named_tuple_is_not_a_plain_tuple():
    # A candidate returning a plain tuple where the reference returns a NamedTuple passed,
    # and its caller's `result.mean` raised AttributeError: as a tuple is not a list.
    from typing import NamedTuple

    class Stats(NamedTuple):
        mean: float
        count: int

    assert compare_outputs(Stats(1.0, 2), Stats(1.0, 2)) is None
    assert compare_outputs(Stats(1.0, 2), (1.0, 2)) == (
        "output: expected Stats of 2 items, got tuple of 2 items"
    )
    assert compare_outputs(Stats(1.0, 2), Stats(1.5, 2)) == (
        "output[0]: expected 1.0, got 1.5, max abs error 0.5, max rel error 0.5"
        " (rtol=1e-05, atol=1e-08)"
    )


def test_a_huge_integer_that_differs_is_described_not_raised_on():
    # Python refuses to print an int of more than 4300 digits: the message raised
    # ValueError from inside the check, in place of saying that a bigint candidate was wrong.
    big = 7**6000  # 5071 digits
    assert compare_outputs(big, big) is None
    message = compare_outputs(big, big + 1)
    assert message is not None
    assert message == (
        "output: expected an int of about 5071 digits, got an int of about 5071 digits"
        " (got - expected = 1)"
    )
    message = compare_outputs(10**1000, 10**1000 + 1)
    assert message is not None and len(message) < 600


def test_an_empty_or_space_edged_string_element_is_quoted():
    # "expected , got x" read as a garbled message, and "abc " as "abc".
    assert compare_outputs(np.array(["", "b"]), np.array(["x", "b"])) == (
        "output: 1 of 2 elements differ; first at [0]: expected '', got 'x'"
    )
    assert compare_outputs(np.str_("abc "), np.str_("abc")) == "output: expected 'abc ', got 'abc'"
    assert compare_outputs(np.array(["abc"]), np.array(["abd"])) == (
        "output: 1 of 1 elements differ; first at [0]: expected abc, got abd"
    )


def test_a_long_element_of_an_array_that_differs_is_cut_short():
    # The first bad element was printed whole: a string or object array holding a 1 MB
    # value flooded the message as a long str output did.
    ref = np.array(["a" * 100_000, "b"])
    act = np.array(["a" * 99_999 + "c", "b"])
    message = compare_outputs(ref, act)
    assert message is not None and len(message) < 600
    assert message.startswith("output: 1 of 2 elements differ; first at [0]: expected aaaa")
    assert "... (100000 characters)" in message


def test_many_missing_or_unexpected_keys_are_counted_not_all_printed():
    # A dict output keyed by 100 000 ids with the wrong key type listed every key, twice.
    ref = {i: 1.0 for i in range(100_000)}
    message = compare_outputs(ref, {str(i): 1.0 for i in range(100_000)})
    assert message is not None and len(message) < 800
    assert message.startswith("output: missing 100000 keys [0, 1, 2,")
    assert "\noutput: unexpected 100000 keys ['0', '1', '2'," in message
    assert compare_outputs({"a": 1}, {}) == "output: missing keys ['a']"


def test_a_dict_of_many_numbers_is_compared_at_once(compare_calls):
    # A dict of 100 000 floats (a histogram, scores by id) took some 4 s, one element-wise
    # comparison per key; its values now compare as arrays, as a list's do.
    ref = {f"id{i}": i * 0.5 for i in range(1000)}
    assert compare_outputs(ref, {k: v * (1 + 1e-9) for k, v in ref.items()}) is None
    assert len(compare_calls) < 10
    wrong = {**ref, "id3": 9.0, "id500": 1}
    assert compare_outputs(ref, wrong) == (
        "output['id3']: expected 1.5, got 9.0, max abs error 7.5, max rel error 5"
        " (rtol=1e-05, atol=1e-08)\n"
        "output['id500']: expected 250.0, got 1.0, max abs error 249, max rel error 0.996"
        " (rtol=1e-05, atol=1e-08)"
    )
    everywhere = compare_outputs(ref, {k: v + 1 for k, v in ref.items()})
    assert everywhere is not None and everywhere.endswith("... and 990 more differences")
    assert len(compare_calls) < 100


def test_without_compare_every_candidate_that_runs_passes_and_no_reference_is_called() -> None:
    def run(index: int) -> object:
        if index == 2:
            raise ValueError("broken")
        return index  # outputs that differ: nothing to compare, as the test says

    def reference() -> object:
        raise AssertionError("the reference is not called")

    results = check_candidates(["a", "b", "c"], run, reference, compare=False)
    assert [(r.name, r.passed) for r in results] == [("a", True), ("b", True), ("c", False)]
    assert "ValueError: broken" in results[2].message


def test_no_candidate_runs_beside_the_output_of_the_one_before():
    # The loop kept the previous candidate's output bound while the next ran: with the
    # reference's kept copy, three outputs in memory where the checks promise two.
    made: list[weakref.ref[np.ndarray]] = []
    alive_at_call: list[int] = []

    def run(index: int) -> object:
        alive_at_call.append(sum(ref() is not None for ref in made))
        output = np.full(4, 2.0 if index == 2 else 1.0)
        made.append(weakref.ref(output))
        return output

    results = check_candidates(["a", "b", "c", "d"], run)

    assert [r.passed for r in results] == [True, True, False, True]
    assert alive_at_call == [0, 0, 0, 0]


def test_lists_of_one_numpy_type_and_object_arrays_of_numbers_are_compared_at_once(compare_calls):
    # `list(x)` of a float32 or int64 array took the element-wise path, some 90 us a
    # scalar: 100 000 of them took 9 s a check, and an object array of 1e6 floats that
    # differed by a rounding, 85 s. They compare as arrays now, by the same rules.
    floats = np.arange(1000, dtype=np.float32)
    assert compare_outputs(list(floats), list(floats * np.float32(1 + 1e-7))) is None
    assert compare_outputs(list(np.arange(1000)), list(np.arange(1000))) is None
    assert compare_outputs(list(floats + 1j), list(floats + 1j)) is None
    objects = np.arange(1000.0).astype(object)
    assert compare_outputs(objects, objects * (1 + 1e-9)) is None
    assert len(compare_calls) < 10
    # What differs is found and worded as before, element by element.
    wrong = list(floats)
    wrong[3], wrong[5] = np.float32(np.nan), np.float32(6.5)
    assert compare_outputs(list(floats), wrong) == (
        "output[3]: expected 3.0, got nan (rtol=1e-05, atol=1e-08)\n"
        "output[5]: expected 5.0, got 6.5, max abs error 1.5, max rel error 0.3"
        " (rtol=1e-05, atol=1e-08)"
    )
    assert compare_outputs([np.int64(2**62 + 1)], [np.int64(2**62)]) is not None
    assert compare_outputs([np.float32(np.nan)], [np.float32(np.nan)]) is None
    wrong_objects = objects.copy()
    wrong_objects[7] = 7.5
    assert compare_outputs(objects, wrong_objects) == (
        "output: 1 of 1000 elements differ; first at [7]: expected 7.0, got 7.5"
    )


def test_a_namespace_or_plain_object_of_results_compares_attribute_by_attribute():
    # A SimpleNamespace's `==` met its arrays and raised out of the check (a traceback of
    # ours; under --autotune the tuning ended, its right candidates failed); a class of
    # one's own compared by identity, so a right candidate always failed, with two
    # `<... object at 0x...>` for a message.
    class Result:
        def __init__(self, total: float, parts: np.ndarray) -> None:
            self.total, self.parts = total, parts

    ref = types.SimpleNamespace(total=6.0, parts=np.arange(4.0))
    assert compare_outputs(ref, types.SimpleNamespace(total=6.0, parts=np.arange(4.0))) is None
    assert compare_outputs(Result(6.0, np.arange(4.0)), Result(6.0, np.arange(4.0))) is None
    assert compare_outputs(ref, types.SimpleNamespace(total=7.0, count=4)) == (
        "output: missing attributes ['parts']\n"
        "output: unexpected attributes ['count']\n"
        "output.total: expected 6.0, got 7.0, max abs error 1, max rel error 0.166667"
        " (rtol=1e-05, atol=1e-08)"
    )
    assert compare_outputs(Result(6.0, np.arange(4.0)), Result(6.0, np.ones(4))) == (
        "output.parts: 3 of 4 elements differ (rtol=1e-05, atol=1e-08), max abs error 2,"
        " max rel error inf; first at [0]: expected 0.0, got 1.0"
    )


def test_an_equality_that_raises_is_a_difference_not_a_crash():
    class Pair:
        def __init__(self, a: np.ndarray) -> None:
            self.a = a

        def __eq__(self, other: object) -> bool:
            return bool(self.a == other.a and True)  # type: ignore[attr-defined]

        __hash__ = None  # type: ignore[assignment]

    message = compare_outputs(Pair(np.ones(2)), Pair(np.ones(2)))
    assert message is not None
    assert message.startswith(
        "output: cannot compare values of type Pair (its == raised ValueError"
    )
    assert message.endswith("give it an autotune_compare method")
    items = compare_outputs({1: np.ones(2)}.items(), {1: np.ones(2)}.items())
    assert items is not None and "cannot compare values of type dict_items" in items


def test_an_autotune_compare_that_returns_a_bool_or_nothing_says_what_it_must_return():
    # `return np.allclose(...)` failed a right candidate with "output: True".
    @dataclasses.dataclass
    class Field:
        values: np.ndarray

        def autotune_compare(self, other: object, rtol: float, atol: float) -> str | None:
            same = np.allclose(self.values, other.values, rtol=rtol, atol=atol)  # type: ignore[attr-defined]
            return same  # type: ignore[return-value]

    assert compare_outputs(Field(np.ones(2)), Field(np.ones(2))) == (
        "output: Field.autotune_compare returned True: it must return None where the outputs"
        " are equal, else a str saying why not"
    )


def test_where_an_output_is_required_a_first_none_still_waits_for_a_later_output() -> None:
    # The plugin requires an output: a first candidate that forgot its `return` was the
    # reference there, and every right one failed as "cannot be checked".
    values = [None, np.arange(4.0), None, np.arange(4.0)]
    checks = check_candidates(
        ["forgot", "good", "also_forgot", "good2"], values.__getitem__, require_output=True
    )
    assert [c.passed for c in checks] == [False, True, False, True]
    assert checks[0].message == (
        "returned None, where the reference 'good' returned float64 array of shape (4,)"
    )
    # A reference that declines the key leaves a first None waiting so too.
    declined = [AutotuneSkip("not mine"), None, np.ones(2)]
    checks = check_candidates(
        ["ref", "forgot", "good"], outputs(*declined), reference=0, require_output=True
    )
    assert [c.passed for c in checks] == [True, False, True]


def test_an_int_past_the_range_of_a_float_against_a_float_is_a_difference_not_a_crash():
    # `np.asarray(10**400, dtype=float64)` raised OverflowError out of the check.
    message = compare_outputs(10**400, 1e300)
    assert message is not None
    assert message.startswith("output: expected 1000")
    assert message.endswith("... (401 characters), got 1e+300")
    assert compare_outputs(1e300, 10**400) is not None
    assert compare_outputs([10**400], [float("inf")]) is not None


def test_objects_whose_attributes_point_back_at_them_compare_without_recursing_forever():
    # Attribute by attribute, a node's `parent` that points back at it was followed until
    # Python's limit: a RecursionError out of the check, for right and wrong outputs alike.
    class Node:
        def __init__(self, values: np.ndarray) -> None:
            self.values = values
            self.children = [Child(self)]

    class Child:
        def __init__(self, parent: Node) -> None:
            self.parent = parent

    assert compare_outputs(Node(np.arange(3.0)), Node(np.arange(3.0))) is None
    assert compare_outputs(Node(np.arange(3.0)), Node(np.ones(3))) == (
        "output.values: 2 of 3 elements differ (rtol=1e-05, atol=1e-08), max abs error 1,"
        " max rel error inf; first at [0]: expected 0.0, got 1.0"
    )


def test_objects_of_a_slotted_class_compare_attribute_by_attribute():
    # A class of `__slots__` has no `__dict__`: it kept identity's `==`, so a right
    # candidate always failed with two `<... object at 0x...>` for a message.
    class Result:
        __slots__ = ("parts", "total", "unset")

        def __init__(self, total: float, parts: np.ndarray) -> None:
            self.total, self.parts = total, parts

    assert compare_outputs(Result(6.0, np.arange(4.0)), Result(6.0, np.arange(4.0))) is None
    assert compare_outputs(Result(6.0, np.arange(4.0)), Result(7.0, np.arange(4.0))) == (
        "output.total: expected 6.0, got 7.0, max abs error 1, max rel error 0.166667"
        " (rtol=1e-05, atol=1e-08)"
    )


def test_a_named_reference_that_returns_none_tells_the_others_why_they_cannot_be_checked():
    # They read "cannot be checked: the reference 'forgot' failed", where it returned None
    # (its `return` forgotten) and did not fail at all.
    values = [np.arange(4.0), None, np.arange(4.0)]
    checks = check_candidates(
        ["good", "forgot", "good2"], values.__getitem__, reference=1, require_output=True
    )
    assert [c.passed for c in checks] == [False, False, False]
    assert checks[1].message.startswith(
        "the reference 'forgot' returned None, so there is nothing to compare"
    )
    assert checks[0].message == checks[2].message == f"cannot be checked: {checks[1].message}"
    raising = check_candidates(["a", "b"], outputs(ValueError("broken"), 1.0), reference=0)
    assert raising[1].message == "cannot be checked: the reference 'a' failed"


def test_pandas_outputs_compare_by_labels_and_values_within_the_tolerances():
    # Their `==` gives no bool: every candidate returning a Series or DataFrame failed as
    # "cannot compare values of type Series", the reference against its own output too.
    pd = pytest.importorskip("pandas")
    series = pd.Series(np.arange(4.0), index=list("abcd"), name="v")
    assert compare_outputs(series, series * (1 + 1e-7)) is None
    assert compare_outputs(series, series * 2) == (
        "output: 3 of 4 elements differ (rtol=1e-05, atol=1e-08), max abs error 3,"
        " max rel error 1; first at [1]: expected 1.0, got 2.0"
    )
    assert compare_outputs(series, series.rename("w")) == "output.name: expected 'v', got 'w'"
    assert compare_outputs(series, series.astype("float32")) == (
        "output: dtype differs: expected float64, got float32"
    )
    assert compare_outputs(series, series.to_numpy()) == (
        "output: expected Series of float64 and shape (4,), got float64 array of shape (4,)"
    )
    frame = pd.DataFrame({"a": [1.0, 2.0], "b": ["x", "y"]}, index=[10, 20])
    assert compare_outputs(frame, frame.copy()) is None
    assert compare_outputs(frame, frame.assign(b=["x", "z"])) == (
        "output['b']: 1 of 2 elements differ; first at [1]: expected y, got z"
    )
    assert compare_outputs(frame, frame.set_axis([10, 30])) == (
        "output.index: 1 of 2 elements differ, max abs error 10, max rel error 0.5;"
        " first at [1]: expected 20, got 30"
    )
    assert compare_outputs(frame, frame[["b", "a"]]).startswith("output.columns: 2 of 2")


def test_a_nullable_pandas_column_compares_its_missing_values_by_position():
    # To NumPy, `Int64` with a missing value reads float64, and without one int64: a right
    # candidate read "dtype differs", and a wrong one was told so rather than where.
    pd = pytest.importorskip("pandas")
    column = pd.Series([1, None, 3], dtype="Int64")
    assert compare_outputs(column, column.copy()) is None
    assert compare_outputs(column, pd.Series([1, 2, 3], dtype="Int64")) == (
        "output (where missing): 1 of 3 elements differ; first at [1]: expected True, got False"
    )
    assert compare_outputs(column, pd.Series([1, None, 4], dtype="Int64")).startswith(
        "output: 1 of 3 elements differ"
    )


def test_a_pyarrow_backed_pandas_column_with_a_missing_value_compares():
    # Its missing places were filled with 0 to read it as NumPy, which a pyarrow-backed
    # bool, timestamp or string column (`dtype_backend="pyarrow"`) refuses: the check
    # raised ArrowInvalid or TypeError out of every candidate's test.
    pd = pytest.importorskip("pandas")
    pa = pytest.importorskip("pyarrow")
    for kind, values in [
        (pa.bool_(), [True, None, False]),
        (pa.timestamp("ns"), [pd.Timestamp(0), None, pd.Timestamp(5)]),
        (pa.string(), ["a", None, "b"]),
        (pa.list_(pa.int64()), [[1], None, [2]]),
    ]:
        column = pd.Series(values, dtype=pd.ArrowDtype(kind))
        assert compare_outputs(column, column.copy()) is None
        wrong = pd.Series([*values[:2], values[0]], dtype=pd.ArrowDtype(kind))
        assert compare_outputs(column, wrong).startswith("output: 1 of 3 elements differ")
    nothing = pd.Series([None, None], dtype="Int64")
    assert compare_outputs(nothing, nothing.copy()) is None


def test_a_pandas_index_compares_its_names_as_a_series_its_name():
    # A groupby's result has its index named by the key: a candidate that lost the name
    # passed, and won, though `reset_index()` of its output names the key's column "index".
    pd = pytest.importorskip("pandas")
    means = pd.Series([1.0, 2.0], index=pd.Index([0, 1], name="k"), name="v")
    assert compare_outputs(means, means.rename_axis(None)) == (
        "output.index.names: expected ['k'], got [None]"
    )
    pairs = pd.MultiIndex.from_tuples([("a", 1), ("b", 2)], names=["key", "n"])
    frame = pd.DataFrame({"v": [1.0, 2.0]}, index=pairs)
    assert compare_outputs(frame, frame.rename_axis(["key", "m"])) == (
        "output.index.names: expected ['key', 'n'], got ['key', 'm']"
    )
    assert compare_outputs(frame, frame.rename_axis(columns="c")) == (
        "output.columns.names: expected [None], got ['c']"
    )
    assert compare_outputs(pairs, pairs.set_names(["key", "m"])) == (
        "output.names: expected ['key', 'n'], got ['key', 'm']"
    )
    assert compare_outputs(frame, frame.copy()) is None


def test_a_categorical_pandas_column_compares_its_categories():
    # Every categorical dtype reads "category": a candidate that dropped an unobserved
    # category, or the order of ordered ones, passed, though its `value_counts()` differs.
    pd = pytest.importorskip("pandas")
    sizes = pd.Series(["s", "m"], dtype=pd.CategoricalDtype(["s", "m", "l"], ordered=True))
    assert compare_outputs(sizes, sizes.copy()) is None
    assert compare_outputs(sizes, sizes.cat.remove_unused_categories()) == (
        "output: dtype differs: expected category of ['s', 'm', 'l'] (ordered),"
        " got category of ['s', 'm'] (ordered)"
    )
    assert compare_outputs(sizes, sizes.cat.as_unordered()) == (
        "output: dtype differs: expected category of ['s', 'm', 'l'] (ordered),"
        " got category of ['s', 'm', 'l']"
    )
    unordered = sizes.cat.as_unordered()
    assert compare_outputs(unordered, unordered.cat.reorder_categories(["l", "m", "s"])) is None
    pytest.importorskip("pyarrow")  # no other dtype differs while its name is one
    words = pd.Series(["a"], dtype="string[python]")
    assert compare_outputs(words, words.astype("string[pyarrow]")) is None


def test_categories_of_another_dtype_say_so_not_the_same_categories_twice():
    # Categories [1, 2] of int32 against int64 differ as dtypes, as pandas says, and the
    # failure read "expected category of [1, 2], got category of [1, 2]".
    pd = pytest.importorskip("pandas")
    sizes = pd.Series([1, 2]).astype(pd.CategoricalDtype(pd.Index([1, 2], dtype="int64")))
    narrow = sizes.astype(pd.CategoricalDtype(pd.Index([1, 2], dtype="int32")))
    assert compare_outputs(sizes, narrow) == (
        "output.dtype.categories: dtype differs: expected int64, got int32"
    )


def test_pandas_missing_values_equal_themselves_in_a_string_column_and_alone():
    # `pd.NA == pd.NA` is NA, whose truth pandas refuses: a `string` column with a missing
    # value raised TypeError out of the check for every candidate, and `pd.NaT` (which
    # equals nothing) alone read "expected NaT, got NaT".
    pd = pytest.importorskip("pandas")
    words = pd.Series(["a", None, "c"], dtype="string")
    assert compare_outputs(words, words.copy()) is None
    assert compare_outputs(pd.array(["a", None], dtype="string"), pd.array(["a", None])) is None
    assert compare_outputs(words, pd.Series(["a", None, "d"], dtype="string")) == (
        "output: 1 of 3 elements differ; first at [2]: expected c, got d"
    )
    assert compare_outputs(words, pd.Series(["a", "b", "c"], dtype="string")) == (
        "output (where missing): 1 of 3 elements differ; first at [1]: expected True, got False"
    )
    assert compare_outputs(pd.NA, pd.NA) is None
    assert compare_outputs(pd.NaT, pd.NaT) is None
    assert compare_outputs(pd.NaT, pd.Timestamp(0)) == "output: expected NaTType, got Timestamp"
    assert compare_outputs([pd.NA, 1], [pd.NA, 1]) is None
    assert compare_outputs([pd.NA], [None]) == "output[0]: expected NAType, got None"


def test_sparse_outputs_compare_by_value_whatever_their_format():
    # A sparse matrix's `==` is another sparse matrix: a right candidate failed as "cannot
    # compare values of type csr_matrix", and CSC against CSR read "expected float64 array
    # of shape (100, 100), got float64 array of shape (100, 100)".
    sparse = pytest.importorskip("scipy.sparse")
    matrix = sparse.random(100, 100, density=0.05, format="csr", random_state=0)
    assert compare_outputs(matrix, matrix.copy()) is None
    assert compare_outputs(matrix, matrix.tocsc()) is None
    assert compare_outputs(matrix, sparse.csr_array(matrix)) is None
    wrong = matrix.copy()
    wrong.data[0] += 1
    assert compare_outputs(matrix, wrong).startswith("output: 1 of 10000 elements differ")
    assert "first at [0, " in compare_outputs(matrix, wrong)
    assert compare_outputs(matrix, matrix.toarray()) == (
        "output: expected csr_matrix of float64 and shape (100, 100),"
        " got float64 array of shape (100, 100)"
    )
    assert compare_outputs(matrix, matrix.astype(np.float32)) == (
        "output: dtype differs: expected float64, got float32"
    )


def test_a_sparse_output_too_large_to_densify_compares_its_stored_values():
    sparse = pytest.importorskip("scipy.sparse")
    matrix = sparse.random(5000, 5000, density=0.001, format="csr", random_state=0)
    assert compare_outputs(matrix, matrix.tocsc()) is None
    wrong = matrix.copy()
    wrong.data[5] += 1
    assert compare_outputs(matrix, wrong).startswith(
        "output (its stored values, row by row): 1 of 25000 elements differ"
    )


@pytest.mark.parametrize("tolerance", ["1e-3", None, -1, float("nan"), float("inf"), True])
@pytest.mark.parametrize("name", ["rtol", "atol"])
def test_a_tolerance_that_is_no_number_at_least_zero_is_refused_by_name(name, tolerance):
    # A str or None failed inside NumPy's isclose ("ufunc 'multiply' did not contain a
    # loop"), and a negative one made equal values differ.
    with pytest.raises(ValueError, match=f"compare_outputs: {name} must be a number >= 0"):
        compare_outputs(np.ones(3), np.ones(3), **{name: tolerance})
    assert compare_outputs(np.ones(3), np.ones(3), **{name: np.float32(0)}) is None


class _LibraryArray:
    """An array of another array library, as JAX's and array-api-strict's are: NumPy reads it
    through `__array__`, and its `==` is an array of its own, not a bool."""

    def __init__(self, values: np.ndarray) -> None:
        self._values = values
        self.shape, self.dtype = values.shape, values.dtype

    def __array__(self, dtype=None, copy=None):
        return np.asarray(self._values, dtype=dtype)

    def __eq__(self, other):
        return _LibraryArray(self._values == np.asarray(other))

    __hash__ = None


def test_arrays_of_other_libraries_compare_by_value_naming_the_first_bad_element():
    # JAX, Dask, array-api-strict and pydata sparse arrays read "cannot compare values of
    # type ArrayImpl": every candidate returning one failed, the reference's own included.
    values = np.arange(8, dtype=np.float32)
    wrong = values.copy()
    wrong[3] = -1
    assert compare_outputs(_LibraryArray(values), _LibraryArray(values * (1 + 1e-7))) is None
    difference = (
        "output: 1 of 8 elements differ (rtol=1e-05, atol=1e-08), max abs error 4,"
        " max rel error 1.33333; first at [3]: expected 3.0, got -1.0"
    )
    assert compare_outputs(_LibraryArray(values), _LibraryArray(wrong)) == difference
    # Against NumPy's arrays by value, as CuPy's compare, and a 0-d one against a number.
    assert compare_outputs(values, _LibraryArray(wrong)) == difference
    assert compare_outputs(_LibraryArray(values), wrong) == difference
    assert compare_outputs(_LibraryArray(np.array(1.5)), 1.5) is None
    assert compare_outputs(2, _LibraryArray(np.array(2))) is None
    assert compare_outputs(_LibraryArray(values), _LibraryArray(values.astype(np.float64))) == (
        "output: dtype differs: expected float32, got float64"
    )
    assert compare_outputs(_LibraryArray(values), list(values)) == (
        "output: expected _LibraryArray of float32 and shape (8,), got list of 8 items"
    )


def test_real_array_libraries_outputs_compare_by_value():
    jnp = pytest.importorskip("jax.numpy")
    dask_array = pytest.importorskip("dask.array")
    pydata_sparse = pytest.importorskip("sparse")
    values = np.arange(8.0)
    wrong = values.copy()
    wrong[3] = -1
    for make in (jnp.asarray, lambda v: dask_array.from_array(v, chunks=4), pydata_sparse.COO):
        assert compare_outputs(make(values), make(values)) is None
        assert "first at [3]: expected 3.0, got -1.0" in compare_outputs(make(values), make(wrong))


def test_xarray_outputs_compare_by_dimensions_coordinates_name_and_values():
    xr = pytest.importorskip("xarray")
    values = np.arange(4.0)
    array = xr.DataArray(values, dims=["t"], coords={"t": [0, 1, 2, 3]}, name="v")
    assert compare_outputs(array, array.copy()) is None
    assert compare_outputs(array, array * 2) == (
        "output: 3 of 4 elements differ (rtol=1e-05, atol=1e-08), max abs error 3,"
        " max rel error 1; first at [1]: expected 1.0, got 2.0"
    )
    assert compare_outputs(array, array.rename(t="s")).startswith("output.coords: ")
    assert compare_outputs(array, array.assign_coords(t=[0, 1, 2, 4])).startswith(
        "output.coords['t']: 1 of 4 elements differ"
    )
    assert compare_outputs(array, array.rename("w")) == "output.name: expected 'v', got 'w'"
    dataset = xr.Dataset({"v": array})
    assert compare_outputs(dataset, dataset.copy(deep=True)) is None
    assert compare_outputs(dataset, xr.Dataset({"v": array * 2})).startswith(
        "output['v']: 3 of 4 elements differ"
    )


def test_pyarrow_outputs_compare_by_type_nulls_and_values_within_the_tolerances():
    # Compared by their `==` (pyarrow's exact `equals`), a right candidate summing in another
    # order failed, as did one whose output held NaN ("expected [nan], got [nan]"), and a
    # wrong one was shown whole, with no word of where it differed.
    pa = pytest.importorskip("pyarrow")
    values = np.arange(100.0)
    wrong = values.copy()
    wrong[7] = -1
    assert compare_outputs(pa.array(values), pa.array(values * (1 + 1e-9))) is None
    assert compare_outputs(pa.array([np.nan, 1.0]), pa.array([np.nan, 1.0])) is None
    assert compare_outputs(pa.array(values), pa.array(wrong)) == (
        "output: 1 of 100 elements differ (rtol=1e-05, atol=1e-08), max abs error 8,"
        " max rel error 1.14286; first at [7]: expected 7.0, got -1.0"
    )
    assert compare_outputs(pa.array(values), pa.chunked_array([values[:50], values[50:]])) is None
    assert compare_outputs(pa.array([1, 2]), pa.array([1.0, 2.0])) == (
        "output: type differs: expected int64, got double"
    )
    assert compare_outputs(pa.array([1.0, None, 3.0]), pa.array([1.0, 2.0, 3.0])) == (
        "output (where null): 1 of 3 elements differ; first at [1]: expected True, got False"
    )
    assert compare_outputs(pa.array([1.0, None, 3.0]), pa.array([1.0, None, 4.0])).startswith(
        "output (its values beside the nulls, in order): 1 of 2 elements differ"
    )
    table = pa.table({"a": values, "b": ["x"] * 100})
    assert compare_outputs(table, pa.table({"a": values + 1e-12, "b": ["x"] * 100})) is None
    assert compare_outputs(table, table.select(["b", "a"])).startswith(
        "output.column_names[0]: expected 'a', got 'b'"
    )
    assert compare_outputs(table, pa.table({"a": wrong, "b": ["x"] * 100})).startswith(
        "output['a']: 1 of 100 elements differ"
    )
    assert compare_outputs(table, table.to_batches()[0]) == (
        "output: expected Table, got RecordBatch"
    )


def test_an_xarray_dataset_compares_the_coordinates_no_variable_uses():
    # A Dataset is a Mapping of its variables: compared as a dict, a coordinate of its own
    # (along a dimension no variable has) was never looked at, and a wrong one passed.
    xr = pytest.importorskip("xarray")
    dataset = xr.Dataset(
        {"v": ("t", np.arange(3.0))}, coords={"t": [0, 1, 2], "station": ["a", "b"]}
    )
    assert compare_outputs(dataset, dataset.copy(deep=True)) is None
    assert compare_outputs(dataset, dataset.assign_coords(station=["a", "z"])) == (
        "output.coords['station']: 1 of 2 elements differ; first at [1]: expected b, got z"
    )
    assert compare_outputs(dataset, dataset.drop_vars("station")) == (
        "output.coords: missing keys ['station']"
    )


def test_awkward_outputs_compare_by_type_then_values_within_the_tolerances():
    ak = pytest.importorskip("awkward")
    ragged = ak.Array([[1.0, 2.0], [], [3.0]])
    assert compare_outputs(ragged, ak.Array([[1.0, 2.0], [], [3.0 + 1e-9]])) is None
    assert compare_outputs(ragged, ak.Array([[1.0, 2.0], [], [3.5]])).startswith(
        "output[2][0]: expected 3.0, got 3.5"
    )
    assert compare_outputs(ragged, ak.Array([[1, 2], [], [3]])) == (
        "output: type differs: expected 3 * var * float64, got 3 * var * int64"
    )
