"""One decision's card: a record's group and key, its candidates, the winner against the
roofline and the baseline, and the charts, as the template shows them (`DecisionView`).
"""

from __future__ import annotations

from collections.abc import Sequence

from pytest_autotune.report import format_roof, verdict_text
from pytest_autotune.report.failures import XFAILED, failed_checks_text
from pytest_autotune.report.figures import format_interval
from pytest_autotune.report.html.candidates import candidate_rows, spread, with_relative
from pytest_autotune.report.html.charts import (
    against_baseline,
    change_interval,
    roof_bar,
    winner_trend,
)
from pytest_autotune.report.html.records import (
    Extra,
    measured_name,
    read_baseline,
    read_bounds,
    read_checks,
    read_comparison,
    read_device,
    read_results,
    read_winner_samples,
)
from pytest_autotune.report.html.roofs import Roofline, roofline_of
from pytest_autotune.report.html.views import (
    MISSING,
    PASSING_VERDICTS,
    DecisionView,
    DeviceView,
    gate_failed,
    verdict_class,
)
from pytest_autotune.report.names import decision_name, group_order, key_text, node_name
from pytest_autotune.report.svg import bar_chart
from pytest_autotune.tune.benchmark import NS_PER_S, SampleStats
from pytest_autotune.tune.check_result import RAISED, CheckResult
from pytest_autotune.tune.log import event_from_json, format_duration, known_event
from pytest_autotune.tune.records import AutotuneRecord, RecordError


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
    roofline = roofline_of(extra, bounds, peaks)
    checks = read_checks(record, where)
    results = read_results(record, where)
    group = extra.typed.group or record.tuner
    name = decision_name(group, key)
    winner_samples = read_winner_samples(extra, results, record.fastest_index, record.fastest_name)

    measured = measured_name(record)
    candidates, bars = candidate_rows(record, results, checks, roofline, winner_samples, extra)

    winner_median = SampleStats.of(winner_samples).median if winner_samples else None
    fraction, roof = _winner_roof(extra, roofline, winner_median)
    comparison = read_comparison(extra)
    baseline = read_baseline(extra)
    verdict = extra.typed.verdict
    # A failure its tests' xfail marks expected is shown in capitals, as the terminal's
    # table shows it, and said to be expected; the run did not fail on it.
    gate_failure = gate_failed(verdict, extra.typed.failed)
    failed = gate_failure and not extra.typed.xfailed
    wrong, raised = _failed_checks(extra, checks)
    work, roofs = roofline.describe()

    raw_change, strips = against_baseline(winner_samples, baseline, measured, name)
    trend = winner_trend(history, name)
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
            f"{spread(winner_samples)} ({len(winner_samples)} samples)"
            if winner_samples
            else MISSING
        ),
        roof=format_roof(fraction, roof),
        roof_bar=roof_bar(fraction, name),
        delta=format_interval(comparison) if comparison is not None else MISSING,
        raw_change=raw_change,
        interval=change_interval(comparison, name),
        verdict=verdict or MISSING,
        verdict_shown=verdict_text(verdict, gate_failure) if verdict else MISSING,
        verdict_class=verdict_class(verdict),
        failed=failed,
        attention=gate_failure
        or bool(wrong)
        or (verdict is not None and verdict not in PASSING_VERDICTS),
        message="; ".join(
            filter(
                None,
                (
                    extra.typed.message,
                    failed_checks_text(wrong, raised),
                    XFAILED if gate_failure and extra.typed.xfailed else "",
                ),
            )
        ),
        failed_checks=len(wrong),
        work=work,
        roofs=roofs,
        time_limit=format_duration(record.time_limit) if record.time_limit else MISSING,
        duration=format_duration(record.duration_ns / NS_PER_S) if record.duration_ns else MISSING,
        run=record.run.label if record.run is not None else MISSING,
        candidates=tuple(with_relative(candidates)),
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


def _failed_checks(extra: Extra, checks: dict[str, CheckResult]) -> tuple[list[str], set[str]]:
    """The candidates whose failed checks fail their own tests, and those that raised there."""
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
    return wrong, raised


def _winner_roof(
    extra: Extra, roofline: Roofline, winner_median: float | None
) -> tuple[float | None, str | None]:
    """The fraction of the roof the winner reached and which roof it is of."""
    fraction, roof = extra.typed.fraction_of_roof, extra.typed.roof
    if fraction is None and winner_median is not None:
        # A record without the plugin's extras (a LocalTuner's): from its bounds, naming
        # the roof as the plugin does, or "1.3%" beside "memory (L1)" reads as L1's.
        fraction, roof = roofline.fraction(winner_median), roofline.binding()
    return fraction, roof


def _pick_note(record: AutotuneRecord, measured: str | None) -> str:
    """Why the winner shown is not tuning's pick, where it is not."""
    if measured is None or measured == record.fastest_name:
        return ""
    return (
        f"Tuning picked {record.fastest_name} on its few samples; the gate measured"
        f" {measured}, the baseline's winner, which was faster here."
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
