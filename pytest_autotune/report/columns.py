"""Text in columns as a terminal shows it: a wide character (CJK, most emoji) takes two
columns and a combining mark none, so padding by `len` left a candidate named `累加` one
column short per character and shifted every cell after it, and every row under it."""

from __future__ import annotations

import unicodedata

_ZERO_WIDTH = frozenset({"Mn", "Me", "Cf"})
"""Combining marks, enclosing marks and format characters (a zero-width joiner)."""


def width(text: str) -> int:
    """The columns `text` takes in a terminal."""
    return sum(_char_width(char) for char in text)


def _char_width(char: str) -> int:
    if unicodedata.category(char) in _ZERO_WIDTH:
        return 0
    return 2 if unicodedata.east_asian_width(char) in ("W", "F") else 1


def ljust(text: str, columns: int) -> str:
    """`text` padded on the right to `columns` terminal columns."""
    return text + " " * (columns - width(text))


def rjust(text: str, columns: int) -> str:
    """`text` padded on the left to `columns` terminal columns."""
    return " " * (columns - width(text)) + text
