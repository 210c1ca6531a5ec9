"""`pytest-autotune show CACHE...`: cache files as tables, a folder's every one."""

from __future__ import annotations

import argparse
import json
import statistics
from pathlib import Path
from typing import Any, TextIO

from pytest_autotune.cli.caches import Cache, duration, load_cache, table, winner_median
from pytest_autotune.cli.errors import CliError
from pytest_autotune.gate.samples import BaselineSession
from pytest_autotune.report.failures import error_text
from pytest_autotune.report.figures import level_roofs
from pytest_autotune.report.svg import format_si
from pytest_autotune.tune.benchmark import AutotuneOutcome, AutotuneResult
from pytest_autotune.tune.cache import PersistentCacheValue
from pytest_autotune.tune.cache_names import cache_files
from pytest_autotune.tune.log import format_duration
from pytest_autotune.tune.peaks import Peaks, device_peaks


def add_to(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """Add the `show` command to the command line's subcommands."""
    show = commands.add_parser(
        "show",
        help="print cache files as tables",
        description="Print a cache file (<cache_dir>/<device_id>/<tuner>.json): its device,"
        " and for each key the winner and every candidate's median or error. A folder"
        " (.autotune, or one device's) shows every cache file under it.",
    )
    show.add_argument(
        "cache", metavar="CACHE", nargs="+", help="a cache file (.json) or a folder of them"
    )
    show.set_defaults(command=run)


def run(args: argparse.Namespace, out: TextIO) -> int:
    paths = [file for given in args.cache for file in _files(given)]
    # Every file is read before any is printed: one that cannot be used stops the command
    # with its one-line error, not after pages of the others.
    caches = [load_cache(path) for path in paths]
    out.write("\n".join(_cache_text(cache) for cache in caches))
    return 0


def _files(given: str) -> list[str]:
    """The cache file `given`, or every cache file under the folder `given`."""
    folder = Path(given)
    if not folder.is_dir():
        return [given]  # a missing or unreadable file is `load_cache`'s to name
    files = cache_files(folder)
    if not files:
        raise CliError(f"{given}: a folder that holds no cache file (<device>/<tuner>.json)")
    return [str(file) for file in files]


def _cache_text(cache: Cache) -> str:
    """One cache file as `show` prints it, ending in a newline."""
    device = cache.device_id
    if cache.measured_on is not None:
        device += f" (measured on {cache.measured_on})"
    lines = [f"cache   {cache.path}", f"device  {device}"]
    peaks = device_peaks(cache.device)
    if cache.device and cache.device.get("peaks") is not None:
        lines.append(f"peaks   {_peaks_text(peaks) if peaks else 'unreadable'}")
    fingerprint = cache.device.get("fingerprint") if cache.device else None
    if isinstance(fingerprint, dict) and fingerprint:
        lines.append(
            "fingerprint  " + ", ".join(f"{k}={_plain(v)}" for k, v in sorted(fingerprint.items()))
        )
    for name, value in sorted(cache.metadata.items()):
        lines.append(f"{name}  {_plain(value)}")
    count = len(cache.entries)
    lines.append(f"{count} entr{'y' if count == 1 else 'ies'}")
    for key, value in cache.entries.items():
        median = winner_median(value)
        lines.append("")
        lines.append(
            f"key {key}: winner {value.fastest_name}, median {duration(median)}"
            + _sessions_text(value, median)
        )
        if value.winner() is None:
            # Said, not left as "median -": a file whose results are out of line with its
            # winner (an older version's after a `groups=` plan), or one edited by hand.
            lines.append(
                f"  (fastest_index {value.fastest_index} does not hold"
                f" {value.fastest_name!r}: the winner's samples are not in this entry)"
            )
        rows = [("", "candidate", "median", "samples", "error")]
        for index, result in enumerate(value.results):
            mark = "*" if index == value.fastest_index and result is value.winner() else ""
            rows.append((mark, result.name or f"#{index}", *_result_cells(result)))
        lines.extend(table(rows, indent="  "))
        if _below_the_winner(value):
            # The winner's median is its precise measurement (what the gate compares), the
            # others' their few tuning samples: a lower one beside it read as a wrong pick.
            lines.append(
                "  (the winner's median is its precise measurement, the others' their tuning"
                " samples: it won the tuning, measured beside them)"
            )
    return "\n".join(lines) + "\n"


def _sessions_text(value: PersistentCacheValue, median: float | None) -> str:
    """The baseline the gate compares with where the entry holds earlier update sessions:
    their mean with the newest (`Baseline.typical`), not the newest median alone."""
    if median is None or not value.sessions:
        return ""
    try:
        sessions = [BaselineSession.from_json(s) for s in value.sessions]
    except (TypeError, ValueError):  # not integers; a time of zero or below
        return ""  # the gate names such an entry; here it is shown as it stands
    medians = [s.median for s in sessions] + [median]
    mean = statistics.geometric_mean(medians)
    return f"; baseline {format_duration(mean)}, the mean of {len(medians)} sessions"


def _below_the_winner(value: PersistentCacheValue) -> bool:
    """Whether another candidate's median reads below the winner's in the entry."""
    winner = value.winner()
    if not isinstance(winner, AutotuneOutcome):
        return False
    return any(
        isinstance(result, AutotuneOutcome) and result.median < winner.median
        for result in value.results
        if result is not winner
    )


def _plain(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, sort_keys=True)


def _result_cells(result: AutotuneResult) -> tuple[str, str, str]:
    """(median, samples, error) of one candidate; the error on one line, since a table row
    cannot hold a traceback."""
    if isinstance(result, AutotuneOutcome):
        return format_duration(result.median), str(len(result.effective_samples)), ""
    message = " ".join(result.message.split())
    return "-", "-", error_text(result.kind.value, message)


def _peaks_text(peaks: Peaks) -> str:
    memory = ", ".join(
        f"{name} {format_si(rate)}B/s" for name, rate in sorted(peaks.memory.items())
    )
    compute = ", ".join(
        f"{name} {format_si(rate)}op/s" for name, rate in sorted(peaks.compute.items())
    )
    levels = ", ".join(f"{name} {rate}" for name, rate in level_roofs(peaks))
    parts = [
        f"memory {memory}" if memory else "",
        f"cache levels {levels}" if levels else "",
        f"compute {compute}" if compute else "",
    ]
    if peaks.threads is not None:
        parts.append(f"{peaks.threads} thread{'' if peaks.threads == 1 else 's'}")
    return "; ".join(p for p in parts if p) or "-"
