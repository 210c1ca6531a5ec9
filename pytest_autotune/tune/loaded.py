"""Classes of optional libraries (CuPy, PyTorch, polars, mock), looked up where the program
imported them and never imported here: a value of a library exists only where the program
imported it, and importing it here would load it (seconds, for torch)."""

from __future__ import annotations

import sys


def loaded_type(module: str, path: str) -> type | None:
    """The class `module.path` (`path` may be dotted: "nn.Module") where the program imported
    `module`, else None; None too for a stand-in that is no class (a `MagicMock` a test suite
    put in `sys.modules`), whose attributes are mocks."""
    value: object = sys.modules.get(module)
    for name in path.split("."):
        value = getattr(value, name, None)
    return value if isinstance(value, type) else None


def instance_of(value: object, module: str, path: str) -> bool:
    """Whether `value` is an instance of the class `module.path` (`loaded_type`)."""
    kind = loaded_type(module, path)
    return kind is not None and isinstance(value, kind)


__all__ = ["instance_of", "loaded_type"]
