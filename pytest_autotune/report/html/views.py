"""What the HTML report's template shows: one view per device, decision, candidate, section
and run, every value already formatted, and the terms the page explains.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from markupsafe import Markup

from pytest_autotune.gate.verdicts import Verdict
from pytest_autotune.report.svg import RooflinePoint

MISSING = "-"
"""What a cell shows when the record does not say (a record written outside pytest)."""

FAILING_VERDICTS = frozenset({Verdict.REGRESSION.value, Verdict.FLOOR.value, Verdict.ERROR.value})
"""Verdicts that fail the gate, for records whose extras do not carry `failed` (a missing
baseline fails only in strict mode, which the verdict alone does not say)."""

PASSING_VERDICTS = frozenset(
    {Verdict.PASS.value, Verdict.UPDATED.value, Verdict.NOT_RECORDED.value}
)
"""Verdicts that need no reader's attention; any other one that does not fail (no
baseline, not comparable, too noisy, or one this version does not know) is reported."""

_SLUG = re.compile(r"[^a-z0-9]+")

TERMS: dict[str, str] = {
    "winner": (
        "The candidate whose time the gate judged: tuning's choice (the best score over its"
        " tuning samples), or the baseline's winner where that measured faster here."
    ),
    "winner median": (
        "The median of the winner's precise measurement, taken after tuning until the"
        " median's relative standard error is under 1% (or a time cap): the number the gate"
        " judges, and the winner's row in the candidate table."
    ),
    "spread": "The lowest to the highest sample of that measurement.",
    "fraction of roof": (
        "The winner's rate as a share of the roofline's limit for this work: its work over"
        " its time, against the binding resource's peak (memory bandwidth or compute)"
        " measured on this device. 100% is the hardware's limit."
    ),
    "delta vs baseline": (
        "The gate's change of the winner's time against the committed baseline, normalised"
        " for the machine's state (a calibration read on a CPU, the peak probe on a GPU),"
        " with the interval it was judged by in brackets. A regression is an interval wholly"
        " past the tolerated slowdown."
    ),
    "raw change": (
        "The winner's median against the newest baseline session's, as measured, before"
        " the gate's normalisation."
    ),
    "work": "The operations and bytes the test says one call does (work=), and their ratio.",
    "roofs": "The peaks the roofline uses: memory bandwidth and compute throughput.",
    "roofline time limit": (
        "The roofline time of the work at the measured peaks, plus launch overhead. A"
        " candidate whose samples land under it ends tuning early (the short circuit): it is"
        " as fast as the hardware allows. Not the time_limit option, which stops a hung call."
    ),
    "source": (
        "Where the decision came from: tuned in this run, read from the cache, or a set of"
        " one candidate (single), which needs no tuning."
    ),
    "tuner": "The tuner's name: the test (or LocalTuner) whose cache file holds the decision.",
    "tuning time": "Wall time spent tuning this group, checks included.",
    "device": "The device class the decision was made on; caches are kept per class.",
    "verdict": (
        "The gate's conclusion: pass; regression or floor (fail); error (nothing measured);"
        " no baseline or not comparable (reported); updated (--autotune-update)."
        " A verdict in capitals fails the build."
    ),
}
"""Every term the page shows, with what it means: shown where the term is (a hint under it,
and as its tooltip), and gathered at the page's end."""


def gate_failed(verdict: object, failed: object) -> bool:
    """Whether a decision failed the gate: its `failed` extra, else its verdict's kind."""
    return failed if isinstance(failed, bool) else verdict in FAILING_VERDICTS


def verdict_class(verdict: str | None) -> str:
    """A CSS class for any verdict name, also one added after this was written: letters and
    digits only, so the record's text never reaches the markup as anything but a word."""
    if not verdict:
        return "none"
    return "verdict-" + (_SLUG.sub("-", verdict.lower()).strip("-") or "other")


@dataclass(frozen=True, slots=True)
class DeviceView:
    """One device of the run: its id, fingerprint and measured peaks, formatted, and the
    roofline with every group's winner on it."""

    id: str
    fingerprint: tuple[tuple[str, str], ...]
    memory: tuple[tuple[str, str], ...]
    levels: tuple[tuple[str, str], ...]
    """Each cache level inside `memory` with its capacity, and the roof of a problem that
    fits it: the rate a group's card names when that level binds it."""
    compute: tuple[tuple[str, str], ...]
    threads: str
    roofline: Markup | None = None
    roofline_note: str = ""


@dataclass(frozen=True, slots=True)
class CandidateView:
    """One row of a decision's candidate table; `*_sort` are the raw numbers the table's
    script sorts by, since "1.00 ms" sorts below "999 us" as text."""

    index: int
    name: str
    winner: bool
    median: str
    median_sort: str
    relative: str
    spread: str
    spread_sort: str
    samples: str
    samples_sort: str
    roof: str
    roof_sort: str
    check: str
    check_class: str
    check_message: str
    error: str
    costs: str = ""
    """Device and host enqueue time of the latest sample, where the client split them."""


@dataclass(frozen=True, slots=True)
class DecisionView:
    """One tuning decision (a group and key): its summary, candidates and charts."""

    anchor: str
    name: str
    group: str
    key: str
    tuner: str
    device_id: str
    source: str
    winner: str
    pick_note: str
    """Set when the gate measured another candidate than tuning's pick, and why."""
    median: str
    spread: str
    roof: str
    roof_bar: Markup | None
    delta: str
    raw_change: str
    interval: Markup | None
    verdict: str
    verdict_shown: str
    verdict_class: str
    failed: bool
    attention: bool
    message: str
    work: str
    roofs: str
    time_limit: str
    duration: str
    run: str
    candidates: tuple[CandidateView, ...]
    bars: Markup | None
    strips: Markup | None
    trend: Markup | None
    events: tuple[str, ...]
    search: str
    """The text the page's filter box matches: group, key, tuner, candidates, verdict."""
    order: tuple[Any, ...]
    point: RooflinePoint | None
    """The winner on its device's roofline, None without work or measurement."""
    peaks: tuple[float, float]
    """(compute, memory) roofs of its device, for the device's roofline."""
    device_named: bool = False
    """True where the same group and key has a card of another device too: its title
    names its device, or the two would read alike."""
    level_roof: tuple[str, float] | None = None
    """The cache level (name, bytes per second) whose roof bound the winner, where that is
    not its device's outermost: drawn on the device's roofline beside the outer roof."""
    failed_checks: int = 0
    """Its candidates that failed their checks (but for those their `xfail` marks expect):
    each fails its own test, whatever the gate's verdict."""


@dataclass(frozen=True, slots=True)
class SectionView:
    id: str
    title: str
    note: str
    decisions: tuple[DecisionView, ...]


@dataclass(frozen=True, slots=True)
class RunLabel:
    number: str
    """`#1` for the first run given: how the trend charts' axes name it."""
    label: str
    id: str
    timestamp: str
    commit: str
    branch: str
    decisions: int
    failed: int
    """How many of the run's decisions failed the gate: an earlier run's failure shows
    here even where a later run's card has passed."""


@dataclass(frozen=True, slots=True)
class RunView:
    title: str
    devices: tuple[DeviceView, ...]
    sections: tuple[SectionView, ...]
    decisions: tuple[DecisionView, ...]
    counts: tuple[tuple[str, int, str], ...]
    """(label, count, CSS class) of the run's tally: decisions, passed, failed, verdicts."""
    runs: tuple[RunLabel, ...]
    terms: tuple[tuple[str, str], ...]
    stopped: tuple[str, ...] = ()
    """A line for each run that stopped before every test ran: its groups are not the
    whole run, which the page says at its top."""
    stopped_empty: str = ""
    """Why a run that tuned no group stopped early (no record can say it): its page says
    so, not that the project has no autotune test."""
    notes: tuple[tuple[str, str], ...] = ()
    """(CSS class, line) of what the terminal summary says beside its table (a stale
    winner, candidates named by their place, a cache file that cannot be read): a CI user
    who reads only the report needs them too. Errors and warnings first, class `problem`."""
