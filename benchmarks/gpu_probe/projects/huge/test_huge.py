"""A 2 GiB output (2^28 float64 from a 1 GiB float32 input). Expected: plain pytest and
--autotune pass; checks compare the 2 GiB outputs on the device (no host copy); memory
for input copies, graph pools and the gate's placements stays within the card."""

import cupy as cp
import pytest

N = 1 << 28  # 1 GiB of float32 in, 2 GiB of float64 out

_widen = cp.ElementwiseKernel("float32 x", "float64 y", "y = (double)x * 0.5", "probe_widen")


def astype_half(x):
    return x.astype(cp.float64) * 0.5


def kernel_half(x):
    return _widen(x)


def multiply_half(x):
    return cp.multiply(x, 0.5, dtype=cp.float64)


@pytest.fixture(scope="module")
def x():
    return cp.random.default_rng(0).random(N, dtype=cp.float32)


@pytest.mark.autotune(
    candidates={"astype": astype_half, "kernel": kernel_half, "multiply": multiply_half}
)
def test_widen(candidate, x):
    out = candidate(x)
    assert out.nbytes == 2 << 30
    return out


def test_z_memory_after():
    free, total = cp.cuda.runtime.memGetInfo()
    pool = cp.get_default_memory_pool()
    print(
        f"PROBE after the 2 GiB group: device free {free / 2**30:.2f} / {total / 2**30:.2f} GiB;"
        f" CuPy pool used {pool.used_bytes() / 2**30:.2f} GiB, held {pool.total_bytes() / 2**30:.2f} GiB"
    )
