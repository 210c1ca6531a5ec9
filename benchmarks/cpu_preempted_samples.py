"""CPU samples beside busy neighbours, with and without the retake of preempted samples.

A sample the scheduler preempted (the timing thread switched out against its will, Linux's
`ru_nivcsw`) holds a lost time slice: an 88 us NumPy sum read 1.4 ms beside three spinning
processes on the 2-core VM. `CpuClient` takes such a sample again (`PREEMPTED_RETAKES`);
this script times one candidate with a client that does and one that does not, alternating,
beside `--neighbours` spinning processes, and prints each side's median and how many samples
read over 1.5x it (the outliers a tuning of three or four samples can decide on).

Then `--tunings` tunings (a fresh `LocalTuner` each, the default config, the shared CPU
client with the retake on and off, alternating) of two candidates that spin on the clock for
1 ms and 3 ms, beside the same neighbours: how often each picks the 1 ms one. A spin on the
clock is the plainest case of a lost time slice read as the candidate's own time.

    PYTHONPATH=. python benchmarks/cpu_preempted_samples.py [--samples 400] [--neighbours 3]
        [--tunings 60]
"""

from __future__ import annotations

import argparse
import collections
import statistics
import subprocess
import sys
import time

import numpy as np

from pytest_autotune import AutotuneConfig, TunableSet, local_tuner
from pytest_autotune.backends import cpu
from pytest_autotune.backends.cpu import CpuClient


def spin(us: float) -> int:
    end = time.perf_counter_ns() + int(us * 1000)
    while time.perf_counter_ns() < end:
        pass
    return 42


def fast(n: int) -> int:
    return spin(n) and n


def slow(n: int) -> int:
    return spin(n * 3) and n


def decisions(tunings: int) -> dict[bool, collections.Counter[str]]:
    """Winners of `tunings` tunings of fast (1 ms) against slow (3 ms), retake on and off."""
    client = cpu()
    wins: dict[bool, collections.Counter[str]] = {
        True: collections.Counter(),
        False: collections.Counter(),
    }
    for i in range(tunings):
        for retake in (True, False) if i % 2 else (False, True):
            client._retake_preempted = retake
            tuner = local_tuner(f"preempted-{i}-{retake}", AutotuneConfig(disable_cache=True))
            tunables = tuner.init(lambda: TunableSet.of(lambda n: n, {"fast": fast, "slow": slow}))
            tuner.execute(client.device_id, client, tunables, (1000,))
            decision = tuner.tuner(client.device_id, client).decision(1000)
            wins[retake][decision.fastest_name if decision else "none"] += 1
    client._retake_preempted = CpuClient()._retake_preempted
    return wins


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=400, help="samples per client")
    parser.add_argument("--neighbours", type=int, default=3, help="spinning processes beside")
    parser.add_argument("--elements", type=int, default=1 << 19, help="size of the summed array")
    parser.add_argument("--tunings", type=int, default=60, help="tunings a side")
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
        wins = decisions(args.tunings)
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
    for retake, label in ((True, "retaken"), (False, "as taken")):
        print(f"{label:9} tunings of 1 ms against 3 ms: {dict(sorted(wins[retake].items()))}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
