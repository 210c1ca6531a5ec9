"""Outputs on the GPU are compared where they live; only a difference goes to the host."""

from __future__ import annotations

import importlib
import sys
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

from pytest_autotune import compare_outputs
from pytest_autotune.tune.device_compare import agree_on_device

comparison = importlib.import_module("pytest_autotune.tune.comparison")


class DeviceArray(np.ndarray):
    """Stands in for a CuPy array: the fake `cupy` module below names it as its ndarray."""

    device = SimpleNamespace(id=0)


def on_device(values: Any, dtype: Any = np.float32, device: int = 0) -> DeviceArray:
    made = np.asarray(values, dtype=dtype).view(DeviceArray)
    made.device = SimpleNamespace(id=device)
    return made


@pytest.fixture
def fake_cupy(monkeypatch: pytest.MonkeyPatch) -> SimpleNamespace:
    calls: list[str] = []

    def isclose(a: Any, b: Any, **kwargs: Any) -> Any:
        calls.append("isclose")
        if a.device.id != b.device.id:  # as CuPy's kernels where no peer access is
            raise ValueError(
                f"The device where the array resides ({b.device.id}) is different from the"
                f" current device ({a.device.id}). Peer access is unavailable between these"
                " devices."
            )
        with np.errstate(all="ignore"):  # CuPy's kernels warn of no overflow
            return np.isclose(a, b, **kwargs)

    def asnumpy(value: Any, order: str = "C") -> Any:  # CuPy's, for what is no ndarray
        return np.asarray(value, order=order)

    module = SimpleNamespace(
        ndarray=DeviceArray, isclose=isclose, isinf=np.isinf, asnumpy=asnumpy, calls=calls
    )
    monkeypatch.setitem(sys.modules, "cupy", module)
    return module


def test_two_device_arrays_that_agree_are_never_copied_to_the_host(
    fake_cupy: SimpleNamespace, monkeypatch: pytest.MonkeyPatch
) -> None:
    def no_copy(value: object) -> None:
        raise AssertionError("an agreeing pair was copied to the host")

    monkeypatch.setattr(comparison, "host_array", no_copy)
    reference = on_device([1.0, 2.0, np.nan])
    assert compare_outputs(reference, on_device([1.0, 2.0 + 1e-7, np.nan]), rtol=1e-5) is None
    assert fake_cupy.calls == ["isclose"]


def test_device_arrays_that_differ_get_the_host_comparisons_message(
    fake_cupy: SimpleNamespace,
) -> None:
    reference, actual = on_device([1.0, 2.0, 3.0]), on_device([1.0, 2.5, 3.0])
    message = compare_outputs(reference, actual, rtol=1e-5, atol=0.0)
    assert message is not None and "1 of 3 elements differ" in message
    assert message == compare_outputs(np.asarray(reference), np.asarray(actual), 1e-5, 0.0)


@pytest.mark.parametrize(
    ("reference", "actual"),
    [
        (on_device([1.0, 2.0]), on_device([1.0, 2.0], np.float64)),  # dtype differs
        (on_device([1.0, 2.0]), on_device([1.0, 2.0, 3.0])),  # shape differs
        (np.asarray([1.0, 2.0], dtype=np.float32), on_device([1.0, 2.0])),  # one on the host
        (on_device([1, 2], np.int32), on_device([1, 3], np.int32)),  # integers compare exactly
    ],
)
def test_what_the_device_cannot_show_equal_is_left_to_the_host(
    fake_cupy: SimpleNamespace, reference: Any, actual: Any
) -> None:
    assert agree_on_device(reference, actual, 1e-5, 1e-8, True) is False


def test_integers_that_agree_are_settled_on_the_device_without_isclose(
    fake_cupy: SimpleNamespace,
) -> None:
    assert agree_on_device(on_device([1, 2], np.int32), on_device([1, 2], np.int32), 0, 0, True)
    assert fake_cupy.calls == []


def test_without_cupy_nothing_is_a_device_array(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delitem(sys.modules, "cupy", raising=False)
    assert agree_on_device(on_device([1.0]), on_device([1.0]), 0, 0, True) is False


def test_a_complex_nan_on_the_device_is_left_to_the_host(fake_cupy: SimpleNamespace) -> None:
    # CuPy's isclose, as NumPy's, takes a complex with NaN in either part for NaN: nan+1j
    # agreed with nan+2j on the device, and the host's stricter rule never ran.
    fake_cupy.isnan = np.isnan
    reference = on_device([1 + 1j, complex(np.nan, 1)], dtype=np.complex64)
    wrong = on_device([1 + 1j, complex(np.nan, 2)], dtype=np.complex64)
    assert compare_outputs(reference, wrong) is not None
    assert compare_outputs(reference, reference.copy()) is None
    assert agree_on_device(reference, reference.copy(), 1e-5, 0.0, equal_nan=True) is False


def test_an_infinite_candidate_on_the_device_is_not_within_an_overflowed_tolerance(
    fake_cupy: SimpleNamespace,
) -> None:
    # CuPy's isclose, as NumPy's, computes the tolerance in the dtype: float16's rtol=2 of
    # 40000 overflowed to inf, and a candidate's inf agreed on the device.
    reference = on_device([40000.0, 1.0], dtype=np.float16)
    wrong = on_device([np.inf, 1.0], dtype=np.float16)
    assert agree_on_device(reference, wrong, 2.0, 0.0, equal_nan=True) is False
    infinite = on_device([np.inf, -np.inf], dtype=np.float16)
    assert agree_on_device(infinite, infinite.copy(), 2.0, 0.0, equal_nan=True) is True


def test_device_arrays_of_two_gpus_are_compared_on_the_host(fake_cupy: SimpleNamespace) -> None:
    # A reference's output on device 0, a candidate's that it made on device 1 (inside a
    # `with cupy.cuda.Device(1)` of its own): CuPy's isclose raised where the two GPUs have
    # no peer access, and the checks ended with its error.
    expected = on_device([1.0, 2.0], device=0)
    assert compare_outputs(expected, on_device([1.0, 2.0], device=1)) is None
    message = compare_outputs(expected, on_device([1.0, 2.5], device=1), rtol=1e-5, atol=0.0)
    assert message is not None and "1 of 2 elements differ" in message


class csr_matrix:
    """What the checks meet of a cupyx sparse matrix: a module of CuPy's, no length, and an
    `==` that gives another sparse matrix, whose truth is refused."""

    __module__ = "cupyx.scipy.sparse._csr"
    __hash__ = None  # type: ignore[assignment]

    def __init__(self, data: Any) -> None:
        self.data = data

    def __len__(self) -> int:
        raise TypeError("sparse array length is ambiguous; use shape[0] or .nnz")

    def __getitem__(self, key: object) -> Any:
        raise NotImplementedError

    def __eq__(self, other: object) -> Any:  # type: ignore[override]
        return csr_matrix(None)

    def __bool__(self) -> bool:
        raise ValueError("The truth value of an array with more than one element is ambiguous")


def test_a_cupyx_sparse_output_asks_for_autotune_compare_as_a_scipy_one_does(
    fake_cupy: SimpleNamespace,
) -> None:
    # Taken for a CuPy array by its module, it went through `cupy.asnumpy` (a 0-d object
    # array holding it) and was compared again at each level until a RecursionError.
    message = compare_outputs(csr_matrix(on_device([1.0])), csr_matrix(on_device([1.0])))
    assert message == (
        "output: cannot compare values of type csr_matrix; give it an autotune_compare method"
    )
