"""Measured peaks: the roofs they give, their JSON form, and the per-device cache."""

from __future__ import annotations

import json
import math
import os
import re
import threading
import uuid
from collections.abc import Callable
from pathlib import Path

import pytest

from pytest_autotune.backends.peaks import (
    MemoryLevel,
    MemoryRoof,
    Peaks,
    load_or_probe,
    peaks_path,
    probe_again,
)
from pytest_autotune.tune.errors import CacheFileWarning
from tests.forking import run_forked

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


def test_a_compute_peak_is_found_by_the_numpy_name_or_dtype_of_its_type() -> None:
    # `roofline(work, peaks, dtype=str(x.dtype))` asked for "float32", found no peak and
    # silently left the compute bound out.
    np = pytest.importorskip("numpy")
    assert PEAKS.compute_peak("float32") == PEAKS.compute_peak(np.float32) == 6.3e13
    assert PEAKS.compute_peak(np.dtype("float16")) == 7.79e14
    assert PEAKS.compute_peak("float64") == 0.0  # not measured: no bound


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


@pytest.mark.skipif(not hasattr(os, "fork"), reason="a POSIX fork")
@pytest.mark.filterwarnings("ignore:.*multi-threaded.*fork:DeprecationWarning")
def test_a_process_forked_while_a_thread_probes_probes_for_itself() -> None:
    """A probe takes seconds under the peaks lock; a process forked meanwhile (a pool of a
    program whose other thread tunes a set with roofline bounds) has no thread to release
    it, and its first tuning with bounds waited for ever."""
    entered, release = threading.Event(), threading.Event()

    def held_probe() -> Peaks:
        entered.set()
        release.wait()
        return PEAKS

    thread = threading.Thread(target=load_or_probe, args=(unique_device(), held_probe))
    thread.start()
    entered.wait()
    try:
        became = run_forked(lambda: load_or_probe(unique_device(), counting_probe()) == PEAKS)
    finally:
        release.set()
        thread.join()
    assert became == "ok"


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
    with pytest.warns(CacheFileWarning, match=re.escape(f"{path}: cannot be read")) as warned:
        assert load_or_probe(device, probe, tmp_path) == PEAKS
    # What to do, since it is left as it is: every process pays the probe while it is there.
    assert str(warned[0].message).endswith(
        "repair it, or remove it to have the next probe written there"
    )
    assert path.read_text() == "{not json"
    assert load_or_probe(device, probe, tmp_path) == PEAKS  # warned once, probed once
    assert probe.calls == 1  # type: ignore[attr-defined]


OLDER_PEAKS_FILE = """{
  "device_id": "DEVICE",
  "peaks": {
    "compute_ops_per_s": {"fp32": 89481826920.30739, "fp64": 45214133421.46524},
    "details": {"buffer_bytes": 268435456, "matmul_n": 2048, "reps": 5, "thread_env": {}},
    "memory_bytes_per_s": {"copy": 13591275027.3, "read": 5902859982.3, "write": 4658033183.5},
    "threads": 2
  },
  "schema_version": 1
}
"""
"""A CPU's peaks file as pytest-autotune wrote it before the update-in-place ('add') probe
and the cache levels: the same schema_version as today's."""


def test_a_cpu_peaks_file_of_an_older_probe_is_probed_again_and_rewritten(
    tmp_path: Path,
) -> None:
    """Read as it was, it bounded every size by the memory roof alone and lacked the 'add'
    rate, for good: `cpu(peaks_cache_dir=...)` probes only where the file is missing."""
    device = f"cpu-{uuid.uuid4().hex[:12]}"
    path = peaks_path(tmp_path, device)
    path.parent.mkdir()
    path.write_text(OLDER_PEAKS_FILE.replace("DEVICE", device))
    fresh = Peaks(
        memory={"copy": 2e10, "read": 1e10, "write": 8e9, "add": 2.2e10},
        compute={"fp32": 2e11},
        levels=(MemoryLevel("L1", 48 << 10, {"copy": 1e11, "read": 3e10, "add": 1.1e11}),),
    )
    probe = counting_probe(fresh)

    with pytest.warns(CacheFileWarning, match=re.escape(f"{path}: written by an older")):
        assert load_or_probe(device, probe, tmp_path) == fresh

    assert Peaks.from_json(json.loads(path.read_text())["peaks"]) == fresh
    assert load_or_probe(device, exploding_probe, tmp_path) == fresh


def test_a_probe_that_fails_over_an_older_file_is_not_blamed_on_the_file(tmp_path: Path) -> None:
    # The probe ran inside the file's `try`: its ValueError read "cannot be read", the
    # file's fault, and the probe was run a second time.
    device = f"cpu-{uuid.uuid4().hex[:12]}"
    path = peaks_path(tmp_path, device)
    path.parent.mkdir()
    path.write_text(OLDER_PEAKS_FILE.replace("DEVICE", device))

    def failing() -> Peaks:
        raise ValueError("the probe's own error")

    with (
        pytest.warns(CacheFileWarning, match="written by an older") as said,
        pytest.raises(ValueError, match="the probe's own error"),
    ):
        load_or_probe(device, failing, tmp_path)
    assert not [w for w in said if "cannot be read" in str(w.message)]


@pytest.mark.parametrize(
    ("document", "reason"),
    [
        ({"schema_version": 2, "device_id": "{device}", "peaks": {}}, "schema_version is 2"),
        ({"schema_version": 1, "device_id": "other", "peaks": {}}, "peaks of 'other'"),
        ({"schema_version": 1, "device_id": "{device}", "peaks": {}}, "memory_bytes_per_s"),
        ([], "holds a JSON array, expected a JSON object"),
        ({"name": "another program's"}, "not a peaks file: it holds no schema_version and peaks"),
    ],
)
def test_a_peaks_file_that_is_not_this_devices_is_refused_with_the_reason(
    tmp_path: Path, document: object, reason: str
) -> None:
    device = unique_device()
    if isinstance(document, dict) and document.get("device_id") == "{device}":
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


def test_a_scaling_in_place_rate_raises_the_memory_roof_where_it_is_the_fastest() -> None:
    """`y *= 2` reads and writes one buffer, with no write-allocate of another: from a cache
    it streamed faster than `y += x`, and read 138% of a roof set without it."""
    rates = {"copy": 2.0, "read": 1.0, "add": 3.0, "update": 4.0}
    assert Peaks(memory=rates, compute={}).memory_peak == 4.0
    level = MemoryLevel("L3", 32 << 20, rates)
    assert Peaks(memory={"add": 1.0}, compute={}, levels=(level,)).memory_roof(1 << 20).peak == 4.0


def test_at_least_keeps_the_larger_read_of_each_rate_and_level() -> None:
    low = Peaks(
        memory={"copy": 1e9, "read": 3e9},
        compute={"fp32": 1e10},
        levels=(MemoryLevel("L1", 32768, {"read": 5e9}),),
        threads=2,
    )
    high = Peaks(
        memory={"copy": 2e9, "read": 2e9, "add": 4e9},
        compute={"fp32": 3e10, "fp64": 1e10},
        levels=(MemoryLevel("L1", 32768, {"read": 4e9}), MemoryLevel("L2", 1 << 20, {"read": 6e9})),
        threads=2,
    )
    merged = low.at_least(high)
    assert dict(merged.memory) == {"copy": 2e9, "read": 3e9, "add": 4e9}
    assert dict(merged.compute) == {"fp32": 3e10, "fp64": 1e10}
    assert [(lv.name, dict(lv.rates)) for lv in merged.levels] == [
        ("L1", {"read": 5e9}),
        ("L2", {"read": 6e9}),
    ]
    assert merged.threads == 2


def test_probe_again_keeps_each_larger_rate_and_probes_once_per_process() -> None:
    device = unique_device()
    probes = []

    def probe() -> Peaks:
        probes.append(1)
        return Peaks(memory={"read": 2e9}, compute={"fp32": 1e9})

    low = Peaks(memory={"read": 5e8}, compute={"fp32": 2e9})
    assert load_or_probe(device, lambda: low) is low
    again = probe_again(device, probe)
    assert (again.memory["read"], again.compute["fp32"]) == (2e9, 2e9)
    # A probe costs seconds: a second group above its roof gets the same peaks.
    assert probe_again(device, probe) is again
    assert len(probes) == 1
    assert load_or_probe(device, probe) is again


def test_the_cpu_client_probes_again_unless_its_peaks_come_from_a_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from pytest_autotune.backends import cpu

    # This process's probes of the real CPU are not touched.
    monkeypatch.setattr("pytest_autotune.backends.peaks._measured", {})
    monkeypatch.setattr("pytest_autotune.backends.peaks._probed_again", set())
    reads = iter([1e9, 3e9, 5e9])

    def probe() -> Peaks:
        return Peaks(memory={"read": next(reads)}, compute={"fp32": 1e9})

    client = cpu(probe=probe)
    assert client.peaks().memory["read"] == 1e9
    assert client.probe_peaks_again().memory["read"] == 3e9
    assert client.peaks().memory["read"] == 3e9
    filed = cpu(probe=probe, peaks_cache_dir=tmp_path)
    written = filed.peaks()
    assert filed.probe_peaks_again() is written
