"""The values compared as NumPy arrays: a view of an array-like output (CuPy's and PyTorch's
copied to the host), whether two dtypes hold the same kind of values, the NumPy type a type
NumPy does not know as a number converts to, and the blocks a large array is compared in."""

from __future__ import annotations

import array
import importlib
from collections.abc import Iterator
from typing import Any

import numpy as np
import numpy.typing as npt

from pytest_autotune.tune.torch_tensors import is_tensor, tensor_on_host

BLOCK_ELEMENTS = 1 << 16
"""Elements compared at once. `np.isclose` makes several temporaries of its operands' size:
over a whole 1 GiB output that was GiBs beyond the outputs themselves, over a block it is a
few MiB, and a block is large enough that the loop costs nothing beside the comparison."""


def wider_type(dtype: np.dtype[Any]) -> type[np.int64 | np.float32] | None:
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


def blocks(
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
            yield from blocks(reference[i], actual[i], offset + i * row)
        return
    step = BLOCK_ELEMENTS // row
    for start in range(0, reference.shape[0], step):
        stop = start + step
        yield reference[start:stop], actual[start:stop], offset + start * row


def host_array(value: object) -> npt.NDArray[Any] | None:
    """A NumPy view of an array or NumPy scalar (CuPy arrays and PyTorch tensors copied to the
    host), else None."""
    if isinstance(value, np.ndarray) and not isinstance(value, np.matrix):
        return value
    if isinstance(value, (np.matrix, np.generic, memoryview, array.array)):
        # A matrix's rows stay 2-d when indexed (a scipy.sparse `.todense()` is one): as a
        # plain array, its elements can be counted and the first bad one named. A memoryview
        # compared with `==` needed floats exactly equal, and a difference read "expected
        # <memory at 0x...>": as the array it views, it has a dtype and a shape (an
        # `array.array` of the standard library too, whose `==` is exact as well).
        return np.asarray(value)
    if is_tensor(value):
        return tensor_on_host(value)
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


def same_values_dtype(reference: np.dtype[Any], actual: np.dtype[Any]) -> bool:
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
            same_values_dtype(reference[name].base, actual[name].base)
            and reference[name].shape == actual[name].shape
            for name in reference.names
        )
    try:
        return reference.newbyteorder("=") == actual.newbyteorder("=")
    except TypeError:  # a new style dtype (StringDType) has no byte order
        return False
