"""The CPU's measured peaks by memory level (issue 14), and what probing them costs.

    PYTHONPATH=. python3 benchmarks/cpu_peaks.py

Prints each level's capacity (from the OS) and its copy, read, write and add rates, the
DRAM level's, the compute peaks, and the probe's wall time.
"""

from __future__ import annotations

import sys
import time

from pytest_autotune.backends.cpu_peaks import probe_cpu_peaks


def main() -> int:
    started = time.perf_counter()
    peaks = probe_cpu_peaks()
    wall = time.perf_counter() - started
    patterns = ("copy", "read", "write", "add")
    print(f"{'level':<6} {'capacity':>12} " + " ".join(f"{p + ' GB/s':>11}" for p in patterns))
    rows = [(level.name, f"{level.capacity:,}", level.rates) for level in peaks.levels]
    rows.append((peaks.outer_level, "-", peaks.memory))
    for name, capacity, rates in rows:
        cells = " ".join(f"{rates.get(p, float('nan')) / 1e9:11.1f}" for p in patterns)
        print(f"{name:<6} {capacity:>12} {cells}")
    compute = ", ".join(f"{k} {v / 1e9:.1f} GFLOP/s" for k, v in sorted(peaks.compute.items()))
    print(f"compute: {compute}; threads {peaks.threads}; probe wall {wall:.2f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
