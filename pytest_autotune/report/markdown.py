"""The summary table in GitHub Markdown, for `$GITHUB_STEP_SUMMARY`.

Test ids, keys, candidate names and messages are the user's text: `[n=1|2]`, `<lambda>`
or `test_a_b` must show as written, not end a table cell, open an HTML tag or turn into
italics, so every cell is escaped.
"""

from __future__ import annotations

import html
import re
from collections.abc import Callable, Sequence

from pytest_autotune.gate.verdicts import Verdict
from pytest_autotune.report import (
    COLUMNS,
    RIGHT_ALIGNED,
    GroupSummary,
    stopped_text,
    summary_row,
    verdict_counts,
)
from pytest_autotune.report.alike import SAME_REPORT_SHOWN, alike, alike_names, one_message
from pytest_autotune.report.failures import (
    INTENDED,
    XFAILED,
    failed_checks,
    failed_checks_text,
    failures,
    raised_in_checks,
    reported,
)
from pytest_autotune.report.names import decision_name, ordered

_MARKDOWN_PUNCTUATION = re.compile(r"([\\`*_\[\]|~])")
"""Characters Markdown (or a GFM table, for `|`) would read as syntax; a backslash makes
each a literal, as CommonMark allows for any ASCII punctuation."""


STEP_SUMMARY_LIMIT = 1024 * 1024
"""The bytes of step summary GitHub takes from one step: a larger one is dropped whole,
an error annotation in its place."""

_WHERE_THE_REST_IS = (
    "GitHub takes 1 MiB of step summary a step; the terminal summary and the HTML report"
    " show every group."
)


def escape(text: str) -> str:
    """`text` as literal Markdown inline content on one line: HTML escaped, Markdown
    punctuation backslash-escaped, line breaks as `<br>` (a table cell is one line)."""
    escaped = _MARKDOWN_PUNCTUATION.sub(r"\\\1", html.escape(text, quote=False))
    return "<br>".join(escaped.splitlines())


def render_markdown(
    summaries: Sequence[GroupSummary],
    *,
    title: str = "pytest-autotune",
    expected: Callable[[GroupSummary], bool] = lambda summary: False,
    tests_failed: Callable[[GroupSummary], bool] = lambda summary: True,
    stopped: str | None = None,
    problems: Sequence[str] = (),
    notes: Sequence[str] = (),
    limit: int = STEP_SUMMARY_LIMIT,
) -> str:
    """A heading, the summary table, then the failures (those `expected` by the tests'
    `xfail` marks said so), the candidates that failed their checks, the groups reported
    without failing and those an update recorded or did not record as lists, each with its
    message (more than `SAME_REPORT_SHOWN` alike as one item, as the terminal shows the
    groups reported); ends with a newline, so appending it to the step summary file leaves the next
    section on its own line. A refresh job's summary must say what it did with each
    baseline (joined, started again, recorded on busy CPUs and worth recording again) and
    why one was left as it was, as the terminal does. A wrong candidate fails its own test
    whatever the group's verdict: the terminal's failures and the report name it, and a
    summary that did not would read as a passing run on the page of a failed job. They are
    listed for the groups `tests_failed` says a test of failed (pytest's outcomes): under
    `-k` a group is checked whole, and a wrong candidate whose test did not run failed
    nothing. A run that `stopped` early (Ctrl-C, a cancelled job, `-x`) says so above the
    table, which is not the whole run. The run's `problems` (the terminal's "error:" and
    "warning:" lines: an output not written, a pytest-xdist worker lost) end it: they can
    fail a run whose groups all passed, or leave groups out; its `notes` (the terminal's
    other lines: "note: ...", "stale: FILE ...", "updated FILE ...") come before them: a
    passing group whose committed winner, what the library runs, measured twice its
    baseline is said only there. At most `limit` bytes
    (UTF-8), as GitHub drops a larger summary whole: the passing groups' rows are left out
    first, then the end is cut, each saying so."""
    head = [f"### {escape(title)}", ""]
    if stopped is not None:
        head.extend([escape(stopped_text(stopped)), ""])
    rows = ordered(summaries)
    if rows:
        head.append(_row(COLUMNS))
        head.append(
            "|" + "|".join("---:" if name in RIGHT_ALIGNED else "---" for name in COLUMNS) + "|"
        )
        tail = ["", f"Verdicts: {escape(verdict_counts(summaries))}"]
    else:  # nothing to tabulate, but its `problems` (a crashed worker took its groups)
        tail = ["No group to show."]
    updated = [s for s in rows if s.verdict is Verdict.UPDATED]
    not_recorded = [s for s in rows if s.verdict is Verdict.NOT_RECORDED]
    failed = [_item(s, expected(s)) for s in failures(summaries)]
    if any(s.failed and s.verdict is Verdict.REGRESSION for s in summaries):
        # What to do where the slowdown is meant, as the terminal says: the job's page is
        # where a reviewer reads the failure.
        failed.extend(["", escape(INTENDED)])
    for heading, items in (
        ("Failed", failed),
        ("Failed checks", _failed_checks([s for s in summaries if tests_failed(s)])),
        ("Reported, not failing", _alike_items(reported(summaries), expected)),
        ("Updated", _alike_items(updated, expected)),
        ("Not recorded", _alike_items(not_recorded, expected)),
        ("Notes", [f"- {escape(line.removeprefix('note: '))}" for line in notes]),
        ("Errors and warnings", [f"- {escape(line)}" for line in problems]),
    ):
        if items:
            tail.extend(["", f"**{heading}:**", "", *items])
    text = _joined(head, [_row(summary_row(s)) for s in rows], tail)
    if len(text.encode("utf-8")) <= limit:
        return text
    # Too large for GitHub, which would show none of it: the passing groups' rows go
    # first (the lists below the table name every group that is not passing).
    kept = [s for s in rows if s.failed or s.verdict is not Verdict.PASS]
    left = len(rows) - len(kept)
    note = (
        f"{left} passing group{'s are' if left != 1 else ' is'} left out of the table: "
        f"{_WHERE_THE_REST_IS}"
    )
    text = _joined(head, [_row(summary_row(s)) for s in kept], ["", escape(note), *tail])
    if len(text.encode("utf-8")) <= limit:
        return text
    # Still too large: cut at a line, and say so.
    cut = f"... cut here: {_WHERE_THE_REST_IS}\n"
    room = limit - len(cut.encode("utf-8"))
    if room < 0:
        # The step's other commands left no room even for that line: anything written
        # would take the file past GitHub's limit, which then shows none of it.
        return ""
    kept_text = text.encode("utf-8")[: max(room, 0)].decode("utf-8", errors="ignore")
    return kept_text[: kept_text.rfind("\n") + 1] + cut


def _joined(head: list[str], rows: list[str], tail: list[str]) -> str:
    return "\n".join([*head, *rows, *tail]) + "\n"


def _failed_checks(summaries: Sequence[GroupSummary]) -> list[str]:
    """One item per group with candidates that failed their checks."""
    return [
        f"- {escape(decision_name(s.group, s.key))}:"
        f" {escape(failed_checks_text(wrong, raised_in_checks(s)))}"
        for s in ordered(summaries)
        if (wrong := failed_checks(s))
    ]


def _alike_items(
    summaries: Sequence[GroupSummary], expected: Callable[[GroupSummary], bool]
) -> list[str]:
    """An item per group, as the terminal shows the groups reported: more than
    `SAME_REPORT_SHOWN` with one verdict and one message are one item, the first named and
    the rest counted (a first run of 150 groups listed 150 "no baseline" items alike, a
    first update 148 "new baseline: none before for this key")."""
    items: list[str] = []
    for groups in alike(summaries):
        if len(groups) <= SAME_REPORT_SHOWN:
            items.extend(_item(s, expected(s)) for s in groups)
            continue
        verdict = groups[0].verdict.value
        message = one_message(groups)
        head = f"- {len(groups)} groups ({escape(alike_names(groups))}):"
        if not message.startswith(f"{verdict}:"):
            head += f" **{escape(verdict)}**:"
        items.append(f"{head} {escape(message)}")
    return items


def _item(summary: GroupSummary, expected: bool) -> str:
    """One group of a list: its name, verdict and message (the verdict once, where the
    message already starts with it: "not recorded: ..."), and for a failure its tests'
    `xfail` marks expected, that the run does not fail on it."""
    verdict = summary.verdict.value
    winner = f" (winner {summary.winner})" if summary.winner else ""  # as the terminal names it
    head = f"- {escape(decision_name(summary.group, summary.key) + winner)}:"
    if not summary.message.startswith(f"{verdict}:"):
        head += f" **{escape(verdict)}**:"
    xfail = f" ({XFAILED})" if summary.failed and expected else ""
    return f"{head} {escape(summary.message)}{xfail}"


def _row(cells: Sequence[str]) -> str:
    return "| " + " | ".join(escape(cell) for cell in cells) + " |"
