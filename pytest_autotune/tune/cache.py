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
import re
import warnings
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from filelock import Timeout

from pytest_autotune.tune.benchmark import AutotuneResult, result_from_json, result_to_json
from pytest_autotune.tune.errors import CacheFileWarning
from pytest_autotune.tune.files import (
    JsonFileError,
    dumps,
    loads_strict,
    lock_beside,
    read_json,
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
"""What a node id or a parametrized name is made of; any other replaced character (a
non-ASCII letter, a space) gets the name a hash, so `test_é` and `test_ü` get two files."""
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


def _file_stem(name: str) -> str:
    """A readable file name for `name`: characters outside `[A-Za-z0-9._-]` become `_`.

    Tuner names are often node ids (`tests/test_a.py::test_sum`) whose slashes must not
    become folders; a leading dot would hide the file or, as `..`, leave the cache folder.
    A name too long for a file system keeps its start and gets a hash of the whole name,
    so two long names sharing a prefix still get two files, and so does a name with any
    character other than a node id's separators replaced.
    """
    if not name:
        raise ValueError("an empty name cannot name a cache file")
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
class CacheContents:
    """A cache file read whole: its entries and its device block."""

    entries: dict[PersistentCacheKey, PersistentCacheValue]
    device: dict[str, Any] | None


def parse_cache(text: str, where: str) -> CacheContents:
    """The contents of a cache file's text read from elsewhere than a path of its own (a
    package's data); `CacheFileError` naming `where` if it is not a valid cache file."""
    try:
        contents = _parse(loads_strict(text))
    except (JsonFileError, _Malformed) as error:
        raise CacheFileError(Path(where), str(error)) from None
    return CacheContents(contents.entries, contents.device)


class PersistentCache:
    """The cache file of one tuner on one device; `load` it, then `save` what was tuned."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._contents = _Contents({}, None, {})
        self._unreadable: str | None = None
        # What makes a save cost what changed, not the whole file (issue 15: 0.6 s a key
        # at 3,000 entries): the file as this object last read or wrote it, recognised by
        # its stamp, is not parsed again, and each entry's text is rendered once.
        self._stamp: tuple[int, ...] | None = None
        self._fragments: dict[PersistentCacheKey, tuple[PersistentCacheValue, str]] = {}

    def load(self) -> dict[PersistentCacheKey, PersistentCacheValue]:
        """The file's entries; a missing file is empty, an unreadable one warns and is empty.

        An unreadable file is remembered, so that `save` refuses to replace it: it may be a
        baseline someone committed, and only a person should decide to throw it away.
        """
        try:
            stamp = _stamp(self.path)
            self._contents = _read(self.path)
            self._unreadable = None
            self._stamp = stamp
        except CacheFileError as error:
            self._contents = _Contents({}, None, {})
            self._unreadable = error.reason
            warnings.warn(
                CacheFileWarning(
                    f"{error}; autotune goes on as if there were no cache"
                    " and will not overwrite the file"
                ),
                stacklevel=2,
            )
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
        is unreadable (now or when loaded) or cannot be written, and writes nothing then.
        """
        metadata = metadata or {}
        shadowing = _STRUCTURE & metadata.keys()
        if shadowing:
            raise ValueError(
                f"metadata fields {sorted(shadowing)} would replace the file's structure"
            )
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
                stamp = _stamp(self.path)
                unchanged = stamp is not None and stamp == self._stamp
                disk = self._contents if unchanged else _read(self.path)
                replaced = {key.key for key in updates}
                entries = {k: v for k, v in disk.entries.items() if k.key not in replaced}
                entries.update(updates)
                contents = _Contents(
                    entries,
                    disk.device if device is None else device,
                    {**disk.metadata, **metadata},
                )
                remove_stale_temporaries(self.path)
                write_atomically(self.path, self._render(contents))
                # Both under the lock: another thread saving through this object next must
                # not see the new stamp beside the old contents.
                self._contents, self._stamp = contents, _stamp(self.path)
        except Timeout:
            raise CacheFileError(
                self.path, f"{lock.lock_file} still locked after {LOCK_TIMEOUT_S:g} s"
            ) from None
        except ValueError as error:
            # A NaN or infinity in an entry (a key, a bound): JSON has no such number.
            raise CacheFileError(self.path, f"cannot be written: {error}") from None
        except OSError as error:
            raise CacheFileError(self.path, f"cannot be written: {error}") from None

    def _render(self, contents: _Contents) -> str:
        """`dumps` of the whole document, with each entry's text kept from the last render
        while its value is the same object: byte for byte what one `dumps` would give."""
        items = sorted(contents.entries.items(), key=lambda item: (item[0].key, item[0].checksum))
        fragments = {}
        for key, value in items:
            known = self._fragments.get(key)
            if known is None or known[0] is not value:
                entry = dumps({**value.to_json(), "checksum": key.checksum}).rstrip("\n")
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


def _stamp(path: Path) -> tuple[int, ...] | None:
    """What tells one version of a file from another without reading it: every write
    replaces the file, so its inode and times change (None: no file, or none to stat,
    which `_read` then reports)."""
    try:
        status = path.stat()
    except OSError:
        return None
    return (status.st_ino, status.st_dev, status.st_size, status.st_mtime_ns, status.st_ctime_ns)


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


def _read(path: Path) -> _Contents:
    """The file's contents, empty if it does not exist; CacheFileError if unreadable."""
    try:
        return _parse(read_json(path))
    except FileNotFoundError:
        return _Contents({}, None, {})
    except (JsonFileError, _Malformed) as error:
        raise CacheFileError(path, str(error)) from None


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
