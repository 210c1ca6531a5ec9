"""`pytest-autotune changed BEFORE AFTER`: does a refreshed cache folder deserve a pull request?"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TextIO

from pytest_autotune.cli.caches import read_caches
from pytest_autotune.cli.errors import CliError
from pytest_autotune.refresh import significant_changes

EXIT_CHANGED = 3
"""`changed`'s status for a change worth a pull request (1 and 2 are errors, as elsewhere)."""


def add_to(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the `changed` command to the command line's subcommands."""
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
    changed.set_defaults(command=run)


def run(args: argparse.Namespace, out: TextIO) -> int:
    for folder in (args.before, args.after):
        if not Path(folder).is_dir():
            raise CliError(f"{folder}: not a folder (give the cache folders, e.g. .autotune)")
    changes = read_caches(lambda: significant_changes(Path(args.before), Path(args.after)))
    out.write("\n".join(changes or ["no significant change: every baseline kept its history"]))
    out.write("\n")
    return EXIT_CHANGED if changes else 0
