"""Clients: how to run and time candidates on a device, and the device's measured peaks."""

from __future__ import annotations

from pytest_autotune.backends.client import Client
from pytest_autotune.backends.cpu import CpuClient, cpu
from pytest_autotune.backends.peaks import Peaks, load_or_probe

__all__ = ["Client", "CpuClient", "Peaks", "cpu", "load_or_probe"]
