"""The CPU's cache levels: their sizes, read from the OS, and the bandwidth NumPy streams
at from each, so a problem whose working set fits a cache is bounded by that cache's roof.

Measured on a 2-vCPU Xeon VM (BENCHMARKS.md): NumPy copies at about 190 GB/s (bytes read
plus written) from L1, 95 GB/s from L2, 25 GB/s from L3 and 13 GB/s from memory, so a
problem that fits L2 bounded by the memory roof read 229% of it.
"""

from __future__ import annotations

import ctypes
import math
import os
import subprocess
import sys
import time as _time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from pytest_autotune.backends.peaks import MemoryLevel
from pytest_autotune.tune.benchmark import NS_PER_S

SYSFS_CACHE = Path("/sys/devices/system/cpu/cpu0/cache")
_SYSCONF_NAMES = {
    1: "SC_LEVEL1_DCACHE_SIZE",
    2: "SC_LEVEL2_CACHE_SIZE",
    3: "SC_LEVEL3_CACHE_SIZE",
    4: "SC_LEVEL4_CACHE_SIZE",
}
MIN_LOOP_S = 2e-3
"""Each timed loop of calls lasts about this long, far above the clock's resolution."""
WIDENINGS = (2, 8)
"""A level is probed with working sets this many times the level inside it (L1: its own
size over these), each at most half the level, and its rate is the faster: a level's roof
is the speed of the small working sets that just left the inner level, so every problem
in the level stays under it."""


def cache_sizes(cache_root: Path = SYSFS_CACHE) -> dict[int, int]:
    """Bytes of each data (or unified) cache level of CPU 0, by level: from sysfs on Linux,
    else from `sysconf` where the C library knows them (glibc), from `sysctl` on macOS, from
    `GetLogicalProcessorInformation` on Windows; empty where none says. Without them every
    problem is bounded by the DRAM roof, which a cache-resident one beats: the first
    candidate under it, however slow, ended tuning (a 2x slower sum of 512 KiB won so)."""
    return _sysfs_sizes(cache_root) or _sysconf_sizes() or _sysctl_sizes() or _windows_sizes()


def _sysfs_sizes(cache_root: Path) -> dict[int, int]:
    sizes: dict[int, int] = {}
    for index in sorted(cache_root.glob("index*")):
        try:
            if (index / "type").read_text().strip() == "Instruction":
                continue
            level = int((index / "level").read_text())
            size = parse_size((index / "size").read_text())
        except (OSError, ValueError):
            continue
        sizes[level] = max(size, sizes.get(level, 0))
    return sizes


def _sysconf_sizes() -> dict[int, int]:
    sizes: dict[int, int] = {}
    known = getattr(os, "sysconf_names", {})  # Windows has no sysconf
    for level, name in _SYSCONF_NAMES.items():
        if name not in known:
            continue
        try:
            size = os.sysconf(name)
        except (ValueError, OSError):
            continue
        if size > 0:
            sizes[level] = size
    return sizes


_SYSCTL_NAMES = {1: "l1dcachesize", 2: "l2cachesize", 3: "l3cachesize"}


def _sysctl_sizes() -> dict[int, int]:
    """macOS's: those of Apple silicon's performance cores (`hw.perflevel0.*`), which the
    probes' thread runs on when it can, else the CPU's (`hw.*`, an Intel Mac)."""
    sizes: dict[int, int] = {}
    for level, name in _SYSCTL_NAMES.items():
        value = sysctl(f"hw.perflevel0.{name}") or sysctl(f"hw.{name}")
        if value is not None and value.isdigit() and int(value) > 0:
            sizes[level] = int(value)
    return sizes


def sysctl(name: str) -> str | None:
    """The value macOS's `sysctl` gives `name`; None elsewhere or where it has none."""
    if sys.platform != "darwin":
        return None
    try:
        said = subprocess.run(
            ["/usr/sbin/sysctl", "-n", name],
            capture_output=True,
            encoding="utf-8",
            errors="replace",
            timeout=10,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return said.stdout.strip() or None if said.returncode == 0 else None


class _CacheDescriptor(ctypes.Structure):
    _fields_ = (
        ("level", ctypes.c_ubyte),
        ("associativity", ctypes.c_ubyte),
        ("line_size", ctypes.c_ushort),
        ("size", ctypes.c_uint32),
        ("type", ctypes.c_int),
    )


class _Described(ctypes.Union):
    _fields_ = (("cache", _CacheDescriptor), ("reserved", ctypes.c_ulonglong * 2))


class _ProcessorInformation(ctypes.Structure):
    """Windows' `SYSTEM_LOGICAL_PROCESSOR_INFORMATION`."""

    _fields_ = (("mask", ctypes.c_size_t), ("relationship", ctypes.c_int), ("info", _Described))


_RELATION_CACHE = 2
_CACHE_INSTRUCTION = 1


def _windows_sizes(information: Callable[[Any, Any], int] | None = None) -> dict[int, int]:
    """Windows': the data and unified caches `GetLogicalProcessorInformation` lists (or
    `information`, a function of its signature), the largest of each level."""
    if information is None:
        if sys.platform != "win32":
            return {}
        information = ctypes.windll.kernel32.GetLogicalProcessorInformation
    length = ctypes.c_uint32(0)
    information(None, ctypes.byref(length))  # fails, saying the size it needs
    size = ctypes.sizeof(_ProcessorInformation)
    entries = (_ProcessorInformation * (length.value // size))()
    if not entries or not information(entries, ctypes.byref(length)):
        return {}
    sizes: dict[int, int] = {}
    for entry in entries[: length.value // size]:
        cache = entry.info.cache
        if entry.relationship == _RELATION_CACHE and cache.type != _CACHE_INSTRUCTION:
            sizes[cache.level] = max(cache.size, sizes.get(cache.level, 0))
    return {level: size for level, size in sizes.items() if size > 0}


def parse_size(text: str) -> int:
    """A sysfs size such as `48K`, `32M` or `1024`, in bytes."""
    text = text.strip().upper()
    scale = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(text[-1:], 1)
    return int(text[:-1] if scale > 1 else text) * scale


def probe_working_sets(sizes: dict[int, int]) -> dict[int, list[int]]:
    """The working sets (bytes, multiples of 64) each level is probed with."""
    sets: dict[int, list[int]] = {}
    inner = 0
    for level in sorted(sizes):
        capacity = sizes[level]
        half = capacity // 2
        widened = [inner * w for w in WIDENINGS] if inner else [capacity // 4, half]
        chosen = sorted({max(64, min(size, half)) // 64 * 64 for size in widened})
        if inner < half:
            sets[level] = chosen
        inner = capacity
    return sets


def probe_cache_levels(
    reps: int = 15, sizes: dict[int, int] | None = None
) -> tuple[MemoryLevel, ...]:
    """Copy, read and write rates of NumPy from each cache level, innermost first.

    The same single-thread NumPy calls as the memory probe (`copyto` counted as read plus
    written bytes, `add.reduce`, `fill`, `add` into one operand counted as two reads
    and a write, and `multiply` of a buffer in place counted as a read and a write), each
    looped over a buffer that fits the level for
    `MIN_LOOP_S`, the best of `reps` loops. The per-call cost of the same call on one
    element is taken away, up to half the time (the rest is the cache's), so an L1 roof is
    the cache's speed and not Python's: a candidate that pays less overhead than NumPy must
    still stay under it.
    """
    sizes = cache_sizes() if sizes is None else sizes
    overhead = _call_overheads(reps)
    levels = []
    for level, working_sets in probe_working_sets(sizes).items():
        rates: dict[str, float] = {}
        for working_set in working_sets:
            for pattern, rate in _rates_at(working_set, reps, overhead).items():
                rates[pattern] = max(rate, rates.get(pattern, 0.0))
        levels.append(MemoryLevel(f"L{level}", sizes[level], rates))
    return tuple(levels)


def _calls(source: np.ndarray, target: np.ndarray) -> dict[str, Callable[[], object]]:
    head = target[: source.size]
    return {
        "copy": lambda: np.copyto(head, source),
        "read": lambda: np.add.reduce(source),
        "write": lambda: target.fill(1.0),
        "add": lambda: np.add(source, head, out=head),
        "update": lambda: np.multiply(source, 1.0, out=source),
    }


def _call_overheads(reps: int) -> dict[str, float]:
    one, other = np.ones(1), np.zeros(1)
    return {name: _loop_seconds(call, reps) for name, call in _calls(one, other).items()}


def _rates_at(working_set: int, reps: int, overhead: dict[str, float]) -> dict[str, float]:
    """Rates with `working_set` bytes in use: copy moves half of it into the other half, add
    reads both halves and writes one (`y += x`)."""
    whole = np.ones(working_set // 8)
    half = np.ones(working_set // 16)
    target = np.zeros(working_set // 8)
    halves = _calls(half, np.zeros(half.size))
    moved = {
        "copy": 2.0 * half.nbytes,
        "read": float(whole.nbytes),
        "write": float(target.nbytes),
        "add": 3.0 * half.nbytes,
        "update": 2.0 * whole.nbytes,
    }
    calls = {**_calls(whole, target), "copy": halves["copy"], "add": halves["add"]}
    rates = {}
    for name, call in calls.items():
        seconds = _loop_seconds(call, reps)
        rates[name] = moved[name] / max(seconds - overhead[name], seconds / 2)
    return rates


def _loop_seconds(call: Callable[[], object], reps: int) -> float:
    """Seconds per call: the best of `reps` loops that each last about `MIN_LOOP_S`."""
    call()
    start = _time.perf_counter_ns()
    call()
    once = max(_time.perf_counter_ns() - start, 1) / NS_PER_S
    count = max(1, math.ceil(MIN_LOOP_S / once))
    best = math.inf
    for _ in range(reps):
        start = _time.perf_counter_ns()
        for _ in range(count):
            call()
        best = min(best, (_time.perf_counter_ns() - start) / NS_PER_S / count)
    return best
