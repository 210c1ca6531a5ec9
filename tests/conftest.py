# NumPy (and CuPy, when present) are imported here once, so pytester's module snapshots in
# the plugin tests do not import them a second time.
import numpy  # noqa: F401

try:
    import cupy  # noqa: F401
except Exception:  # noqa: BLE001, S110 - CuPy is optional; a broken install must not stop the CPU suite
    pass

pytest_plugins = ["pytester"]
