"""Where a group's inputs live: in host memory only, or on a GPU too. Device `auto` tunes a
group on the GPU where CuPy finds one; a group whose inputs are host arrays alone (NumPy,
a CPU tensor, a DataFrame) is host code, which the CUDA client would time as a GPU call
and the gate judge by a GPU's rules, so `auto` tunes it on the CPU (`Devices.group_device`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from pytest_autotune.tune.loaded import instance_of
from pytest_autotune.tune.nested import nested_values
from pytest_autotune.tune.torch_tensors import is_tensor

MOST = 64
"""At most this many items of one container are looked at: a list of a million floats
is no array."""

_HOST_CONTAINERS = (
    ("pandas", "DataFrame"),
    ("pandas", "Series"),
    ("polars", "DataFrame"),
    ("polars", "Series"),
    ("scipy.sparse", "spmatrix"),
    ("scipy.sparse", "sparray"),
)
"""Host arrays of other libraries than NumPy and torch, by module and class."""


def held_on_host(inputs: tuple[Any, ...]) -> bool:
    """Whether `inputs` hold at least one array and every array among them is in host
    memory. Where they hold no array at all (sizes, shapes, a seed: the candidates allocate
    their own) nothing tells where the work runs, and False leaves the group where `auto`
    puts it."""
    host = False
    for value in nested_values(inputs, most=MOST):
        if _on_device(value):
            return False
        host = host or _host_array(value)
    return host


def _on_device(value: Any) -> bool:
    """A GPU's array: CuPy's, Numba's device arrays, a CUDA tensor, anything exposing
    `__cuda_array_interface__` (a CPU tensor's raises reading it)."""
    if is_tensor(value):
        return bool(value.device.type != "cpu")
    try:
        return getattr(value, "__cuda_array_interface__", None) is not None
    except Exception:  # a property that refuses (torch's, on the CPU)
        return False


def _host_array(value: Any) -> bool:
    """An array in host memory: a NumPy array (not a scalar: `np.float32(2.0)` may be a
    kernel's argument), a CPU tensor, a pandas or polars table, a SciPy sparse matrix."""
    if isinstance(value, np.ndarray):
        return value.ndim > 0
    if is_tensor(value):
        return bool(value.dim() > 0)
    return any(instance_of(value, module, name) for module, name in _HOST_CONTAINERS)


__all__ = ["held_on_host"]
