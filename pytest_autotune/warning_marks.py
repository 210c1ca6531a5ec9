"""A candidate's own `filterwarnings` marks, applied where another candidate's test runs it.

A group is checked and tuned inside whichever of its tests runs first, under that test's
warning filters: a warning that a candidate's own `pytest.param(..., marks=
pytest.mark.filterwarnings("ignore:..."))` allows failed that candidate under
`filterwarnings = error` when another candidate's test tuned the group (and, as the
reference of a plain run, had it passed over in silence for the next candidate)."""

from __future__ import annotations

import builtins
import contextlib
import importlib
import re
import warnings
from collections.abc import Iterable, Iterator, Mapping
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import cast

_ACTIONS = ("default", "always", "ignore", "module", "once", "error")

Filter = tuple[str, str, type[Warning], str, int]
"""The arguments of `warnings.filterwarnings`: action, message, category, module, lineno."""


def parse_filter(arg: str, escape: bool = False) -> Filter:
    """The arguments of `warnings.filterwarnings` that a mark's `action:message:category:
    module:lineno` means, read as pytest reads a mark's (message and module are regular
    expressions, not escaped) or, `escape`, a `-W` option's (matched as written). A
    ValueError for one pytest would refuse: it says so itself at the candidate's own test."""
    parts = arg.split(":")
    if len(parts) > 5:
        raise ValueError(f"too many fields in warning filter {arg!r}")
    padded = [*parts, *[""] * (5 - len(parts))]
    action, message, category, module, lineno = (part.strip() for part in padded)
    number = int(lineno) if lineno else 0
    if number < 0:
        # pytest refuses it too; `warnings` would assert inside the candidate's call.
        raise ValueError(f"negative line number {lineno!r} in warning filter {arg!r}")
    if escape:
        message = re.escape(message) if message else message
        module = re.escape(module) + r"\Z" if module else module
    return (
        _action(action),
        message,
        _category(category),
        module,
        number,
    )


def _action(name: str) -> str:
    """As `warnings` reads `-W`: empty is `default`, `all` is `always`, a prefix names one."""
    if not name:
        return "default"
    if name == "all":
        return "always"
    for action in _ACTIONS:
        if action.startswith(name):
            return action
    raise ValueError(f"invalid warning action {name!r}")


def _category(name: str) -> type[Warning]:
    if not name:
        return Warning
    if "." in name:
        module, _, attribute = name.rpartition(".")
        found = getattr(importlib.import_module(module), attribute)
    else:
        found = getattr(builtins, name)
    if not (isinstance(found, type) and issubclass(found, Warning)):
        raise ValueError(f"{name!r} is not a Warning class")
    return found


def parse_filters(args: Iterable[str], escape: bool = False) -> tuple[Filter, ...]:
    """Every filter of `args` that reads; one that does not is left to the candidate's own
    test, where pytest names it."""
    parsed = []
    for arg in args:
        try:
            parsed.append(parse_filter(arg, escape))
        except (ValueError, ImportError, AttributeError):
            continue
    return tuple(parsed)


def project_filters(ini: Iterable[str], options: Iterable[str]) -> frozenset[Filter]:
    """The filters every test runs under: the ini's `filterwarnings` and the `-W` options.
    `warnings` keeps a filter once, so a mark that repeats one of them holds the project's
    own: taken away with the running test's marks (`applied`), it left every other
    candidate without it."""
    return frozenset(parse_filters(ini) + parse_filters(options, escape=True))


@contextlib.contextmanager
def applied(filters: tuple[Filter, ...], instead_of: tuple[Filter, ...] = ()) -> Iterator[None]:
    """`filters` in place of the running test's own marks' (`instead_of`), in the order
    pytest applies a test's marks (each in front of the ones before it), over the
    project's; the running test's filters again after. Without taking the running test's
    marks away, one candidate's `ignore::DeprecationWarning` licensed every candidate that
    its test tuned."""
    with warnings.catch_warnings():
        for action, message, category, module, lineno in instead_of:
            # Added again, it moves to the front in the form `warnings` keeps it in (the
            # version it bumps makes every module forget what it was shown), and goes.
            warnings.filterwarnings(action, message, category, module, lineno)  # type: ignore[arg-type]
            del cast("list[object]", warnings.filters)[0]  # a list; typeshed says Sequence
        for action, message, category, module, lineno in filters:
            warnings.filterwarnings(action, message, category, module, lineno)  # type: ignore[arg-type]
        yield


@dataclass(frozen=True)
class MarkFilters:
    """The filters of the running test's own marks (but those the project sets too,
    `project_filters`), and those of each candidate whose test's marks differ (by name):
    only those candidates pay for a filter scope."""

    running: tuple[Filter, ...]
    others: Mapping[str, tuple[Filter, ...]]

    def scope(self, name: str) -> AbstractContextManager[None] | None:
        """Where candidate `name` runs under its own marks; None where it needs none."""
        filters = self.others.get(name)
        return None if filters is None else applied(filters, self.running)


__all__ = ["Filter", "MarkFilters", "applied", "parse_filter", "parse_filters", "project_filters"]
