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

    python benchmarks/rejudge_tie_break.py RUN/short_calls.json [...] [--speedups 1.25 1.5]
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
from pytest_autotune.tune.benchmark import NS_PER_S, AutotuneOutcome

LEFT_OUT = ("two_launches", "cupy_expression")
NEVER_FASTER = ("block1024", "warp_row")


def rejudge(path: Path, speedup: float | str) -> tuple[int, int, dict[str, int]]:
    """(agreeing, tunings, picks of each never-faster candidate) at `speedup`: a number, or
    "measured", each tuning's own measured slowdown of the host (1 where its tie-break
    measured none), which a run made with `--host-speedup measured` kept."""
    family = layernorm_run(path)
    if speedup == "measured" and family["host_speedup"] is not None:
        raise SystemExit(f"{path}: its tunings measured no slowdown (--host-speedup measured)")
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
            scored = [
                (fns[name], _score(name, result))
                for name, result in tuning["results"].items()
                if "samples_us" in result and name not in LEFT_OUT
            ]
            winner = scored[timing.preferred(scored)][0].__name__
            agree += truth[winner] <= AGREE * fastest
            if winner in picks:
                picks[winner] += 1
    finally:
        cuda_timing.HOST_SPEEDUP = saved
    return agree, len(tunings), picks


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
    args = parser.parse_args(argv)
    for speedup in args.speedups:
        agree = total = 0
        picks = dict.fromkeys(NEVER_FASTER, 0)
        each = []
        for run in args.runs:
            a, n, p = rejudge(run, speedup)
            agree, total = agree + a, total + n
            picks = {name: picks[name] + p[name] for name in picks}
            each.append(f"{a}/{n}")
        said = ", ".join(f"{name} {count}" for name, count in picks.items())
        print(f"HOST_SPEEDUP {speedup}: {agree}/{total} agree ({' '.join(each)}); picks of {said}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
