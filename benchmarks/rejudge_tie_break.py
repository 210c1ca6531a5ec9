"""Re-judge the tie-break of the layernorm tunings kept by `gpu_short_calls.py --keep-all`
at other values of `cuda_timing.HOST_SPEEDUP` (issue 14).

The tie-break runs once a batch is over, on the candidates' final scores: what it picks
from the same samples at another speed-up is what the tuner would have picked (the
sampling does not depend on it). Each kept tuning's scores are rebuilt from its samples
(`AutotuneOutcome`, by the statistic it was scored with), each candidate's device and
enqueue time are the run's latest (`call_costs`), and the product's own
`CallerTiming.preferred` picks the winner; a pick agrees when it is within 5% of the
fastest by the run's paired eager truth (`gpu_short_calls.medians`). The one-kernel
candidates only: two_launches and the CuPy expression were cut early in every tuning.
With `--paired`, the scores are the product's round-by-round ones (`batch.paired_scores`)
as well as each candidate's own, each way in turn.

    python benchmarks/rejudge_tie_break.py RUN/short_calls.json [...]
        [--speedups 1.25 1.5 measured] [--paired]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from benchmarks.gpu_short_calls import AGREE
from benchmarks.gpu_short_calls import medians as paired
from benchmarks.kept_tunings import caller_timing, layernorm_run
from pytest_autotune.backends import cuda_timing
from pytest_autotune.tune import batch
from pytest_autotune.tune.benchmark import NS_PER_S, AutotuneOutcome

LEFT_OUT = ("two_launches", "cupy_expression")
NEVER_FASTER = ("block1024", "warp_row")


def rejudge(
    path: Path, speedup: float | str, by_rounds: bool = False
) -> tuple[int, int, dict[str, int]]:
    """(agreeing, tunings, picks of each never-faster candidate) at `speedup`: a number, or
    "measured", each tuning's own measured slowdown of the host (1 where none was kept: a
    run with `--host-speedup measured` whose tie-break measured none); `by_rounds`: scored
    round by round."""
    family = layernorm_run(path)
    if (
        speedup == "measured"
        and family["host_speedup"] is not None
        and not any(t.get("slowdown") for t in family["caller"]["disagreeing"])
    ):
        raise SystemExit(f"{path}: its tunings kept no slowdown of the host")
    truth = paired(family["eager_rounds_s"])
    fastest = min(truth.values())
    timing, fns = caller_timing(family["caller"]["call_costs"])
    saved = cuda_timing.HOST_SPEEDUP
    try:
        agree, picks = 0, dict.fromkeys(NEVER_FASTER, 0)
        tunings = family["caller"]["disagreeing"]  # every tuning, with --keep-all
        for tuning in tunings:
            cuda_timing.HOST_SPEEDUP = (
                tuning["slowdown"] or 1.0 if speedup == "measured" else float(speedup)
            )
            results = {
                name: result
                for name, result in tuning["results"].items()
                if "samples_us" in result and name not in LEFT_OUT
            }
            scores = _by_rounds(results) if by_rounds else None
            if scores is None:
                scores = {name: _score(name, result) for name, result in results.items()}
            scored = [(fns[name], score) for name, score in scores.items()]
            winner = scored[timing.preferred(scored)][0].__name__
            agree += truth[winner] <= AGREE * fastest
            if winner in picks:
                picks[winner] += 1
    finally:
        cuda_timing.HOST_SPEEDUP = saved
    return agree, len(tunings), picks


def _by_rounds(results: dict[str, dict[str, Any]]) -> dict[str, float] | None:
    """The candidates' round-by-round scores in seconds (`batch.paired_scores`), from
    their kept samples; None where the product would not pair them."""
    trials = []
    for index, (name, result) in enumerate(results.items()):
        trial = batch.Trial(index, name, result["dropped_first"])
        trial.samples = [us * 1e-6 for us in result["samples_us"]]
        trials.append(trial)
    statistics = [result["statistic"] for result in results.values()]
    paired = batch.paired_scores(trials, statistics.__getitem__)
    if paired is None:
        return None
    return {trial.name: paired[trial.index] for trial in trials}


def _score(name: str, result: dict[str, Any]) -> float:
    outcome = AutotuneOutcome(
        name,
        0,
        tuple(s * 1e-6 for s in result["samples_us"]),
        dropped_first=result["dropped_first"],
        statistic=result["statistic"],
    )
    return outcome.score / NS_PER_S


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("runs", nargs="+", type=Path)
    parser.add_argument(
        "--speedups",
        nargs="+",
        type=lambda text: text if text == "measured" else float(text),
        default=[1.0, 1.25, 1.5, 2.0],
        help="numbers, or 'measured' (each tuning's own measured slowdown)",
    )
    parser.add_argument(
        "--paired",
        action="store_true",
        help="also score round by round (batch.paired_scores), each way in turn",
    )
    args = parser.parse_args(argv)
    for by_rounds in (False, True) if args.paired else (False,):
        for speedup in args.speedups:
            agree = total = 0
            picks = dict.fromkeys(NEVER_FASTER, 0)
            each = []
            for run in args.runs:
                a, n, p = rejudge(run, speedup, by_rounds)
                agree, total = agree + a, total + n
                picks = {name: picks[name] + p[name] for name in picks}
                each.append(f"{a}/{n}")
            said = ", ".join(f"{name} {count}" for name, count in picks.items())
            how = "round by round" if by_rounds else "own scores"
            print(
                f"{how}, HOST_SPEEDUP {speedup}: {agree}/{total} agree ({' '.join(each)});"
                f" picks of {said}"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
