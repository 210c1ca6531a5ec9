"""The cache file's format: its entries (`PersistentCacheKey` -> `PersistentCacheValue`),
their JSON form, and the strict reading of a file's JSON into them. `PersistentCache`
(`tune/cache.py`) adds the file itself: locking, the journal, atomic writes."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_autotune.tune.benchmark import AutotuneResult, result_from_json, result_to_json
from pytest_autotune.tune.cache_names import device_folder
from pytest_autotune.tune.files import json_kind, json_text
from pytest_autotune.tune.key import serialize_key_json

SCHEMA_VERSION = 2
"""2 added an entry's optional `calibration` and `sessions`; version 1 files read as they
always did. A reader of version 1 refuses a version 2 file by its number, with "upgrade",
instead of tripping over the new fields."""


TUNER_FIELD = "tuner"
"""The top-level field holding the exact name of the tuner whose cache a file is: what
tells two names that share a file name apart (files written before it have none)."""


PROJECT_ROOT_FIELD = "project_root"
"""The top-level field that says, in a cache directory outside the project's root dir (one
several projects share), which project last updated the file: its root dir as seen from
the directory (`../pkg_a`). An update judges only its own project's files stale: another
project's tests, under paths that are folders here too, were called gone and pruned."""

STRUCTURE = frozenset({"schema_version", "device", "entries"})


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


class CacheFileError(Exception):
    """A cache file that cannot be read or written; the message names the file and why."""

    def __init__(self, path: Path, reason: str) -> None:
        super().__init__(f"{path}: {reason}")
        self.path = path
        self.reason = reason

    def __reduce__(self) -> tuple[Any, ...]:
        # By an Exception's `args` (the message alone), unpickling one that a pool's worker
        # raised failed in the parent: "missing 1 required positional argument: 'reason'".
        return (type(self), (self.path, self.reason), self.__dict__)


class DamagedCacheFile(CacheFileError):
    """A cache file (or its journal) whose bytes are not a cache: not JSON, or JSON of the
    wrong shape. Not a file of a newer pytest-autotune, one that cannot be opened, nor one of
    another tuner's name: those are whole files some other reader may still want."""


class DamagedJournal(DamagedCacheFile):
    """A cache file whose own entries read, and whose journal holds a line that does not:
    removing the file, as the advice for a damaged file says, dropped every entry it holds
    with the journal's (`advice`)."""


class NewerCacheFile(CacheFileError):
    """A cache file of a newer pytest-autotune: whole, only not for this version to read.
    What to do is upgrade, never remove it (`advice`)."""


class MergedCacheFile(DamagedCacheFile):
    """A cache file two branches' updates met in (git's conflict markers, one entry twice,
    or one field of an object twice): every other entry is whole, so the repair is by hand,
    never its removal."""


class MisplacedCacheFile(CacheFileError):
    """A whole cache file under another tuner's name or in another device's folder than
    its own (renamed, copied or moved by hand): its message says how to keep its entries,
    and removing it would drop them (`advice`)."""


class LockedCacheFile(CacheFileError):
    """A cache file whose lock another process held past the wait (`PersistentCache`): the
    file is whole, and a later save may get the lock."""


class FileInPlaceOfFolder(CacheFileError):
    """A cache file whose folder, or a folder above it, is a file: no cache file is there
    to repair or remove, and the file in the way is not ours (`advice`)."""


KEEP_NEWER = "keep it, as removing it would drop what the newer version recorded"
MOVE_THE_FILE = (
    "the file in the folder's place is no cache file: move it aside, or point the cache"
    " directory (cache_dir, PYTEST_AUTOTUNE_CACHE_DIR) elsewhere"
)
KEEP_MISPLACED = "move or relabel it as said, as removing it would drop every baseline it holds"
REPAIR_MERGED = "repair it by hand, as removing it would drop every baseline it holds"
REPAIR_JOURNAL = (
    "repair that line of the journal, or remove the journal alone (dropping the entries it"
    " added): the file's own entries read"
)


def advice(error: CacheFileError, remove: str) -> str:
    """What to do with a cache file that could not be read: repair it, or `remove` it
    ("remove it to start anew"); but a newer version's file, whose message already says to
    upgrade, is kept: removing it would drop every entry the newer version recorded, a
    teammate's or a CI job's that runs that version. So is a file of another tuner or
    device, whose message says how to keep its entries: removing it, as a damaged file's
    advice said, dropped a renamed test's every baseline."""
    if isinstance(error, NewerCacheFile):
        return KEEP_NEWER
    if isinstance(error, MisplacedCacheFile):
        return KEEP_MISPLACED
    if isinstance(error, MergedCacheFile):
        return REPAIR_MERGED
    if isinstance(error, DamagedJournal):
        return REPAIR_JOURNAL
    if isinstance(error, FileInPlaceOfFolder):
        return MOVE_THE_FILE
    return f"repair it, or {remove}"


class Malformed(ValueError):
    """The file's JSON has the wrong shape: a bad file to report, where other errors are bugs."""


class NewerSchema(Malformed):
    """A file of a newer pytest-autotune: whole, only not for this version to read."""


class RepeatedEntry(Malformed):
    """One key and checksum in two entries: what git leaves when two branches refreshed
    that key and merged without a conflict."""


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
                    raise Malformed(f"is {json_kind(result)}, not a JSON object")
                results.append(result_from_json(result))
            except KeyError as error:
                raise Malformed(f"results[{i}]: missing field {error}") from None
            except (TypeError, ValueError) as error:
                raise Malformed(f"results[{i}]: {error}") from None
        _field(data, "key", object, "any JSON value")
        index = _field(data, "fastest_index", int, "an integer")
        if index < 0:
            raise Malformed(f"field 'fastest_index' is {index}, expected a non-negative integer")
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
        raise Malformed(f"missing field {name!r}")
    value = data[name]
    # bool is an int to isinstance, but `true` is never a valid index or version.
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise Malformed(f"field {name!r} is {json_text(value)}, expected {what}")
    return value


def _optional_object(data: Mapping[str, Any], name: str) -> dict[str, Any] | None:
    value = data.get(name)
    if value is not None and not isinstance(value, dict):
        raise Malformed(f"field {name!r} is {json_text(value)}, expected an object")
    return value


def _optional_list(data: Mapping[str, Any], name: str) -> list[Any] | None:
    value = data.get(name)
    if value is not None and not isinstance(value, list):
        raise Malformed(f"field {name!r} is {json_text(value)}, expected a list")
    return value


@dataclass(frozen=True, slots=True)
class Contents:
    entries: dict[PersistentCacheKey, PersistentCacheValue]
    device: dict[str, Any] | None
    metadata: dict[str, Any]


def entry_order(item: tuple[PersistentCacheKey, PersistentCacheValue]) -> tuple[str, str]:
    return item[0].key, item[0].checksum


def entry_to_json(key: PersistentCacheKey, value: PersistentCacheValue) -> dict[str, Any]:
    return {**value.to_json(), "checksum": key.checksum}


def stored_tuner(contents: Contents) -> str | None:
    stored = contents.metadata.get(TUNER_FIELD)
    return stored if isinstance(stored, str) else None


def other_tuner(stored: str, name: str) -> str:
    """Why a file of `name` that stores the tuner name `stored` is not read. Each name has
    a file of its own (`cache_names`), so the file was renamed or copied by hand, as after
    a test's rename: its `TUNER_FIELD` is what keeps its entries for the new name, written
    whole as JSON, however long, so that it can be pasted into the file."""
    return (
        f"holds the cache of {stored!r}, not of {name!r}: a file renamed or copied by hand?"
        f' set its "{TUNER_FIELD}" to {json.dumps(name, ensure_ascii=False)} to keep its entries'
    )


def stored_device(contents: Contents) -> str | None:
    """The device id a file's device block names, None where it has none."""
    stored = (contents.device or {}).get("id")
    return stored if isinstance(stored, str) else None


def other_device(stored: str, device: str) -> str:
    """Why a file in the folder of `device` whose device block names `stored` is not read:
    each device id has a folder of its own, so the file was copied or moved by hand, and
    read as this device's it served another device's winners without a word, and the next
    save labelled them this device's under the other one's fingerprint."""
    return (
        f"holds the cache of device {stored!r}, not of {device!r}, whose folder it is in: a"
        f" file copied or moved by hand? move it to the folder {device_folder(stored)!r}, or"
        f' set its device "id" to {json.dumps(device)} to use its entries on this device'
    )


def parse_contents(data: Any) -> Contents:
    """Validate the whole document, so a bad one is rejected before any of it is used."""
    if not isinstance(data, dict):
        raise Malformed(f"holds {json_kind(data)}, not a JSON object")
    version = _field(data, "schema_version", int, "an integer")
    if version > SCHEMA_VERSION:
        raise NewerSchema(
            f"was written by a newer pytest-autotune (schema_version {version},"
            f" this one reads up to {SCHEMA_VERSION}); upgrade pytest-autotune to use it"
        )
    if version < 1:
        raise Malformed(f"has an invalid schema_version {version}")
    device = data.get("device")
    if device is not None and not isinstance(device, dict):
        raise Malformed(f"field 'device' is {json_text(device)}, expected an object")
    if device is not None and not (isinstance(device.get("id"), str) and device["id"]):
        # Every writer names the device: a block without a readable id serves no key,
        # and read entry by entry each would be dropped, then replaced by an update.
        raise Malformed(
            f"the device block's 'id' is {json_text(device.get('id'))}, expected a device id"
        )
    tuner = data.get(TUNER_FIELD)
    if tuner is not None and not isinstance(tuner, str):
        raise Malformed(f"field {TUNER_FIELD!r} is {json_text(tuner)}, expected a string")
    entries: dict[PersistentCacheKey, PersistentCacheValue] = {}
    positions: dict[PersistentCacheKey, int] = {}
    for i, raw in enumerate(_field(data, "entries", list, "a list")):
        try:
            key, value = entry_from_json(raw)
        except Malformed as error:
            where = f" (key {serialize_key_json(raw['key'])})" if _has_key(raw) else ""
            raise Malformed(f"entry {i}{where}: {error}") from None
        if key in entries and _written_alike(entries[key].key, value.key):
            # Which of two branches' sessions to keep is a person's choice; they are told
            # which two entries, and that deleting one is the whole repair.
            raise RepeatedEntry(
                f"entries {positions[key]} and {i} both hold key {key.key} with checksum"
                f" {key.checksum!r}, as a merge of two branches' updates of that key leaves"
                " them: delete the one not to keep"
            )
        positions[key] = i
        # Keys written differently but equal (`1.0` and `1`, which versions before their
        # stable forms agreed filed apart) are one key tuned twice: the later entry stands,
        # as a later journal line does, rather than the whole file being refused.
        entries[key] = value
    metadata = {name: value for name, value in data.items() if name not in STRUCTURE}
    return Contents(entries, device, metadata)


def _written_alike(a: Any, b: Any) -> bool:
    return json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)


def _has_key(raw: Any) -> bool:
    return isinstance(raw, dict) and "key" in raw


def entry_from_json(raw: Any) -> tuple[PersistentCacheKey, PersistentCacheValue]:
    if not isinstance(raw, dict):
        raise Malformed(f"is {json_kind(raw)}, not a JSON object")
    unknown = raw.keys() - _ENTRY_FIELDS
    if unknown:
        # Rewriting the file would drop them, so refuse rather than lose them silently.
        raise Malformed(f"unknown fields {sorted(unknown)}")
    checksum = _field(raw, "checksum", str, "a string")
    value = PersistentCacheValue.from_json(raw)
    return PersistentCacheKey(serialize_key_json(value.key), checksum), value
