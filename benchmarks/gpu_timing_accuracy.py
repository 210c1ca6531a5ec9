"""Timing accuracy: the client's median against a CUDA-graph replay of the same call, for
every CuPy candidate of every example family.

Graph replay runs the captured calls back to back with no host in between: the device time
the client means to measure. The client is shown hot (`cold_l2=False`, comparable with the
replay, which also runs on a warm L2) and cold (its default). Target: hot within 3% of the
replay for calls of 20 us or more.

Two more columns say where a difference comes from. "burst" is the client timing N calls
enqueued back to back in one held sample, divided by N: the stream's own per-call cost
without the per-sample one (and a reference for calls that cannot be captured, such as
cuBLAS under CuPy). The first rows time nothing at all, an empty kernel and two empty
kernels: the fixed cost of a sample.
"""

from __future__ import annotations

import statistics
import sys
from collections.abc import Callable
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
EMPTY = r'extern "C" __global__ void empty_kernel() {}'


def median_time(client: Any, fn: Any, inputs: tuple[Any, ...], samples: int = SAMPLES) -> float:
    client.time(fn, inputs)
    return statistics.median(client.time(fn, inputs) for _ in range(samples))


def burst_time(client: Any, fn: Any, inputs: tuple[Any, ...], estimate: float) -> float:
    count = min(50, max(3, round(2e-3 / max(estimate, 1e-9))))

    def burst() -> None:
        for _ in range(count):
            fn(*inputs)

    return median_time(client, burst, (), samples=7) / count


def fixed_costs(hot: CudaClient) -> list[tuple[str, Callable[..., object]]]:
    kernel = cupy().RawKernel(EMPTY, "empty_kernel")

    def nothing() -> None:
        pass

    def one_empty() -> None:
        kernel((1,), (1,), ())

    def two_empty() -> None:
        kernel((1,), (1,), ())
        kernel((1,), (1,), ())

    return [
        ("(no launch)", nothing),
        ("(1 empty kernel)", one_empty),
        ("(2 empty kernels)", two_empty),
    ]


def main() -> int:
    cp = cupy()
    cold = cuda()
    hot = CudaClient(cold_l2=False)
    rows: list[list[object]] = []
    results: dict[str, Any] = {}
    misses = 0
    for label, fn in fixed_costs(hot):
        hot_s = median_time(hot, fn, ())
        graph_s = graph_replay_seconds(fn, (), 1e-6) if label != "(no launch)" else float("nan")
        rows.append(
            [
                label,
                hot_s * 1e6,
                "-",
                burst_time(hot, fn, (), 1e-6) * 1e6,
                graph_s * 1e6,
                "-",
                "-",
                "",
            ]
        )
        results[label] = {"hot_s": hot_s, "graph_s": graph_s}
    for family, module, args in SIZES:
        inputs = module.inputs(*args, xp=cp)
        for name, fn in module.CUPY.items():
            label = f"{family}/{name}"
            try:
                hot_s = median_time(hot, fn, inputs)
                cold_s = median_time(cold, fn, inputs)
                burst_s = burst_time(hot, fn, inputs, hot_s)
            except Exception as error:  # noqa: BLE001 - a candidate that declines this size
                rows.append(
                    [label, "-", "-", "-", "-", "-", "-", f"{type(error).__name__}: {error}"[:60]]
                )
                continue
            try:
                graph_s = graph_replay_seconds(fn, inputs, hot_s)
            except Exception as error:  # noqa: BLE001 - a call that cannot be captured
                results[label] = {
                    "hot_s": hot_s,
                    "cold_s": cold_s,
                    "burst_s": burst_s,
                    "graph_error": str(error),
                }
                rows.append([label, hot_s * 1e6, cold_s * 1e6, burst_s * 1e6, "-", "-", hot_s / burst_s,
                             f"no graph: {type(error).__name__}"])  # fmt: skip
                continue
            ratio = hot_s / graph_s
            judged = graph_s >= MIN_SECONDS
            ok = abs(ratio - 1) <= TOLERANCE
            misses += judged and not ok
            verdict = ("met" if ok else "MISSED") if judged else "(< 20 us)"
            rows.append([label, hot_s * 1e6, cold_s * 1e6, burst_s * 1e6, graph_s * 1e6, ratio,
                         hot_s / burst_s, verdict])  # fmt: skip
            results[label] = {
                "hot_s": hot_s,
                "cold_s": cold_s,
                "burst_s": burst_s,
                "graph_s": graph_s,
            }
        del inputs
        cp.get_default_memory_pool().free_all_blocks()
    header = [
        "call",
        "ours hot us",
        "ours cold us",
        "burst us",
        "graph us",
        "hot/graph",
        "hot/burst",
        "verdict",
    ]
    print(table(header, rows))
    print(
        f"\nlaunch overhead (empty kernel through time, cold client): {cold.launch_overhead * 1e6:.2f} us"
    )
    write_json("timing_accuracy.json", results)
    return 1 if misses else 0


if __name__ == "__main__":
    sys.exit(main())
