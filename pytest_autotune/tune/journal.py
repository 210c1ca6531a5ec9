"""The journal of a cache file: entries saved one at a time, appended as JSON lines beside it.

Rewriting a cache file costs its whole size: 31 ms a key at 3,000 entries with each
entry's text kept, 0.6 s without (issue 15, `benchmarks/save_cost.py`), and a program's
`LocalTuner` saves every key it tunes. Its saves append the new entries to
`<file>.json.journal` instead, under the file's lock; the file is rewritten, the journal
folded in and removed, when the journal outgrows half the file, and by every save that
is not an append (`--autotune-update` writes whole files, so what it leaves to commit is a
plain cache file).

The first line names the file the journal extends by the SHA-256 of its bytes. A rewrite
changes the digest, so a journal is never applied to a file it does not extend: one left
by a writer killed between writing the file and removing the journal (its entries are in
the file), or one beside a file that `git pull` replaced. A line is written by one
`write`, so a kill can only tear the last one: it was never acknowledged, readers ignore
it, and the next writer cuts it off. A last line that lacks only its newline (an editor
that strips it, a copy that dropped it) is whole: a cut-short line is never a whole JSON
object, whose closing brace is its last byte, so it is read, and the next writer ends it
before appending.
"""

from __future__ import annotations

import codecs
import contextlib
import hashlib
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_autotune.tune.files import JsonFileError, binary, link_target, loads_strict, read_at

JOURNAL_VERSION = 1
MIN_COMPACT_BYTES = 64 * 1024
"""A journal is folded into its file once it is larger than half the file or than this:
a small file is cheap to rewrite, and a journal never costs readers more than the file."""


class NewerJournal(JsonFileError):
    """A journal of a newer pytest-autotune (another environment on the machine): whole,
    only not for this version to read, so its file is not damaged either."""


def journal_path(path: Path) -> Path:
    """The journal of the cache file `path`: `<name>.journal` beside it, not hidden, since
    until it is folded in it holds entries the file does not (beside the file a link
    names: `files.link_target`)."""
    path = link_target(path)
    return path.with_name(f"{path.name}.journal")


def digest(data: bytes) -> str:
    """What names the exact file a journal extends: the SHA-256 of its bytes read as text,
    a byte order mark dropped and CRLF read as LF. A committed file and its journal are
    both converted on a checkout under git's `core.autocrlf` (Git for Windows' default),
    and the journal then named another file: its entries were ignored, as a stale
    journal's are. The files we write have neither, so their digest is their bytes'."""
    return hashlib.sha256(data.removeprefix(codecs.BOM_UTF8).replace(b"\r\n", b"\n")).hexdigest()


def header(base: str) -> str:
    return json.dumps({"journal_of": base, "journal_version": JOURNAL_VERSION}) + "\n"


def entry_line(entry: dict[str, Any]) -> str:
    """One entry as one line (ASCII, so its length is its size in bytes); a NaN or infinity
    is a ValueError, as in the file."""
    return json.dumps(entry, sort_keys=True, allow_nan=False, separators=(",", ":")) + "\n"


@dataclass(frozen=True, slots=True)
class Journal:
    """A journal as read: the file it extends and its whole lines' entries, in order."""

    base: str | None
    """The digest of the file it extends; None when even the first line is torn."""
    entries: list[Any]
    end: int
    """Bytes up to the end of the last whole line: where the next append goes."""
    torn: bool
    """Whether bytes follow `end`: a line cut short by a killed writer (or one writing)."""


def parse_journal(data: bytes) -> Journal:
    """Read a whole journal; `JsonFileError` if a whole line is not what we write."""
    first = data.find(b"\n")
    if first < 0:
        if _whole_object(data) is None:
            return Journal(None, [], 0, bool(data))
        first = len(data)  # a header without its newline, and nothing after it
    head = _line(data[:first], 1)
    version = head.get("journal_version") if isinstance(head, dict) else None
    if type(version) is int and version > JOURNAL_VERSION:
        raise NewerJournal(
            f"was written by a newer pytest-autotune (journal_version {version}, this one"
            f" reads up to {JOURNAL_VERSION}); upgrade pytest-autotune to use it"
        )
    if (
        not isinstance(head, dict)
        or head.get("journal_version") != JOURNAL_VERSION
        or not isinstance(head.get("journal_of"), str)
    ):
        raise JsonFileError(f"line 1 is {_shorten(data[:first])}, not a journal's header")
    entries, end = parse_lines(data, min(first + 1, len(data)), line_number=2)
    return Journal(head["journal_of"], entries, end, end < len(data))


def parse_lines(data: bytes, start: int, line_number: int) -> tuple[list[Any], int]:
    """The entries of the whole lines of `data` from byte `start`, and where they end: a
    last line without its newline counts when it is a whole JSON object. A blank line (an
    editor's second newline at the end) holds no entry and is passed over: read as damage,
    it made the whole cache unreadable, every key tuned again and none saved."""
    end = max(data.rfind(b"\n", start) + 1, start)
    lines = data[start:end].split(b"\n")[:-1]
    entries = [_line(line, line_number + i) for i, line in enumerate(lines) if line.strip()]
    tail = data[end:]
    last = _whole_object(tail)
    if last is not None:
        entries.append(last)
    if last is not None or (tail and not tail.strip()):
        end = len(data)
    return entries, end


def torn(data: bytes) -> bool:
    """Whether a journal's bytes end in a line cut short (which a writer may be finishing)."""
    tail = data[data.rfind(b"\n") + 1 :]
    return bool(tail.strip()) and _whole_object(tail) is None


def append(path: Path, end: int, text: str) -> int:
    """Append `text` to the journal at byte `end`, cutting off a torn line past it, in one
    `write`; durable when it returns, and cut back to `end` where it fails; the journal's
    size after it. A whole last line without its newline gets one first. Call it only
    while holding the file's lock."""
    fd = os.open(path, binary(os.O_RDWR | os.O_APPEND))
    try:
        if os.fstat(fd).st_size != end:
            os.ftruncate(fd, end)
        if end and read_at(fd, 1, end - 1) != b"\n":
            text = "\n" + text
        data = text.encode("ascii")
        try:
            written = os.write(fd, data)
            while written < len(data):
                written += os.write(fd, data[written:])
            os.fsync(fd)
        except BaseException:
            # A disk that fills or fails partway (or Ctrl-C) left a torn last line, which
            # every reader then warned of as a writer killed midway, of a save that said
            # it failed: taken back whole, where the disk lets it.
            with contextlib.suppress(OSError):
                os.ftruncate(fd, end)
            raise
    finally:
        os.close(fd)
    return end + len(data)


def _line(raw: bytes, number: int) -> Any:
    try:
        return loads_strict(raw.decode("utf-8"))
    except (UnicodeDecodeError, JsonFileError) as error:
        raise JsonFileError(f"line {number}: {error}") from None


def _whole_object(raw: bytes) -> Any | None:
    """`raw` as a JSON object if it is one whole (an entry or a header), else None: empty,
    cut short, or not an object."""
    if not raw.rstrip():
        return None
    try:
        value = loads_strict(raw.decode("utf-8"))
    except (UnicodeDecodeError, JsonFileError):
        return None
    return value if isinstance(value, dict) else None


def _shorten(raw: bytes) -> str:
    text = raw.decode("utf-8", "replace")
    return repr(text if len(text) <= 40 else text[:37] + "...")
