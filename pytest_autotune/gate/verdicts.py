"""What the gate concludes for one group: the change against the baseline (`Comparison`), the
kind of conclusion (`Verdict`) and the whole of it (`GroupVerdict`).

Plain values that the rules (`gate.rules`) and `gate.judge` make and the reports read; this
module imports nothing of the reports, so they can import it while the gate loads.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pytest_autotune.gate.samples import Measurement
from pytest_autotune.tune.errors import AutotuneError
from pytest_autotune.tune.files import json_number


@dataclass(frozen=True, slots=True)
class Comparison:
    """The winner's change against the baseline, as fractions: +0.08 is 8% slower.

    `low` and `high` bound the change at the gate's confidence (d -/+ z*sigma, back from the
    log scale); `failed` says whether the low end is above the tolerated slowdown.
    """

    delta: float
    low: float
    high: float
    failed: bool

    def to_json(self) -> dict[str, Any]:
        """Plain values for pytest-xdist and records; an unbounded end is a string."""
        return {
            "delta": self.delta,
            "low": json_number(self.low),
            "high": json_number(self.high),
            "failed": self.failed,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Comparison:
        return cls(
            delta=float(data["delta"]),
            low=float(data["low"]),
            high=float(data["high"]),
            failed=bool(data["failed"]),
        )


class Verdict(enum.Enum):
    """What the gate concluded for one group."""

    PASS = "pass"
    REGRESSION = "regression"
    FLOOR = "floor"
    NO_BASELINE = "no baseline"
    """Reported; a failure only in strict mode."""
    NOT_COMPARABLE = "not comparable"
    """The baseline measured another device or candidate list: reported, never a failure."""
    ERROR = "error"
    """Nothing could be measured (every candidate failed, a check failed): a failure of the
    test, never reported as a regression."""
    UPDATED = "updated"
    """`--autotune-update`: the measurement becomes the baseline; never a failure."""
    NOT_RECORDED = "not recorded"
    """`--autotune-update` measured the group and left its committed baseline as it is: the
    session ran on contended CPUs beside a baseline it would mislead, or the baseline's file
    could not be read (the message says which); never a failure. Shown apart from "updated"
    so that a reader of the table does not take the file for refreshed."""
    TOO_NOISY = "too noisy"
    """The interval is too wide to catch the slowdown the gate is built to catch: reported
    with what would help; a failure only in strict mode."""


UPDATED_MESSAGE = "recorded as the new baseline"
"""The head of an UPDATED verdict's message, which the session replaces by what the update
did with the old baseline (joined it, or started a new one)."""


@dataclass(frozen=True, slots=True)
class GroupVerdict:
    """The gate's conclusion for one group, with what the summary and the report show."""

    verdict: Verdict
    message: str
    comparison: Comparison | None
    fraction_of_roof: float | None
    failed: bool
    measurement: Measurement | None = None
    """The measurement the verdict rests on: the re-measurement when there was one."""
    remeasured: bool = False
    roof: str | None = None
    """The roof `fraction_of_roof` is of: the memory level that bound the problem (L1, L2,
    L3, DRAM, HBM) or the compute unit ("fp32 compute"); None without work or peaks."""
    raised: AutotuneError | None = None
    """What the judged candidate raised when measured again to confirm a suspected failure
    (the verdict is then ERROR): the group is judged again without it
    (`gate_policy.Judged.winner_failed`)."""
    unconfirmed: bool = False
    """An update's change that a re-measurement read the other way (slower, then faster,
    or the reverse): the reads disagree, no change is confirmed, and the committed baseline
    stays as it is (`update_policy.settle_update`)."""
