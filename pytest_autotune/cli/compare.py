"""`pytest-autotune compare A B`: run B judged against run A with the gate's own rule."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TextIO

from pytest_autotune.cli.caches import read_caches
from pytest_autotune.cli.errors import CliError
from pytest_autotune.cli.report import labelled_records
from pytest_autotune.report.compare import (
    CompareError,
    compare_caches,
    compare_records,
    render_comparison,
)
from pytest_autotune.tune.records import RecordError


def add_to(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the `compare` command to the command line's subcommands."""
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
    compare.set_defaults(command=run)


def run(args: argparse.Namespace, out: TextIO) -> int:
    before, after = Path(args.before), Path(args.after)
    for path in (before, after):
        if not path.exists():
            raise CliError(f"{path}: no such file or folder")
    try:
        if before.is_dir() and after.is_dir():
            rows = read_caches(
                lambda: compare_caches(before, after, max_regression=args.max_regression)
            )
        elif before.is_file() and after.is_file():
            rows = compare_records(
                labelled_records(args.before),
                labelled_records(args.after),
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


def fraction(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number such as 0.05, got {text!r}") from None
    if not (0 <= value < 10):
        raise argparse.ArgumentTypeError(f"expected a fraction such as 0.05, got {text!r}")
    return value
