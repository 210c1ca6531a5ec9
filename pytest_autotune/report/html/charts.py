"""A decision's charts beside its card: the fraction of the roof its winner reached, its
change against the baseline, the samples of both, and its median across the runs."""

from __future__ import annotations

import math
from collections.abc import Sequence

from markupsafe import Markup

from pytest_autotune.gate.verdicts import Comparison
from pytest_autotune.report.figures import format_change, format_fraction
from pytest_autotune.report.html.records import BaselineSeen, measured_name, winner_samples
from pytest_autotune.report.html.views import MISSING
from pytest_autotune.report.svg import (
    SampleRow,
    TrendPoint,
    fraction_bar,
    interval_chart,
    quartiles,
    strip_chart,
    trend_chart,
)
from pytest_autotune.tune.benchmark import SampleStats
from pytest_autotune.tune.log import format_duration
from pytest_autotune.tune.records import AutotuneRecord


def roof_bar(fraction: float | None, name: str) -> Markup | None:
    if fraction is None or not math.isfinite(fraction):
        return None
    return fraction_bar(fraction, title=f"{format_fraction(fraction)} of the roof, {name}")


def change_interval(comparison: Comparison | None, name: str) -> Markup | None:
    if comparison is None:
        return None
    return interval_chart(
        comparison.delta,
        comparison.low,
        comparison.high,
        failed=comparison.failed,
        title=f"change against the baseline, {name}",
    )


def _trend_point(number: str, record: AutotuneRecord) -> TrendPoint:
    samples = winner_samples(record)
    detail = record.run.label if record.run is not None else ""
    if not samples:
        return TrendPoint(number, None, detail=detail)
    stats = SampleStats.of(samples)
    q1, _, q3 = quartiles(samples)
    return TrendPoint(number, stats.median, q1, q3, measured_name(record) or "", detail)


def against_baseline(
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


def winner_trend(history: Sequence[tuple[str, AutotuneRecord]], name: str) -> Markup | None:
    """The winner's median across the runs, None with fewer than two."""
    trend = None
    if len(history) > 1:
        trend = trend_chart(
            [_trend_point(label, past) for label, past in history],
            format_value=format_duration,
            title=f"winner median across runs, {name}",
        )
    return trend
