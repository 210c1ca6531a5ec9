"""The HTML report (`--autotune-html=PATH`, `pytest-autotune report`): one self-contained
file, rendered from records alone.

Records, not the session's live objects, are the input, so `pytest-autotune report
records.jsonl` rebuilds the very report a CI run wrote, from the artifact it uploaded.
Records written outside pytest (by `LocalTuner`) lack the plugin's extras (verdict, device,
work): the report then shows "-" where they would be, and takes what it can from the
record itself (the roofline from its bounds).

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
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import jinja2
from markupsafe import Markup

from pytest_autotune.backends.peaks import Peaks
from pytest_autotune.gate import (
    Comparison,
    Verdict,
    format_fraction,
    format_interval,
)
from pytest_autotune.report import COLUMNS, key_text
from pytest_autotune.report.svg import (
    Bar,
    RooflinePoint,
    bar_chart,
    format_si,
    interval_chart,
    roofline_chart,
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
from pytest_autotune.tune.log import AutotuneRecord, RecordError, event_from_json, format_duration

__all__ = ["key_text", "render_html", "run_view", "write_html"]

MISSING = "-"
"""What a cell shows when the record does not say (a record written outside pytest)."""

FAILING_VERDICTS = frozenset({Verdict.REGRESSION.value, Verdict.FLOOR.value, Verdict.ERROR.value})
"""Verdicts that fail the gate, for records whose extras do not carry `failed` (a missing
baseline fails only in strict mode, which the verdict alone does not say)."""

_VERDICT_CLASSES = {v.value: v.name.lower().replace("_", "-") for v in Verdict}
"""CSS class of each verdict: from a fixed table, never from the record's text."""


# -- what the template shows ---------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class DeviceView:
    """One device of the run: its id, fingerprint and measured peaks, formatted."""

    id: str
    fingerprint: tuple[tuple[str, str], ...]
    memory: tuple[tuple[str, str], ...]
    compute: tuple[tuple[str, str], ...]
    threads: str


@dataclass(frozen=True, slots=True)
class CandidateView:
    """One row of a decision's candidate table; `*_sort` are the raw numbers the table's
    script sorts by, since "1.00 ms" sorts below "999 us" as text."""

    index: int
    name: str
    winner: bool
    median: str
    median_sort: str
    spread: str
    samples: str
    roof: str
    roof_sort: str
    check: str
    check_class: str
    check_message: str
    error: str


@dataclass(frozen=True, slots=True)
class DecisionView:
    """One tuning decision (a group and key): its summary, candidates and charts."""

    anchor: str
    group: str
    key: str
    tuner: str
    device_id: str
    source: str
    winner: str
    median: str
    median_sort: str
    spread: str
    roof: str
    roof_sort: str
    delta: str
    interval: Markup | None
    verdict: str
    verdict_class: str
    failed: bool
    message: str
    work: str
    roofs: str
    time_limit: str
    duration: str
    candidates: tuple[CandidateView, ...]
    bars: Markup | None
    roofline: Markup | None
    roofline_note: str
    events: tuple[str, ...]
    search: str
    """The text the page's filter box matches: group, key, tuner, candidates, verdict."""


@dataclass(frozen=True, slots=True)
class RunView:
    title: str
    devices: tuple[DeviceView, ...]
    decisions: tuple[DecisionView, ...]
    counts: tuple[tuple[str, int, str], ...]
    """(label, count, CSS class) of the run's tally: decisions, passed, failed, verdicts."""
    columns: tuple[str, ...]


# -- reading the records -------------------------------------------------------------------


class _Extra:
    """A record's `extra`, read field by field: a missing (or null) field is None, a field
    of the wrong type is a `RecordError` naming the record and the field."""

    def __init__(self, extra: Mapping[str, Any], where: str) -> None:
        self.extra = extra
        self.where = where

    def get(self, name: str, kind: type | tuple[type, ...]) -> Any:
        value = self.extra.get(name)
        if value is None:
            return None
        if not isinstance(value, kind) or (isinstance(value, bool) and kind is not bool):
            raise RecordError(f"{self.where}: extra {name!r} has the wrong type: {value!r}")
        return value

    def number(self, name: str) -> float | None:
        value = self.get(name, (int, float))
        return None if value is None else float(value)

    def error(self, name: str, exc: Exception) -> RecordError:
        return RecordError(f"{self.where}: extra {name!r} does not read: {exc}")


def _device(extra: _Extra, device_id: str) -> tuple[DeviceView, Peaks | None]:
    """The record's device block (`extra["device"]`): the view, and the peaks to draw roofs."""
    block = extra.get("device", dict) or {}
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
    data = extra.get("work", dict)
    if data is not None:
        try:
            return Work(compute_ops=float(data["compute_ops"]), bytes=float(data["bytes"]))
        except (KeyError, TypeError, ValueError) as exc:
            raise extra.error("work", exc) from None
    if bounds is None or not bounds.bounds:
        return None
    amounts = {b.resource: b.amount for b in bounds.bounds}
    return Work(compute_ops=amounts.get(COMPUTE, 0.0), bytes=amounts.get(MEMORY, 0.0))


def _roofs(peaks: Peaks | None, bounds: Bounds | None) -> tuple[float, float]:
    """(compute, memory) peaks for the roofline: the bounds' own peaks where the record
    has a bound of that resource (they are what the decision was tuned against), else the
    device's measured peaks (the fp32 compute roof, as the gate uses); 0.0 when unknown."""
    by_resource = {b.resource: b.peak for b in bounds.bounds} if bounds is not None else {}
    compute = by_resource.get(COMPUTE, peaks.compute_peak() if peaks else 0.0)
    memory = by_resource.get(MEMORY, peaks.memory_peak if peaks else 0.0)
    return (
        compute if math.isfinite(compute) else 0.0,
        memory if math.isfinite(memory) else 0.0,
    )


def _spread(stats: SampleStats, samples: Sequence[float]) -> str:
    """Min to max of the samples: with the handful of samples tuning takes, a quartile
    would be an interpolation between two of them; the range hides nothing."""
    return f"{format_duration(stats.min)} \u2013 {format_duration(max(samples))}"


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

    def fraction(self, seconds: float) -> float | None:
        if self.work is None:
            return None
        return fraction_of_roof(self.work, seconds, self.compute_peak, self.memory_peak)

    def point(self, name: str, seconds: float, winner: bool) -> RooflinePoint | None:
        work = self.work
        if work is None or work.compute_ops <= 0 or work.bytes <= 0:
            return None
        return RooflinePoint(
            name, work.compute_ops / work.bytes, work.compute_ops / seconds, winner
        )

    def chart(self, points: Sequence[RooflinePoint], title: str) -> Markup | None:
        if not points or (self.compute_peak <= 0 and self.memory_peak <= 0):
            return None
        return roofline_chart(
            points, memory_peak=self.memory_peak, compute_peak=self.compute_peak, title=title
        )

    def missing(self) -> str:
        """Why there is no roofline chart, in one sentence."""
        if self.work is None:
            return "No roofline: the record states no work (give the test work=...)."
        if self.work.compute_ops <= 0 or self.work.bytes <= 0:
            what = "compute operations" if self.work.compute_ops <= 0 else "bytes"
            return (
                f"No roofline: the work counts no {what}, so it has no arithmetic intensity;"
                " the table shows the fraction of the roof."
            )
        if self.compute_peak <= 0 and self.memory_peak <= 0:
            return "No roofline: the record holds no peaks for this device."
        return "No roofline: no candidate was measured."

    def describe(self) -> tuple[str, str]:
        """(work, roofs) as the decision's header shows them."""
        work = MISSING
        if self.work is not None:
            work = f"{format_si(self.work.compute_ops)}op, {format_si(self.work.bytes)}B"
            if self.work.compute_ops > 0 and self.work.bytes > 0:
                work += f" ({self.work.compute_ops / self.work.bytes:.3g} op/B)"
        roofs = []
        if self.memory_peak > 0:
            roofs.append(f"memory {format_si(self.memory_peak)}B/s")
        if self.compute_peak > 0:
            roofs.append(f"compute {format_si(self.compute_peak)}op/s")
        return work, ", ".join(roofs) or MISSING


def _candidate(
    index: int,
    result: AutotuneResult,
    winner: bool,
    check: CheckResult | None,
    roofline: _Roofline,
) -> tuple[CandidateView, Bar, RooflinePoint | None]:
    check_text, check_class, check_message = _check_cell(check)
    if isinstance(result, AutotuneOutcome):
        stats = result.stats
        fraction = roofline.fraction(stats.median)
        view = CandidateView(
            index=index,
            name=result.name,
            winner=winner,
            median=format_duration(stats.median),
            median_sort=_sort_number(stats.median),
            spread=_spread(stats, result.effective_samples),
            samples=str(stats.count),
            roof=format_fraction(fraction),
            roof_sort=_sort_number(fraction, "-Infinity"),
            check=check_text,
            check_class=check_class,
            check_message=check_message,
            error="",
        )
        bar = Bar(result.name, stats.median, stats.min, max(result.effective_samples), winner)
        return view, bar, roofline.point(result.name, stats.median, winner)
    name = result.name or MISSING
    error = result.kind.value + (f": {result.message}" if result.message else "")
    view = CandidateView(
        index=index,
        name=name,
        winner=winner,
        median=MISSING,
        median_sort=_sort_number(None),
        spread=MISSING,
        samples="0",
        roof=MISSING,
        roof_sort=_sort_number(None, "-Infinity"),
        check=check_text,
        check_class=check_class,
        check_message=check_message,
        error=error,
    )
    return view, Bar(name, None, note=f"error: {result.kind.value}"), None


def _winner_samples(
    extra: _Extra,
    results: Sequence[tuple[int, AutotuneResult]],
    fastest_index: int | None,
    fastest_name: str | None,
) -> list[float]:
    """The winner's precise measurement (`extra["winner_samples_ns"]`), else its tuning
    samples: the gate judged the former, a `LocalTuner` record has only the latter."""
    samples_ns = extra.get("winner_samples_ns", list)
    if samples_ns:
        if not all(isinstance(s, int) and not isinstance(s, bool) and s > 0 for s in samples_ns):
            raise RecordError(
                f"{extra.where}: extra 'winner_samples_ns' must hold positive integers"
            )
        return [s / NS_PER_S for s in samples_ns]
    for index, result in results:
        if (
            index == fastest_index
            and result.name == fastest_name
            and isinstance(result, AutotuneOutcome)
        ):
            return list(result.effective_samples)
    return []


def _comparison(extra: _Extra) -> Comparison | None:
    data = extra.get("comparison", dict)
    if data is None:
        return None
    try:
        return Comparison.from_json(data)
    except (KeyError, TypeError, ValueError) as exc:
        raise extra.error("comparison", exc) from None


def _decision(number: int, record: AutotuneRecord, devices: dict[str, DeviceView]) -> DecisionView:
    key = key_text(record.key)
    where = f"record {number} ({record.tuner}, key {key})"
    extra = _Extra(record.extra, where)
    device, peaks = _device(extra, record.device_id)
    devices.setdefault(device.id, device)
    bounds = _bounds(record, where)
    roofline = _Roofline(_work(extra, bounds), *_roofs(peaks, bounds))
    checks = _checks(record, where)
    results = _results(record, where)
    group = extra.get("group", str) or record.tuner
    title = f"{group} [{key}]"

    candidates, bars, points = [], [], []
    for index, result in results:
        winner = (
            record.fastest_name is not None
            and index == record.fastest_index
            and result.name == record.fastest_name
        )
        view, bar, point = _candidate(
            index, result, winner, checks.get(result.name or ""), roofline
        )
        candidates.append(view)
        bars.append(bar)
        if point is not None:
            points.append(point)

    winner_samples = _winner_samples(extra, results, record.fastest_index, record.fastest_name)
    winner_stats = SampleStats.of(winner_samples) if winner_samples else None
    fraction = extra.number("fraction_of_roof")
    comparison = _comparison(extra)
    verdict = extra.get("verdict", str)
    failed = extra.get("failed", bool)
    try:
        events = tuple(str(event_from_json(e)) for e in record.events)
    except ValueError as exc:
        raise RecordError(f"{where}: {exc}") from None
    work, roofs = roofline.describe()
    return DecisionView(
        anchor=f"decision-{number}",
        group=group,
        key=key,
        tuner=record.tuner,
        device_id=device.id,
        source=record.source,
        winner=record.fastest_name or MISSING,
        median=format_duration(winner_stats.median) if winner_stats else MISSING,
        median_sort=_sort_number(winner_stats.median if winner_stats else None),
        spread=(
            f"{_spread(winner_stats, winner_samples)} ({winner_stats.count} samples)"
            if winner_stats
            else MISSING
        ),
        roof=format_fraction(fraction),
        roof_sort=_sort_number(fraction, "-Infinity"),
        delta=format_interval(comparison) if comparison is not None else MISSING,
        interval=(
            interval_chart(
                comparison.delta,
                comparison.low,
                comparison.high,
                failed=comparison.failed,
                title=f"change against the baseline, {title}",
            )
            if comparison is not None
            else None
        ),
        verdict=verdict or MISSING,
        verdict_class=_VERDICT_CLASSES.get(verdict or "", "none"),
        failed=failed if failed is not None else verdict in FAILING_VERDICTS,
        message=extra.get("message", str) or "",
        work=work,
        roofs=roofs,
        time_limit=format_duration(record.time_limit) if record.time_limit else MISSING,
        duration=format_duration(record.duration_ns / NS_PER_S) if record.duration_ns else MISSING,
        candidates=tuple(candidates),
        bars=(
            bar_chart(bars, format_value=format_duration, title=f"candidate medians, {title}")
            if bars
            else None
        ),
        roofline=roofline.chart(points, f"roofline, {title}"),
        roofline_note=roofline.missing(),
        events=events,
        search=" ".join(
            [group, key, record.tuner, verdict or "", *(c.name for c in candidates)]
        ).lower(),
    )


def _counts(decisions: Sequence[DecisionView]) -> tuple[tuple[str, int, str], ...]:
    """The run's tally: decisions, passed, failed, then how many of each verdict."""
    judged = [d for d in decisions if d.verdict != MISSING]
    failed = sum(d.failed for d in judged)
    counts = [
        ("decisions", len(decisions), "total"),
        ("passed", len(judged) - failed, "pass"),
        ("failed", failed, "error" if failed else "pass"),
    ]
    for verdict in Verdict:
        n = sum(d.verdict == verdict.value for d in judged)
        if n and verdict is not Verdict.PASS:
            counts.append((verdict.value, n, _VERDICT_CLASSES[verdict.value]))
    if len(judged) < len(decisions):
        counts.append(("no verdict", len(decisions) - len(judged), "none"))
    return tuple(counts)


def run_view(records: Sequence[AutotuneRecord], *, title: str) -> RunView:
    """What the template shows, from the records: decisions ordered by group and key, so
    the order pytest-xdist workers finished in does not show."""
    devices: dict[str, DeviceView] = {}
    decisions = [_decision(n, r, devices) for n, r in enumerate(records, start=1)]
    decisions.sort(key=lambda d: (d.group, d.key))
    return RunView(
        title=title,
        devices=tuple(devices.values()),
        decisions=tuple(decisions),
        counts=_counts(decisions),
        columns=COLUMNS,
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
