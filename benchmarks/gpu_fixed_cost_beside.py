"""Does another process's GPU work, beside the calibration of a client's replay fixed cost,
make it read high (BENCHMARKS.md, 2026-12-03: under `-n 2` on one GPU, every group of one
worker read 6-7 us less than anywhere else, as a fixed cost read that much high would make
it)? Each of `--processes` fresh processes makes a `CudaClient`, times a 62 us sum of 2^26
floats (its first sample calibrates the fixed cost) and prints the fixed cost and the sum's
median; half of them do it while a second process makes 256 MiB of random numbers and sums
them in a loop, as a second worker's fixtures do.

    PYTHONPATH=. python3 benchmarks/gpu_fixed_cost_beside.py [--processes 6]

Reads `CudaClient._fixed_costs.by_mode` (the fixed cost per mode), a private figure: this
is a probe of the client, not a use of it.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time

CHILD = r"""
import statistics, sys
import cupy as cp
from pytest_autotune.backends import cuda
client = cuda()
x = cp.random.random(1 << 26, dtype=cp.float32)
cp.cuda.runtime.deviceSynchronize()
samples = [client.time(cp.sum, (x,)) for _ in range(30)]
fixed = {str(k): v.taken * 1e6 for k, v in client._fixed_costs.by_mode.items()}
print(f"fixed cost us {fixed}; sum median {statistics.median(samples) * 1e6:.2f} us")
"""

BUSY = r"""
import time
import cupy as cp
end = time.monotonic() + float(__import__("sys").argv[1])
while time.monotonic() < end:
    x = cp.random.random(1 << 26, dtype=cp.float32)
    float(x.sum())
"""


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--processes", type=int, default=6)
    args = parser.parse_args(argv)
    for beside in [False, True] * args.processes:
        busy = None
        if beside:
            busy = subprocess.Popen([sys.executable, "-c", BUSY, "20"])
            time.sleep(3)  # its context made and its loop running
        started = time.perf_counter()
        out = subprocess.run(
            [sys.executable, "-c", CHILD], check=False, capture_output=True, text=True, timeout=120
        )
        took = time.perf_counter() - started
        if busy is not None:
            busy.kill()
            busy.wait()
        said = (out.stdout.strip() or out.stderr.strip().splitlines()[-1])[:300]
        print(f"{'beside a busy process' if beside else 'alone':22s} ({took:.1f} s): {said}")
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
