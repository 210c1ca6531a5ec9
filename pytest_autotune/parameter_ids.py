"""How pytest's parametrize is read as pytest reads it: its arguments, given by position or
keyword, and the id it gives each value (an explicit one, an `ids=` function's, non-ASCII
escaped); and a candidate name, or a value, as a message shows it."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Iterable
from typing import Any

import pytest


def argname_list(names: Any) -> list[str]:
    return [n.strip() for n in names.split(",")] if isinstance(names, str) else list(names)


def shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def printable(name: str) -> str:
    """A candidate name safe to print: control characters (a terminal escape, a newline)
    become their backslash escapes; other characters, non-ASCII letters included, stay."""
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in name)


_PARAMETRIZE = inspect.signature(pytest.Metafunc.parametrize)
"""How pytest binds a parametrize mark's arguments: read once, not per mark and test."""


def parametrize_arguments(marker: pytest.Mark) -> tuple[Any, Any, Any]:
    """A parametrize mark's argument names, values and `ids`, each given by position or by
    keyword (`parametrize(argnames="candidate", argvalues=[...])`, whose mark has no
    positional arguments: reading them by position stopped the collection of the whole
    session with an IndexError from this module). Nothing where they do not bind, as
    `Metafunc.parametrize` takes them: pytest says why when it parametrizes."""
    try:
        bound = _PARAMETRIZE.bind_partial(None, *marker.args, **marker.kwargs).arguments
    except TypeError:
        return (), (), None
    return bound.get("argnames", ()), bound.get("argvalues", ()), bound.get("ids")


def is_param(value: object) -> bool:
    """Whether a parametrize value is a `pytest.param(...)`."""
    return hasattr(value, "values") and hasattr(value, "marks")


def explicit_ids(values: Iterable[Any], ids: Any) -> list[str | None]:
    """The id each value of a parametrize mark is given by the user: its `pytest.param`'s
    `id=`, else its place in an `ids=` list; None where neither names it (an `ids=`
    function names it when called, `id_of`)."""
    listed = ids if isinstance(ids, (list, tuple)) else ()
    found: list[str | None] = []
    for i, value in enumerate(values):
        own = value.id if is_param(value) else None
        found.append(own if own is not None or i >= len(listed) else listed[i])
    return found


def escaped(name: str) -> str:
    """`name` as pytest writes it in an id: non-ASCII characters escaped (`\\xe9`)."""
    return name.encode("unicode_escape").decode("ascii")


def id_of(ids: Callable[[Any], object], value: Any) -> object:
    """What an `ids=` function names a value, as pytest calls it: None (pytest's own id)
    where it returns None or raises (pytest then reports the error on collection)."""
    try:
        return ids(value)
    except Exception:
        return None
