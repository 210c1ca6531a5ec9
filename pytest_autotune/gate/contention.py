"""How contended this process's CPUs were while the winner was measured: the 1-minute load
average per CPU, the share of the samples' wall time during which runnable threads waited
for a CPU (Linux's pressure-stall counters, read on both sides of the samples), the CPU time
other processes used during the samples (`neighbours`, from the machine's CPU counters read
on both sides of them), and the CPU time of the process's other threads over the samples'
(`HelperClock`), with the wait for a thread pool an earlier call left spinning to fall quiet
first (`settle_helpers`).

What each of them adds to the noise of a comparison is `gate.conditions`' (the neighbours'
share nothing: it is recorded, and said why there).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

HELPERS_SHARE = 0.1
"""The CPU time of the process's other threads, over the winner's samples' wall time, from
which the winner counts as multithreaded: on the 2-core VM a one-thread NumPy sum reads
0.00, a 256x256 `dot` on two OpenBLAS threads 0.99 alone, 0.47-0.52 beside one spinning
process and 0.28-0.30 beside three (its helper thread still runs its share of the work,
only later; benchmarks/cpu_threads_contention.py)."""

SETTLE_WINDOW_S = 0.01
"""The window over which `settle_helpers` reads whether the other threads fell quiet: a
tenth of OpenBLAS's busy wait after a call (about 0.1 s), so the wait ends soon after it."""

SETTLE_WINDOWS = 3
"""How many quiet windows in a row `settle_helpers` waits for."""

SETTLE_LIMIT_S = 0.5
"""How long `settle_helpers` waits at most: five times OpenBLAS's busy wait, a small part
of the winner's measurement (up to 2 s), for a thread that never falls quiet."""


def load_per_cpu() -> float | None:
    """The 1-minute load average over the CPUs this process may run on; None where the
    platform has no load average (Windows)."""
    try:
        load = os.getloadavg()[0]
    except (AttributeError, OSError):
        return None
    try:
        cpus = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cpus = os.cpu_count() or 1
    return load / max(cpus, 1)


@dataclass(frozen=True, slots=True)
class StallReading:
    """One read of a pressure-stall file: which file, the wall time its runnable threads
    had spent waiting for a CPU (its `some` total, in seconds) and when it was read
    (`time.monotonic` seconds)."""

    source: Path
    stalled: float
    at: float


def stall_files(
    proc: Path = Path("/proc"), cgroup_root: Path = Path("/sys/fs/cgroup")
) -> tuple[Path, ...]:
    """The pressure-stall files that may count this process's waits for a CPU, its own
    cgroup's first (cgroup v2, mounted at `cgroup_root` or, on a hybrid host, under its
    `unified`), then the whole system's."""
    files = []
    try:
        lines = (proc / "self" / "cgroup").read_text().splitlines()
    except (OSError, ValueError):
        lines = []
    for line in lines:
        if line.startswith("0::"):
            group = line[3:].strip().lstrip("/")
            files += [cgroup_root / group / "cpu.pressure"]
            files += [cgroup_root / "unified" / group / "cpu.pressure"]
    return (*files, proc / "pressure" / "cpu")


def _some_total(path: Path) -> float | None:
    """The `total=` of the file's `some` line in seconds; None where the file is missing,
    unreadable or not in the kernel's form."""
    try:
        text = path.read_text()
    except (OSError, ValueError):
        return None
    for line in text.splitlines():
        fields = line.split()
        if fields[:1] != ["some"]:
            continue
        totals = [f[len("total=") :] for f in fields[1:] if f.startswith("total=")]
        if len(totals) == 1 and totals[0].isdigit():
            return int(totals[0]) / 1e6
        return None
    return None


def read_stall(
    files: Sequence[Path], now: Callable[[], float] = time.monotonic
) -> StallReading | None:
    """The first of `files` that reads, None where none does (no PSI: another platform,
    an older kernel, or PSI turned off)."""
    for path in files:
        stalled = _some_total(path)
        if stalled is not None:
            return StallReading(path, stalled, now())
    return None


def stall_reading() -> StallReading | None:
    """This machine's pressure-stall counter now (`stall_files`, `read_stall`)."""
    return read_stall(stall_files())


def pressure_share(before: StallReading | None, after: StallReading | None) -> float | None:
    """The share of the wall time between two reads during which runnable threads waited
    for a CPU, from 0 to 1; None when either read is missing, the two read different
    files, the window is empty or the counter went backwards (a wrap or a reset)."""
    if before is None or after is None or before.source != after.source:
        return None
    window, stalled = after.at - before.at, after.stalled - before.stalled
    if not window > 0 or stalled < 0:
        return None
    return min(1.0, stalled / window)


@dataclass(frozen=True, slots=True)
class CpuReading:
    """One read of the machine's CPU counters: the seconds its CPUs had spent busy (all of
    them together: `/proc/stat`'s first line, idle, I/O wait and steal left out), how many
    CPUs it counts, the CPU time of this process and its children then (`own_cpu_time`),
    and when it was read (`time.monotonic` seconds)."""

    busy: float
    cpus: int
    own: float
    at: float


MIN_NEIGHBOURS_WINDOW_S = 0.25
"""The shortest window over which `neighbours` says anything: the machine's counters tick
100 times a second, so over a shorter one a tick or two per CPU reads as a neighbour."""


def own_cpu_time(proc: Path = Path("/proc")) -> float:
    """The CPU time of this process and of the processes it started, in seconds: a candidate
    that hands its work to a process pool (multiprocessing, joblib's default `loky`, a Dask
    cluster's workers) is measured on its children's CPUs, and `time.process_time` alone
    left them as another process's work: a two-process pool's call read 0.6 of a CPU of
    "other processes" on the 2-core VM, a neighbour of the gate's own making. Children
    reaped already count by `os.times`; live ones, and what they reaped, by their
    `/proc/<pid>/stat` (where `/proc` tells: Linux, which alone reads `neighbours`)."""
    times = os.times()
    return (
        time.process_time()
        + times.children_user
        + times.children_system
        + _live_children(proc, os.getpid())
    )


def _live_children(proc: Path, pid: int) -> float:
    """The CPU time of process `pid`'s live descendants and of those they reaped, in
    seconds; 0 where `/proc` does not list a process's children."""
    try:
        tasks = list((proc / str(pid) / "task").iterdir())
    except OSError:
        return 0.0
    ticks, total = os.sysconf("SC_CLK_TCK"), 0.0
    for task in tasks:
        try:
            children = (task / "children").read_text().split()
        except OSError:
            continue
        for child in children:
            try:
                # The fields after the command's closing parenthesis: utime, stime, cutime
                # and cstime are the 12th to the 15th.
                fields = (proc / child / "stat").read_text().rsplit(")", 1)[1].split()
                total += sum(int(f) for f in fields[11:15]) / ticks
            except (OSError, ValueError, IndexError):
                continue
            total += _live_children(proc, int(child))
    return total


def read_cpus(
    stat: Path = Path("/proc/stat"),
    own: Callable[[], float] = own_cpu_time,
    now: Callable[[], float] = time.monotonic,
) -> CpuReading | None:
    """The machine's CPU counters now; None where there are none (not Linux) or they do
    not read in the kernel's form."""
    try:
        lines = stat.read_text().splitlines()
        ticks = os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, AttributeError):
        return None
    fields = lines[0].split() if lines else []
    if fields[:1] != ["cpu"] or len(fields) < 8 or not all(f.isdigit() for f in fields[1:8]):
        return None
    user, nice, system, _idle, _iowait, irq, softirq = (int(f) for f in fields[1:8])
    cpus = sum(1 for line in lines if line.startswith("cpu") and line[3:4].isdigit())
    busy = (user + nice + system + irq + softirq) / ticks
    return CpuReading(busy, max(cpus, 1), own(), now())


def cpu_reading() -> CpuReading | None:
    """This machine's CPU counters now (`read_cpus`)."""
    return read_cpus()


def cpu_reading_after(before: CpuReading | None) -> CpuReading | None:
    """The machine's CPU counters after a measurement that read them before it (`before`);
    None, at once, without `before` (a GPU's measurement, or no counters). No wait: a
    measurement shorter than `MIN_NEIGHBOURS_WINDOW_S` reads no neighbour, rather than
    holding its locks for a reading the gate only records."""
    return None if before is None else cpu_reading()


def neighbours(before: CpuReading | None, after: CpuReading | None) -> float | None:
    """The share of the other CPUs' time that other processes used between two reads, from
    0 to 1 (on two CPUs, 1.0 is a neighbour that kept the other CPU busy throughout): the
    CPUs' busy time less that of this process and its children (`own_cpu_time`), over the
    wall time and the CPUs but one; None when either read is missing or the window is under
    `MIN_NEIGHBOURS_WINDOW_S`.

    Neither the load average nor the stall counters see such a neighbour beside a gate on
    two CPUs: the measured process and the neighbour are two runnable threads on two CPUs,
    a load of 1.0 per CPU with no wait for a CPU. Yet its memory traffic moves the winner
    by more than the calibration read follows: beside a test suite starting on the 2-core
    VM, an unchanged NumPy sum failed the gate at +76.9% (the read +17%, measured three
    times, no load or stall counted), and beside one process streaming 256 MiB an
    unchanged sum read -30% to +30% calibrated in `-n 2` gates (BENCHMARKS.md,
    2026-12-06, "A neighbour that neither the load nor the stalls show"). A share, not a
    count of CPUs: on a host of many, as a container sees it, the others' work is spread
    over as many CPUs as this one's."""
    if before is None or after is None:
        return None
    window = after.at - before.at
    if not window >= MIN_NEIGHBOURS_WINDOW_S:
        return None
    others = (after.busy - before.busy) - (after.own - before.own)
    return min(1.0, max(0.0, others / window / max(after.cpus - 1, 1)))


@dataclass(slots=True)
class HelperClock:
    """The CPU time this process's other threads used during the calls it wraps, against
    those calls' wall time (`Measurement.helpers`): a call that hands work to a thread
    pool (BLAS, OpenMP) reads about the pool's threads beyond the caller's, a one-thread
    call about 0. It also counts threads that only spin (a BLAS pool waiting for work for a
    while after a multithreaded call), which hold a CPU as much as working ones."""

    busy: float = 0.0
    wall: float = 0.0

    def wrap(self, call: Callable[[], float]) -> Callable[[], float]:
        """`call`, counted."""

        def counted() -> float:
            thread, process, wall = time.thread_time(), time.process_time(), time.perf_counter()
            seconds = call()
            self.wall += time.perf_counter() - wall
            self.busy += (time.process_time() - process) - (time.thread_time() - thread)
            return seconds

        return counted

    def share(self) -> float | None:
        """The other threads' CPU time over the wall time; None before any call."""
        return max(0.0, self.busy / self.wall) if self.wall > 0 else None


def settle_helpers(limit: float = SETTLE_LIMIT_S) -> None:
    """Wait, at most `limit` seconds, until this process's other threads have used under
    `HELPERS_SHARE` of `SETTLE_WINDOWS` windows in a row, so that a `HelperClock` started
    next counts the helpers of the calls it wraps and not those of an earlier call:
    OpenBLAS's threads wait for work busily for about 0.1 s after a matmul, and after the
    CPU peak probe (or a losing BLAS candidate) a one-thread NumPy sum measured next read
    0.2-1.3 of its samples' time as its own helpers on the 2-core VM, which on contended
    CPUs made its comparison "too noisy" at [-99%, +6771%]. Several windows, since a
    spinning thread another process preempts reads quiet for a while. A pool that never
    falls quiet is waited for `limit`, and then counted as before."""
    deadline, quiet = time.perf_counter() + limit, 0
    while quiet < SETTLE_WINDOWS and time.perf_counter() < deadline:
        window = HelperClock()
        window.wrap(_quiet_window)()
        share = window.share()
        quiet = quiet + 1 if share is None or share < HELPERS_SHARE else 0


def _quiet_window() -> float:
    time.sleep(SETTLE_WINDOW_S)
    return 0.0
