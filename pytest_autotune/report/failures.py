"""What the reports say went wrong: the groups that fail the gate or that it reported
without failing, and the candidates that failed their checks, raised, or have no numbers."""

from __future__ import annotations

import re
from collections.abc import Collection, Iterable, Sequence

from pytest_autotune.gate.verdicts import Verdict
from pytest_autotune.report import GroupSummary
from pytest_autotune.report.names import ordered
from pytest_autotune.tune.check_result import RAISED
from pytest_autotune.tune.errors import AutotuneErrorKind


def reason_in_a_word(error: str | None, skipped: bool = False) -> str:
    """Why a candidate has no numbers, in a word or two, where a table or a chart has no
    room for its whole error: the head of its error when short (`not reached`, `hopeless`,
    `RuntimeError`), else `error`, or `skipped` for a candidate that declined the key
    (`AutotuneSkip`), which is no error."""
    if error is None:
        return "not measured"
    head = error.split(":", 1)[0].strip()
    return head if head and len(head) <= 24 else "skipped" if skipped else "error"


INTENDED = (
    "a slowdown that is intended (a trade-off, a kernel made exact): pytest --autotune-update"
    " records this code's times as the baseline; commit the cache files it names"
)
"""Said once under the gate's failures where one is a regression, in the terminal and the
step summary: every other verdict that asks for an update says so, and a regression was
the one that did not."""

XFAILED = "expected to fail (xfail): the run does not fail on it"
"""Said of a gate failure that its tests' `xfail` marks expected, in every output."""


def failures(summaries: Iterable[GroupSummary]) -> list[GroupSummary]:
    """The groups that fail the gate, in the table's order."""
    return [s for s in ordered(summaries) if s.failed]


def failed_checks(summary: GroupSummary) -> list[str]:
    """The candidates of a group that failed their checks, but for those whose `xfail`
    marks expect it: each fails its own test, whatever the gate said of the winner."""
    return [
        c.name for c in summary.candidates if c.check_passed is False and not c.expected_to_fail
    ]


def failed_checks_text(names: Sequence[str], raised: Collection[str] = ()) -> str:
    """What a report says of candidates that failed their checks: their tests fail. Those
    `raised` names raised there: no output was compared, so none "failed its check"."""
    if len(names) == 1:
        how = "raised" if names[0] in raised else "failed its check"
        return f"candidate {names[0]} {how}: its test fails"
    if not names:
        return ""
    if not raised:
        return f"{len(names)} candidates failed their checks: their tests fail ({', '.join(names)})"
    if set(names) <= set(raised):
        return f"{len(names)} candidates raised: their tests fail ({', '.join(names)})"
    each = ", ".join(f"{n} {'raised' if n in raised else 'failed its check'}" for n in names)
    return f"{len(names)} candidates failed: their tests fail ({each})"


_EXCEPTION_TEXT = re.compile(r"[A-Za-z_][\w.]*:(\s|$)")
"""How the message of an exception a candidate raised while timed begins: its type's name
("ValueError: ..."), where a failed check, a stop at the time limit or a group left
untuned, errors of the same kind, read in words ("failed its check: ...")."""


def error_text(kind: str, message: str) -> str:
    """A candidate's error as a report or `show` gives it: what it raised ("raised
    ValueError: ..."), any other error of kind "unknown" by its message alone ("failed its
    check: ...", not "raised failed its check: ..."; the kind says nothing to a reader),
    else the error's kind and its message."""
    if kind == AutotuneErrorKind.UNKNOWN.value and message:
        raised = not message.startswith(RAISED) and _EXCEPTION_TEXT.match(message)
        return RAISED + message if raised else message
    return kind + (f": {message}" if message else "")


def raised_in_checks(summary: GroupSummary) -> set[str]:
    """The candidates of a group that raised in their checks (see `failed_checks`)."""
    return {c.name for c in summary.candidates if c.error and c.error.startswith(RAISED)}


REPORTED = frozenset(
    {
        Verdict.NO_BASELINE,
        Verdict.NOT_COMPARABLE,
        Verdict.TOO_NOISY,
        Verdict.REGRESSION,
        Verdict.FLOOR,
    }
)
"""The verdicts the gate reports without failing: the first three outside strict mode, and
a regression or a missed floor that a `pytest_autotune_verdict` hook let pass (its example
"reports the regressions of a kernel known to be unstable without failing the run")."""


def reported(summaries: Iterable[GroupSummary]) -> list[GroupSummary]:
    """The groups the gate reported without failing, in the table's order: the table's
    word ("no baseline") names neither why (the devices that have one, the interval that
    is too wide) nor what helps, which their messages do."""
    return [s for s in ordered(summaries) if s.verdict in REPORTED and not s.failed and s.message]
