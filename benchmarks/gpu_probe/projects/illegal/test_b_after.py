"""Tests that run after the out-of-bounds candidate, in the same process: plain CuPy work and
another autotune group. They cannot work once the context is lost; what matters is what
they say."""

import cupy as cp
import pytest


def test_plain_cupy_after():
    assert int(cp.arange(10).sum()) == 45


def plus(x):
    return x + 1


def plus_too(x):
    return 1 + x


@pytest.mark.autotune(candidates={"plus": plus, "plus_too": plus_too})
def test_other_group(candidate):
    return candidate(cp.arange(1000, dtype=cp.float32))
