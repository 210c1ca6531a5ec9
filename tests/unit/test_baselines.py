"""The device block an update writes into a cache file (`device_block.settled_device`)."""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

from pytest_autotune.baselines import shown_paths
from pytest_autotune.device_block import settled_device
from pytest_autotune.plugin_settings import PluginSettings
from pytest_autotune.tune.benchmark import AutotuneOutcome
from pytest_autotune.tune.cache import PersistentCache, PersistentCacheKey, PersistentCacheValue
from pytest_autotune.tune.config import AutotuneConfig


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


def update(cache: PersistentCache, block: dict[str, Any]) -> dict[str, Any]:
    """The device block an update measuring `block` leaves in the file (as `write_caches`
    saves it: settled against the file's block, read under its lock)."""
    value = PersistentCacheValue("n2", 0, "a", (AutotuneOutcome("a", 1, (1e-3, 1e-3)),))
    cache.save(
        {PersistentCacheKey('"n2"', "c" * 16): value},
        device=functools.partial(settled_device, block),
    )
    written: dict[str, Any] = json.loads(cache.path.read_text())["device"]
    return written


def test_peaks_within_the_probes_repeatability_are_kept_as_the_file_holds_them(
    tmp_path: Path,
) -> None:
    # Rewritten to their last digit by every update, the peaks made two branches that each
    # refreshed another key of one test conflict in git on the device block alone.
    cache = saved(tmp_path, device(4.267e12, 65.1e12))
    held = json.loads(cache.path.read_text())["device"]
    again = update(cache, device(4.281e12, 64.9e12))  # 0.3% apart
    assert again == held


def test_peaks_that_moved_or_another_gpu_are_written_anew(tmp_path: Path) -> None:
    cache = saved(tmp_path, device(4.267e12, 65.1e12))
    moved = device(4.0e12, 65.1e12)  # 6% less bandwidth: the device changed
    assert update(cache, moved) == moved
    other = device(4.267e12, 65.1e12, uuid="GPU-2")
    assert update(cache, other) == other
    fewer = device(4.267e12, 65.1e12)
    del fewer["peaks"]["details"]
    assert update(cache, fewer) == fewer


def test_a_new_file_takes_the_peaks_measured(tmp_path: Path) -> None:
    new = device(4.267e12, 65.1e12)
    assert update(PersistentCache(tmp_path / "none.json"), new) == new


def test_peaks_another_update_wrote_after_this_session_read_the_file_are_the_ones_kept(
    tmp_path: Path,
) -> None:
    # Two `--autotune-update` runs on one checkout: this session read the file, another
    # then wrote peaks 0.3% off. The block is settled against the file as it is when saved,
    # so this update keeps the other's peaks: the file's peaks do not flip back and forth.
    cache = saved(tmp_path, device(4.267e12, 65.1e12))
    cache.load()  # what this session read
    saved(tmp_path, device(4.270e12, 65.0e12))  # another update, replacing the device block
    other = json.loads(cache.path.read_text())["device"]
    assert update(cache, device(4.281e12, 64.9e12)) == other


def test_the_cache_root_is_shortened_where_a_sentence_ends_after_it_and_nowhere_it_goes_on():
    # A root at a sentence's end (`/p/.autotune.`) kept its whole path; another folder whose
    # name begins with the root's is not the root.
    settings = PluginSettings(
        engine=AutotuneConfig(cache_dir="/p/.autotune"),
        rootpath=Path("/p"),
        invocation_dir=Path("/p"),
    )
    message = (
        "/p/.autotune/cpu/x.json: a link into /p/.autotune. Not /p/.autotune2 or /p/.autotune.bak"
    )
    assert shown_paths(message, settings) == (
        ".autotune/cpu/x.json: a link into .autotune. Not /p/.autotune2 or /p/.autotune.bak"
    )
