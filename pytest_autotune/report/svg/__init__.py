"""The report's charts as inline SVG, drawn here rather than by a plotting library.

The report must open anywhere, offline, years later: no script from a CDN, no image files
beside it, no matplotlib in the dependencies. A bar chart, a log-log roofline and an
interval strip are a few rectangles, lines and labels, so we draw them ourselves.

Every chart is returned as `markupsafe.Markup`, so the template inserts it as markup; every
piece of text in it (candidate names are the user's text) goes through `escape` first, and
every number is formatted here, so nothing else can reach the markup.

One module a chart (`bars`, `roofline`, `samples`, `trend`), and `draw` for what they share.
"""

from __future__ import annotations

from pytest_autotune.report.svg.bars import Bar, bar_chart, fraction_bar, interval_chart
from pytest_autotune.report.svg.draw import format_si, linear_ticks, log_ticks
from pytest_autotune.report.svg.roofline import RooflinePoint, roofline_chart
from pytest_autotune.report.svg.samples import SampleRow, quartiles, strip_chart
from pytest_autotune.report.svg.trend import TrendPoint, trend_chart

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
