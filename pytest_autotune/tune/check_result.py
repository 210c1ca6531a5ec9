"""The result of one candidate's output check, and how its message begins.

Apart from `checks`, which imports NumPy: the log (`ChecksDone`) and the reports read check
results, and `typing.get_type_hints` must resolve their annotations, without NumPy imported
in a pytest run that tunes nothing.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

RAISED = "raised "
"""How the message of a candidate that raised in its check begins, its exception's type and
message following: a raise is no wrong output, and "failed its check: ValueError: ..." read
as a comparison that failed."""

UNCHECKABLE = "cannot be checked: "
"""How the message of a candidate whose output no reference can judge begins (a reference
that returned None): said as it is, not as a failed check's difference."""

SKIPPED = "skipped: "
"""How the message of a candidate that declined the key in its check begins; the reason
follows."""


@dataclass(frozen=True, slots=True)
class CheckResult:
    """The check result of one candidate (the seed's `CheckResult`).

    A candidate that declines the key (`AutotuneSkip`) is `passed` and `skipped`: declining
    is a documented way for a candidate to say "not my shape", not a wrong answer, so it
    must not fail a test; `skipped` lets a report or the plugin show it as a skip.
    """

    name: str
    passed: bool
    message: str = ""
    """Why it failed (the readable diff, or the exception), why it was skipped, or
    "reference" for the candidate whose output the others were compared with."""
    skipped: bool = False
    stopped: bool = field(default=False, compare=False)
    """It was stopped before it returned (`CandidateStopped`, a time limit): `message`
    says so in full, and is not shown as a failed check's error. Not written to files."""
    trace: str = field(default="", compare=False, repr=False)
    """The traceback of what the candidate raised, as text (`AutotuneError.trace`); not
    written to files."""

    def failure(self) -> str:
        """How a failed check reads as the candidate's error where tuning settles it: what
        stopped it (a time limit), what it raised and an output no reference can judge as
        they are, not as "failed its check: cannot be checked: ..."; anything else as a
        failed check."""
        if self.stopped or self.message.startswith((UNCHECKABLE, RAISED)):
            return self.message
        return f"failed its check: {self.message}"

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "passed": self.passed,
            "message": self.message,
            "skipped": self.skipped,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> CheckResult:
        return cls(
            name=str(data["name"]),
            passed=bool(data["passed"]),
            message=str(data.get("message", "")),
            skipped=bool(data.get("skipped", False)),
        )
