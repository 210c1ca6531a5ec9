"""`pytest-autotune merge BASE OURS THEIRS`: git's merge driver for cache files.

Every `--autotune-update` rewrites each entry it tunes (new samples, one more session), and
on a CPU the device block's peaks, so two branches that updated one test's file meet in
git's line merge, which knows nothing of entries: two keys added at one place in the sorted
list come out interleaved line by line, and no choice of one side per conflict keeps both
entries. Merged entry by entry (its key and candidate checksum) against the common
ancestor, an entry one branch changed is that branch's, entries either branch added are
both kept, and only an entry both branches changed asks for a choice.
"""

from __future__ import annotations

import argparse
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any, TextIO

from pytest_autotune.cli.errors import CliError
from pytest_autotune.gate.baseline import Baseline, BaselineError
from pytest_autotune.tune.cache_format import Malformed, entry_from_json, parse_contents
from pytest_autotune.tune.cache_names import PEAKS_FILE
from pytest_autotune.tune.files import (
    JsonFileError,
    decode_strict,
    dumps,
    in_line_endings_of,
    why_unwritable,
    write_atomically,
)

EXIT_CONFLICT = 1
"""An entry both branches changed, other than by each adding a session to one baseline: git
then leaves the file unmerged (the merged file, which reads, holds this branch's entry)."""

Identity = tuple[str, str]


def add_to(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the `merge` command to the command line's subcommands."""
    merge = commands.add_parser(
        "merge",
        help="merge two branches' versions of a cache file, entry by entry (a git merge driver)",
        description="Merge THEIRS into OURS against their common ancestor BASE, entry by"
        " entry (key and candidate list), writing OURS: what git's merge driver %O %A %B"
        " gives. Entries only one branch changed or added are that branch's; where both"
        " only added a session to one baseline, this branch's is kept; the device block is"
        " this branch's where both changed it (its peaks move with every update); a key"
        " both recorded first keeps this branch's baseline, and an entry one branch pruned"
        " and the other updated is kept, each named on stderr. Exit"
        f" status {EXIT_CONFLICT} when both changed one entry otherwise (a new baseline, a"
        " new winner): the file then holds this branch's entry, named on stderr.",
    )
    merge.add_argument("base", metavar="BASE", help="the common ancestor's file (%%O)")
    merge.add_argument("ours", metavar="OURS", help="this branch's file, written merged (%%A)")
    merge.add_argument("theirs", metavar="THEIRS", help="the other branch's file (%%B)")
    merge.add_argument("--name", default=None, help="the file's path, for messages (%%P)")
    merge.set_defaults(command=run)


def run(args: argparse.Namespace, out: TextIO) -> int:
    name = args.name or args.ours
    if Path(name).name == PEAKS_FILE:
        return _line_merge(args, name)
    try:
        base = _read(Path(args.base), name, "the common ancestor's", missing_ok=True)
        ours = _read(Path(args.ours), name, "this branch's", missing_ok=False)
        theirs = _read(Path(args.theirs), name, "the other branch's", missing_ok=False)
    except CliError as error:
        # git then leaves the file unmerged as this branch's version, which reads: added
        # as it is, it drops every change of the other branch without a word.
        again = f"git checkout -m -- {_quoted(args.name)}"
        raise CliError(
            f"{error}; the file is left unmerged, as this branch's version alone: once each"
            f" version reads (repaired, or pytest-autotune upgraded), `{again}` merges it"
            " again"
        ) from None
    document, conflicts, notes = merge_documents(base, ours, theirs)
    try:
        # In this branch's line endings, as an update writes them back: a file committed
        # with CRLF came out of every merge with LF, each of its lines changed.
        text = in_line_endings_of(Path(args.ours), dumps(document))
        write_atomically(Path(args.ours), text)
    except OSError as error:
        raise CliError(
            f"{name}: the merged file cannot be written to {args.ours}:"
            f" {why_unwritable(error, args.ours)}"
        ) from None
    for line in [*notes, *conflicts]:
        print(f"{name}: {line}", file=sys.stderr)
    if conflicts:
        # MERGE_HEAD is a merge's alone: a rebase, a cherry-pick and `git stash pop` leave
        # the other side in the index's stage 3, as a merge does.
        print(
            f"{name}: the file holds this branch's entry for each (git's \"ours\", which in a"
            " rebase is the branch rebased onto); run --autotune-update of its test to"
            " measure it again, or take the other side's entry from"
            f" `git show {_quoted(args.name and f':3:{args.name}', ':3:<file>')}`, then `git"
            " add` the file",
            file=sys.stderr,
        )
        return EXIT_CONFLICT
    return 0


def _quoted(path: str | None, unnamed: str = "<file>") -> str:
    """The file's path (git's %P) as a shell reads it in a command we advise, `unnamed`
    where git gave none: a package folder with a space (`my pkg/.autotune`) split the
    pasted command's path in two."""
    return shlex.quote(path) if path else unnamed


def _line_merge(args: argparse.Namespace, name: str) -> int:
    """git's own line merge, for a device's peaks file: `.autotune/**/*.json` names it too
    where a program's `LocalTuner` keeps one among its cache files, and it has no entries
    to merge by. Conflicts are left marked in OURS, exit status 1, as git would."""
    sides = [args.ours, args.base, args.theirs]  # git merge-file's order: into the first
    try:
        done = subprocess.run(
            ["git", "merge-file", "-L", "ours", "-L", "base", "-L", "theirs", *sides],
            capture_output=True,
            text=True,
            check=False,
        )
    except OSError as error:
        raise CliError(f"{name}: git merge-file cannot run: {error}") from None
    if done.returncode < 0 or done.stderr.strip():
        raise CliError(f"{name}: git merge-file failed: {done.stderr.strip()}")
    return EXIT_CONFLICT if done.returncode else 0


def _read(path: Path, name: str, whose: str, *, missing_ok: bool) -> dict[str, Any]:
    """A side's document, validated as a cache file. git gives an empty file for the
    ancestor of a file both branches added."""
    try:
        raw = path.read_bytes()
    except OSError as error:
        raise CliError(f"{name}: {whose} version cannot be read: {error}") from None
    if missing_ok and not raw.strip():
        return {"entries": []}
    try:
        data = decode_strict(raw)
        parse_contents(data)
    except (JsonFileError, Malformed) as error:
        raise CliError(f"{name}: {whose} version {error}") from None
    assert isinstance(data, dict)  # parse_contents refuses anything else
    return data


def merge_documents(
    base: dict[str, Any], ours: dict[str, Any], theirs: dict[str, Any]
) -> tuple[dict[str, Any], list[str], list[str]]:
    """The merged document, a line for each entry both sides changed unlike each other, and
    a note for each entry both added (this branch's kept) and each that one pruned and the
    other updated (the updated one kept)."""
    document: dict[str, Any] = {}
    conflicts: list[str] = []
    notes: list[str] = []
    for field in sorted((base.keys() | ours.keys() | theirs.keys()) - {"entries"}):
        value = _three_way(base.get(field), ours.get(field), theirs.get(field))
        if field == "schema_version" and value is _BOTH:
            # The merged entries may hold the newer side's fields: its version reads them,
            # and reads the older side's entries too.
            value = max(ours[field], theirs[field])  # parse_contents made both integers
        if value is _BOTH:
            value = ours.get(field)
            if field != "device":
                conflicts.append(f"both branches changed the field {field!r}: kept this branch's")
        if value is not None:
            document[field] = value
    old, mine, other = _entries(base), _entries(ours), _entries(theirs)
    entries = {}
    for identity in sorted(old.keys() | mine.keys() | other.keys()):
        entry = _three_way(old.get(identity), mine.get(identity), other.get(identity))
        if entry is _BOTH and identity not in old:
            # Both branches recorded a first baseline of one new key (a size both added):
            # two sessions of equal standing, neither more right; a conflict stopped a
            # rebase at every commit. The next update adds sessions to this branch's.
            entry = mine[identity]
            notes.append(
                f"both branches recorded the new key {identity[0]}: kept this branch's"
                f" baseline (winner {entry.get('fastest_name')!r}; the other's was"
                f" {other[identity].get('fastest_name')!r})"
            )
        if entry is _BOTH and _pruned(identity, mine, other):
            # One branch pruned the key (no entry of it left, as `--autotune-prune` leaves
            # where no group makes it) while the other measured it: dropping it would lose
            # that measurement without a word, and a key the merged tests do not make is
            # named stale, and pruned, by the next update alike.
            ours_kept = identity in mine
            entry = mine[identity] if ours_kept else other[identity]
            dropped, kept = ("the other", "this") if ours_kept else ("this", "the other")
            notes.append(
                f"{dropped} branch pruned the key {identity[0]}, which {kept} branch updated:"
                f" kept {kept} branch's entry (an update with --autotune-prune drops it again"
                " where no test makes the key)"
            )
        if entry is _BOTH:
            entry = _unless_joined(old.get(identity), mine.get(identity), other.get(identity))
            if entry is _BOTH:
                entry = mine.get(identity)
                key, checksum = identity
                conflicts.append(
                    f"both branches changed the entry of key {key} (checksum {checksum!r})"
                    " other than by adding a session"
                )
        if entry is not None:
            entries[identity] = entry
    document["entries"] = list(entries.values())
    return document, conflicts, notes


_BOTH: Any = object()
"""`_three_way`'s answer where both sides changed a value unlike each other."""


def _three_way(base: Any, ours: Any, theirs: Any) -> Any:
    if theirs in (ours, base):
        return ours
    if ours == base:
        return theirs
    return _BOTH


def _entries(document: dict[str, Any]) -> dict[Identity, Any]:
    entries = {}
    for raw in document.get("entries", []):
        key, _ = entry_from_json(raw)
        entries[(key.key, key.checksum)] = raw
    return entries


def _pruned(identity: Identity, ours: dict[Identity, Any], theirs: dict[Identity, Any]) -> bool:
    """Whether one side dropped an entry by holding no entry of its key at all: a prune,
    not the entry of another candidate list, which replaces it (an update keeps one entry
    a key)."""
    key = identity[0]
    return any(
        identity not in side and all(held[0] != key for held in side) for side in (ours, theirs)
    )


def _unless_joined(base: Any, ours: Any, theirs: Any) -> Any:
    """Where both sides changed an entry: the side that did more than add sessions to it
    (replaced it with a new baseline or another candidate list's entry), ours where both
    only added sessions; `_BOTH` where both did more."""
    before = _sessions_of(base)
    ours_joined, theirs_joined = _joined(ours, before), _joined(theirs, before)
    if ours_joined and not theirs_joined:
        return theirs
    if theirs_joined:
        return ours
    return _BOTH


def _sessions_of(entry: Any) -> list[int] | None:
    """The medians (ns) of every session an entry's baseline holds, as an update that joins
    it keeps them: its earlier sessions, then its stored samples'. None where the entry
    cannot serve as a baseline."""
    if not isinstance(entry, dict):
        return None
    try:
        key, value = entry_from_json(entry)
        baseline = Baseline.from_cache_entry(
            value, key.checksum, device={"id": "merge"}, metadata={}
        )
    except (Malformed, BaselineError):
        return None
    return [session.to_json()["median_ns"] for session in baseline.sessions()]


def _joined(entry: Any, before: list[int] | None) -> bool:
    """Whether an update only added sessions to the ancestor's baseline, whose sessions are
    `before`: the entry's earlier sessions begin with the ancestor's (the newest of them,
    as an update keeps the newest 8), the ancestor's own stored samples' among them. A new
    baseline keeps none. Medians alone: an update may drop the sessions' reads."""
    if not isinstance(entry, dict) or not before:
        return False
    sessions = entry.get("sessions") or []
    held = [s.get("median_ns") if isinstance(s, dict) else None for s in sessions]
    return any(held[: len(before) - start] == before[start:] for start in range(len(before)))
