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

checks = importlib.import_module("pytest_autotune.tune.checks")


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
        return np.isclose(a, b, **kwargs)

    module = SimpleNamespace(ndarray=DeviceArray, isclose=isclose, calls=calls)
    monkeypatch.setitem(sys.modules, "cupy", module)
    return module


def test_two_device_arrays_that_agree_are_never_copied_to_the_host(
    fake_cupy: SimpleNamespace, monkeypatch: pytest.MonkeyPatch
) -> None:
    def no_copy(value: object) -> None:
        raise AssertionError("an agreeing pair was copied to the host")

    monkeypatch.setattr(checks, "_host_array", no_copy)
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


def test_device_arrays_of_two_gpus_are_compared_on_the_host(fake_cupy: SimpleNamespace) -> None:
    # An expected array a reference keeps from device 0, a candidate's output on device 1
    # (a client of `cuda:1`): CuPy's isclose raised, and the checks ended with its error.
    expected = on_device([1.0, 2.0], device=0)
    assert compare_outputs(expected, on_device([1.0, 2.0], device=1)) is None
    message = compare_outputs(expected, on_device([1.0, 2.5], device=1), rtol=1e-5, atol=0.0)
    assert message is not None and "1 of 2 elements differ" in message
