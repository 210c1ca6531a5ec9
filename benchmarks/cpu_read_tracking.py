"""Which calibration read follows a streaming kernel from one process to the next, quiet and
beside a neighbour (the gate failed an unchanged 4 MiB sum as +77% beside a starting test
suite on a 2-vCPU AVX-512 Xeon VM, BENCHMARKS.md, 2026-12-05, fortieth session)?

Each session is a fresh process that times `np.sum` of 4 Mi float32 values (16 MiB) and four
reads of the same array, interleaved sample by sample (as the gate times its read beside
the winner), 50 samples each, and prints each one's median:

- `values`: `count_nonzero` of the float values and a `maximum` reduction (the read of
  `pytest_autotune.calibration` version 1, `FLOAT_COUNTS`);
- `bytes`: `count_nonzero` of the same bytes as uint32 and a `maximum` reduction (version 2,
  `CALIBRATION_KIND`, made by `calibration_read` itself);
- `both`: both counts and the `maximum`;
- `maxmin`: a `maximum` and a `minimum` reduction.

`--sessions` sessions run quiet, then as many beside `--beside` (a shell command, by default
a looping `pytest -n 2` of a few of this repository's unit test files, which starts and
stops as a test suite does). The summary gives, for each condition and over both, the
spread (sd of ln) of the sum's median raw and divided by each read, and how far the
neighbour moved each.

    PYTHONPATH=. python3 benchmarks/cpu_read_tracking.py [--sessions 40] [--beside "CMD"]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

CHILD = r"""
import json, statistics, time
import numpy as np
from pytest_autotune.calibration import FLOAT_COUNTS, calibration_read
x = np.random.default_rng(0).random(1 << 22, dtype=np.float32)
u = x.view(np.uint32)
fns = {
    "sum": lambda: np.sum(x),
    "values": calibration_read((x,), 1, FLOAT_COUNTS),
    "bytes": calibration_read((x,), 1),
    "both": lambda: (np.count_nonzero(x), np.count_nonzero(u), np.maximum.reduce(x, axis=None)),
    "maxmin": lambda: (np.maximum.reduce(x, axis=None), np.minimum.reduce(x, axis=None)),
}
for f in fns.values():
    f()
out = {k: [] for k in fns}
clock = time.perf_counter_ns
for _ in range(50):
    for k, f in fns.items():
        start = clock()
        f()
        out[k].append(clock() - start)
print(json.dumps({k: statistics.median(v) / 1e3 for k, v in out.items()}))
"""

READS = ("values", "bytes", "both", "maxmin")

SUITE = (
    f"while true; do {sys.executable} -m pytest -q -p no:randomly -p no:cacheprovider -n 2"
    " tests/unit/test_key.py tests/unit/test_cli.py tests/unit/test_cache.py"
    " >/dev/null 2>&1; done"
)


def sessions(count: int, beside: str | None) -> list[dict[str, float]]:
    """`count` fresh-process sessions, with `beside` running the whole time when given."""
    neighbour = None
    if beside:
        neighbour = subprocess.Popen(beside, shell=True, cwd=ROOT, start_new_session=True)
        time.sleep(3)  # under way before the first session
    done: list[dict[str, float]] = []
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    try:
        for _ in range(count):
            run = subprocess.run(
                [sys.executable, "-c", CHILD], capture_output=True, text=True, check=True, env=env
            )
            done.append(json.loads(run.stdout))
            print(("beside " if beside else "quiet  ") + run.stdout.strip(), flush=True)
            time.sleep(1)
    finally:
        if neighbour is not None:  # the command's whole process group, not the shell alone
            os.killpg(neighbour.pid, signal.SIGKILL)
            neighbour.wait()
    return done


def spread(values: list[float]) -> float:
    return statistics.stdev(math.log(v) for v in values)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sessions", type=int, default=40, help="sessions per condition")
    parser.add_argument("--beside", default=SUITE, help="the neighbour, a shell command")
    args = parser.parse_args(argv)
    if args.sessions < 3:
        parser.error("--sessions: at least 3 per condition")
    runs = {"quiet": sessions(args.sessions, None), "beside": sessions(args.sessions, args.beside)}
    runs["all"] = runs["quiet"] + runs["beside"]
    typical = statistics.median(s["sum"] for s in runs["all"])
    print(f"np.sum of 4 Mi float32, median {typical:.0f} us")
    print("spread (sd of ln) of the sum's median over the sessions, raw and divided by each read:")
    print(f"  {'condition':9s} {'raw':>7s}" + "".join(f" {'/' + r:>8s}" for r in READS))
    for name, rows in runs.items():
        cells = [spread([s["sum"] for s in rows])]
        cells += [spread([s["sum"] / s[r] for s in rows]) for r in READS]
        print(f"  {name:9s}" + "".join(f" {100 * c:7.1f}%" for c in cells))
    print("the neighbour's move of the median (raw, then divided by each read):")
    moves = []
    for key in (None, *READS):

        def ratio(s: dict[str, float], key: str | None = key) -> float:
            return s["sum"] if key is None else s["sum"] / s[key]

        beside = statistics.median(ratio(s) for s in runs["beside"])
        quiet = statistics.median(ratio(s) for s in runs["quiet"])
        moves.append(f"{'raw' if key is None else '/' + key} {100 * (beside / quiet - 1):+.1f}%")
    print("  " + ", ".join(moves))
    reads = ", ".join(f"{r} {statistics.median(s[r] for s in runs['all']):.0f} us" for r in READS)
    print(f"the reads' medians: {reads}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
