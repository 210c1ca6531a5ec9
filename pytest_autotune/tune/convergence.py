"""When the adaptive round robin has sampled enough: a candidate converged (its best no
longer improves), a batch with nothing left to decide, and a race of median scores the
samples have not called yet, which keeps the rounds going.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from pytest_autotune.tune.batch import Statistic, Trial
from pytest_autotune.tune.config import BenchConfig
from pytest_autotune.tune.log import AutotuneLogContext, Converged, log_event

IMPROVEMENT = 0.02
"""A round that improves a candidate's best time by less than this is a stall."""
STALLS_TO_CONVERGE = 2

RACE_Z = 2.0
"""How many standard errors of the gap apart two median-scored candidates must be for the
round robin to stop sampling them (`open_race`). Two is one look's one-in-forty; the race
looks after every round, with errors estimated from 4-9 samples, so it calls a true tie
sooner than that (before `max_samples` in 16% of 4,000 simulated tunings of two
candidates of one speed under 3% normal noise), which the client's preference then takes
(`batch.Preference`); `max_samples` bounds what a tie costs."""


def decided(trials: Sequence[Trial], config: BenchConfig) -> bool:
    """Whether the batch has nothing left to decide: one candidate alive (the others failed,
    were cut, or the batch held only it) with `min_samples` samples, where the seed stops.
    Sampling it on to convergence, as a race would, changes no decision: it cost a lone
    candidate up to `max_samples` calls for a result its samples only describe."""
    alive = [t for t in trials if t.alive]
    return len(alive) == 1 and len(alive[0].samples) >= config.min_samples


def open_race(trials: Sequence[Trial], statistic: Statistic | None, config: BenchConfig) -> bool:
    """Whether a race the samples have not called yet holds the batch open once every
    candidate has converged: the leader by score (the winner `Batch.finish` would pick before a
    preference; a held candidate too) and a rival whose gap to it is under `RACE_Z`
    standard errors of the two medians, either of them scored by its median
    (`statistic`), one of them still sampled (not held, under `max_samples`). The rounds
    go on over every candidate still sampled, as the seed's do until all converge: a slow
    spell of the host then lands on all of them alike, where rounds of the racing pair
    alone moved their medians against the others'.

    Why: convergence is the seed's, a best sample that stopped improving, which is when a
    best-weighted score stops moving; a median (a host-bound call's caller timing, whose
    noise runs both ways) moves on until its samples pin it. On two H200 hosts 1,300
    tunings of a 2048x1024 layernorm picked warp_row, 6% slower than block256 by a long
    eager loop and level with it by five samples' noise, 30 times without this and 6
    times with it, at 43 samples a tuning against 28 (0.045-0.075x of do_bench's cost
    against 0.03-0.05x; BENCHMARKS.md, twenty-fifth session). A gap the samples resolve
    ends the batch at once; a tie samples to `max_samples`, and the client's preference
    (`batch.Preference`) takes it from there. Races of best-weighted scores alone (device times,
    whose noise only adds) stay the seed's.

    The errors are the standard deviation's (`benchmark.median_rse` below ten samples), so
    one stalled sample keeps a race open to `max_samples`: replayed over the same 1,300
    tunings, errors from the median absolute deviation instead saved 3% of the samples and
    agreed with the eager truth in 1,286 against 1,289 (`benchmarks/replay_races.py`)."""
    if statistic is None:
        return False
    live = [t for t in trials if t.alive and t.samples]
    if len(live) < 2:
        return False

    def sampled(trial: Trial) -> bool:
        return not trial.held and len(trial.samples) < config.max_samples

    outcomes = {t.index: t.outcome(statistic(t.index)) for t in live}
    leader = min(live, key=lambda t: outcomes[t.index].score)
    lead = outcomes[leader.index]
    for trial in live:
        rival = outcomes[trial.index]
        if trial is leader or "median" not in (lead.statistic, rival.statistic):
            continue
        if not (sampled(leader) or sampled(trial)):
            continue
        noise = math.hypot(lead.stats.median_rse, rival.stats.median_rse)
        if rival.score / lead.score - 1.0 < RACE_Z * noise:
            return True
    return False


def note_progress(
    trial: Trial,
    before: float,
    dropped_before: bool,
    config: BenchConfig,
    ctx: AutotuneLogContext | None,
) -> None:
    if trial.dropping_first and not dropped_before:
        # This push dropped the biased first sample: the best is now over another series,
        # which is neither a stall nor an improvement.
        trial.stalls = 0
    elif trial.best < before * (1.0 - IMPROVEMENT):
        trial.stalls = 0
        trial.converged = False
    else:
        trial.stalls += 1
    if (
        not trial.converged
        and trial.stalls >= STALLS_TO_CONVERGE
        and len(trial.effective) >= config.min_samples
    ):
        trial.converged = True
        log_event(ctx, Converged(trial.name, trial.index, len(trial.samples)))
