"""Where does a process's history act on a kernel's time? (issue 9, item 4, continued)

`gpu_placement.py` read the shared-atomics histogram 4% faster in a process that had timed
three layernorm candidates before the histogram's first capture, and sampling over
placements of its inputs kept the 4%; `gpu_history.py`, whose interventions came after
the first capture, found nothing. So the history acts on what a capture made after it
gets. This script tells which part of a capture, with three kinds of fresh processes:

- `recapture`: capture and measure the histogram (A); time the layernorms; measure A
  again, then capture the same kernel anew (B, a new function, so a new graph and pool)
  and measure it; then empty CuPy's pool and the client's graphs and capture it a third
  time (C). If B differs from A while A stays put, the history acts at capture time.
- `offsets`: the histogram writing its 256 bins into views of one large buffer at
  offsets from 0 to 31 KiB in 1 KiB steps and from 1 to 16 MiB, each offset its own
  capture, timed in one process: if the time depends on where the bins lie (the L2
  slice that serves their global atomics), it shows here, with everything else equal.
- `inputs`: the bins fixed, the input copied to 8 fresh placements: the same for the
  input.

    PYTHONPATH=. python3 benchmarks/gpu_capture_history.py OUT_DIR [--runs 2]

Writes OUT_DIR/gpu_capture_history.json and prints each process's figures.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from gpu_placement import BYTES, HISTOGRAM, histogram_of, time_layernorms

SAMPLES = 15
KIB_OFFSETS = [k << 10 for k in range(32)]
MIB_OFFSETS = [m << 20 for m in range(1, 17)]


def median_us(client: Any, fn: Callable[..., Any], inputs: tuple[Any, ...]) -> float:
    client.time(fn, inputs)  # the capture and its warm-up
    return statistics.median(client.time(fn, inputs) for _ in range(SAMPLES)) * 1e6


def recapture(cp: Any, client: Any, data: Any) -> dict[str, float]:
    first = histogram_of(cp, client)
    out = {"A": median_us(client, first, (data,))}
    time_layernorms(cp, client)
    out["A after layernorms"] = median_us(client, first, (data,))
    out["B captured after layernorms"] = median_us(client, histogram_of(cp, client), (data,))
    client._replays._replays.clear()
    cp.get_default_memory_pool().free_all_blocks()
    out["C captured after emptying the pools"] = median_us(
        client, histogram_of(cp, client), (data,)
    )
    out["A recaptured"] = median_us(client, histogram_of(cp, client), (data,))
    return out


def into(cp: Any, client: Any) -> Callable[[Any, Any], None]:
    """The histogram writing into bins given by the caller."""
    kernel = cp.RawModule(code=HISTOGRAM).get_function("histogram256")
    grid = (8 * client.sm_count,)

    def histogram(x: Any, bins: Any) -> None:
        kernel(grid, (256,), (x, cp.int64(x.size), bins))

    return histogram


def offsets(cp: Any, client: Any, data: Any) -> dict[str, float]:
    fn = into(cp, client)
    buffer = cp.zeros((MIB_OFFSETS[-1] + (1 << 20)) // 4, dtype=cp.uint32)
    out = {}
    for offset in KIB_OFFSETS + MIB_OFFSETS:
        bins = buffer[offset // 4 : offset // 4 + 256]
        out[f"bins at +{offset >> 10} KiB"] = median_us(client, fn, (data, bins))
    return out


def inputs(cp: Any, client: Any, data: Any) -> dict[str, float]:
    fn = into(cp, client)
    bins = cp.zeros(256, dtype=cp.uint32)
    copies = [data] + [data.copy() for _ in range(7)]
    return {f"input copy {i}": median_us(client, fn, (copy, bins)) for i, copy in enumerate(copies)}


KINDS = {"recapture": recapture, "offsets": offsets, "inputs": inputs}


def one_process(kind: str) -> dict[str, float]:
    import cupy as cp

    from pytest_autotune.backends import cuda

    data = cp.random.randint(0, 256, BYTES).astype(cp.uint8)  # made first, as at import
    client = cuda()
    return KINDS[kind](cp, client, data)


def summary(figures: dict[str, float]) -> str:
    values = list(figures.values())
    low, high = min(values), max(values)
    return f"min {low:.2f} us, max {high:.2f} us, max/min {high / low:.3f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--runs", type=int, default=2)
    parser.add_argument("--child", choices=sorted(KINDS), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(one_process(args.child)))
        return
    args.out.mkdir(parents=True, exist_ok=True)
    results: list[dict[str, Any]] = []
    for run in range(args.runs):
        for kind in KINDS:
            child = [sys.executable, __file__, str(args.out), "--child", kind]
            done = subprocess.run(child, capture_output=True, text=True, check=False)
            if done.returncode != 0:
                print(f"run {run} {kind}: failed\n{done.stderr[-2000:]}")
                continue
            figures = json.loads(done.stdout.strip().splitlines()[-1])
            results.append({"run": run, "kind": kind, "figures": figures})
            print(f"run {run}  {kind}: {summary(figures)}")
            for label, value in figures.items():
                print(f"    {label:40} {value:8.2f} us")
    (args.out / "gpu_capture_history.json").write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()
