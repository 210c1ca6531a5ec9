"""What the CuPy candidates of every family share: CuPy imported on first use (so the
family modules import on a machine without it), and compiled kernels cached per device."""

from __future__ import annotations

import functools
import importlib
from typing import Any


def cupy() -> Any:
    """The `cupy` module, imported when a CuPy candidate first runs."""
    return importlib.import_module("cupy")


@functools.cache
def _module(source: str) -> Any:
    return cupy().RawModule(code=source)


@functools.cache
def _kernel(source: str, name: str, device: int) -> Any:
    return _module(source).get_function(name)


def kernel(source: str, name: str) -> Any:
    """The kernel `name` of `source`, compiled once per process (CuPy also keeps the binary
    on disk) for the current device."""
    return _kernel(source, name, cupy().cuda.Device().id)


@functools.cache
def _sm_count(device: int) -> int:
    return int(cupy().cuda.Device(device).attributes["MultiProcessorCount"])


def sm_count() -> int:
    """Streaming multiprocessors of the current device: grid-stride kernels size their grid
    by it, so every SM gets the same number of blocks."""
    return _sm_count(cupy().cuda.Device().id)


def blocks(n: int, block: int) -> int:
    """Blocks of `block` threads that cover `n` items, at least one."""
    return max(1, -(-n // block))


def aligned16(*arrays: Any) -> bool:
    """Whether every array starts on a 16-byte boundary, as float4 loads need."""
    return all(a.data.ptr % 16 == 0 for a in arrays)
