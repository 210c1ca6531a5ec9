"""Clients: how to run and time candidates on a device, and the device's measured peaks.

`cuda` imports CuPy only when a client is made, so this package imports without CuPy.
"""

from __future__ import annotations

from pytest_autotune.backends.cpu import CpuClient, cpu
from pytest_autotune.backends.cuda import CudaUnavailableError, cuda
from pytest_autotune.backends.cuda_client import CudaClient
from pytest_autotune.backends.peaks import load_or_probe
from pytest_autotune.tune.client import Client
from pytest_autotune.tune.peaks import Peaks

__all__ = [
    "Client",
    "CpuClient",
    "CudaClient",
    "CudaUnavailableError",
    "Peaks",
    "cpu",
    "cuda",
    "load_or_probe",
]
