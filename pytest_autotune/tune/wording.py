"""How counts read in messages, the engine's and the reports' alike (`1 entry`, `2
entries`), and how a long value is cut short in them (`short_repr`).

A module of its own, below every other and free of NumPy: the checks, the cache, the keys
and the records count and name values in their messages, and the reports read the same
functions through `report.figures`."""

from __future__ import annotations

import math


def counted(count: int, noun: str, plural: str | None = None) -> str:
    """`1 entry`, `2 entries`: a count with its noun in the number it takes."""
    return f"{count} {noun if count == 1 else plural or noun + 's'}"


LONG_REPR = 200
"""Characters of a value's repr shown in a message. A 1 MB string (or a set of 100 000
numbers) that differed was printed whole, twice: it flooded the terminal and the JUnit XML,
and the difference could not be found in it."""


def cut(text: str) -> str:
    return text if len(text) <= LONG_REPR else f"{text[:LONG_REPR]}... ({len(text)} characters)"


def short_repr(value: object) -> str:
    """`repr(value)` cut to `LONG_REPR` characters (an array used as a key printed 6,800)."""
    try:
        text = repr(value)
    except ValueError:
        if not isinstance(value, int):
            raise
        # Python prints no int of more than 4300 digits (`sys.set_int_max_str_digits`):
        # the message raised from inside the check, in place of naming a wrong bigint.
        return f"an int of about {int(value.bit_length() * math.log10(2)) + 1} digits"
    return cut(text)
