"""The report's charts as inline SVG, drawn here rather than by a plotting library.

The report must open anywhere, offline, years later: no script from a CDN, no image files
beside it, no matplotlib in the dependencies. A bar chart, a log-log roofline and an
interval strip are a few rectangles, lines and labels, so we draw them ourselves.

Every chart is returned as `markupsafe.Markup`, so the template inserts it as markup; every
piece of text in it (candidate names are the user's text) goes through `escape` first, and
every number is formatted here, so nothing else can reach the markup.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from markupsafe import Markup, escape

__all__ = [
    "Bar",
    "RooflinePoint",
    "SampleRow",
    "TrendPoint",
    "bar_chart",
    "format_si",
    "fraction_bar",
    "interval_chart",
    "linear_ticks",
    "log_ticks",
    "quartiles",
    "roofline_chart",
    "strip_chart",
    "trend_chart",
]

_SI_PREFIXES = ("", "k", "M", "G", "T", "P", "E")

_CHAR_WIDTH = 7.0
"""Rough width of one character of the chart font at 12px: enough to size the label column
and to keep labels apart, where measuring text would need a browser."""


def format_si(value: float) -> str:
    """Three significant digits and an SI prefix, for rates that span kB/s to PB/s:
    `4.28 T`, `63.0 G`, `512 `; append the unit (`format_si(x) + "B/s"`). Below 1 the
    number is plain (`0.25 `), as for arithmetic intensities."""
    if not math.isfinite(value) or value == 0:
        return f"{value:g} "
    if abs(value) < 1:
        return f"{value:.3g} "
    exponent = min(int(math.log10(abs(value)) // 3), len(_SI_PREFIXES) - 1)
    scaled = float(f"{value / 10 ** (3 * exponent):.3g}")
    if scaled >= 1000 and exponent + 1 < len(_SI_PREFIXES):
        exponent, scaled = exponent + 1, scaled / 1000
    decimals = 0 if scaled >= 100 else 1 if scaled >= 10 else 2
    return f"{scaled:.{decimals}f} {_SI_PREFIXES[exponent]}"


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


def _decade(value: float) -> str:
    """A power of ten as an axis label: `1 G`, `10 G`, `100 G` (no `1.00 G`)."""
    text = format_si(value)
    number, prefix = text.split(" ")
    return f"{float(number):g} {prefix}".strip()


def _num(value: float) -> str:
    """A coordinate: one decimal is finer than a pixel, and keeps the markup short."""
    return f"{value:.1f}"


def _fit(label: str, width: float) -> str:
    """`label` cut with an ellipsis to about `width` pixels; the full text stays in a
    `<title>`, which browsers show on hover."""
    most = max(int(width / _CHAR_WIDTH), 4)
    return label if len(label) <= most else label[: most - 1] + "\u2026"


def _svg(width: float, height: float, title: str, body: list[str], css_class: str) -> Markup:
    return Markup(
        f'<svg class="chart {css_class}" xmlns="http://www.w3.org/2000/svg" role="img"'
        f' width="{_num(width)}" height="{_num(height)}"'
        f' viewBox="0 0 {_num(width)} {_num(height)}"><title>{escape(title)}</title>'
        + "".join(body)
        + "</svg>"
    )


# -- bar chart ------------------------------------------------------------------------------


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
    label_width = min(max((len(b.label) for b in bars), default=4) * _CHAR_WIDTH + 12, 220)
    value_room = 72.0
    plot_x = label_width
    plot_width = max(width - label_width - value_room, 80)
    values = [v for b in bars for v in (b.value, b.high) if v is not None and math.isfinite(v)]
    ticks = linear_ticks(max(values, default=0.0))
    scale = plot_width / ticks[-1]
    height = top + len(bars) * (row + gap) + axis
    body: list[str] = []
    for tick in ticks:
        x = plot_x + tick * scale
        body.append(
            f'<line class="grid" x1="{_num(x)}" y1="{_num(top)}" x2="{_num(x)}"'
            f' y2="{_num(height - axis)}"/>'
            f'<text class="tick" x="{_num(x)}" y="{_num(height - axis + 16)}"'
            f' text-anchor="middle">{escape(format_value(tick) if tick else "0")}</text>'
        )
    for i, bar in enumerate(bars):
        y = top + i * (row + gap)
        middle = y + row / 2
        body.append(
            f'<g class="{"bar winner" if bar.highlight else "bar"}"><title>{escape(bar.label)}'
            f"{escape(': ' + (format_value(bar.value) if bar.value is not None else bar.note))}"
            f"</title>"
            f'<text class="label" x="{_num(plot_x - 8)}" y="{_num(middle + 4)}"'
            f' text-anchor="end">{escape(_fit(bar.label, label_width - 12))}</text>'
        )
        if bar.value is None or not math.isfinite(bar.value):
            body.append(
                f'<text class="note" x="{_num(plot_x + 4)}" y="{_num(middle + 4)}">'
                f"{escape(bar.note or '-')}</text></g>"
            )
            continue
        end = plot_x + bar.value * scale
        body.append(
            f'<rect x="{_num(plot_x)}" y="{_num(y)}" width="{_num(max(end - plot_x, 1))}"'
            f' height="{_num(row)}" rx="2"/>'
        )
        if bar.low is not None and bar.high is not None and bar.high > bar.low:
            x1, x2 = plot_x + bar.low * scale, plot_x + bar.high * scale
            body.append(
                f'<path class="whisker" d="M{_num(x1)} {_num(middle)}H{_num(x2)}'
                f"M{_num(x1)} {_num(middle - 5)}V{_num(middle + 5)}"
                f'M{_num(x2)} {_num(middle - 5)}V{_num(middle + 5)}"/>'
            )
        text_x = max(end, plot_x + (bar.high or 0) * scale) + 6
        body.append(
            f'<text class="value" x="{_num(text_x)}" y="{_num(middle + 4)}">'
            f"{escape(format_value(bar.value))}</text></g>"
        )
    return _svg(width, height, title, body, "bars")


# -- roofline -------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class RooflinePoint:
    """A candidate on the roofline: arithmetic intensity (operations per byte) and the
    rate it achieved (operations per second)."""

    label: str
    intensity: float
    rate: float
    highlight: bool = False
    """The winner: drawn larger, filled, and labelled as such."""


class _LogScale:
    """Maps [low, high] on a log scale to [start, end] pixels (end < start for a y axis)."""

    def __init__(self, low: float, high: float, start: float, end: float) -> None:
        self.low, self.high = math.log10(low), math.log10(high)
        self.start, self.end = start, end

    def __call__(self, value: float) -> float:
        fraction = (math.log10(value) - self.low) / (self.high - self.low)
        return self.start + fraction * (self.end - self.start)


def _usable(value: float | None) -> bool:
    return value is not None and value > 0 and math.isfinite(value)


def roofline_chart(
    points: Sequence[RooflinePoint],
    *,
    memory_peak: float | None,
    compute_peak: float | None,
    title: str,
    width: float = 640,
    height: float = 380,
) -> Markup:
    """The log-log roofline: the memory roof (rate = intensity x bandwidth) rising to the
    compute roof (a flat line at the compute peak), and each candidate as a point.

    The axes span whole decades around the points and the ridge (where the roofs meet), so
    the distance from a point to the roof above it reads as a ratio anywhere on the chart.
    A roof whose peak was not measured is not drawn. Labels sit right of their points and
    are pushed apart vertically, since the candidates of one problem share its intensity
    and so stand in one column.
    """
    usable = [p for p in points if _usable(p.intensity) and _usable(p.rate)]
    memory = memory_peak if _usable(memory_peak) else None
    compute = compute_peak if _usable(compute_peak) else None
    ridge = compute / memory if compute is not None and memory is not None else None
    xs = [p.intensity for p in usable] + ([ridge] if ridge is not None else [])
    if not xs:
        xs = [1.0]
    x_ticks = log_ticks(min(xs) / 5, max(xs) * 5)
    ys = [p.rate for p in usable] + ([compute] if compute is not None else [])
    if memory is not None:
        ys += [memory * x for x in (min(xs), min(max(xs), ridge or max(xs)))]
    if not ys:
        ys = [1.0]
    y_ticks = log_ticks(min(ys) / 3, max(ys) * 1.5)

    left, right, top, bottom = 64.0, 150.0, 14.0, 42.0
    x_scale = _LogScale(x_ticks[0], x_ticks[-1], left, width - right)
    y_scale = _LogScale(y_ticks[0], y_ticks[-1], height - bottom, top)
    body: list[str] = []
    for tick in x_ticks:
        x = x_scale(tick)
        body.append(
            f'<line class="grid" x1="{_num(x)}" y1="{_num(top)}" x2="{_num(x)}"'
            f' y2="{_num(height - bottom)}"/><text class="tick" x="{_num(x)}"'
            f' y="{_num(height - bottom + 16)}" text-anchor="middle">'
            f"{escape(f'{tick:g}')}</text>"
        )
    for tick in y_ticks:
        y = y_scale(tick)
        body.append(
            f'<line class="grid" x1="{_num(left)}" y1="{_num(y)}" x2="{_num(width - right)}"'
            f' y2="{_num(y)}"/><text class="tick" x="{_num(left - 6)}" y="{_num(y + 4)}"'
            f' text-anchor="end">{escape(_decade(tick))}</text>'
        )
    body.append(
        f'<text class="axis" x="{_num((left + width - right) / 2)}" y="{_num(height - 6)}"'
        ' text-anchor="middle">arithmetic intensity (op/B)</text>'
        f'<text class="axis" transform="translate(14 {_num((top + height - bottom) / 2)})'
        ' rotate(-90)" text-anchor="middle">achieved rate (op/s)</text>'
    )
    body.extend(
        _roofs(
            x_scale,
            y_scale,
            x_ticks,
            y_ticks,
            memory,
            compute,
            ridge,
            [x_scale(p.intensity) for p in usable],
        )
    )
    body.extend(_points(usable, x_scale, y_scale, top, height - bottom))
    return _svg(width, height, title, body, "roofline")


def _roofs(
    x_scale: _LogScale,
    y_scale: _LogScale,
    x_ticks: list[float],
    y_ticks: list[float],
    memory: float | None,
    compute: float | None,
    ridge: float | None,
    point_xs: list[float],
) -> list[str]:
    x_low, x_high = x_ticks[0], x_ticks[-1]
    y_low, y_high = y_ticks[0], y_ticks[-1]
    body: list[str] = []
    if memory is not None:
        # The diagonal enters the plot where it crosses the bottom or the left edge.
        start = max(x_low, y_low / memory)
        end = min(ridge if ridge is not None else x_high, y_high / memory, x_high)
        if start < end:
            x1, y1 = x_scale(start), y_scale(memory * start)
            x2, y2 = x_scale(end), y_scale(memory * end)
            angle = math.degrees(math.atan2(y2 - y1, x2 - x1))
            # The label goes where the line is farthest from the candidates' column.
            t = max(
                (0.08, 0.35, 0.6),
                key=lambda f: min((abs(x1 + (x2 - x1) * f - px) for px in point_xs), default=0.0),
            )
            body.append(
                f'<line class="roof memory" x1="{_num(x1)}" y1="{_num(y1)}" x2="{_num(x2)}"'
                f' y2="{_num(y2)}"/><text class="roof-label" transform="translate('
                f"{_num(x1 + (x2 - x1) * t)} {_num(y1 + (y2 - y1) * t - 6)})"
                f' rotate({angle:.1f})">{escape("memory " + format_si(memory) + "B/s")}</text>'
            )
    if compute is not None:
        start = ridge if ridge is not None else x_low
        y = y_scale(compute)
        body.append(
            f'<line class="roof compute" x1="{_num(x_scale(start))}" y1="{_num(y)}"'
            f' x2="{_num(x_scale(x_high))}" y2="{_num(y)}"/><text class="roof-label"'
            f' x="{_num(x_scale(x_high))}" y="{_num(y - 6)}" text-anchor="end">'
            f"{escape('compute ' + format_si(compute) + 'op/s')}</text>"
        )
    return body


def _points(
    points: Sequence[RooflinePoint],
    x_scale: _LogScale,
    y_scale: _LogScale,
    top: float,
    bottom: float,
) -> list[str]:
    body: list[str] = []
    placed = sorted(
        ((x_scale(p.intensity), y_scale(p.rate), p) for p in points), key=lambda t: t[1]
    )
    label_ys = _spread([y for _, y, _ in placed], 14.0, top + 10, bottom)
    # Winners last, so their marker is drawn over any point it shares a place with.
    for (x, y, point), label_y in sorted(
        zip(placed, label_ys, strict=True), key=lambda t: t[0][2].highlight
    ):
        css = "point winner" if point.highlight else "point"
        label = f"{point.label} (winner)" if point.highlight else point.label
        marker = (
            f'<path d="M{_num(x)} {_num(y - 7)}L{_num(x + 7)} {_num(y)}L{_num(x)} {_num(y + 7)}'
            f'L{_num(x - 7)} {_num(y)}Z"/>'
            if point.highlight
            else f'<circle cx="{_num(x)}" cy="{_num(y)}" r="4.5"/>'
        )
        body.append(
            f'<g class="{css}"><title>{escape(label)}: {escape(format_si(point.rate))}op/s at'
            f" {escape(f'{point.intensity:.3g}')} op/B</title>{marker}"
            f'<line class="leader" x1="{_num(x + 8)}" y1="{_num(y)}" x2="{_num(x + 18)}"'
            f' y2="{_num(label_y - 4)}"/><text class="label" x="{_num(x + 20)}"'
            f' y="{_num(label_y)}">{escape(_fit(label, 150))}</text></g>'
        )
    return body


def _spread(ys: list[float], gap: float, low: float, high: float) -> list[float]:
    """Label baselines near `ys` (sorted ascending), at least `gap` apart and inside
    [low, high] where there is room: pushed down from the top, then up from the bottom."""
    out: list[float] = []
    for y in ys:
        out.append(max(y + 4, low if not out else out[-1] + gap))
    if out and out[-1] > high:
        out[-1] = high
        for i in range(len(out) - 2, -1, -1):
            out[i] = min(out[i], out[i + 1] - gap)
    return out


# -- interval strip -------------------------------------------------------------------------


def interval_chart(
    delta: float, low: float, high: float, *, failed: bool, title: str, width: float = 320
) -> Markup:
    """The change against the baseline as a dot on its interval, on a percent axis that
    always includes 0 (no change), so "slower, and sure of it" reads as a bar entirely
    right of the zero line. An unbounded end is drawn to the edge with an arrow."""
    finite = [v for v in (delta, low, high, 0.0) if math.isfinite(v)]
    span = max(max(abs(v) for v in finite) * 1.15, 0.02)
    left, right, middle, height = 12.0, 12.0, 16.0, 40.0

    def x(value: float) -> float:
        clipped = min(max(value, -span), span)
        return left + (clipped + span) / (2 * span) * (width - left - right)

    css = "interval failed" if failed else "interval"
    body = [
        (
            f'<line class="axis-line" x1="{_num(left)}" y1="{_num(middle)}"'
            f' x2="{_num(width - right)}" y2="{_num(middle)}"/>'
            f'<line class="zero" x1="{_num(x(0))}" y1="4" x2="{_num(x(0))}" y2="28"/>'
            f'<text class="tick" x="{_num(x(0))}" y="38" text-anchor="middle">0%</text>'
        ),
        (
            f'<g class="{css}"><rect x="{_num(x(low))}" y="{_num(middle - 4)}"'
            f' width="{_num(max(x(high) - x(low), 1))}" height="8" rx="4"/>'
        ),
    ]
    for value, edge, direction in ((low, left, -1), (high, width - right, 1)):
        if math.isinf(value):
            body.append(
                f'<path class="arrow" d="M{_num(edge)} {_num(middle)}'
                f'l{_num(-6 * direction)} -5v10z"/>'
            )
    body.append(f'<circle cx="{_num(x(delta))}" cy="{_num(middle)}" r="5"/></g>')
    for value in (-span / 1.15, span / 1.15):
        body.append(
            f'<text class="tick" x="{_num(x(value))}" y="38" text-anchor="middle">'
            f"{escape(f'{value * 100:+.0f}%')}</text>"
        )
    return _svg(width, height, title, body, "interval-chart")


# -- sample distributions -------------------------------------------------------------------


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
    label_width = min(max((len(r.label) for r in rows), default=4) * _CHAR_WIDTH + 12, 200)
    plot_x, plot_width = label_width, max(width - label_width - 16, 80)
    height = top + len(rows) * row_height + axis

    def x(value: float) -> float:
        return plot_x + (value - low) / (high - low) * plot_width

    body: list[str] = []
    for tick in (low + (high - low) * f for f in (0.05, 0.5, 0.95)):
        body.append(
            f'<line class="grid" x1="{_num(x(tick))}" y1="{_num(top)}" x2="{_num(x(tick))}"'
            f' y2="{_num(height - axis)}"/><text class="tick" x="{_num(x(tick))}"'
            f' y="{_num(height - axis + 16)}" text-anchor="middle">'
            f"{escape(format_value(tick))}</text>"
        )
    for i, row in enumerate(rows):
        middle = top + i * row_height + row_height / 2
        samples = [v for v in row.samples if math.isfinite(v) and v > 0]
        css = "strip winner" if row.highlight else "strip"
        body.append(
            f'<g class="{css}"><title>{escape(row.label)}: {len(samples)} samples</title>'
            f'<text class="label" x="{_num(plot_x - 8)}" y="{_num(middle + 4)}"'
            f' text-anchor="end">{escape(_fit(row.label, label_width - 12))}</text>'
        )
        if samples:
            q1, median, q3 = quartiles(samples)
            body.append(
                f'<rect class="box" x="{_num(x(q1))}" y="{_num(middle - 9)}"'
                f' width="{_num(max(x(q3) - x(q1), 1))}" height="18" rx="2"/>'
                f'<line class="median" x1="{_num(x(median))}" y1="{_num(middle - 12)}"'
                f' x2="{_num(x(median))}" y2="{_num(middle + 12)}"/>'
            )
            for k, value in enumerate(_thinned(samples)):
                jitter = ((k * 7) % 9 - 4) * 1.2
                body.append(
                    f'<circle class="dot" cx="{_num(x(min(value, high)))}"'
                    f' cy="{_num(middle + jitter)}" r="2.2"/>'
                )
            beyond = sum(value > high for value in samples)
            if beyond:
                body.append(
                    f'<text class="note" x="{_num(plot_x + plot_width)}" y="{_num(middle - 12)}"'
                    f' text-anchor="end">{beyond} slower \u2192</text>'
                )
        body.append("</g>")
    return _svg(width, height, title, body, "strips")


# -- trend over runs ------------------------------------------------------------------------


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
        f"{_num(x(i))} {_num(y(p.median))}"
        for i, p in enumerate(points)
        if p.median is not None and math.isfinite(p.median)
    ]
    if len(line) > 1:
        body.append(f'<path class="trend-line" d="M{"L".join(line)}"/>')
    previous = None
    for i, point in enumerate(points):
        if point.median is None or not math.isfinite(point.median):
            body.append(
                f'<text class="note" x="{_num(x(i))}" y="{_num(height - bottom - 6)}"'
                ' text-anchor="middle">no result</text>'
            )
            continue
        if point.low is not None and point.high is not None and point.high > point.low:
            body.append(
                f'<path class="whisker" d="M{_num(x(i))} {_num(y(point.low))}'
                f'V{_num(y(point.high))}"/>'
            )
        body.append(
            f'<g class="trend-point"><title>run {escape(point.run)}'
            f"{escape(', ' + point.detail if point.detail else '')}: {escape(point.winner)}"
            f" {escape(format_value(point.median))}</title>"
            f'<circle cx="{_num(x(i))}" cy="{_num(y(point.median))}" r="4"/></g>'
        )
        if point.winner and point.winner != previous:
            near_end = x(i) > width - right - 120
            body.append(
                f'<text class="label" x="{_num(x(i) + (-6 if near_end else 6))}"'
                f' y="{_num(y(point.median) - 8)}"'
                f' text-anchor="{"end" if near_end else "start"}">'
                f"{escape(_fit(point.winner, 120))}</text>"
            )
        previous = point.winner
    body.append(
        f'<text class="axis" transform="translate(14 {_num((top + height - bottom) / 2)})'
        ' rotate(-90)" text-anchor="middle">winner median</text>'
    )
    return _svg(width, height, title, body, "trend")


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
            f'<line class="grid" x1="{_num(left)}" y1="{_num(y(tick))}"'
            f' x2="{_num(width - right)}" y2="{_num(y(tick))}"/><text class="tick"'
            f' x="{_num(left - 6)}" y="{_num(y(tick) + 4)}" text-anchor="end">'
            f"{escape(format_value(tick) if tick else '0')}</text>"
        )
    every = max(1, math.ceil(len(points) * 90 / (width - left - right)))
    for i, point in enumerate(points):
        if i % every == 0 or i == len(points) - 1:
            body.append(
                f'<text class="tick" x="{_num(x(i))}" y="{_num(height - bottom + 16)}"'
                f' text-anchor="middle">{escape(_fit(point.run, 90))}</text>'
            )
    return body


# -- fraction of the roof -------------------------------------------------------------------


def fraction_bar(fraction: float, *, title: str, width: float = 80) -> Markup:
    """A group's fraction of its binding roof as a filled bar, 100% at the right end; a
    fraction past 100% (a roof the kernel beats: the peak probe under-reads) fills the bar
    and shows an overflow mark, rather than growing past its box."""
    height = 10.0
    filled = min(max(fraction, 0.0), 1.0) * width
    body = [
        f'<rect class="track" x="0" y="0" width="{_num(width)}" height="{_num(height)}" rx="3"/>',
        f'<rect class="fill" x="0" y="0" width="{_num(filled)}" height="{_num(height)}" rx="3"/>',
    ]
    if fraction > 1.0:
        body.append(
            f'<path class="over" d="M{_num(width - 6)} 0L{_num(width)} 5L{_num(width - 6)} 10Z"/>'
        )
    return _svg(width, height, title, body, "fraction")
