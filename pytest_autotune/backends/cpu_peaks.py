"""Probing the CPU's peaks with NumPy: the memory bandwidth one thread streams at (from DRAM,
and from each cache level: `cpu_levels`) and the throughput BLAS reaches in fp32 and fp64
matmuls, each the best of a few runs."""

from __future__ import annotations

import functools
import math
import os
import time as _time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from pytest_autotune.backends.cgroups import memory_limit
from pytest_autotune.backends.cpu_device import cpu_threads, thread_env
from pytest_autotune.backends.cpu_levels import SYSFS_CACHE, cache_sizes, probe_cache_levels
from pytest_autotune.backends.peaks import Peaks
from pytest_autotune.tune.benchmark import NS_PER_S

MIB = 1 << 20
FALLBACK_LAST_LEVEL_CACHE = 32 * MIB
MAX_PROBE_BUFFER = 256 << 20
MIN_PROBE_BUFFER = 64 * MIB

MATMUL_SIZES = (128, 256, 512, 1024)
MATMUL_PROBE_S = 0.05
MAX_MATMUL_RUNS = 1000


def last_level_cache_bytes(cache_root: Path = SYSFS_CACHE) -> int | None:
    """The size of CPU 0's outermost data cache (`cpu_levels.cache_sizes`), None where the
    OS does not say."""
    sizes = cache_sizes(cache_root)
    return sizes[max(sizes)] if sizes else None


def _physical_memory() -> int | None:
    """The machine's memory, or a container's limit where that is less: the host's whole
    memory sized the probe's buffers for a container of 1 GiB as for the host, 512 MiB of
    them, past what its limit left to the tests."""
    try:
        memory: int | None = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (AttributeError, ValueError, OSError):  # not a POSIX system
        memory = None
    limit = memory_limit()
    return limit if memory is None or (limit is not None and limit < memory) else memory


def probe_buffer_bytes(last_level_cache: int | None, memory: int | None) -> int:
    """Four times the last-level cache (32 MiB where unknown), at least 64 MiB, so the probes
    stream from memory and not from a cache; at most 256 MiB, and 1/16 of the memory.

    A virtual machine often reports the host's whole L3 (480 MiB was seen), which would ask
    for 2 GB buffers: at 256 MiB the probes measured the same bandwidth in 0.5 s instead of
    11 s, and one core's share of a server L3 is far below that anyway.
    """
    size = min(
        max(4 * (last_level_cache or FALLBACK_LAST_LEVEL_CACHE), MIN_PROBE_BUFFER), MAX_PROBE_BUFFER
    )
    return min(size, memory // 16) if memory else size


def _best_seconds(run: Callable[[], object], reps: int) -> float:
    """The fastest of `reps` runs after one warm-up: a peak is what the machine can do, and
    every disturbance (page faults, another process, a clock ramp) only adds time."""
    run()
    best = math.inf
    for _ in range(reps):
        start = _time.perf_counter_ns()
        run()
        best = min(best, (_time.perf_counter_ns() - start) / NS_PER_S)
    return best


def probe_cpu_peaks(buffer_bytes: int | None = None, matmul_n: int = 2048, reps: int = 5) -> Peaks:
    """Measure this CPU's memory bandwidth and BLAS throughput with NumPy.

    The memory probes are single NumPy calls on float64 buffers (`copyto` for copy, counted
    as read plus written bytes; `add.reduce` for read; `fill` for write). NumPy streams on
    one thread, so these are the roofs a NumPy candidate can reach, not what every core
    together could. They run over buffers beyond the caches (the DRAM level) and over
    working sets that fit each cache level (`cpu_levels.probe_cache_levels`). The compute
    probes are `matmul` of `matmul_n` squared matrices in fp32 and fp64 (2 n^3
    operations), which BLAS runs on its threads.
    """
    if reps < 1 or matmul_n < 1:
        raise ValueError(f"probe_cpu_peaks: reps and matmul_n must be >= 1, got {reps}, {matmul_n}")
    last_level_cache = last_level_cache_bytes()
    if buffer_bytes is None:
        buffer_bytes = probe_buffer_bytes(last_level_cache, _physical_memory())
    size = max(buffer_bytes // 8, 1) * 8
    return Peaks(
        memory=_memory_rates(size, reps),
        levels=probe_cache_levels(3 * reps),  # short loops: more of them find a quiet moment
        outer_level="DRAM",
        compute={
            "fp32": _matmul_rate(np.float32, matmul_n, reps),
            "fp64": _matmul_rate(np.float64, matmul_n, reps),
        },
        threads=cpu_threads(),
        details={
            "buffer_bytes": size,
            "last_level_cache_bytes": last_level_cache,
            "matmul_n": matmul_n,
            "reps": reps,
            "memory_probe_threads": 1,
            "thread_env": thread_env(),
        },
    )


def _memory_rates(size: int, reps: int) -> dict[str, float]:
    """Bytes per second of copy (read plus written), read, write, add (`y += x`: two
    reads and a write, the stream mix of saxpy, which runs faster than a copy where reads
    cost less than writes) and update (`y *= 1`: a read and a write of one buffer, which
    no write-allocate of another buffer slows: an in-place `y *= 2` of 32 MiB reached 138%
    of a roof of the other patterns) over float64 buffers; the buffers are touched when
    made, so no probe times the page faults of a first use."""
    source = np.ones(size // 8, dtype=np.float64)
    target = np.empty_like(source)
    target.fill(0.0)
    nbytes = float(source.nbytes)
    return {
        "copy": 2 * nbytes / _best_seconds(lambda: np.copyto(target, source), reps),
        "read": nbytes / _best_seconds(lambda: np.add.reduce(source), reps),
        "write": nbytes / _best_seconds(lambda: target.fill(1.0), reps),
        "add": 3 * nbytes / _best_seconds(lambda: np.add(source, target, out=target), reps),
        "update": 2 * nbytes / _best_seconds(lambda: np.multiply(target, 1.0, out=target), reps),
    }


def _matmul_rate(dtype: type[np.floating[Any]], n: int, reps: int) -> float:
    """Operations per second of n x n matmuls: 2 n^3 (a multiply and an add per term), the
    best over sizes from `MATMUL_SIZES` up to `n`.

    One size is not enough on a shared machine: a 2048 product lasts about 0.1 s, and on
    two vCPUs shared with other processes each of five runs met a neighbour, so a 256
    product timed in a quiet moment read 130-370% of that "peak". Smaller products are
    repeated until `MATMUL_PROBE_S` has passed, so one of them finds a quiet moment too.
    """
    best = 0.0
    for size in sorted({*(m for m in MATMUL_SIZES if m < n), n}):
        a = np.ones((size, size), dtype=dtype)
        product = functools.partial(np.matmul, a, a, out=np.empty_like(a))
        once = _best_seconds(product, 1)
        runs = max(reps, min(MAX_MATMUL_RUNS, math.ceil(MATMUL_PROBE_S / once)))
        seconds = _best_seconds(product, runs)
        best = max(best, 2.0 * size**3 / seconds)
    return best
