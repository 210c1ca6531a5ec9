"""`pytest-autotune report RECORDS.jsonl... -o report.html`: the HTML report from records."""

from __future__ import annotations

import argparse
import json
import shlex
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import TextIO

from pytest_autotune.cli.errors import (
    CliError,
    json_kind_of,
    not_ours_to_read,
    require_file,
    warn,
)
from pytest_autotune.report.figures import counted
from pytest_autotune.report.html import write_html
from pytest_autotune.tune.records import AutotuneRecord, RecordError, read_records
from pytest_autotune.tune.run import RunInfo

DEFAULT_REPORT = "autotune-report.html"


def add_to(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the `report` command to the command line's subcommands."""
    report = commands.add_parser(
        "report",
        help="render the HTML report from records (--autotune-record files)",
        description="Render the HTML report, as --autotune-html writes it, from records"
        " (JSON lines written by --autotune-record or a Recorder).",
    )
    report.add_argument("records", nargs="+", metavar="RECORDS", help="a records file (.jsonl)")
    report.add_argument(
        "-o",
        "--output",
        default=DEFAULT_REPORT,
        metavar="PATH",
        help=f"the HTML file to write (default: {DEFAULT_REPORT})",
    )
    report.add_argument(
        "--title", default="pytest-autotune", help="the report's title (default: %(default)s)"
    )
    report.set_defaults(command=run)


def run(args: argparse.Namespace, out: TextIO) -> int:
    if not args.output.strip():
        # Path("") is the current folder: "': cannot write the report: Is a directory".
        raise CliError("-o/--output is empty; give the path of the HTML file to write")
    output = Path(args.output)
    if output.exists() and any(
        output.samefile(path) for path in args.records if Path(path).exists()
    ):
        # Records are the only copy of a run's measurements; the page can be made again.
        raise CliError(
            f"{args.output}: is one of the records files to render; give the report another"
            " path (-o)"
        )
    read: list[AutotuneRecord] = []
    for path in args.records:
        read.extend(labelled_records(path))
    records = distinct_records(read)
    try:
        view = write_html(args.output, records, title=args.title)
    except RecordError as exc:
        raise CliError(f"{', '.join(args.records)}: {exc}") from None
    except OSError as exc:
        raise CliError(f"{args.output}: cannot write the report: {exc.strerror or exc}") from None
    # The decisions the page's tally counts (a group and key's latest), then what they
    # were read from where that is more: the records of several runs.
    written = f"wrote {args.output} ({counted(len(view.decisions), 'decision')})"
    if len(view.runs) > 1:
        written += f" from {counted(len(records), 'record')} of {len(view.runs)} runs"
    if len(read) > len(records):
        copies = counted(len(read) - len(records), "record")
        written += f"; {copies} left out, copies of others"
        written += " (a file given twice, a run appended twice)"
    print(written, file=out)
    return 0


def distinct_records(records: Sequence[AutotuneRecord]) -> list[AutotuneRecord]:
    """The records, each once, in their first order: a records file given twice, or one run's
    records appended to a file twice (a CI step retried, artifacts of one job merged), held
    each of its records twice, and every run then counted each group twice and drew each
    point of its trend twice. A record of one run cannot repeat another of it exactly (each
    holds its own samples), so only a copy is left out."""
    seen: set[str] = set()
    kept = []
    for record in records:
        text = json.dumps(record.to_json(), sort_keys=True)
        if text not in seen:
            seen.add(text)
            kept.append(record)
    return kept


def labelled_records(path: str) -> list[AutotuneRecord]:
    """The records of one file; those that carry no run (written before records did) are
    labelled by the file's name, so the runs of several such files stay apart."""
    require_file(path)
    try:
        records = read_records(path, on_torn=warn)
    except RecordError as exc:
        if json_kind_of(path) == "cache":
            raise CliError(
                f"{path}: a cache file, not records (the JSON lines --autotune-record writes):"
                " show and diff read cache files, compare their folders"
            ) from None
        instead = "records (the JSON lines --autotune-record writes)"
        raise not_ours_to_read(path, instead) or CliError(str(exc)) from None
    if not records:
        # An empty page with exit code 0 reads as "nothing regressed"; say where records
        # come from instead (plain pytest and a run that tuned nothing write none).
        warn(
            f"{path}: holds no records (pytest --autotune"
            f" --autotune-record={shlex.quote(path)} writes one per tuned group)"
        )
    unlabelled = RunInfo(id=Path(path).name, timestamp="")
    return [r if r.run is not None else replace(r, run=unlabelled) for r in records]
