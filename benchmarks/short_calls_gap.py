"""How far apart the tunings put two layernorm candidates, against the eager truth
(issue 14): from the tunings kept by `gpu_short_calls.py --keep-all`.

For each run, over its tunings where both candidates were scored by their median (the
host-bound caller timing), the median and the 10th percentile of the ratio of their
scores, beside the ratio of the run's paired eager truth (`gpu_short_calls.medians`). A
timing that read one candidate's host part short (a bias) shows as a median below the
truth's run after run; noise as a spread around it.

    python benchmarks/short_calls_gap.py RUN/short_calls.json [...] [--pair warp_row block256]
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

from benchmarks.gpu_short_calls import medians as paired
from benchmarks.kept_tunings import layernorm_run
from pytest_autotune.tune.benchmark import AutotuneOutcome


def gaps(path: Path, slower: str, faster: str) -> tuple[list[float], float]:
    """Each tuning's score ratio `slower` / `faster` (both median-scored), and the truth's."""
    family = layernorm_run(path)
    truth = paired(family["eager_rounds_s"])
    ratios = []
    for tuning in family["caller"]["disagreeing"]:  # every tuning, with --keep-all
        results = tuning["results"]
        if not all("samples_us" in results.get(name, {}) for name in (slower, faster)):
            continue
        outcomes = [
            AutotuneOutcome(
                name,
                0,
                tuple(results[name]["samples_us"]),
                dropped_first=results[name]["dropped_first"],
                statistic=results[name]["statistic"],
            )
            for name in (slower, faster)
        ]
        if all(o.statistic == "median" for o in outcomes):
            ratios.append(outcomes[0].score / outcomes[1].score)
    return ratios, truth[slower] / truth[faster]


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("runs", nargs="+", type=Path)
    parser.add_argument("--pair", nargs=2, default=["warp_row", "block256"])
    args = parser.parse_args(argv)
    slower, faster = args.pair
    for run in args.runs:
        ratios, truth = gaps(run, slower, faster)
        if not ratios:
            print(f"{run}: no tuning scored both by their median")
            continue
        median, tenth = statistics.median(ratios), sorted(ratios)[len(ratios) // 10]
        print(
            f"{run}: {len(ratios)} tunings, {slower}/{faster} median {median:.3f}"
            f" (10th percentile {tenth:.3f}), truth {truth:.3f}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
