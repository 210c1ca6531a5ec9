"""The CPU this process runs on: its model name and feature flags, the threads it may use
(an affinity mask, a cgroup's quota), its BLAS and the variables that cap BLAS threads, and
its cache folder name."""

from __future__ import annotations

import functools
import math
import os
import platform
import re
import sys
from typing import Any

import numpy as np

from pytest_autotune.backends.cgroups import cpu_quota
from pytest_autotune.backends.cpu_levels import sysctl
from pytest_autotune.backends.device_id import device_id

_THREAD_ENV = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "NUMBA_NUM_THREADS")
_VENDOR_NOISE = re.compile(r"\((?:r|tm)\)|@\s*[\d.]+\s*[gm]hz|\b(?:cpu|processor|\d+-core)\b")


CPUINFO = "/proc/cpuinfo"


@functools.cache
def cpu_model_name() -> str:
    """The CPU's marketing name: /proc/cpuinfo on Linux, `sysctl machdep.cpu.brand_string` on
    macOS, the registry's `ProcessorNameString` on Windows; else what `platform` knows, which
    on macOS is only `arm` or `i386`: every Mac of a kind and thread count shared one device
    id, an M1's baselines judging an M3's times."""
    return (
        _proc_model_name()
        or _macos_model_name()
        or _windows_model_name()
        or platform.processor()
        or platform.machine()
        or "unknown"
    )


def _proc_model_name() -> str | None:
    try:
        with open(CPUINFO, encoding="utf-8", errors="replace") as cpuinfo:
            for line in cpuinfo:
                name, colon, value = line.partition(":")
                if colon and name.strip() == "model name" and value.strip():
                    return value.strip()
    except OSError:
        pass
    return None


def _macos_model_name() -> str | None:
    return sysctl("machdep.cpu.brand_string")


def _windows_model_name() -> str | None:
    if sys.platform != "win32":
        return None
    try:
        import winreg

        path = r"HARDWARE\DESCRIPTION\System\CentralProcessor\0"
        with winreg.OpenKey(winreg.HKEY_LOCAL_MACHINE, path) as key:
            value = winreg.QueryValueEx(key, "ProcessorNameString")[0]
    except (ImportError, OSError):
        return None
    return value.strip() if isinstance(value, str) else None


def cpu_flags() -> frozenset[str]:
    """The CPU's feature flags (`/proc/cpuinfo`: `flags` on x86, `Features` on Arm); empty
    where the system does not list them."""
    try:
        with open(CPUINFO, encoding="utf-8", errors="replace") as cpuinfo:
            for line in cpuinfo:
                name, colon, value = line.partition(":")
                if colon and name.strip() in ("flags", "Features"):
                    return frozenset(value.split())
    except OSError:
        pass
    return frozenset()


def cpu_threads() -> int:
    """The CPUs this process may run on. A container or `taskset` limits them (a cpuset, or
    a CPU quota rounded up: `docker run --cpus=2`, a Kubernetes CPU limit, which leave every
    CPU of the host in the affinity mask), and they are what threaded BLAS and the probes
    can use, so they belong in the hardware class."""
    try:
        allowed = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # macOS, Windows; a sandbox that refuses the call
        allowed = os.cpu_count() or 1
    quota = cpu_quota()
    return allowed if quota is None else min(allowed, max(1, math.ceil(quota)))


def device_id_from(model_name: str, threads: int) -> str:
    """The cache folder name of a CPU, e.g. `cpu-amd-epyc-7b13-2t`.

    Trademark signs, "CPU", "Processor", the core count and the nominal clock are dropped:
    they vary in spelling between otherwise identical parts, and folders must match on
    every machine of one class. The thread count stays: it changes BLAS and memory peaks.
    """
    cleaned = _VENDOR_NOISE.sub(" ", model_name.lower())
    return device_id("cpu", cleaned, f"-{threads}t")


def thread_env() -> dict[str, str]:
    """The variables that cap BLAS, OpenMP and Numba threads, where set: they change timings."""
    return {name: os.environ[name] for name in _THREAD_ENV if name in os.environ}


def blas_info() -> dict[str, str] | None:
    """NumPy's BLAS (name, version, build configuration), None where NumPy cannot say."""
    try:
        config: Any = np.show_config(mode="dicts")
    except TypeError:  # NumPy < 1.25 only prints its configuration
        return None
    blas = config.get("Build Dependencies", {}).get("blas") if isinstance(config, dict) else None
    if not isinstance(blas, dict):
        return None
    kept = ("name", "version", "openblas configuration")
    return {name: str(blas[name]) for name in kept if name in blas}
