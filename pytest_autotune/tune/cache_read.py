"""Reading a cache file with its journal: the file's version (what tells one state of the
file and its journal from the next without reading them), a read retried while a writer
replaces the file, and the journal's whole lines applied over the file's entries; and a
cache file's text read from elsewhere than a path of its own (`parse_cache`: a package's
data). `PersistentCache` (`tune/cache.py`) reads through these under its lock or without it."""

from __future__ import annotations

import os
import time
import warnings
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from pytest_autotune.tune import journal
from pytest_autotune.tune.cache_format import (
    CacheFileError,
    Contents,
    DamagedCacheFile,
    DamagedJournal,
    FileInPlaceOfFolder,
    Malformed,
    MergedCacheFile,
    NewerCacheFile,
    NewerSchema,
    PersistentCacheKey,
    PersistentCacheValue,
    RepeatedEntry,
    entry_from_json,
    parse_contents,
    stored_tuner,
)
from pytest_autotune.tune.cache_names import cache_files, legacy_tuner_files
from pytest_autotune.tune.errors import CacheJournalWarning, caller_level
from pytest_autotune.tune.files import (
    MERGE_AGAIN,
    ConflictMarkers,
    JsonFileError,
    RepeatedMember,
    decode_strict,
    loads_strict,
)
from pytest_autotune.tune.wording import counted


@dataclass(frozen=True, slots=True)
class Version:
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


NO_FILE = Version(None, journal.digest(b""), 0, None, 0)


@dataclass(frozen=True, slots=True)
class Read:
    contents: Contents
    version: Version
    problems: list[str]
    """What a reader should be told and a writer repairs: a torn line, a stale journal."""


def file_stamp(path: Path) -> tuple[int, ...] | None:
    """What tells one version of a file from another without reading it: every write
    replaces the file, so its inode and times change (None: no file, or none to stat,
    which `read_file` then reports)."""
    try:
        status = path.stat()
    except OSError:
        return None
    return status_stamp(status)


def status_stamp(status: os.stat_result) -> tuple[int, ...]:
    return (status.st_ino, status.st_dev, status.st_size, status.st_mtime_ns, status.st_ctime_ns)


def journal_status(path: Path) -> tuple[int, int, int] | None:
    """The inode, device and size of `path`'s journal; None when it has none."""
    try:
        status = journal.journal_path(path).stat()
    except FileNotFoundError:
        return None
    return status.st_ino, status.st_dev, status.st_size


ATTEMPTS = 5
"""Reads of a file and its journal that a concurrent rewrite or append may spoil before
the read settles for what it has (and reports a line still being written as torn)."""


def read_file(path: Path) -> Read:
    """The file and its journal read as one version, empty if there is no file;
    `CacheFileError` if unreadable.

    Without the lock, as readers that may not write a file (a committed baseline, a package)
    must read: the file is read first and its journal second, and read again if the file
    was replaced meanwhile. A rewrite replaces the file before it removes the journal, so a
    journal found missing, with the same file still there, was missing for that file."""
    for attempt in range(ATTEMPTS):
        try:
            with open(path, "rb") as file:
                status: os.stat_result | None = os.fstat(file.fileno())
                data = file.read()
        except FileNotFoundError:
            status, data = None, b""
        except NotADirectoryError:
            raise FileInPlaceOfFolder(path, f"cannot be read: {_file_above(path)}") from None
        except OSError as error:
            raise CacheFileError(path, f"cannot be read: {error.strerror or error}") from None
        journal_data, journal_id = read_journal(path)
        settled = status is None or file_stamp(path) == status_stamp(status)
        torn = journal_data is not None and journal.torn(journal_data)
        if settled and (not torn or attempt == ATTEMPTS - 1):
            break
        time.sleep(0.01 * (attempt + 1))
    if status is None:
        return Read(Contents({}, None, {}), NO_FILE, [])
    try:
        contents = parse_contents(decode_strict(data))
    except NewerSchema as error:
        raise NewerCacheFile(path, str(error)) from None
    except RepeatedMember as error:
        raise MergedCacheFile(
            path,
            f"{error}, as a merge conflict resolved by keeping both sides leaves it: keep one"
            f" side of each conflict (one side throughout an entry), or {MERGE_AGAIN}",
        ) from None
    except (ConflictMarkers, RepeatedEntry) as error:
        raise MergedCacheFile(path, str(error)) from None
    except (JsonFileError, Malformed) as error:
        raise DamagedCacheFile(path, str(error)) from None
    version = Version(status_stamp(status), journal.digest(data), len(data), None, 0)
    if journal_data is None or journal_id is None:
        return Read(contents, version, [])
    return with_journal(contents, version, journal_data, journal_id, path)


def _file_above(path: Path) -> str:
    """Which folder of `path` is a file: "Not a directory" names none."""
    for folder in reversed(path.parents):
        if folder.is_file():
            return f"{folder} is a file, where a folder of caches belongs"
    return "a folder on its path is a file"


def read_journal(path: Path) -> tuple[bytes | None, tuple[int, int] | None]:
    where = journal.journal_path(path)
    try:
        with open(where, "rb") as file:
            status = os.fstat(file.fileno())
            return file.read(), (status.st_ino, status.st_dev)
    except FileNotFoundError:
        return None, None
    except OSError as error:
        raise CacheFileError(where, f"cannot be read: {error.strerror or error}") from None


def with_journal(
    contents: Contents,
    version: Version,
    journal_data: bytes,
    journal_id: tuple[int, int],
    path: Path,
) -> Read:
    """`contents` with the journal's entries applied, if it extends the file of `version`."""
    where = journal.journal_path(path)
    try:
        parsed = journal.parse_journal(journal_data)
        if parsed.base is not None and parsed.base != version.digest:
            return Read(contents, version, stale_lines(where, parsed.entries, contents))
        entries = dict(contents.entries)
        apply_entries(entries, parsed.entries)
    except journal.NewerJournal as error:
        # Whole, as a file of a newer schema_version is: not set aside, never replaced.
        raise NewerCacheFile(path, f"in its journal {where.name}, {error}") from None
    except (JsonFileError, Malformed) as error:
        # Named as the cache file's problem: it is the cache a save would refuse to replace.
        raise DamagedJournal(path, f"in its journal {where.name}, {error}") from None
    problems = []
    if parsed.torn:
        whole = len(parsed.entries)
        problems.append(
            f"{where}: its last line is cut short (a writer killed midway, or one still"
            f" writing) and is ignored; the {counted(whole, 'whole entry', 'whole entries')}"
            f" before it {'is' if whole == 1 else 'are'} read"
        )
    if parsed.base is not None:
        version = replace(version, journal=journal_id, journal_end=parsed.end)
    return Read(replace(contents, entries=entries), version, problems)


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
        contents = parse_contents(loads_strict(text))
    except (JsonFileError, Malformed) as error:
        raise CacheFileError(Path(where), str(error)) from None
    if journal_data is not None:
        data = text.encode("utf-8")
        version = Version(None, journal.digest(data), len(data), None, 0)
        read = with_journal(contents, version, journal_data, (0, 0), Path(where))
        contents = read.contents
        for problem in read.problems:
            warnings.warn(CacheJournalWarning(problem), stacklevel=caller_level())
    return CacheContents(contents.entries, contents.device, stored_tuner(contents))


def journal_tail(source: Path, version: Version) -> tuple[list[Any], int] | None:
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


def stale_lines(where: Path, raw_entries: list[Any], contents: Contents) -> list[str]:
    """A journal of another version of its file: ignored, and reported unless the file
    holds every one of its entries (a writer killed between the file and the journal)."""
    try:
        entries: dict[PersistentCacheKey, PersistentCacheValue] = {}
        apply_entries(entries, raw_entries)
    except Malformed:
        return [f"{where}: extends another version of its cache file and is ignored"]
    missing = sum(1 for key, value in entries.items() if contents.entries.get(key) != value)
    if not missing:
        return []
    return [
        f"{where}: extends another version of its cache file (replaced since, as by a"
        f" checkout); its {counted(missing, 'entry', 'entries')} the file lacks"
        f" {'is' if missing == 1 else 'are'} ignored, and kept: the next save of the file"
        f" moves the journal to {where.name}.stale-N"
    ]


def apply_entries(
    entries: dict[PersistentCacheKey, PersistentCacheValue], raw_entries: list[Any]
) -> None:
    """Apply journal entries in order, each as a save of its own."""
    index = key_index(entries)
    for i, raw in enumerate(raw_entries):
        try:
            update = entry_from_json(raw)
        except Malformed as error:
            raise Malformed(f"entry {i + 1}: {error}") from None
        merge_entries(entries, index, dict([update]))


def key_index(
    entries: Mapping[PersistentCacheKey, PersistentCacheValue],
) -> dict[str, set[PersistentCacheKey]]:
    index: dict[str, set[PersistentCacheKey]] = {}
    for key in entries:
        index.setdefault(key.key, set()).add(key)
    return index


def merge_entries(
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


def legacy_names(folder: Path) -> dict[str, str]:
    """The 0.1.0 name of each cache file under `folder` that stores its tuner's name, by
    path below `folder`, to its current name: the gate reads a baseline committed under the
    old name while the new one has no file, and an update writes the new name beside it,
    so the two are one tuner's file (a 0.1.0 file stores no name of its own)."""
    names = {}
    for path in cache_files(folder):
        try:
            stored = stored_tuner(read_file(path).contents)
        except CacheFileError:
            continue  # its readers name what does not read
        if stored is None:
            continue
        current = path.relative_to(folder)
        for legacy in legacy_tuner_files(stored):
            if legacy != current.name:  # A name of plain characters is its own file name.
                names[current.with_name(legacy).as_posix()] = current.as_posix()
    return names
