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
import sys
from collections.abc import Callable, Sequence
from typing import TextIO

from pytest_autotune.cli.changed import EXIT_CHANGED
from pytest_autotune.cli.changed import run as run_changed
from pytest_autotune.cli.compare import fraction
from pytest_autotune.cli.compare import run as run_compare
from pytest_autotune.cli.diff import run as run_diff
from pytest_autotune.cli.errors import CliError
from pytest_autotune.cli.report import run as run_report
from pytest_autotune.cli.show import run as run_show

__all__ = ["EXIT_CHANGED", "main"]

PROG = "pytest-autotune"
DEFAULT_REPORT = "autotune-report.html"


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
    report.set_defaults(command=run_report)

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
        type=fraction,
        default=None,
        metavar="FRACTION",
        help="the tolerated slowdown, 0.05 for 5%% (default: the gate's for the device kind)",
    )
    compare.set_defaults(command=run_compare)

    show = commands.add_parser(
        "show",
        help="print a cache file as a table",
        description="Print a cache file (<cache_dir>/<device_id>/<tuner>.json): its device,"
        " and for each key the winner and every candidate's median or error.",
    )
    show.add_argument("cache", metavar="CACHE", help="a cache file (.json)")
    show.set_defaults(command=run_show)

    diff = commands.add_parser(
        "diff",
        help="what changed between two cache files",
        description="Compare two cache files (say, the committed baseline and a refreshed"
        " one): entries added or removed, winners changed, the winner's median change, and"
        " candidates added or removed. Always exits 0 when both files read.",
    )
    diff.add_argument("old", metavar="OLD", help="the cache file before")
    diff.add_argument("new", metavar="NEW", help="the cache file after")
    diff.set_defaults(command=run_diff)

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
    changed.set_defaults(command=run_changed)
    return parser
