"""`pytest-autotune compare A B`: run B judged against run A with the gate's own rule."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path
from typing import TextIO

from pytest_autotune.cli.caches import read_caches, same_kind_of_folder
from pytest_autotune.cli.errors import CliError
from pytest_autotune.cli.report import labelled_records
from pytest_autotune.report import stopped_text
from pytest_autotune.report.compare import (
    Compared,
    compare_caches,
    compare_records,
    render_comparison,
)
from pytest_autotune.report.compare_sides import CompareError
from pytest_autotune.tune.cache_names import cache_files
from pytest_autotune.tune.parse import ConfigError, parse_fraction
from pytest_autotune.tune.records import AutotuneRecord, RecordError
from pytest_autotune.tune.run import RunInfo


def add_to(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the `compare` command to the command line's subcommands."""
    compare = commands.add_parser(
        "compare",
        help="judge run B against run A with the gate's rule",
        description="Judge B against A as the CI gate judges a run against the committed"
        " cache: two record files (--autotune-record), or two cache folders (.autotune/, or"
        " one device's folder in it)."
        " Exits 1 when a group would fail the gate, 2 when a file cannot be used, 0"
        " otherwise.",
    )
    compare.add_argument(
        "before", metavar="A", help="the earlier run: records file or cache folder"
    )
    compare.add_argument("after", metavar="B", help="the later run, of the same kind as A")
    compare.add_argument(
        "--max-regression",
        type=fraction,
        default=None,
        metavar="FRACTION",
        help="the tolerated slowdown, a fraction from 0 to 1: 0.05 for 5%% (default: for"
        " record files, the one the gate judged each group of B with, its marker's or the"
        " run's; cache files do not store it, so two cache folders are judged with the"
        " gate's default for the device kind: pass the max_regression your markers or"
        " settings give)",
    )
    compare.set_defaults(command=run)


def run(args: argparse.Namespace, out: TextIO) -> int:
    before, after = Path(args.before), Path(args.after)
    for path in (before, after):
        if not path.exists():
            raise CliError(f"{path}: no such file or folder")
    stopped: list[str] = []
    shared: RunInfo | None = None
    try:
        if before.is_dir() and after.is_dir():
            for folder in (before, after):
                if not cache_files(folder):
                    # The project's folder, or a cache_dir that is not the run's: "no group
                    # is in both" read as if the two runs had tuned different tests.
                    raise CliError(
                        f"{folder}: holds no cache file: give the cache folder (the cache_dir"
                        " setting, .autotune by default) or one device's folder in it"
                    )
            same_kind_of_folder(before, after)
            rows = read_caches(
                lambda: compare_caches(before, after, max_regression=args.max_regression)
            )
        elif before.is_file() and after.is_file():
            records = labelled_records(args.before), labelled_records(args.after)
            rows = compare_records(
                *records, sources=(args.before, args.after), max_regression=args.max_regression
            )
            stopped = [
                f"{side}'s run {stopped_text(reason)}"
                for side, run_records in zip("AB", records, strict=True)
                if (reason := _stopped(run_records)) is not None
            ]
            shared = _latest_run_of_both(*records)
        else:
            raise CliError(
                f"{args.before}, {args.after}: compare two record files or two cache folders"
            )
    except (CompareError, RecordError) as exc:
        raise CliError(str(exc)) from None
    if not any(row.verdict is not None for row in rows):
        raise CliError(f"{args.before}, {args.after}: no group is in both{_apart(rows)}")
    notes = [*stopped]
    if before.resolve() == after.resolve():
        # Each side reads the same runs: every change is +0.0%, which read as a run that
        # changed nothing (a records file appended by several runs, named twice).
        kind = "folder" if before.is_dir() else "file"
        notes.append(f"A and B are one {kind}: each group is compared with itself")
    elif shared is not None:
        notes.append(f"A's latest run is B's ({shared.label}): each group is compared with itself")
    if before.is_dir() and args.max_regression is None:
        notes.append(CACHES_TOLERANCE)
    note = "\n".join(notes) or None
    out.write(render_comparison(rows, (f"A: {args.before}", f"B: {args.after}"), note) + "\n")
    return 1 if any(row.verdict is not None and row.verdict.failed for row in rows) else 0


def _latest_run_of_both(
    before: Sequence[AutotuneRecord], after: Sequence[AutotuneRecord]
) -> RunInfo | None:
    """The run both files end with, which each side's groups are read from: a history of
    runs appended to one file, compared with the latest run's own file, judged that run
    against itself, every change +0.0%, read as a run that changed nothing. Records that
    carry no run (labelled by their file's name, with no time) are never one run."""
    runs = [records[-1].run if records else None for records in (before, after)]
    same = runs[0] is not None and runs[0] == runs[1] and bool(runs[0].timestamp)
    return runs[0] if same else None


def _stopped(records: Sequence[AutotuneRecord]) -> str | None:
    """Why the file's latest run (its last record's, as compared) stopped early, if it did:
    its groups not reached read "only in A", as if the change had removed them."""
    run = records[-1].run if records else None
    return run.stopped if run is not None else None


CACHES_TOLERANCE = (
    "note: cache files do not store a marker's or the run's max_regression, so each group"
    " was judged with the gate's default for its device kind; where yours differ, pass"
    " --max-regression, or compare the runs' record files (--autotune-record), which hold them"
)
"""Said under a comparison of cache folders: a group whose marker tolerates 50% was judged
a regression at +20% with no word of why CI passed it."""


def _apart(rows: Sequence[Compared]) -> str:
    """Why groups that A and B both hold have no verdict when only their devices differ
    (two machines, or a run under a runner class beside one without): a bare "no group is
    in both" reads as if the groups themselves were missing."""
    only_a = [row for row in rows if row.note == "only in A"]
    only_b = [row for row in rows if row.note == "only in B"]
    both = {_unfiled(row) for row in only_a} & {_unfiled(row) for row in only_b}
    if not both:
        return ""
    devices_a = sorted({row.device_id for row in only_a if _unfiled(row) in both})
    devices_b = sorted({row.device_id for row in only_b if _unfiled(row) in both})
    return (
        f" on one device: A's groups were measured on {', '.join(devices_a)}, B's on"
        f" {', '.join(devices_b)}, and a run is judged only against a baseline of its own"
        " device (or of the runner class --autotune-runner names)"
    )


def _unfiled(row: Compared) -> str:
    """A row's group and key, whichever device it was filed under: a cache root's entries are
    named by their file's path below it, its device's folder first, and a group measured on
    several devices by its name and " on <device>"."""
    return row.name.removeprefix(f"{row.device_id}/").removesuffix(f" on {row.device_id}")


def fraction(text: str) -> float:
    """The marker's and the settings' own parser: `--max-regression 10` (meant as 10%) is
    refused here as it is there, not read as a 1000% tolerance."""
    try:
        return parse_fraction(text, "--max-regression")
    except ConfigError as exc:
        raise argparse.ArgumentTypeError(str(exc).removeprefix("--max-regression: ")) from None
