"""Candidates of every kind a CuPy developer writes: RawKernel, ElementwiseKernel,
ReductionKernel, cupy.fuse, plain expressions and a cuBLAS matmul. Every candidate here
is correct: plain pytest and --autotune should pass every test."""

import cupy as cp
import numpy as np
import pytest

from pytest_autotune import Work

N = 1 << 22

_SAXPY_SRC = r"""
extern "C" __global__ void saxpy(const float a, const float* x, const float* y, float* out,
                                 const long long n) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = a * x[i] + y[i];
}
"""
_saxpy_kernel = cp.RawKernel(_SAXPY_SRC, "saxpy")


def _raw_saxpy(block):
    def raw(a, x, y):
        out = cp.empty_like(x)
        n = x.size
        _saxpy_kernel(
            ((n + block - 1) // block,), (block,), (np.float32(a), x, y, out, np.int64(n))
        )
        return out

    raw.__name__ = f"raw_{block}"
    return raw


_saxpy_ew = cp.ElementwiseKernel(
    "float32 a, float32 x, float32 y", "float32 out", "out = a * x + y", "probe_saxpy_ew"
)


def saxpy_expr(a, x, y):
    return np.float32(a) * x + y


def saxpy_elementwise(a, x, y):
    return _saxpy_ew(np.float32(a), x, y)


@cp.fuse()
def _saxpy_fused(a, x, y):
    return a * x + y


def saxpy_fused(a, x, y):
    return _saxpy_fused(np.float32(a), x, y)


@pytest.fixture(scope="module")
def xy():
    rng = cp.random.default_rng(0)
    return rng.random(N, dtype=cp.float32), rng.random(N, dtype=cp.float32)


@pytest.mark.autotune(
    candidates={
        "expr": saxpy_expr,
        "raw_128": _raw_saxpy(128),
        "raw_512": _raw_saxpy(512),
        "elementwise": saxpy_elementwise,
        "fused": saxpy_fused,
    },
    work=lambda xy: Work(compute_ops=2 * N, bytes=3 * 4 * N),
)
def test_saxpy(candidate, xy):
    return candidate(2.0, *xy)


_sumsq_red = cp.ReductionKernel(
    "float32 x", "float32 y", "x * x", "a + b", "y = a", "0", "probe_sumsq"
)


def sumsq_reduction(x):
    return _sumsq_red(x)


def sumsq_expr(x):
    return cp.sum(x * x)


@cp.fuse()
def _sumsq_fused(x):
    return cp.sum(x * x)


def sumsq_fused(x):
    return _sumsq_fused(x)


def sumsq_dot(x):
    return cp.dot(x, x)  # cuBLAS: not capturable under CuPy, timed through the stream


@pytest.mark.autotune(
    candidates={
        "expr": sumsq_expr,
        "reduction": sumsq_reduction,
        "fused": sumsq_fused,
        "dot": sumsq_dot,
    },
    rtol=1e-3,  # float32 sums of 4M terms in different orders
)
def test_sum_of_squares(candidate, xy):
    return candidate(xy[0])


_MATMUL_SRC = r"""
extern "C" __global__ void naive_matmul(const float* a, const float* b, float* c, int n) {
    int row = blockIdx.y * blockDim.y + threadIdx.y;
    int col = blockIdx.x * blockDim.x + threadIdx.x;
    if (row < n && col < n) {
        float acc = 0.0f;
        for (int k = 0; k < n; ++k) acc += a[row * n + k] * b[k * n + col];
        c[row * n + col] = acc;
    }
}
"""
_naive = cp.RawKernel(_MATMUL_SRC, "naive_matmul")


def matmul_naive(a, b):
    n = a.shape[0]
    c = cp.empty((n, n), dtype=cp.float32)
    _naive(((n + 15) // 16, (n + 15) // 16), (16, 16), (a, b, c, np.int32(n)))
    return c


def matmul_cublas(a, b):
    return a @ b


@pytest.fixture(scope="module", params=[512], ids=lambda n: f"n{n}")
def ab(request):
    rng = cp.random.default_rng(1)
    n = request.param
    return rng.random((n, n), dtype=cp.float32), rng.random((n, n), dtype=cp.float32)


@pytest.mark.autotune(
    candidates={"cublas": matmul_cublas, "naive": matmul_naive},
    rtol=1e-3,
    atol=1e-3,  # TF32 may be on for cuBLAS; sums of 512 products
)
def test_matmul(candidate, ab):
    return candidate(*ab)


def test_z_report_captures(xy):
    """Not an autotune test: prints (PROBE lines) what the CUDA client captured in graphs.
    Each group above takes a fixture that returns a TUPLE of arrays (`xy`, `ab`), which the
    tuner passes to client.time as one input; cuda_graphs.inputs_key() captures a call only
    on CuPy arrays and hashable values, so a tuple of arrays may keep every call of these
    groups out of graph replay (timed through the stream instead). Never fails."""
    try:
        hash((xy[0],))
        print("PROBE hash(tuple of cupy arrays): hashable")
    except TypeError as error:
        print(f"PROBE hash(tuple of cupy arrays): TypeError ({error})")
    try:
        from pytest_autotune.backends import cuda
        from pytest_autotune.backends.cuda_graphs import inputs_key

        key = inputs_key((xy,), lambda v: isinstance(v, cp.ndarray))
        print(
            f"PROBE inputs_key((xy,)) -> {'None: not capturable' if key is None else 'a key: capturable'}"
        )
        key = inputs_key(xy, lambda v: isinstance(v, cp.ndarray))
        print(f"PROBE inputs_key(xy) (arrays given apart) -> {'None' if key is None else 'a key'}")
        client = cuda()
        replays = client._replays
        graphs = list(replays.graphs)
        print(f"PROBE graphs kept by the shared client after this session's tuning: {len(graphs)}")
        for fn, k in graphs[:16]:
            kinds = [
                e[0] if isinstance(e, tuple) and e and isinstance(e[0], str) else type(e).__name__
                for e in k
            ]
            print(f"PROBE   captured {getattr(fn, '__qualname__', repr(fn))[:60]} on {kinds}")
        unc = replays._uncapturable
        print(f"PROBE calls marked uncapturable: {len(unc._weak) + len(unc._strong)}")
    except Exception as error:
        print(f"PROBE could not inspect the client: {type(error).__name__}: {error}")
