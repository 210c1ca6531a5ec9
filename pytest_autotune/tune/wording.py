"""How counts read in messages, the engine's and the reports' alike: `1 entry`, `2 entries`.

A module of its own, below every other: the checks, the cache and the records count in
their messages, and the reports read the same function through `report.figures`."""

from __future__ import annotations


def counted(count: int, noun: str, plural: str | None = None) -> str:
    """`1 entry`, `2 entries`: a count with its noun in the number it takes."""
    return f"{count} {noun if count == 1 else plural or noun + 's'}"
