"""Whether a reference measured beside a caller-timed sample follows the host's slow spells
(issue 14): the twenty-fifth and twenty-sixth sessions' short-call misses are tunings that
a slow spell of the host (every launch loop 1.4-1.7 times slower, for tens of milliseconds
to whole processes) left a device-bound candidate (block1024) ahead of host-bound ones. A
caller-timed sample scored by its enqueue time over a reference's, each measured back to
back, would not move with such a spell where the reference moves with it.

For `--seconds`, cycles of the product's own eager loop (`CallerTiming.eager_loop`: 8 calls
left out, 24 timed, the slowest quarter dropped) over, in turn: the 2048x1024 layernorm's
block256 and block1024 (`gpu_short_calls.families`), an empty kernel launched with no
arguments (the launch path alone), and a Python call that does nothing (the interpreter
alone). Prints, for each series and for block256 over each reference, the spread over the
cycles (coefficient of variation, and the 95th percentile over the median), and, over the
cycles in which block256 read 1.3 times its median or more (a spell), how far each
reference moved with it. A reference that follows the spells shows a ratio whose spread
is well under block256's own. (An empty launch does; scaling the caller timing's loops by
it was then measured on the short calls' tunings, agreed less and cost more, and was taken
out again: BENCHMARKS.md, twenty-sixth session.)

    PYTHONPATH=. python3 benchmarks/host_spells.py [--seconds 40]

Writes `$OUT/host_spells.json` (every cycle) when `OUT` is set.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

from benchmarks.gpu_common import cupy, table, write_json
from benchmarks.gpu_short_calls import families
from pytest_autotune.backends.cuda_timing import (
    EAGER_CALLS,
    EAGER_LEAD,
    _enqueue_each,
    loop_seconds,
)

SPELL = 1.3


def per_call(cp: Any, fn: Callable[[], None]) -> float:
    """Host seconds per call of `fn` in the product's eager loop, from a synchronize."""
    cp.cuda.Device().synchronize()
    for _ in range(EAGER_LEAD):
        fn()
    each = _enqueue_each(time.perf_counter_ns, fn, EAGER_CALLS)
    cp.cuda.Device().synchronize()
    return loop_seconds(each)


def void(_: object) -> None:
    """A call's result dropped, as a caller's loop drops it."""


def spread(values: list[float]) -> tuple[float, float]:
    """Coefficient of variation, and the 95th percentile over the median."""
    ordered = sorted(values)
    p95 = ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))]
    return statistics.pstdev(values) / statistics.mean(values), p95 / statistics.median(values)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=40.0)
    args = parser.parse_args(argv)
    cp = cupy()
    layernorm = families(cp)[0]
    (x,) = layernorm.inputs
    empty = cp.RawKernel('extern "C" __global__ void nothing() {}', "nothing")

    def nothing() -> None:
        pass

    series: dict[str, Callable[[], None]] = {
        "block256": lambda: void(layernorm.candidates["block256"](x)),
        "block1024": lambda: void(layernorm.candidates["block1024"](x)),
        "empty_launch": lambda: void(empty((1,), (1,), ())),
        "python_call": nothing,
    }
    for fn in series.values():
        fn()
    cycles: list[dict[str, float]] = []
    end = time.perf_counter() + args.seconds
    while time.perf_counter() < end:
        cycles.append({name: per_call(cp, fn) for name, fn in series.items()})
    base = statistics.median(c["block256"] for c in cycles)
    spells = [c for c in cycles if c["block256"] >= SPELL * base]
    rows = []
    for name in series:
        cv, p95 = spread([c[name] for c in cycles])
        moved = (
            statistics.median(c[name] for c in spells) / statistics.median(c[name] for c in cycles)
            if spells
            else float("nan")
        )
        rows.append([name, statistics.median(c[name] for c in cycles) * 1e6, cv, p95, moved])
    for ref in ("empty_launch", "python_call"):
        ratios = [c["block256"] / c[ref] for c in cycles]
        cv, p95 = spread(ratios)
        moved = (
            statistics.median(c["block256"] / c[ref] for c in spells) / statistics.median(ratios)
            if spells
            else float("nan")
        )
        rows.append([f"block256 / {ref}", statistics.median(ratios), cv, p95, moved])
    print(f"{len(cycles)} cycles in {args.seconds:g} s; {len(spells)} with block256 at"
          f" {SPELL:g}x its median ({base * 1e6:.2f} us) or more")  # fmt: skip
    print(table(["series", "median (us, or ratio)", "CV", "p95 / median",
                 "in spells / overall"], rows))  # fmt: skip
    write_json("host_spells.json", {"cycles": cycles, "spell_factor": SPELL})
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
