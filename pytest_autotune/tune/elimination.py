"""Which candidates the adaptive round robin stops sampling: the hopeless cut (at the warm-up,
or after the first pass) and elimination after `min_samples`, never below two survivors,
where an outclassed rival the floor keeps is held.
"""

from __future__ import annotations

from pytest_autotune.tune.batch import LongCalls, Trial
from pytest_autotune.tune.config import BenchConfig
from pytest_autotune.tune.log import (
    AutotuneLogContext,
    CandidateSampled,
    Eliminated,
    Held,
    format_duration,
    log_event,
)


def hopeless_at_warm_up(
    trial: Trial,
    trials: list[Trial],
    config: BenchConfig,
    long_calls: LongCalls | None,
    ctx: AutotuneLogContext | None,
) -> bool:
    """Drop `trial` on its warm warm-up alone when that is over the hopeless factor times the
    best of the candidates sampled before it."""
    earlier = [t.best for t in trials if t is not trial and t.alive and t.samples]
    if trial.error is not None or trial.warm_up is None or not earlier:
        return False
    leader = min(earlier)
    factor = _factor(trial.warm_up, config, long_calls)
    if trial.warm_up <= factor * leader:
        return False
    trial.samples.append(trial.warm_up)
    # Its one sample, logged as every kept sample is at the full level.
    log_event(ctx, CandidateSampled(trial.name, trial.index, trial.warm_up))
    _eliminated(
        trial,
        f"hopeless: warm warm-up {format_duration(trial.warm_up)} over {factor:g} x"
        f" leader {format_duration(leader)}",
        ctx,
    )
    return True


def drop_hopeless(
    trials: list[Trial],
    config: BenchConfig,
    long_calls: LongCalls | None,
    ctx: AutotuneLogContext | None,
) -> None:
    survivors = [t for t in trials if t.alive and t.samples]
    if len(survivors) < 2:
        return
    first = min(survivors, key=lambda t: t.best)
    leader = first.best
    for trial in survivors:
        if trial is first:
            continue
        seen = min(
            trial.samples[0], trial.warm_up if trial.warm_up is not None else trial.samples[0]
        )
        factor = _factor(seen, config, long_calls)
        if seen > factor * leader:
            _eliminated(
                trial,
                f"hopeless: warm-up and first sample over {factor:g} x"
                f" leader {format_duration(leader)}"
                f" (first {format_duration(trial.samples[0])})",
                ctx,
            )


def _eliminated(trial: Trial, reason: str, ctx: AutotuneLogContext | None) -> None:
    """Stop sampling `trial` for good, and log why: every cut, hopeless or outclassed, is
    one `Eliminated` event, which the log and the records read back."""
    trial.eliminated = True
    log_event(ctx, Eliminated(trial.name, trial.index, reason))


def _factor(figure: float, config: BenchConfig, long_calls: LongCalls | None) -> float:
    return long_calls.margin(figure, config) if long_calls else config.hopeless


def eliminate(
    trials: list[Trial],
    config: BenchConfig,
    ctx: AutotuneLogContext | None,
    long_calls: LongCalls | None = None,
) -> None:
    """Drop the candidates whose best, after `min_samples`, exceeds `speed_factor` times the
    leader's, the slowest first, never below two survivors; an outclassed candidate the
    floor keeps is held: it stays the winner's rival with the samples it has and takes no
    more.

    Why hold rather than sample on (the seed samples every survivor to convergence): a
    held candidate is one the same test would have eliminated but for the floor, so its
    further samples could only matter if its best fell below the leader's, the very risk
    elimination already takes; meanwhile they cost the most of any (it is the slowest
    survivor). On the H200's matmul family the rival at 2.15 times the leader took five
    samples to converge beside the leader's, which kept the family's tuning at 0.116-0.119
    times `do_bench`'s cost (BENCHMARKS.md, issue 14).

    A candidate whose best is a long call (`long_calls`: a client whose long figures are
    warm device times, repeating within 1-2%, the largest first-sample inflation measured
    on the H200 3.1%) is judged from its second sample: waiting for `min_samples` of them
    cost matmul's rival at 2.15 times cuBLAS a third call of 5 ms, and could change nothing
    but a candidate 1.5 times slower than the leader in two calls running. Not on its
    first: a long figure may also be a host-bound call's caller timing, one stall of which
    reads it half as slow again (its next sample shows it).
    """
    survivors = [t for t in trials if t.alive]
    if len(survivors) < 2:
        return
    leader = min(t.best for t in survivors)

    def judged(trial: Trial) -> bool:
        if len(trial.samples) >= config.min_samples:
            return True
        long = long_calls is not None and trial.best >= long_calls.seconds
        return long and len(trial.samples) >= 2

    # The slowest go first, so if the floor of two stops the cut, the closest rivals stay.
    for trial in sorted(survivors, key=lambda t: t.best, reverse=True):
        if not judged(trial) or trial.best <= config.speed_factor * leader:
            continue
        reason = (
            f"best {format_duration(trial.best)} > {config.speed_factor} x"
            f" leader {format_duration(leader)}"
        )
        if len(survivors) > 2:
            survivors.remove(trial)
            _eliminated(trial, reason, ctx)
        elif not trial.held:
            trial.held = True
            log_event(ctx, Held(trial.name, trial.index, len(trial.samples), reason))
