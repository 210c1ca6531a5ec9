# NumPy (and CuPy, when present) are imported here once, so pytester's module snapshots in
# the plugin tests do not import them a second time.
import contextlib

import numpy  # noqa: F401

# CuPy is optional: a broken install must not stop the CPU suite.
with contextlib.suppress(Exception):
    import cupy  # noqa: F401

pytest_plugins = ["pytester"]
