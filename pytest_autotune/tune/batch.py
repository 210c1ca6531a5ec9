"""One batch of candidates as it is sampled: what the client gives it (the sampler, the
statistic, its preference, what it says of its long calls), each candidate's trial (its
samples, their rounds, its state), each sample taken and kept, the short circuit, and the
winner at its end: by score, round by round (`paired_scores`), or as the client prefers.

The strategies that drive a batch are `tune/schedule.py`'s.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from pytest_autotune.tune.benchmark import AutotuneOutcome, AutotuneResult, check_sample
from pytest_autotune.tune.config import BenchConfig
from pytest_autotune.tune.errors import NOT_REACHED, AutotuneError, AutotuneErrorKind
from pytest_autotune.tune.log import (
    AutotuneLogContext,
    CandidateSampled,
    Preferred,
    ShortCircuit,
    log_event,
    log_failure,
)

Sampler = Callable[[int], float]
"""`sample(index) -> seconds`: time one call of candidate `index`; raises what it raises."""

Statistic = Callable[[int], str]
"""`statistic(index) -> name`: the rule (`benchmark.STATISTICS`) that scores candidate
`index`'s samples, asked once its batch is over, and after each round once every candidate
has converged (`convergence.open_race`); without one, the seed's `score`."""

Preference = Callable[[dict[int, float]], int]
"""`prefer(scores) -> index`: which of the live candidates (their scores by index) wins
the batch; without one, the lowest score."""

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
class Trial:
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
    more samples (`elimination.eliminate`)."""
    converged: bool = False
    stalls: int = 0
    under_limit: int = 0
    rounds: list[int] = field(default_factory=list)
    """The round each sample was taken in (`Batch.round`): the first pass's confirmations
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


class Batch:
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
        self.trials = [Trial(i, names[i], drop_first) for i in indices]
        self.interleaved = interleaved
        """Whether the candidates are sampled in rounds (the round robin), not each one's
        samples in turn (`paired_scores`)."""
        self.statistic = statistic
        self._prefer = prefer
        self._sample = sample
        self._limit = time_limit
        self._short_circuit = short_circuit_samples if time_limit is not None else None
        self._ctx = ctx
        self.short_circuited: Trial | None = None
        self.round = 0
        """The round of the round robin now sampled: 0 for the first pass."""

    def take(self, trial: Trial, keep: bool = True) -> None:
        """One sample of `trial`; a failure disqualifies it for good."""
        try:
            started = time.perf_counter()
            seconds = self._sample(trial.index)
            seconds = check_sample(trial.name, seconds, time.perf_counter() - started)
        except Exception as exc:
            trial.error = AutotuneError.from_exception(trial.name, exc)
            log_failure(self._ctx, trial.name, trial.index, trial.error.message)
            return
        if not keep:
            trial.warm_up = seconds
            return
        self._keep(trial, seconds)

    def keep_warm_up(self, trial: Trial) -> None:
        """Count `trial`'s warm-up as its first sample (see `schedule.adaptive_round_robin`)."""
        assert trial.warm_up is not None
        self._keep(trial, trial.warm_up)

    def _keep(self, trial: Trial, seconds: float) -> None:
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

    def check_short_circuit(self, trials: Sequence[Trial]) -> bool:
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

    def confirm(self, trial: Trial, config: BenchConfig) -> bool:
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
        if not alive:
            # Every survivor failed after the cuts: those cut for speed ran fine, and one of
            # them wins. Left out, a fast candidate failing its second sample left a hopeless
            # rival that ran well unchosen, and the tuner raised "no candidate succeeded".
            alive = [t for t in self.trials if t.error is None and t.samples]
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


def paired_scores(trials: Sequence[Trial], statistic: Statistic | None) -> dict[int, float] | None:
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
    round (`Trial.rounds`, the first pass being the first); a candidate held or cut
    stops, and its rounds are compared with those the others shared. A first sample a
    candidate's score leaves out (`Trial.dropping_first`) is left out here too."""
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
