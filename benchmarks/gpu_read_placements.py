"""Does where a 256 MiB input lands change how fast it is read (issue 14's winners above
their roof under -n 2)? For each of `--placements` fresh inputs, allocated after a padding
allocation of a random size (so each lands elsewhere in the pool and in physical memory),
the median of 50 timed `cupy.sum` calls and of the client's read probe kernel over it.

    PYTHONPATH=. python3 benchmarks/gpu_read_placements.py [--placements 24] [--hold GIB]

`--hold GIB` keeps a second process holding that much device memory for the whole run
(as a second pytest-xdist worker does). Prints each placement's two rates (TB/s) and
their spread.
"""

from __future__ import annotations

import argparse
import functools
import multiprocessing
import random
import statistics
import sys
import time

N = 1 << 26  # float32: 256 MiB, as the sum and softmax examples read


def hold(gib: float, ready: object, stop: object) -> None:
    import cupy as cp

    block = cp.empty(int(gib * (1 << 30)), dtype=cp.uint8)
    block.fill(1)
    cp.cuda.runtime.deviceSynchronize()
    ready.set()  # type: ignore[attr-defined]
    stop.wait()  # type: ignore[attr-defined]
    del block


def median_seconds(cp: object, fn: object, reps: int = 50) -> float:
    start, end = cp.cuda.Event(), cp.cuda.Event()  # type: ignore[attr-defined]
    times = []
    fn()  # type: ignore[operator]
    for _ in range(reps):
        start.record()
        fn()  # type: ignore[operator]
        end.record()
        end.synchronize()
        times.append(cp.cuda.get_elapsed_time(start, end) / 1e3)  # type: ignore[attr-defined]
    return statistics.median(times)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--placements", type=int, default=24)
    parser.add_argument("--hold", type=float, default=0.0)
    args = parser.parse_args(argv)
    holder = None
    if args.hold:
        ctx = multiprocessing.get_context("spawn")
        ready, stop = ctx.Event(), ctx.Event()
        holder = ctx.Process(target=hold, args=(args.hold, ready, stop))
        holder.start()
        ready.wait(120)
    import cupy as cp

    from pytest_autotune.backends.cuda_peaks import _PROBE_SOURCE

    module = cp.RawModule(code=_PROBE_SOURCE)
    read = module.get_function("probe_read")
    sm = cp.cuda.Device().attributes["MultiProcessorCount"]
    out = cp.zeros(1, dtype=cp.float32)
    rng = random.Random(0)
    kept = []
    rows = []
    for i in range(args.placements):
        pad = cp.empty(rng.randrange(1, 2048) * (1 << 20), dtype=cp.uint8)
        x = cp.random.random(N, dtype=cp.float32)
        kept.append(pad)
        n4 = cp.int64(N // 4)
        t_sum = median_seconds(cp, functools.partial(cp.sum, x))
        t_read = median_seconds(cp, functools.partial(read, (sm * 8,), (256,), (x, out, n4)))
        rows.append((x.nbytes / t_sum / 1e12, x.nbytes / t_read / 1e12, x.data.ptr))
        print(
            f"placement {i:2d}: sum {rows[-1][0]:.3f} TB/s, probe read {rows[-1][1]:.3f}"
            f" TB/s, address {x.data.ptr:#x}",
            flush=True,
        )
    sums = [r[0] for r in rows]
    reads = [r[1] for r in rows]
    print(
        f"hold {args.hold:g} GiB: sum {min(sums):.3f}-{max(sums):.3f} TB/s (median"
        f" {statistics.median(sums):.3f}); probe read {min(reads):.3f}-{max(reads):.3f}"
        f" (median {statistics.median(reads):.3f}); sum over read, max"
        f" {max(s / r for s, r in zip(sums, reads, strict=True)):.3f}"
    )
    if holder is not None:
        stop.set()
        holder.join(30)
    return 0


if __name__ == "__main__":
    started = time.perf_counter()
    code = main(sys.argv[1:])
    print(f"{time.perf_counter() - started:.1f} s")
    sys.exit(code)
