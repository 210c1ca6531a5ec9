"""The GPU's peak probes against what they stand for.

Prints every probed peak, the copy probe against a device-to-device `memcpy` of the same
buffers (target: at least 95%), and the fp32 FMA probe against the 63 TFLOP/s measured on
the H200 (target: at least 90%).
"""

from __future__ import annotations

import time

from benchmarks.gpu_common import cupy, table, write_json
from pytest_autotune.backends import cuda

H200_FP32 = 63e12


def memcpy_rate(nbytes: int, reps: int = 10) -> float:
    """Bytes per second (read plus written) of the best of `reps` device-to-device copies."""
    cp = cupy()
    src = cp.ones(nbytes // 4, dtype=cp.float32)
    dst = cp.empty_like(src)
    start, stop = cp.cuda.Event(), cp.cuda.Event()
    best = float("inf")
    for _ in range(reps + 1):
        start.record()
        cp.cuda.runtime.memcpyAsync(
            dst.data.ptr, src.data.ptr, nbytes, cp.cuda.runtime.memcpyDeviceToDevice,
            cp.cuda.get_current_stream().ptr,
        )  # fmt: skip
        stop.record()
        stop.synchronize()
        best = min(best, cp.cuda.get_elapsed_time(start, stop) / 1e3)
    return 2 * nbytes / best


def main() -> None:
    cupy()  # without it, one line that says so rather than the client's traceback
    client = cuda()
    started = time.perf_counter()
    peaks = client.peaks()
    probe_wall = time.perf_counter() - started
    print(f"device {client.device_id}: {client.fingerprint()}")
    print(f"probing took {probe_wall:.2f} s; launch overhead {client.launch_overhead * 1e6:.2f} us")
    rows = [[f"memory {k}", v / 1e12, "TB/s"] for k, v in sorted(peaks.memory.items())]
    rows += [[f"compute {k}", v / 1e12, "TFLOP/s"] for k, v in sorted(peaks.compute.items())]
    print(table(["peak", "value", "unit"], rows))
    print(f"details: {dict(peaks.details)}")

    memcpy = memcpy_rate(int(peaks.details["buffer_bytes"]))
    copy_ratio = peaks.memory["copy"] / memcpy
    fp32_ratio = peaks.compute["fp32"] / H200_FP32
    print()
    print(table(
        ["figure", "ours", "reference", "ratio", "target", "verdict"],
        [
            ["copy probe vs memcpy (TB/s)", peaks.memory["copy"] / 1e12, memcpy / 1e12,
             copy_ratio, ">= 0.95", "met" if copy_ratio >= 0.95 else "MISSED"],
            ["fp32 FMA probe vs 63 TFLOP/s", peaks.compute["fp32"] / 1e12, H200_FP32 / 1e12,
             fp32_ratio, ">= 0.90", "met" if fp32_ratio >= 0.90 else "MISSED"],
        ],
    ))  # fmt: skip
    write_json(
        "peaks.json",
        {
            "device_id": client.device_id,
            "fingerprint": client.fingerprint(),
            "peaks": peaks.to_json(),
            "probe_wall_s": probe_wall,
            "launch_overhead_s": client.launch_overhead,
            "memcpy_bytes_per_s": memcpy,
            "copy_vs_memcpy": copy_ratio,
            "fp32_vs_63T": fp32_ratio,
        },
    )


if __name__ == "__main__":
    main()
