"""The winner's median across runs, with its quartiles as whiskers (`trend_chart`)."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from markupsafe import Markup, escape

from pytest_autotune.report.svg.draw import fit, linear_ticks, num, svg


@dataclass(frozen=True, slots=True)
class TrendPoint:
    """One run of a group: the run's label, the winner's median and its quartiles drawn as
    a whisker (seconds), and the winner's name; `median` None when the run measured
    nothing. Quartiles, not the extremes: one preempted sample must not set the axis."""

    run: str
    median: float | None
    low: float | None = None
    high: float | None = None
    winner: str = ""
    detail: str = ""
    """The run as its tooltip names it (its time and commit); `run` is the axis label."""


def trend_chart(
    points: Sequence[TrendPoint],
    *,
    format_value: Callable[[float], str],
    title: str,
    width: float = 640,
    height: float = 200,
) -> Markup:
    """The winner's median across runs, oldest left, as asv draws a benchmark's history: a
    line through the medians, a whisker for each run's spread, and the winner's name where
    it changed. The time axis starts at zero, so a 5% change looks like 5%."""
    values = [v for p in points for v in (p.median, p.high) if v is not None and math.isfinite(v)]
    ticks = linear_ticks(max(values, default=0.0))
    left, right, top, bottom = 64.0, 16.0, 12.0, 40.0
    plot_width = width - left - right
    step = plot_width / max(len(points) - 1, 1)

    def x(i: int) -> float:
        return left + (i * step if len(points) > 1 else plot_width / 2)

    def y(value: float) -> float:
        return height - bottom - value / ticks[-1] * (height - top - bottom)

    body = _trend_axes(points, ticks, x, y, format_value, (left, right, top, bottom), width, height)
    line = [
        f"{num(x(i))} {num(y(p.median))}"
        for i, p in enumerate(points)
        if p.median is not None and math.isfinite(p.median)
    ]
    if len(line) > 1:
        body.append(f'<path class="trend-line" d="M{"L".join(line)}"/>')
    previous = None
    for i, point in enumerate(points):
        if point.median is None or not math.isfinite(point.median):
            body.append(
                f'<text class="note" x="{num(x(i))}" y="{num(height - bottom - 6)}"'
                ' text-anchor="middle">no result</text>'
            )
            continue
        if point.low is not None and point.high is not None and point.high > point.low:
            body.append(
                f'<path class="whisker" d="M{num(x(i))} {num(y(point.low))}V{num(y(point.high))}"/>'
            )
        body.append(
            f'<g class="trend-point"><title>run {escape(point.run)}'
            f"{escape(', ' + point.detail if point.detail else '')}: {escape(point.winner)}"
            f" {escape(format_value(point.median))}</title>"
            f'<circle cx="{num(x(i))}" cy="{num(y(point.median))}" r="4"/></g>'
        )
        if point.winner and point.winner != previous:
            near_end = x(i) > width - right - 120
            body.append(
                f'<text class="label" x="{num(x(i) + (-6 if near_end else 6))}"'
                f' y="{num(y(point.median) - 8)}"'
                f' text-anchor="{"end" if near_end else "start"}">'
                f"{escape(fit(point.winner, 120))}</text>"
            )
        previous = point.winner
    body.append(
        f'<text class="axis" transform="translate(14 {num((top + height - bottom) / 2)})'
        ' rotate(-90)" text-anchor="middle">winner median</text>'
    )
    return svg(width, height, title, body, "trend")


def _trend_axes(
    points: Sequence[TrendPoint],
    ticks: list[float],
    x: Callable[[int], float],
    y: Callable[[float], float],
    format_value: Callable[[float], str],
    margins: tuple[float, float, float, float],
    width: float,
    height: float,
) -> list[str]:
    """The trend chart's grid, time ticks and run labels (as many as fit, the last always)."""
    left, right, _, bottom = margins
    body: list[str] = []
    for tick in ticks:
        body.append(
            f'<line class="grid" x1="{num(left)}" y1="{num(y(tick))}"'
            f' x2="{num(width - right)}" y2="{num(y(tick))}"/><text class="tick"'
            f' x="{num(left - 6)}" y="{num(y(tick) + 4)}" text-anchor="end">'
            f"{escape(format_value(tick) if tick else '0')}</text>"
        )
    every = max(1, math.ceil(len(points) * 90 / (width - left - right)))
    for i, point in enumerate(points):
        if i % every == 0 or i == len(points) - 1:
            body.append(
                f'<text class="tick" x="{num(x(i))}" y="{num(height - bottom + 16)}"'
                f' text-anchor="middle">{escape(fit(point.run, 90))}</text>'
            )
    return body
