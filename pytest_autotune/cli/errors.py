"""The one error a user of the command line can cause, a file that cannot be used, the
warnings about a file that can, printed as one line each, and which of our files a file
that did not read holds."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Literal

PROG = "pytest-autotune"

EXIT_ERROR = 2
"""A file that cannot be used: 2, as argparse's usage errors, `diff` and `grep` say trouble.
Exit status 1 is `compare`'s "the gate would fail": a CI step that reads it must never take
an unreadable file for a regression (nor, by testing for 1 only, a regression for nothing)."""


class CliError(Exception):
    """A problem with the user's input: printed as one line, exit code `EXIT_ERROR`."""


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


JsonKind = Literal["cache", "records", "benchmark", "journal"]


def json_kind_of(path: str) -> JsonKind | None:
    """Which of our files `path` holds, for a file that did not read as the kind a command
    takes: all are JSON, and read as another kind each fails at a line and column that
    says nothing of the mix-up. A cache file is one object with `entries`; records are
    objects, one a line, each naming its device and checksum; `--autotune-benchmark-json`
    writes one object with pytest-benchmark's `benchmarks` and `machine_info`; a cache
    file's journal is lines too, the first naming the file's digest (`journal_of`)."""
    try:
        text = Path(path).read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError):
        return None
    try:
        whole = json.loads(text)
    except (ValueError, RecursionError):  # a file of deep brackets is neither kind
        whole = None
    if isinstance(whole, dict) and "entries" in whole:
        return "cache"
    if isinstance(whole, dict) and {"benchmarks", "machine_info"} <= whole.keys():
        return "benchmark"
    first = next((line for line in text.splitlines() if line.strip()), "")
    try:
        line = json.loads(first)
    except (ValueError, RecursionError):
        return None
    fields = line.keys() if isinstance(line, dict) else set()
    if {"device_id", "checksum"} <= fields:
        return "records"
    return "journal" if {"journal_of", "journal_version"} <= fields else None


def not_ours_to_read(path: str, instead: str) -> CliError | None:
    """The error of a file of ours that no command reads given where `instead` belongs, or
    None where `path` is not one: `--autotune-benchmark-json` writes pytest-benchmark's JSON
    for pytest-benchmark's own tools, and a cache file's journal is read through the file
    it names. This command read either as "invalid JSON" or "not an autotune record"."""
    kind = json_kind_of(path)
    if kind == "benchmark":
        return CliError(
            f"{path}: pytest-benchmark's JSON (--autotune-benchmark-json writes it for"
            f" pytest-benchmark compare), not {instead}"
        )
    if kind == "journal":
        return CliError(
            f"{path}: the journal of the cache file {path.removesuffix('.journal')} (the"
            f" entries a LocalTuner saved since that file was written), not {instead}: show,"
            " diff and compare read it with that file"
        )
    return None
