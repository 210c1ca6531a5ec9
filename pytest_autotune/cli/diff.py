"""`pytest-autotune diff OLD NEW`: what a refreshed cache file changes."""

from __future__ import annotations

import argparse
import math
from collections.abc import Sequence
from typing import TextIO

from pytest_autotune.cli.caches import Cache, duration, load_cache, table, winner_median
from pytest_autotune.gate.baseline import work_amounts
from pytest_autotune.report.figures import counted, format_change
from pytest_autotune.report.svg import format_si
from pytest_autotune.tune.bounds import Bounds
from pytest_autotune.tune.cache import PersistentCacheValue
from pytest_autotune.tune.peaks import Peaks, device_peaks


def add_to(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the `diff` command to the command line's subcommands."""
    diff = commands.add_parser(
        "diff",
        help="what changed between two cache files",
        description="Compare two cache files (say, the committed baseline and a refreshed"
        " one): entries added or removed, winners changed, the winner's median change,"
        " candidates added or removed, and the work a key's bounds hold where it changed."
        " Always exits 0 when both files read.",
    )
    diff.add_argument("old", metavar="OLD", help="the cache file before")
    diff.add_argument("new", metavar="NEW", help="the cache file after")
    diff.set_defaults(command=run)


def run(args: argparse.Namespace, out: TextIO) -> int:
    old, new = load_cache(args.old), load_cache(args.new)
    lines = [
        f"old  {old.path} ({old.device_id}, {counted(len(old.entries), 'entry', 'entries')})",
        f"new  {new.path} ({new.device_id}, {counted(len(new.entries), 'entry', 'entries')})",
    ]
    tuners = old.metadata.get("tuner"), new.metadata.get("tuner")
    if tuners[0] != tuners[1] and all(isinstance(t, str) for t in tuners):
        # Two tests' files (or a test's moved by hand): their keys match by text alone, and
        # a "winner changed" between unrelated candidates read as a refresh's change.
        lines.append(f"tuner changed: {tuners[0]} -> {tuners[1]}")
    if old.device_id != new.device_id:
        lines.append(f"device changed: {old.device_id} -> {new.device_id}")
    if old.measured_on != new.measured_on:
        lines.append(f"measured on changed: {old.measured_on or '-'} -> {new.measured_on or '-'}")
    lines.extend(_peak_changes(device_peaks(old.device), device_peaks(new.device)))

    common = [key for key in new.entries if key in old.entries]
    added = [key for key in new.entries if key not in old.entries]
    removed = [key for key in old.entries if key not in new.entries]
    winners_changed = sum(
        old.entries[k].fastest_name != new.entries[k].fastest_name for k in common
    )
    if common:
        lines.append("")
        lines.extend(_compared(old, new, common))
    for label, keys, cache in (("added", added, new), ("removed", removed, old)):
        if keys:
            lines.extend(["", f"{label}:"])
            lines.extend(table([_entry_row(key, cache.entries[key]) for key in keys], "  "))
    lines.append("")
    lines.append(
        f"{len(added)} added, {len(removed)} removed, {winners_changed} winner"
        f"{'' if winners_changed == 1 else 's'} changed, {len(common)} compared"
    )
    out.write("\n".join(lines) + "\n")
    return 0


def _compared(old: Cache, new: Cache, keys: Sequence[str]) -> list[str]:
    """The table of the keys both files hold, each followed by its candidate changes."""
    rows: list[tuple[str, ...]] = [("key", "winner", "winner median", "change")]
    notes: dict[int, list[str]] = {}
    for key in keys:
        before, after = old.entries[key], new.entries[key]
        winner = after.fastest_name
        if before.fastest_name != after.fastest_name:
            winner = f"{before.fastest_name} -> {after.fastest_name}"
        rows.append((key, winner, *_median_change(before, after)))
        notes[len(rows) - 1] = _candidate_changes(before, after) + _work_changes(before, after)
    lines = []
    for index, line in enumerate(table(rows)):
        lines.append(line)
        lines.extend(f"    {note}" for note in notes.get(index, ()))
    return lines


def _entry_row(key: str, value: PersistentCacheValue) -> tuple[str, ...]:
    return (key, f"winner {value.fastest_name}", f"median {duration(winner_median(value))}")


def _median_change(before: PersistentCacheValue, after: PersistentCacheValue) -> tuple[str, str]:
    """The winner's median before and after, and the change in percent (of whichever
    candidate won on each side: the question is how fast the key runs now)."""
    old, new = winner_median(before), winner_median(after)
    change = format_change(new / old - 1) if old is not None and new is not None else "-"
    return f"{duration(old)} -> {duration(new)}", change


def _candidate_changes(before: PersistentCacheValue, after: PersistentCacheValue) -> list[str]:
    old_names = [r.name for r in before.results]
    new_names = [r.name for r in after.results]
    added = [n or "-" for n in new_names if n not in old_names]
    removed = [n or "-" for n in old_names if n not in new_names]
    notes = []
    if added:
        notes.append(f"candidates added: {', '.join(added)}")
    if removed:
        notes.append(f"candidates removed: {', '.join(removed)}")
    return notes


def _work_changes(before: PersistentCacheValue, after: PersistentCacheValue) -> list[str]:
    """A line per resource whose amount the two entries' bounds differ in: a winner eight
    times slower for inputs eight times larger is another problem, as the gate says
    (`Baseline.other_work`), not a slowdown."""
    old, new = _work(before), _work(after)
    if old is None or new is None:
        return []
    return [
        f"work: {resource} {format_si(old[resource])}{unit} -> {format_si(new[resource])}{unit}"
        for resource, unit in (("compute", "op"), ("memory", "B"))
        if resource in old
        and resource in new
        and not math.isclose(old[resource], new[resource], rel_tol=1e-6)
    ]


def _work(value: PersistentCacheValue) -> dict[str, float] | None:
    """The work an entry's bounds were made of; None without bounds, or with bounds that
    do not read (`show` names what is wrong with them)."""
    if value.bounds is None:
        return None
    try:
        return dict(work_amounts(Bounds.from_json(value.bounds)))
    except (KeyError, TypeError, ValueError):
        return None


def _peak_changes(old: Peaks | None, new: Peaks | None) -> list[str]:
    """One line per peak that changed, with the change in percent: a baseline refreshed on
    a machine whose memory got slower explains slower kernels."""
    if old is None or new is None:
        return []
    lines = []
    for kind, unit, before, after in (
        ("memory", "B/s", old.memory, new.memory),
        ("compute", "op/s", old.compute, new.compute),
    ):
        for name in sorted(before.keys() | after.keys()):
            a, b = before.get(name), after.get(name)
            if a == b:
                continue
            text_a = f"{format_si(a)}{unit}" if a is not None else "-"
            text_b = f"{format_si(b)}{unit}" if b is not None else "-"
            change = f" ({format_change(b / a - 1)})" if a and b is not None else ""
            lines.append(f"peak {kind} {name}: {text_a} -> {text_b}{change}")
    return lines
