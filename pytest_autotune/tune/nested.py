"""The values nested in a call's inputs or outputs: the value itself, then the items of its
tuples, lists and mappings, a few levels deep. What the calibration read reads
(`calibration.input_arrays`), where device `auto` puts a group (`input_devices`) and what
the CPU client waits for (`backends.cpu`) are each looked for among them; an object's
attributes are not looked into."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

DEPTH = 4
"""How many levels of containers are looked into: `(x, [y, {"z": z}])` is three."""


def nested_values(value: Any, depth: int = DEPTH, most: int | None = None) -> Iterator[Any]:
    """`value`, then every value its tuples, lists and mappings hold, `depth` levels down,
    at most `most` items of each container (all where None: a list of a million floats
    holds no array worth looking for past its first items)."""
    yield value
    if depth <= 0:
        return
    if isinstance(value, (tuple, list)):
        items: Any = value if most is None else value[:most]
    elif isinstance(value, Mapping):
        items = list(value.values())
        items = items if most is None else items[:most]
    else:
        return
    for item in items:
        yield from nested_values(item, depth - 1, most)


__all__ = ["DEPTH", "nested_values"]
