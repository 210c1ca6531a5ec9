"""How long runnable threads waited for a CPU during a measurement: Linux's pressure-stall
counters read on both sides of the samples (`gate.contention`), from fake files."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_autotune.gate.contention import (
    StallReading,
    pressure_share,
    read_stall,
    stall_files,
)

SYSTEM = (
    "some avg10=1.50 avg60=0.80 avg300=0.20 total=7626057353\n"
    "full avg10=0.00 avg60=0.00 avg300=0.00 total=0\n"
)


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def clock(*times: float):  # type: ignore[no-untyped-def]
    values = iter(times)
    return lambda: next(values)


def test_the_reading_is_the_some_total_in_seconds_and_when_it_was_read(tmp_path: Path) -> None:
    system = write(tmp_path / "pressure" / "cpu", SYSTEM)
    reading = read_stall([system], now=clock(12.5))
    assert reading == StallReading(system, 7626.057353, 12.5)


def test_the_processs_own_cgroup_file_comes_before_the_systems(tmp_path: Path) -> None:
    proc, cgroups = tmp_path / "proc", tmp_path / "cgroup"
    write(proc / "self" / "cgroup", "4:memory:/job\n0::/ci/job-7\n")
    files = stall_files(proc, cgroups)
    assert files == (
        cgroups / "ci" / "job-7" / "cpu.pressure",
        cgroups / "unified" / "ci" / "job-7" / "cpu.pressure",
        proc / "pressure" / "cpu",
    )
    write(proc / "pressure" / "cpu", SYSTEM)
    own = write(cgroups / "unified" / "ci" / "job-7" / "cpu.pressure", "some total=2000000\n")
    assert read_stall(files, now=clock(1.0)) == StallReading(own, 2.0, 1.0)


def test_without_a_cgroup_v2_line_only_the_systems_file_is_read(tmp_path: Path) -> None:
    assert stall_files(tmp_path / "proc", tmp_path / "cgroup") == (
        tmp_path / "proc" / "pressure" / "cpu",
    )


def test_no_file_no_reading(tmp_path: Path) -> None:
    # macOS, Windows, a kernel without PSI or with it turned off: the load alone counts.
    assert read_stall([tmp_path / "pressure" / "cpu"]) is None
    assert read_stall([]) is None


@pytest.mark.parametrize(
    "text",
    [
        "",
        "full avg10=0.00 avg60=0.00 avg300=0.00 total=0\n",
        "some avg10=0.00 avg60=0.00 avg300=0.00\n",
        "some avg10=0.00 total=12ab\n",
        "some total=-5\n",
        "some total=1 total=2\n",
        "\n\nsome\n",
        "not a pressure file at all",
    ],
)
def test_a_malformed_file_gives_no_reading_and_the_next_file_is_read(
    tmp_path: Path, text: str
) -> None:
    bad = write(tmp_path / "bad", text)
    assert read_stall([bad]) is None
    good = write(tmp_path / "good", SYSTEM)
    reading = read_stall([bad, good], now=clock(3.0))
    assert reading is not None and reading.source == good


def test_a_directory_where_the_file_should_be_gives_no_reading(tmp_path: Path) -> None:
    (tmp_path / "cpu.pressure").mkdir()
    assert read_stall([tmp_path / "cpu.pressure"]) is None


def reading(stalled: float, at: float, source: str = "/proc/pressure/cpu") -> StallReading:
    return StallReading(Path(source), stalled, at)


def test_the_share_is_the_stalled_time_over_the_wall_time_between_the_reads() -> None:
    assert pressure_share(reading(10.0, 100.0), reading(10.5, 102.0)) == pytest.approx(0.25)
    assert pressure_share(reading(10.0, 100.0), reading(10.0, 102.0)) == 0.0


def test_a_share_is_at_most_the_whole_window() -> None:
    # The counter and the clock are read a moment apart: a little more than the window.
    assert pressure_share(reading(10.0, 100.0), reading(12.1, 102.0)) == 1.0


@pytest.mark.parametrize(
    ("before", "after"),
    [
        (None, reading(1.0, 2.0)),
        (reading(1.0, 2.0), None),
        (None, None),
        (reading(1.0, 2.0, "/a/cpu.pressure"), reading(1.5, 3.0, "/proc/pressure/cpu")),
        (reading(5.0, 2.0), reading(1.0, 3.0)),
        (reading(1.0, 2.0), reading(1.0, 2.0)),
        (reading(1.0, 3.0), reading(1.5, 2.0)),
    ],
    ids=["no-before", "no-after", "neither", "two-files", "went-back", "empty", "clock-back"],
)
def test_no_share_without_two_readings_of_one_counter_over_a_window(
    before: StallReading | None, after: StallReading | None
) -> None:
    assert pressure_share(before, after) is None
