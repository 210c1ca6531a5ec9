"""Outputs of pandas (`Series`, `DataFrame`, `Index`), of scipy.sparse, of xarray, awkward,
polars and pyarrow, and the arrays of other array libraries (JAX, Dask, pydata sparse,
array-api-strict), compared through the NumPy arrays they hold or convert to. Their `==`
gives no bool (an element-wise frame or array), so they read as uncomparable: every
candidate returning one failed its check, the reference against its own output included
("candidate 'csr' differs from the reference candidate 'csr'"). No library is imported
here: an output of one exists only where the program imported it."""

from __future__ import annotations

import functools
import math
import sys
from typing import Any, cast

import numpy as np

from pytest_autotune.tune.array_comparison import Rules
from pytest_autotune.tune.differences import PYTHON_NUMBERS, mismatch
from pytest_autotune.tune.host_arrays import same_values_dtype
from pytest_autotune.tune.loaded import instance_of
from pytest_autotune.tune.wording import short_repr

DENSE_ELEMENTS = 1 << 22
"""Elements of a sparse matrix compared in its dense form (32 MiB a side in float64), whose
differences are named by their row and column; a larger one compares the values stored in
either, whose dense form could take more memory than the machine has."""


def compare_library_output(
    reference: object, actual: object, where: str, rules: Rules
) -> list[str] | None:
    """Every difference between two outputs where `reference` is a value of pandas,
    scipy.sparse, xarray, awkward, polars or pyarrow, or an array of another array library; None for
    any other value."""
    pandas = sys.modules.get("pandas")
    sparse = sys.modules.get("scipy.sparse")
    xarray, awkward = sys.modules.get("xarray"), sys.modules.get("awkward")
    if pandas is not None and (reference is pandas.NA or reference is pandas.NaT):
        # pandas' missing values equal nothing, themselves included (`pd.NA == pd.NA` is NA,
        # whose truth pandas refuses): one missing value against the same is one answer, as
        # NaN against NaN is.
        same = actual is reference and rules.equal_nan
        return [] if same else [mismatch(where, reference, actual)]
    if pandas is not None and isinstance(reference, (pandas.Series, pandas.DataFrame)):
        same_kind = type(actual) is type(reference)
        compare: Any = functools.partial(_compare_frames, pandas)
    elif pandas is not None and isinstance(reference, pandas.Index):
        same_kind, compare = isinstance(actual, pandas.Index), _compare_index
    elif sparse is not None and sparse.issparse(reference):
        same_kind = sparse.issparse(actual)
        compare = functools.partial(_compare_sparse, sparse)
    elif xarray is not None and isinstance(reference, (xarray.DataArray, xarray.Dataset)):
        same_kind, compare = type(actual) is type(reference), _compare_xarray
    elif awkward is not None and isinstance(reference, awkward.Array):
        same_kind, compare = isinstance(actual, awkward.Array), _compare_awkward
    elif _is_polars(reference):
        same_kind, compare = type(actual) is type(reference), _compare_polars
    elif _is_arrow_table(reference):
        same_kind, compare = type(actual) is type(reference), _compare_arrow_table
    elif _is_arrow_array(reference):
        same_kind, compare = _is_arrow_array(actual), _compare_arrow_array
    elif _is_lazy_frame(reference) or _is_lazy_frame(actual):
        # Its `==` raised "comparison not supported for LazyFrame objects", and the message
        # said to give the type an autotune_compare method: the result is what compares.
        return [
            f"{where}: a polars LazyFrame is a query, not its result (its time is the plan's,"
            " not the work's): return its .collect()"
        ]
    else:
        return _compare_library_arrays(reference, actual, where, rules)
    if not same_kind:
        return [mismatch(where, reference, actual)]
    result: list[str] = compare(reference, actual, where, rules)
    return result


def _compare_frames(
    pandas: Any, reference: Any, actual: Any, where: str, rules: Rules
) -> list[str]:
    """A Series or DataFrame: its labels (the index, a frame's columns) and name, then the
    values of each column, as arrays of their dtype."""
    problems = _compare_index(reference.index, actual.index, f"{where}.index", rules)
    if isinstance(reference, pandas.Series):
        problems += rules.compare(reference.name, actual.name, f"{where}.name")
        return problems or _compare_columns(reference, actual, where, rules)
    problems += _compare_index(reference.columns, actual.columns, f"{where}.columns", rules)
    if problems:
        return problems
    for i, name in enumerate(reference.columns):
        column = f"{where}[{name!r}]"
        problems += _compare_columns(reference.iloc[:, i], actual.iloc[:, i], column, rules)
    return problems


def _compare_index(reference: Any, actual: Any, where: str, rules: Rules) -> list[str]:
    """An index by its names (a MultiIndex's, one a level), then its values. A groupby's
    result names its index by the key: a candidate that lost the name passed, though its
    `reset_index()` names the key's column "index"."""
    names = [list(index.names) for index in (reference, actual)]
    problems = (
        [] if names[0] == names[1] else [f"{where}.names: expected {names[0]}, got {names[1]}"]
    )
    return problems + _compare_columns(reference, actual, where, rules)


def _compare_columns(reference: Any, actual: Any, where: str, rules: Rules) -> list[str]:
    """One column's (or an index's) values, which must share its pandas dtype: an `Int64`
    column is no `int64` one, though both read as the same NumPy array."""
    # Every categorical dtype reads "category": its categories (and whether they are
    # ordered, then in what order) tell them apart, as pandas' own `==` of dtypes does.
    # Only theirs: a `string` column stored by pyarrow reads as one stored in Python.
    categorical = hasattr(reference.dtype, "categories")
    if str(reference.dtype) != str(actual.dtype) or (
        categorical and reference.dtype != actual.dtype
    ):
        expected, got = _dtype_name(reference.dtype), _dtype_name(actual.dtype)
        said = [f"{where}: dtype differs: expected {expected}, got {got}"]
        if expected != got:
            return said
        # Alike as shown ("expected category of [1, 2], got category of [1, 2]"): the
        # categories differ in their own dtype (int32, object), or past what is shown.
        categories = reference.dtype.categories, actual.dtype.categories
        return rules.compare(*categories, f"{where}.dtype.categories") or said
    numpy_dtype = getattr(reference.dtype, "numpy_dtype", None)
    if numpy_dtype is None and not _holds_na(reference) and not _holds_na(actual):
        return rules.compare(reference.to_numpy(), actual.to_numpy(), where)
    # A nullable column (`Int64`, `Float64`, `boolean`) reads as float64 or object where it
    # holds a missing value and as its own dtype where not: its missing values are compared
    # as positions, then its values in its own dtype, exactly for integers. A `string`
    # column's missing values read as `pd.NA`, which equals nothing: as None beside them.
    missing_here, missing_there = np.asarray(reference.isna()), np.asarray(actual.isna())
    missing = rules.compare(missing_here, missing_there, f"{where} (where missing)")
    if missing or missing_here.all():
        return missing
    # Both sides' missing places filled alike, with a value their NumPy dtype holds: a
    # pyarrow-backed (`pd.ArrowDtype`) bool, timestamp or string column refused 0, out of
    # the check.
    if numpy_dtype is None or numpy_dtype.kind == "O":
        blank = None
    else:
        blank = reference.array[int(np.argmin(missing_here))]
    values_here = reference.to_numpy(dtype=numpy_dtype, na_value=blank)
    values_there = actual.to_numpy(dtype=numpy_dtype, na_value=blank)
    return rules.compare(values_here, values_there, where)


def _dtype_name(dtype: Any) -> str:
    """A pandas dtype as its name, a categorical one's with its categories."""
    categories = getattr(dtype, "categories", None)
    if categories is None:
        return str(dtype)
    return f"{dtype} of {short_repr(categories.tolist())}{' (ordered)' if dtype.ordered else ''}"


def _holds_na(column: Any) -> bool:
    """Whether a column (or index) of a pandas extension dtype holds a missing value of
    `pd.NA`, which NumPy's `==` on its values cannot compare."""
    na_value = getattr(column.dtype, "na_value", None)
    return na_value is sys.modules["pandas"].NA and bool(column.isna().any())


def _compare_sparse(
    sparse: Any, reference: Any, actual: Any, where: str, rules: Rules
) -> list[str]:
    """Two sparse matrices by value, whatever their formats (CSR against CSC, explicit zeros),
    as a Fortran-ordered array compares with a C-ordered one."""
    if reference.shape != actual.shape:
        return [f"{where}: shape differs: expected {reference.shape}, got {actual.shape}"]
    if not same_values_dtype(reference.dtype, actual.dtype):
        return [f"{where}: dtype differs: expected {reference.dtype}, got {actual.dtype}"]
    if math.prod(reference.shape) <= DENSE_ELEMENTS:
        return rules.compare(reference.toarray(), actual.toarray(), where)
    # The values at every position either stores, in one order: each matrix rebuilt on the
    # union of both patterns (its own values there, zeros at the other's), then canonical.
    ref, act = reference.tocoo(), actual.tocoo()
    rows, cols = np.concatenate([ref.row, act.row]), np.concatenate([ref.col, act.col])
    ref_values = np.concatenate([ref.data, np.zeros_like(act.data)])
    act_values = np.concatenate([np.zeros_like(ref.data), act.data])
    stored = []
    for values in (ref_values, act_values):
        matrix = sparse.csr_matrix((values, (rows, cols)), shape=reference.shape)
        matrix.sum_duplicates()  # sorted too: both in one order, as their patterns are one
        stored.append(matrix.data)
    return rules.compare(stored[0], stored[1], f"{where} (its stored values, row by row)")


def _compare_xarray(reference: Any, actual: Any, where: str, rules: Rules) -> list[str]:
    """A DataArray by its dimensions, coordinates, name and values; a Dataset by its
    coordinates and variables, each a DataArray. A coordinate's values compare as an array
    (as a DataArray, it holds itself among its coordinates)."""
    if not hasattr(reference, "data_vars"):
        problems = rules.compare(reference.dims, actual.dims, f"{where}.dims")
        problems += rules.compare(reference.name, actual.name, f"{where}.name")
    else:
        problems = rules.compare(dict(reference.data_vars), dict(actual.data_vars), where)
    ref_coords, act_coords = (
        {name: c.values for name, c in value.coords.items()} for value in (reference, actual)
    )
    problems = rules.compare(ref_coords, act_coords, f"{where}.coords") + problems
    if problems or hasattr(reference, "data_vars"):
        return problems
    return rules.compare(reference.values, actual.values, where)


def _compare_awkward(reference: Any, actual: Any, where: str, rules: Rules) -> list[str]:
    """Two awkward arrays (ragged, of records) by their types, then by their values as lists,
    floats within the tolerances: no NumPy array holds a ragged one."""
    if str(reference.type) != str(actual.type):
        return [f"{where}: type differs: expected {reference.type}, got {actual.type}"]
    return rules.compare(reference.to_list(), actual.to_list(), where)


def _is_polars(value: object) -> bool:
    """Whether `value` is a polars `DataFrame` or `Series`."""
    return instance_of(value, "polars", "DataFrame") or instance_of(value, "polars", "Series")


def _is_lazy_frame(value: object) -> bool:
    """Whether `value` is a polars `LazyFrame` (a query not yet run)."""
    return instance_of(value, "polars", "LazyFrame")


def _compare_polars(reference: Any, actual: Any, where: str, rules: Rules) -> list[str]:
    """A polars DataFrame by its column names, in order, then each column; a Series by its
    name, dtype, the places of its nulls and its other values (floats within the
    tolerances). Compared by `==`, a frame (which gives a frame of booleans) failed every
    candidate, the reference against its own output included."""
    if not hasattr(reference, "columns"):
        return _compare_polars_series(reference, actual, where, rules)
    problems = rules.compare(list(reference.columns), list(actual.columns), f"{where}.columns")
    if problems:
        return problems
    return [
        problem
        for name in reference.columns
        for problem in _compare_polars_series(
            reference[name], actual[name], f"{where}[{name!r}]", rules
        )
    ]


def _compare_polars_series(reference: Any, actual: Any, where: str, rules: Rules) -> list[str]:
    problems = rules.compare(reference.name, actual.name, f"{where}.name")
    if reference.dtype != actual.dtype:
        problems.append(f"{where}: dtype differs: expected {reference.dtype}, got {actual.dtype}")
    if problems:
        return problems
    # A null is no NaN in polars: its places compare first, then the values beside them.
    nulls = rules.compare(
        reference.is_null().to_numpy(), actual.is_null().to_numpy(), f"{where} (where null)"
    )
    if nulls:
        return nulls
    if not reference.null_count():
        return rules.compare(reference.to_numpy(), actual.to_numpy(), where)
    where = f"{where} (its values beside the nulls, in order)"
    return rules.compare(reference.drop_nulls().to_numpy(), actual.drop_nulls().to_numpy(), where)


def _is_arrow_table(value: object) -> bool:
    """Whether `value` is a pyarrow `Table` or `RecordBatch`."""
    return instance_of(value, "pyarrow", "Table") or instance_of(value, "pyarrow", "RecordBatch")


def _is_arrow_array(value: object) -> bool:
    """Whether `value` is a pyarrow `Array` or `ChunkedArray` (a table's column): its chunks
    are its layout, not its values, as a sparse matrix's format is."""
    return instance_of(value, "pyarrow", "Array") or instance_of(value, "pyarrow", "ChunkedArray")


def _compare_arrow_table(reference: Any, actual: Any, where: str, rules: Rules) -> list[str]:
    """A pyarrow Table or RecordBatch by its column names, in order, then each column.
    Compared by their `==` (pyarrow's exact `equals`), a right candidate that summed in
    another order failed, as did one holding NaN, and a wrong one was shown whole."""
    names = list(reference.column_names), list(actual.column_names)
    problems = rules.compare(*names, f"{where}.column_names")
    if problems:
        return problems
    return [
        problem
        for i, name in enumerate(reference.column_names)
        for problem in _compare_arrow_array(
            reference.column(i), actual.column(i), f"{where}[{name!r}]", rules
        )
    ]


def _compare_arrow_array(reference: Any, actual: Any, where: str, rules: Rules) -> list[str]:
    """A pyarrow array by its type, the places of its nulls and its other values (floats
    within the tolerances, NaN equal to NaN), as a polars Series."""
    if reference.type != actual.type:
        return [f"{where}: type differs: expected {reference.type}, got {actual.type}"]
    nulls = rules.compare(
        reference.is_null().to_numpy(zero_copy_only=False),
        actual.is_null().to_numpy(zero_copy_only=False),
        f"{where} (where null)",
    )
    if nulls:
        return nulls
    if reference.null_count:
        where = f"{where} (its values beside the nulls, in order)"
        reference, actual = reference.drop_null(), actual.drop_null()
    return rules.compare(
        reference.to_numpy(zero_copy_only=False), actual.to_numpy(zero_copy_only=False), where
    )


def _compare_library_arrays(
    reference: object, actual: object, where: str, rules: Rules
) -> list[str] | None:
    """Two arrays of which one at least is of another array library than NumPy (a JAX, Dask,
    pydata sparse or array-api-strict array), by value as NumPy arrays, as a CuPy array
    compares with a NumPy one; None where neither is such an array."""
    ref_array, act_array = _numpy_values(reference), _numpy_values(actual)
    if ref_array is None and act_array is None:
        return None
    numpy = (np.ndarray, np.generic)
    if not any(
        array is not None and not isinstance(value, numpy)
        for value, array in ((reference, ref_array), (actual, act_array))
    ):
        # NumPy's against anything else, either way round: compared as objects are, by
        # type. A Python float against a NumPy array of one element came back here as the
        # same pair, and again, until a RecursionError ended the check.
        return None
    # A Python number against a 0-d array (JAX's `x.sum()`) compares by value, as against
    # a NumPy one.
    ref_values = reference if isinstance(reference, PYTHON_NUMBERS) else ref_array
    act_values = actual if isinstance(actual, PYTHON_NUMBERS) else act_array
    if ref_values is None or act_values is None:
        return [mismatch(where, reference, actual)]
    return rules.compare(ref_values, act_values, where)


def _numpy_values(value: object) -> np.ndarray[Any, Any] | None:
    """The values of an array of any library as a NumPy array (a lazy Dask array computed, a
    pydata sparse one made dense, which refuses `np.asarray`), else None."""
    if isinstance(value, (np.ndarray, np.generic)):
        return np.asarray(value)
    kind = type(value)
    if not (hasattr(kind, "__array__") or hasattr(kind, "__dlpack__")) or isinstance(value, type):
        return None
    if getattr(value, "shape", None) is None or getattr(value, "dtype", None) is None:
        return None
    todense = getattr(value, "todense", None)
    try:
        return np.asarray(todense() if callable(todense) else value)
    except Exception:
        try:
            return np.from_dlpack(cast(Any, value))
        except Exception:
            return None


__all__ = ["DENSE_ELEMENTS", "compare_library_output"]
