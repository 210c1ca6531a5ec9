"""Does a new process time an allocating NumPy kernel as a long-lived one does? (issue 9)

The gate confirms a suspected CPU regression by measuring the winner again in fresh
processes (`pytest_autotune.fresh_process`), and a baseline comes from whatever process
ran `--autotune-update`. Both are compared as if the process did not matter. glibc's
malloc makes it matter for kernels that allocate blocks over its mmap threshold: that
threshold starts at 128 KiB in a new process and rises, up to 32 MiB, to the size of each
mmapped block the process frees (and the heap's trim threshold to twice that). A pytest
process that has freed a fixture's 8 MiB array serves a 1 MiB temporary from its heap; a
new one maps and faults it in at every call.

Each kernel is timed in new processes in three states, interleaved round by round (the
order shuffled) so that the machine's phases land on all of them:

- `new`: nothing done first (a fresh-process confirmation today);
- `history`: an 8 MiB array allocated and freed first (a pytest process after a fixture);
- `settled`: a 31 MiB array allocated and freed first (the threshold's ceiling, what
  `settle_allocator` of commit 29b06d6, taken back in the fourteenth session, did).

Each process reports the median per-call time of each kernel (blocks of calls after a
warm-up); the figure per state is the median over rounds, and the ratios to `history`
are printed. Kernels: `x * 2.0` over 512 KiB (the flaky confirmation test's), a softmax
over 1 MiB (temporaries), and as controls a 1 MiB sum (no allocation) and `x * 2.0` over
64 KiB (under the threshold).

    python benchmarks/fresh_malloc.py [--rounds N]
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import subprocess
import sys

STATES = ("new", "history", "settled")

CHILD = r"""
import json, sys, time
import numpy as np

state = sys.argv[1]
if state == "history":
    np.ones(8 << 20, dtype=np.uint8)  # touched, as a fixture's array is
elif state == "settled":
    np.empty(31 << 20, dtype=np.uint8)

def softmax(x):
    e = np.exp(x - x.max())
    return e / e.sum()

x512 = np.random.default_rng(0).random(64 * 1024)
x1m = np.random.default_rng(1).random(128 * 1024)
x64 = np.random.default_rng(2).random(8 * 1024)
kernels = {
    "scale 512 KiB": lambda: x512 * 2.0,
    "softmax 1 MiB": lambda: softmax(x1m),
    "sum 1 MiB (control)": lambda: x1m.sum(),
    "scale 64 KiB (control)": lambda: x64 * 2.0,
}
out = {}
for name, call in kernels.items():
    for _ in range(20):
        call()
    blocks = []
    for _ in range(15):
        start = time.perf_counter()
        for _ in range(20):
            call()
        blocks.append((time.perf_counter() - start) / 20)
    blocks.sort()
    out[name] = blocks[len(blocks) // 2]
print(json.dumps(out))
"""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=20)
    args = parser.parse_args()
    rng = random.Random(0)
    times: dict[str, dict[str, list[float]]] = {state: {} for state in STATES}
    for _ in range(args.rounds):
        order = list(STATES)
        rng.shuffle(order)
        for state in order:
            child = subprocess.run(
                [sys.executable, "-c", CHILD, state], capture_output=True, check=True, text=True
            )
            for name, seconds in json.loads(child.stdout).items():
                times[state].setdefault(name, []).append(seconds)
    names = list(times["new"])
    print(f"{args.rounds} rounds; median over rounds of each process's median per call")
    print(f"{'kernel':<24}" + "".join(f"{s:>10}" for s in STATES) + "   new/hist  settled/hist")
    for name in names:
        med = {state: statistics.median(times[state][name]) for state in STATES}
        print(
            f"{name:<24}"
            + "".join(f"{med[s] * 1e6:>8.1f}us" for s in STATES)
            + f"   {med['new'] / med['history']:>7.2f}x  {med['settled'] / med['history']:>7.2f}x"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
