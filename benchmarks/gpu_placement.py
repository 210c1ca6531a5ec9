"""Does the gate's measurement of a kernel depend on what the process timed before it?

Issue 9, item 4: a 256-bin shared-memory-atomics histogram of 2^26 bytes (8 blocks of 256
threads per SM) read 43.0-43.3 us when timed first in a fresh process and 38.3 us when a
layernorm over 256 MiB had been timed before it. This script times the histogram in fresh
processes, first or after three layernorm candidates, with the gate's precise measurement
(`measure_winner`) on one placement (the old measurement: `client.time` on the inputs) and
over the placements of `CudaClient.placed_sampler` (the new one), side by side.

    PYTHONPATH=. python3 benchmarks/gpu_placement.py OUT_DIR [--runs 4]

Writes OUT_DIR/gpu_placement.json and prints one line per process, then per measurement
the spread of the medians over all processes and the ratio of the medians "after" over
"first". Success: the new measurement's "after/first" ratio within about 2% of 1.00 and its
spread over processes below the old one's.
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

HISTOGRAM = r"""
extern "C" __global__ void histogram256(const unsigned char* data, long long n,
                                        unsigned int* bins) {
    __shared__ unsigned int local[256];
    local[threadIdx.x] = 0;
    __syncthreads();
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
         i += (long long)gridDim.x * blockDim.x) {
        atomicAdd(&local[data[i]], 1u);
    }
    __syncthreads();
    atomicAdd(&bins[threadIdx.x], local[threadIdx.x]);
}
"""

BYTES = 1 << 26
LAYERNORM_BYTES = 256 << 20


def histogram_of(cp: Any, client: Any) -> Callable[[Any], Any]:
    """The issue's histogram: 8 blocks of 256 threads per SM, a fresh output per call."""
    kernel = cp.RawModule(code=HISTOGRAM).get_function("histogram256")
    grid = (8 * client.sm_count,)

    def histogram(x: Any) -> Any:
        bins = cp.zeros(256, dtype=cp.uint32)
        kernel(grid, (256,), (x, cp.int64(x.size), bins))
        return bins

    return histogram


def time_layernorms(cp: Any, client: Any) -> None:
    """The issue's history: three layernorm candidates timed ten times each over 256 MiB,
    their inputs freed after."""
    rows = cp.random.standard_normal((LAYERNORM_BYTES // 4 // 4096, 4096), dtype=cp.float32)

    def two_pass(x: Any) -> Any:
        mean = x.mean(axis=1, keepdims=True)
        return (x - mean) / cp.sqrt(((x - mean) ** 2).mean(axis=1, keepdims=True) + 1e-5)

    def with_var(x: Any) -> Any:
        return (x - x.mean(axis=1, keepdims=True)) / cp.sqrt(x.var(axis=1, keepdims=True) + 1e-5)

    def with_std(x: Any) -> Any:
        return (x - x.mean(axis=1, keepdims=True)) / (x.std(axis=1, keepdims=True) + 1e-5)

    for candidate in (two_pass, with_var, with_std):
        for _ in range(10):
            client.time(candidate, (rows,))
    del rows


def one_process(order: str, method: str) -> dict[str, Any]:
    import cupy as cp

    from pytest_autotune.backends import cuda
    from pytest_autotune.gate import measure_winner

    data = cp.random.randint(0, 256, BYTES).astype(cp.uint8)  # made first, as at import
    client = cuda()
    histogram = histogram_of(cp, client)
    if order == "after":
        time_layernorms(cp, client)
    inputs = (data,)
    client.time(histogram, inputs)  # the gate's warm-up
    sample = (
        client.placed_sampler(histogram, inputs)
        if method == "placed"
        else (lambda: client.time(histogram, inputs))
    )
    measurement = measure_winner(sample, time_cap=1.0)
    return {
        "order": order,
        "method": method,
        "median_us": measurement.median * 1e6,
        "rse": measurement.se_log,
        "samples": len(measurement.samples),
        "fixed_cost_us": {str(k): v.taken * 1e6 for k, v in client._fixed_costs.by_mode.items()},
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--runs", type=int, default=4)
    parser.add_argument("--child", nargs=2, metavar=("ORDER", "METHOD"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(one_process(*args.child)))
        return
    args.out.mkdir(parents=True, exist_ok=True)
    results = []
    for run in range(args.runs):
        for method in ("one placement", "placed"):
            for order in ("first", "after"):
                child = [sys.executable, __file__, str(args.out), "--child", order, method]
                done = subprocess.run(child, capture_output=True, text=True, check=False)
                if done.returncode != 0:
                    print(f"run {run} {method} {order}: failed\n{done.stderr[-2000:]}")
                    continue
                result = json.loads(done.stdout.strip().splitlines()[-1])
                result["run"] = run
                results.append(result)
                print(
                    f"run {run}  {method:13}  {order:5}  median {result['median_us']:7.2f} us"
                    f"  rse {result['rse'] * 100:.2f}%  n={result['samples']}"
                    f"  fixed cost {result['fixed_cost_us']}"
                )
    (args.out / "gpu_placement.json").write_text(json.dumps(results, indent=2) + "\n")
    print()
    for method in ("one placement", "placed"):
        first = [r["median_us"] for r in results if r["method"] == method and r["order"] == "first"]
        after = [r["median_us"] for r in results if r["method"] == method and r["order"] == "after"]
        if not first or not after:
            continue
        every = first + after
        print(
            f"{method:13}  first {min(first):.2f}-{max(first):.2f} us"
            f"  after {min(after):.2f}-{max(after):.2f} us"
            f"  after/first {statistics.median(after) / statistics.median(first):.3f}"
            f"  spread over processes {(max(every) / min(every) - 1) * 100:.1f}%"
        )


if __name__ == "__main__":
    main()
