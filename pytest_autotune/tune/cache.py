"""The persistent cache: the committed baseline file of one tuner on one device.

`<cache_dir>/<device_id>/<tuner_name>.json` tells `LocalTuner` which candidate to call and
tells the CI gate what the baseline measured, so it is written to be read in a code review
(sorted, indented, integers in nanoseconds, a final newline) and guarded like data someone
committed: parallel workers merge under a lock instead of overwriting each other, a write
is atomic, and a file that cannot be read is reported and left alone, never replaced.
"""

from __future__ import annotations

import contextlib
import errno
import os
import warnings
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, replace
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
    Malformed,
    PersistentCacheKey,
    PersistentCacheValue,
    advice,
    entry_from_json,
    entry_order,
    entry_to_json,
    other_device,
    other_tuner,
    parse_contents,
    stored_device,
    stored_tuner,
)
from pytest_autotune.tune.cache_names import (
    cache_file_parts,
    cache_path,
    legacy_cache_file_parts,
)
from pytest_autotune.tune.cache_read import (
    NO_FILE,
    Read,
    Version,
    file_stamp,
    journal_status,
    journal_tail,
    key_index,
    merge_entries,
    read_file,
    read_journal,
    stale_lines,
    with_journal,
)
from pytest_autotune.tune.errors import CacheFileWarning, CacheJournalWarning, caller_level
from pytest_autotune.tune.files import (
    JsonFileError,
    dumps,
    loads_strict,
    lock_beside,
    remove_stale_temporaries,
    why_unwritable,
    write_atomically,
)
from pytest_autotune.tune.key import serialize_key_json

# Re-exported: the file's format and names were read from here before they had modules.
__all__ = [
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
a process is stuck holding it, which should end as an error rather than a hung test run."""


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
        self._contents = Contents({}, None, {})
        self._unreadable: CacheFileError | None = None
        self._source = path
        # What makes a save cost what changed, not the whole file (issue 15: 0.6 s a key
        # at 3,000 entries): the file as this object last read or wrote it, recognised by
        # its version, is not parsed again, and each entry's text is rendered once.
        self._version: Version | None = None
        self._index: dict[str, set[PersistentCacheKey]] | None = None
        self._fragments: dict[PersistentCacheKey, tuple[PersistentCacheValue, str]] = {}

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
                aside = self._set_aside(error)
                if aside is not None:
                    warnings.warn(
                        CacheFileWarning(
                            f"{error}; as this machine's own cache of {self.name!r}, it was"
                            f" set aside as {aside.name} and tuning starts afresh (delete"
                            " that file once nobody needs it)"
                        ),
                        stacklevel=caller_level(),
                    )
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
                    f" overwrite the file: {advice(error, 'remove it to start anew')}"
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

    def _set_aside(self, error: DamagedCacheFile) -> Path | None:
        """Rename this cache's damaged file and its journal out of the way, when this cache
        may (`set_aside_damaged`); the new name of the file, None when it was not moved.
        Under the lock, and only if the file is still damaged: another process may have set
        it aside and saved a new one meanwhile."""
        if not self.set_aside_damaged or error.path != self.path:
            return None
        try:
            with lock_beside(self.path, LOCK_TIMEOUT_S):
                try:
                    read_file(self.path)
                except DamagedCacheFile:
                    pass
                else:
                    return None
                number = 1
                while (aside := self.path.with_name(f"{self.path.name}.damaged-{number}")).exists():
                    number += 1
                self.path.rename(aside)
                with contextlib.suppress(FileNotFoundError):
                    journal.journal_path(self.path).rename(journal.journal_path(aside))
                return aside
        except (Timeout, OSError):
            return None

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
        written, and writes nothing then. With `journal`, entries that only add to the
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
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            _ignore_lock_files(self.path.parent)
            lock = lock_beside(self.path, LOCK_TIMEOUT_S)
            with lock:
                source = self._refresh()
                self._check_name(source, self._contents)
                disk = self._contents
                if rebase is not None:
                    # Decided on this read, under the lock: a decision taken on an earlier
                    # read would overwrite what another process wrote since.
                    updates = rebase(disk.entries)
                new_device = (
                    disk.device
                    if device is None
                    else device(disk.device)
                    if callable(device)
                    else device
                )
                new_metadata = {**disk.metadata, **metadata}
                remove_stale_temporaries(self.path)
                # Everything under the lock: another thread saving through this object next
                # must not see the new version beside the old contents.
                lines = self._journal_lines(disk, new_device, new_metadata, updates)
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
        except Timeout:
            raise CacheFileError(
                self.path, f"{lock.lock_file} still locked after {LOCK_TIMEOUT_S:g} s"
            ) from None
        except ValueError as error:
            # A NaN or infinity in an entry (a key, a bound): JSON has no such number.
            raise CacheFileError(self.path, f"cannot be written: {error}") from None
        except OSError as error:
            raise CacheFileError(
                self.path, f"cannot be written: {_why_not(error, self.path)}"
            ) from None

    def saved_since(self, key: str) -> dict[PersistentCacheKey, PersistentCacheValue]:
        """The file's entries of the stable key `key` as they are now: another process may
        have saved one since this object read the file. Read under the lock, and only what
        changed since this object last read or wrote the file; empty where the file is not
        there, did not read, or its lock cannot be taken (a read-only folder)."""
        if self._unreadable is not None or not self.path.is_file():
            return {}
        try:
            with lock_beside(self.path, LOCK_TIMEOUT_S):
                self._check_name(self._refresh(), self._contents)
        except (Timeout, OSError, CacheFileError):
            # The save after tuning says what is wrong with the file, if it still is.
            return {}
        return {pk: self._contents.entries[pk] for pk in self._keys().get(key, ())}

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
            raise CacheFileError(source, other_tuner(stored, self.name))
        device = stored_device(contents)
        if self.device_id is not None and device is not None and device != self.device_id:
            raise CacheFileError(source, other_device(device, self.device_id))

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

    def _journal_lines(
        self,
        disk: Contents,
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
        lines = "".join(
            _line(key, value) for key, value in sorted(updates.items(), key=entry_order)
        )
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
                self._keep_stale_journal()
                text = journal.header(version.digest) + lines
                write_atomically(path, text)
                end = len(text)
            else:
                end = journal.append(path, version.journal_end, lines)
        except PermissionError:
            return False
        status = journal_status(self.path)
        if status is None:
            raise OSError(f"{path} disappeared while this process held its lock")
        self._version = replace(version, journal=status[:2], journal_end=end)
        return True

    def _write(self, contents: Contents) -> Version:
        text = self._render(contents)
        self._keep_stale_journal()
        write_atomically(self.path, text)
        with contextlib.suppress(FileNotFoundError):
            journal.journal_path(self.path).unlink()
        data = text.encode("utf-8")
        return Version(file_stamp(self.path), journal.digest(data), len(data), None, 0)

    def _keep_stale_journal(self) -> None:
        """Move aside (`<file>.journal.stale-N`) a journal this object's version did not
        apply, where it holds entries the file lacks: it extends another version of the
        file, one a checkout replaced, and the read said its entries were ignored; the save
        that followed wrote a new journal over it or deleted it, and they were gone, also
        once that version was checked out again. Under the lock."""
        status = journal_status(self.path)
        version = self._version
        if status is None or version is None or status[:2] == version.journal:
            return
        path = journal.journal_path(self.path)
        try:
            data, _ = read_journal(self.path)
            parsed = journal.parse_journal(data or b"")
        except (CacheFileError, JsonFileError, journal.NewerJournal):
            return  # the read refuses a damaged or newer journal; no save gets here
        if parsed.base is None or not stale_lines(path, parsed.entries, self._contents):
            return
        number = 1
        while (aside := path.with_name(f"{path.name}.stale-{number}")).exists():
            number += 1
        path.rename(aside)

    def _render(self, contents: Contents) -> str:
        """`dumps` of the whole document, with each entry's text kept from the last render
        while its value is the same object: byte for byte what one `dumps` would give."""
        items = sorted(contents.entries.items(), key=entry_order)
        fragments = {}
        for key, value in items:
            known = self._fragments.get(key)
            if known is None or known[0] is not value:
                entry = dumps(entry_to_json(key, value)).rstrip("\n")
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
    cache_dir: Path,
    device_id: str,
    tuner_name: str,
    *,
    journal: bool = False,
    set_aside_damaged: bool = False,
) -> PersistentCache:
    """The cache of `tuner_name` on `device_id` under `cache_dir`: its injective file name,
    the name it checks the file against, and its 0.1.0 name to read while it has no file."""
    folder, name = legacy_cache_file_parts(device_id, tuner_name)
    return PersistentCache(
        cache_path(cache_dir, device_id, tuner_name),
        tuner_name,
        legacy=cache_dir / folder / name,
        device_id=device_id,
        journal=journal,
        set_aside_damaged=set_aside_damaged,
    )


def _line(key: PersistentCacheKey, value: PersistentCacheValue) -> str:
    return journal.entry_line(entry_to_json(key, value))


def _why_not(error: OSError, path: Path) -> str:
    """Why the cache file `path` could not be written. A save writes beside it first (its
    folder's `.gitignore`, its lock, a temporary file), so a folder the user may not write
    to failed naming `.gitignore`, which read as a problem with that file; and mkdir's
    "File exists" for a file in a folder's place read as the cache file existing."""
    written = getattr(error, "filename", None)
    if error.errno == errno.EROFS:
        # A read-only mount (a checkout in a container, a package's folder) fails at the
        # first file a save writes, its `.gitignore`, whichever file it is.
        return f"its folder {path.parent} is on a read-only file system"
    if isinstance(error, PermissionError) and written and Path(written).parent == path.parent:
        if Path(written).exists() and Path(written) != path:
            # Another user's lock file, a read-only file of ours beside it: that file.
            return f"{Path(written).name} beside it is not writable ({error.strerror})"
        return f"its folder {path.parent} is not writable ({error.strerror})"
    if isinstance(error, (FileExistsError, NotADirectoryError)):
        return why_unwritable(error, path)
    return str(error)


_GITIGNORE = "# pytest-autotune's lock and temporary files\n.*.lock\n.*.tmp\n"


def _ignore_lock_files(folder: Path) -> None:
    """The locks live beside the files they protect (`files.lock_beside`), in a folder that
    is committed: a `.gitignore` there keeps them out of commits, as pytest's own cache
    folder does. Written once, never replaced, so a project's own edits stay."""
    path = folder / ".gitignore"
    made = False
    try:
        with open(path, "x", encoding="utf-8") as file:
            made = True
            file.write(_GITIGNORE)
    except FileExistsError:
        return
    except OSError:
        # A full disk makes the file and fails its write: kept empty, it was never written
        # again ("never replaced"), and the lock files went into every commit after. Ours
        # only: where the open failed, a file another process makes meanwhile stays.
        if made:
            with contextlib.suppress(OSError):
                path.unlink(missing_ok=True)
        raise
