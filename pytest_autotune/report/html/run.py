"""The whole report's view (`run_view`): one card per group, key and device, the latest run's
decision with its trend across the runs, in three sections, with each device's roofline
and the run's tally.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from pytest_autotune.gate.verdicts import Verdict
from pytest_autotune.report import key_text
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
from pytest_autotune.report.svg import roofline_chart
from pytest_autotune.tune.records import AutotuneRecord
from pytest_autotune.tune.run import RunInfo


def _counts(decisions: Sequence[DecisionView]) -> tuple[tuple[str, int, str], ...]:
    """The run's tally: decisions, passed, failed, then how many of each other verdict,
    whatever its name (a verdict added after this was written is counted too)."""
    judged = [d for d in decisions if d.verdict != MISSING]
    failed = sum(d.failed for d in judged)
    counts = [
        ("decisions", len(decisions), "total"),
        ("passed", len(judged) - failed, "pass"),
        ("failed", failed, "error" if failed else "pass"),
    ]
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
    left_out = [d.name.rsplit("::", 1)[-1] for d in on_device if d.point is None]
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
    chart = roofline_chart(
        points,
        memory_peak=memory,
        compute_peak=compute,
        title=f"roofline of {device.id}: each group's winner",
    )
    return replace(device, roofline=chart, roofline_note=note)


def _runs(records: Sequence[AutotuneRecord]) -> list[RunInfo | None]:
    """The runs in the order they first appear (None for records that carry no run)."""
    runs: list[RunInfo | None] = []
    for record in records:
        if record.run not in runs:
            runs.append(record.run)
    return runs


def run_view(records: Sequence[AutotuneRecord], *, title: str) -> RunView:
    """What the template shows, from the records.

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
    for number, record in enumerate(records, start=1):
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
        key=lambda d: d.order,
    )
    failing = tuple(d for d in decisions if d.failed)
    reported = tuple(d for d in decisions if d.attention and not d.failed)
    passing = tuple(d for d in decisions if not d.attention)
    sections = (
        SectionView("failing", "Failing", "These fail the gate: open, with why.", failing),
        SectionView(
            "reported",
            "To look at",
            "Reported, not failing: no baseline to compare with, a baseline of another device"
            " or candidate list, or too noisy to judge.",
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
                    r.run == run and gate_failed(r.extra.get("verdict"), r.extra.get("failed"))
                    for r in records
                ),
            )
            for run in runs
        ),
        terms=tuple(TERMS.items()),
    )
