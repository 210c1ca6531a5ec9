"""How much CPU time other processes used during a measurement: the machine's CPU counters
(`/proc/stat`) read on both sides of the samples, this process's own time taken out
(`gate.contention.neighbours`), from fake files and clocks."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from pytest_autotune.candidate_measure import measure_candidate
from pytest_autotune.gate.contention import (
    MIN_NEIGHBOURS_WINDOW_S,
    CpuReading,
    _live_children,
    cpu_reading_after,
    neighbours,
    read_cpus,
)
from tests.fakes import FakeClient, FakeClock, candidate

TICKS = os.sysconf("SC_CLK_TCK")


def stat_file(tmp_path: Path, busy_ticks: int) -> Path:
    # user nice system idle iowait irq softirq steal: busy is user+nice+system+irq+softirq.
    path = tmp_path / "stat"
    user = busy_ticks - 30
    path.write_text(
        f"cpu  {user} 10 15 900000 500 2 3 70 0 0\n"
        "cpu0 1 2 3 4 5 6 7 8 0 0\ncpu1 1 2 3 4 5 6 7 8 0 0\nintr 1 2\ncpu_extra 1\n"
    )
    return path


def test_the_reading_is_the_busy_cpu_time_without_idle_wait_or_steal(tmp_path: Path) -> None:
    reading = read_cpus(stat_file(tmp_path, 1000), own=lambda: 2.5, now=lambda: 7.0)
    assert reading == CpuReading(1000 / TICKS, 2, 2.5, 7.0)


@pytest.mark.parametrize(
    "text", ["", "intr 1 2 3\n", "cpu 1 2 3\n", "cpu 1 2 x 4 5 6 7 8\n", "cpu0 1 2 3 4 5 6 7\n"]
)
def test_a_file_not_in_the_kernels_form_gives_no_reading(tmp_path: Path, text: str) -> None:
    (tmp_path / "stat").write_text(text)
    assert read_cpus(tmp_path / "stat") is None
    assert read_cpus(tmp_path / "missing") is None


def test_a_neighbour_that_kept_the_other_of_two_cpus_busy_reads_almost_all_its_time() -> None:
    # Over 2 s the two CPUs were busy 3.9 s, 2 s of them this process's own.
    before, after = CpuReading(100.0, 2, 5.0, 10.0), CpuReading(103.9, 2, 7.0, 12.0)
    assert neighbours(before, after) == pytest.approx(0.95)


def test_on_a_host_of_many_cpus_the_others_work_is_a_share_of_theirs() -> None:
    # A container sees the host's 64 CPUs: 31.5 of the 63 others busy is half of them.
    before, after = CpuReading(0.0, 64, 0.0, 0.0), CpuReading(65.0, 64, 2.0, 2.0)
    assert neighbours(before, after) == pytest.approx(0.5)


def test_no_other_process_reads_none_busy_and_the_share_stays_within_zero_and_one() -> None:
    # The machine's counters tick, this process's own time does not: a tick less reads 0.
    before = CpuReading(100.0, 2, 5.0, 10.0)
    assert neighbours(before, CpuReading(101.99, 2, 7.0, 12.0)) == 0.0
    assert neighbours(before, CpuReading(104.1, 2, 7.0, 12.0)) == 1.0


def test_a_missing_read_or_a_window_too_short_for_the_ticks_says_nothing() -> None:
    reading = CpuReading(100.0, 2, 5.0, 10.0)
    assert neighbours(None, reading) is None
    assert neighbours(reading, None) is None
    # 0.1 s: a tick of each of two CPUs would read as a fifth of the other's time.
    assert neighbours(reading, CpuReading(100.2, 2, 5.1, 10.1)) is None


def test_the_reading_after_a_measurement_waits_for_nothing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The gate records the reading and counts it in no verdict: a measurement shorter than
    # its window reads none, rather than holding its locks up to 0.25 s for it.
    after = CpuReading(100.2, 2, 5.02, 10.02)
    monkeypatch.setattr("pytest_autotune.gate.contention.cpu_reading", lambda: after)
    monkeypatch.setattr("time.sleep", lambda s: pytest.fail(f"slept {s} s"))
    before = CpuReading(100.0, 2, 5.0, 10.0)
    assert cpu_reading_after(before) is after and neighbours(before, after) is None
    assert cpu_reading_after(None) is None
    assert MIN_NEIGHBOURS_WINDOW_S == 0.25


CHILDREN_LISTED = Path(f"/proc/{os.getpid()}/task/{os.getpid()}/children").exists()


@pytest.mark.skipif(not CHILDREN_LISTED, reason="/proc lists no process's children here")
def test_a_child_process_s_cpu_time_is_this_process_s_own_not_a_neighbour_s() -> None:
    # A candidate on a process pool (multiprocessing, joblib's loky) works in its children:
    # counted as other processes, its own pool read as a busy neighbour of the gate.
    spin = (
        "import sys, time\n"
        "while time.process_time() < 0.2: pass\n"
        "print(flush=True)\n"
        "sys.stdin.read()\n"
    )
    before = read_cpus()
    assert before is not None
    child = subprocess.Popen(
        [sys.executable, "-c", spin], stdin=subprocess.PIPE, stdout=subprocess.PIPE
    )
    assert child.stdout is not None and child.stdin is not None
    try:
        child.stdout.readline()  # spun 0.2 s of its CPU, and waits, alive
        alive = read_cpus()
        assert alive is not None and alive.own - before.own >= 0.15
    finally:
        child.communicate()
    reaped = read_cpus()
    assert reaped is not None and reaped.own - before.own >= 0.15


def test_the_children_s_time_counts_their_own_children_live_or_reaped(tmp_path: Path) -> None:
    def process(pid: int, ticks: tuple[int, int, int, int], children: str = "") -> None:
        task = tmp_path / str(pid) / "task" / str(pid)
        task.mkdir(parents=True)
        (task / "children").write_text(children)
        utime, stime, cutime, cstime = ticks
        # pid (comm) state ppid ... : utime is the 14th field, its 12th after the ")".
        fields = ["S", *["0"] * 10, str(utime), str(stime), str(cutime), str(cstime), "20"]
        (tmp_path / str(pid) / "stat").write_text(f"{pid} (a (b)) {' '.join(fields)}\n")

    process(1, (500, 500, 0, 0), "2 ")
    process(2, (10, 20, 30, 40), "3")  # it reaped a child of 70 ticks
    process(3, (1, 2, 0, 0))
    assert _live_children(tmp_path, 1) == pytest.approx(103 / TICKS)
    assert _live_children(tmp_path, 3) == 0.0
    assert _live_children(tmp_path, 99) == 0.0


@pytest.mark.parametrize(
    ("device_id", "reads"), [("cpu-intel-xeon-2t", 2), ("cuda-nvidia-h200", 0)]
)
def test_a_cpu_measurement_reads_the_counters_on_both_sides_and_a_gpus_never(
    monkeypatch: pytest.MonkeyPatch, device_id: str, reads: int
) -> None:
    # The suite's conftest reads no counters; here they are fakes, the second 1 s after the
    # first (no wait), a neighbour busy 0.8 of the other of two CPUs.
    start = time.monotonic() - 2.0
    readings = [CpuReading(10.0, 2, 1.0, start), CpuReading(11.8, 2, 2.0, start + 1.0)]
    monkeypatch.setattr("pytest_autotune.gate.contention.cpu_reading", readings.pop)
    readings.reverse()
    clock = FakeClock()
    client = FakeClient(clock)
    client.device_id = device_id
    measured = measure_candidate(client, candidate(clock, 1e-3, "winner"), "winner", ())
    assert len(readings) == 2 - reads
    assert measured.neighbours == (pytest.approx(0.8) if reads else None)
