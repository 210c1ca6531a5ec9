"""What a run reports: one `GroupSummary` per tuned group, and the table every renderer shows.

The terminal summary, the GitHub step summary and the pytest-benchmark file all read the
same summaries, and the two tables the same cells (`summary_row`), so they can never
disagree about a number. A session reads each summary from its group's record
(`pytest_autotune.group_record`), which is what travels from pytest-xdist workers.

Beside it: `names` (how a decision is named and ordered), `failures` (what the reports say
went wrong) and `alike` (groups reported for one reason, shown as one).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

# The verdicts module, not the gate package: the gate imports `report.figures`, so this
# package may run while the gate is still loading.
from pytest_autotune.gate.verdicts import Comparison, Verdict
from pytest_autotune.report.figures import format_fraction, format_interval
from pytest_autotune.tune.benchmark import SampleStats
from pytest_autotune.tune.log import format_duration

__all__ = [
    "COLUMNS",
    "PROBLEM_PREFIXES",
    "RIGHT_ALIGNED",
    "CandidateRow",
    "GroupSummary",
    "format_roof",
    "stopped_text",
    "summary_row",
    "verdict_counts",
    "verdict_text",
]


@dataclass(frozen=True, slots=True)
class CandidateRow:
    """One candidate of a group as tuned: its samples (seconds), or the error it failed
    with."""

    name: str
    median: float | None = None
    error: str | None = None
    check_passed: bool | None = None
    """The output check: None when checks did not run."""
    samples: tuple[float, ...] = ()
    """The tuning samples the median comes from (the warm-up biased first one left out)."""
    device: float | None = None
    """Seconds of device work of its latest sample, where the client tells it apart (CUDA)."""
    enqueue: float | None = None
    """Seconds the host took to enqueue one eager call of it, where measured (CUDA)."""
    test_id: str | None = None
    """The node id of its own test item, where it has one (`test_saxpy[n1024-float4]`)."""
    expected_to_fail: bool = False
    """Its test is marked `xfail`: a failed check there is what the mark expects."""
    skipped: bool = False
    """It declined the key, or its test is marked not to run here: `error` says why, and
    no error it is."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "samples", tuple(self.samples))


@dataclass(frozen=True, slots=True)
class GroupSummary:
    """The outcome of one tuned group, as the summary, the step summary and the pytest-benchmark
    file show it.

    `group` names the test function (`tests/test_sum.py::test_sum`) or the tuner, `key` the
    key within it; `samples` are the winner's precise measurement in seconds, empty when
    nothing was measured.
    """

    group: str
    key: str
    winner: str | None
    verdict: Verdict
    failed: bool
    message: str = ""
    samples: tuple[float, ...] = ()
    fraction_of_roof: float | None = None
    comparison: Comparison | None = None
    candidates: tuple[CandidateRow, ...] = ()
    device_id: str = ""
    roof: str | None = None
    """Which roof `fraction_of_roof` is of: a memory level (L1, L2, L3, DRAM, HBM) or a
    compute unit ("fp32 compute")."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "samples", tuple(self.samples))
        object.__setattr__(self, "candidates", tuple(self.candidates))

    @property
    def median(self) -> float | None:
        """The winner's median in seconds, None when nothing was measured."""
        return SampleStats.of(self.samples).median if self.samples else None

    def samples_of(self, candidate: CandidateRow) -> tuple[float, ...]:
        """The samples a candidate is shown with: the winner's precise measurement where
        there is one (the number the gate judged, so every table agrees with the summary
        row), every other candidate's tuning samples."""
        if candidate.name == self.winner and self.samples:
            return self.samples
        return candidate.samples


COLUMNS = ("group", "key", "winner", "median", "roof", "delta vs baseline", "verdict")
"""The summary table's header; "roof" is the fraction of the binding roof reached."""

RIGHT_ALIGNED = frozenset({"median", "roof"})
"""The columns of numbers, which line up on their last digit in the terminal's and the
Markdown summary's tables; names and intervals read from the left."""


def format_roof(fraction: float | None, roof: str | None) -> str:
    """The fraction of the roof reached and which roof binds (`90.1% fp32 compute`,
    `13.9% L3`), as every view shows the winner's."""
    return format_fraction(fraction) + (f" {roof}" if roof and fraction is not None else "")


def summary_row(summary: GroupSummary) -> tuple[str, ...]:
    """The cells of one group's row of the summary table, under `COLUMNS`.

    A failed verdict is in capitals (`REGRESSION`, or `NO BASELINE` in strict mode), so the
    row that broke the build is found at a glance in a log without colour.
    """
    return (
        summary.group,
        summary.key,
        summary.winner or "-",
        format_duration(summary.median) if summary.median is not None else "-",
        format_roof(summary.fraction_of_roof, summary.roof),
        format_interval(summary.comparison) if summary.comparison is not None else "-",
        verdict_text(summary.verdict.value, summary.failed),
    )


def verdict_text(verdict: str, failed: bool) -> str:
    """A verdict as shown: in capitals when it fails the gate, whatever its name."""
    return verdict.upper() if failed else verdict


def verdict_counts(summaries: Iterable[GroupSummary]) -> str:
    """How many groups got each verdict, in the verdicts' order: `3 pass, 1 too noisy`.
    A verdict that failed the gate (strict mode) is counted in capitals, as in the table."""
    counts: dict[tuple[Verdict, bool], int] = {}
    for summary in summaries:
        counts[summary.verdict, summary.failed] = (
            counts.get((summary.verdict, summary.failed), 0) + 1
        )
    order = {verdict: i for i, verdict in enumerate(Verdict)}
    return ", ".join(
        f"{n} {verdict_text(verdict.value, failed)}"
        for (verdict, failed), n in sorted(counts.items(), key=lambda c: (order[c[0][0]], c[0][1]))
    )


PROBLEM_PREFIXES = ("error:", "warning:")
"""How the session's lines that may fail a run, or leave groups out of it, begin; the
others ("note: ...", "updated FILE", "stale: FILE ...") are notes."""


def stopped_text(reason: str) -> str:
    """What every view says of a run that stopped before every test ran (`RunInfo.stopped`):
    the groups it shows are not the whole run."""
    return f"stopped early ({reason}): the groups tuned before it are shown, no others"
