"""The GPU suite: it runs where CuPy sees a CUDA device and skips cleanly everywhere else.

Test modules here import CuPy only through the `cp` fixture, so collecting them needs no
CuPy; the session-scoped autouse fixture below skips every test before any GPU fixture
(all session-scoped too) is made.
"""

from __future__ import annotations

import importlib
from typing import Any

import pytest


def _why_no_gpu() -> str | None:
    try:
        cupy = importlib.import_module("cupy")
    except Exception as error:
        return f"CuPy is not importable ({error}); pip install 'pytest-autotune[cuda13]'"
    try:
        count = cupy.cuda.runtime.getDeviceCount()
    except Exception as error:
        return f"no CUDA device: {error}"
    return None if count > 0 else "no CUDA device"


NO_GPU = _why_no_gpu()


@pytest.fixture(scope="session", autouse=True)
def _needs_gpu() -> None:
    if NO_GPU is not None:
        pytest.skip(NO_GPU)


@pytest.fixture(scope="session")
def cp() -> Any:
    return importlib.import_module("cupy")


@pytest.fixture(scope="session")
def client() -> Any:
    """The process's shared client of device 0 (cold L2, held stream)."""
    from pytest_autotune.backends import cuda

    return cuda()
