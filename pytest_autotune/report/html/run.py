"""The whole report's view (`run_view`): one card per group, key and device, the latest run's
decision with its trend across the runs, in three sections, with each device's roofline
and the run's tally.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime, timezone

from pytest_autotune.gate.verdicts import Verdict
from pytest_autotune.report import PROBLEM_PREFIXES, stopped_text
from pytest_autotune.report.html.decision import decision_view
from pytest_autotune.report.html.views import (
    MISSING,
    TERMS,
    DecisionView,
    DeviceView,
    RunLabel,
    RunView,
    SectionView,
    gate_failed,
    verdict_class,
)
from pytest_autotune.report.names import key_text, node_name
from pytest_autotune.report.svg import roofline_chart
from pytest_autotune.tune.records import AutotuneRecord
from pytest_autotune.tune.run import RunInfo


def _counts(decisions: Sequence[DecisionView]) -> tuple[tuple[str, int, str], ...]:
    """The run's tally: decisions, passed, failed, the candidates that failed their checks
    where any did, then how many of each other verdict, whatever its name (a verdict added
    after this was written is counted too).

    Passed is the gate's `pass` alone: "too noisy" is the gate saying it cannot tell rather
    than passing, and an update judges nothing, so neither is counted as passed. A failed
    check fails its candidate's test, not the gate: counted apart, so that the top of the
    page of a run that failed on a wrong candidate does not read "0 failed" alone."""
    judged = [d for d in decisions if d.verdict != MISSING]
    failed = sum(d.failed for d in judged)
    passed = sum(d.verdict == Verdict.PASS.value and not d.failed for d in judged)
    counts = [
        ("decision" if len(decisions) == 1 else "decisions", len(decisions), "total"),
        ("passed", passed, "pass"),
        ("failed", failed, "error" if failed else "pass"),
    ]
    wrong = sum(d.failed_checks for d in decisions)
    if wrong:
        counts.append(("failed checks", wrong, "error"))
    seen: dict[str, int] = {}
    for d in judged:
        if d.verdict != Verdict.PASS.value:
            seen[d.verdict] = seen.get(d.verdict, 0) + 1
    counts.extend((verdict, n, verdict_class(verdict)) for verdict, n in sorted(seen.items()))
    if len(judged) < len(decisions):
        counts.append(("no verdict", len(decisions) - len(judged), "none"))
    return tuple(counts)


def _device_roofline(device: DeviceView, decisions: Sequence[DecisionView]) -> DeviceView:
    """The device's one roofline: every group's winner at its own arithmetic intensity."""
    on_device = [d for d in decisions if d.device_id == device.id]
    points = [d.point for d in on_device if d.point is not None]
    left_out = [node_name(d.name) for d in on_device if d.point is None]
    compute = max((d.peaks[0] for d in on_device), default=0.0)
    memory = max((d.peaks[1] for d in on_device), default=0.0)
    note = ""
    if left_out:
        note = (
            "Not on the chart (no work given, nothing measured, or work without both"
            f" operations and bytes, so no intensity): {', '.join(left_out)}."
        )
    if not points or (compute <= 0 and memory <= 0):
        return replace(device, roofline=None, roofline_note=note or "No winner to place.")
    # The cache levels that bound a winner on the chart: under the outer roof alone, a
    # winner judged against L2's rate could stand above every roof drawn.
    # Levels of one rate (an inner level's roof is never below an outer one's) share a line.
    levels: dict[float, list[str]] = {}
    for d in on_device:
        if d.point is not None and d.level_roof is not None:
            name, peak = d.level_roof
            names = levels.setdefault(peak, [])
            names.extend([name] if name not in names else [])
    chart = roofline_chart(
        points,
        memory_peak=memory,
        compute_peak=compute,
        title=f"roofline of {device.id}: each group's winner",
        levels=[(", ".join(sorted(names)), peak) for peak, names in sorted(levels.items())],
    )
    return replace(device, roofline=chart, roofline_note=note)


def _runs(records: Sequence[AutotuneRecord]) -> list[RunInfo | None]:
    """The runs, oldest first (None for records that carry no run).

    By their time where every run has one: `pytest-autotune report *.jsonl` lists files by
    name, and "the latest run" each card shows, and the trend's order, must be the latest
    in time. Else in the order they first appear, which is all that can be told."""
    runs: list[RunInfo | None] = []
    for record in records:
        if record.run not in runs:
            runs.append(record.run)
    times = [_time(run) for run in runs]
    if all(times):
        order = sorted(range(len(runs)), key=lambda i: times[i] or _NO_TIME)
        runs = [runs[i] for i in order]
    return runs


def _notes(notes: Sequence[str]) -> tuple[tuple[str, str], ...]:
    """The session's notes as the page lists them: errors and warnings first."""
    problems = [("problem", n) for n in notes if n.startswith(PROBLEM_PREFIXES)]
    return (*problems, *(("note", n) for n in notes if not n.startswith(PROBLEM_PREFIXES)))


_NO_TIME = datetime.min.replace(tzinfo=timezone.utc)


def _time(run: RunInfo | None) -> datetime | None:
    """A run's time, timezone-aware, None where it has none that reads as one."""
    try:
        moment = datetime.fromisoformat(run.timestamp) if run is not None else None
    except ValueError:
        return None
    return moment if moment is not None and moment.tzinfo is not None else None


def run_view(
    records: Sequence[AutotuneRecord],
    *,
    title: str,
    stopped: str | None = None,
    notes: Sequence[str] = (),
) -> RunView:
    """What the template shows, from the records; `stopped` says why the run stopped
    early where it did and tuned no group, which no record then says; `notes`, the
    session's lines beside the terminal's table, which no record holds either.

    Records of several runs (told apart by their `run`) give one card per group and key
    and device: the latest run's decision, with the trend across every run. Cards are in
    three sections (failing, reported, passing), each in natural group and key order, so
    neither the order pytest-xdist workers finished in nor text sorting shows.
    """
    runs = _runs(records)
    labels = {run: (run.label if run is not None else "no run id") for run in runs}
    numbers = {run: f"#{n}" for n, run in enumerate(runs, start=1)}
    latest: dict[tuple[str, str, str], tuple[int, AutotuneRecord]] = {}
    history: dict[tuple[str, str, str], list[tuple[str, AutotuneRecord]]] = {}
    # Records in their runs' order (a stable sort keeps a run's own order), so that each
    # trend reads oldest first whatever order the files were given in.
    in_order = sorted(enumerate(records, start=1), key=lambda item: runs.index(item[1].run))
    for number, record in in_order:
        group = record.extra.get("group") if isinstance(record.extra.get("group"), str) else None
        identity = (group or record.tuner, key_text(record.key), record.device_id)
        history.setdefault(identity, []).append((numbers[record.run], record))
        if identity not in latest or runs.index(record.run) >= runs.index(latest[identity][1].run):
            latest[identity] = (number, record)
    devices: dict[str, DeviceView] = {}
    decisions = sorted(
        (
            decision_view(number, record, devices, history[identity] if len(runs) > 1 else ())
            for identity, (number, record) in latest.items()
        ),
        key=lambda d: (d.order, d.device_id),
    )
    cards: dict[tuple[str, str], int] = {}
    for d in decisions:
        cards[d.group, d.key] = cards.get((d.group, d.key), 0) + 1
    decisions = [replace(d, device_named=cards[d.group, d.key] > 1) for d in decisions]
    failing = tuple(d for d in decisions if d.failed)
    reported = tuple(d for d in decisions if d.attention and not d.failed)
    passing = tuple(d for d in decisions if not d.attention)
    sections = (
        SectionView("failing", "Failing", "These fail the gate: open, with why.", failing),
        SectionView(
            "reported",
            "To look at",
            "Reported, not failing the gate: no baseline to compare with, a baseline of another"
            " device or candidate list, too noisy to judge, a candidate that failed its"
            " check or raised (its own test fails), or a gate failure its tests' xfail marks"
            " expected.",
            reported,
        ),
        SectionView("passing", "Passing", "Collapsed: open a line for its details.", passing),
    )
    return RunView(
        title=title,
        devices=tuple(_device_roofline(device, decisions) for device in devices.values()),
        sections=tuple(s for s in sections if s.decisions),
        decisions=tuple(decisions),
        counts=_counts(decisions),
        runs=tuple(
            RunLabel(
                number=numbers[run],
                label=labels[run],
                id=run.id if run is not None else MISSING,
                timestamp=run.timestamp if run is not None else MISSING,
                commit=(run.commit or MISSING) if run is not None else MISSING,
                branch=(run.branch or MISSING) if run is not None else MISSING,
                decisions=sum(r.run == run for r in records),
                failed=sum(
                    r.run == run
                    and gate_failed(r.extra.get("verdict"), r.extra.get("failed"))
                    and not r.extra.get("xfailed")
                    for r in records
                ),
            )
            for run in runs
        ),
        terms=tuple(TERMS.items()),
        stopped_empty=(stopped or "") if not records else "",
        notes=_notes(notes),
        stopped=tuple(
            stopped_text(run.stopped)
            if len(runs) == 1
            else f"run {numbers[run]}: {stopped_text(run.stopped)}"
            for run in runs
            if run is not None and run.stopped is not None
        ),
    )
