"""A candidate whose kernel writes far out of bounds: cudaErrorIllegalAddress, which poisons
the process's CUDA context (every later CUDA call fails). What should the user see? The
README does not speak of it; the ideal is: the out-of-bounds candidate's test fails by name
with the illegal-address error, and what follows says the context is lost rather than a
cascade of unrelated-looking failures; the session ends (no hang, no crash at exit)."""

import cupy as cp
import numpy as np
import pytest

N = 1 << 20

_SRC = r"""
extern "C" __global__ void scale(const float* x, float* out, long long n, long long offset) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i + offset] = 2.0f * x[i];   // offset != 0: far out of bounds
}
"""
_scale = cp.RawKernel(_SRC, "scale")


def _launch(x, offset):
    out = cp.empty_like(x)
    _scale(((x.size + 255) // 256,), (256,), (x, out, np.int64(x.size), np.int64(offset)))
    return out


def good_raw(x):
    return _launch(x, 0)


def out_of_bounds(x):
    return _launch(x, 1 << 40)  # 4 TiB past the output


def good_expr(x):
    return x * 2


@pytest.fixture(scope="module")
def x():
    return cp.arange(N, dtype=cp.float32)


@pytest.mark.autotune(
    candidates={"good_raw": good_raw, "out_of_bounds": out_of_bounds, "good_expr": good_expr}
)
def test_scale(candidate, x):
    return candidate(x)
