"""Bars: the candidates' medians with their quartiles (`bar_chart`), the change against the
baseline on its interval (`interval_chart`), and a fraction of the roof (`fraction_bar`)."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from markupsafe import Markup, escape

from pytest_autotune.report.svg.draw import CHAR_WIDTH, fit, linear_ticks, num, svg, text_width


@dataclass(frozen=True, slots=True)
class Bar:
    """One candidate's bar: its value (a median), the spread drawn as a whisker, and a
    note in place of the bar when it has no value (it failed)."""

    label: str
    value: float | None
    low: float | None = None
    high: float | None = None
    highlight: bool = False
    """The winner: drawn in the accent colour, so it is found without reading labels."""
    note: str = ""


def bar_chart(
    bars: Sequence[Bar],
    *,
    format_value: Callable[[float], str],
    title: str,
    width: float = 640,
) -> Markup:
    """Horizontal bars from zero, one row per bar in the given order, with the value at the
    end of each bar and the spread as a whisker.

    Horizontal, because candidate names are long (`grid_stride_block_1024`) and read best
    on their own line; from zero on a linear scale, because "9x slower" must look 9x as
    long, which a log scale or a cut axis would hide.
    """
    row, gap, top, axis = 22.0, 6.0, 8.0, 26.0
    label_width = min(
        max((text_width(b.label) * _bold(b) for b in bars), default=4 * CHAR_WIDTH) + 12, 220
    )
    value_room = 72.0
    plot_x = label_width
    plot_width = max(width - label_width - value_room, 80)
    values = [v for b in bars for v in (b.value, b.high) if v is not None and math.isfinite(v)]
    ticks = linear_ticks(max(values, default=0.0))
    scale = plot_width / ticks[-1]
    height = top + len(bars) * (row + gap) + axis
    body: list[str] = []
    # Where nothing was measured (every candidate failed) there is no scale to draw: an
    # axis to "1.00 s" showed a time no candidate took.
    for tick in ticks if values else ():
        x = plot_x + tick * scale
        body.append(
            f'<line class="grid" x1="{num(x)}" y1="{num(top)}" x2="{num(x)}"'
            f' y2="{num(height - axis)}"/>'
            f'<text class="tick" x="{num(x)}" y="{num(height - axis + 16)}"'
            f' text-anchor="middle">{escape(format_value(tick) if tick else "0")}</text>'
        )
    for i, bar in enumerate(bars):
        y = top + i * (row + gap)
        middle = y + row / 2
        body.append(
            f'<g class="{"bar winner" if bar.highlight else "bar"}"><title>{escape(bar.label)}'
            f"{escape(': ' + (format_value(bar.value) if bar.value is not None else bar.note))}"
            f"</title>"
            f'<text class="label" x="{num(plot_x - 8)}" y="{num(middle + 4)}"'
            f' text-anchor="end">'
            f"{escape(fit(bar.label, (label_width - 12) / _bold(bar)))}</text>"
        )
        if bar.value is None or not math.isfinite(bar.value):
            body.append(
                f'<text class="note" x="{num(plot_x + 4)}" y="{num(middle + 4)}">'
                f"{escape(bar.note or '-')}</text></g>"
            )
            continue
        end = plot_x + bar.value * scale
        body.append(
            f'<rect x="{num(plot_x)}" y="{num(y)}" width="{num(max(end - plot_x, 1))}"'
            f' height="{num(row)}" rx="2"/>'
        )
        if bar.low is not None and bar.high is not None and bar.high > bar.low:
            x1, x2 = plot_x + bar.low * scale, plot_x + bar.high * scale
            body.append(
                f'<path class="whisker" d="M{num(x1)} {num(middle)}H{num(x2)}'
                f"M{num(x1)} {num(middle - 5)}V{num(middle + 5)}"
                f'M{num(x2)} {num(middle - 5)}V{num(middle + 5)}"/>'
            )
        text_x = max(end, plot_x + (bar.high or 0) * scale) + 6
        body.append(
            f'<text class="value" x="{num(text_x)}" y="{num(middle + 4)}">'
            f"{escape(format_value(bar.value))}</text></g>"
        )
    return svg(width, height, title, body, "bars")


BOLD_WIDTH = 1.15
"""How much wider the winner's bold label (`font-weight: 650` in report.css) runs than
`text_width`: sized by the plain width, its first letter was cut off at the chart's edge."""


def _bold(bar: Bar) -> float:
    return BOLD_WIDTH if bar.highlight else 1.0


def interval_chart(
    delta: float, low: float, high: float, *, failed: bool, title: str, width: float = 320
) -> Markup:
    """The change against the baseline as a dot on its interval, on a percent axis that
    always includes 0 (no change), so "slower, and sure of it" reads as a bar entirely
    right of the zero line. An unbounded end is drawn to the edge with an arrow."""
    finite = [v for v in (delta, low, high, 0.0) if math.isfinite(v)]
    span = max(max(abs(v) for v in finite) * 1.15, 0.02)
    # A time cannot fall by more than all of it: drawn symmetric past -100%, a regression
    # of +201% had its axis start at "-231%", a change no run can make.
    floor = max(-span, -1.0)
    # Room for half a tick label ("-100%", "+759%") each side of the axis: at 12 its sign
    # was cut off at the edge.
    left, right, middle, height = 20.0, 20.0, 16.0, 40.0

    def x(value: float) -> float:
        clipped = min(max(value, floor), span)
        return left + (clipped - floor) / (span - floor) * (width - left - right)

    css = "interval failed" if failed else "interval"
    body = [
        (
            f'<line class="axis-line" x1="{num(left)}" y1="{num(middle)}"'
            f' x2="{num(width - right)}" y2="{num(middle)}"/>'
            f'<line class="zero" x1="{num(x(0))}" y1="4" x2="{num(x(0))}" y2="28"/>'
            f'<text class="tick" x="{num(x(0))}" y="38" text-anchor="middle">0%</text>'
        ),
        (
            f'<g class="{css}"><rect x="{num(x(low))}" y="{num(middle - 4)}"'
            f' width="{num(max(x(high) - x(low), 1))}" height="8" rx="4"/>'
        ),
    ]
    for value, edge, direction in ((low, left, -1), (high, width - right, 1)):
        if math.isinf(value):
            body.append(
                f'<path class="arrow" d="M{num(edge)} {num(middle)}l{num(-6 * direction)} -5v10z"/>'
            )
    body.append(f'<circle cx="{num(x(delta))}" cy="{num(middle)}" r="5"/></g>')
    for value in (max(-span / 1.15, -1.0), span / 1.15):
        if abs(x(value) - x(0)) < 36:
            continue  # its label would run into the "0%" one
        body.append(
            f'<text class="tick" x="{num(x(value))}" y="38" text-anchor="middle">'
            f"{escape(f'{value * 100:+.0f}%')}</text>"
        )
    return svg(width, height, title, body, "interval-chart")


def fraction_bar(fraction: float, *, title: str, width: float = 80) -> Markup:
    """A group's fraction of its binding roof as a filled bar, 100% at the right end; a
    fraction past 100% (a roof the kernel beats: the peak probe under-reads) fills the bar
    and shows an overflow mark, rather than growing past its box."""
    height = 10.0
    filled = min(max(fraction, 0.0), 1.0) * width
    body = [
        f'<rect class="track" x="0" y="0" width="{num(width)}" height="{num(height)}" rx="3"/>',
        f'<rect class="fill" x="0" y="0" width="{num(filled)}" height="{num(height)}" rx="3"/>',
    ]
    if fraction > 1.0:
        body.append(
            f'<path class="over" d="M{num(width - 6)} 0L{num(width)} 5L{num(width - 6)} 10Z"/>'
        )
    return svg(width, height, title, body, "fraction")
