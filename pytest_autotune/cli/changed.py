"""`pytest-autotune changed BEFORE AFTER`: does a refreshed cache folder deserve a pull request?"""

from __future__ import annotations

import argparse
import warnings
from pathlib import Path
from typing import TextIO

from pytest_autotune.cli.caches import read_caches, same_kind_of_folder
from pytest_autotune.cli.errors import EXIT_ERROR, CliError
from pytest_autotune.refresh import same_speed_winners, significant_changes
from pytest_autotune.tune.cache import PersistentCache
from pytest_autotune.tune.cache_names import cache_files, misplaced

EXIT_CHANGED = 3
"""`changed`'s status for a change worth a pull request (2 is an unreadable file, as elsewhere)."""


def add_to(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the `changed` command to the command line's subcommands."""
    changed = commands.add_parser(
        "changed",
        help="does a refreshed cache folder deserve a pull request?",
        description="Compare a cache folder before and after --autotune-update and list what"
        " deserves a pull request: an entry (key and candidate list) new or removed, or a"
        " baseline that started again because the gate called its change significant. Exit"
        f" status {EXIT_CHANGED} when there is such a change, 0 when the refresh only added a"
        f" session to each baseline, {EXIT_ERROR} when a file cannot be read or neither folder"
        " holds a cache file.",
    )
    changed.add_argument("before", metavar="BEFORE", help="the cache folder before")
    changed.add_argument("after", metavar="AFTER", help="the cache folder after")
    changed.set_defaults(command=run)


def run(args: argparse.Namespace, out: TextIO) -> int:
    for folder in (args.before, args.after):
        if not Path(folder).is_dir():
            raise CliError(f"{folder}: not a folder (give the cache folders, e.g. .autotune)")
    before, after = Path(args.before), Path(args.after)
    if not cache_files(after) and not cache_files(before):
        # A refresh writes its folder: two empty ones are the wrong folders (another
        # cache_dir), and "no significant change" would end every scheduled refresh green,
        # unheard. An AFTER emptied of a BEFORE's files is a refresh too: a prune whose
        # tests no longer tune removed the last file, each entry of which is listed.
        raise CliError(
            f"{args.before}, {args.after}: hold no cache file: give the folder"
            " --autotune-update writes (the cache_dir setting, .autotune by default)"
        )
    same_kind_of_folder(before, after)
    for folder in (before, after):
        _refuse_misplaced(folder)
    changes, notes = read_caches(
        lambda: (significant_changes(before, after), same_speed_winners(before, after))
    )
    out.write("\n".join(changes or ["no significant change: every baseline kept its history"]))
    out.write("\n")
    for line in notes:
        out.write(f"note: {line}\n")
    return EXIT_CHANGED if changes else 0


def _refuse_misplaced(folder: Path) -> None:
    """A file in another device's folder, which a run refuses (`misplaced`): its entries
    would read as kept or changed while no gate reads them."""
    for path in cache_files(folder):
        cache = PersistentCache(path)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # what does not read, the changes' reading says
            cache.load()
        why = misplaced(path, cache.device())
        if why is not None:
            raise CliError(why)
