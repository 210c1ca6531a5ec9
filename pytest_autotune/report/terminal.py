"""The terminal summary: a plain-text table like pytest-benchmark's, and the failure details.

Plain text with aligned columns, so it reads the same in a terminal and in a CI log; the
plugin writes it line by line through pytest's terminal reporter.
"""

from __future__ import annotations

from collections.abc import Sequence

from pytest_autotune.report import COLUMNS, GroupSummary, failures, ordered, summary_row
from pytest_autotune.tune.log import format_duration

_RIGHT_ALIGNED = frozenset({"median", "roof"})
"""Numbers line up on their last digit; names and intervals read from the left."""


def render_summary(summaries: Sequence[GroupSummary], *, candidates: bool = False) -> str:
    """The summary table, one row per group; with `candidates`, each group's candidates
    follow it, indented, the winner marked `*` (what `-v` shows)."""
    groups = ordered(summaries)
    rows = [summary_row(s) for s in groups]
    widths = [max(len(cell) for cell in column) for column in zip(COLUMNS, *rows, strict=True)]

    def line(cells: Sequence[str]) -> str:
        padded = (
            cell.rjust(width) if name in _RIGHT_ALIGNED else cell.ljust(width)
            for name, cell, width in zip(COLUMNS, cells, widths, strict=True)
        )
        return "  ".join(padded).rstrip()

    lines = [line(COLUMNS), "  ".join("-" * width for width in widths)]
    for summary, row in zip(groups, rows, strict=True):
        lines.append(line(row))
        if candidates:
            lines.extend(_candidate_lines(summary))
    return "\n".join(lines)


def _candidate_lines(summary: GroupSummary) -> list[str]:
    if not summary.candidates:
        return []
    name_width = max(len(c.name) for c in summary.candidates)
    lines = []
    for candidate in summary.candidates:
        mark = "*" if candidate.name == summary.winner else " "
        median = format_duration(candidate.median) if candidate.median is not None else "-"
        check = {None: "", True: "check passed", False: "CHECK FAILED"}[candidate.check_passed]
        error = f"error: {candidate.error}" if candidate.error is not None else ""
        cells = [c for c in (check, error) if c]
        lines.append(
            f"    {mark} {candidate.name.ljust(name_width)}  {median.rjust(9)}"
            f"  {'  '.join(cells)}".rstrip()
        )
    return lines


def render_failures(summaries: Sequence[GroupSummary]) -> str:
    """Which groups fail the gate, by how much and against what; empty when none does.

    One entry per failed group: its name and key, the verdict, then the gate's message,
    whose every line is indented under it.
    """
    entries = []
    for summary in failures(summaries):
        winner = f" (winner {summary.winner})" if summary.winner else ""
        head = f"{summary.group} [{summary.key}]{winner}: {summary.verdict.value}"
        body = [f"    {line}" for line in summary.message.splitlines()]
        entries.append("\n".join([head, *body]))
    return "\n".join(entries)
