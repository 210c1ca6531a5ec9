"""One decision's card: a record's group and key, its candidates, the winner against the
roofline and the baseline, and the charts, as the template shows them (`DecisionView`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace

from markupsafe import Markup

from pytest_autotune.gate.verdicts import Comparison
from pytest_autotune.report import format_roof, verdict_text
from pytest_autotune.report.failures import error_text, failed_checks_text, reason_in_a_word
from pytest_autotune.report.figures import format_change, format_fraction, format_interval
from pytest_autotune.report.html.records import (
    BaselineSeen,
    Extra,
    costs_text,
    measured_name,
    read_baseline,
    read_bounds,
    read_checks,
    read_comparison,
    read_device,
    read_results,
    read_winner_samples,
    read_work,
    winner_samples,
)
from pytest_autotune.report.html.views import (
    MISSING,
    PASSING_VERDICTS,
    CandidateView,
    DecisionView,
    DeviceView,
    gate_failed,
    verdict_class,
)
from pytest_autotune.report.names import decision_name, group_order, key_text, node_name
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
    strip_chart,
    trend_chart,
)
from pytest_autotune.tune.benchmark import NS_PER_S, AutotuneOutcome, AutotuneResult, SampleStats
from pytest_autotune.tune.bounds import (
    COMPUTE,
    MEMORY,
    Bounds,
    Thresholds,
    Work,
    calculate_bounds,
    fraction_of_roof,
)
from pytest_autotune.tune.check_result import RAISED, CheckResult
from pytest_autotune.tune.errors import AutotuneErrorKind
from pytest_autotune.tune.log import event_from_json, format_duration, known_event
from pytest_autotune.tune.peaks import Peaks
from pytest_autotune.tune.records import AutotuneRecord, RecordError


def _roofs(peaks: Peaks | None, bounds: Bounds | None, unit: str = "fp32") -> tuple[float, float]:
    """(compute, memory) peaks: the bounds' own peaks where the record has a bound of that
    resource (they are what the decision was tuned against), else the device's measured
    peaks (the compute roof of the work's `unit`, as the gate uses); 0.0 when unknown."""
    by_resource = {b.resource: b.peak for b in bounds.bounds} if bounds is not None else {}
    compute = by_resource.get(COMPUTE, peaks.compute_peak(unit) if peaks else 0.0)
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


def _check_cell(check: CheckResult | None, expected: bool = False) -> tuple[str, str, str]:
    """(text, CSS class, message) of a candidate's output check; `expected`: its test is
    marked xfail, so a failed check is what the mark expects, not a failure of the run."""
    if check is None:
        return MISSING, "none", ""
    if check.skipped:
        return "skipped", "skipped", check.message
    if not check.passed and expected:
        return "failed (xfail)", "skipped", check.message
    if not check.passed:
        # One that raised there compared nothing: it raised, its message says what.
        raised = check.message.startswith(RAISED)
        return "RAISED" if raised else "FAILED", "failed", check.message.removeprefix(RAISED)
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

    def binding(self) -> str | None:
        """Which roof `fraction` is of: the binding resource of its bounds, the memory one
        named by its level where the bound said; None without work."""
        if self.work is None:
            return None
        bounds = calculate_bounds(
            self.work, Thresholds(), self.compute_peak, self.memory_peak, 0.0, self.memory_level
        )
        resource = bounds.binding_resource()
        if resource == MEMORY:
            return self.memory_level or MEMORY
        return resource

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
    *,
    precise: bool = False,
    expected_to_fail: bool = False,
) -> tuple[CandidateView, Bar]:
    """A candidate's row and bar; `samples` are what it is shown with (the winner's precise
    measurement where `precise`, else tuning samples)."""
    check_text, check_class, check_message = _check_cell(check, expected_to_fail)
    if isinstance(result, AutotuneOutcome) and samples:
        stats = SampleStats.of(samples)
        fraction = roofline.fraction(stats.median)
        count = f"{stats.count}" + (" (precise)" if precise else "")
        view = CandidateView(
            index=index,
            name=result.name,
            winner=winner,
            median=format_duration(stats.median),
            median_sort=_sort_number(stats.median),
            relative="",
            spread=_spread(samples),
            spread_sort=_sort_number(min(samples)),
            samples=count,
            samples_sort=str(stats.count),
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
        spread_sort=_sort_number(None),
        samples="0",
        samples_sort="0",
        roof=MISSING,
        roof_sort=_sort_number(None, "-Infinity"),
        check=check_text,
        check_class=check_class,
        check_message=check_message,
        error=error_text(kind, message),
    )
    # What the terminal says of it: a candidate that declined the key is skipped, no error,
    # and the kind of an error ("unknown" for one the candidate raised) says nothing.
    said = "skipped" if kind == AutotuneErrorKind.SKIP.value else "error"
    word = reason_in_a_word(message, skipped=said == "skipped") if message else kind
    # A reason too long for the note is that word alone, not "error: error".
    return view, Bar(name, None, note=said if word == said else f"{said}: {word}")


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


def _short(group: str, key: str) -> str:
    """A decision's name without its file: what fits beside a point on a chart."""
    return node_name(decision_name(group, key))


def decision_view(
    number: int,
    record: AutotuneRecord,
    devices: dict[str, DeviceView],
    history: Sequence[tuple[str, AutotuneRecord]] = (),
) -> DecisionView:
    """Record `number`'s card; its device's view is added to `devices`, and `history` (the
    same decision in earlier runs, with their labels) draws its trend."""
    key = key_text(record.key)
    where = f"record {number} ({record.tuner}, key {key})"
    extra = Extra(record.extra, where)
    device, peaks = read_device(extra, record.device_id)
    devices.setdefault(device.id, device)
    bounds = read_bounds(record, where)
    roofline = _roofline(extra, bounds, peaks)
    checks = read_checks(record, where)
    results = read_results(record, where)
    group = extra.typed.group or record.tuner
    name = decision_name(group, key)
    winner_samples = read_winner_samples(extra, results, record.fastest_index, record.fastest_name)

    measured = measured_name(record)
    candidates, bars = _candidates(record, results, checks, roofline, winner_samples, extra)

    winner_median = SampleStats.of(winner_samples).median if winner_samples else None
    fraction, roof = extra.typed.fraction_of_roof, extra.typed.roof
    if fraction is None and winner_median is not None:
        # A record without the plugin's extras (a LocalTuner's): from its bounds, naming
        # the roof as the plugin does, or "1.3%" beside "memory (L1)" reads as L1's.
        fraction, roof = roofline.fraction(winner_median), roofline.binding()
    comparison = read_comparison(extra)
    baseline = read_baseline(extra)
    verdict = extra.typed.verdict
    failed = gate_failed(verdict, extra.typed.failed)
    # A candidate that failed its check fails its own test, whatever the gate said of the
    # winner: the card is not "passing", unless the test is marked to fail (xfail). A
    # record that does not say which are marked (an older one) raises none.
    # Nor does one whose test this run did not select (`-k`): the group is checked whole.
    expected = extra.typed.expected_failures
    unselected = extra.typed.not_selected or ()
    wrong = [
        c.name
        for c in checks.values()
        if expected is not None
        and not c.passed
        and c.name not in expected
        and c.name not in unselected
    ]
    raised = {c.name for c in checks.values() if c.message.startswith(RAISED)}
    work, roofs = roofline.describe()

    raw_change, strips = _against_baseline(winner_samples, baseline, measured, name)
    trend = _trend(history, name)
    return DecisionView(
        anchor=f"decision-{number}",
        name=name,
        group=group,
        key=key,
        tuner=record.tuner,
        device_id=device.id,
        source=record.source,
        winner=measured or MISSING,
        pick_note=_pick_note(record, measured),
        median=format_duration(winner_median) if winner_median is not None else MISSING,
        spread=(
            f"{_spread(winner_samples)} ({len(winner_samples)} samples)"
            if winner_samples
            else MISSING
        ),
        roof=format_roof(fraction, roof),
        roof_bar=_roof_bar(fraction, name),
        delta=format_interval(comparison) if comparison is not None else MISSING,
        raw_change=raw_change,
        interval=_interval(comparison, name),
        verdict=verdict or MISSING,
        verdict_shown=verdict_text(verdict, failed) if verdict else MISSING,
        verdict_class=verdict_class(verdict),
        failed=failed,
        attention=failed
        or bool(wrong)
        or (verdict is not None and verdict not in PASSING_VERDICTS),
        message="; ".join(filter(None, (extra.typed.message, failed_checks_text(wrong, raised)))),
        failed_checks=len(wrong),
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
        events=_events(record, where),
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
        level_roof=(
            (roofline.memory_level, roofline.memory_peak)
            if peaks is not None
            and roofline.memory_level is not None
            and roofline.memory_level != peaks.outer_level
            else None
        ),
    )


def _roofline(extra: Extra, bounds: Bounds | None, peaks: Peaks | None) -> _Roofline:
    """The roofline a decision is drawn against: its work under its device's roofs."""
    level = next((b.level for b in bounds.bounds if b.resource == MEMORY), None) if bounds else None
    work = read_work(extra, bounds)
    roofs = _roofs(peaks, bounds, work.unit if work is not None else "fp32")
    return _Roofline(work, *roofs, memory_level=level)


def _pick_note(record: AutotuneRecord, measured: str | None) -> str:
    """Why the winner shown is not tuning's pick, where it is not."""
    if measured is None or measured == record.fastest_name:
        return ""
    return (
        f"Tuning picked {record.fastest_name} on its few samples; the gate measured"
        f" {measured}, the baseline's winner, which was faster here."
    )


def _roof_bar(fraction: float | None, name: str) -> Markup | None:
    if fraction is None or not math.isfinite(fraction):
        return None
    return fraction_bar(fraction, title=f"{format_fraction(fraction)} of the roof, {name}")


def _interval(comparison: Comparison | None, name: str) -> Markup | None:
    if comparison is None:
        return None
    return interval_chart(
        comparison.delta,
        comparison.low,
        comparison.high,
        failed=comparison.failed,
        title=f"change against the baseline, {name}",
    )


def _events(record: AutotuneRecord, where: str) -> tuple[str, ...]:
    """The tuning's steps, as the log writes them; an event of a kind this version does not
    know (a later version's records) by its tag."""
    try:
        return tuple(
            str(event_from_json(e))
            if known_event(e)
            else f"{e.get('event')!s}: an event this version of pytest-autotune does not read"
            for e in record.events
        )
    except ValueError as exc:
        raise RecordError(f"{where}: {exc}") from None


def _trend_point(number: str, record: AutotuneRecord) -> TrendPoint:
    samples = winner_samples(record)
    detail = record.run.label if record.run is not None else ""
    if not samples:
        return TrendPoint(number, None, detail=detail)
    stats = SampleStats.of(samples)
    q1, _, q3 = quartiles(samples)
    return TrendPoint(number, stats.median, q1, q3, measured_name(record) or "", detail)


def _candidates(
    record: AutotuneRecord,
    results: Sequence[tuple[int, AutotuneResult]],
    checks: dict[str, CheckResult],
    roofline: _Roofline,
    winner_samples: Sequence[float],
    extra: Extra,
) -> tuple[list[CandidateView], list[Bar]]:
    """Each candidate's row and bar, the winner's shown with its precise measurement."""
    measured = measured_name(record)
    # A LocalTuner's record has no precise measurement: its winner's tuning samples stand in.
    precise = bool(extra.typed.winner_samples_ns)
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
            costs_text(extra, result.name or ""),
            precise=winner and precise,
            expected_to_fail=result.name in (extra.typed.expected_failures or ()),
        )
        candidates.append(view)
        bars.append(bar)

    return candidates, bars


def _against_baseline(
    winner_samples: Sequence[float], baseline: BaselineSeen | None, measured: str | None, name: str
) -> tuple[str, Markup | None]:
    """The raw change of the winner's median against the baseline's, and the strip chart of
    both samples; "-" and None without both."""
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
    return raw_change, strips


def _trend(history: Sequence[tuple[str, AutotuneRecord]], name: str) -> Markup | None:
    """The winner's median across the runs, None with fewer than two."""
    trend = None
    if len(history) > 1:
        trend = trend_chart(
            [_trend_point(label, past) for label, past in history],
            format_value=format_duration,
            title=f"winner median across runs, {name}",
        )
    return trend
