"""The device block an update writes into a cache file (`baselines.settled_device`)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from pytest_autotune.baselines import settled_device
from pytest_autotune.tune.benchmark import AutotuneOutcome
from pytest_autotune.tune.cache import PersistentCache, PersistentCacheKey, PersistentCacheValue


def device(copy: float, fp32: float, uuid: str = "GPU-1") -> dict[str, Any]:
    return {
        "id": "cuda-nvidia-h200",
        "fingerprint": {"name": "NVIDIA H200", "uuid": uuid},
        "peaks": {
            "memory_bytes_per_s": {"copy": copy, "read": 4.6e12},
            "compute_ops_per_s": {"fp32": fp32},
            "details": {"probe_reps": 5},
        },
    }


def saved(tmp_path: Path, block: dict[str, Any]) -> PersistentCache:
    cache = PersistentCache(tmp_path / "t.json")
    value = PersistentCacheValue("n1", 0, "a", (AutotuneOutcome("a", 1, (1e-3, 1e-3)),))
    cache.save({PersistentCacheKey('"n1"', "c" * 16): value}, device=block)
    return cache


def test_peaks_within_the_probes_repeatability_are_kept_as_the_file_holds_them(
    tmp_path: Path,
) -> None:
    # Rewritten to their last digit by every update, the peaks made two branches that each
    # refreshed another key of one test conflict in git on the device block alone.
    cache = saved(tmp_path, device(4.267e12, 65.1e12))
    held = json.loads(cache.path.read_text())["device"]
    again = settled_device(cache, device(4.281e12, 64.9e12))  # 0.3% apart
    assert again == held


def test_peaks_that_moved_or_another_gpu_are_written_anew(tmp_path: Path) -> None:
    cache = saved(tmp_path, device(4.267e12, 65.1e12))
    moved = device(4.0e12, 65.1e12)  # 6% less bandwidth: the device changed
    assert settled_device(cache, moved) == moved
    other = device(4.267e12, 65.1e12, uuid="GPU-2")
    assert settled_device(cache, other) == other
    fewer = device(4.267e12, 65.1e12)
    del fewer["peaks"]["details"]
    assert settled_device(cache, fewer) == fewer


def test_a_new_file_takes_the_peaks_measured(tmp_path: Path) -> None:
    new = device(4.267e12, 65.1e12)
    assert settled_device(PersistentCache(tmp_path / "none.json"), new) == new
