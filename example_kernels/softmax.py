"""softmax: row-wise softmax of an fp32 matrix."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from pytest_autotune import Work


def inputs(rows: int, cols: int = 1024, xp: Any = np) -> tuple[Any]:
    return (xp.asarray(np.random.default_rng(0).standard_normal((rows, cols), dtype=np.float32)),)


def work(x: Any) -> Work:
    # Read once and write once at best; max, subtract, exp, sum and divide per element.
    return Work(compute_ops=5 * x.size, bytes=2 * x.nbytes)


def reference(x: Any) -> Any:
    x64 = np.asarray(x, dtype=np.float64)
    e = np.exp(x64 - x64.max(axis=1, keepdims=True))
    return (e / e.sum(axis=1, keepdims=True)).astype(np.float32)


def numpy_composite(x: Any) -> Any:
    e = np.exp(x - x.max(axis=1, keepdims=True))
    return e / e.sum(axis=1, keepdims=True)


def numpy_in_place(x: Any) -> Any:
    """One output buffer reused for every step: fewer temporaries, less memory traffic."""
    out = x - x.max(axis=1, keepdims=True)
    np.exp(out, out=out)
    out /= out.sum(axis=1, keepdims=True)
    return out


NUMPY: dict[str, Callable[..., Any]] = {"composite": numpy_composite, "in_place": numpy_in_place}
