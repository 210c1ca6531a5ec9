"""Timing accuracy: the client's median against a CUDA-graph replay of the same call, for
every CuPy candidate of every example family.

Graph replay runs the captured calls back to back with no host in between: the device time
the client means to measure. The client is shown hot (`cold_l2=False`, comparable with the
replay, which also runs on a warm L2) and cold (its default). Target: hot within 3% of the
replay for calls of 20 us or more.
"""

from __future__ import annotations

import statistics
import sys
from typing import Any

from benchmarks.gpu_common import cupy, graph_replay_seconds, table, write_json
from example_kernels import matmul, saxpy, softmax, transpose
from example_kernels import sum as vector_sum
from pytest_autotune.backends import CudaClient, cuda

SIZES = (
    ("saxpy", saxpy, (1 << 26,)),
    ("sum", vector_sum, (1 << 26,)),
    ("transpose", transpose, (8192,)),
    ("softmax", softmax, (65536, 1024)),
    ("matmul", matmul, (2048,)),
)
SAMPLES = 15
TOLERANCE = 0.03
MIN_SECONDS = 20e-6


def median_time(client: Any, fn: Any, inputs: tuple[Any, ...]) -> float:
    client.time(fn, inputs)
    return statistics.median(client.time(fn, inputs) for _ in range(SAMPLES))


def main() -> int:
    cp = cupy()
    cold = cuda()
    hot = CudaClient(cold_l2=False)
    rows: list[list[object]] = []
    results: dict[str, Any] = {}
    misses = 0
    for family, module, args in SIZES:
        inputs = module.inputs(*args, xp=cp)
        for name, fn in module.CUPY.items():
            label = f"{family}/{name}"
            try:
                hot_s = median_time(hot, fn, inputs)
                cold_s = median_time(cold, fn, inputs)
                graph_s = graph_replay_seconds(fn, inputs, hot_s)
            except Exception as error:  # noqa: BLE001 - one candidate that cannot be captured
                rows.append(
                    [label, "-", "-", "-", "-", "-", f"{type(error).__name__}: {error}"[:60]]
                )
                results[label] = {"error": f"{type(error).__name__}: {error}"}
                continue
            ratio = hot_s / graph_s
            judged = graph_s >= MIN_SECONDS
            ok = abs(ratio - 1) <= TOLERANCE
            misses += judged and not ok
            verdict = ("met" if ok else "MISSED") if judged else "(< 20 us)"
            rows.append(
                [label, hot_s * 1e6, cold_s * 1e6, graph_s * 1e6, ratio, cold_s / graph_s, verdict]
            )
            results[label] = {"hot_s": hot_s, "cold_s": cold_s, "graph_s": graph_s}
    print(
        table(
            [
                "call",
                "ours hot us",
                "ours cold us",
                "graph us",
                "hot/graph",
                "cold/graph",
                "verdict",
            ],
            rows,
        )
    )
    print(f"\nlaunch overhead (empty kernel through time): {cold.launch_overhead * 1e6:.2f} us")
    write_json("timing_accuracy.json", results)
    return 1 if misses else 0


if __name__ == "__main__":
    sys.exit(main())
