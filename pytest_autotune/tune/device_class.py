"""Device classes: which other device's cache may stand in for this device's.

A device id names a hardware class narrowly (`cpu-amd-epyc-7b13-2t`, `cuda-nvidia-h200`),
because a baseline the CI gate compares against must come from the same hardware. A library
that ships the winners its CI tuned meets the opposite problem: its users' CPUs almost never
carry the same model and thread count. A winner tuned on a near device is then a better
first answer than tuning at the user's first call, as long as the candidates run the same
code paths there. They do when the instruction set is the same: NumPy and BLAS pick their
kernels by ISA level (SSE4, AVX2, AVX-512; NEON, SVE), and CUDA code is compiled per compute
capability. So a class is the CPU vendor and ISA level, or the GPU's compute capability;
thread counts and SM counts differ inside a class, and the nearest count is preferred.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

_X86_64_LEVELS = (
    ("x86-64-v4", frozenset({"avx512f", "avx512bw", "avx512cd", "avx512dq", "avx512vl"})),
    (
        "x86-64-v3",
        frozenset({"avx", "avx2", "bmi1", "bmi2", "f16c", "fma", "abm", "movbe", "xsave"}),
    ),
    ("x86-64-v2", frozenset({"cx16", "lahf_lm", "popcnt", "sse4_1", "sse4_2", "ssse3"})),
)
"""The x86-64 micro-architecture levels of the psABI, highest first, as Linux spells the
flags each adds; a level also needs every level below it."""

_ARM_FEATURES = ("sve2", "sve")

_VENDORS = frozenset({"amd", "intel", "apple", "ampere", "qualcomm", "hygon", "zhaoxin"})
"""CPU vendors as their models spell them, which a model may name after other words."""


def isa_level(machine: str, flags: Iterable[str]) -> str:
    """The ISA level of a CPU from its machine name and feature flags (`/proc/cpuinfo`).

    x86-64 CPUs get their psABI level (`x86-64-v3`); 64-bit Arm CPUs `aarch64`, with the
    widest SVE they have (`aarch64-sve2`); anything else its machine name.
    """
    have = frozenset(flags)
    arch = machine.lower()
    if arch in ("x86_64", "amd64"):
        level = "x86-64"
        for name, needed in reversed(_X86_64_LEVELS):
            if not needed <= have:
                break
            level = name
        return level
    if arch in ("aarch64", "arm64"):
        extra = next((f for f in _ARM_FEATURES if f in have), None)
        return f"aarch64-{extra}" if extra else "aarch64"
    return arch or "unknown"


@dataclass(frozen=True, slots=True)
class DeviceClass:
    """What a device shares with the devices whose winners it may use, and its size in it."""

    name: str
    """`cpu-<vendor>-<isa level>` or `cuda-sm<compute capability>`."""
    size: int
    """Threads of a CPU, SMs of a GPU: the nearest size in a class is the nearest device."""


def device_class(device_id: str, fingerprint: Mapping[str, Any]) -> DeviceClass | None:
    """The class of a device from its id and fingerprint (`Client.fingerprint()`, or the
    `device` block of a cache file); None when the fingerprint does not say enough."""
    if device_id.startswith("cpu-"):
        model, isa = fingerprint.get("model"), fingerprint.get("isa")
        if not isinstance(model, str) or not isinstance(isa, str):
            return None
        words = re.sub(r"\(.*?\)", " ", model.lower()).split()
        # A vendor's name where the model gives one anywhere (`12th Gen Intel(R) Core(TM)`
        # begins with the generation), else its first word.
        vendor = next((w for w in words if w in _VENDORS), words[0] if words else "unknown")
        threads = fingerprint.get("threads")
        size = threads if isinstance(threads, int) else 0
        return DeviceClass(f"cpu-{vendor}-{isa}", size)
    if device_id.startswith("cuda-"):
        capability = fingerprint.get("compute_capability")
        if not isinstance(capability, str) or not capability:
            return None
        sms = fingerprint.get("sm_count")
        return DeviceClass(f"cuda-sm{capability}", sms if isinstance(sms, int) else 0)
    return None


def nearest(mine: DeviceClass, others: Mapping[str, DeviceClass | None]) -> str | None:
    """The device id among `others` of `mine`'s class whose size is nearest; a tie goes to
    the larger, then to the first id in sorted order, so the choice is the same everywhere."""
    same = [
        (abs(c.size - mine.size), -c.size, device_id)
        for device_id, c in others.items()
        if c is not None and c.name == mine.name
    ]
    return min(same)[2] if same else None
