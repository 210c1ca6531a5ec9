"""softmax: row-wise softmax of an fp32 matrix."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from example_kernels._cupy import aligned16, array_module, blocks, cupy, kernel
from pytest_autotune import AutotuneSkip, Work


def inputs(rows: int, cols: int = 1024, xp: Any = np) -> tuple[Any]:
    return (xp.asarray(np.random.default_rng(0).standard_normal((rows, cols), dtype=np.float32)),)


def work(x: Any) -> Work:
    # Read once and write once at best; max, subtract, exp, sum and divide per element.
    return Work(compute_ops=5 * x.size, bytes=2 * x.nbytes)


def reference(x: Any) -> Any:
    """In float64, on the inputs' device."""
    xp = array_module(x)
    x64 = x.astype(xp.float64)
    e = xp.exp(x64 - x64.max(axis=1, keepdims=True))
    return (e / e.sum(axis=1, keepdims=True)).astype(xp.float32)


def numpy_composite(x: Any) -> Any:
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def numpy_in_place(x: Any) -> Any:
    """One output buffer reused for every step: fewer temporaries, less memory traffic."""
    out = x - x.max(axis=1, keepdims=True)
    np.exp(out, out=out)
    out /= out.sum(axis=1, keepdims=True)
    return out


NUMPY: dict[str, Callable[..., Any]] = {"composite": numpy_composite, "in_place": numpy_in_place}


_SOURCE = r"""
__device__ __forceinline__ float warp_max(float v) {
    for (int offset = 16; offset > 0; offset >>= 1) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, offset));
    return v;
}

__device__ __forceinline__ float warp_sum(float v) {
    for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_xor_sync(0xffffffffu, v, offset);
    return v;
}

// Every thread of the block gets the block's result. `shared` holds one slot per warp and
// is free again on return.
__device__ __forceinline__ float block_max(float v, float* shared) {
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    v = warp_max(v);
    if (lane == 0) shared[warp] = v;
    __syncthreads();
    v = lane < (int)(blockDim.x >> 5) ? shared[lane] : __int_as_float(0xff800000);
    v = warp_max(v);
    __syncthreads();
    return v;
}

__device__ __forceinline__ float block_sum(float v, float* shared) {
    int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    v = warp_sum(v);
    if (lane == 0) shared[warp] = v;
    __syncthreads();
    v = lane < (int)(blockDim.x >> 5) ? shared[lane] : 0.0f;
    v = warp_sum(v);
    __syncthreads();
    return v;
}

// One block per row, any block size that is a multiple of 32: the row's maximum, the sum
// of exponentials, then the output. The row is read from memory once; the second and third
// passes find it in L1 or L2.
extern "C" __global__ void softmax_fused(const float* __restrict__ x, float* __restrict__ out,
                                         int cols) {
    __shared__ float shared[32];
    const float* row = x + (long long)blockIdx.x * cols;
    float* orow = out + (long long)blockIdx.x * cols;
    float m = __int_as_float(0xff800000);
    for (int c = threadIdx.x; c < cols; c += blockDim.x) m = fmaxf(m, row[c]);
    m = block_max(m, shared);
    float s = 0.0f;
    for (int c = threadIdx.x; c < cols; c += blockDim.x) s += expf(row[c] - m);
    float inv = 1.0f / block_sum(s, shared);
    for (int c = threadIdx.x; c < cols; c += blockDim.x) orow[c] = expf(row[c] - m) * inv;
}

// One warp per row, the row held in registers as float4: read once, written once, with
// eight independent 16-byte loads per lane in flight and no shared memory or barrier.
// Needs cols % 4 == 0, cols <= 1024 and a 16-byte aligned x.
extern "C" __global__ void softmax_warp_row(const float* __restrict__ x, float* __restrict__ out,
                                            int rows, int cols) {
    const int ITEMS = 8;
    int row = blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5);
    int lane = threadIdx.x & 31;
    if (row >= rows) return;
    const float4* xr = reinterpret_cast<const float4*>(x + (long long)row * cols);
    float4* orow = reinterpret_cast<float4*>(out + (long long)row * cols);
    int n4 = cols >> 2;
    float4 v[ITEMS];
    float m = __int_as_float(0xff800000);
#pragma unroll
    for (int k = 0; k < ITEMS; ++k) {
        int c = lane + 32 * k;
        if (c < n4) {
            v[k] = xr[c];
            m = fmaxf(m, fmaxf(fmaxf(v[k].x, v[k].y), fmaxf(v[k].z, v[k].w)));
        }
    }
    m = warp_max(m);
    float s = 0.0f;
#pragma unroll
    for (int k = 0; k < ITEMS; ++k) {
        if (lane + 32 * k < n4) {
            v[k].x = expf(v[k].x - m);
            v[k].y = expf(v[k].y - m);
            v[k].z = expf(v[k].z - m);
            v[k].w = expf(v[k].w - m);
            s += (v[k].x + v[k].y) + (v[k].z + v[k].w);
        }
    }
    float inv = 1.0f / warp_sum(s);
#pragma unroll
    for (int k = 0; k < ITEMS; ++k) {
        int c = lane + 32 * k;
        if (c < n4) orow[c] = make_float4(v[k].x * inv, v[k].y * inv, v[k].z * inv, v[k].w * inv);
    }
}
"""

WARP_ROW_MAX_COLS = 1024


def _fused(block: int) -> Callable[..., Any]:
    def run(x: Any) -> Any:
        cp = cupy()
        rows, cols = x.shape
        out = cp.empty_like(x)
        kernel(_SOURCE, "softmax_fused")((rows,), (block,), (x, out, np.int32(cols)))
        return out

    run.__name__ = run.__qualname__ = f"cupy_fused_{block}"
    return run


def _warp_row(block: int) -> Callable[..., Any]:
    def run(x: Any) -> Any:
        rows, cols = x.shape
        if cols % 4 or cols > WARP_ROW_MAX_COLS or not aligned16(x):
            raise AutotuneSkip(
                f"a row per warp needs a multiple of 4 columns, at most {WARP_ROW_MAX_COLS},"
                " and an array aligned to 16 bytes"
            )
        out = cupy().empty_like(x)
        grid = blocks(rows, block // 32)
        kernel(_SOURCE, "softmax_warp_row")(
            (grid,), (block,), (x, out, np.int32(rows), np.int32(cols))
        )
        return out

    run.__name__ = run.__qualname__ = f"cupy_warp_row_{block}"
    return run


def cupy_composite(x: Any) -> Any:
    """CuPy's own operations: a max, a subtract, an exp, a sum and a divide, each a pass."""
    cp = cupy()
    e = cp.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


CUPY: dict[str, Callable[..., Any]] = {
    "cupy_composite": cupy_composite,
    **{f"fused_{b}": _fused(b) for b in (128, 256, 512, 1024)},
    **{f"warp_row_{b}": _warp_row(b) for b in (128, 256)},
}
"""CuPy candidates for a C-contiguous fp32 matrix; each returns a new array."""
