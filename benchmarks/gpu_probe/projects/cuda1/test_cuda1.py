"""device="cuda:1" on a host with one GPU. README: a device named is never replaced by the
CPU; `--autotune` fails each of its groups' tests in one line ("device 'cuda:1' cannot be
used: no CUDA device 1: CuPy finds 1 device"), exit status 1, writing no baseline; plain
pytest checks the candidates as anywhere. test_plain_on_default has no device and must
pass either way."""

import cupy as cp
import pytest


def twice(x):
    return x * 2


def doubled(x):
    return x + x


@pytest.fixture(scope="module")
def x():
    return cp.arange(1 << 16, dtype=cp.float32)


@pytest.mark.autotune(candidates={"twice": twice, "doubled": doubled}, device="cuda:1")
def test_on_cuda1(candidate, x):
    return candidate(x)


@pytest.mark.autotune(candidates={"twice": twice, "doubled": doubled})
def test_plain_on_default(candidate, x):
    return candidate(x)
