"""The one error a user of the command line can cause: a file that cannot be used."""

from __future__ import annotations

from pathlib import Path


class CliError(Exception):
    """A problem with the user's input: printed as one line, exit code 1."""


def require_file(path: str) -> None:
    file = Path(path)
    if not file.exists():
        raise CliError(f"{path}: no such file")
    if file.is_dir():
        raise CliError(f"{path}: is a directory, not a file")
