"""The locks that pause other pytest-xdist workers' tests while one worker measures, across
real processes: each assertion is about the order of events, never about a duration."""

from __future__ import annotations

import multiprocessing
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from pytest_autotune.quiet import (
    Quiet,
    crashed_tests,
    gpu_key,
    note_crashed,
    run_folder,
    tuning_noted,
    tuning_test,
)

SPAWN = multiprocessing.get_context("spawn")


def _hold_a_test(folder: str, gpu: str, held: object, release: object, ended: object) -> None:
    """Another worker's ordinary test: holds its locks until told to stop."""
    with Quiet(Path(folder), gpu=gpu).testing():
        held.set()  # type: ignore[attr-defined]
        release.wait(30)  # type: ignore[attr-defined]
        ended.value = time.monotonic()  # type: ignore[attr-defined]


def _start_test(folder: Path, gpu: str) -> tuple[object, object, object, object]:
    held, release = SPAWN.Event(), SPAWN.Event()
    ended = SPAWN.Value("d", 0.0)
    process = SPAWN.Process(target=_hold_a_test, args=(str(folder), gpu, held, release, ended))
    process.start()
    assert held.wait(30), "the other worker's test never took its locks"
    return process, release, ended, held


def _release_after(release: object, seconds: float) -> None:
    import threading

    threading.Timer(seconds, release.set).start()  # type: ignore[attr-defined]


def test_a_cpu_measurement_starts_only_once_the_other_workers_test_has_ended(
    tmp_path: Path,
) -> None:
    process, release, ended, _ = _start_test(tmp_path, "gpu-1")
    _release_after(release, 0.3)
    with Quiet(tmp_path, gpu="gpu-0").measuring(gpu=False) as unpaused:
        started = time.monotonic()
    process.join(30)  # type: ignore[attr-defined]
    assert unpaused is None
    assert started >= ended.value > 0  # type: ignore[attr-defined]


def test_a_gpu_measurement_waits_for_tests_on_its_gpu_only(tmp_path: Path) -> None:
    other, release_other, ended_other, _ = _start_test(tmp_path, "gpu-1")
    same, release_same, ended_same, _ = _start_test(tmp_path, "gpu-0")
    _release_after(release_same, 0.3)
    with Quiet(tmp_path, gpu="gpu-0").measuring(gpu=True) as unpaused:
        started = time.monotonic()
        still_running = ended_other.value == 0  # type: ignore[attr-defined]
    release_other.set()  # type: ignore[attr-defined]
    for process in (other, same):
        process.join(30)  # type: ignore[attr-defined]
    assert unpaused is None
    assert started >= ended_same.value > 0  # type: ignore[attr-defined]
    # The test on the other GPU ran on through the measurement.
    assert still_running


def test_a_test_waits_while_a_measurement_holds_its_device(tmp_path: Path) -> None:
    quiet = Quiet(tmp_path, gpu="gpu-0")
    with quiet.measuring(gpu=False):
        held, release = SPAWN.Event(), SPAWN.Event()
        ended = SPAWN.Value("d", 0.0)
        process = SPAWN.Process(
            target=_hold_a_test, args=(str(tmp_path), "gpu-0", held, release, ended)
        )
        process.start()
        assert not held.wait(0.5), "a test started during the measurement"
        measured = time.monotonic()
    assert held.wait(30)
    release.set()
    process.join(30)
    assert ended.value > measured


def test_a_measurement_the_others_do_not_make_room_for_goes_on_unpaused(tmp_path: Path) -> None:
    process, release, _, _ = _start_test(tmp_path, "gpu-0")
    try:
        with Quiet(tmp_path, gpu="gpu-0", timeout=0.2).measuring(gpu=False) as unpaused:
            assert unpaused == "they did not pause within 0.2 s"
    finally:
        release.set()  # type: ignore[attr-defined]
        process.join(30)  # type: ignore[attr-defined]


def test_a_measurement_inside_this_workers_own_test_does_not_wait_for_itself(
    tmp_path: Path,
) -> None:
    quiet = Quiet(tmp_path, gpu="gpu-0", timeout=5)
    with quiet.testing(), quiet.measuring(gpu=False) as unpaused:
        assert unpaused is not None and "from inside an ordinary test of this worker" in unpaused
    # And the locks are free again for the next test and measurement.
    with quiet.testing():
        pass
    with quiet.measuring(gpu=False) as unpaused:
        assert unpaused is None


def test_a_folder_that_cannot_be_made_leaves_tests_and_measurements_unpaused(
    tmp_path: Path,
) -> None:
    blocked = tmp_path / "file"
    blocked.write_text("")
    quiet = Quiet(blocked / "locks", gpu="gpu-0", timeout=1)
    with quiet.testing():
        pass
    with quiet.measuring(gpu=True) as unpaused:
        # Said as what it is, not as workers that did not pause.
        assert unpaused is not None and unpaused.startswith(
            f"the lock in {blocked / 'locks'} could not be made: "
        )


@pytest.mark.parametrize(
    ("environ", "key"),
    [
        ({}, "gpu-all"),
        ({"CUDA_VISIBLE_DEVICES": "1"}, "gpu-1"),
        ({"CUDA_VISIBLE_DEVICES": ""}, "gpu-none"),
    ],
)
def test_a_workers_gpu_is_named_by_the_devices_it_was_started_with(
    environ: dict[str, str], key: str
) -> None:
    assert gpu_key(environ) == key


def test_locks_live_beside_the_workers_base_temporary_folders(tmp_path: Path) -> None:
    worker = SimpleNamespace(
        workerinput={"workerid": "gw0"}, option=SimpleNamespace(basetemp=str(tmp_path / "gw0"))
    )
    assert run_folder(worker) == tmp_path / "autotune-quiet"
    assert run_folder(SimpleNamespace(option=SimpleNamespace(basetemp=str(tmp_path)))) is None
    assert (
        run_folder(SimpleNamespace(workerinput={}, option=SimpleNamespace(basetemp=None))) is None
    )


def test_a_database_sqlite_cannot_open_leaves_measurements_unpaused(tmp_path: Path) -> None:
    # SQLite refuses a path over its own limit (a base temporary folder of some 480
    # characters) with sqlite3.OperationalError, no OSError: it errored every test of
    # `-n 2 --autotune`.
    deep = tmp_path
    for part in ("x" * 200, "y" * 200, "z" * 100):
        deep = deep / part
    quiet = Quiet(deep / "autotune-quiet", gpu="gpu-0", timeout=1)
    with quiet.testing():
        pass
    with quiet.measuring(gpu=False) as unpaused:
        assert unpaused is not None
        assert unpaused.startswith(f"the lock in {deep / 'autotune-quiet'} could not be made: ")


def test_a_test_named_by_a_file_names_undecoded_bytes_is_noted_and_read_back_as_it_is(
    tmp_path: Path,
) -> None:
    # `test_café.py` as pytest names it under `LC_ALL=C PYTHONUTF8=0`: noting it raised
    # UnicodeEncodeError out of the worker's tuning and the controller's scheduler.
    nodeid = "test_caf\udcc3\udca9.py::test_sum[n1]"
    with tuning_noted(tmp_path, "test_caf\udcc3\udca9.py::test_sum[n1]", nodeid):
        assert tuning_test(tmp_path, "test_caf\udcc3\udca9.py::test_sum[n1]") == nodeid
    note_crashed(tmp_path, nodeid)
    assert crashed_tests(tmp_path) == {nodeid}
