"""Records of tuning decisions: what happened, for tools.

One `AutotuneRecord` per decision, one JSON object per line, in a versioned schema that
`read_records` reads back, whatever the log level (`pytest_autotune.tune.log` is for people).
"""

from __future__ import annotations

import dataclasses
import json
import os
import sys
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pytest_autotune.tune.benchmark import NS_PER_S
from pytest_autotune.tune.files import json_kind
from pytest_autotune.tune.log import STREAMS
from pytest_autotune.tune.run import RunInfo

if TYPE_CHECKING:
    from pytest_autotune.tune.config import AutotuneConfig

RECORD_SCHEMA_VERSION = 2
"""Bumped on any change a reader of version N could misread; readers refuse newer ones.
Version 2 added `run` (id, time, commit); version 1 records read with `run` None."""


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
            "time_limit_ns": None if self.time_limit is None else round(self.time_limit * NS_PER_S),
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
            time_limit=None if time_limit_ns is None else time_limit_ns / NS_PER_S,
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
            raise RecordError(f"{where}: expected a JSON object, got {json_kind(data)}")
        try:
            records.append(AutotuneRecord.from_json(data))
        except RecordError as exc:
            raise RecordError(f"{where}: {exc}") from None
    return records
