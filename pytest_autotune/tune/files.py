"""The file primitives every JSON file we keep goes through: one strict reader, one atomic
writer, one lock scheme (the cache files and the peaks files share them).

Measured against what broke before (issue 15): a temporary file with a fixed name let two
writers that did not share a lock truncate each other's file; a lock in the temp folder was
a different lock under another `TMPDIR` (413 of 480 entries lost) and a PermissionError
for a second OS user; a value of `1e400` read as infinity and `10**400` or a document
nested 100,000 deep ended in an internal error instead of a line naming the file.
"""

from __future__ import annotations

import contextlib
import glob
import hashlib
import json
import math
import os
import re
import secrets
import stat
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from filelock import FileLock

MAX_DEPTH = 64
"""Deeper than any file we write (a key of nested tuples is a few levels), and far below
the depth at which Python's own recursion gives out, so every reader stays safe."""
MAX_INT_DIGITS = 40
"""Nanoseconds since 1970 have 19 digits; a 40-digit number in our files is damage."""


class JsonFileError(ValueError):
    """A file that is not the strict JSON we write; the message says why, not where."""


class NotJson(JsonFileError):
    """Text that does not parse as JSON at all, as against JSON holding what we never write
    (a NaN): a records file's last line cut short by a killed writer is only the former."""

    def __init__(self, message: str, error: json.JSONDecodeError) -> None:
        super().__init__(message)
        self.error = error


class ConflictMarkers(NotJson):
    """A file git left in a merge conflict: only a person can choose between its sides."""


class RepeatedMember(JsonFileError):
    """An object that names one member twice: what a merge conflict resolved by keeping
    both sides leaves (an editor's "accept both" on two entries added at one place gives
    one entry two `"key"`s). Only a person can choose which to keep."""


def loads_strict(text: str) -> Any:
    """Parse strict JSON: no NaN or Infinity (nor `1e400`, which would read as one), no
    integer longer than `MAX_INT_DIGITS`, no nesting deeper than `MAX_DEPTH`.

    A leading byte order mark, which some Windows editors add on save, is skipped, as JSON
    allows a reader to: a baseline saved so read as invalid JSON, the run went on without
    it, and the next update refused to write the file."""
    text = text.removeprefix("\ufeff")
    if not text.strip():
        raise JsonFileError("is empty")
    try:
        data = json.loads(
            text,
            object_pairs_hook=_unique_members,
            parse_constant=_reject_constant,
            parse_float=_finite,
            parse_int=_bounded_int,
        )
    except json.JSONDecodeError as error:
        conflict = _conflict_marker(text)
        if conflict is not None:
            raise ConflictMarkers(conflict, error) from None
        raise NotJson(f"is not valid JSON: {error}", error) from None
    except RecursionError:
        raise JsonFileError(f"is nested deeper than {MAX_DEPTH} levels") from None
    _check_depth(data)
    return data


MERGE_AGAIN = (
    "merge it again entry by entry, with `pytest-autotune merge` set up as git's merge driver"
    ' (README, "Merging cache files"), by `git checkout -m -- <file>` while git lists the file'
    " as unmerged"
)
"""How a cache file that a merge without the driver left is merged again (`_conflict_marker`)."""

_CONFLICT_MARKER = re.compile(r"^(<<<<<<<|>>>>>>>)( .*)?$", re.MULTILINE)


def _conflict_marker(text: str) -> str | None:
    """Why a file git left in a merge conflict does not read, naming its first marker: the
    JSON parser's "Expecting ',' delimiter: line 134" does not say that two refreshes of
    one cache file met in a merge, nor what to do about it.

    Two branches that refreshed different keys of one file conflict only where both
    changed it, as in the device block's peaks, which every update measures; git merged
    the rest, entries of both. Taking one branch's whole file would silently drop the
    entries only the other branch refreshed, so the advice is conflict by conflict, one
    side throughout an entry (a mix of two sessions' samples would read as one). A merge
    made without the driver is redone entry by entry by `git checkout -m`, which runs the
    driver on the three versions git still holds while the file is unmerged: "merge it
    again with `pytest-autotune merge`", alone, sent people to feed it those versions by
    hand, or to start the whole merge over."""
    found = _CONFLICT_MARKER.search(text)
    if found is None:
        return None
    line = text.count("\n", 0, found.start()) + 1
    return (
        f"holds unresolved merge conflict markers (line {line}: {found.group(0).strip()}):"
        " keep one side of each conflict (one side throughout an entry); taking one"
        " branch's whole file (git checkout --ours or --theirs) drops the entries only the"
        " other branch changed, and two entries the branches added at one place come out"
        f" interleaved, where no side keeps both: {MERGE_AGAIN}"
    )


def read_json(path: Path) -> Any:
    """The strict JSON document of `path`. FileNotFoundError propagates (a missing file is
    usually fine); any other problem is a `JsonFileError` saying why in one line."""
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise
    except OSError as error:
        raise JsonFileError(f"cannot be read: {error.strerror or error}") from None
    return decode_strict(raw)


def decode_strict(raw: bytes) -> Any:
    """`loads_strict` of a file's bytes, which must be UTF-8."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as error:
        raise JsonFileError(f"is not UTF-8 text: {error}") from None
    return loads_strict(text)


def dumps(document: Any) -> str:
    """Our file format: sorted keys, an indent of 2, strict JSON, a final newline.
    A NaN or infinity anywhere is a ValueError (`allow_nan=False`)."""
    return json.dumps(document, indent=2, sort_keys=True, allow_nan=False) + "\n"


def in_line_endings_of(path: Path, text: str) -> str:
    """`text` (our LF) in the line endings of the file `path` is now: CRLF where its first
    line ends so. A cache file committed with CRLF (from Windows without git's line ending
    conversion, or under `eol=crlf`) was rewritten with LF by every update, every line of
    it a change in git's diff. A missing or unreadable file takes LF."""
    try:
        with open(path, "rb") as file:
            first = file.readline()
    except OSError:
        return text
    return text.replace("\n", "\r\n") if first.endswith(b"\r\n") else text


NAME_BYTES = "surrogateescape"
"""How the text files we write encode a name that holds a file name's undecoded bytes: as
those bytes. Under the C locale without UTF-8 mode (`LC_ALL=C PYTHONUTF8=0`) pytest names
`test_café.py` `test_caf\\udcc3\\udca9.py`, which strict UTF-8 refused (the HTML report of a
gate ended the session in a traceback); written back as its bytes it reads `test_café.py`."""


def write_atomically(path: Path, text: str) -> None:
    """Replace `path` with `text`, so that readers see the old file or the new, never half.

    The temporary file has a unique name beside `path` (same file system, so the rename is
    atomic): a writer that does not hold our lock, or a process killed midway, can never
    truncate another writer's temporary file. A failed write removes its temporary file.

    A `path` that is a symbolic link has its target replaced, and stays the link: renamed
    over, a cache file linked to a shared one became a file of its own, and the shared
    file, which the other links name, never saw the new entries.
    """
    path = link_target(path)
    fd, temporary = _new_temporary(path)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", errors=NAME_BYTES, newline="\n") as file:
            file.write(text)
            file.flush()
            os.fsync(file.fileno())
        _keep_mode(path, temporary)
        _replace(temporary, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temporary)
        raise


REPLACE_WAITS = (0.01, 0.02, 0.05, 0.1, 0.2, 0.25, 0.25, 0.25)
"""The pauses between tries of a rename Windows refused (`_replace`): about 1.1 s in all."""


def _replace(temporary: str, path: Path) -> None:
    """`os.replace`, tried again on Windows while the target is open elsewhere.

    Windows refuses to replace a file another process has open without delete sharing,
    which is how Python and most programs open one, with PermissionError (WinError 5 or
    32): a worker of `-n 2` reading the cache file the other one saves, a virus scanner or
    a search indexer looking at the new file. Those hold it for milliseconds, so the
    rename is tried again for about a second; the last refusal is raised. Elsewhere a
    rename over an open file succeeds, and a PermissionError is real (a read-only
    folder): raised at once."""
    for wait in REPLACE_WAITS if sys.platform == "win32" else ():
        try:
            os.replace(temporary, path)
        except PermissionError:
            time.sleep(wait)
        else:
            return
    os.replace(temporary, path)


def replace_text(path: Path, text: str) -> None:
    """Write a file that people read while a run may be writing it (the HTML report, the
    pytest-benchmark file), creating its folder: replaced whole (`write_atomically`), as
    written in place it was empty or cut short to a reader meanwhile (a browser, an
    artifact upload) and two runs writing one path left a mix of both.

    Anything but a plain file of one name is written in place, as before: replaced, a
    link (`/dev/stdout`, a report linked into a served folder) or a second hard link would
    be cut from what it names, and a device (`/dev/null`) or a pipe would become a file.
    """
    try:
        status = path.lstat()
    except FileNotFoundError:
        status = None
    if status is not None and (not stat.S_ISREG(status.st_mode) or status.st_nlink > 1):
        with open(path, "w", encoding="utf-8", errors=NAME_BYTES, newline="\n") as file:
            file.write(text)
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomically(path, text)


def remove_stale_temporaries(path: Path) -> None:
    """Remove the temporary files a writer of `path` killed midway left behind. Call it only
    while holding `lock_beside(path)`: every writer that holds it is then done."""
    for temporary in path.parent.glob(f".{glob.escape(path.name)}.*.tmp"):
        with contextlib.suppress(FileNotFoundError):
            temporary.unlink()


def binary(flags: int) -> int:
    """`os.open`'s `flags` for a file we write bytes to: binary on Windows, which opens a
    descriptor in text mode unless told, writing each LF as CRLF."""
    return flags | getattr(os, "O_BINARY", 0)


def read_at(fd: int, size: int, offset: int) -> bytes:
    """`os.pread`, where Windows has none: a seek and a read there, which moves the
    descriptor's position (our appends, made in append mode, go to the end regardless)."""
    if hasattr(os, "pread"):
        return os.pread(fd, size, offset)
    os.lseek(fd, offset, os.SEEK_SET)
    return os.read(fd, size)


_NEW_FILE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_BINARY", 0)
"""Binary on Windows, as mkstemp opens its files: the text is written with its own newlines."""


def why_unwritable(
    error: OSError, target: str | os.PathLike[str], show: Callable[[Path], str] = str
) -> str:
    """Why a path could not be written: a file where one of its folders should be, or a
    folder of it that is a symbolic link to nothing (a shared cache not mounted), named (as
    `show` shows a path), as mkdir's own word for either was "File exists", which read as
    the target existing."""
    for parent in Path(target).parents:
        if parent.is_symlink() and not parent.exists():
            missing = Path(parent.parent, os.readlink(parent))
            return f"{show(parent)} is a symbolic link to {show(missing)}, which does not exist"
        if parent.exists():
            if not parent.is_dir():
                return f"{show(parent)} is a file, not a folder"
            break
    return error.strerror or str(error)


def _new_temporary(path: Path) -> tuple[int, str]:
    """A temporary file of a unique name beside `path`, open for writing, made as any new
    file is (0666 less the umask): mkstemp's 0600 would leave a new committed cache
    unreadable to the team, and the umask can only be read by setting it, which let a file
    another thread made meanwhile (a program's own, beside a `LocalTuner` saving) be
    writable by every user."""
    for _ in range(100):
        temporary = os.path.join(path.parent, f".{path.name}.{secrets.token_hex(6)}.tmp")
        try:
            return os.open(temporary, _NEW_FILE, 0o666), temporary
        except FileExistsError:
            continue
    raise FileExistsError(f"no free temporary name beside {path}")


def _keep_mode(path: Path, temporary: str) -> None:
    """An existing file keeps its mode (a committed cache stays as readable as it was)."""
    with contextlib.suppress(FileNotFoundError):
        os.chmod(temporary, path.stat().st_mode & 0o777)


def link_target(path: Path) -> Path:
    """The file a symbolic link names (through every link on the way), else `path` itself.
    A cache file linked to a shared one is written there, and locked and journalled beside
    it: beside the link, two projects' links to one file took two locks, and each project's
    journal held entries the other's process never read."""
    return Path(os.path.realpath(path)) if os.path.islink(path) else path


def link_into_nothing(path: Path) -> str | None:
    """Why `path` cannot be written where it is a symbolic link to a file in a folder that
    does not exist (a shared cache on a mount not mounted), else None. Written through,
    its lock made the missing folders (filelock makes a lock file's folders) and the file
    went into them, where the mount, once mounted, hid it."""
    target = link_target(path)
    if target == path or target.parent.is_dir():
        return None
    return f"it is a symbolic link to {target}, in {target.parent}, which does not exist"


def lock_beside(path: Path, timeout: float) -> FileLock:
    """The cross-process lock of `path`: the hidden file `.<name>.lock` in the same folder
    (the folder of the file a link names: `link_target`).

    Beside the file, every process that can write the file finds the same lock whatever its
    `TMPDIR` and whichever user it runs as (a lock in the temp folder was neither), and the
    lock's name needs no sanitising: it is the protected file's own name. Created with the
    file's group and others write bits, so a second user who may write the file may lock it.
    """
    path = link_target(path)
    return FileLock(
        os.fspath(path.with_name(f".{path.name}.lock")),
        timeout=timeout,
        mode=0o666,
    )


def lock_holder(lock_file: str) -> str | None:
    """Which process holds the lock file `lock_file`, in words (`process 4121 (python
    serve.py)`), where the system says: Linux lists each `flock` in `/proc/locks` by the
    holder's process id and the file's device and inode. None elsewhere, or where no holder
    is listed (released meanwhile, or a process of another PID namespace).

    A program that gives up waiting for a cache file's lock names who holds it: a process
    stopped (SIGSTOP, a debugger) or hung holds it until it goes on or ends, and "still
    locked" alone did not say which of the machine's processes to look at."""
    try:
        status = os.stat(lock_file)
        with open("/proc/locks", encoding="ascii") as file:
            listed = file.read()
    except (OSError, ValueError):
        return None
    inode = f"{os.major(status.st_dev):02x}:{os.minor(status.st_dev):02x}:{status.st_ino}"
    for line in listed.splitlines():
        # "1: FLOCK  ADVISORY  WRITE 4121 fe:00:3041458 0 EOF"; a waiter's line reads
        # "1: -> FLOCK ..." and names no holder.
        fields = line.split()
        if len(fields) < 6 or fields[1] == "->" or fields[5] != inode:
            continue
        pid = int(fields[4]) if fields[4].isdigit() else 0
        if pid <= 0:
            return None
        if pid == os.getpid():
            return f"process {pid} (this one)"
        try:
            raw = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            return f"process {pid}"
        command = raw.rstrip(b"\0").replace(b"\0", b" ").decode("utf-8", "replace")
        command = command if len(command) <= 60 else command[:57] + "..."
        return f"process {pid} ({command})" if command else f"process {pid}"
    return None


def _unique_members(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """An object's members, refusing a name given twice: read as Python reads it, the
    later value alone, the next rewrite dropped the other without a word (an entry's
    two keys became one, its baseline filed under the other key)."""
    members = dict(pairs)
    if len(members) < len(pairs):
        seen: dict[str, Any] = {}
        for name, value in pairs:
            if name in seen:
                # The fact alone: what to do is the reader's to say (a cache file's
                # merge, `cache_read`; a records file's writer).
                raise RepeatedMember(
                    f"holds the field {json.dumps(name, ensure_ascii=False)} twice in one"
                    f" object ({json_text(seen[name])}, then {json_text(value)})"
                )
            seen[name] = value
    return members


def _reject_constant(name: str) -> Any:
    raise JsonFileError(f"is not valid JSON: {name} is not a JSON number")


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise JsonFileError(f"holds the number {_shorten(text)}, too large for a float")
    return value


def _bounded_int(text: str) -> int:
    if len(text.lstrip("-")) > MAX_INT_DIGITS:
        raise JsonFileError(
            f"holds an integer of {len(text.lstrip('-'))} digits ({_shorten(text)});"
            f" at most {MAX_INT_DIGITS} are expected"
        )
    return int(text)


def _shorten(text: str) -> str:
    return text if len(text) <= 24 else f"{text[:10]}...{text[-6:]}"


def _check_depth(data: Any) -> None:
    stack: list[tuple[Any, int]] = [(data, 1)]
    while stack:
        value, depth = stack.pop()
        if depth > MAX_DEPTH:
            raise JsonFileError(f"is nested deeper than {MAX_DEPTH} levels")
        if isinstance(value, dict):
            stack.extend((v, depth + 1) for v in value.values())
        elif isinstance(value, list):
            stack.extend((v, depth + 1) for v in value)


_MAX_LOCK_STEM = 120
"""The longest stem of a shared lock's file, with room for `-<user>.lock` under 255."""


def shared_lock(name: str) -> FileLock:
    """A machine-wide lock with no file to protect (the timing of one device): a file in
    the temp folder named by `name` made safe (`../` cannot leave the folder).

    Created writable by every user, so a second user's run takes the same lock; where that
    user cannot open it (the file made by another user under a stricter umask, or a sticky
    temp folder's protection), each user gets a lock of their own: both runs go on, and only
    their timing may overlap.
    """
    stem = re.sub(r"[^A-Za-z0-9_-]", "_", name)
    if len(stem) > _MAX_LOCK_STEM:
        # A device id is a client hook's to choose and may be long: a file name past 255
        # bytes fails every test with `File name too long`. Cut, with a hash of the whole.
        digest = hashlib.sha256(name.encode()).hexdigest()[:10]
        stem = f"{stem[: _MAX_LOCK_STEM - len(digest) - 1]}-{digest}"
    path = Path(tempfile.gettempdir()) / f"{stem}.lock"
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o666)
    except OSError:
        path = path.with_name(f"{stem}-{_user()}.lock")
    else:
        # Past the umask; fails harmlessly on another user's file. Windows has no mode bits
        # to widen, nor, before Python 3.13, `os.fchmod`.
        with contextlib.suppress(OSError):
            if hasattr(os, "fchmod"):
                os.fchmod(fd, 0o666)
        os.close(fd)
    return FileLock(os.fspath(path), mode=0o666)


def _user() -> str:
    return str(os.getuid()) if hasattr(os, "getuid") else os.environ.get("USERNAME", "user")


def json_kind(value: Any) -> str:
    """What a JSON value is, in JSON's words: a reader of the file wrote `null` or `[...]`,
    not Python's None or list."""
    if value is None or isinstance(value, bool):
        return json.dumps(value)
    if isinstance(value, int | float):
        return f"the number {json_text(value)}"
    if isinstance(value, str):
        return "a JSON string"
    return "a JSON array" if isinstance(value, list) else "a JSON object"


def json_text(value: Any) -> str:
    """A value as JSON text, shortened to fit in a message."""
    text = json.dumps(value, ensure_ascii=False)
    return text if len(text) <= 40 else text[:37] + "..."


def json_number(value: float) -> float | str:
    """`value` as strict JSON holds it: JSON has no NaN or infinity, so those are written as
    the string `float()` reads back (a bound with an unmeasured peak, an open interval)."""
    return value if math.isfinite(value) else repr(float(value))
