"""The terminal summary: a plain-text table like pytest-benchmark's, and the failure details.

Plain text with aligned columns, so it reads the same in a terminal and in a CI log; the
plugin writes it line by line through pytest's terminal reporter.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence

from pytest_autotune.report import COLUMNS, RIGHT_ALIGNED, GroupSummary, summary_row, verdict_counts
from pytest_autotune.report.alike import SAME_REPORT_SHOWN, alike, alike_names, one_message
from pytest_autotune.report.columns import ljust, rjust, width
from pytest_autotune.report.failures import failures, raised_in_checks, reason_in_a_word, reported
from pytest_autotune.report.names import decision_name, ordered
from pytest_autotune.tune.benchmark import SampleStats
from pytest_autotune.tune.log import format_duration


def render_summary(summaries: Sequence[GroupSummary], *, candidates: bool = False) -> str:
    """The summary table, one row per group; with `candidates`, each group's candidates
    follow it, indented, the winner marked `*` (what `-v` shows)."""
    groups = ordered(summaries)
    rows = [summary_row(s) for s in groups]
    widths = [max(map(width, column)) for column in zip(COLUMNS, *rows, strict=True)]

    def line(cells: Sequence[str]) -> str:
        padded = (
            rjust(cell, columns) if name in RIGHT_ALIGNED else ljust(cell, columns)
            for name, cell, columns in zip(COLUMNS, cells, widths, strict=True)
        )
        return "  ".join(padded).rstrip()

    lines = [line(COLUMNS), "  ".join("-" * columns for columns in widths)]
    for summary, row in zip(groups, rows, strict=True):
        lines.append(line(row))
        if candidates:
            lines.extend(_candidate_lines(summary))
    lines.append(f"verdicts: {verdict_counts(groups)}")
    return "\n".join(lines)


def _candidate_lines(summary: GroupSummary) -> list[str]:
    if not summary.candidates:
        return []
    name_width = max(width(c.name) for c in summary.candidates)
    raised = raised_in_checks(summary)
    lines = []
    for candidate in summary.candidates:
        mark = "*" if candidate.name == summary.winner else " "
        samples = summary.samples_of(candidate)
        value = SampleStats.of(samples).median if samples else candidate.median
        median = format_duration(value) if value is not None else "-"
        check = {None: "", True: "check passed", False: "CHECK FAILED"}[candidate.check_passed]
        if candidate.check_passed is False and candidate.expected_to_fail:
            check = "check failed (xfail)"  # what its test's mark expects: no failure
        elif candidate.check_passed is False and candidate.name in raised:
            # It raised there and compared nothing: its error says so, as the HTML's check
            # cell says RAISED; "CHECK FAILED" sent a reader looking for a wrong output.
            check = ""
        # A candidate skipped here (its skipif, `AutotuneSkip`) is no error of the code.
        said = "skipped" if candidate.skipped else "error"
        error = f"{said}: {candidate.error}" if candidate.error is not None else ""
        cells = [c for c in (check, error) if c]
        lines.append(
            f"    {mark} {ljust(candidate.name, name_width)}  {median.rjust(9)}"
            f"  {'  '.join(cells)}".rstrip()
        )
    return lines


CANDIDATE_COLUMNS = ("candidate", "min", "median", "mean", "stddev", "rounds", "relative")
"""`--autotune-candidates`' table, as pytest-benchmark's: `relative` is the median over the
fastest candidate's median of the group."""


def render_candidates(summaries: Sequence[GroupSummary]) -> str:
    """Every candidate of every group with its statistics, one table per group, the rows
    from the fastest down and the winner marked `*`. The winner's row is its precise
    measurement (as the summary row), the others' their tuning samples; `rounds` says how
    many samples each number rests on."""
    blocks = []
    for summary in ordered(summaries):
        measured = []
        failed = []
        for candidate in summary.candidates:
            samples = summary.samples_of(candidate)
            if samples:
                measured.append((candidate, SampleStats.of(samples), samples))
            else:
                failed.append(candidate)
        measured.sort(key=lambda row: row[1].median)
        fastest = measured[0][1].median if measured else None
        rows = [CANDIDATE_COLUMNS]
        for candidate, stats, samples in measured:
            mark = "* " if candidate.name == summary.winner else "  "
            rows.append(
                (
                    mark + candidate.name,
                    format_duration(stats.min),
                    format_duration(stats.median),
                    format_duration(stats.mean),
                    # The sample standard deviation, as pytest-benchmark's `stddev` (and its
                    # JSON, `--autotune-benchmark-json`): `SampleStats.std` is the population's.
                    format_duration(statistics.stdev(samples) if len(samples) > 1 else 0.0),
                    str(stats.count),
                    f"{stats.median / fastest:.2f}x" if fastest else "-",
                )
            )
        for candidate in failed:
            reason = reason_in_a_word(candidate.error, candidate.skipped)
            if candidate.check_passed is False and candidate.expected_to_fail:
                # What its test's xfail mark expects, as `-v`'s line and the HTML say it:
                # "failed its check" read as a failure of a run whose tests all passed.
                reason = "failed (xfail)"
            rows.append(("  " + candidate.name, "-", "-", "-", "-", "0", reason))
        widths = [max(width(row[i]) for row in rows) for i in range(len(CANDIDATE_COLUMNS))]
        lines = [decision_name(summary.group, summary.key)]
        for number, row in enumerate(rows):
            cells = [
                ljust(cell, columns) if i == 0 else rjust(cell, columns)
                for i, (cell, columns) in enumerate(zip(row, widths, strict=True))
            ]
            lines.append("  " + "  ".join(cells).rstrip())
            if number == 0:
                lines.append("  " + "  ".join("-" * columns for columns in widths))
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks)


def render_failures(summaries: Sequence[GroupSummary]) -> str:
    """Which groups fail the gate, by how much and against what; empty when none does.

    One entry per failed group: its name and key, the verdict, then the gate's message,
    whose every line is indented under it.
    """
    return _details(failures(summaries))


def render_reported(summaries: Sequence[GroupSummary]) -> str:
    """The groups reported without failing (no baseline, not comparable, too noisy), each
    as a failure is shown: why, and what would help; empty when there are none. Groups
    reported with one verdict and one message, more than `SAME_REPORT_SHOWN`, are shown
    once, the first `SAME_REPORT_SHOWN` named and the rest counted."""
    entries = []
    for groups in alike(reported(summaries)):
        if len(groups) <= SAME_REPORT_SHOWN:
            entries.append(_details(groups))
            continue
        head = f"{len(groups)} groups: {groups[0].verdict.value} ({alike_names(groups)})"
        body = [f"    {line}" for line in one_message(groups).splitlines()]
        entries.append("\n".join([head, *body]))
    return "\n".join(entries)


def _details(groups: Sequence[GroupSummary]) -> str:
    entries = []
    for summary in groups:
        winner = f" (winner {summary.winner})" if summary.winner else ""
        head = f"{decision_name(summary.group, summary.key)}{winner}: {summary.verdict.value}"
        body = [f"    {line}" for line in summary.message.splitlines()]
        entries.append("\n".join([head, *body]))
    return "\n".join(entries)
