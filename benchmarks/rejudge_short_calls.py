"""Re-judge the layernorm tunings kept by `gpu_short_calls.py --keep-all` by other rules.

Each kept tuning has every candidate's samples as the caller timing scored them (the larger
of device and host enqueue time). This picks each tuning's winner again by the tuner's
score (`tune.benchmark.score`: mostly the best sample), by the median, the mean and the
best of the samples (the first one left out where the tuner left it out), and counts the
tunings whose winner is within 5% of the fastest by the run's paired truth
(`gpu_short_calls.medians`). The tuner stopped sampling by its own score, so this says
which rule the same samples favour, not what a tuner built on another rule would do.

    python benchmarks/rejudge_short_calls.py RUN/short_calls.json [...]
"""

from __future__ import annotations

import argparse
import statistics
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

from benchmarks.gpu_short_calls import medians as paired
from benchmarks.kept_tunings import layernorm_run
from pytest_autotune.tune.benchmark import score

AGREE = 1.05

RULES: dict[str, Callable[[Sequence[float]], float]] = {
    "score": score,
    "median": statistics.median,
    "mean": statistics.mean,
    "best": min,
}


def rejudge(path: Path) -> dict[str, tuple[int, int]]:
    # Refused unless every tuning was kept: a run kept only its disagreeing ones (or none),
    # and their counts read as if they were all of its tunings.
    family = layernorm_run(path)
    truth = paired(family["eager_rounds_s"])
    best = min(truth.values())
    counts = {}
    for rule_name, rule in RULES.items():
        agree = total = 0
        for tuning in family["caller"]["disagreeing"]:  # every tuning, with --keep-all
            samples = {
                name: [s * 1e-6 for s in result["samples_us"]][
                    1 if result["dropped_first"] else 0 :
                ]
                for name, result in tuning["results"].items()
                if "samples_us" in result
            }
            winner = min(samples, key=lambda name: rule(samples[name]))
            total += 1
            agree += truth[winner] <= AGREE * best
        counts[rule_name] = (agree, total)
    return counts


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("runs", nargs="+", type=Path)
    args = parser.parse_args(argv)
    totals = dict.fromkeys(RULES, (0, 0))
    for run in args.runs:
        counts = rejudge(run)
        print(run, "  ".join(f"{rule} {a}/{n}" for rule, (a, n) in counts.items()))
        totals = {r: (totals[r][0] + a, totals[r][1] + n) for r, (a, n) in counts.items()}
    print("all", "  ".join(f"{rule} {a}/{n}" for rule, (a, n) in totals.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
