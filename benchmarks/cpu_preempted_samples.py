"""CPU samples beside busy neighbours, with and without the retake of preempted samples.

A sample the scheduler preempted (the timing thread switched out against its will, Linux's
`ru_nivcsw`) holds a lost time slice: an 88 us NumPy sum read 1.4 ms beside three spinning
processes on the 2-core VM. `CpuClient` takes such a sample again (`PREEMPTED_RETAKES`);
this script times one candidate with a client that does and one that does not, alternating,
beside `--neighbours` spinning processes, and prints each side's median and how many samples
read over 1.5x it (the outliers a tuning of three or four samples can decide on).

    PYTHONPATH=. python benchmarks/cpu_preempted_samples.py [--samples 400] [--neighbours 3]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time

import numpy as np

from pytest_autotune.backends.cpu import CpuClient


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=400, help="samples per client")
    parser.add_argument("--neighbours", type=int, default=3, help="spinning processes beside")
    parser.add_argument("--elements", type=int, default=1 << 19, help="size of the summed array")
    args = parser.parse_args(argv)
    x = np.random.default_rng(0).random(args.elements)

    def candidate() -> float:
        return float(x.sum())

    clients = {"retaken": CpuClient(), "as taken": CpuClient(retake_preempted=False)}
    samples: dict[str, list[float]] = {name: [] for name in clients}
    spin = ["sh", "-c", "while :; do :; done"]
    neighbours = [subprocess.Popen(spin) for _ in range(args.neighbours)]
    try:
        time.sleep(0.5)
        for i in range(args.samples):
            order = list(clients) if i % 2 else list(clients)[::-1]
            for name in order:
                samples[name].append(clients[name].time(candidate, ()))
    finally:
        for process in neighbours:
            process.kill()
    print(f"{args.neighbours} spinning neighbours, {args.samples} samples a side")
    for name, values in samples.items():
        median = statistics.median(values)
        outliers = sum(value > 1.5 * median for value in values)
        print(
            f"{name:9} median {median * 1e6:8.1f} us, over 1.5x the median {outliers}/"
            f"{len(values)}, largest {max(values) * 1e6:8.0f} us"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
