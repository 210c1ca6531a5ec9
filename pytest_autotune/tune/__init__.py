"""The tuning engine: the port of the seed's autotune module. It never imports pytest, nor
anything of this package outside `tune/` (tests/unit/test_architecture.py holds it to that)."""

from __future__ import annotations

import importlib
import importlib.util
from types import ModuleType


def __getattr__(name: str) -> ModuleType:
    """A module of the engine, imported when first reached through the package
    (`pytest_autotune.tune.key`), as it was when `import pytest_autotune` imported them all."""
    if name.startswith("_") or importlib.util.find_spec(f"{__name__}.{name}") is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return importlib.import_module(f"{__name__}.{name}")
