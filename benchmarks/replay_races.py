"""Replay the layernorm tunings kept by `gpu_short_calls.py --keep-all` through the round
robin under another stopping rule (issue 14).

Each kept tuning holds every candidate's samples in the order the sampler returned them.
A rule that stops no later than the run's own (the race off, a race that closes sooner)
takes a prefix of them, so replaying `schedule.adaptive_round_robin` over a sampler that
hands each candidate its recorded samples in turn (its first one doubling as its warm-up)
is what the tuner would have measured; where a rule asks for more than was recorded, the
last sample repeats and the tuning counts as "past the record". The winner is picked by
the product's own `CallerTiming.preferred` over each run's latest device and enqueue
times (`call_costs`), and agrees when it is within 5% of the fastest by the run's paired
eager truth. The replay reproduces the recorded winner in most but not all tunings (the
device times it has are the run's last, not those of the moment): compare rules with
each other here, not with the live counts.

    python benchmarks/replay_races.py RUN/short_calls.json [...]
        [--rule race|no-race|mad] [--host-speedup measured|1.5]

`--host-speedup`: the tie-break's `cuda_timing.HOST_SPEEDUP`; "measured" (the default, as
the product's None) takes each tuning's own kept slowdown of the host, since the replay's
timing has no reference loop to measure one with.

`mad`: the race with each median's standard error from the median absolute deviation
(1.2533 mad / sqrt(n)) instead of the standard deviation.
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from benchmarks.gpu_short_calls import AGREE
from benchmarks.gpu_short_calls import medians as paired
from benchmarks.kept_tunings import caller_timing, layernorm_run
from pytest_autotune.backends import cuda_timing
from pytest_autotune.tune import benchmark, schedule
from pytest_autotune.tune.config import BenchConfig

NEVER_FASTER = ("block1024", "warp_row")


class Recorded:
    """A sampler that returns each candidate's recorded samples in turn, its first one
    twice (the warm-up, then the first sample)."""

    def __init__(self, samples: list[list[float]]) -> None:
        self.samples = samples
        self.calls = [0] * len(samples)
        self.past_record = False

    def __call__(self, index: int) -> float:
        taken = max(self.calls[index] - 1, 0)
        self.calls[index] += 1
        if taken >= len(self.samples[index]):
            self.past_record = True
            return self.samples[index][-1]
        return self.samples[index][taken]


@contextmanager
def rule(name: str) -> Iterator[None]:
    """The schedule under rule `name` for the block's duration."""
    saved_race, saved_of = schedule.RESOLVE_RACES, benchmark.SampleStats.of
    schedule.RESOLVE_RACES = name != "no-race"
    if name == "mad":

        def of(samples: Any) -> benchmark.SampleStats:
            stats = saved_of(samples)
            n = len(samples)
            rse = 1.2533 * stats.mad / math.sqrt(n) / stats.median if n >= 2 else math.inf
            return benchmark.SampleStats(
                stats.count, stats.min, stats.median, stats.mean, stats.std, stats.mad, rse
            )

        benchmark.SampleStats.of = staticmethod(of)  # type: ignore[method-assign]
    try:
        yield
    finally:
        schedule.RESOLVE_RACES = saved_race
        benchmark.SampleStats.of = saved_of  # type: ignore[method-assign]


def replay(path: Path, speedup: float | str) -> tuple[int, int, int, int, int, list[int]]:
    """(agreeing, tunings, never-faster picks, the recorded winner again, past the record,
    samples of each tuning) for one run under the rule in force, the tie-break at `speedup`
    (a number, or "measured": each tuning's own kept slowdown, 1 where none was kept)."""
    family = layernorm_run(path)
    truth = paired(family["eager_rounds_s"])
    fastest = min(truth.values())
    caller = family["caller"]
    tunings = caller["disagreeing"]
    timing, fns = caller_timing(caller["call_costs"])
    agree = bad = same = past = 0
    counts = []
    for tuning in tunings:
        # Left None, the tie-break would measure the host through the timing's reference
        # loop, which a timing rebuilt from the kept costs lacks: it would read 1 every time.
        cuda_timing.HOST_SPEEDUP = (
            tuning.get("slowdown") or 1.0 if speedup == "measured" else float(speedup)
        )
        results = tuning["results"]
        names = [name for name in results if "samples_us" in results[name]]
        sampler = Recorded([[s * 1e-6 for s in results[n]["samples_us"]] for n in names])
        rules: list[str] = [results[n]["statistic"] for n in names]

        def statistic(index: int, rules: list[str] = rules) -> str:
            return rules[index]

        def prefer(scores: dict[int, float], names: list[str] = names) -> int:
            order = list(scores)
            scored = [(fns[names[i]], scores[i] / benchmark.NS_PER_S) for i in order]
            return order[timing.preferred(scored)]

        batch = schedule.adaptive_round_robin(
            list(range(len(names))),
            names,
            sampler,
            BenchConfig(),
            statistic=statistic,
            prefer=prefer,
            warm_up_judges=True,
        )
        assert batch.winner is not None
        winner = names[batch.winner]
        agree += truth[winner] <= AGREE * fastest
        bad += winner in NEVER_FASTER
        same += winner == tuning["winner"]
        past += sampler.past_record
        counts.append(sum(sampler.calls) - len(names))
    return agree, len(tunings), bad, same, past, counts


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("runs", nargs="+", type=Path)
    parser.add_argument("--rule", choices=("race", "no-race", "mad"), default="race")
    parser.add_argument(
        "--host-speedup",
        type=lambda text: text if text == "measured" else float(text),
        default="measured",
        help="a number, or 'measured' (each tuning's own kept slowdown of the host)",
    )
    args = parser.parse_args(argv)
    agree = total = bad = same = past = 0
    counts: list[int] = []
    saved = cuda_timing.HOST_SPEEDUP
    try:
        with rule(args.rule):
            for run in args.runs:
                a, n, b, s, p, c = replay(run, args.host_speedup)
                agree, total, bad, same = agree + a, total + n, bad + b, same + s
                past += p
                counts += c
    finally:
        cuda_timing.HOST_SPEEDUP = saved
    print(
        f"{args.rule}, HOST_SPEEDUP {args.host_speedup}: {agree}/{total} agree,"
        f" {bad} never-faster picks, {statistics.mean(counts):.1f} samples a tuning;"
        f" the recorded winner in {same}, past the record in {past}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
