"""The package `local_tuner` reads a tuner's shipped caches from by default: the calling
module's top-level package (below a namespace package, the first regular one), where it
imports."""

from __future__ import annotations

import importlib.util
import sys


def a_package(name: str) -> bool:
    """Whether `name` imports as a package (a folder), not a plain module: a plain
    top-level module (`helpers.py` beside a notebook) holds no data, and
    `importlib.resources` read the folder it lies in as its own from Python 3.12 on (and
    nothing before): a project's own `.autotune` there, or site-packages' for a
    distribution of one module, was taken for its shipped caches. False where `name` does
    not import at all. A top-level name's spec is found without importing anything."""
    module = sys.modules.get(name)
    if module is not None:
        return hasattr(module, "__path__")
    try:
        spec = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return False
    return spec is not None and spec.submodule_search_locations is not None


def top_level_package(module: str) -> str:
    """The top-level package of `module`, or below a namespace package the first regular one:
    `acme.mylib` for `acme.mylib.ops` when `acme` is a namespace that several distributions
    share (no `__init__.py`, no file); it holds no data of its own, `acme.mylib` is the
    library, whose wheel ships its `.autotune` folder. `module` itself is that package when
    the library builds its tuner in its `__init__.py` (`acme.mylib`), never when it is a
    plain module (`acme.tool`), which holds no data."""
    parts = module.split(".")
    for end in range(1, len(parts) + 1):
        name = ".".join(parts[:end])
        parent = sys.modules.get(name)
        if end == len(parts) and not hasattr(parent, "__path__"):
            break
        if parent is None or getattr(parent, "__file__", None) is not None:
            return name
    return parts[0]
