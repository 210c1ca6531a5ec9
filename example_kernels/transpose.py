"""transpose: out-of-place transpose of an fp32 matrix."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from example_kernels._cupy import array_module, blocks, cupy, kernel
from pytest_autotune import Work


def inputs(n: int, xp: Any = np) -> tuple[Any]:
    return (xp.asarray(np.random.default_rng(0).random((n, n), dtype=np.float32)),)


def work(x: Any) -> Work:
    return Work(compute_ops=0, bytes=2 * x.nbytes)


def reference(x: Any) -> Any:
    """On the inputs' device."""
    return array_module(x).ascontiguousarray(x.T)


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

// A TILE x TILE tile through shared memory, so both the reads and the writes are whole
// rows. Block (TILE, ROWS): each thread moves TILE / ROWS elements. PAD = 1 shifts each
// tile row by one bank, so reading a tile column does not hit one bank 32 times.
template <int TILE, int ROWS, int PAD>
__device__ __forceinline__ void transpose_tile(const float* __restrict__ x,
                                               float* __restrict__ out, int rows, int cols) {
    __shared__ float tile[TILE][TILE + PAD];
    int c = blockIdx.x * TILE + threadIdx.x;
    int r = blockIdx.y * TILE + threadIdx.y;
#pragma unroll
    for (int j = 0; j < TILE; j += ROWS) {
        if (r + j < rows && c < cols) tile[threadIdx.y + j][threadIdx.x] = x[(long long)(r + j) * cols + c];
    }
    __syncthreads();
    int oc = blockIdx.y * TILE + threadIdx.x;
    int orow = blockIdx.x * TILE + threadIdx.y;
#pragma unroll
    for (int j = 0; j < TILE; j += ROWS) {
        if (orow + j < cols && oc < rows) out[(long long)(orow + j) * rows + oc] = tile[threadIdx.x][threadIdx.y + j];
    }
}

extern "C" __global__ void transpose_tile32(const float* __restrict__ x, float* __restrict__ out,
                                            int rows, int cols) {
    transpose_tile<32, 8, 0>(x, out, rows, cols);
}

extern "C" __global__ void transpose_tile32_padded(const float* __restrict__ x,
                                                   float* __restrict__ out, int rows, int cols) {
    transpose_tile<32, 8, 1>(x, out, rows, cols);
}

// 64x64 tiles, block (64, 8): eight loads in flight per thread instead of four.
extern "C" __global__ void transpose_tile64_padded(const float* __restrict__ x,
                                                   float* __restrict__ out, int rows, int cols) {
    transpose_tile<64, 8, 1>(x, out, rows, cols);
}
"""


def _launch(name: str, x: Any, tile: int, block_rows: int = 8) -> Any:
    """Launch a (tile, 8) block per tile x block_rows patch of x (the naive kernel's patch
    is 32 x 8, a tiled kernel's its whole tile)."""
    cp = cupy()
    rows, cols = x.shape
    out = cp.empty((cols, rows), dtype=x.dtype)
    grid = (blocks(cols, tile), blocks(rows, block_rows))
    kernel(_SOURCE, name)(grid, (tile, 8), (x, out, np.int32(rows), np.int32(cols)))
    return out


def cupy_naive(x: Any) -> Any:
    return _launch("transpose_naive", x, 32)


def cupy_tile32(x: Any) -> Any:
    return _launch("transpose_tile32", x, 32, 32)


def cupy_tile32_padded(x: Any) -> Any:
    return _launch("transpose_tile32_padded", x, 32, 32)


def cupy_tile64_padded(x: Any) -> Any:
    return _launch("transpose_tile64_padded", x, 64, 64)


def cupy_copy(x: Any) -> Any:
    return cupy().ascontiguousarray(x.T)


CUPY: dict[str, Callable[..., Any]] = {
    "naive": cupy_naive,
    "tile32": cupy_tile32,
    "tile32_padded": cupy_tile32_padded,
    "tile64_padded": cupy_tile64_padded,
    "cupy_copy": cupy_copy,
}
"""CuPy candidates for a C-contiguous fp32 matrix; each returns a new transposed array."""
