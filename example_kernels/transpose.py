"""transpose: out-of-place transpose of an fp32 matrix."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from pytest_autotune import Work


def inputs(n: int, xp: Any = np) -> tuple[Any]:
    return (xp.asarray(np.random.default_rng(0).random((n, n), dtype=np.float32)),)


def work(x: Any) -> Work:
    return Work(compute_ops=0, bytes=2 * x.nbytes)


def reference(x: Any) -> Any:
    return np.ascontiguousarray(np.asarray(x).T)


def numpy_copy(x: Any) -> Any:
    return np.ascontiguousarray(x.T)


def numpy_tiled(x: Any, tile: int = 64) -> Any:
    """Copy tile by tile so both the rows read and the rows written stay in cache."""
    n, m = x.shape
    out = np.empty((m, n), dtype=x.dtype)
    for i in range(0, n, tile):
        for j in range(0, m, tile):
            out[j : j + tile, i : i + tile] = x[i : i + tile, j : j + tile].T
    return out


NUMPY: dict[str, Callable[..., Any]] = {"copy": numpy_copy, "tiled": numpy_tiled}
