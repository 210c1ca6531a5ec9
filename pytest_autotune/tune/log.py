"""Logs of tuning decisions: what happened, for people.

Two audiences, two channels. People read log lines through the standard `logging` logger
"pytest_autotune", as much as the `AutotuneLogLevel` asks for, and the events here. Tools
read records (`pytest_autotune.tune.records`), whatever the log level.
"""

from __future__ import annotations

import enum
import logging
import math
from collections.abc import Callable, Mapping
from dataclasses import MISSING, Field, dataclass, field, fields
from typing import Any, ClassVar

from pytest_autotune.tune.benchmark import NS_PER_S
from pytest_autotune.tune.check_result import RAISED, CheckResult
from pytest_autotune.tune.wording import chosen, counted

logger = logging.getLogger("pytest_autotune")
# A library's logger with no handler of its own prints its warnings to stderr through
# Python's last resort, in programs that configured no logging: an AutotuneError the
# caller caught was printed too. Quiet unless the program asks (logging.basicConfig, or
# pytest's log capture); what the tuner decided is in the records and the exceptions.
logger.addHandler(logging.NullHandler())

STREAMS = ("stdout", "stderr")
"""Sink names that mean a standard stream rather than a file."""


class AutotuneLogLevel(enum.Enum):
    """How much of the tuning goes to the `logging` logger "pytest_autotune"."""

    DISABLED = "disabled"
    MINIMAL = "minimal"
    """One line per decision: which candidate won for which key, and what it cost."""
    FULL = "full"
    """Every event as it happens, samples included."""

    @classmethod
    def parse(cls, value: str, source: str) -> AutotuneLogLevel:
        return chosen(cls, value, source, "log level")


_FIELD_TYPES: Mapping[str, Callable[[Any], Any]] = {
    "str": str,
    "int": int,
    "float": float,
    "tuple[int, ...]": lambda values: tuple(int(v) for v in values),
}
"""How a field of each declared type reads back from JSON (`AutotuneLogEvent.from_json`)."""


def _ns(seconds: float) -> int:
    return round(seconds * NS_PER_S)


def _seconds(ns: int) -> float:
    return ns / NS_PER_S


_UNITS = (("s", 1.0), ("ms", 1e-3), ("us", 1e-6), ("ns", 1e-9))


def format_duration(seconds: float) -> str:
    """Three significant digits in the unit that keeps the number at 1 or more: `189 us`.

    The unit is chosen after rounding, so 999.96 us reads `1.00 ms`, never `1000 us`. The
    value is first rounded to 12 digits: a median that went through ln and exp (the gate's
    mean of sessions) comes back a few ulps off, and 2865 ns as 2.86499... read `2.86 us`
    in a message beside the same median's `2.87 us` in the table.
    """
    if not (math.isfinite(seconds) and seconds >= 0):
        return f"{seconds} s"
    value, unit = 0.0, "ns"
    for name, scale in _UNITS:
        value, unit = float(f"{float(f'{seconds / scale:.12g}'):.3g}"), name
        if value >= 1:
            break
    decimals = 0 if value >= 100 else 1 if value >= 10 else 2
    return f"{value:.{decimals}f} {unit}"


class AutotuneLogEvent:
    """Events that occurred during autotuning: the seed's enum, with `Held` and `Preferred`
    beside its variants. Each variant is a frozen dataclass deriving from this class, tagged
    "event" in JSON, and reachable from it as the seed spells it: `AutotuneLogEvent.ShortCircuit`
    for `AutotuneLogEvent::ShortCircuit` (a union of the classes, as this was, offered a
    porter no attribute per variant), and `isinstance(event, AutotuneLogEvent)` holds for
    each."""

    __slots__ = ()
    EVENT: ClassVar[str]
    __dataclass_fields__: ClassVar[dict[str, Field[Any]]]  # each variant is a dataclass
    TuningStep: ClassVar[type[TuningStep]]
    CandidateSampled: ClassVar[type[CandidateSampled]]
    Eliminated: ClassVar[type[Eliminated]]
    Held: ClassVar[type[Held]]
    ShortCircuit: ClassVar[type[ShortCircuit]]
    Converged: ClassVar[type[Converged]]
    Preferred: ClassVar[type[Preferred]]
    ChecksDone: ClassVar[type[ChecksDone]]

    IN_NANOSECONDS: ClassVar[Mapping[str, str]] = {}
    """The fields of seconds that JSON holds in whole nanoseconds, and the names they go
    by there (`duration` as `duration_ns`): a record's times are integers, as the seed's."""

    def to_json(self) -> dict[str, Any]:
        """Tagged "event", then each field in the order the class declares them, under its
        own name (or its `IN_NANOSECONDS` one); a tuple as a list."""
        out: dict[str, Any] = {"event": self.EVENT}
        for f in fields(self):
            value = getattr(self, f.name)
            in_ns = self.IN_NANOSECONDS.get(f.name)
            if in_ns is not None:
                out[in_ns] = _ns(value)
            else:
                out[f.name] = list(value) if isinstance(value, tuple) else value
        return out

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> AutotuneLogEvent:
        """The event `to_json` wrote, each field converted to its declared type (a record is
        read from a file anyone may have edited). A field with a default may be missing:
        records written before it was (`Preferred.by`)."""
        values: dict[str, Any] = {}
        for f in fields(cls):
            in_ns = cls.IN_NANOSECONDS.get(f.name)
            if in_ns is not None:
                values[f.name] = _seconds(data[in_ns])
            elif f.name in data or f.default is MISSING:
                values[f.name] = _FIELD_TYPES[str(f.type)](data[f.name])
        return cls(**values)


@dataclass(frozen=True, slots=True)
class TuningStep(AutotuneLogEvent):
    """One batch of the plan was benchmarked: which candidates, and how long it took."""

    EVENT: ClassVar[str] = "tuning_step"
    IN_NANOSECONDS: ClassVar[Mapping[str, str]] = {"duration": "duration_ns"}
    batch: int
    indices: tuple[int, ...]
    duration: float

    def __str__(self) -> str:
        duration = format_duration(self.duration)
        return f"batch {self.batch}: candidates {list(self.indices)} in {duration}"


@dataclass(frozen=True, slots=True)
class CandidateSampled(AutotuneLogEvent):
    """One timed sample; kept and logged only at the full level, since the results carry
    every sample anyway and an event each would swell records tenfold."""

    EVENT: ClassVar[str] = "candidate_sampled"
    IN_NANOSECONDS: ClassVar[Mapping[str, str]] = {"seconds": "sample_ns"}
    name: str
    index: int
    seconds: float

    def __str__(self) -> str:
        return f"{self.name} [#{self.index}]: sample {format_duration(self.seconds)}"


@dataclass(frozen=True, slots=True)
class Eliminated(AutotuneLogEvent):
    """The adaptive round robin dropped a candidate too slow to win."""

    EVENT: ClassVar[str] = "eliminated"
    name: str
    index: int
    reason: str

    def __str__(self) -> str:
        return f"{self.name} [#{self.index}] eliminated: {self.reason}"


@dataclass(frozen=True, slots=True)
class Held(AutotuneLogEvent):
    """The adaptive round robin stopped sampling a candidate too slow to win that the floor
    of two survivors keeps as the winner's rival: its samples so far stand."""

    EVENT: ClassVar[str] = "held"
    name: str
    index: int
    samples: int
    reason: str

    def __str__(self) -> str:
        return (
            f"{self.name} [#{self.index}] held as the rival after {self.samples} samples:"
            f" {self.reason}"
        )


@dataclass(frozen=True, slots=True)
class ShortCircuit(AutotuneLogEvent):
    """A candidate landed under the roofline time limit often enough to end its batch:
    it is close enough to the hardware's limit that tuning further cannot pay."""

    EVENT: ClassVar[str] = "short_circuit"
    IN_NANOSECONDS: ClassVar[Mapping[str, str]] = {"time_limit": "time_limit_ns"}
    name: str
    index: int
    samples_under_limit: int
    time_limit: float

    def __str__(self) -> str:
        return (
            f"{self.name} [#{self.index}] ends the batch:"
            f" {counted(self.samples_under_limit, 'sample')} under the roofline time limit"
            f" {format_duration(self.time_limit)}"
        )


@dataclass(frozen=True, slots=True)
class Converged(AutotuneLogEvent):
    """A candidate's best time stopped improving, so it takes no more samples."""

    EVENT: ClassVar[str] = "converged"
    name: str
    index: int
    samples: int

    def __str__(self) -> str:
        return f"{self.name} [#{self.index}] converged after {self.samples} samples"


@dataclass(frozen=True, slots=True)
class Preferred(AutotuneLogEvent):
    """A batch's winner is not the candidate of the lowest score, so that the log says why:
    `by` "client", a tie the client broke (`CudaClient.preferred`); "rounds", faster
    round by round (`batch.paired_scores`)."""

    EVENT: ClassVar[str] = "preferred"
    name: str
    index: int
    over: str
    over_index: int
    by: str = "client"

    def __str__(self) -> str:
        why = (
            "faster than it in most rounds, which met the machine's slow spells alike"
            if self.by == "rounds"
            else "a tie the client broke"
        )
        return (
            f"{self.name} [#{self.index}] wins over {self.over} [#{self.over_index}], whose"
            f" score is lower: {why}"
        )


@dataclass(frozen=True, slots=True)
class ChecksDone(AutotuneLogEvent):
    """Every candidate's output was compared with the reference's."""

    EVENT: ClassVar[str] = "checks_done"
    results: tuple[CheckResult, ...]

    def to_json(self) -> dict[str, Any]:
        return {"event": self.EVENT, "results": [r.to_json() for r in self.results]}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ChecksDone:
        return cls(tuple(CheckResult.from_json(r) for r in data["results"]))

    def __str__(self) -> str:
        # A candidate that declined the key is `passed` (it fails nothing), but no output of
        # it was checked: counted as passed, the log read "3 of 3 passed" beside its row's
        # "skipped".
        # One that raised compared nothing: "failed: boom" read as a wrong output, where
        # the candidate's row says it raised.
        raised = [r.name for r in self.results if not r.passed and r.message.startswith(RAISED)]
        failed = [r.name for r in self.results if not r.passed and r.name not in raised]
        skipped = [r.name for r in self.results if r.passed and r.skipped]
        passed = len(self.results) - len(failed) - len(raised) - len(skipped)
        return (
            f"checks: {passed} of {len(self.results)} passed"
            + (f"; failed: {', '.join(failed)}" if failed else "")
            + (f"; raised: {', '.join(raised)}" if raised else "")
            + (f"; skipped: {', '.join(skipped)}" if skipped else "")
        )


AutotuneLogEvent.TuningStep = TuningStep
AutotuneLogEvent.CandidateSampled = CandidateSampled
AutotuneLogEvent.Eliminated = Eliminated
AutotuneLogEvent.Held = Held
AutotuneLogEvent.ShortCircuit = ShortCircuit
AutotuneLogEvent.Converged = Converged
AutotuneLogEvent.Preferred = Preferred
AutotuneLogEvent.ChecksDone = ChecksDone
VARIANTS: tuple[type[AutotuneLogEvent], ...] = (
    TuningStep,
    CandidateSampled,
    Eliminated,
    Held,
    ShortCircuit,
    Converged,
    Preferred,
    ChecksDone,
)
"""Every variant of `AutotuneLogEvent`, in the order of the seed's enum and ours."""


def event_from_json(data: Mapping[str, Any]) -> AutotuneLogEvent:
    """Read back an event written by its `to_json` (as a record holds it)."""
    try:
        return _event_from_json(data)
    except (KeyError, TypeError, ValueError) as exc:
        raise ValueError(f"malformed autotune log event {dict(data)!r}: {exc!r}") from None


_READERS: Mapping[str, Callable[[Mapping[str, Any]], AutotuneLogEvent]] = {
    variant.EVENT: variant.from_json for variant in VARIANTS
}
"""How each event's JSON reads back, by its "event" tag."""


def known_event(data: Mapping[str, Any]) -> bool:
    """Whether this version reads the event: a later one may log events of new kinds (as
    `Preferred` was added), which a reader that only shows them need not refuse. A tag
    that is no string (a hand-edited record's list) is no kind it knows, not a TypeError."""
    tag = data.get("event")
    return isinstance(tag, str) and tag in _READERS


def _event_from_json(data: Mapping[str, Any]) -> AutotuneLogEvent:
    tag = data["event"]
    reader = _READERS.get(tag)
    if reader is None:
        raise ValueError(f"unknown autotune log event {tag!r}")
    return reader(data)


@dataclass(slots=True)
class AutotuneLogContext:
    """What one tuning decision saw: its bounds, time limit, events and checks.

    Filled as the tuning goes, then turned into a record. `level` decides what reaches the
    `logging` logger as it happens; the events are kept for the record at every level.
    """

    bounds: dict[str, Any] | None = None
    """The JSON form of the decision's `Bounds`; opaque here."""
    time_limit: float | None = None
    """Seconds under which a sample counts towards the short circuit."""
    events: list[AutotuneLogEvent] = field(default_factory=list)
    checks: list[CheckResult] = field(default_factory=list)
    level: AutotuneLogLevel | str = AutotuneLogLevel.DISABLED
    """An `AutotuneLogLevel` or its name ("full"), as the config takes it; held as the member."""
    about: str | None = None
    """What the events are of, as each line the full level logs begins: `tuner: key`, as
    the decision line names them. A program's threads tune keys of several tuners at once,
    and their lines interleave."""

    def __post_init__(self) -> None:
        # A name kept as it was matched no member: the context logged nothing and dropped
        # every sample, without a word.
        if isinstance(self.level, str):
            self.level = AutotuneLogLevel.parse(self.level, "AutotuneLogContext: level")

    @property
    def lead(self) -> str:
        """How a line of the full level begins: what its events are of, if known."""
        return "" if self.about is None else f"{self.about}: "

    def event(self, event: AutotuneLogEvent) -> None:
        """Keep an event, and log it at the full level (samples only exist at that level)."""
        if self.level is AutotuneLogLevel.FULL:
            logger.info("%s%s", self.lead, event)
        elif isinstance(event, CandidateSampled):
            return
        self.events.append(event)


def log_event(ctx: AutotuneLogContext | None, event: AutotuneLogEvent) -> None:
    """Add an event to a context that may be absent (the seed's `AutotuneLoggerExt`).

    Code that tunes without anyone listening passes None, and the hot loop need not branch.
    """
    if ctx is not None:
        ctx.event(event)


def log_failure(ctx: AutotuneLogContext | None, name: str, index: int, error: object) -> None:
    """A candidate that failed, logged as it happens at the full level ("every event"). Not
    an event of the record: its result there already holds the error."""
    if ctx is not None and ctx.level is AutotuneLogLevel.FULL:
        logger.info("%s%s [#%d] failed: %s", ctx.lead, name, index, error)


def log_decision(tuner: str, fastest_name: str | None, key: Any, ctx: AutotuneLogContext) -> None:
    """The one line per decision of the minimal level (and the full level's last word);
    `fastest_name` None where no candidate can run for the key, which the line says (it
    named the first planned candidate, which never runs, as the key's winner)."""
    if ctx.level is AutotuneLogLevel.DISABLED or not logger.isEnabledFor(logging.INFO):
        return
    steps = [e for e in ctx.events if isinstance(e, TuningStep)]
    took = sum(step.duration for step in steps)
    limit = (
        "" if ctx.time_limit is None else f", roofline time limit {format_duration(ctx.time_limit)}"
    )
    logger.info(
        "%s: %s -> %s (%s in %s%s)",
        tuner,
        key,
        fastest_name if fastest_name is not None else "no candidate succeeded",
        counted(len(steps), "batch", "batches"),
        format_duration(took),
        limit,
    )
