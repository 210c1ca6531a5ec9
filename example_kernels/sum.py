"""sum: reduce an fp32 vector to one number."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from pytest_autotune import Work


def inputs(n: int, xp: Any = np) -> tuple[Any]:
    return (xp.asarray(np.random.default_rng(0).random(n, dtype=np.float32)),)


def work(x: Any) -> Work:
    return Work(compute_ops=x.size, bytes=x.nbytes)


def reference(x: Any) -> Any:
    return np.float32(np.sum(np.asarray(x), dtype=np.float64))


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
