"""Output checks of Python containers: `compare_outputs` against Python's own `==`.

A pure-Python candidate returns lists, tuples and dicts; the check compares each with the
reference within the tolerances. Python's `==` of the same two values (exact, no
tolerance, no message) is the floor any comparison of them pays, timed beside it in the
same run, so the ratio says what the tolerances and the walk cost on this machine.

    PYTHONPATH=. python benchmarks/compare_containers.py [--size N] [--reps R]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

from pytest_autotune.tune.comparison import compare_outputs


def shapes(n: int) -> dict[str, Callable[[], Any]]:
    return {
        "list of floats": lambda: [i * 0.5 for i in range(n)],
        "list of (int, float) rows": lambda: [(i, i * 0.5) for i in range(n)],
        "list of 3-float lists": lambda: [[i * 0.5, i * 0.25, 1.0] for i in range(n)],
        "dict of floats": lambda: {f"k{i}": i * 0.5 for i in range(n)},
        "dict of (float, float)": lambda: {i: (i * 0.5, -i * 0.5) for i in range(n)},
        "list of complex": lambda: [complex(i * 0.5, -i) for i in range(n)],
        "list of strings": lambda: [f"w{i}" for i in range(n)],
        "list of bools": lambda: [i % 3 == 0 for i in range(n)],
    }


def best_of(reps: int, fn: Callable[[], object]) -> float:
    times = []
    for _ in range(reps):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=100_000, help="elements per container")
    parser.add_argument("--reps", type=int, default=5, help="repetitions (median taken)")
    args = parser.parse_args(argv)
    print(f"python {sys.version.split()[0]}, {args.size} elements, median of {args.reps}")
    print(f"{'container':28}{'compare_outputs':>17}{'==':>10}{'ratio':>8}{'ns/elem':>9}")
    for name, make in shapes(args.size).items():
        reference, actual = make(), make()
        if compare_outputs(reference, actual) is not None:
            raise AssertionError(f"{name}: equal values judged different")
        ours = best_of(args.reps, lambda r=reference, a=actual: compare_outputs(r, a))
        floor = best_of(args.reps, lambda r=reference, a=actual: r == a)
        print(
            f"{name:28}{ours * 1e3:14.1f} ms{floor * 1e3:7.2f} ms{ours / floor:7.0f}x"
            f"{ours / args.size * 1e9:9.0f}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
