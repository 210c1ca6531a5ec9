"""The one error a user of the command line can cause, a file that cannot be used, and
the warnings about a file that can, printed as one line each."""

from __future__ import annotations

import sys
from pathlib import Path

PROG = "pytest-autotune"


class CliError(Exception):
    """A problem with the user's input: printed as one line, exit code 1."""


def require_file(path: str) -> None:
    file = Path(path)
    if not file.exists():
        raise CliError(f"{path}: no such file")
    if file.is_dir():
        raise CliError(f"{path}: is a directory, not a file")


def warn(message: str) -> None:
    """A problem the command works around (a journal's torn last line): one line on stderr,
    and the command goes on."""
    print(f"{PROG}: warning: {message}", file=sys.stderr)
