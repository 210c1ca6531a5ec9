"""Writing a cache file with its journal: the whole document rendered with each entry's text
kept, the journal lines of a save that only adds entries, the journal appended to or begun,
a journal of another version of the file set aside, a damaged file set aside, and the
folder made ready for the lock (its `.gitignore`), with why a write failed.
`PersistentCache` (`tune/cache.py`) writes through these under its lock."""

from __future__ import annotations

import contextlib
import errno
from collections.abc import Mapping
from dataclasses import replace
from pathlib import Path
from typing import Any

from filelock import Timeout

from pytest_autotune.tune import journal
from pytest_autotune.tune.cache_format import (
    SCHEMA_VERSION,
    CacheFileError,
    Contents,
    DamagedCacheFile,
    PersistentCacheKey,
    PersistentCacheValue,
    entry_order,
    entry_to_json,
)
from pytest_autotune.tune.cache_read import (
    Version,
    journal_status,
    read_file,
    read_journal,
    stale_lines,
)
from pytest_autotune.tune.files import (
    JsonFileError,
    dumps,
    lock_beside,
    why_unwritable,
    write_atomically,
)

EntryTexts = dict[PersistentCacheKey, tuple[PersistentCacheValue, str]]
"""Each entry's value and its text as the last render gave it (`render`)."""


def journal_lines(
    version: Version | None,
    disk: Contents,
    device: dict[str, Any] | None,
    metadata: dict[str, Any],
    updates: Mapping[PersistentCacheKey, PersistentCacheValue],
) -> str | None:
    """The journal lines of this save, when it goes to the journal: asked for (the cache's
    `journal`, which its caller checks), only entries change, and the journal stays small
    beside the file (else None: the file is rewritten, the journal folded in)."""
    if version is None or version.stamp is None:
        return None
    if device != disk.device or metadata != disk.metadata:
        return None
    lines = "".join(_line(key, value) for key, value in sorted(updates.items(), key=entry_order))
    if version.journal_end + len(lines) > max(journal.MIN_COMPACT_BYTES, version.size // 2):
        return None
    return lines


def append_journal(
    cache_file: Path, version: Version, contents: Contents, lines: str
) -> Version | None:
    """Append `lines` to the journal (begun, with its header, if there is none for this
    file); the version of the file and journal after it, None when this process may not
    write the journal, another user's: the save then rewrites the file instead, which only
    needs the folder's permission."""
    path = journal.journal_path(cache_file)
    try:
        if version.journal is None:
            keep_stale_journal(cache_file, version, contents)
            text = journal.header(version.digest) + lines
            write_atomically(path, text)
            end = len(text)
        else:
            end = journal.append(path, version.journal_end, lines)
    except PermissionError:
        return None
    status = journal_status(cache_file)
    if status is None:
        raise OSError(f"{path} disappeared while this process held its lock")
    return replace(version, journal=status[:2], journal_end=end)


def keep_stale_journal(cache_file: Path, version: Version | None, contents: Contents) -> None:
    """Move aside (`<file>.journal.stale-N`) a journal `version` did not apply, where it
    holds entries the file lacks: it extends another version of the file, one a checkout
    replaced, and the read said its entries were ignored; the save that followed wrote a
    new journal over it or deleted it, and they were gone, also once that version was
    checked out again. Under the lock."""
    status = journal_status(cache_file)
    if status is None or version is None or status[:2] == version.journal:
        return
    path = journal.journal_path(cache_file)
    try:
        data, _ = read_journal(cache_file)
        parsed = journal.parse_journal(data or b"")
    except (CacheFileError, JsonFileError, journal.NewerJournal):
        return  # the read refuses a damaged or newer journal; no save gets here
    if parsed.base is None or not stale_lines(path, parsed.entries, contents):
        return
    number = 1
    while (aside := path.with_name(f"{path.name}.stale-{number}")).exists():
        number += 1
    path.rename(aside)


def render(contents: Contents, kept: EntryTexts) -> tuple[str, EntryTexts]:
    """`dumps` of the whole document, with each entry's text kept from the last render
    (`kept`) while its value is the same object: byte for byte what one `dumps` would give;
    and the entries' texts of this render, to keep for the next."""
    items = sorted(contents.entries.items(), key=entry_order)
    fragments = {}
    for key, value in items:
        known = kept.get(key)
        if known is None or known[0] is not value:
            entry = dumps(entry_to_json(key, value)).rstrip("\n")
            known = (value, "\n".join("    " + line for line in entry.split("\n")))
        fragments[key] = known
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
    text = f'{head}\n  "entries": [\n{entries}\n  ]{tail}' if entries else dumps(document)
    return text, fragments


def set_aside(cache_file: Path, lock_timeout: float) -> Path | None:
    """Rename the damaged `cache_file` and its journal out of the way (`<name>.damaged-<n>`);
    the new name of the file, None when it was not moved. Under the lock, and only if the
    file is still damaged: another process may have set it aside and saved a new one
    meanwhile."""
    try:
        with lock_beside(cache_file, lock_timeout):
            try:
                read_file(cache_file)
            except DamagedCacheFile:
                pass
            else:
                return None
            number = 1
            while (aside := cache_file.with_name(f"{cache_file.name}.damaged-{number}")).exists():
                number += 1
            cache_file.rename(aside)
            with contextlib.suppress(FileNotFoundError):
                journal.journal_path(cache_file).rename(journal.journal_path(aside))
            return aside
    except (Timeout, OSError):
        return None


def _line(key: PersistentCacheKey, value: PersistentCacheValue) -> str:
    return journal.entry_line(entry_to_json(key, value))


def why_not(error: OSError, path: Path) -> str:
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
    if isinstance(error, PermissionError) and written and Path(written) in path.parents:
        # mkdir's own "[Errno 13] Permission denied: '.autotune/cpu-x'" (a new device's
        # folder) named the folder it could not make, not the one it may not write to.
        made = Path(written)
        return f"its folder {made} cannot be made: {made.parent} is not writable ({error.strerror})"
    if isinstance(error, (FileExistsError, NotADirectoryError)):
        return why_unwritable(error, path)
    return str(error)


_GITIGNORE = "# pytest-autotune's lock and temporary files\n.*.lock\n.*.tmp\n"


def ignore_lock_files(folder: Path) -> None:
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
