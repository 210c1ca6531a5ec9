"""The `Client` protocol, re-exported for code that imports it from the clients: it lives in
`pytest_autotune.tune.client`, the engine's own contract."""

from __future__ import annotations

from pytest_autotune.tune.client import Client

__all__ = ["Client"]
