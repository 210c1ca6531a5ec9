"""Sample distributions: the winner's samples and the baseline's as strips of dots with
their quartiles (`strip_chart`)."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from markupsafe import Markup, escape

from pytest_autotune.report.svg.draw import CHAR_WIDTH, fit, num, svg, text_width


@dataclass(frozen=True, slots=True)
class SampleRow:
    """One row of a strip plot: a label and every sample, in seconds."""

    label: str
    samples: tuple[float, ...]
    highlight: bool = False


def quartiles(values: Sequence[float]) -> tuple[float, float, float]:
    """First quartile, median and third quartile, linearly interpolated."""
    ordered = sorted(values)

    def at(q: float) -> float:
        position = q * (len(ordered) - 1)
        low = math.floor(position)
        high = min(low + 1, len(ordered) - 1)
        return ordered[low] + (ordered[high] - ordered[low]) * (position - low)

    return at(0.25), at(0.5), at(0.75)


MAX_DOTS = 200
"""A strip plot draws at most this many dots a row: a precise measurement can hold
thousands of samples, which would only darken the row and swell the page."""


def _thinned(samples: Sequence[float]) -> list[float]:
    """At most `MAX_DOTS` of the samples, evenly spread over their sorted order, so the
    shape of the distribution (its tails included) survives."""
    if len(samples) <= MAX_DOTS:
        return list(samples)
    ordered = sorted(samples)
    step = (len(ordered) - 1) / (MAX_DOTS - 1)
    return [ordered[round(i * step)] for i in range(MAX_DOTS)]


def strip_chart(
    rows: Sequence[SampleRow],
    *,
    format_value: Callable[[float], str],
    title: str,
    width: float = 640,
) -> Markup:
    """Every sample as a dot, one row per sample set, over a box from the first to the
    third quartile with the median as a bar: where a whisker shows only the extremes, this
    shows whether two sets overlap, and whether one slow sample or a whole shift moved
    the median. The axis spans the samples, not zero: the question here is overlap. It
    ends at the slowest row's third quartile plus three interquartile ranges: a sample a
    preempted process took 100 times as long would squeeze every other dot into one pixel,
    so such samples sit at the right edge as a count. The box and median use every sample;
    the dots, `MAX_DOTS` of them at most."""
    values = [v for row in rows for v in row.samples if math.isfinite(v) and v > 0]
    low, high = (min(values), max(values)) if values else (0.0, 1.0)
    fences = [q3 + 3 * (q3 - q1) for q1, _, q3 in (quartiles(r.samples) for r in rows if r.samples)]
    high = min(high, max(fences, default=high))
    pad = (high - low) * 0.08 or high * 0.05 or 1.0
    low, high = max(low - pad, low * 0.5), high + pad
    row_height, top, axis = 34.0, 6.0, 24.0
    label_width = min(max((text_width(r.label) for r in rows), default=4 * CHAR_WIDTH) + 12, 200)
    plot_x, plot_width = label_width, max(width - label_width - 16, 80)
    height = top + len(rows) * row_height + axis

    def x(value: float) -> float:
        return plot_x + (value - low) / (high - low) * plot_width

    body: list[str] = []
    for tick in (low + (high - low) * f for f in (0.05, 0.5, 0.95)):
        body.append(
            f'<line class="grid" x1="{num(x(tick))}" y1="{num(top)}" x2="{num(x(tick))}"'
            f' y2="{num(height - axis)}"/><text class="tick" x="{num(x(tick))}"'
            f' y="{num(height - axis + 16)}" text-anchor="middle">'
            f"{escape(format_value(tick))}</text>"
        )
    for i, row in enumerate(rows):
        middle = top + i * row_height + row_height / 2
        samples = [v for v in row.samples if math.isfinite(v) and v > 0]
        css = "strip winner" if row.highlight else "strip"
        body.append(
            f'<g class="{css}"><title>{escape(row.label)}: {len(samples)} samples</title>'
            f'<text class="label" x="{num(plot_x - 8)}" y="{num(middle + 4)}"'
            f' text-anchor="end">{escape(fit(row.label, label_width - 12))}</text>'
        )
        if samples:
            q1, median, q3 = quartiles(samples)
            body.append(
                f'<rect class="box" x="{num(x(q1))}" y="{num(middle - 9)}"'
                f' width="{num(max(x(q3) - x(q1), 1))}" height="18" rx="2"/>'
                f'<line class="median" x1="{num(x(median))}" y1="{num(middle - 12)}"'
                f' x2="{num(x(median))}" y2="{num(middle + 12)}"/>'
            )
            for k, value in enumerate(_thinned(samples)):
                jitter = ((k * 7) % 9 - 4) * 1.2
                body.append(
                    f'<circle class="dot" cx="{num(x(min(value, high)))}"'
                    f' cy="{num(middle + jitter)}" r="2.2"/>'
                )
            beyond = sum(value > high for value in samples)
            if beyond:
                body.append(
                    f'<text class="note" x="{num(plot_x + plot_width)}" y="{num(middle - 12)}"'
                    f' text-anchor="end">{beyond} slower \u2192</text>'
                )
        body.append("</g>")
    return svg(width, height, title, body, "strips")
