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


def array_module(*values: Any) -> Any:
    """CuPy where any value is a CuPy array, else NumPy: a reference runs where its inputs
    live, so on a GPU it neither copies them to the host nor computes there (a float64
    saxpy of 2^26 elements on the host took 9.4 s of a 35 s `--autotune` run)."""
    if any(type(value).__module__.startswith("cupy") for value in values):
        return cupy()
    return importlib.import_module("numpy")


def blocks(n: int, block: int) -> int:
    """Blocks of `block` threads that cover `n` items, at least one."""
    return max(1, -(-n // block))


def aligned16(*arrays: Any) -> bool:
    """Whether every array starts on a 16-byte boundary, as float4 loads need."""
    return all(a.data.ptr % 16 == 0 for a in arrays)
