"""sum: reduce an fp32 vector to one number."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from example_kernels._cupy import aligned16, array_module, blocks, cupy, kernel, sm_count
from pytest_autotune import AutotuneSkip, Work


def inputs(n: int, xp: Any = np) -> tuple[Any]:
    return (xp.asarray(np.random.default_rng(0).random(n, dtype=np.float32)),)


def work(x: Any) -> Work:
    return Work(compute_ops=x.size, bytes=x.nbytes)


def reference(x: Any) -> Any:
    """In float64, on the inputs' device: a float32 scalar on the host, a 0-d float32 array
    on a GPU."""
    xp = array_module(x)
    total = xp.sum(x, dtype=xp.float64)
    return np.float32(total) if xp is np else total.astype(xp.float32)


def numpy_pairwise(x: Any) -> Any:
    """NumPy's own sum: pairwise summation, accurate and vectorised."""
    return np.sum(x)


def numpy_add_reduce(x: Any) -> Any:
    return np.add.reduce(x)


def numpy_dot_ones(x: Any) -> Any:
    """A BLAS dot product with a vector of ones: multithreaded, but reads twice the bytes."""
    return np.float32(np.dot(x, np.ones_like(x)))


def numpy_sequential(x: Any) -> Any:
    """A running sum in fp32: each addition rounds, so a long vector loses precision. The
    checks must catch it rather than let it win."""
    return np.cumsum(x, dtype=np.float32)[-1]


NUMPY: dict[str, Callable[..., Any]] = {
    "pairwise": numpy_pairwise,
    "add_reduce": numpy_add_reduce,
    "dot_ones": numpy_dot_ones,
    "sequential": numpy_sequential,
}


_SOURCE = r"""
extern "C" __global__ void sum_atomic(const float* __restrict__ x, float* out, long long n) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) atomicAdd(out, x[i]);
}

// Grid-stride partial sums, then a tree in shared memory; one partial per block.
// Launched with 256 threads per block.
extern "C" __global__ void sum_tree(const float* __restrict__ x, float* __restrict__ partial,
                                    long long n) {
    __shared__ float s[256];
    float acc = 0.0f;
    long long stride = (long long)gridDim.x * blockDim.x;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += stride) {
        acc += x[i];
    }
    s[threadIdx.x] = acc;
    __syncthreads();
    for (int width = blockDim.x / 2; width > 0; width >>= 1) {
        if (threadIdx.x < width) s[threadIdx.x] += s[threadIdx.x + width];
        __syncthreads();
    }
    if (threadIdx.x == 0) partial[blockIdx.x] = s[0];
}

__device__ __forceinline__ float warp_sum(float v) {
    for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_down_sync(0xffffffffu, v, offset);
    return v;
}

// Four float4 loads in flight per thread, then warp shuffles and one shared slot per warp.
// x must be 16-byte aligned; the first n % 4 threads of the grid add the tail.
extern "C" __global__ void sum_float4(const float* __restrict__ x, float* __restrict__ partial,
                                      long long n) {
    const float4* x4 = reinterpret_cast<const float4*>(x);
    long long n4 = n / 4;
    long long stride = (long long)gridDim.x * blockDim.x;
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    long long tail = n - 4 * n4;
    float acc = i < tail ? x[4 * n4 + i] : 0.0f;
    for (; i + 3 * stride < n4; i += 4 * stride) {
        float4 a = x4[i], b = x4[i + stride], c = x4[i + 2 * stride], d = x4[i + 3 * stride];
        acc += ((a.x + a.y) + (a.z + a.w)) + ((b.x + b.y) + (b.z + b.w))
             + ((c.x + c.y) + (c.z + c.w)) + ((d.x + d.y) + (d.z + d.w));
    }
    for (; i < n4; i += stride) {
        float4 a = x4[i];
        acc += (a.x + a.y) + (a.z + a.w);
    }
    __shared__ float warps[32];
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    acc = warp_sum(acc);
    if (lane == 0) warps[warp] = acc;
    __syncthreads();
    if (warp == 0) {
        acc = lane < (int)(blockDim.x >> 5) ? warps[lane] : 0.0f;
        acc = warp_sum(acc);
        if (lane == 0) partial[blockIdx.x] = acc;
    }
}
"""


def cupy_atomic(x: Any) -> Any:
    """One atomicAdd per element into a single fp32 total: past 2**24 the total's rounding
    step exceeds the values added, so a long vector comes out badly wrong. The checks must
    catch it."""
    cp = cupy()
    out = cp.zeros((), dtype=cp.float32)
    kernel(_SOURCE, "sum_atomic")((blocks(x.size, 256),), (256,), (x, out, np.int64(x.size)))
    return out


def _two_pass(name: str, x: Any, grid: int) -> Any:
    """Partials of `grid` blocks, then one block over the partials: deterministic, and each
    addition rounds at the scale of a partial, not of the whole total."""
    cp = cupy()
    partial = cp.empty(grid, dtype=cp.float32)
    out = cp.empty((), dtype=cp.float32)
    fn = kernel(_SOURCE, name)
    fn((grid,), (256,), (x, partial, np.int64(x.size)))
    fn((1,), (256,), (partial, out, np.int64(grid)))
    return out


def cupy_tree(x: Any) -> Any:
    """Grid-stride partial sums, a shared-memory tree per block, two launches."""
    return _two_pass("sum_tree", x, 4 * sm_count())


def cupy_float4_shuffle(x: Any) -> Any:
    """float4 loads, four in flight, warp-shuffle reduction; a full SM of blocks."""
    if not aligned16(x):
        raise AutotuneSkip("float4 loads need an array aligned to 16 bytes")
    return _two_pass("sum_float4", x, 8 * sm_count())


def cupy_sum(x: Any) -> Any:
    return cupy().sum(x)


CUPY: dict[str, Callable[..., Any]] = {
    "atomic_naive": cupy_atomic,
    "shared_tree": cupy_tree,
    "float4_shuffle": cupy_float4_shuffle,
    "cupy_sum": cupy_sum,
}
"""CuPy candidates; each returns a 0-d float32 CuPy array."""
