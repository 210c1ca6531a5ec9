"""How a batch of candidates is sampled: the fixed pass and the adaptive round robin.

Pure logic over a `sample(index) -> seconds` function, so it runs the same under a real
device timer and under the fake clock of the unit tests.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from pytest_autotune.tune.benchmark import AutotuneOutcome, AutotuneResult, check_sample
from pytest_autotune.tune.config import BenchConfig
from pytest_autotune.tune.errors import NOT_REACHED, AutotuneError, AutotuneErrorKind
from pytest_autotune.tune.log import (
    AutotuneLogContext,
    CandidateSampled,
    Converged,
    Eliminated,
    Held,
    Preferred,
    ShortCircuit,
    format_duration,
    log_event,
    log_failure,
)

Sampler = Callable[[int], float]
"""`sample(index) -> seconds`: time one call of candidate `index`; raises what it raises."""

Statistic = Callable[[int], str]
"""`statistic(index) -> name`: the rule (`benchmark.STATISTICS`) that scores candidate
`index`'s samples, asked once its batch is over, and after each round once every candidate
has converged (`_open_race`); without one, the seed's `score`."""

Preference = Callable[[dict[int, float]], int]
"""`prefer(scores) -> index`: which of the live candidates (their scores by index) wins
the batch; without one, the lowest score."""

IMPROVEMENT = 0.02
"""A round that improves a candidate's best time by less than this is a stall."""
STALLS_TO_CONVERGE = 2

RACE_Z = 2.0
"""How many standard errors of the gap apart two median-scored candidates must be for the
round robin to stop sampling them (`_open_race`). Two is one look's one-in-forty; the race
looks after every round, with errors estimated from 4-9 samples, so it calls a true tie
sooner than that (before `max_samples` in 16% of 4,000 simulated tunings of two
candidates of one speed under 3% normal noise), which the client's preference then takes
(`Preference`); `max_samples` bounds what a tie costs."""

RESOLVE_RACES = True
"""Whether the round robin samples an open race on (`_open_race`; a benchmark turns it off
to compare)."""

PAIRED = True
"""Whether a batch with median-scored candidates picks its winner by their paired scores
(`paired_scores`; a benchmark turns it off to compare)."""


@dataclass(frozen=True, slots=True)
class LongCalls:
    """What a client whose first timing of a call is warm says of its calls of at least
    `seconds`: their first timing is as good a sample as any later one, and their figures
    are device times held to the device's noise, so `hopeless_factor` (None: the config's)
    is margin enough to cut them. A shorter call's figure may be a caller's loop timed on
    the host, whose stalls are a CPU's noise: it keeps the config's margin."""

    seconds: float
    hopeless_factor: float | None = None

    def margin(self, figure: float, config: BenchConfig) -> float:
        """The hopeless factor that judges a candidate on `figure`."""
        if self.hopeless_factor is not None and figure >= self.seconds:
            return self.hopeless_factor
        return config.hopeless


@dataclass(slots=True)
class _Trial:
    """The running state of one candidate in a batch."""

    index: int
    name: str
    drops_first: bool
    """Whether the first sample is warm-up biased (see `effective`)."""
    samples: list[float] = field(default_factory=list)
    warm_up: float | None = None
    """The time of the warm-up call before the first sample: kept to judge hopeless, and as
    the first sample where it is one (`LongCalls`)."""
    error: AutotuneError | None = None
    eliminated: bool = False
    held: bool = False
    """Outclassed but kept as the winner's rival by the floor of two survivors: it takes no
    more samples (`_eliminate`)."""
    converged: bool = False
    stalls: int = 0
    under_limit: int = 0
    rounds: list[int] = field(default_factory=list)
    """The round each sample was taken in (`_Batch.round`): the first pass's confirmations
    take more than one a round (`paired_scores`)."""

    def round_of(self, k: int) -> int:
        """The round of sample `k`: its place where the rounds were not kept."""
        return self.rounds[k] if len(self.rounds) == len(self.samples) else k

    @property
    def dropping_first(self) -> bool:
        # In the adaptive round robin the first sample follows a single warm-up, so it still
        # carries allocation and clock ramp costs: once three samples exist it no longer
        # speaks for the candidate. The fixed pass's warm-ups have absorbed those costs.
        return self.drops_first and len(self.samples) >= 3

    @property
    def effective(self) -> list[float]:
        return self.samples[1:] if self.dropping_first else self.samples

    @property
    def best(self) -> float:
        return min(self.effective)

    @property
    def alive(self) -> bool:
        return self.error is None and not self.eliminated

    def result(self, statistic: str = "score") -> AutotuneResult:
        if self.error is not None:
            return self.error
        return self.outcome(statistic)

    def outcome(self, statistic: str) -> AutotuneOutcome:
        """The samples so far, scored by `statistic` (a candidate with samples)."""
        return AutotuneOutcome(
            self.name,
            self.index,
            tuple(self.samples),
            dropped_first=self.dropping_first,
            statistic=statistic,
        )


@dataclass(frozen=True, slots=True)
class BatchResult:
    """What one batch measured: a result for every candidate of the batch (one never
    reached is a Skip error), and the winner if any."""

    results: dict[int, AutotuneResult]
    winner: int | None
    short_circuited: bool = False


class _Batch:
    def __init__(
        self,
        indices: Sequence[int],
        names: Sequence[str],
        sample: Sampler,
        time_limit: float | None,
        short_circuit_samples: int | None,
        ctx: AutotuneLogContext | None,
        drop_first: bool,
        statistic: Statistic | None = None,
        prefer: Preference | None = None,
        interleaved: bool = False,
    ) -> None:
        self.trials = [_Trial(i, names[i], drop_first) for i in indices]
        self.interleaved = interleaved
        """Whether the candidates are sampled in rounds (the round robin), not each one's
        samples in turn (`paired_scores`)."""
        self.statistic = statistic
        self._prefer = prefer
        self._sample = sample
        self._limit = time_limit
        self._short_circuit = short_circuit_samples if time_limit is not None else None
        self._ctx = ctx
        self.short_circuited: _Trial | None = None
        self.round = 0
        """The round of the round robin now sampled: 0 for the first pass."""

    def take(self, trial: _Trial, keep: bool = True) -> None:
        """One sample of `trial`; a failure disqualifies it for good."""
        try:
            seconds = check_sample(trial.name, self._sample(trial.index))
        except Exception as exc:
            trial.error = AutotuneError.from_exception(trial.name, exc)
            log_failure(self._ctx, trial.name, trial.index, trial.error.message)
            return
        if not keep:
            trial.warm_up = seconds
            return
        self._keep(trial, seconds)

    def keep_warm_up(self, trial: _Trial) -> None:
        """Count `trial`'s warm-up as its first sample (see `adaptive_round_robin`)."""
        assert trial.warm_up is not None
        self._keep(trial, trial.warm_up)

    def _keep(self, trial: _Trial, seconds: float) -> None:
        trial.samples.append(seconds)
        trial.rounds.append(self.round)
        # Kept and logged by a context at the full level only ("samples included").
        log_event(self._ctx, CandidateSampled(trial.name, trial.index, seconds))
        if self.under_limit(seconds):
            trial.under_limit += 1

    def under_limit(self, seconds: float) -> bool:
        return (
            self._short_circuit is not None and self._limit is not None and seconds <= self._limit
        )

    def check_short_circuit(self, trials: Sequence[_Trial]) -> bool:
        """End the batch on the best of `trials` that has enough samples under the limit."""
        if self._short_circuit is None or self._limit is None:
            return False
        done = [t for t in trials if t.alive and t.under_limit >= self._short_circuit]
        if not done:
            return False
        trial = min(done, key=lambda t: t.best)
        self.short_circuited = trial
        log_event(self._ctx, ShortCircuit(trial.name, trial.index, trial.under_limit, self._limit))
        return True

    def confirm(self, trial: _Trial, config: BenchConfig) -> bool:
        """A first sample under the limit is confirmed at once, so that the batch ends before
        later candidates even run: the trial samples again while it stays under the limit,
        until it has `short_circuit_samples` there."""
        if self._short_circuit is None or not trial.samples:
            return False
        while (
            trial.alive
            and 0 < trial.under_limit < self._short_circuit
            and self.under_limit(trial.samples[-1])
            and len(trial.samples) < config.max_samples
        ):
            self.take(trial)
        return self.check_short_circuit([trial])

    def finish(self) -> BatchResult:
        results: dict[int, AutotuneResult] = {}
        for t in self.trials:
            if t.samples or t.error:
                results[t.index] = t.result(
                    self.statistic(t.index) if self.statistic and t.alive else "score"
                )
            else:
                by = self.short_circuited
                why = f"{by.name} short-circuited the batch" if by else "the batch ended"
                results[t.index] = AutotuneError(
                    AutotuneErrorKind.SKIP, f"{NOT_REACHED}: {why}", t.name
                )
        alive = [t for t in self.trials if t.alive and t.samples]
        scores = {t.index: results[t.index].score for t in alive}  # type: ignore[union-attr]
        winner = None
        if scores:
            lowest = min(scores, key=scores.__getitem__)
            paired = (
                paired_scores(self.trials, self.statistic) if PAIRED and self.interleaved else None
            )
            judged = paired or scores
            winner = min(judged, key=judged.__getitem__)
            if self._prefer is not None and len(judged) > 1:
                winner = self._prefer(judged)
            if winner != lowest:
                names = {t.index: t.name for t in alive}
                why = (
                    "rounds"
                    if paired and winner == min(paired, key=paired.__getitem__)
                    else "client"
                )
                log_event(self._ctx, Preferred(names[winner], winner, names[lowest], lowest, why))
        return BatchResult(results, winner, self.short_circuited is not None)


def paired_scores(trials: Sequence[_Trial], statistic: Statistic | None) -> dict[int, float] | None:
    """Each live candidate's score taken round by round against the others, where one of
    them is scored by its median (a host-bound call's caller timing): the median over the
    rounds of its sample over the round's fastest sample, times the median of those fastest
    samples. None where no candidate is median-scored, or fewer than two live candidates
    share a round.

    Why: the round robin interleaves the candidates so that a slow phase of the machine
    lands on all of them, but a median of each one's own samples still counts the phases
    each happened to meet. The H200 hosts here switch between launching at their usual
    speed and 1.4-1.7 times slower every few milliseconds, so a host-bound candidate's
    samples come in two clusters: a 2048x1024 layernorm's warp_row, 6-9% slower than
    block256 by a long eager loop and slower in 8 of the 10 rounds of one tuning, met
    fewer slow rounds, and its median (12.6 us against 15.7) won. Its samples over each
    round's fastest tell what the rounds saw alike, as the eager truth of
    `benchmarks/gpu_short_calls.py` is itself paired: re-judged on the same samples, 1,200
    tunings agreed with it in 1,198 this way against 1,189 by their own medians, and 3,200
    of four hosts in 3,183 (with the client's tie-break, `CallerTiming.preferred`) against
    3,147 (BENCHMARKS.md, twenty-seventh session). Each sample is compared with those of its
    round (`_Trial.rounds`, the first pass being the first); a candidate held or cut
    stops, and its rounds are compared with those the others shared. A first sample a
    candidate's score leaves out (`_Trial.dropping_first`) is left out here too."""
    live = [t for t in trials if t.alive and t.samples]
    if statistic is None or len(live) < 2:
        return None
    if not any(statistic(t.index) == "median" for t in live):
        return None
    rounds: dict[int, dict[int, float]] = {}
    for trial in live:
        for k in range(1 if trial.dropping_first else 0, len(trial.samples)):
            # Of samples of one round (a first pass's confirmations), the latest.
            rounds.setdefault(trial.round_of(k), {})[trial.index] = trial.samples[k]
    fastest = {k: min(taken.values()) for k, taken in rounds.items() if len(taken) > 1}
    ratios: dict[int, list[float]] = {t.index: [] for t in live}
    for k, least in fastest.items():
        for index, seconds in rounds[k].items():
            ratios[index].append(seconds / least)
    if not fastest or not all(ratios.values()):
        return None
    base = statistics.median(fastest.values())
    return {index: base * statistics.median(each) for index, each in ratios.items()}


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
    batch = _Batch(
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
    as that rival and takes no more samples (`_eliminate` says why). A candidate whose figures
    are long calls (`long_calls`) is judged so from its second sample on.

    The winner is the live candidate of the lowest score, by the rule `statistic` names for
    each (`Statistic`; where one is a median, the scores are taken round by round,
    `paired_scores`), or the one the client prefers among them (`Preference`);
    convergence, elimination and the cuts go by the best sample, which decides how long to
    sample, not which candidate wins. Once all have converged, a race that median scores
    have not called yet keeps the rounds going, up to `max_samples` (`_open_race`).
    """
    batch = _Batch(
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
    for trial in batch.trials:
        batch.take(trial, keep=False)
        if warm_up_judges and _hopeless_at_warm_up(trial, batch.trials, config, long_calls, ctx):
            continue
        if trial.error is None:
            if long_calls and trial.warm_up is not None and trial.warm_up >= long_calls.seconds:
                batch.keep_warm_up(trial)
            else:
                batch.take(trial)
        if batch.confirm(trial, config):
            return batch.finish()
    _drop_hopeless(batch.trials, config, long_calls, ctx)

    while True:
        active = [
            t
            for t in batch.trials
            if t.alive and not t.held and len(t.samples) < config.max_samples
        ]
        if (
            not active
            or _decided(batch.trials, config)
            or (
                all(t.converged for t in active)
                and not (RESOLVE_RACES and _open_race(batch.trials, batch.statistic, config))
            )
        ):
            break
        batch.round += 1
        for trial in active:
            before, dropped_before = trial.best, trial.dropping_first
            batch.take(trial)
            if trial.error is None:
                _note_progress(trial, before, dropped_before, config, ctx)
        if batch.check_short_circuit(batch.trials):
            break
        _eliminate(batch.trials, config, ctx, long_calls)
    return batch.finish()


def _decided(trials: Sequence[_Trial], config: BenchConfig) -> bool:
    """Whether the batch has nothing left to decide: one candidate alive (the others failed,
    were cut, or the batch held only it) with `min_samples` samples, where the seed stops.
    Sampling it on to convergence, as a race would, changes no decision: it cost a lone
    candidate up to `max_samples` calls for a result its samples only describe."""
    alive = [t for t in trials if t.alive]
    return len(alive) == 1 and len(alive[0].samples) >= config.min_samples


def _open_race(trials: Sequence[_Trial], statistic: Statistic | None, config: BenchConfig) -> bool:
    """Whether a race the samples have not called yet holds the batch open once every
    candidate has converged: the leader by score (the winner `finish` would pick before a
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
    (`Preference`) takes it from there. Races of best-weighted scores alone (device times,
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

    def sampled(trial: _Trial) -> bool:
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


def _note_progress(
    trial: _Trial,
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


def _hopeless_at_warm_up(
    trial: _Trial,
    trials: list[_Trial],
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
    trial.eliminated = True
    log_event(
        ctx,
        Eliminated(
            trial.name,
            trial.index,
            f"hopeless: warm warm-up {format_duration(trial.warm_up)} over {factor:g} x"
            f" leader {format_duration(leader)}",
        ),
    )
    return True


def _drop_hopeless(
    trials: list[_Trial],
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
            trial.eliminated = True
            log_event(
                ctx,
                Eliminated(
                    trial.name,
                    trial.index,
                    f"hopeless: warm-up and first sample over {factor:g} x"
                    f" leader {format_duration(leader)}"
                    f" (first {format_duration(trial.samples[0])})",
                ),
            )


def _factor(figure: float, config: BenchConfig, long_calls: LongCalls | None) -> float:
    return long_calls.margin(figure, config) if long_calls else config.hopeless


def _eliminate(
    trials: list[_Trial],
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

    def judged(trial: _Trial) -> bool:
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
            trial.eliminated = True
            survivors.remove(trial)
            log_event(ctx, Eliminated(trial.name, trial.index, reason))
        elif not trial.held:
            trial.held = True
            log_event(ctx, Held(trial.name, trial.index, len(trial.samples), reason))
