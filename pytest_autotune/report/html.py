"""The HTML report (`--autotune-html=PATH`, `pytest-autotune report`): one self-contained
file, rendered from records alone.

Records, not the session's live objects, are the input, so `pytest-autotune report
records.jsonl` rebuilds the very report a CI run wrote, from the artifact it uploaded; given
the records of several runs, it shows each group's latest decision with its trend across
the runs. Records written outside pytest (by `LocalTuner`) lack the plugin's extras
(verdict, device, work): the report then shows "-" where they would be.

The page is as long as what needs attention: failing groups first and open, every other
group one collapsed line that opens on a click. Every number the page shows twice is the
same number (the winner's median is its precise measurement in the summary line, the card
and the candidate table alike), and every term is explained where it is shown.

The page needs no network: CSS and script are inlined from the package's templates, and the
charts are inline SVG (`report.svg`). jinja2 escapes every value, so candidate names, keys
and error messages, which are the user's text, always show as text; a Content Security
Policy that admits only our own script (by its hash) backs that up.
"""

from __future__ import annotations

import base64
import hashlib
import json
import math
import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import jinja2
from markupsafe import Markup

from pytest_autotune.gate import Comparison, Verdict
from pytest_autotune.report import decision_name, group_order, key_text, verdict_text
from pytest_autotune.report.extra import RecordExtra
from pytest_autotune.report.figures import format_change, format_fraction, format_interval
from pytest_autotune.report.svg import (
    Bar,
    RooflinePoint,
    SampleRow,
    TrendPoint,
    bar_chart,
    format_si,
    fraction_bar,
    interval_chart,
    quartiles,
    roofline_chart,
    strip_chart,
    trend_chart,
)
from pytest_autotune.tune.benchmark import (
    NS_PER_S,
    AutotuneOutcome,
    AutotuneResult,
    SampleStats,
    result_from_json,
)
from pytest_autotune.tune.bounds import COMPUTE, MEMORY, Bounds, Work, fraction_of_roof
from pytest_autotune.tune.checks import CheckResult
from pytest_autotune.tune.log import event_from_json, format_duration
from pytest_autotune.tune.peaks import Peaks
from pytest_autotune.tune.records import AutotuneRecord, RecordError
from pytest_autotune.tune.run import RunInfo

__all__ = [
    "TERMS",
    "key_text",
    "measured_name",
    "render_html",
    "run_view",
    "winner_samples",
    "write_html",
]

MISSING = "-"
"""What a cell shows when the record does not say (a record written outside pytest)."""

FAILING_VERDICTS = frozenset({Verdict.REGRESSION.value, Verdict.FLOOR.value, Verdict.ERROR.value})
"""Verdicts that fail the gate, for records whose extras do not carry `failed` (a missing
baseline fails only in strict mode, which the verdict alone does not say)."""

PASSING_VERDICTS = frozenset({Verdict.PASS.value, Verdict.UPDATED.value})
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
    "time limit": (
        "The roofline time of the work at the measured peaks, plus launch overhead. A"
        " candidate whose samples land under it ends tuning early (the short circuit): it is"
        " as fast as the hardware allows."
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


def _failed(verdict: object, failed: object) -> bool:
    """Whether a decision failed the gate: its `failed` extra, else its verdict's kind."""
    return failed if isinstance(failed, bool) else verdict in FAILING_VERDICTS


def _verdict_class(verdict: str | None) -> str:
    """A CSS class for any verdict name, also one added after this was written: letters and
    digits only, so the record's text never reaches the markup as anything but a word."""
    if not verdict:
        return "none"
    return "verdict-" + (_SLUG.sub("-", verdict.lower()).strip("-") or "other")


# -- what the template shows ---------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class DeviceView:
    """One device of the run: its id, fingerprint and measured peaks, formatted, and the
    roofline with every group's winner on it."""

    id: str
    fingerprint: tuple[tuple[str, str], ...]
    memory: tuple[tuple[str, str], ...]
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
    samples: str
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


# -- reading the records -------------------------------------------------------------------


class _Extra:
    """A record's `extra` as the `RecordExtra` it holds (`typed`); a field of the wrong type
    is a `RecordError` naming the record and the field."""

    def __init__(self, extra: Mapping[str, Any], where: str) -> None:
        try:
            self.typed = RecordExtra.from_json(extra)
        except ValueError as exc:
            raise RecordError(f"{where}: {exc}") from None
        self.where = where

    def error(self, name: str, exc: Exception) -> RecordError:
        return RecordError(f"{self.where}: extra {name!r} does not read: {exc}")


def _device(extra: _Extra, device_id: str) -> tuple[DeviceView, Peaks | None]:
    """The record's device block (`extra["device"]`): the view, and the peaks to draw roofs."""
    block = extra.typed.device or {}
    peaks: Peaks | None = None
    if block.get("peaks") is not None:
        try:
            peaks = Peaks.from_json(block["peaks"])
        except (TypeError, ValueError) as exc:
            raise extra.error("device", exc) from None
    fingerprint = block.get("fingerprint")
    fingerprint_rows = (
        tuple(
            (str(name), value if isinstance(value, str) else json.dumps(value))
            for name, value in sorted(fingerprint.items())
        )
        if isinstance(fingerprint, dict)
        else ()
    )
    return (
        DeviceView(
            id=str(block.get("id") or device_id),
            fingerprint=fingerprint_rows,
            memory=tuple(
                (name, format_si(rate) + "B/s")
                for name, rate in (peaks.memory.items() if peaks else ())
            ),
            compute=tuple(
                (name, format_si(rate) + "op/s")
                for name, rate in (peaks.compute.items() if peaks else ())
            ),
            threads=MISSING if peaks is None or peaks.threads is None else str(peaks.threads),
        ),
        peaks,
    )


def _results(record: AutotuneRecord, where: str) -> list[tuple[int, AutotuneResult]]:
    """Each candidate's result with its index (an error's JSON carries the index too)."""
    results = []
    for position, data in enumerate(record.results):
        try:
            results.append((int(data.get("index", position)), result_from_json(data)))
        except (KeyError, TypeError, ValueError) as exc:
            raise RecordError(f"{where}: results[{position}] does not read: {exc!r}") from None
    return results


def _checks(record: AutotuneRecord, where: str) -> dict[str, CheckResult]:
    try:
        return {c.name: c for c in (CheckResult.from_json(data) for data in record.checks)}
    except (KeyError, TypeError, ValueError) as exc:
        raise RecordError(f"{where}: checks do not read: {exc!r}") from None


def _bounds(record: AutotuneRecord, where: str) -> Bounds | None:
    if record.bounds is None:
        return None
    try:
        return Bounds.from_json(record.bounds)
    except (KeyError, TypeError, ValueError) as exc:
        raise RecordError(f"{where}: bounds do not read: {exc!r}") from None


def _work(extra: _Extra, bounds: Bounds | None) -> Work | None:
    """The plugin's `extra["work"]`, else the amounts of the record's bounds (which a
    `LocalTuner` with a bounds generator writes too)."""
    data = extra.typed.work
    if data is not None:
        try:
            working_set = data.get("working_set")
            return Work(
                compute_ops=float(data["compute_ops"]),
                bytes=float(data["bytes"]),
                working_set=None if working_set is None else float(working_set),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise extra.error("work", exc) from None
    if bounds is None or not bounds.bounds:
        return None
    amounts = {b.resource: b.amount for b in bounds.bounds}
    return Work(compute_ops=amounts.get(COMPUTE, 0.0), bytes=amounts.get(MEMORY, 0.0))


def _roofs(peaks: Peaks | None, bounds: Bounds | None) -> tuple[float, float]:
    """(compute, memory) peaks: the bounds' own peaks where the record has a bound of that
    resource (they are what the decision was tuned against), else the device's measured
    peaks (the fp32 compute roof, as the gate uses); 0.0 when unknown."""
    by_resource = {b.resource: b.peak for b in bounds.bounds} if bounds is not None else {}
    compute = by_resource.get(COMPUTE, peaks.compute_peak() if peaks else 0.0)
    memory = by_resource.get(MEMORY, peaks.memory_peak if peaks else 0.0)
    return (
        compute if math.isfinite(compute) else 0.0,
        memory if math.isfinite(memory) else 0.0,
    )


def _spread(samples: Sequence[float]) -> str:
    """Min to max of the samples: with the handful of samples tuning takes, a quartile
    would be an interpolation between two of them; the range hides nothing."""
    return f"{format_duration(min(samples))} \u2013 {format_duration(max(samples))}"


def _sort_number(value: float | None, missing: str = "Infinity") -> str:
    """A sort key for the page's script. A missing value (a failed candidate) sorts as the
    worst: an infinite median, a roof fraction of minus infinity."""
    return missing if value is None else repr(value)


def _check_cell(check: CheckResult | None) -> tuple[str, str, str]:
    """(text, CSS class, message) of a candidate's output check."""
    if check is None:
        return MISSING, "none", ""
    if check.skipped:
        return "skipped", "skipped", check.message
    if not check.passed:
        return "FAILED", "failed", check.message
    if check.message == "reference":
        return "reference", "passed", ""
    return "passed", "passed", check.message


@dataclass(frozen=True, slots=True)
class _Roofline:
    """What a decision's candidates are judged against: its work and the two roofs."""

    work: Work | None
    compute_peak: float
    memory_peak: float
    memory_level: str | None = None
    """The memory level whose rate `memory_peak` is (L2, DRAM, ...), where the bound said."""

    def fraction(self, seconds: float) -> float | None:
        if self.work is None:
            return None
        return fraction_of_roof(self.work, seconds, self.compute_peak, self.memory_peak)

    def point(self, name: str, seconds: float) -> RooflinePoint | None:
        work = self.work
        if work is None or work.compute_ops <= 0 or work.bytes <= 0:
            return None
        return RooflinePoint(name, work.compute_ops / work.bytes, work.compute_ops / seconds)

    def describe(self) -> tuple[str, str]:
        """(work, roofs) as the decision's card shows them."""
        work = MISSING
        if self.work is not None:
            work = f"{format_si(self.work.compute_ops)}op, {format_si(self.work.bytes)}B"
            if self.work.compute_ops > 0 and self.work.bytes > 0:
                work += f" ({self.work.compute_ops / self.work.bytes:.3g} op/B)"
        roofs = []
        if self.memory_peak > 0:
            level = f" ({self.memory_level})" if self.memory_level else ""
            roofs.append(f"memory{level} {format_si(self.memory_peak)}B/s")
        if self.compute_peak > 0:
            roofs.append(f"compute {format_si(self.compute_peak)}op/s")
        return work, ", ".join(roofs) or MISSING


def _candidate(
    index: int,
    result: AutotuneResult,
    winner: bool,
    check: CheckResult | None,
    roofline: _Roofline,
    samples: Sequence[float],
    costs: str = "",
) -> tuple[CandidateView, Bar]:
    """A candidate's row and bar; `samples` are what it is shown with (the winner's precise
    measurement, the others' tuning samples)."""
    check_text, check_class, check_message = _check_cell(check)
    if isinstance(result, AutotuneOutcome) and samples:
        stats = SampleStats.of(samples)
        fraction = roofline.fraction(stats.median)
        count = f"{stats.count}" + (" (precise)" if winner else "")
        view = CandidateView(
            index=index,
            name=result.name,
            winner=winner,
            median=format_duration(stats.median),
            median_sort=_sort_number(stats.median),
            relative="",
            spread=_spread(samples),
            samples=count,
            roof=format_fraction(fraction),
            roof_sort=_sort_number(fraction, "-Infinity"),
            check=check_text,
            check_class=check_class,
            check_message=check_message,
            error="",
            costs=costs,
        )
        q1, _, q3 = quartiles(samples)
        return view, Bar(result.name, stats.median, q1, q3, winner)
    name = result.name or MISSING
    kind = result.kind.value if not isinstance(result, AutotuneOutcome) else "unmeasured"
    message = "" if isinstance(result, AutotuneOutcome) else result.message
    view = CandidateView(
        index=index,
        name=name,
        winner=winner,
        median=MISSING,
        median_sort=_sort_number(None),
        relative=MISSING,
        spread=MISSING,
        samples="0",
        roof=MISSING,
        roof_sort=_sort_number(None, "-Infinity"),
        check=check_text,
        check_class=check_class,
        check_message=check_message,
        error=kind + (f": {message}" if message else ""),
    )
    return view, Bar(name, None, note=f"error: {kind}")


def _with_relative(candidates: list[CandidateView]) -> list[CandidateView]:
    """Each measured candidate's median over the fastest one's, as pytest-benchmark shows."""
    medians = [float(c.median_sort) for c in candidates if c.median != MISSING]
    fastest = min(medians, default=0.0)
    return [
        replace(c, relative=f"{float(c.median_sort) / fastest:.2f}x")
        if c.median != MISSING and fastest > 0
        else c
        for c in candidates
    ]


def _samples_ns(extra: _Extra, data: Any, name: str) -> list[float]:
    if not isinstance(data, list) or not all(
        isinstance(s, int) and not isinstance(s, bool) and s > 0 for s in data
    ):
        raise RecordError(f"{extra.where}: extra {name!r} must hold positive integers")
    return [s / NS_PER_S for s in data]


def measured_name(record: AutotuneRecord) -> str | None:
    """The candidate whose samples the record's winner samples are: the one the gate
    measured (`extra["measured"]`), which is tuning's pick unless the baseline's winner
    measured faster; tuning's pick for records that do not say."""
    measured = record.extra.get("measured")
    return measured if isinstance(measured, str) else record.fastest_name


def _winner_samples(
    extra: _Extra,
    results: Sequence[tuple[int, AutotuneResult]],
    fastest_index: int | None,
    fastest_name: str | None,
) -> list[float]:
    """The winner's precise measurement (`extra["winner_samples_ns"]`), else its tuning
    samples: the gate judged the former, a `LocalTuner` record has only the latter."""
    samples_ns = extra.typed.winner_samples_ns
    if samples_ns:
        return _samples_ns(extra, samples_ns, "winner_samples_ns")
    for index, result in results:
        if (
            index == fastest_index
            and result.name == fastest_name
            and isinstance(result, AutotuneOutcome)
        ):
            return list(result.effective_samples)
    return []


@dataclass(frozen=True, slots=True)
class _BaselineSeen:
    """What a record keeps of the baseline it was judged against (`extra["baseline"]`)."""

    name: str
    samples: tuple[float, ...]
    sessions: int
    source: str


def _baseline(extra: _Extra) -> _BaselineSeen | None:
    block = extra.typed.baseline
    if block is None:
        return None
    samples = _samples_ns(extra, block.get("samples_ns"), "baseline")
    sessions = block.get("sessions")
    return _BaselineSeen(
        name=str(block.get("fastest_name") or MISSING),
        samples=tuple(samples),
        sessions=sessions if isinstance(sessions, int) and not isinstance(sessions, bool) else 1,
        source=str(block.get("source") or "the cache"),
    )


def _comparison(extra: _Extra) -> Comparison | None:
    data = extra.typed.comparison
    if data is None:
        return None
    try:
        return Comparison.from_json(data)
    except (KeyError, TypeError, ValueError) as exc:
        raise extra.error("comparison", exc) from None


def _costs_text(extra: _Extra, name: str) -> str:
    """ "device 5.50 us, enqueue 17.3 us" from the record's `call_costs`, "" without them."""
    costs = extra.typed.call_costs or {}
    cost = costs.get(name)
    if not isinstance(cost, dict):
        return ""
    device, enqueue = cost.get("device_s"), cost.get("enqueue_s")
    parts = [
        f"{label} {format_duration(float(value))}"
        for label, value in (("device", device), ("enqueue", enqueue))
        if isinstance(value, (int, float)) and not isinstance(value, bool)
    ]
    return ", ".join(parts)


def _short(group: str, key: str) -> str:
    """A decision's name without its file: what fits beside a point on a chart."""
    return decision_name(group, key).rsplit("::", 1)[-1]


def _decision(
    number: int,
    record: AutotuneRecord,
    devices: dict[str, DeviceView],
    history: Sequence[tuple[str, AutotuneRecord]] = (),
) -> DecisionView:
    key = key_text(record.key)
    where = f"record {number} ({record.tuner}, key {key})"
    extra = _Extra(record.extra, where)
    device, peaks = _device(extra, record.device_id)
    devices.setdefault(device.id, device)
    bounds = _bounds(record, where)
    level = next((b.level for b in bounds.bounds if b.resource == MEMORY), None) if bounds else None
    roofline = _Roofline(_work(extra, bounds), *_roofs(peaks, bounds), memory_level=level)
    checks = _checks(record, where)
    results = _results(record, where)
    group = extra.typed.group or record.tuner
    name = decision_name(group, key)
    winner_samples = _winner_samples(extra, results, record.fastest_index, record.fastest_name)

    measured = measured_name(record)
    candidates, bars = [], []
    for index, result in results:
        # A winner index naming another candidate marks no winner (a record that does not
        # agree with itself); the gate's measured candidate, when not tuning's, by name.
        winner = (
            index == record.fastest_index and result.name == record.fastest_name
            if measured == record.fastest_name
            else result.name == measured
        ) and measured is not None
        shown: Sequence[float] = (
            winner_samples
            if winner
            else (result.effective_samples if isinstance(result, AutotuneOutcome) else ())
        )
        view, bar = _candidate(
            index,
            result,
            winner,
            checks.get(result.name or ""),
            roofline,
            shown,
            _costs_text(extra, result.name or ""),
        )
        candidates.append(view)
        bars.append(bar)

    winner_median = SampleStats.of(winner_samples).median if winner_samples else None
    fraction = extra.typed.fraction_of_roof
    if fraction is None and winner_median is not None:
        fraction = roofline.fraction(winner_median)
    comparison = _comparison(extra)
    baseline = _baseline(extra)
    verdict = extra.typed.verdict
    failed = _failed(verdict, extra.typed.failed)
    try:
        events = tuple(str(event_from_json(e)) for e in record.events)
    except ValueError as exc:
        raise RecordError(f"{where}: {exc}") from None
    work, roofs = roofline.describe()

    strips = None
    raw_change = MISSING
    if winner_samples and baseline is not None and baseline.samples:
        base_median = SampleStats.of(baseline.samples).median
        raw_change = format_change(SampleStats.of(winner_samples).median / base_median - 1)
        strips = strip_chart(
            [
                SampleRow(f"this run: {measured}", tuple(winner_samples), True),
                SampleRow(f"baseline: {baseline.name}", baseline.samples),
            ],
            format_value=format_duration,
            title=f"samples of the winner and of the baseline, {name}",
        )
    trend = None
    if len(history) > 1:
        trend = trend_chart(
            [_trend_point(label, past) for label, past in history],
            format_value=format_duration,
            title=f"winner median across runs, {name}",
        )
    return DecisionView(
        anchor=f"decision-{number}",
        name=name,
        group=group,
        key=key,
        tuner=record.tuner,
        device_id=device.id,
        source=record.source,
        winner=measured or MISSING,
        pick_note=(
            f"Tuning picked {record.fastest_name} on its few samples; the gate measured"
            f" {measured}, the baseline's winner, which was faster here."
            if measured is not None and measured != record.fastest_name
            else ""
        ),
        median=format_duration(winner_median) if winner_median is not None else MISSING,
        spread=(
            f"{_spread(winner_samples)} ({len(winner_samples)} samples)"
            if winner_samples
            else MISSING
        ),
        roof=format_fraction(fraction),
        roof_bar=(
            fraction_bar(fraction, title=f"{format_fraction(fraction)} of the roof, {name}")
            if fraction is not None and math.isfinite(fraction)
            else None
        ),
        delta=format_interval(comparison) if comparison is not None else MISSING,
        raw_change=raw_change,
        interval=(
            interval_chart(
                comparison.delta,
                comparison.low,
                comparison.high,
                failed=comparison.failed,
                title=f"change against the baseline, {name}",
            )
            if comparison is not None
            else None
        ),
        verdict=verdict or MISSING,
        verdict_shown=verdict_text(verdict, failed) if verdict else MISSING,
        verdict_class=_verdict_class(verdict),
        failed=failed,
        attention=failed or (verdict is not None and verdict not in PASSING_VERDICTS),
        message=extra.typed.message or "",
        work=work,
        roofs=roofs,
        time_limit=format_duration(record.time_limit) if record.time_limit else MISSING,
        duration=format_duration(record.duration_ns / NS_PER_S) if record.duration_ns else MISSING,
        run=record.run.label if record.run is not None else MISSING,
        candidates=tuple(_with_relative(candidates)),
        bars=(
            bar_chart(bars, format_value=format_duration, title=f"candidate medians, {name}")
            if bars
            else None
        ),
        strips=strips,
        trend=trend,
        events=events,
        search=" ".join(
            [group, key, record.tuner, verdict or "", *(c.name for c in candidates)]
        ).lower(),
        order=group_order(group, key),
        point=(
            roofline.point(_short(group, key), winner_median) if winner_median is not None else None
        ),
        peaks=(
            peaks.compute_peak() if peaks else roofline.compute_peak,
            peaks.memory_peak if peaks else roofline.memory_peak,
        ),
    )


def winner_samples(record: AutotuneRecord) -> list[float]:
    """The winner's samples in seconds: its precise measurement where the record has one,
    else its tuning samples; empty when nothing was measured."""
    extra = _Extra(record.extra, f"{record.tuner}, key {key_text(record.key)}")
    return _winner_samples(
        extra, _results(record, extra.where), record.fastest_index, record.fastest_name
    )


def _trend_point(number: str, record: AutotuneRecord) -> TrendPoint:
    samples = winner_samples(record)
    detail = record.run.label if record.run is not None else ""
    if not samples:
        return TrendPoint(number, None, detail=detail)
    stats = SampleStats.of(samples)
    q1, _, q3 = quartiles(samples)
    return TrendPoint(number, stats.median, q1, q3, measured_name(record) or "", detail)


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
    counts.extend((verdict, n, _verdict_class(verdict)) for verdict, n in sorted(seen.items()))
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
            _decision(number, record, devices, history[identity] if len(runs) > 1 else ())
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
                    r.run == run and _failed(r.extra.get("verdict"), r.extra.get("failed"))
                    for r in records
                ),
            )
            for run in runs
        ),
        terms=tuple(TERMS.items()),
    )


# -- rendering -----------------------------------------------------------------------------


def _environment() -> jinja2.Environment:
    """Autoescape on for every template, and undefined names fail loudly: a template that
    names a field the view lacks is our bug, not a blank cell."""
    return jinja2.Environment(
        loader=jinja2.PackageLoader("pytest_autotune.report", "templates"),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=True,
    )


def render_html(records: Sequence[AutotuneRecord], *, title: str = "pytest-autotune") -> str:
    """The report of `records` as one HTML document.

    Raises `RecordError`, naming the record and field, when a record's results, checks,
    bounds or extras do not read; a missing extra is not an error (it shows as "-").
    """
    env = _environment()
    loader = env.loader
    assert loader is not None
    script, _, _ = loader.get_source(env, "report.js")
    style, _, _ = loader.get_source(env, "report.css")
    digest = base64.b64encode(hashlib.sha256(script.encode("utf-8")).digest()).decode("ascii")
    return env.get_template("report.html.j2").render(
        run=run_view(records, title=title),
        script=Markup(script),
        style=Markup(style),
        script_hash=f"sha256-{digest}",
        terms=TERMS,
    )


def write_html(
    path: str | os.PathLike[str],
    records: Sequence[AutotuneRecord],
    *,
    title: str = "pytest-autotune",
) -> None:
    """Write the report to `path`, creating its folder; UTF-8, ending with a newline."""
    text = render_html(records, title=title)
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text if text.endswith("\n") else text + "\n", encoding="utf-8")
