"""Output checks on the GPU: two CuPy arrays (or CUDA tensors of PyTorch, through CuPy views)
compared where they live.

The host comparison copies both arrays and runs `numpy.isclose` on one core: for the
2^26-element outputs of the example kernels that is a 256 MiB copy and about half a second
per candidate. On the device it is one kernel and a one-byte answer. Only the common case,
agreement, is settled here; arrays that differ go to the host comparison, which writes the
message (how many elements, the largest errors, the first bad index) exactly as before.
"""

from __future__ import annotations

import sys
from typing import Any

from pytest_autotune.tune.array_comparison import tolerance_may_overflow
from pytest_autotune.tune.loaded import instance_of
from pytest_autotune.tune.torch_tensors import as_cupy, is_tensor


def is_cupy_array(value: object) -> bool:
    """Whether `value` is a CuPy array, without importing CuPy (it is optional, and only a
    CuPy value can come from it)."""
    return instance_of(value, "cupy", "ndarray")


def agree_on_device(
    reference: object, actual: object, rtol: float, atol: float, equal_nan: bool
) -> bool:
    """True when both are CuPy arrays of one dtype, shape and device whose values agree as the host
    comparison would judge them: `|actual - reference| <= atol + rtol*|reference|` for
    floating point (NaN matching NaN where `equal_nan`), equality otherwise. A CUDA tensor of
    PyTorch compares as a CuPy view of its values (`torch_tensors.as_cupy`). False means
    "not shown equal here": other types, or values that differ."""
    if is_tensor(reference):
        reference = as_cupy(reference)
    if is_tensor(actual):
        actual = as_cupy(actual)
    if not (is_cupy_array(reference) and is_cupy_array(actual)):
        return False
    ref: Any = reference
    act: Any = actual
    if ref.dtype != act.dtype or ref.shape != act.shape:
        return False
    if ref.device.id != act.device.id:
        # Outputs of two GPUs (a candidate that returns its output from a device of its
        # own, `compare_outputs` called on two): CuPy's kernels raise ValueError on an array
        # of another device where the two have no peer access, and the checks ended with it.
        return False
    cupy = sys.modules["cupy"]
    if ref.dtype.kind in "fc":
        close = cupy.isclose(act, ref, rtol=rtol, atol=atol, equal_nan=equal_nan)
        # As on the host (`Rules.isclose`): a tolerance that overflows the dtype (float16's
        # rtol=2 of 40000) is inf, and an infinite candidate is close to nothing but itself.
        if tolerance_may_overflow(ref.dtype, rtol, atol):
            close &= ~cupy.isinf(act) | (act == ref)
        if ref.dtype.kind == "c":
            # `isclose` takes a complex with NaN in either part for NaN: nan+1j agreed with
            # nan+2j. Elements with a NaN are left to the host, which compares their parts.
            close &= ~(cupy.isnan(ref) | cupy.isnan(act))
    else:
        close = act == ref
    return bool(close.all())
