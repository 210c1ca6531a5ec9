"""`pytest-autotune changed BEFORE AFTER`: does a refreshed cache folder deserve a pull request?"""

from __future__ import annotations

import argparse
import warnings
from pathlib import Path
from typing import TextIO

from pytest_autotune.cli.caches import LOAD_REMARK
from pytest_autotune.cli.errors import CliError
from pytest_autotune.refresh import significant_changes
from pytest_autotune.tune.errors import CacheFileWarning

EXIT_CHANGED = 3
"""`changed`'s status for a change worth a pull request (1 and 2 are errors, as elsewhere)."""


def run(args: argparse.Namespace, out: TextIO) -> int:
    for folder in (args.before, args.after):
        if not Path(folder).is_dir():
            raise CliError(f"{folder}: not a folder (give the cache folders, e.g. .autotune)")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        changes = significant_changes(Path(args.before), Path(args.after))
    for warning in caught:
        if issubclass(warning.category, CacheFileWarning):
            raise CliError(str(warning.message).split(LOAD_REMARK, 1)[0])
    out.write("\n".join(changes or ["no significant change: every baseline kept its history"]))
    out.write("\n")
    return EXIT_CHANGED if changes else 0
