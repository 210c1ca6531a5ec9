"""What a neighbour does to a multithreaded CPU winner (issue 9): the numbers behind
`gate.contention.HELPERS_SHARE`, `THREADS_PRESSURE` and `CONTENDED_THREADS_SIGMA`.

A 256x256 float64 `dot` (OpenBLAS splits it over its threads) and a one-thread NumPy sum
are timed in fresh processes, alone and beside 1..N processes that spin on a CPU each,
with what the gate reads beside a winner's samples: the CPU time of the process's other
threads over the samples' wall time (`HelperClock`) and the share of the samples' wall time
in which runnable threads waited for a CPU (`pressure_share`). Each line is one process:

    PYTHONPATH=. python3 benchmarks/cpu_threads_contention.py [--spinners 0 1 3] [--processes 3]

The ratio of each median to the alone median of the same kernel is printed last: the
gate's rule is only as good as the spread of that ratio beside a neighbour.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time

PROBE = r"""
import json, sys, time
import numpy as np
from pytest_autotune.gate import contention

rng = np.random.default_rng(0)
a, b = rng.random((256, 256)), rng.random((256, 256))
x = rng.random(1 << 18)

def measure(call, n):
    for _ in range(20):
        call()

    def sample():
        start = time.perf_counter()
        call()
        return time.perf_counter() - start

    clock = contention.HelperClock()
    counted = clock.wrap(sample)
    before = contention.stall_reading()
    samples = sorted(counted() for _ in range(n))
    after = contention.stall_reading()
    return {
        "median_s": samples[len(samples) // 2],
        "helpers": clock.share(),
        "pressure": contention.pressure_share(before, after),
    }

# The sum first: right after the dot, the BLAS pool's threads still spin and count.
print(json.dumps({"sum": measure(lambda: x.sum(), 3000), "dot256": measure(lambda: a @ b, 800)}))
"""


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--spinners", type=int, nargs="+", default=[0, 1, 3])
    parser.add_argument("--processes", type=int, default=3)
    args = parser.parse_args(argv)
    medians: dict[tuple[int, str], list[float]] = {}
    for spinners in args.spinners:
        spin = [
            subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(spinners)
        ]
        try:
            time.sleep(1.0)
            for process in range(args.processes):
                out = subprocess.run(
                    [sys.executable, "-c", PROBE], capture_output=True, text=True, check=True
                ).stdout
                for kernel, m in json.loads(out).items():
                    medians.setdefault((spinners, kernel), []).append(m["median_s"])
                    pressure = "-" if m["pressure"] is None else f"{m['pressure']:.2f}"
                    print(
                        f"spinners {spinners} process {process} {kernel:7s}"
                        f" median {m['median_s'] * 1e6:9.1f} us  helpers {m['helpers']:.2f}"
                        f"  pressure {pressure}"
                    )
        finally:
            for p in spin:
                p.kill()
                p.wait()
    for (spinners, kernel), values in sorted(medians.items()):
        alone = medians.get((args.spinners[0], kernel))
        if alone:
            ratios = ", ".join(f"{v / statistics.median(alone):.2f}" for v in values)
            print(f"{kernel} beside {spinners} spinners, over {args.spinners[0]}: {ratios}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
