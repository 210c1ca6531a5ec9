"""Tuning cost on every GPU family (issue 14): ours against `triton.testing.do_bench`.

Each example family at the size its benchmark uses (`gpu_common.FAMILIES`), and a 256-bin
histogram of 2**26 bytes whose candidates span 400x: shared-memory atomics (8 blocks of
256 threads per SM), global atomics, `cupy.bincount`, and one block of global atomics, the
hopeless candidate of issue 14 (milliseconds against tens of microseconds). Each family is
tuned `--runs` times by a fresh `Tuner` with the default settings (the hopeless cut on),
and every candidate is timed by `do_bench` once, in the same process, after one call of
each (compilation) and one do_bench call (torch's start) outside the timing.

The first tuning of a family is what a fresh session pays (the client has timed none of
the candidates; their kernels are compiled), the later ones what a warm client pays. A
family meets the target when both its first and its median tuning wall are at most 1/10
of do_bench's wall over its candidates, and every tuning's winner is do_bench's, or
within `SAME` of it by do_bench's own clock (two candidates that close are the same speed to both).
The "one call each" column is the floor of any tuner that times every candidate at least
once: one call of each (do_bench's median) over do_bench's wall. Triton's do_bench calls a
candidate of 100 ms or more 8 times (once, 5 times to estimate, then at least one warm-up
and one timed call), so where such a candidate dominates a family the floor nears 1/8.

The hopeless cut's margin on the GPU for calls of 2 ms or more (`cuda_client.HOPELESS_FACTOR`, 4)
is safe where no first sample reads that far over its candidate's speed. So after the
timed tunings each family is tuned once more with the cut off (`hopeless_factor=1e9`, not
timed) by a fresh client, so that every candidate's first sample is its first call and at
least `min_samples` samples follow, and the script prints the first-sample inflation: the
largest ratio of a candidate's first sample over its final best, over that tuning and the
timed ones (candidates of two samples or more). It also prints how far the candidates the
cut dropped were from do_bench's fastest, by do_bench's clock (the cut must never drop
one within `speed_factor`).

`--first NAME` tunes that family before the others (by default the histogram comes
last); `--client-per-family` gives each family a fresh `CudaClient` instead of the
process's shared one, so that no family's tuning meets another's graphs, pools and
replay cache: together they tell whether a family's first tuning pays for the families
tuned before it in the same process (the histogram's first tuning read 0.186x after the
others, against 0.12x in a fresh process that tunes it alone). `--replay-cache N` keeps N
captured calls per client instead of `cuda_graphs.REPLAY_CACHE_SIZE`: with room for every
family's graphs, no capture evicts (and frees the memory pool of) an older one.

    PYTHONPATH=. python3 benchmarks/gpu_family_costs.py [--runs 3] [--first histogram]
        [--client-per-family] [--replay-cache 64]

Prints a table and writes `$OUT/family_costs.json` when `OUT` is set (the options named in
its file name). Exit code 1 when a family misses the target.
"""

from __future__ import annotations

import argparse
import functools
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

from benchmarks.gpu_common import FAMILIES, HISTOGRAM_KERNELS, cupy, table, write_json
from pytest_autotune import AutotuneConfig, AutotuneOutcome, BenchConfig, TunableSet, Tuner
from pytest_autotune.backends import CudaClient, cuda, cuda_graphs
from pytest_autotune.tune.decision import TuneDecision
from pytest_autotune.tune.log import Eliminated

SAME = 1.03
TARGET = 0.1


def histogram_family(cp: Any) -> tuple[dict[str, Callable[..., Any]], tuple[Any, ...]]:
    module = cp.RawModule(code=HISTOGRAM_KERNELS)
    sms = cp.cuda.Device().attributes["MultiProcessorCount"]

    def launch(name: str, grid: int) -> Callable[[Any], Any]:
        fn = module.get_function(name)

        def histogram(data: Any) -> Any:
            bins = cp.zeros(256, dtype=cp.uint32)
            fn((grid,), (256,), (data, cp.int64(data.size), bins))
            return bins

        return histogram

    def bincount(data: Any) -> Any:
        return cp.bincount(data, minlength=256).astype(cp.uint32)

    candidates = {
        "shared_atomics": launch("shared256", 8 * sms),
        "global_atomics": launch("global256", 8 * sms),
        "bincount": bincount,
        "one_block": launch("global256", 1),
    }
    data = cp.random.randint(0, 256, 1 << 26).astype(cp.uint8)
    return candidates, (data,)


def families(cp: Any) -> dict[str, tuple[dict[str, Callable[..., Any]], tuple[Any, ...]]]:
    out = {f.name: (dict(f.module.CUPY), tuple(f.module.inputs(*f.args, xp=cp))) for f in FAMILIES}
    out["histogram"] = histogram_family(cp)
    return out


NO_CUT = BenchConfig(hopeless_factor=1e9)


def first_sample_inflation(decisions: list[TuneDecision]) -> tuple[float, str]:
    """The largest first sample over final best of any candidate with two samples or more,
    and which candidate it was."""
    ratios = [
        (r.samples[0] / r.best, r.name)
        for d in decisions
        for r in d.results.values()
        if isinstance(r, AutotuneOutcome) and len(r.samples) >= 2
    ]
    return max(ratios) if ratios else (1.0, "-")


def hopeless_cuts(decisions: list[TuneDecision]) -> set[str]:
    return {
        e.name
        for d in decisions
        for e in d.context.events
        if isinstance(e, Eliminated) and e.reason.startswith("hopeless")
    }


def measure(
    name: str,
    candidates: dict[str, Callable[..., Any]],
    inputs: tuple[Any, ...],
    runs: int,
    client: CudaClient,
) -> dict[str, Any]:
    import triton.testing  # only the GPU benchmarks need Triton (and torch)

    cp = cupy()
    for fn in candidates.values():
        fn(*inputs)
    cp.cuda.Device().synchronize()
    tunables = TunableSet.of(lambda *args: name, candidates)
    walls, winners, samples, decisions = [], [], {}, []
    for _ in range(runs):
        tuner = Tuner("family-costs", client.device_id, AutotuneConfig(disable_cache=True))
        started = time.perf_counter()
        decision = tuner.tune(name, tunables, inputs, client)
        walls.append(time.perf_counter() - started)
        winners.append(decision.fastest_name)
        decisions.append(decision)
        samples = {
            r.name: len(r.samples) if isinstance(r, AutotuneOutcome) else str(r)
            for r in decision.results.values()
        }
    # A client of its own, so that every candidate's first timing is its first call, as in
    # a first tuning (the cut ones included, whose one sample there is that call).
    uncut = Tuner("family-costs", client.device_id, AutotuneConfig(disable_cache=True))
    inflation, inflated = first_sample_inflation(
        [*decisions, uncut.tune(name, tunables, inputs, CudaClient(), NO_CUT)]
    )
    cut = hopeless_cuts(decisions)
    do_bench_ms, started = {}, time.perf_counter()
    for label, fn in candidates.items():
        do_bench_ms[label] = triton.testing.do_bench(
            functools.partial(fn, *inputs), return_mode="median"
        )
    do_bench_wall = time.perf_counter() - started
    best = min(do_bench_ms.values())
    same = all(do_bench_ms[w] <= SAME * best for w in winners)
    # The least any tuner pays that times each candidate once (do_bench's median call each):
    # do_bench calls a candidate of 100 ms or more 8 times (1 + 5 to estimate + 1 + 1), so a
    # family its slowest candidate dominates cannot be tuned under about 1/8 of its wall.
    floor = sum(do_bench_ms.values()) / 1e3 / do_bench_wall
    ratio = statistics.median(walls) / do_bench_wall
    return {
        "first_sample_inflation": inflation,
        "most_inflated": inflated,
        "hopeless_cuts": sorted(cut),
        "nearest_cut_by_do_bench": min((do_bench_ms[c] / best for c in cut), default=None),
        "first_ratio": walls[0] / do_bench_wall,
        "tuning_walls_s": walls,
        "winners": winners,
        "last_tuning_samples": samples,
        "do_bench_ms": do_bench_ms,
        "do_bench_wall_s": do_bench_wall,
        "ratio": ratio,
        "one_call_each_ratio": floor,
        "same_winner": same,
        "met": same and max(ratio, walls[0] / do_bench_wall) <= TARGET,
    }


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--first", help="the family to tune before the others")
    parser.add_argument("--client-per-family", action="store_true")
    parser.add_argument("--replay-cache", type=int)
    args = parser.parse_args(argv)
    if args.replay_cache is not None:
        cuda_graphs.REPLAY_CACHE_SIZE = args.replay_cache
    cp = cupy()
    import triton.testing

    triton.testing.do_bench(lambda: None, warmup=1, rep=1)  # torch's start, outside
    report, rows = {}, []
    every = families(cp)
    if args.first is not None and args.first not in every:
        parser.error(f"--first: no family {args.first!r} (families: {', '.join(every)})")
    order = sorted(every, key=lambda name: name != args.first)
    for name in order:
        candidates, inputs = every[name]
        client = CudaClient() if args.client_per_family else cuda()
        entry = report[name] = measure(name, candidates, inputs, args.runs, client)
        walls = entry["tuning_walls_s"]
        rows.append(
            [name, walls[0] * 1e3, statistics.median(walls) * 1e3, entry["do_bench_wall_s"] * 1e3,
             entry["first_ratio"], entry["ratio"], entry["one_call_each_ratio"],
             ", ".join(sorted(set(entry["winners"]))),
             min(entry["do_bench_ms"], key=entry["do_bench_ms"].__getitem__),
             "met" if entry["met"] else "MISSED"]
        )  # fmt: skip
        print(f"{name}: samples per candidate (last tuning) {entry['last_tuning_samples']}")
        nearest = entry["nearest_cut_by_do_bench"]
        print(
            f"{name}: first-sample inflation {entry['first_sample_inflation']:.3f}x"
            f" ({entry['most_inflated']}); hopeless cuts {entry['hopeless_cuts'] or 'none'}"
            + (f", the nearest {nearest:.2f}x do_bench's fastest" if nearest else "")
        )
    header = ["family", "first tuning ms", "tuning ms (median)", "do_bench ms",
              "first ratio", f"ratio (<= {TARGET:g})", "one call each",
              "our winners", "do_bench winner", "verdict"]  # fmt: skip
    print(table(header, rows))
    worst = max(e["first_sample_inflation"] for e in report.values())
    print(
        f"hopeless margin on this GPU: {cuda().hopeless_factor:g}x for calls of"
        f" {cuda().long_call * 1e3:g} ms or more (10x below);"
        f" largest first-sample inflation over all families: {worst:.3f}x"
    )
    suffix = (
        (f"-first-{args.first}" if args.first else "")
        + ("-client-per-family" if args.client_per_family else "")
        + (f"-replay-cache-{args.replay_cache}" if args.replay_cache is not None else "")
    )
    write_json(f"family_costs{suffix}.json", report)
    return 0 if all(e["met"] for e in report.values()) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
