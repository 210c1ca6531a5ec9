"""Measured peaks: the roofs they give, their JSON form, and the per-device cache."""

from __future__ import annotations

import json
import math
import os
import re
import uuid
from collections.abc import Callable
from pathlib import Path

import pytest

from pytest_autotune.backends.peaks import MemoryLevel, MemoryRoof, Peaks, load_or_probe, peaks_path
from pytest_autotune.tune.errors import CacheFileWarning

PEAKS = Peaks(
    memory={"copy": 4.28e12, "read": 4.43e12, "write": 4.1e12},
    compute={"fp32": 6.3e13, "fp16": 7.79e14},
    threads=2,
    details={"buffer_bytes": 1 << 30, "reps": 5},
)


def unique_device() -> str:
    """Probes are remembered per device for the whole process, so each test gets its own."""
    return f"test-device-{uuid.uuid4().hex[:12]}"


def counting_probe(peaks: Peaks = PEAKS) -> Callable[[], Peaks]:
    def probe() -> Peaks:
        probe.calls += 1  # type: ignore[attr-defined]
        return peaks

    probe.calls = 0  # type: ignore[attr-defined]
    return probe


def exploding_probe() -> Peaks:
    raise AssertionError("the peaks should have come from the cache")


def test_the_memory_roof_is_the_larger_of_read_and_copy_never_write() -> None:
    assert PEAKS.memory_peak == 4.43e12
    assert Peaks(memory={"copy": 3.0, "read": 2.0, "write": 10.0}, compute={}).memory_peak == 3.0


def test_unmeasured_peaks_are_zero_so_they_give_no_bound() -> None:
    peaks = Peaks(memory={"write": 1e9}, compute={"fp32": 1e12})
    assert peaks.memory_peak == 0.0
    assert peaks.compute_peak("bf16") == 0.0
    assert peaks.compute_peak() == 1e12


def test_peaks_do_not_change_when_the_mapping_they_were_made_from_does() -> None:
    memory = {"read": 1e9}
    peaks = Peaks(memory=memory, compute={})
    memory["read"] = 5e9
    assert peaks.memory_peak == 1e9


@pytest.mark.parametrize("rate", [math.nan, math.inf, -1.0])
def test_a_rate_that_is_not_a_finite_positive_number_is_refused(rate: float) -> None:
    with pytest.raises(ValueError, match="'read'"):
        Peaks(memory={"read": rate}, compute={})


def test_a_rate_that_is_not_a_number_is_refused() -> None:
    with pytest.raises(TypeError, match="'fp32'"):
        Peaks(memory={}, compute={"fp32": True})


def test_peaks_survive_a_json_round_trip() -> None:
    assert Peaks.from_json(json.loads(json.dumps(PEAKS.to_json(), allow_nan=False))) == PEAKS


def test_without_a_cache_folder_a_device_is_probed_once_per_process() -> None:
    device, probe = unique_device(), counting_probe()
    assert load_or_probe(device, probe) == PEAKS
    assert load_or_probe(device, probe) == PEAKS
    assert probe.calls == 1  # type: ignore[attr-defined]


def test_a_probed_device_gets_a_readable_peaks_file(tmp_path: Path) -> None:
    device = unique_device()
    load_or_probe(device, counting_probe(), tmp_path)
    path = tmp_path / device / "peaks.json"
    assert path == peaks_path(tmp_path, device)
    text = path.read_text()
    assert text.endswith("}\n")
    assert json.loads(text) == {"schema_version": 1, "device_id": device, "peaks": PEAKS.to_json()}
    assert text == json.dumps(json.loads(text), indent=2, sort_keys=True) + "\n"
    assert [p.name for p in path.parent.iterdir()] == ["peaks.json"]


def test_a_peaks_file_is_read_back_without_probing(tmp_path: Path) -> None:
    device = unique_device()
    load_or_probe(device, counting_probe(), tmp_path / "first")
    (tmp_path / "second" / device).mkdir(parents=True)
    os.replace(peaks_path(tmp_path / "first", device), peaks_path(tmp_path / "second", device))
    assert load_or_probe(device, exploding_probe, tmp_path / "second") == PEAKS


def test_a_corrupt_peaks_file_is_warned_about_by_name_and_left_as_it_is(tmp_path: Path) -> None:
    device, probe = unique_device(), counting_probe()
    path = peaks_path(tmp_path, device)
    path.parent.mkdir()
    path.write_text("{not json")
    with pytest.warns(CacheFileWarning, match=re.escape(f"{path}: cannot be read")):
        assert load_or_probe(device, probe, tmp_path) == PEAKS
    assert path.read_text() == "{not json"
    assert load_or_probe(device, probe, tmp_path) == PEAKS  # warned once, probed once
    assert probe.calls == 1  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("document", "reason"),
    [
        ({"schema_version": 2, "device_id": "{device}", "peaks": {}}, "schema_version is 2"),
        ({"schema_version": 1, "device_id": "other", "peaks": {}}, "peaks of 'other'"),
        ({"schema_version": 1, "device_id": "{device}", "peaks": {}}, "memory_bytes_per_s"),
        ([], "holds a JSON array, expected a JSON object"),
    ],
)
def test_a_peaks_file_that_is_not_this_devices_is_refused_with_the_reason(
    tmp_path: Path, document: object, reason: str
) -> None:
    device = unique_device()
    if isinstance(document, dict) and document["device_id"] == "{device}":
        document["device_id"] = device
    path = peaks_path(tmp_path, device)
    path.parent.mkdir()
    path.write_text(json.dumps(document))
    with pytest.warns(CacheFileWarning, match=reason):
        assert load_or_probe(device, counting_probe(), tmp_path) == PEAKS


def test_a_peaks_file_that_cannot_be_written_is_warned_about_and_the_probe_still_serves(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def refuse(source: str, target: object) -> None:
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(os, "replace", refuse)
    device = unique_device()
    with pytest.warns(CacheFileWarning, match="cannot be written: Permission denied"):
        assert load_or_probe(device, counting_probe(), tmp_path) == PEAKS
    assert list((tmp_path / device).iterdir()) == []  # no temporary file left behind


def test_peaks_with_cache_levels_survive_a_json_round_trip_innermost_first() -> None:
    peaks = Peaks(
        memory={"copy": 1e10},
        compute={},
        levels=(
            MemoryLevel("L2", 2 << 20, {"copy": 1e11}),
            MemoryLevel("L1", 48 << 10, {"copy": 2e11}),
        ),
        outer_level="HBM",
    )
    assert [level.name for level in peaks.levels] == ["L1", "L2"]
    assert Peaks.from_json(json.loads(json.dumps(peaks.to_json(), allow_nan=False))) == peaks


def test_a_peaks_file_written_before_the_levels_reads_as_one_dram_level() -> None:
    old = PEAKS.to_json()
    del old["memory_levels"], old["outer_memory_level"]
    peaks = Peaks.from_json(old)
    assert peaks.levels == ()
    assert peaks.memory_roof(1 << 10) == MemoryRoof("DRAM", PEAKS.memory_peak)


def test_a_level_without_a_positive_capacity_is_refused() -> None:
    with pytest.raises(TypeError, match="'L1'"):
        MemoryLevel("L1", 0, {"copy": 1e9})


def test_an_update_in_place_rate_raises_the_memory_roof_where_it_is_the_fastest() -> None:
    assert Peaks(memory={"copy": 2.0, "read": 1.0, "add": 3.0}, compute={}).memory_peak == 3.0
