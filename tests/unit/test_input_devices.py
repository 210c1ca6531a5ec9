"""`held_on_host`: which groups device `auto` tunes on the CPU on a machine with a GPU."""

from __future__ import annotations

import sys
from typing import Any, ClassVar

import numpy as np
import pytest

from pytest_autotune.input_devices import held_on_host


class DeviceArray:
    """What CuPy's arrays, Numba's device arrays and CUDA tensors expose."""

    __cuda_array_interface__: ClassVar[dict[str, Any]] = {
        "shape": (4,),
        "typestr": "<f4",
        "data": (0, False),
    }


class RefusingInterface:
    """torch's CPU tensor: the attribute exists on the class and raises when read."""

    @property
    def __cuda_array_interface__(self) -> Any:
        raise AttributeError("not on a GPU")


@pytest.mark.parametrize(
    ("inputs", "host"),
    [
        ((np.ones(3),), True),
        ((np.ones(3), 2.0, "rows"), True),
        (([np.ones(3), np.ones(3)],), True),
        (({"x": np.ones(3)},), True),
        (((1, (np.ones(3),)),), True),
        ((DeviceArray(),), False),
        ((np.ones(3), DeviceArray()), False),  # one GPU array: the work is the GPU's
        (({"x": np.ones(3), "y": DeviceArray()},), False),
        ((4096,), False),  # sizes only: nothing says where the candidates allocate
        ((np.float32(2.0), 7), False),  # a scalar is an argument, not an array
        ((np.array(2.0),), False),
        ((RefusingInterface(),), False),
        ((), False),
    ],
)
def test_host_arrays_alone_are_held_on_host(inputs: tuple[Any, ...], host: bool) -> None:
    assert held_on_host(inputs) is host


def test_a_long_list_of_numbers_is_looked_at_in_part() -> None:
    assert held_on_host(([0.0] * 1_000_000 + [np.ones(3)],)) is False
    assert held_on_host(([np.ones(3)] + [0.0] * 1_000_000,)) is True


def test_torch_tensors_by_their_device(monkeypatch: pytest.MonkeyPatch) -> None:
    # A fake torch in place of the real one: only its Tensor class is looked up.
    class Device:
        def __init__(self, kind: str) -> None:
            self.type = kind

    class Tensor:
        def __init__(self, kind: str, dims: int = 1) -> None:
            self.device = Device(kind)
            self.dims = dims

        def dim(self) -> int:
            return self.dims

    torch = type(sys)("torch")
    torch.Tensor = Tensor  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "torch", torch)
    assert held_on_host((Tensor("cpu"),)) is True
    assert held_on_host((Tensor("cuda"),)) is False
    assert held_on_host((Tensor("cpu"), Tensor("cuda"))) is False
    assert held_on_host((Tensor("cpu", dims=0),)) is False


def test_pandas_and_scipy_sparse_inputs_are_host_arrays() -> None:
    pandas = pytest.importorskip("pandas")
    sparse = pytest.importorskip("scipy.sparse")
    assert held_on_host((pandas.DataFrame({"a": [1.0, 2.0]}),)) is True
    assert held_on_host((pandas.Series([1.0, 2.0]), 3)) is True
    assert held_on_host((sparse.csr_matrix(np.eye(3)),)) is True
    assert held_on_host((sparse.csr_array(np.eye(3)), DeviceArray())) is False
