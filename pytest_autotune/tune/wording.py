"""How counts read in messages, the engine's and the reports' alike (`1 entry`, `2
entries`), and how a long value is cut short in them (`short_repr`, `first_line`).

A module of its own, below every other and free of NumPy: the checks, the cache, the keys
and the records count and name values in their messages, and the reports read the same
functions through `report.figures`."""

from __future__ import annotations

import enum
import math
from typing import TypeVar

Choice = TypeVar("Choice", bound=enum.Enum)


def counted(count: int, noun: str, plural: str | None = None) -> str:
    """`1 entry`, `2 entries`: a count with its noun in the number it takes."""
    return f"{count} {noun if count == 1 else plural or noun + 's'}"


def chosen(choices: type[Choice], value: str, source: str, what: str) -> Choice:
    """The member of the string enum `choices` that `value` names, in any case and spacing
    (a setting read from a file or the environment: " Full"); a ValueError that says where
    the value came from (`source`) and lists the choices otherwise."""
    try:
        return choices(value.strip().lower())
    except ValueError:
        names = ", ".join(member.value for member in choices)
        raise ValueError(f"{source}: {what} must be one of {names}, got {value!r}") from None


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


def first_line(text: str, rest: str) -> str:
    """`text`'s first line, saying how many more it has and where they are (`rest`), for a
    message that gives several candidates' errors one after another. Numba's TypingError
    runs to 30 lines (the overloads it tried, the source): given whole, the next
    candidate's name came 30 lines down, in the middle of a line."""
    lines = text.strip().splitlines()
    if len(lines) <= 1:
        return text.strip()
    return f"{lines[0]} ({counted(len(lines) - 1, 'more line')} in {rest})"
