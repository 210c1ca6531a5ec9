"""Where a fresh process's first tuning of a family spends its time (issue 14).

`gpu_family_costs.py` finds the histogram's first tuning at 0.17-0.19x do_bench's wall on
some H200 hosts, against 0.09-0.10x for its later tunings. This script tunes one family
in a fresh process (its candidates called once beforehand, as there: compilation is not
the tuner's), then again, each under the wall clock of the `CudaClient` methods in `WATCHED`
and of its parts' in `PARTS` (the time spent inside each, summed by method: a method that
calls another counts in both), and prints both tunings side by side with each candidate's
samples and the decision's events, then do_bench's wall.

    PYTHONPATH=. python3 benchmarks/gpu_first_tuning.py histogram [--repeat 2]

Run it in several fresh processes: what it looks for is a first-call cost.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import functools
import sys
import time
from collections.abc import Callable, Iterator
from typing import Any

from benchmarks.gpu_common import cupy, write_json
from benchmarks.gpu_family_costs import families
from pytest_autotune import AutotuneConfig, AutotuneOutcome, TunableSet, Tuner
from pytest_autotune.backends import cuda
from pytest_autotune.backends.cuda import CudaClient

WATCHED = ("time", "_time_warm_up", "sync", "peaks", "fingerprint")
PARTS = {
    "_replays": ("of",),
    "_caller": ("caller_costs",),
    "_sampler": ("sample",),
    "_fixed_costs": ("taken",),
}


@contextlib.contextmanager
def clocked(obj: Any, names: tuple[str, ...]) -> Iterator[dict[str, float]]:
    """Wall seconds spent inside each of `obj`'s methods `names` (each name's own total;
    a method that calls another counts in both)."""
    spent: dict[str, float] = collections.defaultdict(float)
    saved = {}
    for name in names:
        method = getattr(obj, name, None)
        if method is None:
            continue
        saved[name] = method

        def wrapper(*args: Any, _m: Callable[..., Any] = method, _n: str = name, **kw: Any) -> Any:
            started = time.perf_counter()
            try:
                return _m(*args, **kw)
            finally:
                spent[_n] += time.perf_counter() - started

        setattr(obj, name, wrapper)
    try:
        yield spent
    finally:
        for name in saved:
            delattr(obj, name)


def tune_once(name: str, tunables: Any, inputs: Any, client: CudaClient) -> dict[str, Any]:
    tuner = Tuner("first-tuning", client.device_id, AutotuneConfig(disable_cache=True))
    with contextlib.ExitStack() as stack:
        spent = {"": stack.enter_context(clocked(client, WATCHED))}
        for part, names in PARTS.items():
            spent[part] = stack.enter_context(clocked(getattr(client, part), names))
        started = time.perf_counter()
        decision = tuner.tune(name, tunables, inputs, client)
        wall = time.perf_counter() - started
    return {
        "wall_ms": wall * 1e3,
        "inside_ms": {
            f"{part}.{k}".lstrip("."): v * 1e3 for part, d in spent.items() for k, v in d.items()
        },
        "winner": decision.fastest_name,
        "samples_us": {
            r.name: [round(s * 1e6, 1) for s in r.samples]
            if isinstance(r, AutotuneOutcome)
            else str(r)
            for r in decision.results.values()
        },
        "events": [str(e) for e in decision.context.events][:40],
    }


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("family")
    parser.add_argument("--repeat", type=int, default=2)
    args = parser.parse_args(argv)
    cp = cupy()
    import triton.testing

    candidates, inputs = families(cp)[args.family]
    for fn in candidates.values():
        fn(*inputs)
    cp.cuda.Device().synchronize()
    triton.testing.do_bench(lambda: None, warmup=1, rep=1)
    tunables = TunableSet.of(lambda *a: args.family, candidates)
    client = cuda()
    runs = [tune_once(args.family, tunables, inputs, client) for _ in range(args.repeat)]
    started = time.perf_counter()
    for fn in candidates.values():
        triton.testing.do_bench(functools.partial(fn, *inputs), return_mode="median")
    do_bench_ms = (time.perf_counter() - started) * 1e3
    for i, run in enumerate(runs):
        inside = ", ".join(f"{k} {v:.1f}" for k, v in sorted(run["inside_ms"].items()))
        wall = run["wall_ms"]
        print(
            f"{args.family} tuning {i}: {wall:.1f} ms ({wall / do_bench_ms:.3f}x"
            f" do_bench's {do_bench_ms:.0f} ms), winner {run['winner']}; inside ms: {inside}"
        )
        for cand, samples in run["samples_us"].items():
            print(f"    {cand}: {samples}")
        for event in run["events"]:
            print(f"    | {event}")
    write_json("first_tuning_" + args.family + ".json", {"runs": runs, "do_bench_ms": do_bench_ms})
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
