"""`pytest-autotune` (also `python -m pytest_autotune`): the report and the cache files,
without running a test.

- `report RECORDS.jsonl... -o report.html` renders the HTML report from records, so the
  report of a CI run can be rebuilt from the records it uploaded; given the records of
  several runs, it labels them and draws each group's trend across them.
- `compare A B` judges run B against run A (two record files, or two cache folders) with
  the gate's own rule: exit code 1 when a group would fail the gate.
- `show CACHE.json` prints a cache file as a table: what a reviewer wants to see of a
  committed baseline without reading its JSON; `show .autotune` prints every one.
- `diff OLD NEW` says what a refreshed cache changes (winners, medians, candidate lists):
  the summary the pull request that commits it needs.
- `changed BEFORE AFTER` says whether a refreshed cache folder deserves a pull request (exit
  status 3) or only added a session to each baseline (0): the scheduled refresh asks it.
- `merge BASE OURS THEIRS` merges two branches' versions of a cache file entry by entry:
  git's merge driver for `.autotune/**/*.json`.

Errors a user can cause (a missing file, bad JSON, a record or cache that does not read) end
as one line on stderr naming the file, with exit code 2, as usage errors do (argparse):
never 1, which is `compare`'s regression. Nothing here runs code from the files it reads.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import io
import os
import re
import sys
from collections.abc import Callable, Sequence
from typing import TextIO

from pytest_autotune.cli import changed, compare, diff, merge, report, show
from pytest_autotune.cli.changed import EXIT_CHANGED
from pytest_autotune.cli.errors import EXIT_ERROR, EXIT_PIPE_CLOSED, PROG, CliError

__all__ = ["EXIT_CHANGED", "EXIT_ERROR", "main"]


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; the exit code (0 done, 1 `compare` found a regression, 2 a
    file that cannot be used, 3 `changed` found a change, 141 the output's reader left;
    `merge`'s 1 is an entry both branches changed).

    Usage errors and `--help` exit through argparse's `SystemExit` (2 and 0).
    """
    args = _parser().parse_args(argv)
    command: Callable[[argparse.Namespace, TextIO], int] = args.command
    _escape_unencodable(sys.stdout)
    # The output is written in one place, where an error writing it is told apart from
    # the command's own (a command writes it whole at its end anyway).
    output = io.StringIO()
    try:
        code = command(args, output)
    except CliError as exc:
        print(f"{PROG}: error: {_without_controls(str(exc))}", file=sys.stderr)
        return EXIT_ERROR
    try:
        _write_all(sys.stdout, _without_controls(output.getvalue()))
    except BrokenPipeError:
        _discard_stdout()
        return EXIT_PIPE_CLOSED
    except OSError as exc:
        # A full disk under `compare A B > out.txt` ended in a traceback with status 1,
        # which a CI step reads as compare's regression.
        _discard_stdout()
        print(f"{PROG}: error: cannot write the output: {exc.strerror or exc}", file=sys.stderr)
        return EXIT_ERROR
    return code


_PIECE = 1024
"""Characters written at a time: at most 4 KiB in UTF-8, within the 8 KiB a text stream
gathers before it writes, so a short write to a pipe is retried and its reader's leaving
raises BrokenPipeError."""


def _write_all(stream: TextIO, text: str) -> None:
    """`text` written whole, or an OSError. Under PYTHONUNBUFFERED=1 a text stream hands a
    large write straight to the file, whose short write to a pipe whose reader left (`show
    .autotune | head`) was taken as done: the rest was dropped without an error."""
    for start in range(0, len(text), _PIECE):
        stream.write(text[start : start + _PIECE])
    stream.flush()


_CONTROLS = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")
"""The characters a terminal acts on rather than prints, but the line break and the tab."""


def _without_controls(text: str) -> str:
    """`text` with every control character but the line break and the tab written as its
    escape (`\\x1b`): names, error messages and fingerprints come from the files read, and
    a cache file of a pull request, shown by a reviewer, recoloured or cleared the terminal
    or wrote over what was printed (a carriage return, a backspace) with its escapes."""
    return _CONTROLS.sub(lambda found: found.group().encode("unicode_escape").decode(), text)


def _discard_stdout() -> None:
    """What is left unwritten goes nowhere, or Python's flush of stdout at exit raises the
    same error again ("Exception ignored ...")."""
    os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())


def _escape_unencodable(stream: TextIO) -> None:
    """A name its encoding lacks written escaped (`\\u7d2f`), as stderr writes it: Windows'
    Python writes a redirected stdout in the ANSI code page, where a key or candidate named
    outside it raised UnicodeEncodeError, a traceback with compare's status 1.

    Under the C locale without UTF-8 mode (`LC_ALL=C PYTHONUTF8=0`, a bare container's
    shell), stdout is ASCII with `surrogateescape`, which escapes only the bytes a file
    name could not decode: `show` of a test file `test_café.py`'s cache raised there too."""
    reconfigure = getattr(stream, "reconfigure", None)
    if reconfigure is not None and stream.errors in ("strict", "surrogateescape"):
        reconfigure(errors="backslashreplace")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=PROG,
        description="Render the autotune report from records, compare two runs with the"
        " gate's rule, and show or diff cache files.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {_version()}")
    commands = parser.add_subparsers(title="commands", metavar="COMMAND", required=True)
    for command in (report, compare, show, diff, changed, merge):
        command.add_to(commands)
    return parser


def _version() -> str:
    """The installed distribution's version; a tree run without installing it has none."""
    try:
        return importlib.metadata.version("pytest-autotune")
    except importlib.metadata.PackageNotFoundError:
        return "(not installed)"
