"""What the replay fixed cost a client calibrates depends on (issue 14: under `-n 2` on one
GPU, every group of one worker read 6-7 us faster than anywhere else, as a fixed cost read
that much high would make it; a busy neighbour moved it by 0.4 us only,
`gpu_fixed_cost_beside.py`). Here one process calibrates it again and again, each time after
one of these:

- `busy`: 50 ms of a compute-bound kernel just before, so the SM clock is up;
- `idle 0.3 s` and `idle 3 s`: nothing on the GPU for that long before, so the clock may
  have dropped;
- `beside a start`: while another process starts, makes its CUDA context and allocates
  40 GiB, as a second pytest-xdist worker does when the first one tunes.

Each calibration's first event-timed spin (a fixed count of dependent FMAs, so its time
follows the SM clock) is printed beside the fixed cost and the median of 15 samples of a
62 us sum of 2^26 floats.

    PYTHONPATH=. python3 benchmarks/gpu_fixed_cost_idle.py [--rounds 4]

Calls `FixedCosts.replay_fixed_cost` (one measurement of the fixed cost) through the client's
private `_fixed_costs`: a probe of the client, not a use of it. The sum's samples have the
least of the process's measurements taken off (`FixedCosts.taken`).
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time
from typing import Any

import numpy as np

from benchmarks.gpu_common import SPIN_SOURCE

NEIGHBOUR = r"""
import cupy as cp
a = cp.zeros(40 << 30, dtype=cp.uint8)
cp.cuda.runtime.deviceSynchronize()
"""


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=4)
    args = parser.parse_args(argv)
    import cupy as cp

    from pytest_autotune.backends import cuda

    client: Any = cuda()
    kernel = cp.RawKernel(SPIN_SOURCE, "spin")
    out = cp.zeros(1, dtype=cp.float32)
    sms = cp.cuda.Device().attributes["MultiProcessorCount"]
    x = cp.random.random(1 << 26, dtype=cp.float32)
    start, stop = cp.cuda.Event(), cp.cuda.Event()

    def spin(iters: int) -> float:
        start.record()
        kernel((sms,), (128,), (out, np.int32(iters)))
        stop.record()
        stop.synchronize()
        return float(cp.cuda.get_elapsed_time(start, stop)) * 1e3

    def calibrate(label: str) -> None:
        spin_us = spin(2000)  # about 4 us at full clock
        # One measurement, as a first one is
        fixed = client._fixed_costs.replay_fixed_cost(True) * 1e6
        sums = [client.time(cp.sum, (x,)) * 1e6 for _ in range(15)]
        print(
            f"{label:16s} spin {spin_us:6.2f} us  fixed cost {fixed:5.2f} us"
            f"  sum median {statistics.median(sums):6.2f} us (min {min(sums):6.2f})"
        )
        sys.stdout.flush()

    calibrate("first")
    for _ in range(args.rounds):
        spin(25_000_000)  # about 50 ms
        cp.cuda.runtime.deviceSynchronize()
        calibrate("busy")
        time.sleep(0.3)
        calibrate("idle 0.3 s")
        time.sleep(3)
        calibrate("idle 3 s")
        neighbour = subprocess.Popen([sys.executable, "-c", NEIGHBOUR])
        end = time.monotonic() + 4
        while time.monotonic() < end and neighbour.poll() is None:
            calibrate("beside a start")
        neighbour.wait()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
