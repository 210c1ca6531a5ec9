"""`pytest-autotune` (also `python -m pytest_autotune`): the report and the cache files,
without running a test.

- `report RECORDS.jsonl... -o report.html` renders the HTML report from records, so the
  report of a CI run can be rebuilt from the records it uploaded; given the records of
  several runs, it labels them and draws each group's trend across them.
- `compare A B` judges run B against run A (two record files, or two cache folders) with
  the gate's own rule: exit code 1 when a group would fail the gate.
- `show CACHE.json` prints a cache file as a table: what a reviewer wants to see of a
  committed baseline without reading its JSON.
- `diff OLD NEW` says what a refreshed cache changes (winners, medians, candidate lists):
  the summary the pull request that commits it needs.
- `changed BEFORE AFTER` says whether a refreshed cache folder deserves a pull request (exit
  status 3) or only added a session to each baseline (0): the scheduled refresh asks it.

Errors a user can cause (a missing file, bad JSON, a record or cache that does not read) end
as one line on stderr naming the file, with exit code 1; usage errors exit with 2, as
argparse does. Nothing here runs code from the files it reads.
"""

from __future__ import annotations

import argparse
import json
import sys
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, TextIO

from pytest_autotune.refresh import significant_changes
from pytest_autotune.report.compare import (
    CompareError,
    compare_caches,
    compare_records,
    render_comparison,
)
from pytest_autotune.report.figures import format_change
from pytest_autotune.report.html import key_text, write_html
from pytest_autotune.report.svg import format_si
from pytest_autotune.tune.benchmark import AutotuneOutcome, AutotuneResult
from pytest_autotune.tune.cache import (
    PersistentCache,
    PersistentCacheKey,
    PersistentCacheValue,
)
from pytest_autotune.tune.errors import CacheFileWarning
from pytest_autotune.tune.log import format_duration
from pytest_autotune.tune.peaks import Peaks
from pytest_autotune.tune.records import AutotuneRecord, RecordError, read_records
from pytest_autotune.tune.run import RunInfo

__all__ = ["main"]

PROG = "pytest-autotune"
EXIT_CHANGED = 3
"""`changed`'s status for a change worth a pull request (1 and 2 are errors, as elsewhere)."""
DEFAULT_REPORT = "autotune-report.html"


class CliError(Exception):
    """A problem with the user's input: printed as one line, exit code 1."""


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; the exit code (0 done, 1 a file that cannot be used).

    Usage errors and `--help` exit through argparse's `SystemExit` (2 and 0).
    """
    args = _parser().parse_args(argv)
    command: Callable[[argparse.Namespace, TextIO], int] = args.command
    try:
        return command(args, sys.stdout)
    except CliError as exc:
        print(f"{PROG}: error: {exc}", file=sys.stderr)
        return 1


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=PROG,
        description="Render the autotune report from records, compare two runs with the"
        " gate's rule, and show or diff cache files.",
    )
    commands = parser.add_subparsers(title="commands", metavar="COMMAND", required=True)

    report = commands.add_parser(
        "report",
        help="render the HTML report from records (--autotune-record files)",
        description="Render the HTML report, as --autotune-html writes it, from records"
        " (JSON lines written by --autotune-record or a Recorder).",
    )
    report.add_argument("records", nargs="+", metavar="RECORDS", help="a records file (.jsonl)")
    report.add_argument(
        "-o",
        "--output",
        default=DEFAULT_REPORT,
        metavar="PATH",
        help=f"the HTML file to write (default: {DEFAULT_REPORT})",
    )
    report.add_argument(
        "--title", default="pytest-autotune", help="the report's title (default: %(default)s)"
    )
    report.set_defaults(command=_report)

    compare = commands.add_parser(
        "compare",
        help="judge run B against run A with the gate's rule",
        description="Judge B against A as the CI gate judges a run against the committed"
        " cache: two record files (--autotune-record), or two cache folders (.autotune/)."
        " Exits 1 when a group would fail the gate, 0 otherwise.",
    )
    compare.add_argument(
        "before", metavar="A", help="the earlier run: records file or cache folder"
    )
    compare.add_argument("after", metavar="B", help="the later run, of the same kind as A")
    compare.add_argument(
        "--max-regression",
        type=_fraction,
        default=None,
        metavar="FRACTION",
        help="the tolerated slowdown, 0.05 for 5%% (default: the gate's for the device kind)",
    )
    compare.set_defaults(command=_compare)

    show = commands.add_parser(
        "show",
        help="print a cache file as a table",
        description="Print a cache file (<cache_dir>/<device_id>/<tuner>.json): its device,"
        " and for each key the winner and every candidate's median or error.",
    )
    show.add_argument("cache", metavar="CACHE", help="a cache file (.json)")
    show.set_defaults(command=_show)

    diff = commands.add_parser(
        "diff",
        help="what changed between two cache files",
        description="Compare two cache files (say, the committed baseline and a refreshed"
        " one): entries added or removed, winners changed, the winner's median change, and"
        " candidates added or removed. Always exits 0 when both files read.",
    )
    diff.add_argument("old", metavar="OLD", help="the cache file before")
    diff.add_argument("new", metavar="NEW", help="the cache file after")
    diff.set_defaults(command=_diff)

    changed = commands.add_parser(
        "changed",
        help="does a refreshed cache folder deserve a pull request?",
        description="Compare a cache folder before and after --autotune-update and list what"
        " deserves a pull request: an entry (key and candidate list) new or removed, or a"
        " baseline that started again because the gate called its change significant. Exit"
        f" status {EXIT_CHANGED} when there is such a change, 0 when the refresh only added a"
        " session to each baseline, 1 when a file cannot be read.",
    )
    changed.add_argument("before", metavar="BEFORE", help="the cache folder before")
    changed.add_argument("after", metavar="AFTER", help="the cache folder after")
    changed.set_defaults(command=_changed)
    return parser


# -- changed -------------------------------------------------------------------------------


def _changed(args: argparse.Namespace, out: TextIO) -> int:
    for folder in (args.before, args.after):
        if not Path(folder).is_dir():
            raise CliError(f"{folder}: not a folder (give the cache folders, e.g. .autotune)")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        changes = significant_changes(Path(args.before), Path(args.after))
    for warning in caught:
        if issubclass(warning.category, CacheFileWarning):
            raise CliError(str(warning.message).split(_LOAD_REMARK, 1)[0])
    out.write("\n".join(changes or ["no significant change: every baseline kept its history"]))
    out.write("\n")
    return EXIT_CHANGED if changes else 0


# -- report --------------------------------------------------------------------------------


def _report(args: argparse.Namespace, out: TextIO) -> int:
    records: list[AutotuneRecord] = []
    for path in args.records:
        records.extend(_labelled_records(path))
    try:
        write_html(args.output, records, title=args.title)
    except RecordError as exc:
        raise CliError(f"{', '.join(args.records)}: {exc}") from None
    except OSError as exc:
        raise CliError(f"{args.output}: cannot write the report: {exc.strerror or exc}") from None
    count = len(records)
    print(f"wrote {args.output} ({count} decision{'' if count == 1 else 's'})", file=out)
    return 0


def _labelled_records(path: str) -> list[AutotuneRecord]:
    """The records of one file; those that carry no run (written before records did) are
    labelled by the file's name, so the runs of several such files stay apart."""
    _require_file(path)
    try:
        records = read_records(path)
    except RecordError as exc:
        raise CliError(str(exc)) from None
    unlabelled = RunInfo(id=Path(path).name, timestamp="")
    return [r if r.run is not None else replace(r, run=unlabelled) for r in records]


def _fraction(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number such as 0.05, got {text!r}") from None
    if not (0 <= value < 10):
        raise argparse.ArgumentTypeError(f"expected a fraction such as 0.05, got {text!r}")
    return value


# -- compare -------------------------------------------------------------------------------


def _compare(args: argparse.Namespace, out: TextIO) -> int:
    before, after = Path(args.before), Path(args.after)
    for path in (before, after):
        if not path.exists():
            raise CliError(f"{path}: no such file or folder")
    try:
        if before.is_dir() and after.is_dir():
            rows = compare_caches(before, after, max_regression=args.max_regression)
        elif before.is_file() and after.is_file():
            rows = compare_records(
                _labelled_records(args.before),
                _labelled_records(args.after),
                sources=(args.before, args.after),
                max_regression=args.max_regression,
            )
        else:
            raise CliError(
                f"{args.before}, {args.after}: compare two record files or two cache folders"
            )
    except (CompareError, RecordError) as exc:
        raise CliError(str(exc)) from None
    if not any(row.verdict is not None for row in rows):
        raise CliError(f"{args.before}, {args.after}: no group is in both")
    out.write(render_comparison(rows, (f"A: {args.before}", f"B: {args.after}")) + "\n")
    return 1 if any(row.verdict is not None and row.verdict.failed for row in rows) else 0


def _require_file(path: str) -> None:
    file = Path(path)
    if not file.exists():
        raise CliError(f"{path}: no such file")
    if file.is_dir():
        raise CliError(f"{path}: is a directory, not a file")


# -- reading cache files -------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Cache:
    """One cache file as read: its entries by key text, and its device block."""

    path: str
    entries: dict[str, PersistentCacheValue]
    device: Mapping[str, Any] | None
    metadata: Mapping[str, Any]

    @property
    def device_id(self) -> str:
        device_id = self.device.get("id") if self.device else None
        return device_id if isinstance(device_id, str) else "-"


_LOAD_REMARK = "; autotune goes on as if there were no cache"
"""What `PersistentCache.load`'s warning adds for a test run, and is not true here."""


def _load_cache(path: str) -> _Cache:
    """Read a cache file through `PersistentCache` (so `show` accepts exactly what a run
    accepts); a file it cannot use is a `CliError` with its path and reason."""
    _require_file(path)
    cache = PersistentCache(Path(path))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        entries = cache.load()
    for warning in caught:
        if issubclass(warning.category, CacheFileWarning):
            raise CliError(str(warning.message).split(_LOAD_REMARK, 1)[0])
    return _Cache(path, _by_key(entries), cache.device(), cache.metadata())


def _by_key(
    entries: Mapping[PersistentCacheKey, PersistentCacheValue],
) -> dict[str, PersistentCacheValue]:
    """Entries by the key as people read it, sorted. A key with several candidate lists
    (checksums) in one file gets the checksum added, so none hides another."""
    counts: dict[str, int] = {}
    for pk in entries:
        counts[pk.key] = counts.get(pk.key, 0) + 1
    named = {}
    for pk, value in entries.items():
        name = key_text(value.key)
        named[f"{name} [{pk.checksum}]" if counts[pk.key] > 1 else name] = value
    return dict(sorted(named.items()))


def _winner_median(value: PersistentCacheValue) -> float | None:
    winner = value.winner()
    return winner.median if isinstance(winner, AutotuneOutcome) else None


def _result_cells(result: AutotuneResult) -> tuple[str, str, str]:
    """(median, samples, error) of one candidate; the error on one line, since a table row
    cannot hold a traceback."""
    if isinstance(result, AutotuneOutcome):
        return format_duration(result.median), str(len(result.effective_samples)), ""
    message = " ".join(result.message.split())
    return "-", "-", result.kind.value + (f": {message}" if message else "")


def _peaks(device: Mapping[str, Any] | None) -> Peaks | None:
    data = device.get("peaks") if device else None
    if data is None:
        return None
    try:
        return Peaks.from_json(data)
    except (TypeError, ValueError):
        return None


def _peaks_text(peaks: Peaks) -> str:
    memory = ", ".join(
        f"{name} {format_si(rate)}B/s" for name, rate in sorted(peaks.memory.items())
    )
    compute = ", ".join(
        f"{name} {format_si(rate)}op/s" for name, rate in sorted(peaks.compute.items())
    )
    parts = [f"memory {memory}" if memory else "", f"compute {compute}" if compute else ""]
    if peaks.threads is not None:
        parts.append(f"{peaks.threads} thread{'' if peaks.threads == 1 else 's'}")
    return "; ".join(p for p in parts if p) or "-"


def _table(rows: Sequence[Sequence[str]], indent: str = "") -> list[str]:
    """Rows as aligned columns, two spaces apart; the last column is not padded."""
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    return [
        (
            indent + "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True))
        ).rstrip()
        for row in rows
    ]


# -- show ----------------------------------------------------------------------------------


def _show(args: argparse.Namespace, out: TextIO) -> int:
    cache = _load_cache(args.cache)
    lines = [f"cache   {cache.path}", f"device  {cache.device_id}"]
    peaks = _peaks(cache.device)
    if cache.device and cache.device.get("peaks") is not None:
        lines.append(f"peaks   {_peaks_text(peaks) if peaks else 'unreadable'}")
    fingerprint = cache.device.get("fingerprint") if cache.device else None
    if isinstance(fingerprint, dict) and fingerprint:
        lines.append(
            "fingerprint  " + ", ".join(f"{k}={_plain(v)}" for k, v in sorted(fingerprint.items()))
        )
    for name, value in sorted(cache.metadata.items()):
        lines.append(f"{name}  {_plain(value)}")
    count = len(cache.entries)
    lines.append(f"{count} entr{'y' if count == 1 else 'ies'}")
    for key, value in cache.entries.items():
        median = _winner_median(value)
        lines.append("")
        lines.append(f"key {key}: winner {value.fastest_name}, median {_duration(median)}")
        rows = [("", "candidate", "median", "samples", "error")]
        for index, result in enumerate(value.results):
            mark = "*" if index == value.fastest_index and result is value.winner() else ""
            rows.append((mark, result.name or f"#{index}", *_result_cells(result)))
        lines.extend(_table(rows, indent="  "))
    out.write("\n".join(lines) + "\n")
    return 0


def _plain(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, sort_keys=True)


# -- diff ----------------------------------------------------------------------------------


def _diff(args: argparse.Namespace, out: TextIO) -> int:
    old, new = _load_cache(args.old), _load_cache(args.new)
    lines = [
        f"old  {old.path} ({old.device_id}, {len(old.entries)} entries)",
        f"new  {new.path} ({new.device_id}, {len(new.entries)} entries)",
    ]
    if old.device_id != new.device_id:
        lines.append(f"device changed: {old.device_id} -> {new.device_id}")
    lines.extend(_peak_changes(_peaks(old.device), _peaks(new.device)))

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
            lines.extend(_table([_entry_row(key, cache.entries[key]) for key in keys], "  "))
    lines.append("")
    lines.append(
        f"{len(added)} added, {len(removed)} removed, {winners_changed} winner"
        f"{'' if winners_changed == 1 else 's'} changed, {len(common)} compared"
    )
    out.write("\n".join(lines) + "\n")
    return 0


def _compared(old: _Cache, new: _Cache, keys: Sequence[str]) -> list[str]:
    """The table of the keys both files hold, each followed by its candidate changes."""
    rows: list[tuple[str, ...]] = [("key", "winner", "winner median", "change")]
    notes: dict[int, list[str]] = {}
    for key in keys:
        before, after = old.entries[key], new.entries[key]
        winner = after.fastest_name
        if before.fastest_name != after.fastest_name:
            winner = f"{before.fastest_name} -> {after.fastest_name}"
        rows.append((key, winner, *_median_change(before, after)))
        notes[len(rows) - 1] = _candidate_changes(before, after)
    lines = []
    for index, line in enumerate(_table(rows)):
        lines.append(line)
        lines.extend(f"    {note}" for note in notes.get(index, ()))
    return lines


def _entry_row(key: str, value: PersistentCacheValue) -> tuple[str, ...]:
    return (key, f"winner {value.fastest_name}", f"median {_duration(_winner_median(value))}")


def _median_change(before: PersistentCacheValue, after: PersistentCacheValue) -> tuple[str, str]:
    """The winner's median before and after, and the change in percent (of whichever
    candidate won on each side: the question is how fast the key runs now)."""
    old, new = _winner_median(before), _winner_median(after)
    change = format_change(new / old - 1) if old is not None and new is not None else "-"
    return f"{_duration(old)} -> {_duration(new)}", change


def _duration(seconds: float | None) -> str:
    return format_duration(seconds) if seconds is not None else "-"


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
