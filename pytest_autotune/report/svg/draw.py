"""What every chart shares: numbers as labels (`format_si`), axis ticks, coordinates, labels
cut to fit, and the `<svg>` element around a chart's body."""

from __future__ import annotations

import math

from markupsafe import Markup, escape

# Defined with the figures the gate's messages share; every chart reads it from here.
from pytest_autotune.report.columns import width
from pytest_autotune.report.figures import format_si as format_si

CHAR_WIDTH = 7.0
"""Rough width of one character of the chart font at 12px: enough to keep labels apart,
where measuring text would need a browser; `text_width` sizes a label's own room."""

_NARROW = frozenset("fijlrtI.,:;'!|()[]{}- ")
_WIDE = frozenset("mwMW@%\u2026")


def linear_ticks(top: float, count: int = 5) -> list[float]:
    """Ticks from 0 at a step of 1, 2 or 5 times a power of ten, the last one at or above
    `top`: the axis ends on a round number a reader can take in at a glance."""
    if not (math.isfinite(top) and top > 0):
        return [0.0, 1.0]
    raw = top / count
    magnitude = 10 ** math.floor(math.log10(raw))
    step = next(m * magnitude for m in (1, 2, 5, 10) if m * magnitude >= raw)
    steps = math.ceil(top / step - 1e-9)
    return [i * step for i in range(steps + 1)]


def log_ticks(low: float, high: float) -> list[float]:
    """The powers of ten from the one at or below `low` to the one at or above `high`."""
    if not (0 < low <= high and math.isfinite(high)):
        raise ValueError(f"log ticks need 0 < low <= high, got {low!r}, {high!r}")
    first = math.floor(math.log10(low) + 1e-9)
    last = math.ceil(math.log10(high) - 1e-9)
    last = max(last, first + 1)
    return [10.0**e for e in range(first, last + 1)]


def num(value: float) -> str:
    """A coordinate: one decimal is finer than a pixel, and keeps the markup short."""
    return f"{value:.1f}"


def text_width(text: str) -> float:
    """About how many pixels `text` takes in the charts' 12px font, by the class of each
    glyph (narrow, wide, upper case, the rest), from DejaVu Sans, the font `system-ui` is
    on a Linux runner and wider than Segoe UI or SF: sized at `CHAR_WIDTH` a character,
    "boom2" and the names with an `m` or a `w` lost their first letter to a chart's edge.
    A character two terminal columns wide (CJK) takes a whole em, as `m` does."""
    return sum(12 * _em(c) for c in text)


def _em(char: str) -> float:
    if char in _NARROW:
        return 0.36
    if char in _WIDE or width(char) == 2:
        return 1.0
    return 0.78 if char.isupper() else 0.64


def fit(label: str, width: float) -> str:
    """`label` cut with an ellipsis to about `width` pixels (`text_width`), never below
    three characters; the full text stays in a `<title>`, which browsers show on hover."""
    if text_width(label) <= width:
        return label
    kept = len(label) - 1
    while kept > 3 and text_width(label[:kept] + "\u2026") > width:
        kept -= 1
    return label[:kept] + "\u2026"


def svg(width: float, height: float, title: str, body: list[str], css_class: str) -> Markup:
    return Markup(
        f'<svg class="chart {css_class}" xmlns="http://www.w3.org/2000/svg" role="img"'
        f' width="{num(width)}" height="{num(height)}"'
        f' viewBox="0 0 {num(width)} {num(height)}"><title>{escape(title)}</title>'
        + "".join(body)
        + "</svg>"
    )
