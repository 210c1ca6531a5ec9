"""saxpy: `y = a*x + y` in fp32, in place."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from pytest_autotune import Work

A = np.float32(2.0)


def inputs(n: int, xp: Any = np) -> tuple[Any, Any, Any]:
    rng = np.random.default_rng(0)
    x = xp.asarray(rng.random(n, dtype=np.float32))
    y = xp.asarray(rng.random(n, dtype=np.float32))
    return A, x, y


def work(a: Any, x: Any, y: Any) -> Work:
    # Read x and y, write y: three passes over n floats; one multiply-add per element.
    return Work(compute_ops=2 * x.size, bytes=3 * x.nbytes)


def reference(a: Any, x: Any, y: Any) -> Any:
    return (np.float64(a) * np.asarray(x, dtype=np.float64) + np.asarray(y, dtype=np.float64)).astype(
        np.float32
    )


def numpy_expression(a: Any, x: Any, y: Any) -> Any:
    """The obvious expression: allocates a temporary for `a*x`, then a new result."""
    return a * x + y


def numpy_in_place(a: Any, x: Any, y: Any) -> Any:
    """Two in-place passes, no allocation."""
    np.multiply(x, a, out=x)
    np.add(y, x, out=y)
    return y


def numpy_chunked(a: Any, x: Any, y: Any, chunk: int = 1 << 16) -> Any:
    """In place in cache-sized chunks, so the temporary of `a*x` stays in L2."""
    tmp = np.empty(min(chunk, x.size), dtype=x.dtype)
    for start in range(0, x.size, chunk):
        stop = min(start + chunk, x.size)
        t = tmp[: stop - start]
        np.multiply(x[start:stop], a, out=t)
        np.add(y[start:stop], t, out=y[start:stop])
    return y


NUMPY: dict[str, Callable[..., Any]] = {
    "expression": numpy_expression,
    "in_place": numpy_in_place,
    "chunked": numpy_chunked,
}
