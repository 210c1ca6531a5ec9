"""How a batch of candidates is sampled: the fixed pass and the adaptive round robin.

Pure logic over a `sample(index) -> seconds` function, so it runs the same under a real
device timer and under the fake clock of the unit tests.
"""

from __future__ import annotations

from collections.abc import Sequence

from pytest_autotune.tune.batch import (
    Batch,
    BatchResult,
    LongCalls,
    Preference,
    Sampler,
    Statistic,
)
from pytest_autotune.tune.config import BenchConfig
from pytest_autotune.tune.convergence import decided, note_progress, open_race
from pytest_autotune.tune.elimination import drop_hopeless, eliminate, hopeless_at_warm_up
from pytest_autotune.tune.log import AutotuneLogContext

# Re-exported: a strategy's arguments and result were read from here before they had a module.
__all__ = [
    "BatchResult",
    "LongCalls",
    "Preference",
    "Sampler",
    "Statistic",
    "adaptive_round_robin",
    "fixed_pass",
]

RESOLVE_RACES = True
"""Whether the round robin samples an open race on (`convergence.open_race`; a benchmark
turns it off to compare)."""


def fixed_pass(
    indices: Sequence[int],
    names: Sequence[str],
    sample: Sampler,
    config: BenchConfig,
    time_limit: float | None = None,
    short_circuit_samples: int | None = None,
    ctx: AutotuneLogContext | None = None,
    *,
    statistic: Statistic | None = None,
    prefer: Preference | None = None,
) -> BatchResult:
    """Each candidate in turn: `config.warmups` warm-ups, then `config.max_samples` samples.

    Every sample counts: the warm-ups before the first have absorbed the allocation and
    clock ramp costs that make the adaptive round robin drop its first. A candidate with
    `short_circuit_samples` samples under the time limit ends the batch at once.
    `statistic` names the rule that scores each candidate's samples (`Statistic`), and
    `prefer` picks the winner from the scores (`Preference`).
    """
    batch = Batch(
        indices, names, sample, time_limit, short_circuit_samples, ctx, False, statistic, prefer
    )
    for trial in batch.trials:
        for _ in range(config.warmups):
            if trial.error is None:
                batch.take(trial, keep=False)
        for _ in range(config.max_samples):
            if trial.error is not None:
                break
            batch.take(trial)
            if batch.check_short_circuit([trial]):
                return batch.finish()
    return batch.finish()


def adaptive_round_robin(
    indices: Sequence[int],
    names: Sequence[str],
    sample: Sampler,
    config: BenchConfig,
    time_limit: float | None = None,
    short_circuit_samples: int | None = None,
    ctx: AutotuneLogContext | None = None,
    *,
    warm_up_judges: bool = False,
    long_calls: LongCalls | None = None,
    statistic: Statistic | None = None,
    prefer: Preference | None = None,
) -> BatchResult:
    """The seed's adaptive sampling: a first pass, then rounds of one sample per candidate.

    First pass: one warm-up and one sample each, in order. A sample under the time limit
    is confirmed at once (`short_circuit_samples` under it end the batch before later
    candidates run). After it, a candidate whose warm-up and first sample both exceed
    `hopeless_factor` times the leader's best is dropped: no noise explains such a gap,
    and its samples would cost the most. Where the warm-up is itself a warm sample
    (`warm_up_judges`: a client whose first timing of a call follows an untimed call of its
    own, or leaves host work out), a warm-up beyond that margin of an earlier candidate's
    best drops the candidate at once, its warm-up kept as its one sample: a hopeless
    candidate then costs one timed call, not two (a 0.47 s sum candidate, whose do_bench
    takes 8 calls). Where the client says its long calls' first timings are samples
    (`long_calls`), a warm-up that long is kept as the first sample and no other is taken
    in the first pass: a long candidate costs one call there, hopeless or not, the first
    one included, which has no leader to be judged against until the pass is over; and a
    candidate judged on a figure that long is judged by the client's margin.

    Rounds: one sample per live candidate, interleaved so a slow phase of the machine
    lands on all of them. Once three samples exist the first, warm-up biased one is
    dropped; that push is not a stall. A candidate converges after two rounds without a
    2% improvement of its best, with `min_samples` samples left after the dropped one,
    so at five samples at the earliest; converged candidates keep being sampled until all
    have converged (or reached `max_samples`), and a real improvement un-converges one.
    When a round is complete, a candidate with `short_circuit_samples` under the time
    limit ends the batch; then, once a candidate has `min_samples` raw samples, it is
    eliminated if its best exceeds `speed_factor` times the leader's (never below two
    survivors, so the winner is always chosen against a rival); one the floor keeps is held
    as that rival and takes no more samples (`elimination.eliminate` says why). A candidate
    whose figures are long calls (`long_calls`) is judged so from its second sample on.

    The winner is the live candidate of the lowest score, by the rule `statistic` names for
    each (`Statistic`; where one is a median, the scores are taken round by round,
    `batch.paired_scores`), or the one the client prefers among them (`Preference`);
    convergence, elimination and the cuts go by the best sample, which decides how long to
    sample, not which candidate wins. Once all have converged, a race that median scores
    have not called yet keeps the rounds going, up to `max_samples` (`convergence.open_race`).
    """
    batch = Batch(
        indices,
        names,
        sample,
        time_limit,
        short_circuit_samples,
        ctx,
        True,
        statistic,
        prefer,
        interleaved=True,
    )
    if _first_pass(batch, config, warm_up_judges, long_calls, ctx):
        return batch.finish()
    drop_hopeless(batch.trials, config, long_calls, ctx)
    _rounds(batch, config, long_calls, ctx)
    return batch.finish()


def _first_pass(
    batch: Batch,
    config: BenchConfig,
    warm_up_judges: bool,
    long_calls: LongCalls | None,
    ctx: AutotuneLogContext | None,
) -> bool:
    """The round robin's first pass (`adaptive_round_robin`): one warm-up and one sample
    each, in order; True when a candidate confirmed under the time limit ended the batch."""
    for trial in batch.trials:
        batch.take(trial, keep=False)
        if warm_up_judges and hopeless_at_warm_up(trial, batch.trials, config, long_calls, ctx):
            continue
        if trial.error is None:
            if long_calls and trial.warm_up is not None and trial.warm_up >= long_calls.seconds:
                batch.keep_warm_up(trial)
            else:
                batch.take(trial)
        if batch.confirm(trial, config):
            return True
    return False


def _rounds(
    batch: Batch,
    config: BenchConfig,
    long_calls: LongCalls | None,
    ctx: AutotuneLogContext | None,
) -> None:
    """The round robin's rounds after its first pass (`adaptive_round_robin`), until none is
    left to sample, nothing is left to decide, all have converged with no race open, or a
    candidate short-circuits the batch."""
    while True:
        active = [
            t
            for t in batch.trials
            if t.alive and not t.held and len(t.samples) < config.max_samples
        ]
        if (
            not active
            or decided(batch.trials, config)
            or (
                all(t.converged for t in active)
                and not (RESOLVE_RACES and open_race(batch.trials, batch.statistic, config))
            )
        ):
            break
        batch.round += 1
        for trial in active:
            before, dropped_before = trial.best, trial.dropping_first
            batch.take(trial)
            if trial.error is None:
                note_progress(trial, before, dropped_before, config, ctx)
        if batch.check_short_circuit(batch.trials):
            break
        eliminate(batch.trials, config, ctx, long_calls)
