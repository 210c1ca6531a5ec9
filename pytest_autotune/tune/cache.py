"""The persistent cache: the committed baseline file of one tuner on one device.

`<cache_dir>/<device_id>/<tuner_name>.json` tells `LocalTuner` which candidate to call and
tells the CI gate what the baseline measured, so it is written to be read in a code review
(sorted, indented, integers in nanoseconds, a final newline) and guarded like data someone
committed: parallel workers merge under a lock instead of overwriting each other, a write
is atomic, and a file that cannot be read is reported and left alone, never replaced.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import time
import warnings
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from filelock import Timeout

from pytest_autotune.tune import journal
from pytest_autotune.tune.benchmark import AutotuneResult, result_from_json, result_to_json
from pytest_autotune.tune.errors import CacheFileWarning
from pytest_autotune.tune.files import (
    JsonFileError,
    decode_strict,
    dumps,
    loads_strict,
    lock_beside,
    remove_stale_temporaries,
    write_atomically,
)
from pytest_autotune.tune.key import serialize_key_json

SCHEMA_VERSION = 2
"""2 added an entry's optional `calibration` and `sessions`; version 1 files read as they
always did. A reader of version 1 refuses a version 2 file by its number, with "upgrade",
instead of tripping over the new fields."""

LOCK_TIMEOUT_S = 300.0
"""A save holds the lock for one read and one small write; waiting longer than this means
a process is stuck holding it, which should end as an error rather than a hung test run."""

TUNER_FIELD = "tuner"
"""The top-level field holding the exact name of the tuner whose cache a file is: what
tells two names that share a file name apart (files written before it have none)."""

_STRUCTURE = frozenset({"schema_version", "device", "entries"})
_ENTRY_FIELDS = frozenset(
    {
        "key",
        "checksum",
        "fastest_index",
        "fastest_name",
        "results",
        "bounds",
        "calibration",
        "sessions",
    }
)
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]")
_SEPARATORS = re.compile(r"[/:\[\]]")
_PLAIN = re.compile(r"[a-z0-9_][a-z0-9._-]*")
_DIGEST = 10
"""Hex digits of the name's hash a stem ends with: two names must share a stem and these
40 bits to share a file, and then the name stored inside reports it."""
_HASHED = re.compile(rf"-[0-9a-f]{{{_DIGEST}}}$")
_MAX_STEM = 120


class _Malformed(ValueError):
    """The file's JSON has the wrong shape: a bad file to report, where other errors are bugs."""


@dataclass(frozen=True, slots=True)
class PersistentCacheKey:
    """What identifies an entry: the key, and the candidate list it was tuned over.

    The checksum belongs to the identity so that a winner's index is never applied to a
    candidate list that has changed since it was measured.
    """

    key: str
    """The key's stable serialized form (`stable_key`), the same in every process."""
    checksum: str
    """A checksum of the candidate names, in order."""


@dataclass(frozen=True, slots=True)
class PersistentCacheValue:
    """What a tuning decided for one key, and every candidate's evidence for it."""

    key: Any
    """The key's JSON value, kept so people reading the file see what was tuned."""
    fastest_index: int
    fastest_name: str
    results: tuple[AutotuneResult, ...]
    bounds: dict[str, Any] | None = None
    """The bounds of the decision, opaque to the cache and stored as given."""
    calibration: dict[str, Any] | None = None
    """The gate's calibration read beside the winner's samples (`gate.Calibration`), opaque
    to the cache; absent from the file when there is none, as in files written before it."""
    sessions: list[dict[str, Any]] | None = None
    """Earlier update sessions of the same winner (`gate.BaselineSession`), opaque to the
    cache; absent when there are none."""

    def winner(self) -> AutotuneResult | None:
        """The winner's result, resolved by index and name together: None when the index is
        past the results or the result there is another candidate's (a file whose results
        are out of line with the candidates, as older versions wrote after a `groups=`
        plan stopped early), so nobody reads another candidate's samples as the winner's."""
        if not 0 <= self.fastest_index < len(self.results):
            return None
        result = self.results[self.fastest_index]
        return result if result.name == self.fastest_name else None

    def to_json(self) -> dict[str, Any]:
        data = {
            "key": self.key,
            "fastest_index": self.fastest_index,
            "fastest_name": self.fastest_name,
            "results": [result_to_json(r, i) for i, r in enumerate(self.results)],
            "bounds": self.bounds,
        }
        if self.calibration is not None:
            data["calibration"] = self.calibration
        if self.sessions:
            data["sessions"] = self.sessions
        return data

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> PersistentCacheValue:
        """Read `to_json`'s form; a missing or mistyped field is a ValueError naming it."""
        results = []
        for i, result in enumerate(_field(data, "results", list, "a list")):
            try:
                if not isinstance(result, dict):
                    raise _Malformed(f"{result!r} is not an object")
                results.append(result_from_json(result))
            except KeyError as error:
                raise _Malformed(f"results[{i}]: missing field {error}") from None
            except (TypeError, ValueError) as error:
                raise _Malformed(f"results[{i}]: {error}") from None
        _field(data, "key", object, "any JSON value")
        index = _field(data, "fastest_index", int, "an integer")
        if index < 0:
            raise _Malformed(f"field 'fastest_index' is {index}, expected a non-negative integer")
        return cls(
            key=data["key"],
            fastest_index=index,
            fastest_name=_field(data, "fastest_name", str, "a string"),
            results=tuple(results),
            bounds=_field(data, "bounds", (dict, type(None)), "an object or null"),
            calibration=_optional_object(data, "calibration"),
            sessions=_optional_list(data, "sessions"),
        )


def _field(data: Mapping[str, Any], name: str, kind: type | tuple[type, ...], what: str) -> Any:
    if name not in data:
        raise _Malformed(f"missing field {name!r}")
    value = data[name]
    # bool is an int to isinstance, but `true` is never a valid index or version.
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise _Malformed(f"field {name!r} is {value!r}, expected {what}")
    return value


def _optional_object(data: Mapping[str, Any], name: str) -> dict[str, Any] | None:
    value = data.get(name)
    if value is not None and not isinstance(value, dict):
        raise _Malformed(f"field {name!r} is {value!r}, expected an object")
    return value


def _optional_list(data: Mapping[str, Any], name: str) -> list[Any] | None:
    value = data.get(name)
    if value is not None and not isinstance(value, list):
        raise _Malformed(f"field {name!r} is {value!r}, expected a list")
    return value


def cache_path(cache_dir: Path, device_id: str, tuner_name: str) -> Path:
    """Where the cache of `tuner_name` on `device_id` lives."""
    folder, name = cache_file_parts(device_id, tuner_name)
    return cache_dir / folder / name


def cache_file_parts(device_id: str, tuner_name: str) -> tuple[str, str]:
    """The folder and file name of a cache under its root, for roots that are not a `Path`
    (a package's data, read through `importlib.resources`)."""
    return _file_stem(device_id), f"{_file_stem(tuner_name)}.json"


def legacy_cache_file_parts(device_id: str, tuner_name: str) -> tuple[str, str]:
    """The folder and file name pytest-autotune 0.1.0 gave the same cache: read when the
    injective name has no file yet, never written, so baselines committed under it are
    still found (the first save writes the injective name; the old file can then go)."""
    return _legacy_stem(device_id), f"{_legacy_stem(tuner_name)}.json"


def _file_stem(name: str) -> str:
    """A readable file name for `name`, different for every two names (issue 15).

    A name made only of lower-case letters, digits, `.`, `_` and `-` (not starting with a
    dot or a dash, not ending the way a hashed stem ends) is its own file name. Any other
    name (a node id `tests/test_a.py::test_sum`, a name with upper case, which a macOS or
    Windows file system would not tell from lower case, a non-ASCII or over-long one) keeps
    a readable start with every other character made `_`, and ends with a hash of the exact
    name: `tests/a.py::t` and `tests_a.py::t` were one file before and are two now. Files
    also store the name itself, so a hash collision is reported, never merged.
    """
    if not name:
        raise ValueError("an empty name cannot name a cache file")
    if _PLAIN.fullmatch(name) and len(name) <= _MAX_STEM and not _HASHED.search(name):
        return name
    stem = _UNSAFE.sub("_", name)
    if stem.startswith("."):
        stem = "_" + stem[1:]
    digest = hashlib.sha256(name.encode()).hexdigest()[:_DIGEST]
    return f"{stem[: _MAX_STEM - _DIGEST - 1]}-{digest}"


def _legacy_stem(name: str) -> str:
    """The earlier, not injective, rule: characters outside `[A-Za-z0-9._-]` became `_`
    (a long name, or one with characters other than a node id's separators, got a hash)."""
    stem = _UNSAFE.sub("_", name)
    if stem.startswith("."):
        stem = "_" + stem[1:]
    digest = hashlib.sha256(name.encode()).hexdigest()[:16]
    if _UNSAFE.search(_SEPARATORS.sub("", name)) or len(stem) > _MAX_STEM:
        stem = f"{stem[: _MAX_STEM - len(digest) - 1]}-{digest}"
    return stem


class CacheFileError(Exception):
    """A cache file that cannot be read or written; the message names the file and why."""

    def __init__(self, path: Path, reason: str) -> None:
        super().__init__(f"{path}: {reason}")
        self.path = path
        self.reason = reason


@dataclass(frozen=True, slots=True)
class _Contents:
    entries: dict[PersistentCacheKey, PersistentCacheValue]
    device: dict[str, Any] | None
    metadata: dict[str, Any]


@dataclass(frozen=True, slots=True)
class _Version:
    """What tells one state of a file and its journal from the next without reading them:
    every rewrite replaces the file (a new inode and times), a journal only grows."""

    stamp: tuple[int, ...] | None
    """The file's (None: no file)."""
    digest: str
    """Of the file's bytes, which a journal extending it names."""
    size: int
    journal: tuple[int, int] | None
    """The inode and device of the journal applied over the file; None when none was."""
    journal_end: int
    """Bytes of that journal applied: its whole lines."""


_NO_FILE = _Version(None, journal.digest(b""), 0, None, 0)


@dataclass(frozen=True, slots=True)
class _Read:
    contents: _Contents
    version: _Version
    problems: list[str]
    """What a reader should be told and a writer repairs: a torn line, a stale journal."""


@dataclass(frozen=True, slots=True)
class CacheContents:
    """A cache file read whole: its entries, its device block and the tuner it names."""

    entries: dict[PersistentCacheKey, PersistentCacheValue]
    device: dict[str, Any] | None
    tuner: str | None = None


def parse_cache(text: str, where: str, journal_data: bytes | None = None) -> CacheContents:
    """The contents of a cache file's text read from elsewhere than a path of its own (a
    package's data), with its journal's bytes if it has one; `CacheFileError` naming
    `where` if it is not a valid cache file. A journal's problems are warnings."""
    try:
        contents = _parse(loads_strict(text))
    except (JsonFileError, _Malformed) as error:
        raise CacheFileError(Path(where), str(error)) from None
    if journal_data is not None:
        data = text.encode("utf-8")
        version = _Version(None, journal.digest(data), len(data), None, 0)
        read = _with_journal(contents, version, journal_data, (0, 0), Path(where))
        contents = read.contents
        for problem in read.problems:
            warnings.warn(CacheFileWarning(problem), stacklevel=2)
    return CacheContents(contents.entries, contents.device, _stored_tuner(contents))


class PersistentCache:
    """The cache file of one tuner on one device; `load` it, then `save` what was tuned.

    `name` is the tuner's exact name: saves store it in the file, and a file that stores
    another is a collision of two names on one file, reported and never merged or
    overwritten. `legacy` is where an earlier version filed the same cache, read while
    `path` has no file. `journal` makes a save of a few entries into a large file append
    them to its journal (`tune/journal.py`) instead of rewriting the file.
    """

    def __init__(
        self,
        path: Path,
        name: str | None = None,
        *,
        legacy: Path | None = None,
        journal: bool = False,
    ) -> None:
        self.path = path
        self.name = name
        self.legacy = legacy if legacy != path else None
        self.journal = journal
        self._contents = _Contents({}, None, {})
        self._unreadable: str | None = None
        # What makes a save cost what changed, not the whole file (issue 15: 0.6 s a key
        # at 3,000 entries): the file as this object last read or wrote it, recognised by
        # its version, is not parsed again, and each entry's text is rendered once.
        self._version: _Version | None = None
        self._index: dict[str, set[PersistentCacheKey]] | None = None
        self._fragments: dict[PersistentCacheKey, tuple[PersistentCacheValue, str]] = {}

    def exists(self) -> bool:
        """Whether the cache has a file, under its name or its legacy one."""
        return self.path.is_file() or (self.legacy is not None and self.legacy.is_file())

    def load(self) -> dict[PersistentCacheKey, PersistentCacheValue]:
        """The file's entries; a missing file is empty, an unreadable one warns and is empty.

        An unreadable file is remembered, so that `save` refuses to replace it: it may be a
        baseline someone committed, and only a person should decide to throw it away. A
        file of another tuner's name is unreadable for this one.
        """
        try:
            source, read = self._read_own()
            self._check_name(source, read.contents)
        except CacheFileError as error:
            self._adopt(_Contents({}, None, {}), None)
            self._unreadable = error.reason
            warnings.warn(
                CacheFileWarning(
                    f"{error}; autotune goes on as if there were no cache"
                    " and will not overwrite the file"
                ),
                stacklevel=2,
            )
        else:
            self._adopt(read.contents, read.version if source == self.path else None)
            self._unreadable = None
            for problem in read.problems:
                warnings.warn(CacheFileWarning(problem), stacklevel=2)
        return dict(self._contents.entries)

    def device(self) -> dict[str, Any] | None:
        """The file's device block (id, fingerprint, peaks), None if it has none."""
        return self._contents.device

    def metadata(self) -> dict[str, Any]:
        """The file's other top-level fields, such as `sigma_between`."""
        return dict(self._contents.metadata)

    def save(
        self,
        updates: Mapping[PersistentCacheKey, PersistentCacheValue],
        device: dict[str, Any] | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> None:
        """Merge `updates` into the file as it is on disk now, and write it atomically.

        Other processes (pytest-xdist workers) save to the same file, so the file is read
        again under the lock and their entries are kept; an update replaces every entry of
        its key whatever the checksum, since a changed candidate list supersedes the old
        decision. `device` replaces the file's block; `metadata` fields replace the file's
        fields of the same name and leave the others. Raises `CacheFileError` if the file
        is unreadable (now or when loaded), holds another tuner's name, or cannot be
        written, and writes nothing then. With `journal`, entries that only add to the
        file are appended to its journal while the journal is small.
        """
        metadata = dict(metadata or {})
        shadowing = _STRUCTURE & metadata.keys()
        if shadowing:
            raise ValueError(
                f"metadata fields {sorted(shadowing)} would replace the file's structure"
            )
        if self.name is not None:
            metadata[TUNER_FIELD] = self.name
        for key, value in updates.items():
            if serialize_key_json(value.key) != key.key:
                raise ValueError(f"cache key {key.key!r} does not serialize its JSON {value.key!r}")
        if self._unreadable is not None:
            raise CacheFileError(self.path, f"{self._unreadable} (when loaded); not overwriting it")
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            _ignore_lock_files(self.path.parent)
            lock = lock_beside(self.path, LOCK_TIMEOUT_S)
            with lock:
                source = self._refresh()
                self._check_name(source, self._contents)
                disk = self._contents
                new_device = disk.device if device is None else device
                new_metadata = {**disk.metadata, **metadata}
                remove_stale_temporaries(self.path)
                # Everything under the lock: another thread saving through this object next
                # must not see the new version beside the old contents.
                lines = self._journal_lines(disk, new_device, new_metadata, updates)
                if source == self.path and lines is not None and self._append(lines):
                    _merge(disk.entries, self._keys(), updates)
                else:
                    replaced = {key.key for key in updates}
                    entries = {k: v for k, v in disk.entries.items() if k.key not in replaced}
                    entries.update(updates)
                    contents = _Contents(entries, new_device, new_metadata)
                    self._adopt(contents, self._write(contents))
        except Timeout:
            raise CacheFileError(
                self.path, f"{lock.lock_file} still locked after {LOCK_TIMEOUT_S:g} s"
            ) from None
        except ValueError as error:
            # A NaN or infinity in an entry (a key, a bound): JSON has no such number.
            raise CacheFileError(self.path, f"cannot be written: {error}") from None
        except OSError as error:
            raise CacheFileError(self.path, f"cannot be written: {error}") from None

    def _read_own(self) -> tuple[Path, _Read]:
        """The file to read and what it holds: the cache's own file, or while it has none,
        the file of its legacy name, unless that one stores another tuner's name (under
        the legacy names two tuners could share it; under theirs they do not)."""
        if self.legacy is not None and not self.path.exists() and self.legacy.exists():
            read = _read(self.legacy)
            if _stored_tuner(read.contents) in (None, self.name):
                return self.legacy, read
        return self.path, _read(self.path)

    def _check_name(self, source: Path, contents: _Contents) -> None:
        stored = _stored_tuner(contents)
        if self.name is not None and stored is not None and stored != self.name:
            raise CacheFileError(
                source,
                f"holds the cache of {stored!r}, not of {self.name!r}: both names map to this file",
            )

    def _refresh(self) -> Path:
        """Bring this object's contents up to the file and journal as they are now, reading
        only what changed since it last read or wrote them; the path they came from. Under
        the lock only: no writer is midway."""
        if not self.path.exists():
            source, read = self._read_own()
            self._adopt(read.contents, _NO_FILE)
            return source
        version = self._version
        if version is not None and _stamp(self.path) == version.stamp:
            status = _journal_status(self.path)
            if status is None and version.journal is None:
                return self.path
            if status is not None and status[:2] == version.journal:
                if status[2] == version.journal_end:
                    return self.path
                # Only ever longer, unless cut by hand: then it is read again whole.
                tail = (
                    _journal_tail(self.path, version) if status[2] > version.journal_end else None
                )
                if tail is not None:
                    with contextlib.suppress(_Malformed):
                        for raw in tail[0]:
                            _merge(
                                self._contents.entries, self._keys(), dict([_entry_from_json(raw)])
                            )
                        self._version = replace(version, journal_end=version.journal_end + tail[1])
                        return self.path
        read = _read(self.path)
        self._adopt(read.contents, read.version)
        return self.path

    def _adopt(self, contents: _Contents, version: _Version | None) -> None:
        self._contents, self._version, self._index = contents, version, None

    def _keys(self) -> dict[str, set[PersistentCacheKey]]:
        """The entries of each key string: what a save replaces, found without a scan."""
        if self._index is None:
            self._index = _index(self._contents.entries)
        return self._index

    def _journal_lines(
        self,
        disk: _Contents,
        device: dict[str, Any] | None,
        metadata: dict[str, Any],
        updates: Mapping[PersistentCacheKey, PersistentCacheValue],
    ) -> str | None:
        """The journal lines of this save, when it goes to the journal: asked for, only
        entries change, and the journal stays small beside the file (else None: the file
        is rewritten, the journal folded in)."""
        version = self._version
        if not self.journal or version is None or version.stamp is None:
            return None
        if device != disk.device or metadata != disk.metadata:
            return None
        lines = "".join(_line(key, value) for key, value in sorted(updates.items(), key=_order))
        if version.journal_end + len(lines) > max(journal.MIN_COMPACT_BYTES, version.size // 2):
            return None
        return lines

    def _append(self, lines: str) -> bool:
        """Append `lines` to the journal (begun, with its header, if there is none for this
        file); False when this process may not write the journal, another user's: the
        save then rewrites the file instead, which only needs the folder's permission."""
        version = self._version
        assert version is not None
        path = journal.journal_path(self.path)
        try:
            if version.journal is None:
                text = journal.header(version.digest) + lines
                write_atomically(path, text)
                end = len(text)
            else:
                journal.append(path, version.journal_end, lines)
                end = version.journal_end + len(lines)
        except PermissionError:
            return False
        status = _journal_status(self.path)
        if status is None:
            raise OSError(f"{path} disappeared while this process held its lock")
        self._version = replace(version, journal=status[:2], journal_end=end)
        return True

    def _write(self, contents: _Contents) -> _Version:
        text = self._render(contents)
        write_atomically(self.path, text)
        with contextlib.suppress(FileNotFoundError):
            journal.journal_path(self.path).unlink()
        data = text.encode("utf-8")
        return _Version(_stamp(self.path), journal.digest(data), len(data), None, 0)

    def _render(self, contents: _Contents) -> str:
        """`dumps` of the whole document, with each entry's text kept from the last render
        while its value is the same object: byte for byte what one `dumps` would give."""
        items = sorted(contents.entries.items(), key=_order)
        fragments = {}
        for key, value in items:
            known = self._fragments.get(key)
            if known is None or known[0] is not value:
                entry = dumps(_entry_to_json(key, value)).rstrip("\n")
                known = (value, "\n".join("    " + line for line in entry.split("\n")))
            fragments[key] = known
        self._fragments = fragments
        document: dict[str, Any] = {
            **contents.metadata,
            "schema_version": SCHEMA_VERSION,
            "entries": [],
        }
        if contents.device is not None:
            document["device"] = contents.device
        entries = ",\n".join(text for _, text in fragments.values())
        # Top-level fields are the only lines indented by exactly two spaces, and JSON
        # strings hold no newline, so this line is the document's own "entries".
        head, tail = dumps(document).split('\n  "entries": []', 1)
        return f'{head}\n  "entries": [\n{entries}\n  ]{tail}' if entries else dumps(document)


def tuner_cache(
    cache_dir: Path, device_id: str, tuner_name: str, *, journal: bool = False
) -> PersistentCache:
    """The cache of `tuner_name` on `device_id` under `cache_dir`: its injective file name,
    the name it checks the file against, and its 0.1.0 name to read while it has no file."""
    folder, name = legacy_cache_file_parts(device_id, tuner_name)
    return PersistentCache(
        cache_path(cache_dir, device_id, tuner_name),
        tuner_name,
        legacy=cache_dir / folder / name,
        journal=journal,
    )


def _order(item: tuple[PersistentCacheKey, PersistentCacheValue]) -> tuple[str, str]:
    return item[0].key, item[0].checksum


def _entry_to_json(key: PersistentCacheKey, value: PersistentCacheValue) -> dict[str, Any]:
    return {**value.to_json(), "checksum": key.checksum}


def _line(key: PersistentCacheKey, value: PersistentCacheValue) -> str:
    return journal.entry_line(_entry_to_json(key, value))


def _stored_tuner(contents: _Contents) -> str | None:
    stored = contents.metadata.get(TUNER_FIELD)
    return stored if isinstance(stored, str) else None


def _stamp(path: Path) -> tuple[int, ...] | None:
    """What tells one version of a file from another without reading it: every write
    replaces the file, so its inode and times change (None: no file, or none to stat,
    which `_read` then reports)."""
    try:
        status = path.stat()
    except OSError:
        return None
    return _status_stamp(status)


def _status_stamp(status: os.stat_result) -> tuple[int, ...]:
    return (status.st_ino, status.st_dev, status.st_size, status.st_mtime_ns, status.st_ctime_ns)


def _journal_status(path: Path) -> tuple[int, int, int] | None:
    """The inode, device and size of `path`'s journal; None when it has none."""
    try:
        status = journal.journal_path(path).stat()
    except FileNotFoundError:
        return None
    return status.st_ino, status.st_dev, status.st_size


_GITIGNORE = "# pytest-autotune's lock and temporary files\n.*.lock\n.*.tmp\n"


def _ignore_lock_files(folder: Path) -> None:
    """The locks live beside the files they protect (`files.lock_beside`), in a folder that
    is committed: a `.gitignore` there keeps them out of commits, as pytest's own cache
    folder does. Written once, never replaced, so a project's own edits stay."""
    with (
        contextlib.suppress(FileExistsError),
        open(folder / ".gitignore", "x", encoding="utf-8") as file,
    ):
        file.write(_GITIGNORE)


_ATTEMPTS = 5
"""Reads of a file and its journal that a concurrent rewrite or append may spoil before
the read settles for what it has (and reports a line still being written as torn)."""


def _read(path: Path) -> _Read:
    """The file and its journal read as one version, empty if there is no file;
    `CacheFileError` if unreadable.

    Without the lock, as readers that may not write a file (a committed baseline, a package)
    must read: the file is read first and its journal second, and read again if the file
    was replaced meanwhile. A rewrite replaces the file before it removes the journal, so a
    journal found missing, with the same file still there, was missing for that file."""
    for attempt in range(_ATTEMPTS):
        try:
            with open(path, "rb") as file:
                status: os.stat_result | None = os.fstat(file.fileno())
                data = file.read()
        except FileNotFoundError:
            status, data = None, b""
        except OSError as error:
            raise CacheFileError(path, f"cannot be read: {error.strerror or error}") from None
        journal_data, journal_id = _read_journal(path)
        settled = status is None or _stamp(path) == _status_stamp(status)
        torn = journal_data is not None and not journal_data.endswith(b"\n")
        if settled and (not torn or attempt == _ATTEMPTS - 1):
            break
        time.sleep(0.01 * (attempt + 1))
    if status is None:
        return _Read(_Contents({}, None, {}), _NO_FILE, [])
    try:
        contents = _parse(decode_strict(data))
    except (JsonFileError, _Malformed) as error:
        raise CacheFileError(path, str(error)) from None
    version = _Version(_status_stamp(status), journal.digest(data), len(data), None, 0)
    if journal_data is None or journal_id is None:
        return _Read(contents, version, [])
    return _with_journal(contents, version, journal_data, journal_id, path)


def _read_journal(path: Path) -> tuple[bytes | None, tuple[int, int] | None]:
    where = journal.journal_path(path)
    try:
        with open(where, "rb") as file:
            status = os.fstat(file.fileno())
            return file.read(), (status.st_ino, status.st_dev)
    except FileNotFoundError:
        return None, None
    except OSError as error:
        raise CacheFileError(where, f"cannot be read: {error.strerror or error}") from None


def _with_journal(
    contents: _Contents,
    version: _Version,
    journal_data: bytes,
    journal_id: tuple[int, int],
    path: Path,
) -> _Read:
    """`contents` with the journal's entries applied, if it extends the file of `version`."""
    where = journal.journal_path(path)
    try:
        parsed = journal.parse_journal(journal_data)
        if parsed.base is not None and parsed.base != version.digest:
            return _Read(contents, version, _stale(where, parsed.entries, contents))
        entries = dict(contents.entries)
        _apply(entries, parsed.entries)
    except (JsonFileError, _Malformed) as error:
        # Named as the cache file's problem: it is the cache a save would refuse to replace.
        raise CacheFileError(path, f"in its journal {where.name}, {error}") from None
    problems = []
    if parsed.torn:
        problems.append(
            f"{where}: its last line is cut short (a writer killed midway, or one still"
            f" writing) and is ignored; the {len(parsed.entries)} whole entries before it"
            " are read"
        )
    if parsed.base is not None:
        version = replace(version, journal=journal_id, journal_end=parsed.end)
    return _Read(replace(contents, entries=entries), version, problems)


def _journal_tail(source: Path, version: _Version) -> tuple[list[Any], int] | None:
    """The entries other processes appended to the journal since this object read it to
    byte `journal_end`, and their size; None when the journal is not the one known or the
    tail is damaged (a whole read then gives the reason)."""
    try:
        with open(journal.journal_path(source), "rb") as file:
            status = os.fstat(file.fileno())
            if (status.st_ino, status.st_dev) != version.journal:
                return None
            file.seek(version.journal_end)
            data = file.read()
        return journal.parse_lines(data, 0, line_number=0)
    except (FileNotFoundError, JsonFileError):
        return None


def _stale(where: Path, raw_entries: list[Any], contents: _Contents) -> list[str]:
    """A journal of another version of its file: ignored, and reported unless the file
    holds every one of its entries (a writer killed between the file and the journal)."""
    try:
        entries: dict[PersistentCacheKey, PersistentCacheValue] = {}
        _apply(entries, raw_entries)
    except _Malformed:
        return [f"{where}: extends another version of its cache file and is ignored"]
    missing = sum(1 for key, value in entries.items() if contents.entries.get(key) != value)
    if not missing:
        return []
    return [
        f"{where}: extends another version of its cache file (replaced since, as by a"
        f" checkout); its {missing} entries the file lacks are ignored"
    ]


def _apply(entries: dict[PersistentCacheKey, PersistentCacheValue], raw_entries: list[Any]) -> None:
    """Apply journal entries in order, each as a save of its own."""
    index = _index(entries)
    for i, raw in enumerate(raw_entries):
        try:
            update = _entry_from_json(raw)
        except _Malformed as error:
            raise _Malformed(f"entry {i + 1}: {error}") from None
        _merge(entries, index, dict([update]))


def _index(
    entries: Mapping[PersistentCacheKey, PersistentCacheValue],
) -> dict[str, set[PersistentCacheKey]]:
    index: dict[str, set[PersistentCacheKey]] = {}
    for key in entries:
        index.setdefault(key.key, set()).add(key)
    return index


def _merge(
    entries: dict[PersistentCacheKey, PersistentCacheValue],
    index: dict[str, set[PersistentCacheKey]],
    updates: Mapping[PersistentCacheKey, PersistentCacheValue],
) -> None:
    """`updates` saved into `entries` in place, each replacing every entry of its key
    whatever the checksum, as `save` does; `index` (entries by key string) kept in step."""
    for name in {key.key for key in updates}:
        for old in index.pop(name, ()):
            del entries[old]
    for key, value in updates.items():
        entries[key] = value
        index.setdefault(key.key, set()).add(key)


def _parse(data: Any) -> _Contents:
    """Validate the whole document, so a bad one is rejected before any of it is used."""
    if not isinstance(data, dict):
        raise _Malformed(f"holds a JSON {type(data).__name__}, expected an object")
    version = _field(data, "schema_version", int, "an integer")
    if version > SCHEMA_VERSION:
        raise _Malformed(
            f"was written by a newer pytest-autotune (schema_version {version},"
            f" this one reads up to {SCHEMA_VERSION}); upgrade pytest-autotune to use it"
        )
    if version < 1:
        raise _Malformed(f"has an invalid schema_version {version}")
    device = data.get("device")
    if device is not None and not isinstance(device, dict):
        raise _Malformed(f"field 'device' is {device!r}, expected an object")
    tuner = data.get(TUNER_FIELD)
    if tuner is not None and not isinstance(tuner, str):
        raise _Malformed(f"field {TUNER_FIELD!r} is {tuner!r}, expected a string")
    entries: dict[PersistentCacheKey, PersistentCacheValue] = {}
    for i, raw in enumerate(_field(data, "entries", list, "a list")):
        try:
            key, value = _entry_from_json(raw)
        except _Malformed as error:
            where = f" (key {serialize_key_json(raw['key'])})" if _has_key(raw) else ""
            raise _Malformed(f"entry {i}{where}: {error}") from None
        if key in entries:
            raise _Malformed(f"entry {i} repeats key {key.key} with checksum {key.checksum!r}")
        entries[key] = value
    metadata = {name: value for name, value in data.items() if name not in _STRUCTURE}
    return _Contents(entries, device, metadata)


def _has_key(raw: Any) -> bool:
    return isinstance(raw, dict) and "key" in raw


def _entry_from_json(raw: Any) -> tuple[PersistentCacheKey, PersistentCacheValue]:
    if not isinstance(raw, dict):
        raise _Malformed(f"{raw!r} is not an object")
    unknown = raw.keys() - _ENTRY_FIELDS
    if unknown:
        # Rewriting the file would drop them, so refuse rather than lose them silently.
        raise _Malformed(f"unknown fields {sorted(unknown)}")
    checksum = _field(raw, "checksum", str, "a string")
    value = PersistentCacheValue.from_json(raw)
    return PersistentCacheKey(serialize_key_json(value.key), checksum), value
