"""A test suite that mocks PyTorch (`sys.modules["torch"] = MagicMock()`, or a tensor
`MagicMock(spec=torch.Tensor)`): no tensor exists, and the mock is never copied or asked
about devices."""

from __future__ import annotations

import sys
import types
import unittest.mock

import numpy as np
import pytest

from pytest_autotune.body_state import GlobalDraws
from pytest_autotune.tune import torch_tensors
from pytest_autotune.tune.clone import clone_value


def test_a_mocked_torch_module_has_no_tensors_devices_or_generators(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    mocked = unittest.mock.MagicMock()
    monkeypatch.setitem(sys.modules, "torch", mocked)

    assert torch_tensors.real_torch() is None
    assert not torch_tensors.is_tensor(unittest.mock.MagicMock())
    # Asked of the mock, `device >= torch.cuda.device_count()` raised TypeError in every
    # sample of the CUDA client.
    fake_cupy = types.SimpleNamespace()
    with torch_tensors.torch_stream(fake_cupy, 0):
        pass
    draws = GlobalDraws.now()
    assert draws.torch is None
    draws.restore()
    mocked.random.set_rng_state.assert_not_called()


def test_a_mock_specced_as_a_tensor_is_shared_not_copied(monkeypatch: pytest.MonkeyPatch) -> None:
    class Tensor:  # the real class a spec'd mock passes isinstance as
        shape = ()

        def __array__(self) -> np.ndarray:
            return np.zeros(1)

    monkeypatch.setitem(sys.modules, "torch", types.SimpleNamespace(Tensor=Tensor))
    mock = unittest.mock.MagicMock(spec=Tensor)
    assert torch_tensors.is_tensor(mock)

    assert clone_value(mock) is mock  # the test's record of the calls made
    (inside,) = clone_value((mock,))
    assert inside is mock
