"""matmul: fp32 matrix product."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from example_kernels._cupy import array_module, blocks, cupy, kernel
from pytest_autotune import Work


def inputs(n: int, xp: Any = np) -> tuple[Any, Any]:
    rng = np.random.default_rng(0)
    return (
        xp.asarray(rng.random((n, n), dtype=np.float32)),
        xp.asarray(rng.random((n, n), dtype=np.float32)),
    )


def work(a: Any, b: Any) -> Work:
    n, k = a.shape
    m = b.shape[1]
    return Work(compute_ops=2 * n * k * m, bytes=(n * k + k * m + n * m) * a.itemsize)


def reference(a: Any, b: Any) -> Any:
    """In float64, on the inputs' device."""
    xp = array_module(a, b)
    return (a.astype(xp.float64) @ b.astype(xp.float64)).astype(xp.float32)


def numpy_matmul(a: Any, b: Any) -> Any:
    return a @ b


def numpy_einsum(a: Any, b: Any) -> Any:
    return np.einsum("ik,kj->ij", a, b)


def numpy_blocked(a: Any, b: Any, block: int = 256) -> Any:
    """BLAS on blocks: each block's panels fit in cache, at the cost of more calls."""
    n, k = a.shape
    out = np.zeros((n, b.shape[1]), dtype=a.dtype)
    for p in range(0, k, block):
        out += a[:, p : p + block] @ b[p : p + block, :]
    return out


NUMPY: dict[str, Callable[..., Any]] = {
    "matmul": numpy_matmul,
    "einsum": numpy_einsum,
    "blocked": numpy_blocked,
}


_SOURCE = r"""
// C (n x m) = A (n x k) @ B (k x m), all row-major fp32.

// One output per thread, every operand from global memory. Block (16, 16).
extern "C" __global__ void matmul_naive(const float* __restrict__ A, const float* __restrict__ B,
                                        float* __restrict__ C, int n, int k, int m) {
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    if (row >= n || col >= m) return;
    float acc = 0.0f;
    for (int p = 0; p < k; ++p) acc = fmaf(A[(long long)row * k + p], B[(long long)p * m + col], acc);
    C[(long long)row * m + col] = acc;
}

// 16x16 tiles of A and B staged in shared memory: each operand is read from global memory
// k/16 times fewer. Block (16, 16), one output per thread.
extern "C" __global__ void matmul_tiled16(const float* __restrict__ A, const float* __restrict__ B,
                                          float* __restrict__ C, int n, int k, int m) {
    __shared__ float As[16][16];
    __shared__ float Bs[16][17];
    int tx = threadIdx.x, ty = threadIdx.y;
    int row = blockIdx.y * 16 + ty, col = blockIdx.x * 16 + tx;
    float acc = 0.0f;
    for (int p0 = 0; p0 < k; p0 += 16) {
        As[ty][tx] = (row < n && p0 + tx < k) ? A[(long long)row * k + p0 + tx] : 0.0f;
        Bs[ty][tx] = (p0 + ty < k && col < m) ? B[(long long)(p0 + ty) * m + col] : 0.0f;
        __syncthreads();
#pragma unroll
        for (int p = 0; p < 16; ++p) acc = fmaf(As[ty][p], Bs[p][tx], acc);
        __syncthreads();
    }
    if (row < n && col < m) C[(long long)row * m + col] = acc;
}

// 64x64 tiles of C per block, 4x4 outputs per thread held in registers: each shared-memory
// value loaded feeds four FMAs. Block (16, 16). A's tile is stored transposed so a thread
// reads its four rows and four columns as two float4 (rows of 68 floats keep them aligned).
extern "C" __global__ void matmul_reg4x4(const float* __restrict__ A, const float* __restrict__ B,
                                         float* __restrict__ C, int n, int k, int m) {
    __shared__ __align__(16) float As[16][68];
    __shared__ __align__(16) float Bs[16][68];
    int tx = threadIdx.x, ty = threadIdx.y, tid = ty * 16 + tx;
    int row0 = blockIdx.y * 64, col0 = blockIdx.x * 64;
    float acc[4][4] = {};
    for (int p0 = 0; p0 < k; p0 += 16) {
        for (int e = tid; e < 64 * 16; e += 256) {
            int r = e / 16, p = e % 16;
            As[p][r] = (row0 + r < n && p0 + p < k) ? A[(long long)(row0 + r) * k + p0 + p] : 0.0f;
            int q = e / 64, c = e % 64;
            Bs[q][c] = (p0 + q < k && col0 + c < m) ? B[(long long)(p0 + q) * m + col0 + c] : 0.0f;
        }
        __syncthreads();
#pragma unroll
        for (int p = 0; p < 16; ++p) {
            float4 a = *reinterpret_cast<const float4*>(&As[p][ty * 4]);
            float4 b = *reinterpret_cast<const float4*>(&Bs[p][tx * 4]);
            float av[4] = {a.x, a.y, a.z, a.w};
            float bv[4] = {b.x, b.y, b.z, b.w};
#pragma unroll
            for (int i = 0; i < 4; ++i) {
#pragma unroll
                for (int j = 0; j < 4; ++j) acc[i][j] = fmaf(av[i], bv[j], acc[i][j]);
            }
        }
        __syncthreads();
    }
#pragma unroll
    for (int i = 0; i < 4; ++i) {
        int row = row0 + ty * 4 + i;
#pragma unroll
        for (int j = 0; j < 4; ++j) {
            int col = col0 + tx * 4 + j;
            if (row < n && col < m) C[(long long)row * m + col] = acc[i][j];
        }
    }
}
"""


def _launch(name: str, a: Any, b: Any, tile: int) -> Any:
    cp = cupy()
    n, k = a.shape
    m = b.shape[1]
    out = cp.empty((n, m), dtype=cp.float32)
    grid = (blocks(m, tile), blocks(n, tile))
    kernel(_SOURCE, name)(grid, (16, 16), (a, b, out, np.int32(n), np.int32(k), np.int32(m)))
    return out


def cupy_naive(a: Any, b: Any) -> Any:
    return _launch("matmul_naive", a, b, 16)


def cupy_tiled16(a: Any, b: Any) -> Any:
    return _launch("matmul_tiled16", a, b, 16)


def cupy_reg4x4(a: Any, b: Any) -> Any:
    return _launch("matmul_reg4x4", a, b, 64)


def cupy_matmul(a: Any, b: Any) -> Any:
    """cuBLAS SGEMM through CuPy, in full fp32 unless CUPY_TF32 says otherwise."""
    return cupy().matmul(a, b)


CUPY: dict[str, Callable[..., Any]] = {
    "naive": cupy_naive,
    "tiled16": cupy_tiled16,
    "reg4x4": cupy_reg4x4,
    "cupy_matmul": cupy_matmul,
}
"""CuPy candidates for C-contiguous fp32 matrices; each returns a new array."""
