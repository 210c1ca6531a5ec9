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


JsonKind = Literal["cache", "records", "benchmark"]


def json_kind_of(path: str) -> JsonKind | None:
    """Which of our files `path` holds, for a file that did not read as the kind a command
    takes: all are JSON, and read as another kind each fails at a line and column that
    says nothing of the mix-up. A cache file is one object with `entries`; records are
    objects, one a line, each naming its device and checksum; `--autotune-benchmark-json`
    writes one object with pytest-benchmark's `benchmarks` and `machine_info`."""
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
        record = json.loads(first)
    except (ValueError, RecursionError):
        return None
    if isinstance(record, dict) and {"device_id", "checksum"} <= record.keys():
        return "records"
    return None


def not_benchmark_json(path: str, instead: str) -> CliError | None:
    """The error of pytest-benchmark's JSON given where `instead` belongs, or None where
    `path` is not that: `--autotune-benchmark-json` writes it for pytest-benchmark's own
    tools, and this command read it as "invalid JSON" at line 1."""
    if json_kind_of(path) != "benchmark":
        return None
    return CliError(
        f"{path}: pytest-benchmark's JSON (--autotune-benchmark-json writes it for"
        f" pytest-benchmark compare), not {instead}"
    )
