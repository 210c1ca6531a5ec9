"""Which kernels a fresh host compiles inside a family's first tuning (issue 14).

On a fresh H200 host the first process's first tunings read 0.15-0.21x do_bench (saxpy,
histogram) against 0.04x and 0.12x in a second process, and a process given an empty
CuPy kernel cache (`CUPY_CACHE_DIR`) reads the same as a fresh host's first: the cost is
kernels compiled (NVRTC) on their first use, which a host's disk cache then keeps. This
script runs with an empty cache of its own and, per family, lists the kernels compiled
by the candidates' own first calls, then those compiled inside the first tuning (the
tuner's and CuPy's, read from the names in the cache's new files), with both tunings'
walls.

    PYTHONPATH=. python3 benchmarks/gpu_first_compiles.py
"""

from __future__ import annotations

import os
import re
import sys
import tempfile
import time
from pathlib import Path

# Before CuPy is imported: it reads the variable once.
os.environ["CUPY_CACHE_DIR"] = tempfile.mkdtemp(prefix="cupy-cache-")

from benchmarks.gpu_common import cupy
from benchmarks.gpu_family_costs import families
from pytest_autotune import AutotuneConfig, TunableSet, Tuner
from pytest_autotune.backends import CudaClient

CACHE = Path(os.environ["CUPY_CACHE_DIR"])
NAME = re.compile(rb"(?:cupy|autotune)_[A-Za-z0-9_]+|_Z[A-Za-z0-9_]{8,}")


def cached() -> set[Path]:
    return {p for p in CACHE.rglob("*") if p.is_file()}


def kernel_names(paths: set[Path]) -> list[str]:
    names: set[str] = set()
    for path in paths:
        names.update(m.decode() for m in NAME.findall(path.read_bytes()))
    return sorted(names)


def main() -> int:
    cp = cupy()
    client = CudaClient()
    print(f"client's own kernels: {len(cached())} cache files")
    for name, (candidates, inputs) in families(cp).items():
        before = cached()
        for fn in candidates.values():
            fn(*inputs)
        cp.cuda.Device().synchronize()
        own = cached() - before
        tunables = TunableSet.of(lambda *args, _n=name: _n, candidates)
        walls = []
        for _ in range(2):
            tuner = Tuner("first-compiles", client.device_id, AutotuneConfig(disable_cache=True))
            started = time.perf_counter()
            tuner.tune(name, tunables, inputs, client)
            walls.append(time.perf_counter() - started)
            if len(walls) == 1:
                in_tuning = cached() - before - own
        print(
            f"{name}: first tuning {walls[0] * 1e3:.1f} ms, second {walls[1] * 1e3:.1f} ms;"
            f" compiled by the candidates' first calls: {len(own)} files;"
            f" inside the first tuning: {len(in_tuning)} files {kernel_names(in_tuning)}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
