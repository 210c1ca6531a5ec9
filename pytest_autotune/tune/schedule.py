"""How a batch of candidates is sampled: the fixed pass and the adaptive round robin.

Pure logic over a `sample(index) -> seconds` function, so it runs the same under a real
device timer and under the fake clock of the unit tests.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from pytest_autotune.tune.benchmark import AutotuneOutcome, AutotuneResult, check_sample
from pytest_autotune.tune.config import BenchConfig
from pytest_autotune.tune.errors import AutotuneError
from pytest_autotune.tune.log import (
    AutotuneLogContext,
    Converged,
    Eliminated,
    ShortCircuit,
    log_event,
)

Sampler = Callable[[int], float]
"""`sample(index) -> seconds`: time one call of candidate `index`; raises what it raises."""

IMPROVEMENT = 0.02
"""A round that improves a candidate's best time by less than this is a stall."""
STALLS_TO_CONVERGE = 2


@dataclass(slots=True)
class _Trial:
    """The running state of one candidate in a batch."""

    index: int
    name: str
    drops_first: bool
    """Whether the first sample is warm-up biased (see `effective`)."""
    samples: list[float] = field(default_factory=list)
    error: AutotuneError | None = None
    eliminated: bool = False
    converged: bool = False
    stalls: int = 0
    under_limit: int = 0

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

    def result(self) -> AutotuneResult:
        if self.error is not None:
            return self.error
        return AutotuneOutcome(
            self.name, self.index, tuple(self.samples), dropped_first=self.dropping_first
        )


@dataclass(frozen=True, slots=True)
class BatchResult:
    """What one batch measured: a result per candidate that ran, and the winner if any."""

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
    ) -> None:
        self.trials = [_Trial(i, names[i], drop_first) for i in indices]
        self._sample = sample
        self._limit = time_limit
        self._short_circuit = short_circuit_samples
        self._ctx = ctx
        self.short_circuited = False

    def take(self, trial: _Trial, keep: bool = True) -> None:
        """One sample of `trial`; a failure disqualifies it for good."""
        try:
            seconds = check_sample(trial.name, self._sample(trial.index))
        except Exception as exc:
            trial.error = AutotuneError.from_exception(trial.name, exc)
            return
        if not keep:
            return
        trial.samples.append(seconds)
        if self._limit is not None and self._short_circuit and seconds <= self._limit:
            trial.under_limit += 1
            if trial.under_limit >= self._short_circuit:
                self.short_circuited = True
                log_event(
                    self._ctx,
                    ShortCircuit(trial.name, trial.index, trial.under_limit, self._limit),
                )

    def finish(self) -> BatchResult:
        results = {t.index: t.result() for t in self.trials if t.samples or t.error}
        alive = [t for t in self.trials if t.alive and t.samples]
        winner = min(alive, key=lambda t: t.result().score).index if alive else None  # type: ignore[union-attr]
        return BatchResult(results, winner, self.short_circuited)


def fixed_pass(
    indices: Sequence[int],
    names: Sequence[str],
    sample: Sampler,
    config: BenchConfig,
    time_limit: float | None = None,
    short_circuit_samples: int | None = None,
    ctx: AutotuneLogContext | None = None,
) -> BatchResult:
    """Each candidate in turn: `config.warmups` warm-ups, then `config.max_samples` samples.

    Every sample counts: the warm-ups before the first have absorbed the allocation and
    clock ramp costs that make the adaptive round robin drop its first.
    """
    batch = _Batch(indices, names, sample, time_limit, short_circuit_samples, ctx, False)
    for trial in batch.trials:
        for _ in range(config.warmups):
            if trial.error is None:
                batch.take(trial, keep=False)
        for _ in range(config.max_samples):
            if trial.error is not None or batch.short_circuited:
                break
            batch.take(trial)
        if batch.short_circuited:
            break
    return batch.finish()


def adaptive_round_robin(
    indices: Sequence[int],
    names: Sequence[str],
    sample: Sampler,
    config: BenchConfig,
    time_limit: float | None = None,
    short_circuit_samples: int | None = None,
    ctx: AutotuneLogContext | None = None,
) -> BatchResult:
    """One warm-up and one sample each, then rounds of one sample per live candidate.

    Interleaving the candidates spreads a slow phase of the machine over all of them
    instead of one. Once three samples exist the first, warm-up biased one is dropped, and
    `min_samples` counts the samples left, so with the default of 3 a decision rests on
    three samples: the fewest whose median and spread one preempted sample cannot move (a
    median of two is their mean). After `min_samples`, a candidate whose best exceeds
    `speed_factor` times the leader's best is eliminated (never below two survivors, so the
    winner is always chosen against a rival); a candidate converges once it has
    `min_samples` and two rounds without a 2% improvement of its best; the batch ends when
    every survivor has converged or taken `max_samples`, or early on a short circuit.
    """
    batch = _Batch(indices, names, sample, time_limit, short_circuit_samples, ctx, True)
    for trial in batch.trials:
        batch.take(trial, keep=False)
        if trial.error is None:
            batch.take(trial)
        if batch.short_circuited:
            return batch.finish()

    while True:
        active = [
            t
            for t in batch.trials
            if t.alive and not t.converged and len(t.samples) < config.max_samples
        ]
        if not active:
            break
        for trial in active:
            before = trial.best
            batch.take(trial)
            if batch.short_circuited:
                return batch.finish()
            if trial.error is None:
                _note_progress(trial, before, config, ctx)
        _eliminate(batch.trials, config, ctx)
    return batch.finish()


def _note_progress(
    trial: _Trial, before: float, config: BenchConfig, ctx: AutotuneLogContext | None
) -> None:
    if trial.best < before * (1.0 - IMPROVEMENT):
        trial.stalls = 0
    else:
        trial.stalls += 1
    if trial.stalls >= STALLS_TO_CONVERGE and len(trial.effective) >= config.min_samples:
        trial.converged = True
        log_event(ctx, Converged(trial.name, trial.index, len(trial.samples)))


def _eliminate(trials: list[_Trial], config: BenchConfig, ctx: AutotuneLogContext | None) -> None:
    survivors = [t for t in trials if t.alive]
    if len(survivors) <= 2:
        return
    leader = min(t.best for t in survivors)
    # The slowest go first, so if the floor of two stops the cut, the closest rivals stay.
    for trial in sorted(survivors, key=lambda t: t.best, reverse=True):
        if len(survivors) <= 2:
            break
        if len(trial.effective) >= config.min_samples and trial.best > config.speed_factor * leader:
            trial.eliminated = True
            survivors.remove(trial)
            log_event(
                ctx,
                Eliminated(
                    trial.name,
                    trial.index,
                    f"best {trial.best:.3e} s > {config.speed_factor} x leader {leader:.3e} s",
                ),
            )
