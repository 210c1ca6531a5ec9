"""NumPy (host) inputs. README ("Host code on a GPU machine"): under device auto a group of
host arrays alone is tuned, judged and filed on the CPU, with a note naming it; given
device="cuda" it is timed as a GPU call (a candidate that hands its work to CuPy is timed
until the GPU is done). All candidates are correct: every test passes."""

import cupy as cp
import numpy as np
import pytest

N = 1 << 20


def numpy_sum(x):
    return np.float64(np.sum(x, dtype=np.float64))


def cupy_sum(x):
    return np.float64(cp.sum(cp.asarray(x), dtype=cp.float64).get())  # H2D copy, sum, D2H


def cupy_set_sum(x):
    d = cp.empty(x.shape, dtype=x.dtype)
    d.set(x)  # pageable host -> device copy on the current stream
    return np.float64(cp.sum(d, dtype=cp.float64).item())


@pytest.fixture(scope="module")
def host_x():
    return np.random.default_rng(0).random(N, dtype=np.float32)


CANDIDATES = {"numpy": numpy_sum, "cupy": cupy_sum, "cupy_set": cupy_set_sum}


@pytest.mark.autotune(candidates=CANDIDATES, rtol=1e-9)
def test_host_auto(candidate, host_x):
    return candidate(host_x)


@pytest.mark.autotune(candidates=CANDIDATES, rtol=1e-9, device="cuda")
def test_host_on_cuda(candidate, host_x):
    return candidate(host_x)
