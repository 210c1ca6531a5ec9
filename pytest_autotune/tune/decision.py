"""`TuneDecision`: one tuning decision, which candidate won a key and everything measured
for it, in the forms the cache file and the records keep; and `TuneCacheResult`, what a
tuner's cache knows of a key."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Literal

from pytest_autotune.tune.benchmark import AutotuneOutcome, AutotuneResult, result_to_json
from pytest_autotune.tune.bounds import Bounds
from pytest_autotune.tune.cache import PersistentCacheValue
from pytest_autotune.tune.check_result import CheckResult
from pytest_autotune.tune.errors import NOT_REACHED, AutotuneError, AutotuneErrorKind
from pytest_autotune.tune.key import key_to_json
from pytest_autotune.tune.log import AutotuneLogContext
from pytest_autotune.tune.records import AutotuneRecord


@dataclass(frozen=True, slots=True)
class TuneCacheResult:
    """Result of a cache lookup (the seed's enum): hit with the fastest index, a persisted
    entry not yet checked against the candidate list, a tuning under way, or a miss."""

    kind: Literal["hit", "unchecked", "pending", "miss"]
    fastest_index: int | None = None


MEASURED_FAILURES = ("failed while measured: ", "declined while measured: ")
"""How the result of a candidate that raised while the gate measured it begins
(`TuneDecision.without_winner`)."""


@dataclass(frozen=True, slots=True)
class TuneDecision:
    """One tuning decision: which candidate won for a key, and everything measured for it."""

    key: Any
    checksum: str
    fastest_index: int
    fastest_name: str
    results: dict[int, AutotuneResult]
    bounds: Bounds | None
    context: AutotuneLogContext
    measured: bool
    """False when every candidate failed: such a decision stays in memory, never on disk."""
    source: Literal["tuned", "cache", "single"]
    duration: float = 0.0
    checks: tuple[CheckResult, ...] = field(default=())
    error: AutotuneError | None = None
    """The seed's NoValidKernelFound when no candidate can run for the key: every one
    failed, declined or was never reached; `execute` raises it instead of calling one."""

    def result_list(self) -> list[dict[str, Any]]:
        return [result_to_json(self.results[i], i) for i in sorted(self.results)]

    def unreached(self) -> bool:
        """Whether its plan never reached some of its candidates (a batch of a `groups=`
        plan found a winner first)."""
        return any(
            isinstance(r, AutotuneError) and r.message.startswith(NOT_REACHED)
            for r in self.results.values()
        )

    def without_winner(self, error: AutotuneError) -> TuneDecision:
        """This decision with the candidate `error` names (its winner where it names none)
        failed by it, raised after tuning, while measured again; where that was the
        winner, the next fastest measured candidate, by its samples' score, wins (the
        client's `preferred` is not asked again), and the decision is not measured where
        none is left."""
        index = next(
            (i for i, r in self.results.items() if error.name and r.name == error.name),
            self.fastest_index,
        )
        declined = error.kind is AutotuneErrorKind.SKIP  # `AutotuneSkip` raised then
        how = MEASURED_FAILURES[1] if declined else MEASURED_FAILURES[0]
        failed = AutotuneError(error.kind, f"{how}{error.message}", self.results[index].name)
        results = {**self.results, index: failed}
        if index != self.fastest_index:
            return replace(self, results=results)
        measured = {i: r for i, r in results.items() if isinstance(r, AutotuneOutcome)}
        if not measured:
            return replace(self, results=results, measured=False)
        index = min(measured, key=lambda i: measured[i].score)
        winner = measured[index].name
        return replace(self, results=results, fastest_index=index, fastest_name=winner)

    def to_cache_value(self) -> PersistentCacheValue:
        return PersistentCacheValue(
            key=key_to_json(self.key),
            fastest_index=self.fastest_index,
            fastest_name=self.fastest_name,
            results=tuple(self.results[i] for i in sorted(self.results)),
            bounds=self.bounds.to_json() if self.bounds is not None else None,
        )

    def to_record(self, tuner: str, device_id: str) -> AutotuneRecord:
        return AutotuneRecord(
            tuner=tuner,
            device_id=device_id,
            key=key_to_json(self.key),
            checksum=self.checksum,
            fastest_index=self.fastest_index if self.measured else None,
            fastest_name=self.fastest_name if self.measured else None,
            results=tuple(self.result_list()),
            bounds=self.bounds.to_json() if self.bounds is not None else None,
            time_limit=self.context.time_limit,
            events=tuple(e.to_json() for e in self.context.events),
            checks=tuple(c.to_json() for c in self.checks),
            source=self.source,
            duration_ns=round(self.duration * 1e9),
        )
