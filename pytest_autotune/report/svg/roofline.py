"""The log-log roofline: each winner at its arithmetic intensity and rate, under the memory
and compute roofs of its device."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from markupsafe import Markup, escape

from pytest_autotune.report.svg.draw import fit, format_si, log_ticks, num, svg


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


LOG_RANGE = 1e-150, 1e150
"""The values a log axis takes: every rate and intensity a device reaches lies far inside,
and the axes' margins and ridges (a few factors of them) stay inside a float, where a
hand-edited peak of 1e308 made the tick 10**309 overflow and the report a traceback."""


def _usable(value: float | None) -> bool:
    return value is not None and LOG_RANGE[0] < value < LOG_RANGE[1]


def roofline_chart(
    points: Sequence[RooflinePoint],
    *,
    memory_peak: float | None,
    compute_peak: float | None,
    title: str,
    levels: Sequence[tuple[str, float]] = (),
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

    `levels` are the roofs of the cache levels (name, bytes per second) that bound some
    point's problem, drawn beside the outer memory roof: a winner whose working set fits
    in L2 is judged against L2's rate, and under the outer roof alone it could stand above
    every roof drawn.
    """
    usable = [p for p in points if _usable(p.intensity) and _usable(p.rate)]
    memory = memory_peak if _usable(memory_peak) else None
    compute = compute_peak if _usable(compute_peak) else None
    inner = [(name, peak) for name, peak in levels if _usable(peak) and peak != memory]
    diagonals = [("memory", "memory", memory)] if memory is not None else []
    diagonals += [("level", name, peak) for name, peak in inner]
    ridges = [compute / peak for _, _, peak in diagonals] if compute is not None else []
    xs = [p.intensity for p in usable] + ridges
    if not xs:
        xs = [1.0]
    x_ticks = log_ticks(min(xs) / 5, max(xs) * 5)
    ys = [p.rate for p in usable] + ([compute] if compute is not None else [])
    for _, _, peak in diagonals:
        end = min(max(xs), compute / peak) if compute is not None else max(xs)
        ys += [peak * x for x in (min(xs), end)]
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
            f'<line class="grid" x1="{num(x)}" y1="{num(top)}" x2="{num(x)}"'
            f' y2="{num(height - bottom)}"/><text class="tick" x="{num(x)}"'
            f' y="{num(height - bottom + 16)}" text-anchor="middle">'
            f"{escape(f'{tick:g}')}</text>"
        )
    for tick in y_ticks:
        y = y_scale(tick)
        body.append(
            f'<line class="grid" x1="{num(left)}" y1="{num(y)}" x2="{num(width - right)}"'
            f' y2="{num(y)}"/><text class="tick" x="{num(left - 6)}" y="{num(y + 4)}"'
            f' text-anchor="end">{escape(_decade(tick))}</text>'
        )
    body.append(
        f'<text class="axis" x="{num((left + width - right) / 2)}" y="{num(height - 6)}"'
        ' text-anchor="middle">arithmetic intensity (op/B)</text>'
        f'<text class="axis" transform="translate(14 {num((top + height - bottom) / 2)})'
        ' rotate(-90)" text-anchor="middle">achieved rate (op/s)</text>'
    )
    body.extend(
        _roofs(
            x_scale,
            y_scale,
            x_ticks,
            y_ticks,
            diagonals,
            compute,
            min(ridges, default=None),
            [x_scale(p.intensity) for p in usable],
        )
    )
    body.extend(_points(usable, x_scale, y_scale, top, height - bottom))
    return svg(width, height, title, body, "roofline")


def _roofs(
    x_scale: _LogScale,
    y_scale: _LogScale,
    x_ticks: list[float],
    y_ticks: list[float],
    diagonals: list[tuple[str, str, float]],
    compute: float | None,
    ridge: float | None,
    point_xs: list[float],
) -> list[str]:
    """The memory roofs (`diagonals`: CSS class, label and bytes per second, each ending
    where it meets the compute roof), then the compute roof from the leftmost `ridge`."""
    x_low, x_high = x_ticks[0], x_ticks[-1]
    y_low, y_high = y_ticks[0], y_ticks[-1]
    body: list[str] = []
    for css, name, memory in diagonals:
        # The diagonal enters the plot where it crosses the bottom or the left edge.
        start = max(x_low, y_low / memory)
        own_ridge = compute / memory if compute is not None else None
        end = min(own_ridge if own_ridge is not None else x_high, y_high / memory, x_high)
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
                f'<line class="roof {css}" x1="{num(x1)}" y1="{num(y1)}" x2="{num(x2)}"'
                f' y2="{num(y2)}"/><text class="roof-label" transform="translate('
                f"{num(x1 + (x2 - x1) * t)} {num(y1 + (y2 - y1) * t - 6)})"
                f' rotate({angle:.1f})">{escape(name + " " + format_si(memory) + "B/s")}</text>'
            )
    if compute is not None:
        start = ridge if ridge is not None else x_low
        y = y_scale(compute)
        body.append(
            f'<line class="roof compute" x1="{num(x_scale(start))}" y1="{num(y)}"'
            f' x2="{num(x_scale(x_high))}" y2="{num(y)}"/><text class="roof-label"'
            f' x="{num(x_scale(x_high))}" y="{num(y - 6)}" text-anchor="end">'
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
            f'<path d="M{num(x)} {num(y - 7)}L{num(x + 7)} {num(y)}L{num(x)} {num(y + 7)}'
            f'L{num(x - 7)} {num(y)}Z"/>'
            if point.highlight
            else f'<circle cx="{num(x)}" cy="{num(y)}" r="4.5"/>'
        )
        body.append(
            f'<g class="{css}"><title>{escape(label)}: {escape(format_si(point.rate))}op/s at'
            f" {escape(f'{point.intensity:.3g}')} op/B</title>{marker}"
            f'<line class="leader" x1="{num(x + 8)}" y1="{num(y)}" x2="{num(x + 18)}"'
            f' y2="{num(label_y - 4)}"/><text class="label" x="{num(x + 20)}"'
            f' y="{num(label_y)}">{escape(fit(label, 150))}</text></g>'
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


def _decade(value: float) -> str:
    """A power of ten as an axis label: `1 G`, `10 G`, `100 G` (no `1.00 G`)."""
    text = format_si(value)
    number, prefix = text.split(" ")
    return f"{float(number):g} {prefix}".strip()
