"""Logs and records of tuning decisions: what happened, for people and for tools.

Two audiences, two channels. People read log lines through the standard `logging` logger
"pytest_autotune", as much as the `AutotuneLogLevel` asks for. Tools read records: one
`AutotuneRecord` per decision, one JSON object per line, in a versioned schema that
`read_records` reads back, whatever the log level.
"""

from __future__ import annotations

import dataclasses
import enum
import json
import logging
import math
import os
import sys
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from pytest_autotune.tune.benchmark import NS_PER_S
from pytest_autotune.tune.checks import CheckResult
from pytest_autotune.tune.run import RunInfo

if TYPE_CHECKING:
    from pytest_autotune.tune.config import AutotuneConfig

logger = logging.getLogger("pytest_autotune")

RECORD_SCHEMA_VERSION = 2
"""Bumped on any change a reader of version N could misread; readers refuse newer ones.
Version 2 added `run` (id, time, commit); version 1 records read with `run` None."""

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
        try:
            return cls(value.strip().lower())
        except ValueError:
            choices = ", ".join(level.value for level in cls)
            raise ValueError(
                f"{source}: log level must be one of {choices}, got {value!r}"
            ) from None


def _ns(seconds: float) -> int:
    return round(seconds * NS_PER_S)


def _seconds(ns: int) -> float:
    return ns / NS_PER_S


_UNITS = (("s", 1.0), ("ms", 1e-3), ("us", 1e-6), ("ns", 1e-9))


def format_duration(seconds: float) -> str:
    """Three significant digits in the unit that keeps the number at 1 or more: `189 us`.

    The unit is chosen after rounding, so 999.96 us reads `1.00 ms`, never `1000 us`.
    """
    if not (math.isfinite(seconds) and seconds >= 0):
        return f"{seconds} s"
    value, unit = 0.0, "ns"
    for name, scale in _UNITS:
        value, unit = float(f"{seconds / scale:.3g}"), name
        if value >= 1:
            break
    decimals = 0 if value >= 100 else 1 if value >= 10 else 2
    return f"{value:.{decimals}f} {unit}"


@dataclass(frozen=True, slots=True)
class TuningStep:
    """One batch of the plan was benchmarked: which candidates, and how long it took."""

    EVENT: ClassVar[str] = "tuning_step"
    batch: int
    indices: tuple[int, ...]
    duration: float

    def to_json(self) -> dict[str, Any]:
        return {
            "event": self.EVENT,
            "batch": self.batch,
            "indices": list(self.indices),
            "duration_ns": _ns(self.duration),
        }

    def __str__(self) -> str:
        duration = format_duration(self.duration)
        return f"batch {self.batch}: candidates {list(self.indices)} in {duration}"


@dataclass(frozen=True, slots=True)
class CandidateSampled:
    """One timed sample; kept and logged only at the full level, since the results carry
    every sample anyway and an event each would swell records tenfold."""

    EVENT: ClassVar[str] = "candidate_sampled"
    name: str
    index: int
    seconds: float

    def to_json(self) -> dict[str, Any]:
        return {
            "event": self.EVENT,
            "name": self.name,
            "index": self.index,
            "sample_ns": _ns(self.seconds),
        }

    def __str__(self) -> str:
        return f"{self.name} [#{self.index}]: sample {format_duration(self.seconds)}"


@dataclass(frozen=True, slots=True)
class Eliminated:
    """The adaptive round robin dropped a candidate too slow to win."""

    EVENT: ClassVar[str] = "eliminated"
    name: str
    index: int
    reason: str

    def to_json(self) -> dict[str, Any]:
        return {"event": self.EVENT, "name": self.name, "index": self.index, "reason": self.reason}

    def __str__(self) -> str:
        return f"{self.name} [#{self.index}] eliminated: {self.reason}"


@dataclass(frozen=True, slots=True)
class ShortCircuit:
    """A candidate landed under the roofline time limit often enough to end its batch:
    it is close enough to the hardware's limit that tuning further cannot pay."""

    EVENT: ClassVar[str] = "short_circuit"
    name: str
    index: int
    samples_under_limit: int
    time_limit: float

    def to_json(self) -> dict[str, Any]:
        return {
            "event": self.EVENT,
            "name": self.name,
            "index": self.index,
            "samples_under_limit": self.samples_under_limit,
            "time_limit_ns": _ns(self.time_limit),
        }

    def __str__(self) -> str:
        return (
            f"{self.name} [#{self.index}] ends the batch: {self.samples_under_limit} samples "
            f"under the time limit {format_duration(self.time_limit)}"
        )


@dataclass(frozen=True, slots=True)
class Converged:
    """A candidate's best time stopped improving, so it takes no more samples."""

    EVENT: ClassVar[str] = "converged"
    name: str
    index: int
    samples: int

    def to_json(self) -> dict[str, Any]:
        return {
            "event": self.EVENT,
            "name": self.name,
            "index": self.index,
            "samples": self.samples,
        }

    def __str__(self) -> str:
        return f"{self.name} [#{self.index}] converged after {self.samples} samples"


@dataclass(frozen=True, slots=True)
class ChecksDone:
    """Every candidate's output was compared with the reference's."""

    EVENT: ClassVar[str] = "checks_done"
    results: tuple[CheckResult, ...]

    def to_json(self) -> dict[str, Any]:
        return {"event": self.EVENT, "results": [r.to_json() for r in self.results]}

    def __str__(self) -> str:
        failed = [r.name for r in self.results if not r.passed]
        passed = len(self.results) - len(failed)
        return f"checks: {passed} of {len(self.results)} passed" + (
            f"; failed: {', '.join(failed)}" if failed else ""
        )


AutotuneLogEvent = (
    TuningStep | CandidateSampled | Eliminated | ShortCircuit | Converged | ChecksDone
)
"""Events that occurred during autotuning (the seed's enum), each tagged "event" in JSON."""


def event_from_json(data: Mapping[str, Any]) -> AutotuneLogEvent:
    """Read back an event written by its `to_json` (as a record holds it)."""
    try:
        return _event_from_json(data)
    except (KeyError, TypeError, ValueError) as exc:
        raise ValueError(f"malformed autotune log event {dict(data)!r}: {exc!r}") from None


def _event_from_json(data: Mapping[str, Any]) -> AutotuneLogEvent:
    tag = data["event"]
    if tag == TuningStep.EVENT:
        return TuningStep(
            int(data["batch"]),
            tuple(int(i) for i in data["indices"]),
            _seconds(data["duration_ns"]),
        )
    if tag == CandidateSampled.EVENT:
        return CandidateSampled(str(data["name"]), int(data["index"]), _seconds(data["sample_ns"]))
    if tag == Eliminated.EVENT:
        return Eliminated(str(data["name"]), int(data["index"]), str(data["reason"]))
    if tag == ShortCircuit.EVENT:
        return ShortCircuit(
            str(data["name"]),
            int(data["index"]),
            int(data["samples_under_limit"]),
            _seconds(data["time_limit_ns"]),
        )
    if tag == Converged.EVENT:
        return Converged(str(data["name"]), int(data["index"]), int(data["samples"]))
    if tag == ChecksDone.EVENT:
        return ChecksDone(tuple(CheckResult.from_json(r) for r in data["results"]))
    raise ValueError(f"unknown autotune log event {tag!r}")


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
    level: AutotuneLogLevel = AutotuneLogLevel.DISABLED

    def event(self, event: AutotuneLogEvent) -> None:
        """Keep an event, and log it at the full level (samples only exist at that level)."""
        if self.level is AutotuneLogLevel.FULL:
            logger.info("%s", event)
        elif isinstance(event, CandidateSampled):
            return
        self.events.append(event)


def log_event(ctx: AutotuneLogContext | None, event: AutotuneLogEvent) -> None:
    """Add an event to a context that may be absent (the seed's `AutotuneLoggerExt`).

    Code that tunes without anyone listening passes None, and the hot loop need not branch.
    """
    if ctx is not None:
        ctx.event(event)


def log_decision(tuner: str, fastest_name: str, key: Any, ctx: AutotuneLogContext) -> None:
    """The one line per decision of the minimal level (and the full level's last word)."""
    if ctx.level is AutotuneLogLevel.DISABLED or not logger.isEnabledFor(logging.INFO):
        return
    steps = [e for e in ctx.events if isinstance(e, TuningStep)]
    took = sum(step.duration for step in steps)
    limit = "" if ctx.time_limit is None else f", time limit {format_duration(ctx.time_limit)}"
    logger.info(
        "%s: %s -> %s (%d batches in %s%s)",
        tuner,
        key,
        fastest_name,
        len(steps),
        format_duration(took),
        limit,
    )


class RecordError(ValueError):
    """A record that cannot be read: the message names the file and line, or the field."""


@dataclass(frozen=True, slots=True, kw_only=True)
class AutotuneRecord:
    """The complete record of one tuning decision (the seed's `AutotuneRecord`).

    Durations are seconds here and integer nanoseconds in JSON, like every file we write.
    `extra` is the plugin's room (fraction of roof, verdict) without a schema change.
    """

    schema_version: int = RECORD_SCHEMA_VERSION
    tuner: str
    device_id: str
    key: Any
    """The key's JSON form (`key_to_json`)."""
    checksum: str
    fastest_index: int | None
    """None when no candidate could be measured."""
    fastest_name: str | None
    results: tuple[dict[str, Any], ...] = ()
    """Each candidate's `result_to_json`."""
    bounds: dict[str, Any] | None = None
    time_limit: float | None = None
    events: tuple[dict[str, Any], ...] = ()
    checks: tuple[dict[str, Any], ...] = ()
    source: str = "tuned"
    """"tuned", or where a decision made earlier came from ("cache", "single")."""
    duration_ns: int = 0
    extra: dict[str, Any] = field(default_factory=dict)
    run: RunInfo | None = None
    """The run that made the decision; a `Recorder` stamps its own on a record without one."""

    def to_json(self) -> dict[str, Any]:
        return {
            "schema_version": self.schema_version,
            "tuner": self.tuner,
            "device_id": self.device_id,
            "key": self.key,
            "checksum": self.checksum,
            "fastest_index": self.fastest_index,
            "fastest_name": self.fastest_name,
            "results": list(self.results),
            "bounds": self.bounds,
            "time_limit_ns": None if self.time_limit is None else _ns(self.time_limit),
            "events": list(self.events),
            "checks": list(self.checks),
            "source": self.source,
            "duration_ns": self.duration_ns,
            "extra": self.extra,
            "run": None if self.run is None else self.run.to_json(),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> AutotuneRecord:
        """Read a record, refusing one of a newer schema rather than misreading it."""
        version = data.get("schema_version")
        if not isinstance(version, int) or isinstance(version, bool) or version < 1:
            raise RecordError(f"not an autotune record: schema_version is {version!r}")
        if version > RECORD_SCHEMA_VERSION:
            raise RecordError(
                f"record schema version {version} is newer than this pytest-autotune reads "
                f"({RECORD_SCHEMA_VERSION}); upgrade pytest-autotune"
            )
        unknown = sorted(set(data) - _RECORD_FIELDS)
        if unknown:
            raise RecordError(f"unknown fields {unknown}")
        time_limit_ns = _get(data, "time_limit_ns", (int, type(None)))
        run = _get(data, "run", (dict, type(None))) if version >= 2 else None
        try:
            run_info = None if run is None else RunInfo.from_json(run)
        except ValueError as exc:
            raise RecordError(str(exc)) from None
        return cls(
            schema_version=version,
            tuner=_get(data, "tuner", str),
            device_id=_get(data, "device_id", str),
            key=_get(data, "key", object),
            checksum=_get(data, "checksum", str),
            fastest_index=_get(data, "fastest_index", (int, type(None))),
            fastest_name=_get(data, "fastest_name", (str, type(None))),
            results=_objects(data, "results"),
            bounds=_get(data, "bounds", (dict, type(None))),
            time_limit=None if time_limit_ns is None else _seconds(time_limit_ns),
            events=_objects(data, "events"),
            checks=_objects(data, "checks"),
            source=_get(data, "source", str),
            duration_ns=_get(data, "duration_ns", int),
            extra=_get(data, "extra", dict),
            run=run_info,
        )


_RECORD_FIELDS = frozenset(
    {
        "schema_version",
        "tuner",
        "device_id",
        "key",
        "checksum",
        "fastest_index",
        "fastest_name",
        "results",
        "bounds",
        "time_limit_ns",
        "events",
        "checks",
        "source",
        "duration_ns",
        "extra",
        "run",
    }
)


def _get(data: Mapping[str, Any], name: str, types: type | tuple[type, ...]) -> Any:
    """A field of a record; no field is a boolean, so a JSON true is never taken for 1."""
    if name not in data:
        raise RecordError(f"missing field {name!r}")
    value = data[name]
    if not isinstance(value, types) or (isinstance(value, bool) and types is not object):
        raise RecordError(f"field {name!r} has the wrong type: {value!r}")
    return value


def _objects(data: Mapping[str, Any], name: str) -> tuple[dict[str, Any], ...]:
    items = _get(data, name, list)
    if not all(isinstance(item, dict) for item in items):
        raise RecordError(f"field {name!r} must be a list of objects")
    return tuple(items)


class Recorder:
    """Writes one `AutotuneRecord` per line to a file, stdout or stderr.

    A file is opened in append mode for each record and written with one `write` call,
    so records from several recorders or processes never interleave inside a line, and a
    record is on disk as soon as `record` returns, even if the process then dies. The file
    and its folders are created at once, so a bad path fails before any tuning is done.
    """

    def __init__(self, sink: str | os.PathLike[str], run: RunInfo | None = None) -> None:
        self.sink = sink
        self._run = run
        self._lock = threading.Lock()
        self._path: Path | None = None
        if not (isinstance(sink, str) and sink in STREAMS):
            self._path = Path(sink)
            self._path.parent.mkdir(parents=True, exist_ok=True)
            os.close(os.open(self._path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644))

    @classmethod
    def from_config(cls, config: AutotuneConfig) -> Recorder | None:
        """The recorder of `config.record`, or None when no sink is configured."""
        return None if config.record is None else cls(config.record)

    @property
    def run(self) -> RunInfo:
        """The run stamped on records that carry none: the one given, else one made at the
        first record (this process, now, the working directory's commit)."""
        if self._run is None:
            self._run = RunInfo.current()
        return self._run

    def record(self, record: AutotuneRecord) -> None:
        if record.run is None:
            record = dataclasses.replace(record, run=self.run)
        line = json.dumps(record.to_json(), allow_nan=False) + "\n"
        with self._lock:
            if self._path is None:
                stream = getattr(sys, str(self.sink))
                stream.write(line)
                stream.flush()
                return
            data = line.encode("utf-8")
            fd = os.open(self._path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
            try:
                written = 0
                while written < len(data):
                    written += os.write(fd, data[written:])
            finally:
                os.close(fd)


def read_records(path: str | os.PathLike[str]) -> list[AutotuneRecord]:
    """Every record of a JSON-lines file; blank lines are allowed, bad ones name their line."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise RecordError(f"{os.fspath(path)}: cannot read records: {exc}") from None
    records: list[AutotuneRecord] = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        where = f"{os.fspath(path)}:{number}"
        try:
            data = json.loads(line)
        except json.JSONDecodeError as exc:
            raise RecordError(f"{where}: invalid JSON: {exc.msg} (column {exc.colno})") from None
        if not isinstance(data, dict):
            raise RecordError(f"{where}: expected a JSON object, got {type(data).__name__}")
        try:
            records.append(AutotuneRecord.from_json(data))
        except RecordError as exc:
            raise RecordError(f"{where}: {exc}") from None
    return records
