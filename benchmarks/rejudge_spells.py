"""Re-judge the layernorm tunings kept by `gpu_short_calls.py --keep-all` with the rounds
of a slow spell of the host left out of the round-by-round scores (issue 14).

The short-call misses that remain fall in spells of the host: every host-bound
candidate's samples read 1.5-10 times their usual time for some rounds, while a
device-bound one (block1024) reads its device time, so those rounds favour it. This tries
the obvious guard on the same samples: a round whose fastest sample is over `--spell`
times the tuning's quietest round's is left out of `batch.paired_scores`, where at least
`--min-calm` rounds remain and each candidate keeps a sample (else every round counts, as
now); the tie-break is the
product's (`rejudge_tie_break.rejudge`, the host's slowdown as each tuning measured it).
A kept tuning holds no sample's round, so a sample's place stands for it (`Trial.round_of`).

    PYTHONPATH=. python3 benchmarks/rejudge_spells.py RUN/short_calls.json [...]
        [--spells 1.2 1.3 1.5 2.0] [--min-calm 3 5]
"""

from __future__ import annotations

import argparse
import contextlib
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path

from benchmarks.rejudge_tie_break import rejudge
from pytest_autotune.tune import batch


def calm_rounds(trials: Sequence[batch.Trial], spell: float) -> set[int]:
    """The rounds (sample places) whose fastest sample is within `spell` times the quietest
    round's, of the rounds at least two live candidates share."""
    rounds: dict[int, list[float]] = {}
    for trial in trials:
        if trial.alive:
            for k in range(1 if trial.dropping_first else 0, len(trial.samples)):
                rounds.setdefault(trial.round_of(k), []).append(trial.samples[k])
    fastest = {k: min(taken) for k, taken in rounds.items() if len(taken) > 1}
    if not fastest:
        return set()
    quiet = min(fastest.values())
    return {k for k, least in fastest.items() if least <= spell * quiet}


@contextlib.contextmanager
def calm_only(spell: float, min_calm: int) -> Iterator[None]:
    """`batch.paired_scores` over the calm rounds alone, while the context lasts."""
    original = batch.paired_scores

    def paired(
        trials: Sequence[batch.Trial], statistic: batch.Statistic | None
    ) -> dict[int, float] | None:
        calm = calm_rounds(trials, spell)
        if len(calm) < min_calm:
            return original(trials, statistic)
        kept = []
        for trial in trials:
            first = 1 if trial.dropping_first else 0
            places = [k for k in range(first, len(trial.samples)) if trial.round_of(k) in calm]
            copy = batch.Trial(trial.index, trial.name, drops_first=False)
            copy.samples = [trial.samples[k] for k in places]
            copy.rounds = [trial.round_of(k) for k in places]
            copy.error, copy.eliminated = trial.error, trial.eliminated
            kept.append(copy)
        if any(
            trial.alive and trial.samples and not copy.samples
            for trial, copy in zip(trials, kept, strict=True)
        ):
            return original(trials, statistic)  # a candidate sampled in spells alone
        return original(kept, statistic)

    batch.paired_scores = paired
    try:
        yield
    finally:
        batch.paired_scores = original


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("runs", nargs="+", type=Path)
    parser.add_argument("--spells", nargs="+", type=float, default=[1.2, 1.3, 1.5, 2.0])
    parser.add_argument("--min-calm", nargs="+", type=int, default=[3, 5])
    args = parser.parse_args(argv)
    rules: list[tuple[float, int] | None] = [None]
    rules += [(spell, least) for spell in args.spells for least in args.min_calm]
    for rule in rules:
        with contextlib.nullcontext() if rule is None else calm_only(*rule):
            judged = [rejudge(run, "measured", by_rounds=True) for run in args.runs]
        agree = sum(a for a, _, _ in judged)
        total = sum(n for _, n, _ in judged)
        block1024 = sum(p["block1024"] for _, _, p in judged)
        warp_row = sum(p["warp_row"] for _, _, p in judged)
        each = " ".join(f"{a}/{n}" for a, n, _ in judged)
        how = "every round" if rule is None else f"spell {rule[0]:g}, at least {rule[1]} calm"
        print(
            f"{how}: {agree}/{total} agree ({each}); picks of block1024 {block1024},"
            f" warp_row {warp_row}"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
