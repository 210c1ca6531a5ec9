"""Does a small CPU kernel slow down per process or in episodes of time (issue 9)? The
numbers behind `confirmations.CONFIRM_GAP_S` and `CPU_CONFIRMATIONS`.

Two probes of a 64x64 float32 `dot` (7 us a call on the 2-core VM, the gate's raw
`test_matmul`, whose false failures read +23% to +37% in both the gate's measurement and
its re-measurement) and a 256x256 transpose:

- `--windows SECONDS`: one process times both kernels in alternating windows of 0.1 s
  for SECONDS, and prints which windows read 8% or more over the 25th percentile of
  their kernel's windows (S) and the lengths of those slow episodes.
- `--processes N`: N fresh processes, each timing the `dot` `--reads` times (median of
  4,000 calls each), `--gap` seconds apart; a slow state that belongs to the process reads
  slow every time, an episode of the machine comes and goes between them.

    PYTHONPATH=. python3 benchmarks/cpu_episodes.py --windows 60 --processes 40 [--gap 1.5]
        [--reads 2]
"""

from __future__ import annotations

import argparse
import itertools
import subprocess
import sys
import time

import numpy as np

SLOW = 1.08


def kernels() -> tuple[tuple[str, object], ...]:
    rng = np.random.default_rng(2)
    a, b = rng.random((64, 64), dtype=np.float32), rng.random((64, 64), dtype=np.float32)
    t = np.random.default_rng(1).random((256, 256), dtype=np.float32)
    return (
        ("dot 64x64", lambda: np.dot(a, b)),
        ("transpose 256", lambda: np.ascontiguousarray(t.T)),
    )


def window_median(call: object, seconds: float) -> float:
    times = []
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        start = time.perf_counter_ns()
        call()  # type: ignore[operator]
        times.append(time.perf_counter_ns() - start)
    times.sort()
    return times[len(times) // 2] / 1e3


def windows(seconds: float) -> None:
    named = kernels()
    medians: dict[str, list[float]] = {name: [] for name, _ in named}
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        for name, call in named:
            medians[name].append(window_median(call, 0.1))
    for name, values in medians.items():
        usual = sorted(values)[len(values) // 4]
        marks = "".join("S" if v > usual * SLOW else "." for v in values)
        episodes = [len(list(g)) for k, g in itertools.groupby(marks) if k == "S"]
        print(f"{name}: {len(values)} windows, usual {usual:.2f} us, slow (S, >= {SLOW:g}x):")
        print(f"  {marks}")
        print(
            f"  {marks.count('S')} slow windows ({marks.count('S') / len(values):.0%}),"
            f" episodes of {sorted(episodes)} windows"
        )


PROBE = """
import sys, time
import numpy as np
rng = np.random.default_rng(2)
a, b = rng.random((64, 64), dtype=np.float32), rng.random((64, 64), dtype=np.float32)
def median():
    for _ in range(200):
        np.dot(a, b)
    times = []
    for _ in range(4000):
        start = time.perf_counter_ns()
        np.dot(a, b)
        times.append(time.perf_counter_ns() - start)
    times.sort()
    return times[2000] / 1e3
reads = []
for _ in range(int(sys.argv[2])):
    if reads:
        time.sleep(float(sys.argv[1]))
    reads.append(median())
print(" ".join(f"{read:.2f}" for read in reads))
"""


def processes(count: int, gap: float, reads: int) -> None:
    runs = []
    for _ in range(count):
        out = subprocess.run(
            [sys.executable, "-c", PROBE, str(gap), str(reads)],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.split()
        runs.append([float(v) for v in out])
    every = sorted(v for run in runs for v in run)
    usual = every[len(every) // 4]
    marks = ["".join("S" if v > usual * SLOW else "." for v in run) for run in runs]
    print(f"{count} processes, dot 64x64 {reads} times {gap:g} s apart (us):")
    for run, mark in zip(runs, marks, strict=True):
        print(f"  {' '.join(f'{v:.2f}' for v in run)}  {mark}")
    changed = sum(1 for mark in marks if "S" in mark and "." in mark)
    always = sum(1 for mark in marks if "." not in mark)
    print(
        f"  usual {usual:.2f} us (25th percentile); slow (S, >= {SLOW:g}x) in"
        f" {sum(m.count('S') for m in marks)} of {count * reads} reads; processes slow every"
        f" time {always}, slow and not {changed}, never slow {count - always - changed}"
    )
    if reads >= 2:
        after = [m[i + 1] for m in marks for i in range(reads - 1) if m[i] == "S"]
        stayed = after.count("S")
        print(f"  a slow read followed by a slow one {gap:g} s later: {stayed} of {len(after)}")


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--windows", type=float, default=60.0)
    parser.add_argument("--processes", type=int, default=40)
    parser.add_argument("--gap", type=float, default=1.5)
    parser.add_argument("--reads", type=int, default=2)
    args = parser.parse_args(argv)
    if args.windows > 0:
        windows(args.windows)
    if args.processes > 0:
        processes(args.processes, args.gap, args.reads)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
