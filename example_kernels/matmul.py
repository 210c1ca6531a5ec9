"""matmul: fp32 matrix product."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from pytest_autotune import Work


def inputs(n: int, xp: Any = np) -> tuple[Any, Any]:
    rng = np.random.default_rng(0)
    return (
        xp.asarray(rng.random((n, n), dtype=np.float32)),
        xp.asarray(rng.random((n, n), dtype=np.float32)),
    )


def work(a: Any, b: Any) -> Work:
    n, k = a.shape
    m = b.shape[1]
    return Work(compute_ops=2 * n * k * m, bytes=(n * k + k * m + n * m) * a.itemsize)


def reference(a: Any, b: Any) -> Any:
    return (np.asarray(a, dtype=np.float64) @ np.asarray(b, dtype=np.float64)).astype(np.float32)


def numpy_matmul(a: Any, b: Any) -> Any:
    return a @ b


def numpy_einsum(a: Any, b: Any) -> Any:
    return np.einsum("ik,kj->ij", a, b)


def numpy_blocked(a: Any, b: Any, block: int = 256) -> Any:
    """BLAS on blocks: each block's panels fit in cache, at the cost of more calls."""
    n, k = a.shape
    out = np.zeros((n, b.shape[1]), dtype=a.dtype)
    for p in range(0, k, block):
        out += a[:, p : p + block] @ b[p : p + block, :]
    return out


NUMPY: dict[str, Callable[..., Any]] = {
    "matmul": numpy_matmul,
    "einsum": numpy_einsum,
    "blocked": numpy_blocked,
}
