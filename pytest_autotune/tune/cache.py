"""The persistent cache: the committed baseline file of one tuner on one device.

`<cache_dir>/<device_id>/<tuner_name>.json` tells `LocalTuner` which candidate to call and
tells the CI gate what the baseline measured, so it is written to be read in a code review
(sorted, indented, integers in nanoseconds, a final newline) and guarded like data someone
committed: parallel workers merge under a lock instead of overwriting each other, a write
is atomic, and a file that cannot be read is reported and left alone, never replaced.
"""

from __future__ import annotations

import contextlib
import os
import warnings
from collections.abc import Callable, Collection, Iterator, Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from filelock import Timeout

from pytest_autotune.tune import journal
from pytest_autotune.tune.cache_format import (
    SCHEMA_VERSION,
    STRUCTURE,
    TUNER_FIELD,
    CacheFileError,
    Contents,
    DamagedCacheFile,
    LockedCacheFile,
    Malformed,
    MisplacedCacheFile,
    PersistentCacheKey,
    PersistentCacheValue,
    advice,
    entry_from_json,
    other_device,
    other_tuner,
    stored_device,
    stored_tuner,
)
from pytest_autotune.tune.cache_names import (
    cache_file_parts,
    cache_path,
    legacy_cache_file,
    legacy_cache_file_parts,
)
from pytest_autotune.tune.cache_read import (
    NO_FILE,
    CacheContents,
    Read,
    Version,
    file_stamp,
    journal_status,
    journal_tail,
    key_index,
    merge_entries,
    parse_cache,
    read_file,
)
from pytest_autotune.tune.cache_write import (
    EntryTexts,
    append_journal,
    ignore_lock_files,
    journal_lines,
    keep_stale_journal,
    render,
    set_aside,
    why_not,
)
from pytest_autotune.tune.errors import CacheFileWarning, CacheJournalWarning, caller_level
from pytest_autotune.tune.files import (
    in_line_endings_of,
    link_into_nothing,
    lock_beside,
    lock_holder,
    remove_stale_temporaries,
    write_atomically,
)
from pytest_autotune.tune.key import serialize_key_json

# Re-exported: the file's format, names and reading were read from here before they had
# modules.
__all__ = [
    "PROGRAM_LOCK_TIMEOUT_S",
    "SCHEMA_VERSION",
    "TUNER_FIELD",
    "CacheContents",
    "CacheFileError",
    "PersistentCache",
    "PersistentCacheKey",
    "PersistentCacheValue",
    "cache_file_parts",
    "cache_path",
    "legacy_cache_file_parts",
    "parse_cache",
    "tuner_cache",
]


LOCK_TIMEOUT_S = 300.0
"""A save holds the lock for one read and one small write; waiting longer than this means
a process is stuck holding it, which should end as an error rather than a hung test run.
The wait of pytest runs, whose workers save one after another into one file."""

PROGRAM_LOCK_TIMEOUT_S = 5.0
"""The wait of a program's tuner (`LocalTuner`): a save holds the lock for milliseconds
(a whole-file rewrite of thousands of entries, under a second), so a lock held longer is a
process stopped or hung holding it. A program serves its call without the file then: with
`LOCK_TIMEOUT_S`, a service's every new key waited 5 minutes in its lookup and 5 more at
its save, and its other threads' new keys queued behind it."""


class PersistentCache:
    """The cache file of one tuner on one device; `load` it, then `save` what was tuned.

    `name` is the tuner's exact name: saves store it in the file, and a file that stores
    another is a collision of two names on one file, reported and never merged or
    overwritten. `legacy` is where an earlier version filed the same cache, read while
    `path` has no file. `journal` makes a save of a few entries into a large file append
    them to its journal (`tune/journal.py`) instead of rewriting the file.

    `set_aside_damaged` is for a file no person keeps: a library's cache in the user's
    cache folder, which only tuning writes. One whose bytes are damaged (a disk error, a
    hand edit) is renamed `<name>.damaged-<n>` and tuning starts afresh; otherwise every
    process on that machine would retune every key and never save one. A file of a newer
    pytest-autotune, one that cannot be opened or of another tuner's name is left alone.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        name: str | None = None,
        *,
        legacy: str | os.PathLike[str] | None = None,
        journal: bool = False,
        set_aside_damaged: bool = False,
        device_id: str | None = None,
        lock_timeout: float = LOCK_TIMEOUT_S,
    ) -> None:
        # A program names its file with a str: taken as the Path every helper expects.
        self.path = path = Path(path)
        self.name = name
        self.device_id = device_id
        """The device id whose folder the file is in, where known (`tuner_cache`): a file
        whose device block names another is not this device's (`other_device`)."""
        self.legacy = Path(legacy) if legacy is not None and Path(legacy) != path else None
        self.journal = journal
        self.set_aside_damaged = set_aside_damaged
        self.lock_timeout = lock_timeout
        """How long a save or a lookup waits for the file's lock (`LOCK_TIMEOUT_S`, or a
        program's `PROGRAM_LOCK_TIMEOUT_S`)."""
        self._lock_stuck = False
        """Whether the last wait for the lock ran out: the next try does not wait (`_locked`)."""
        self._contents = Contents({}, None, {})
        self._unreadable: CacheFileError | None = None
        self._source = path
        # What makes a save cost what changed, not the whole file (issue 15: 0.6 s a key
        # at 3,000 entries): the file as this object last read or wrote it, recognised by
        # its version, is not parsed again, and each entry's text is rendered once.
        self._version: Version | None = None
        self._index: dict[str, set[PersistentCacheKey]] | None = None
        self._fragments: EntryTexts = {}

    def __repr__(self) -> str:
        name = f", {self.name!r}" if self.name is not None else ""
        return f"{type(self).__name__}({str(self.path)!r}{name})"

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
            try:
                source, read = self._read_own()
            except DamagedCacheFile as error:
                self._set_aside(error)
                # Read again: another process (an xdist worker beside this one) may have set
                # it aside, or saved a new one, under the lock first; still damaged, it
                # raises as before.
                source, read = self._read_own()
            self._check_name(source, read.contents)
        except CacheFileError as error:
            self._adopt(Contents({}, None, {}), None)
            self._unreadable = error
            warnings.warn(
                CacheFileWarning(
                    f"{error}; autotune goes on as if there were no cache and will not"
                    f" overwrite the file: {self.advice(error)}"
                ),
                stacklevel=caller_level(),
            )
        else:
            self._adopt(read.contents, read.version if source == self.path else None)
            self._unreadable = None
            self._source = source
            for problem in read.problems:
                warnings.warn(CacheJournalWarning(problem), stacklevel=caller_level())
        return dict(self._contents.entries)

    def advice(self, error: CacheFileError) -> str:
        """What to do with this cache's file that `error` says could not be read."""
        return advice(error, "remove it to start anew")

    def _set_aside(self, error: DamagedCacheFile) -> Path | None:
        """Rename this cache's damaged file and its journal out of the way (`set_aside`),
        when this cache may (`set_aside_damaged`), saying so; the new name of the file, None
        when it was not moved."""
        if not self.set_aside_damaged or error.path != self.path:
            return None
        aside = set_aside(self.path, self.lock_timeout)
        if aside is not None:
            warnings.warn(
                CacheFileWarning(
                    f"{error}; as this machine's own cache of {self.name!r}, it was set aside"
                    f" as {aside.name} and tuning starts afresh (delete that file once nobody"
                    " needs it)"
                ),
                stacklevel=caller_level(),
            )
        return aside

    def source(self) -> Path:
        """The file the entries were last loaded from: `legacy` while the cache's own name
        has no file, which is the one a message about its baselines must name."""
        return self._source

    def unreadable(self) -> CacheFileError | None:
        """Why the file could not be read when last loaded, naming it; None when it could.
        `save` refuses to replace such a file."""
        return self._unreadable

    def device(self) -> dict[str, Any] | None:
        """The file's device block (id, fingerprint, peaks), None if it has none."""
        return self._contents.device

    def metadata(self) -> dict[str, Any]:
        """The file's other top-level fields, such as `sigma_between`."""
        return dict(self._contents.metadata)

    def save(
        self,
        updates: Mapping[PersistentCacheKey, PersistentCacheValue],
        device: dict[str, Any] | Callable[[dict[str, Any] | None], dict[str, Any]] | None = None,
        metadata: dict[str, Any] | None = None,
        remove: Collection[str] = (),
        rebase: Callable[
            [Mapping[PersistentCacheKey, PersistentCacheValue]],
            Mapping[PersistentCacheKey, PersistentCacheValue],
        ]
        | None = None,
    ) -> None:
        """Merge `updates` into the file as it is on disk now, and write it atomically.

        Other processes (pytest-xdist workers) save to the same file, so the file is read
        again under the lock and their entries are kept; an update replaces every entry of
        its key whatever the checksum, since a changed candidate list supersedes the old
        decision. `device` replaces the file's block (a function of the file's block, read
        under the lock, gives the one to write); `metadata` fields replace the file's
        fields of the same name and leave the others. Raises `CacheFileError` if the file
        is unreadable (now or when loaded), holds another tuner's name, or cannot be
        written, and writes nothing then; a `LockedCacheFile` where its lock stays held
        past `lock_timeout` (`_locked`). With `journal`, entries that only add to the
        file are appended to its journal while the journal is small. `remove`: the stable
        keys whose entries go (`--autotune-prune`), which rewrites the whole file.
        `rebase`, given the file's entries as read under the lock, returns the updates to
        write in place of `updates` (the same keys): what an update decided from the file
        read earlier is decided again on the file as it is now, which another process may
        have written meanwhile.
        """
        metadata = dict(metadata or {})
        shadowing = STRUCTURE & metadata.keys()
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
            # Named as it was when loaded: the journal beside the file may be what failed.
            where, reason = self._unreadable.path, self._unreadable.reason
            kept = "it" if where == self.path else self.path.name
            raise CacheFileError(where, f"{reason} (when loaded); not overwriting {kept}")
        unreachable = link_into_nothing(self.path)
        if unreachable is not None:
            raise CacheFileError(self.path, f"cannot be written: {unreachable}")
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            ignore_lock_files(self.path.parent)
            try:
                with self._locked():
                    self._save_locked(updates, device, metadata, remove, rebase)
            except DamagedCacheFile as error:
                # Damaged since it was loaded (a long-running program's file, hand-edited
                # or hit by a disk error): set aside as a load would, or every later key of
                # this process stayed in memory only, until its restart set it aside.
                if self._set_aside(error) is None:
                    raise
                with self._locked():
                    self._save_locked(updates, device, metadata, remove, rebase)
        except ValueError as error:
            # A NaN or infinity in an entry (a key, a bound): JSON has no such number.
            raise CacheFileError(self.path, f"cannot be written: {error}") from None
        except OSError as error:
            raise CacheFileError(
                self.path, f"cannot be written: {why_not(error, self.path)}"
            ) from None

    def _save_locked(
        self,
        updates: Mapping[PersistentCacheKey, PersistentCacheValue],
        device: dict[str, Any] | Callable[[dict[str, Any] | None], dict[str, Any]] | None,
        metadata: dict[str, Any],
        remove: Collection[str],
        rebase: Callable[
            [Mapping[PersistentCacheKey, PersistentCacheValue]],
            Mapping[PersistentCacheKey, PersistentCacheValue],
        ]
        | None,
    ) -> None:
        """The save (`save`) under the lock: the file read again, and `updates` appended to
        its journal or the file rewritten with them."""
        source = self._refresh()
        self._check_name(source, self._contents)
        disk = self._contents
        if rebase is not None:
            # Decided on this read, under the lock: a decision taken on an earlier
            # read would overwrite what another process wrote since.
            updates = rebase(disk.entries)
        new_device = (
            disk.device if device is None else device(disk.device) if callable(device) else device
        )
        new_metadata = {**disk.metadata, **metadata}
        remove_stale_temporaries(self.path)
        # Everything under the lock: another thread saving through this object next
        # must not see the new version beside the old contents.
        lines = (
            journal_lines(self._version, disk, new_device, new_metadata, updates)
            if self.journal
            else None
        )
        if remove:
            lines = None
        if source == self.path and lines is not None and self._append(lines):
            merge_entries(disk.entries, self._keys(), updates)
        else:
            replaced = {key.key for key in updates} | set(remove)
            entries = {k: v for k, v in disk.entries.items() if k.key not in replaced}
            entries.update(updates)
            contents = Contents(entries, new_device, new_metadata)
            self._adopt(contents, self._write(contents))

    def saved_since(self, key: str) -> dict[PersistentCacheKey, PersistentCacheValue]:
        """The file's entries of the stable key `key` as they are now: another process may
        have saved one since this object read the file. Read under the lock, and only what
        changed since this object last read or wrote the file; empty where the file is not
        there, did not read, or its lock cannot be taken (a read-only folder); a
        `LockedCacheFile` where the lock stays held past `lock_timeout` (`_locked`)."""
        if self._unreadable is not None or not self.path.is_file():
            return {}
        try:
            with self._locked():
                self._check_name(self._refresh(), self._contents)
        except LockedCacheFile:
            raise
        except (OSError, CacheFileError):
            # The save after tuning says what is wrong with the file, if it still is.
            return {}
        return {pk: self._contents.entries[pk] for pk in self._keys().get(key, ())}

    def wait_for_the_lock_again(self) -> None:
        """Let the next save wait out `lock_timeout` again, where a wait that ran out made
        the later ones not wait (`_locked`): the last save of a program, whose exit would
        otherwise give up on a lock freed a moment later."""
        self._lock_stuck = False

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        """Hold the file's lock (`lock_beside`), waiting up to `lock_timeout` for it; a
        `LockedCacheFile`, naming the lock and its holder where known, when it stays held.

        Once a wait has run out, the next try does not wait, until one gets the lock: a
        process stopped or hung holding it holds it for as long as it stays so, and a
        program that waited out each key's lookup and save stalled each call of a new key."""
        stuck = self._lock_stuck
        lock = lock_beside(self.path, 0 if stuck else self.lock_timeout)
        try:
            lock.acquire()
        except Timeout:
            self._lock_stuck = True
            holder = lock_holder(lock.lock_file)
            by = f" by {holder}" if holder is not None else ""
            # "after 5 s" of a try that did not wait misled.
            after = "again" if stuck else f"after {self.lock_timeout:g} s"
            raise LockedCacheFile(self.path, f"{lock.lock_file} still locked{by} {after}") from None
        self._lock_stuck = False
        try:
            yield
        finally:
            lock.release()

    def _read_own(self) -> tuple[Path, Read]:
        """The file to read and what it holds: the cache's own file, or while it has none,
        the file of its legacy name, unless that one stores another tuner's name (under
        the legacy names two tuners could share it; under theirs they do not)."""
        if self.legacy is not None and not self.path.exists() and self.legacy.exists():
            read = read_file(self.legacy)
            if stored_tuner(read.contents) in (None, self.name):
                return self.legacy, read
        return self.path, read_file(self.path)

    def _check_name(self, source: Path, contents: Contents) -> None:
        stored = stored_tuner(contents)
        if self.name is not None and stored is not None and stored != self.name:
            raise MisplacedCacheFile(source, other_tuner(stored, self.name))
        device = stored_device(contents)
        if self.device_id is not None and device is not None and device != self.device_id:
            raise MisplacedCacheFile(source, other_device(device, self.device_id))

    def _refresh(self) -> Path:
        """Bring this object's contents up to the file and journal as they are now, reading
        only what changed since it last read or wrote them; the path they came from. Under
        the lock only: no writer is midway."""
        if not self.path.exists():
            source, read = self._read_own()
            self._adopt(read.contents, NO_FILE)
            return source
        version = self._version
        if version is not None and file_stamp(self.path) == version.stamp:
            status = journal_status(self.path)
            if status is None and version.journal is None:
                return self.path
            if status is not None and status[:2] == version.journal:
                if status[2] == version.journal_end:
                    return self.path
                # Only ever longer, unless cut by hand: then it is read again whole.
                tail = journal_tail(self.path, version) if status[2] > version.journal_end else None
                if tail is not None:
                    with contextlib.suppress(Malformed):
                        for raw in tail[0]:
                            merge_entries(
                                self._contents.entries, self._keys(), dict([entry_from_json(raw)])
                            )
                        self._version = replace(version, journal_end=version.journal_end + tail[1])
                        return self.path
        read = read_file(self.path)
        self._adopt(read.contents, read.version)
        return self.path

    def _adopt(self, contents: Contents, version: Version | None) -> None:
        self._contents, self._version, self._index = contents, version, None

    def _keys(self) -> dict[str, set[PersistentCacheKey]]:
        """The entries of each key string: what a save replaces, found without a scan."""
        if self._index is None:
            self._index = key_index(self._contents.entries)
        return self._index

    def _append(self, lines: str) -> bool:
        """Append `lines` to the journal (`append_journal`); False when this process may
        not write it."""
        assert self._version is not None
        version = append_journal(self.path, self._version, self._contents, lines)
        if version is None:
            return False
        self._version = version
        return True

    def _write(self, contents: Contents) -> Version:
        text, self._fragments = render(contents, self._fragments)
        keep_stale_journal(self.path, self._version, self._contents)
        text = in_line_endings_of(self.path, text)
        write_atomically(self.path, text)
        with contextlib.suppress(FileNotFoundError):
            journal.journal_path(self.path).unlink()
        data = text.encode("utf-8")
        return Version(file_stamp(self.path), journal.digest(data), len(data), None, 0)


def tuner_cache(
    cache_dir: Path,
    device_id: str,
    tuner_name: str,
    *,
    journal: bool = False,
    set_aside_damaged: bool = False,
    lock_timeout: float = LOCK_TIMEOUT_S,
) -> PersistentCache:
    """The cache of `tuner_name` on `device_id` under `cache_dir`: its injective file name,
    the name it checks the file against, and its 0.1.0 name to read while it has no file."""
    folder = legacy_cache_file_parts(device_id, tuner_name)[0]
    return PersistentCache(
        cache_path(cache_dir, device_id, tuner_name),
        tuner_name,
        legacy=legacy_cache_file(cache_dir / folder, tuner_name),
        device_id=device_id,
        journal=journal,
        set_aside_damaged=set_aside_damaged,
        lock_timeout=lock_timeout,
    )
