"""transpose: out-of-place transpose of an fp32 matrix."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from example_kernels._cupy import blocks, cupy, kernel
from pytest_autotune import Work


def inputs(n: int, xp: Any = np) -> tuple[Any]:
    return (xp.asarray(np.random.default_rng(0).random((n, n), dtype=np.float32)),)


def work(x: Any) -> Work:
    return Work(compute_ops=0, bytes=2 * x.nbytes)


def reference(x: Any) -> Any:
    return np.ascontiguousarray(np.asarray(x).T)


def numpy_copy(x: Any) -> Any:
    return np.ascontiguousarray(x.T)


def numpy_tiled(x: Any, tile: int = 64) -> Any:
    """Copy tile by tile so both the rows read and the rows written stay in cache."""
    n, m = x.shape
    out = np.empty((m, n), dtype=x.dtype)
    for i in range(0, n, tile):
        for j in range(0, m, tile):
            out[j : j + tile, i : i + tile] = x[i : i + tile, j : j + tile].T
    return out


NUMPY: dict[str, Callable[..., Any]] = {"copy": numpy_copy, "tiled": numpy_tiled}


_SOURCE = r"""
// One element per thread: reads along rows (coalesced), writes down columns (a 4-byte
// store per 32-byte sector). Block (32, 8).
extern "C" __global__ void transpose_naive(const float* __restrict__ x, float* __restrict__ out,
                                           int rows, int cols) {
    int c = blockIdx.x * 32 + threadIdx.x;
    int r = blockIdx.y * 8 + threadIdx.y;
    if (r < rows && c < cols) out[(long long)c * rows + r] = x[(long long)r * cols + c];
}

// A 32x32 tile through shared memory, so both the reads and the writes are whole rows.
// Block (32, 8): each thread moves four elements. PAD = 1 shifts each tile row by one bank,
// so reading a tile column does not hit one bank 32 times.
template <int PAD>
__device__ __forceinline__ void transpose_tile(const float* __restrict__ x,
                                               float* __restrict__ out, int rows, int cols) {
    __shared__ float tile[32][32 + PAD];
    int c = blockIdx.x * 32 + threadIdx.x;
    int r = blockIdx.y * 32 + threadIdx.y;
    for (int j = 0; j < 32; j += 8) {
        if (r + j < rows && c < cols) tile[threadIdx.y + j][threadIdx.x] = x[(long long)(r + j) * cols + c];
    }
    __syncthreads();
    int oc = blockIdx.y * 32 + threadIdx.x;
    int orow = blockIdx.x * 32 + threadIdx.y;
    for (int j = 0; j < 32; j += 8) {
        if (orow + j < cols && oc < rows) out[(long long)(orow + j) * rows + oc] = tile[threadIdx.x][threadIdx.y + j];
    }
}

extern "C" __global__ void transpose_tile32(const float* __restrict__ x, float* __restrict__ out,
                                            int rows, int cols) {
    transpose_tile<0>(x, out, rows, cols);
}

extern "C" __global__ void transpose_tile32_padded(const float* __restrict__ x,
                                                   float* __restrict__ out, int rows, int cols) {
    transpose_tile<1>(x, out, rows, cols);
}
"""


def _launch(name: str, x: Any, rows_per_block: int) -> Any:
    cp = cupy()
    rows, cols = x.shape
    out = cp.empty((cols, rows), dtype=x.dtype)
    grid = (blocks(cols, 32), blocks(rows, rows_per_block))
    kernel(_SOURCE, name)(grid, (32, 8), (x, out, np.int32(rows), np.int32(cols)))
    return out


def cupy_naive(x: Any) -> Any:
    return _launch("transpose_naive", x, 8)


def cupy_tile32(x: Any) -> Any:
    return _launch("transpose_tile32", x, 32)


def cupy_tile32_padded(x: Any) -> Any:
    return _launch("transpose_tile32_padded", x, 32)


def cupy_copy(x: Any) -> Any:
    return cupy().ascontiguousarray(x.T)


CUPY: dict[str, Callable[..., Any]] = {
    "naive": cupy_naive,
    "tile32": cupy_tile32,
    "tile32_padded": cupy_tile32_padded,
    "cupy_copy": cupy_copy,
}
"""CuPy candidates for a C-contiguous fp32 matrix; each returns a new transposed array."""
