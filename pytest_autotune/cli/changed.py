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
    _refuse_other_devices(before, after)
    changes, notes = read_caches(
        lambda: (significant_changes(before, after), same_speed_winners(before, after))
    )
    out.write("\n".join(changes or ["no significant change: every baseline kept its history"]))
    out.write("\n")
    for line in notes:
        out.write(f"note: {line}\n")
    return EXIT_CHANGED if changes else 0


def _devices(folder: Path) -> dict[str, str | None]:
    """The device each cache file under `folder` holds the cache of, by its path below it.
    A file in another device's folder, which a run refuses (`misplaced`), is refused here
    too: its entries would read as kept or changed while no gate reads them."""
    devices = {}
    for path in cache_files(folder):
        cache = PersistentCache(path)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # what does not read, the changes' reading says
            cache.load()
        device = cache.device()
        why = misplaced(path, device)
        if why is not None:
            raise CliError(why)
        device_id = device.get("id") if device else None
        devices[path.relative_to(folder).as_posix()] = (
            device_id if isinstance(device_id, str) else None
        )
    return devices


def _refuse_other_devices(before: Path, after: Path) -> None:
    """Refuse two files matched by their path that hold two devices' caches: the folders
    of two devices (`changed .autotune/cpu-a .autotune/cpu-b`), whose entries were judged
    against each other as one device's before and after, and read "no significant change"
    where nothing of either device's refresh was compared. `compare` finds no group in
    both on one device there."""
    devices = _devices(before), _devices(after)
    for name in sorted(devices[0].keys() & devices[1].keys()):
        old, new = devices[0][name], devices[1][name]
        if old is not None and new is not None and old != new:
            raise CliError(
                f"{before / name}, {after / name}: hold the caches of two devices, {old!r}"
                f" and {new!r}: changed compares one device's caches before and after a"
                " refresh; give the two cache roots, or two folders of one device"
            )
