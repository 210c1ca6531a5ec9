"""Does a calibration read repeated over a small input follow a cache-resident kernel from one
process to the next (issue 9: an unchanged `np.sort` of 32K floats failed the gate on this
VM in minutes-long slow or fast spells, its single read too short to time)?

Each session is a fresh process that times, interleaved for 2 s, `np.sort` of 32K float32
(128 KiB) and the calibration read of its input made of 1, 4 and 16 reads in a row
(`pytest_autotune.calibration`: `count_nonzero` and a `maximum` reduction), and prints each
one's median. Sessions run one after another for `--seconds`, with `--beside` (a shell
command, such as a test suite) running the whole time when given. The summary gives, over
the sessions, the spread (sd of ln) of the sort's median raw and divided by each read.

    PYTHONPATH=. python3 benchmarks/cpu_read_repeats.py --seconds 360 [--beside "CMD"]
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

CHILD = r"""
import json, statistics, time
import numpy as np
x = np.random.default_rng(0).random(1 << 15, dtype=np.float32)
def reads(k):
    def read():
        for _ in range(k):
            np.count_nonzero(x)
            np.maximum.reduce(x, axis=None)
    return read
fns = {"sort": lambda: np.sort(x), "r1": reads(1), "r4": reads(4), "r16": reads(16)}
for f in fns.values():
    for _ in range(20):
        f()
out = {k: [] for k in fns}
clock = time.perf_counter_ns
end = time.monotonic() + 2.0
while time.monotonic() < end:
    for k, f in fns.items():
        start = clock()
        f()
        out[k].append(clock() - start)
print(json.dumps({k: statistics.median(v) / 1e3 for k, v in out.items()}))
"""


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=float, default=360)
    parser.add_argument("--beside", help="a shell command run beside the sessions")
    args = parser.parse_args(argv)
    beside = (
        subprocess.Popen(args.beside, shell=True, start_new_session=True) if args.beside else None
    )
    sessions = []
    try:
        end = time.monotonic() + args.seconds
        while time.monotonic() < end:
            done = subprocess.run(
                [sys.executable, "-c", CHILD], capture_output=True, text=True, check=True
            )
            sessions.append(json.loads(done.stdout))
            print(done.stdout.strip(), flush=True)
            time.sleep(1)
    finally:
        if beside is not None:  # the command's whole process group, not the shell alone
            os.killpg(beside.pid, signal.SIGKILL)
            beside.wait()
    if len(sessions) < 3:
        print("too few sessions to say")
        return 1
    sort = [math.log(s["sort"]) for s in sessions]
    typical = statistics.median(math.exp(v) for v in sort)
    print(f"{len(sessions)} sessions; sort median {typical:.1f} us")
    print(f"  raw: spread {statistics.stdev(sort):.3f}")
    for read in ("r1", "r4", "r16"):
        ratio = [v - math.log(s[read]) for v, s in zip(sort, sessions, strict=True)]
        print(
            f"  / {read:3s} ({statistics.median(s[read] for s in sessions):6.1f} us):"
            f" spread {statistics.stdev(ratio):.3f}, ratio {math.exp(statistics.median(ratio)):.3f}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
