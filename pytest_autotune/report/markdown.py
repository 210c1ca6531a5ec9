"""The summary table in GitHub Markdown, for `$GITHUB_STEP_SUMMARY`.

Test ids, keys, candidate names and messages are the user's text: `[n=1|2]`, `<lambda>`
or `test_a_b` must show as written, not end a table cell, open an HTML tag or turn into
italics, so every cell is escaped.
"""

from __future__ import annotations

import html
import re
from collections.abc import Sequence

from pytest_autotune.report import (
    COLUMNS,
    GroupSummary,
    decision_name,
    failures,
    ordered,
    summary_row,
    verdict_counts,
)

_RIGHT_ALIGNED = frozenset({"median", "roof"})
_MARKDOWN_PUNCTUATION = re.compile(r"([\\`*_\[\]|~])")
"""Characters Markdown (or a GFM table, for `|`) would read as syntax; a backslash makes
each a literal, as CommonMark allows for any ASCII punctuation."""


def escape(text: str) -> str:
    """`text` as literal Markdown inline content on one line: HTML escaped, Markdown
    punctuation backslash-escaped, line breaks as `<br>` (a table cell is one line)."""
    escaped = _MARKDOWN_PUNCTUATION.sub(r"\\\1", html.escape(text, quote=False))
    return "<br>".join(escaped.splitlines())


def render_markdown(summaries: Sequence[GroupSummary], *, title: str = "pytest-autotune") -> str:
    """A heading, the summary table, and the failures as a list; ends with a newline, so
    appending it to the step summary file leaves the next section on its own line."""
    lines = [f"### {escape(title)}", ""]
    lines.append(_row(COLUMNS))
    lines.append(
        "|" + "|".join("---:" if name in _RIGHT_ALIGNED else "---" for name in COLUMNS) + "|"
    )
    lines.extend(_row(summary_row(summary)) for summary in ordered(summaries))
    lines.extend(["", f"Verdicts: {escape(verdict_counts(summaries))}"])
    failed = failures(summaries)
    if failed:
        lines.extend(["", "**Failed:**", ""])
        for summary in failed:
            lines.append(
                f"- {escape(decision_name(summary.group, summary.key))}:"
                f" **{escape(summary.verdict.value)}**: {escape(summary.message)}"
            )
    return "\n".join(lines) + "\n"


def _row(cells: Sequence[str]) -> str:
    return "| " + " | ".join(escape(cell) for cell in cells) + " |"
