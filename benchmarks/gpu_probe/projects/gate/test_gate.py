"""A small CuPy project for the gate's cycle: --autotune (no baseline: passes), then
--autotune-update (writes .autotune/cuda-*/...json), then --autotune again (each group's
verdict: pass, judged against the baseline just written)."""

import cupy as cp
import numpy as np
import pytest

from pytest_autotune import Work

_SRC = r"""
extern "C" __global__ void saxpy(const float a, const float* x, const float* y, float* out,
                                 const long long n) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = a * x[i] + y[i];
}
"""
_k = cp.RawKernel(_SRC, "saxpy")


def raw(a, x, y):
    out = cp.empty_like(x)
    _k(((x.size + 255) // 256,), (256,), (np.float32(a), x, y, out, np.int64(x.size)))
    return out


def expr(a, x, y):
    return np.float32(a) * x + y


@pytest.fixture(scope="module", params=[1 << 20, 1 << 24], ids=lambda n: f"n{n}")
def xy(request):
    rng = cp.random.default_rng(0)
    n = request.param
    return rng.random(n, dtype=cp.float32), rng.random(n, dtype=cp.float32)


@pytest.mark.autotune(
    candidates={"raw": raw, "expr": expr},
    work=lambda xy: Work(compute_ops=2 * xy[0].size, bytes=12 * xy[0].size),
)
def test_saxpy(candidate, xy):
    return candidate(2.0, *xy)


def sum_cupy(x):
    return cp.sum(x)


def sum_reduce(x):
    return cp.add.reduce(x)


@pytest.mark.autotune(candidates={"sum": sum_cupy, "add_reduce": sum_reduce}, rtol=1e-4)
def test_sum(candidate, xy):
    return candidate(xy[0])
