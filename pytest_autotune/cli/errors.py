"""The one error a user of the command line can cause, a file that cannot be used, the
warnings about a file that can, printed as one line each, and which of our files a file
that did not read holds."""

from __future__ import annotations

import json
import sys
from collections.abc import KeysView
from pathlib import Path
from typing import Literal

PROG = "pytest-autotune"

EXIT_ERROR = 2
"""A file that cannot be used: 2, as argparse's usage errors, `diff` and `grep` say trouble.
Exit status 1 is `compare`'s "the gate would fail": a CI step that reads it must never take
an unreadable file for a regression (nor, by testing for 1 only, a regression for nothing)."""


EXIT_PIPE_CLOSED = 141
"""The reader of the output left before it was written whole (`pytest-autotune show F | head`):
the status a shell gives a command that SIGPIPE ended, 128 + 13, as `cat` or `git log` end
there. A BrokenPipeError traceback ended the command with status 1, `compare`'s regression."""


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


JsonKind = Literal["cache", "records", "benchmark", "journal", "peaks"]


def json_kind_of(path: str) -> JsonKind | None:
    """Which of our files `path` holds, for a file that did not read as the kind a command
    takes: all are JSON, and read as another kind each fails at a line and column that
    says nothing of the mix-up. A cache file is one object with `entries`; records are
    objects, one a line, each naming its device and checksum; `--autotune-benchmark-json`
    writes one object with pytest-benchmark's `benchmarks` and `machine_info`; a device's
    peaks file (`peaks.json`, which may sit among the cache files of its device's folder)
    is one object with `device_id` and `peaks`; a cache file's journal is lines too, the
    first naming the file's digest (`journal_of`)."""
    try:
        text = Path(path).read_text(encoding="utf-8-sig")
    except (OSError, UnicodeDecodeError):
        return None
    try:
        whole = json.loads(text)
    except (ValueError, RecursionError):  # a file of deep brackets is neither kind
        whole = None
    kind = _document_kind(whole.keys()) if isinstance(whole, dict) else None
    if kind is not None:
        return kind
    first = next((line for line in text.splitlines() if line.strip()), "")
    try:
        line = json.loads(first)
    except (ValueError, RecursionError):
        return None
    fields = line.keys() if isinstance(line, dict) else set()
    if {"device_id", "checksum"} <= fields:
        return "records"
    return "journal" if {"journal_of", "journal_version"} <= fields else None


def _document_kind(fields: KeysView[str]) -> JsonKind | None:
    """Which of our one-object files holds `fields` at its top."""
    if "entries" in fields:
        return "cache"
    if {"benchmarks", "machine_info"} <= fields:
        return "benchmark"
    return "peaks" if {"device_id", "peaks"} <= fields else None


def not_ours_to_read(path: str, instead: str) -> CliError | None:
    """The error of a file of ours that no command reads given where `instead` belongs, or
    None where `path` is not one: `--autotune-benchmark-json` writes pytest-benchmark's JSON
    for pytest-benchmark's own tools, and a cache file's journal is read through the file
    it names, and a device's peaks file by the client that probed them. This command read
    each as "invalid JSON", "not an autotune record" or "missing field 'entries'"."""
    kind = json_kind_of(path)
    if kind == "peaks":
        return CliError(
            f"{path}: a device's measured peaks (the file a client given peaks_cache_dir"
            f" keeps), not {instead}: show prints a cache file's device block with its peaks"
        )
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
