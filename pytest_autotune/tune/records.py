"""Records of tuning decisions: what happened, for tools.

One `AutotuneRecord` per decision, one JSON object per line, in a versioned schema that
`read_records` reads back, whatever the log level (`pytest_autotune.tune.log` is for people).
"""

from __future__ import annotations

import contextlib
import dataclasses
import errno
import json
import os
import stat
import sys
import threading
import uuid
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from pytest_autotune.tune.benchmark import NS_PER_S
from pytest_autotune.tune.config import AutotuneConfig
from pytest_autotune.tune.files import (
    JsonFileError,
    NotJson,
    binary,
    json_kind,
    loads_strict,
    lock_beside,
    read_at,
    why_unwritable,
)
from pytest_autotune.tune.log import STREAMS
from pytest_autotune.tune.run import RunInfo
from pytest_autotune.tune.wording import counted

if sys.platform != "win32":
    import fcntl

RECORD_SCHEMA_VERSION = 2
"""Bumped on any change a reader of version N could misread; readers refuse newer ones.
Version 2 added `run` (id, time, commit); version 1 records read with `run` None. A work's
`dtype` (`extra.work`) and a compute bound's unit (its `level`) came without a bump: both
are written only where not fp32, for a work no earlier version could state, so every
record of what an earlier version could tune reads as it did."""


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

    def __post_init__(self) -> None:
        # The time limit as the file holds it, in whole nanoseconds: the session's report,
        # rendered from the records in memory, showed a CPU's 56.5 ns where the same report
        # rendered from the file (`pytest-autotune report`, or a run under pytest-xdist,
        # whose records travel as JSON) showed 56.0 ns, and a record read back was not equal
        # to the one written.
        if self.time_limit is not None:
            object.__setattr__(self, "time_limit", _whole_ns(self.time_limit) / NS_PER_S)

    @property
    def duration(self) -> float:
        """Seconds the tuning took, as `TuneDecision.duration`: the API's durations are
        seconds, and `duration_ns` is the file's integer kept as it was read."""
        return self.duration_ns / NS_PER_S

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
            "time_limit_ns": None if self.time_limit is None else _whole_ns(self.time_limit),
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


def _whole_ns(seconds: float) -> int:
    return round(seconds * NS_PER_S)


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


def _check_sink(sink: object) -> None:
    """Refuse a sink that names no file: `Recorder("")` opened the working directory and
    failed with "Is a directory: '/work/project'", and None failed inside pathlib."""
    __tracebackhide__ = True
    if not isinstance(sink, (str, os.PathLike)):
        raise TypeError(
            f"Recorder: the sink must be a file's path, 'stdout' or 'stderr', got"
            f" {type(sink).__name__}"
        )
    if not os.fspath(sink):
        raise ValueError("Recorder: the sink is empty: give a file's path, 'stdout' or 'stderr'")
    if os.path.isdir(sink):
        raise IsADirectoryError(
            f"Recorder: {os.fspath(sink)} is a folder: give a file's path"
            f" ({os.path.join(os.fspath(sink), 'records.jsonl')})"
        )


class Recorder:
    """Writes one `AutotuneRecord` per line to a file, stdout or stderr.

    A file is opened in append mode for each record and written with one `write` call
    under a lock on the file (`_held_for_append`), so records from several recorders or
    processes never interleave inside a line nor cut each other off, and a
    record is on disk as soon as `record` returns, even if the process then dies; a last
    line an earlier writer left cut short is cut off first (`_after_last_line`). The file
    and its folders are created at once, so a bad path fails before any tuning is done.
    """

    def __init__(self, sink: str | os.PathLike[str], run: RunInfo | None = None) -> None:
        self.sink = sink
        self._run = run
        self._lock = threading.Lock()
        self._path: Path | None = None
        if not (isinstance(sink, str) and sink in STREAMS):
            _check_sink(sink)
            # The file made here is the one every record goes to, after an os.chdir too.
            self._path = Path(sink).absolute()
            self._path.parent.mkdir(parents=True, exist_ok=True)
            os.close(os.open(self._path, binary(os.O_WRONLY | os.O_APPEND | os.O_CREAT), 0o644))

    def __repr__(self) -> str:
        return f"Recorder({os.fspath(self.sink)!r})"

    def after_fork(self) -> None:
        """In a forked child, which has only the thread that forked: a lock another thread
        held while it wrote is never released there, so the child takes a new one."""
        self._lock = threading.Lock()

    @classmethod
    def from_config(cls, config: AutotuneConfig) -> Recorder | None:
        """The recorder of `config.record`, or None when no sink is configured."""
        return None if config.record is None else cls(config.record)

    @property
    def run(self) -> RunInfo:
        """The run stamped on records that carry none: the one given, else this process's
        (`process_run`)."""
        return self._run if self._run is not None else process_run()

    def record(self, record: AutotuneRecord) -> None:
        if record.run is None:
            record = dataclasses.replace(record, run=self.run)
        line = json.dumps(record.to_json(), allow_nan=False) + "\n"
        with self._lock:
            if self._path is None:
                _write_to_stream(str(self.sink), line)
                return
            data = line.encode("utf-8")
            fd = os.open(self._path, binary(os.O_RDWR | os.O_APPEND | os.O_CREAT), 0o644)
            try:
                with _held_for_append(self._path, fd):
                    data = _after_last_line(fd) + data
                    written = 0
                    while written < len(data):
                        written += os.write(fd, data[written:])
            finally:
                os.close(fd)


def _write_to_stream(name: str, line: str) -> None:
    """Write a record's line to the standard stream `name`, a stream the process lacks
    raised as the OSError a file that cannot be written raises, which the tuner turns into
    its warning: a service started with the stream closed (`>&-`) has it None, as a
    Windows GUI program (pythonw) does, and one the program closed raises ValueError. Raised
    as they were, they came out of the program's tuned call before its winner was saved."""
    stream = getattr(sys, name)
    if stream is None:
        raise OSError(errno.EBADF, f"this process has no {name}")
    with _STREAM_LOCK, _held_against_other_processes(stream):
        try:
            stream.write(line)
            stream.flush()
        except ValueError as error:  # a closed stream's "I/O operation on closed file"
            raise OSError(errno.EBADF, f"{name} cannot be written: {error}") from error


_STREAM_LOCK = threading.Lock()
"""Held by every recorder of this process while it writes to a standard stream: a write
to a pipe is whole only up to 4 KiB, and the recorders of a program (one a tuner) cut
longer records into each other's lines."""


def _new_stream_lock_in_child() -> None:
    """A process forked while another thread wrote a record has no thread to release it."""
    global _STREAM_LOCK  # noqa: PLW0603 - the module's lock, made anew in the child
    _STREAM_LOCK = threading.Lock()


if hasattr(os, "register_at_fork"):  # POSIX: multiprocessing's fork, os.fork
    os.register_at_fork(after_in_child=_new_stream_lock_in_child)


@contextlib.contextmanager
def _held_against_other_processes(stream: Any) -> Iterator[None]:
    """Hold the file under a standard stream against the other processes of the program
    while a record is written to it: a pipe (a container's log) writes at most 4 KiB at
    once whole, and records of 20 KB from a pool's workers were cut into each other's
    lines. A POSIX record lock (`lockf`), which belongs to a process, where `flock`
    belongs to the open file that a pool's workers share.

    Only a pipe or a regular file is locked: a lock on a terminal or on /dev/null is one
    for every process of the machine, other users' and other programs' too, which would
    wait on each other's records. Any other stream (a StringIO, a socket, a terminal) is
    written as it is, and so is every stream on Windows."""
    fd = _locked_descriptor(stream)
    try:
        yield
    finally:
        if fd is not None:
            with contextlib.suppress(OSError):
                fcntl.lockf(fd, fcntl.LOCK_UN)


def _locked_descriptor(stream: Any) -> int | None:
    """The descriptor of `stream`, locked by this process; None where it is no pipe or
    regular file, or takes no lock."""
    if sys.platform == "win32":
        return None
    try:
        fd = int(stream.fileno())
        mode = os.fstat(fd).st_mode
        if not (stat.S_ISFIFO(mode) or stat.S_ISREG(mode)):
            return None
        fcntl.lockf(fd, fcntl.LOCK_EX)
    except (OSError, ValueError, AttributeError):
        return None
    return fd


_PROCESS_RUN: dict[str, RunInfo] = {}
"""This process's run, once made (`process_run`)."""

_PROCESS_STARTED = (uuid.uuid4().hex[:12], datetime.now(timezone.utc))
"""This process's run id and time, made when it imports this module: a forked child (a
pool's worker) inherits them, though the parent never recorded before forking."""


def process_run() -> RunInfo:
    """The run of this process, made at its first record (the working directory's commit
    then) with the id and time of `_PROCESS_STARTED`: every recorder given no run stamps it.
    A program holds a recorder per tuner and device (a `LocalTuner` per operation), and one
    run each split one execution of it into as many runs in `report`'s table of runs. A
    forked child keeps its parent's run, the same program: the workers of a pool forked
    before the parent's first record, which made a run each, were as many runs."""
    run = _PROCESS_RUN.get("run")
    if run is None:
        # Two threads may make one at once: the first kept serves both (a lock here could
        # be held by a thread a fork leaves behind).
        run_id, started = _PROCESS_STARTED
        run = dataclasses.replace(RunInfo.current(now=started), id=run_id)
        run = _PROCESS_RUN.setdefault("run", run)
    return run


def records_unwritable(tuner: str, sink: object, error: OSError) -> str:
    """The warning of a tuner whose records cannot be written (it goes on without them)."""
    if isinstance(sink, (str, os.PathLike)):
        path, why = os.fspath(sink), why_unwritable(error, sink)
    else:
        path, why = sink, error.strerror or str(error)
    return (
        f"{tuner}: the records cannot be written to {path} ({why}); tuning goes on without"
        " them (the `record` setting: AutotuneConfig(record=...), PYTEST_AUTOTUNE_RECORD,"
        " or --autotune-record under pytest)"
    )


TAIL_CHUNK = 1 << 16
RECORD_START = b'{"schema_version": '
"""How every record's line begins (`AutotuneRecord.to_json`'s first field)."""


@contextlib.contextmanager
def _held_for_append(path: Path, fd: int) -> Iterator[None]:
    """Hold the records file `path`, open as `fd`, against every other recorder: one that
    reads the tail while another's record is half written takes it for a record cut short
    by a killed run and cuts it off (`_after_last_line`). Every tuner of a program has a
    recorder of its own, and every process of a pool its tuners: 6 processes writing
    9,000 records lost 2,186.

    On POSIX, a `flock` of the file itself, so no lock file is left beside a records file
    the user named; it is released before `fd` is closed: a process forked while it was
    held (a pool another thread starts) shares the open file, and closing ours alone left
    the file locked while that child lived, every later record waiting for it. Windows has
    no `flock`, and a byte-range lock of the records file itself would fail a reader's
    read of that range meanwhile (`report` reading the file): there the lock is filelock's
    beside it (`.<name>.lock`, removed again as each record is written), which `-n 2`
    workers appending to one `--autotune-record` file need as much as anyone."""
    if sys.platform == "win32":
        with lock_beside(path, timeout=-1):
            yield
        return
    fcntl.flock(fd, fcntl.LOCK_EX)
    try:
        yield
    finally:
        fcntl.flock(fd, fcntl.LOCK_UN)


def _after_last_line(fd: int) -> bytes:
    """What a record appended to the file `fd` must start with so that it begins a line of
    its own: nothing after a newline, a newline after a whole record that lacks one.

    A record cut short (a run killed while it wrote, which `read_records` ignores as the
    file's last line) is cut off the file, as the cache journal's next save does: appended
    to, it became the start of the new record's line, which then read as invalid JSON with
    every record after it. A last line of anything else only gets its newline."""
    size = os.fstat(fd).st_size
    if size == 0 or read_at(fd, 1, size - 1) == b"\n":
        return b""
    start = size
    while start > 0:
        chunk = read_at(fd, min(TAIL_CHUNK, start), max(0, start - TAIL_CHUNK))
        newline = chunk.rfind(b"\n")
        if newline >= 0:
            start = start - len(chunk) + newline + 1
            break
        start -= len(chunk)
    tail = read_at(fd, size - start, start)
    try:
        json.loads(tail)
    except ValueError:
        # Only the start of a record of ours: a file given by mistake keeps its last line.
        if tail.startswith(RECORD_START):
            os.ftruncate(fd, start)
            return b""
    return b"\n"


def read_records(
    path: str | os.PathLike[str], *, on_torn: Callable[[str], None] | None = None
) -> list[AutotuneRecord]:
    """Every record of a JSON-lines file; blank lines are allowed, bad ones name their line.

    A last line that is not JSON and ends without a newline is a record whose writing was
    cut short (a CI job killed while its run wrote): with `on_torn`, it is told the reason
    and the whole records before it are read, so a report can still be rebuilt from them;
    without, it is an error like any other bad line."""
    try:
        # utf-8-sig: a byte order mark an editor saved is skipped, as with our JSON files.
        text = Path(path).read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError) as exc:
        raise RecordError(f"{os.fspath(path)}: cannot read records: {exc}") from None
    records: list[AutotuneRecord] = []
    lines = text.splitlines()
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        where = f"{os.fspath(path)}:{number}"
        try:
            # Strict, as the cache files are read: a hand-edited NaN, Infinity or 1e400,
            # which a recorder never writes, ended in a traceback from the report's arithmetic.
            data = loads_strict(line)
        except NotJson as exc:
            if on_torn is not None and number == len(lines) and not text.endswith("\n"):
                on_torn(
                    f"{where}: the last record was cut short while it was written (invalid"
                    f" JSON: {exc.error.msg}) and is ignored; the"
                    f" {counted(len(records), 'record')} before it"
                    f" {'is' if len(records) == 1 else 'are'} read"
                )
                break
            raise RecordError(
                f"{where}: invalid JSON: {exc.error.msg} (column {exc.error.colno})"
            ) from None
        except JsonFileError as exc:
            raise RecordError(f"{where}: {exc}") from None
        if not isinstance(data, dict):
            raise RecordError(f"{where}: expected a JSON object, got {json_kind(data)}")
        try:
            records.append(AutotuneRecord.from_json(data))
        except RecordError as exc:
            raise RecordError(f"{where}: {exc}") from None
    return records
