"""The cost of copying a call's inputs (`clone.clone_value`, paid before every call of a
tuning) against the arrays' own copies of the same inputs, side by side in one run.

`clone_value` walks the inputs for arrays whose memory overlaps (`shared_memory`), copies
them as views of one copy where they do, and keeps strides, read-only flags and subclasses;
the bare copy is each array's own `copy()` (a tensor's `clone()`) in a new tuple, which does
none of that, so the ratio is what the walk and the care cost over the copying itself.
Cases: three small NumPy arrays, 200 small arrays in a list, a cache and a view of it, and
where PyTorch is importable the same with CPU tensors.

    PYTHONPATH=. python benchmarks/input_copies.py [--repeat 7] [--number 2000]

Prints each case's best time per copy (of `--repeat` runs of `--number` copies) and the
ratio; it has no target and exits 0.
"""

from __future__ import annotations

import argparse
import functools
import importlib
import timeit
from collections.abc import Callable
from typing import Any

import numpy as np

from pytest_autotune.tune.clone import clone_value


def numpy_cases() -> dict[str, tuple[Any, Callable[[Any], Any]]]:
    cache = np.zeros((64, 64))
    return {
        "3 NumPy arrays": (
            (np.ones(256), np.ones(256), np.ones((16, 16))),
            lambda v: tuple(a.copy() for a in v),
        ),
        "200 NumPy arrays in a list": (
            [np.ones(8) for _ in range(200)],
            lambda v: [a.copy() for a in v],
        ),
        "a NumPy cache and its view": (
            (cache, cache[:, :8]),
            lambda v: (v[0].copy(), v[1].copy()),
        ),
    }


def torch_cases() -> dict[str, tuple[Any, Callable[[Any], Any]]]:
    try:
        torch = importlib.import_module("torch")
    except ImportError:
        return {}
    cache = torch.zeros(64, 64)
    return {
        "3 CPU tensors": (
            (torch.randn(256), torch.randn(256), torch.randn(16, 16)),
            lambda v: tuple(t.clone() for t in v),
        ),
        "a tensor cache and its view": (
            (cache, cache[:, :8]),
            lambda v: (v[0].clone(), v[1].clone()),
        ),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--number", type=int, default=2000)
    args = parser.parse_args(argv)
    print(f"{'case':30s} {'clone_value':>12s} {'bare copies':>12s} {'ratio':>7s}")
    for name, (inputs, bare) in {**numpy_cases(), **torch_cases()}.items():
        times = []
        for copy in (clone_value, bare):
            runs = timeit.repeat(
                functools.partial(copy, inputs), number=args.number, repeat=args.repeat
            )
            times.append(min(runs) / args.number)
        ours, theirs = times
        print(f"{name:30s} {ours * 1e6:9.1f} us {theirs * 1e6:9.1f} us {ours / theirs:6.2f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
