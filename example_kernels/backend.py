"""Which candidates the example tests run: CuPy kernels where a CUDA GPU is usable, their
NumPy counterparts elsewhere, so the same tests check and tune on any machine."""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from types import ModuleType
from typing import Any, TypeVar

import numpy as np

T = TypeVar("T")


@functools.cache
def gpu_available() -> bool:
    try:
        import cupy

        return bool(cupy.cuda.runtime.getDeviceCount())
    except Exception:
        return False


BACKEND = "cuda" if gpu_available() else "numpy"


def xp() -> Any:
    """The array module of the backend."""
    if BACKEND == "cuda":
        import cupy

        return cupy
    return np


def candidates(family: ModuleType) -> dict[str, Callable[..., Any]]:
    """The family's candidates for this backend."""
    return dict(family.CUPY if BACKEND == "cuda" else family.NUMPY)


def sizes(cpu: Sequence[T], cuda: Sequence[T]) -> list[T]:
    """Problem sizes: a GPU needs large problems to leave launch overhead behind; the CPU
    suite must stay quick."""
    return list(cuda if BACKEND == "cuda" else cpu)
