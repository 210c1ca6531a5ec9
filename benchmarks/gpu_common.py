"""What the GPU benchmark scripts share: the example families at the sizes DESIGN section 8
measures them at, CUDA-graph replay timing, and plain-text tables.

Run the scripts from the repository root with `PYTHONPATH=.` on a machine with CuPy and a
CUDA GPU; `benchmarks/gpu_session.sh` runs them all.
"""

from __future__ import annotations

import importlib
import json
import math
import os
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import ModuleType
from typing import Any

from example_kernels import matmul, saxpy, softmax, transpose
from example_kernels import sum as vector_sum


def cupy() -> Any:
    return gpu_import("cupy")


def gpu_import(name: str) -> Any:
    """Module `name`, or an exit with one line saying what the script needs: run without it
    (on a CPU machine), a script ended in an import's traceback."""
    try:
        return importlib.import_module(name)
    except ImportError as exc:
        script = Path(sys.argv[0]).name
        raise SystemExit(f"{script} needs {name} and a CUDA GPU ({exc})") from None


@dataclass(frozen=True)
class Family:
    """An example family, its problem size, the roof its best candidate is held to, and the
    tolerances its checks use."""

    name: str
    module: ModuleType
    args: tuple[int, ...]
    roof: str
    """"memory" (the engine's memory roof), "read" (the read probe) or "compute" (fp32)."""
    target: float
    tolerances: dict[str, float] = field(default_factory=dict)


FAMILIES = (
    Family("saxpy", saxpy, (1 << 26,), "memory", 0.95),
    Family("sum", vector_sum, (1 << 28,), "read", 0.90),
    Family("transpose", transpose, (8192,), "memory", 0.80, {"rtol": 0.0, "atol": 0.0}),
    Family("softmax", softmax, (65536, 1024), "memory", 0.70),
    Family("matmul", matmul, (4096,), "compute", 0.75, {"rtol": 1e-4, "atol": 1e-5}),
)


SPIN_SOURCE = r"""
extern "C" __global__ void spin(float* out, int iters) {
    float a = threadIdx.x * 1e-3f;
    for (int i = 0; i < iters; ++i) a = fmaf(a, 0.999f, 1e-3f);
    if (a == -1.0f) out[0] = a;
}
"""
"""A kernel of `iters` dependent FMAs per thread that touches no memory: its time follows the
SM clock alone (25,000 iterations over one block per SM take about 50 us on an H200)."""

HISTOGRAM_KERNELS = r"""
extern "C" __global__ void shared256(const unsigned char* d, long long n, unsigned int* bins) {
    __shared__ unsigned int local[256];
    local[threadIdx.x] = 0;
    __syncthreads();
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
         i += (long long)gridDim.x * blockDim.x)
        atomicAdd(&local[d[i]], 1u);
    __syncthreads();
    atomicAdd(&bins[threadIdx.x], local[threadIdx.x]);
}
extern "C" __global__ void global256(const unsigned char* d, long long n, unsigned int* bins) {
    for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < n;
         i += (long long)gridDim.x * blockDim.x)
        atomicAdd(&bins[d[i]], 1u);
}
"""
"""256-bin histograms of bytes with shared-memory and with global atomics (issue 9's SM-bound
kernel), for `gpu_family_costs.py` and the project `gpu_gate_reliability.py` writes."""


def host_reference(module: ModuleType) -> Callable[..., Any]:
    """The family's NumPy reference, called on device inputs (copied to the host)."""
    cp = cupy()

    def reference(*inputs: Any) -> Any:
        return module.reference(
            *(cp.asnumpy(v) if isinstance(v, cp.ndarray) else v for v in inputs)
        )

    return reference


def graph_replay_seconds(
    fn: Callable[..., object], inputs: tuple[Any, ...], estimate: float
) -> float:
    """The average time of one call of `fn(*inputs)` replayed from a CUDA graph: as many
    calls captured as fill about 3 ms (3 to 100), the graph replayed 3 times after one
    warm-up replay, timed with events. Nothing runs between the captured calls, so this is
    the device time of back-to-back calls, the reference the client's samples are held to."""
    cp = cupy()
    launches = min(100, max(3, round(3e-3 / max(estimate, 1e-9))))
    stream = cp.cuda.Stream(non_blocking=True)
    with stream:
        fn(*inputs)
        stream.synchronize()
        stream.begin_capture()
        try:
            for _ in range(launches):
                fn(*inputs)
        finally:
            graph = stream.end_capture()
        graph.launch(stream)
        start, stop = cp.cuda.Event(), cp.cuda.Event()
        start.record(stream)
        for _ in range(3):
            graph.launch(stream)
        stop.record(stream)
        stop.synchronize()
    return float(cp.cuda.get_elapsed_time(start, stop)) / 1e3 / (3 * launches)


def table(header: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    """Rows as aligned plain text; floats to 4 significant digits."""

    def cell(value: object) -> str:
        if isinstance(value, float):
            return "nan" if math.isnan(value) else f"{value:.4g}"
        return str(value)

    cells = [[cell(v) for v in row] for row in [list(header), *rows]]
    widths = [max(len(r[i]) for r in cells) for i in range(len(header))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in cells]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def write_json(name: str, data: Any) -> None:
    """Write `data` to `$OUT/<name>` when `OUT` is set (the device session's result folder)."""
    out = os.environ.get("OUT")
    if out:
        path = Path(out) / name
        path.write_text(json.dumps(data, indent=2, sort_keys=True, default=str) + "\n")
