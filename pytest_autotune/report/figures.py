"""Figures as people read them, shared by the gate's messages and every report: a change with
its sign (`+8.0%`), a fraction of a roof, a change with its interval, a count of things, an
amount with an SI prefix (`format_si`).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Protocol

# Defined with the engine's messages, which count too; every report reads it from here.
from pytest_autotune.tune.wording import counted as counted

if TYPE_CHECKING:
    from pytest_autotune.tune.peaks import Peaks

_SI_PREFIXES = ("", "k", "M", "G", "T", "P", "E")


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


def level_roofs(peaks: Peaks) -> tuple[tuple[str, str], ...]:
    """Each cache level named with its capacity (`L2 (1.05 MB)`), and the roof of a problem
    that fits it (`194 GB/s`): the rate a group's roof names when that level binds it, shown
    beside the outer memory's rates wherever a device's peaks are."""
    return tuple(
        (
            f"{level.name} ({format_si(level.capacity)}B)",
            format_si(peaks.memory_roof(level.capacity).peak) + "B/s",
        )
        for level in peaks.levels
    )


class Interval(Protocol):
    """A change and the interval it was judged by, as fractions (`gate.Comparison`)."""

    @property
    def delta(self) -> float: ...

    @property
    def low(self) -> float: ...

    @property
    def high(self) -> float: ...


def format_change(fraction: float) -> str:
    """A relative change with its sign, `+8.0%`; an unbounded end of an interval is `+inf%`."""
    if math.isinf(fraction):
        return "+inf%" if fraction > 0 else "-inf%"
    percent = round(fraction * 100, 1)
    if abs(percent) >= 1000:  # an interval's far end: "+9895%", its tenths say nothing
        return f"{percent:+.0f}%"
    return f"{percent + 0.0:+.1f}%"  # + 0.0 turns a rounded -0.0 into 0.0: no "-0.0%"


def format_fraction(fraction: float | None) -> str:
    """A fraction of a roof or a threshold as a percentage, `-` when there is none."""
    return "-" if fraction is None else f"{fraction * 100:.1f}%"


def format_interval(comparison: Interval) -> str:
    """`+8.0% [+2.1%, +14.2%]`: the change and the interval the gate judged it by.

    An interval without bounds, which a side of a single sample gives (its error cannot be
    measured, so it is infinite), reads `+8.0% [no interval]`: `[-100.0%, +inf%]` read as
    a measured range of every change from "takes no time" to "never ends"."""
    if math.isinf(comparison.high):
        return f"{format_change(comparison.delta)} [no interval]"
    return (
        f"{format_change(comparison.delta)}"
        f" [{format_change(comparison.low)}, {format_change(comparison.high)}]"
    )
