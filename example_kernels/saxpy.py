"""saxpy: `y = a*x + y` in fp32, in place."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from example_kernels._cupy import aligned16, array_module, blocks, cupy, kernel, sm_count
from pytest_autotune import AutotuneSkip, Work

A = np.float32(2.0)


def inputs(n: int, xp: Any = np) -> tuple[Any, Any, Any]:
    rng = np.random.default_rng(0)
    x = xp.asarray(rng.random(n, dtype=np.float32))
    y = xp.asarray(rng.random(n, dtype=np.float32))
    return A, x, y


def work(a: Any, x: Any, y: Any) -> Work:
    # Read x and y, write y: three passes over n floats; one multiply-add per element. The
    # working set is the two arrays: y is written where it was read.
    return Work(compute_ops=2 * x.size, bytes=3 * x.nbytes, working_set=2 * x.nbytes)


def reference(a: Any, x: Any, y: Any) -> Any:
    """In float64, on the inputs' device."""
    xp = array_module(x, y)
    return (x.astype(xp.float64) * float(a) + y.astype(xp.float64)).astype(xp.float32)


def numpy_expression(a: Any, x: Any, y: Any) -> Any:
    """The obvious expression: allocates a temporary for `a*x`, then a new result."""
    return a * x + y


def numpy_in_place(a: Any, x: Any, y: Any) -> Any:
    """`y += a*x`: the result lands in y without a new array (one temporary for `a*x`)."""
    y += a * x
    return y


def numpy_chunked(a: Any, x: Any, y: Any, chunk: int = 1 << 16) -> Any:
    """In place in cache-sized chunks, so the temporary of `a*x` stays in L2."""
    tmp = np.empty(min(chunk, x.size), dtype=x.dtype)
    for start in range(0, x.size, chunk):
        stop = min(start + chunk, x.size)
        t = tmp[: stop - start]
        np.multiply(x[start:stop], a, out=t)
        np.add(y[start:stop], t, out=y[start:stop])
    return y


NUMPY: dict[str, Callable[..., Any]] = {
    "expression": numpy_expression,
    "in_place": numpy_in_place,
    "chunked": numpy_chunked,
}


_SOURCE = r"""
extern "C" __global__ void saxpy_grid_stride(float a, const float* __restrict__ x,
                                             float* __restrict__ y, long long n) {
    long long stride = (long long)gridDim.x * blockDim.x;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        y[i] = a * x[i] + y[i];
    }
}

extern "C" __global__ void saxpy_per_element(float a, const float* __restrict__ x,
                                             float* __restrict__ y, long long n) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}

// One float4 per thread: a quarter of the load and store instructions. The first n % 4
// threads also take one element of the tail.
extern "C" __global__ void saxpy_float4(float a, const float* __restrict__ x,
                                        float* __restrict__ y, long long n) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    long long n4 = n / 4;
    if (i < n4) {
        float4 xv = reinterpret_cast<const float4*>(x)[i];
        float4 yv = reinterpret_cast<float4*>(y)[i];
        yv.x = a * xv.x + yv.x;
        yv.y = a * xv.y + yv.y;
        yv.z = a * xv.z + yv.z;
        yv.w = a * xv.w + yv.w;
        reinterpret_cast<float4*>(y)[i] = yv;
    }
    if (i < n - 4 * n4) y[4 * n4 + i] = a * x[4 * n4 + i] + y[4 * n4 + i];
}
"""

BLOCKS_PER_SM = 4


def _grid_stride(block: int) -> Callable[..., Any]:
    def run(a: Any, x: Any, y: Any) -> Any:
        grid = BLOCKS_PER_SM * sm_count()
        args = (np.float32(a), x, y, np.int64(x.size))
        kernel(_SOURCE, "saxpy_grid_stride")((grid,), (block,), args)
        return y

    run.__name__ = run.__qualname__ = f"cupy_grid_stride_{block}"
    return run


def cupy_per_element(a: Any, x: Any, y: Any) -> Any:
    """One thread per element, block 256: as many blocks as it takes."""
    args = (np.float32(a), x, y, np.int64(x.size))
    kernel(_SOURCE, "saxpy_per_element")((blocks(x.size, 256),), (256,), args)
    return y


def cupy_float4(a: Any, x: Any, y: Any) -> Any:
    """One float4 per thread, block 256; declines arrays not aligned to 16 bytes."""
    if not aligned16(x, y):
        raise AutotuneSkip("float4 loads need arrays aligned to 16 bytes")
    args = (np.float32(a), x, y, np.int64(x.size))
    kernel(_SOURCE, "saxpy_float4")((blocks(x.size // 4 or 1, 256),), (256,), args)
    return y


def cupy_ufuncs(a: Any, x: Any, y: Any) -> Any:
    """Two CuPy ufuncs: a temporary for `a*x`, then the add in place (two passes)."""
    cp = cupy()
    return cp.add(cp.multiply(a, x), y, out=y)


CUPY: dict[str, Callable[..., Any]] = {
    **{f"grid_stride_{b}": _grid_stride(b) for b in (32, 64, 128, 256, 512, 1024)},
    "per_element_256": cupy_per_element,
    "float4_256": cupy_float4,
    "cupy_ufuncs": cupy_ufuncs,
}
"""The nine CuPy candidates of DESIGN section 9; each writes `y` in place and returns it."""
