"""Outputs that hold others: tuples and lists item by item, mappings key by key, objects
attribute by attribute, each part compared by the comparison of outputs (`comparison`) that
the caller passes in with the `Rules`: this module sits below it."""

from __future__ import annotations

import contextlib
import enum
import types
from collections.abc import Mapping
from contextvars import ContextVar
from typing import Any

from pytest_autotune.tune.array_comparison import Rules, differing_numbers
from pytest_autotune.tune.differences import LISTED_DIFFERENCES, mismatch
from pytest_autotune.tune.wording import LONG_REPR, counted, short_repr


def plain_attributes(value: object) -> dict[str, Any]:
    """The attributes `value` compares by: those of a `SimpleNamespace`, or of an object of
    a class of one's own that keeps `object`'s `==` (identity); empty for any other value.
    A SimpleNamespace's `==` compares its attributes with `==`, which raised on arrays
    among them; identity told a right candidate's struct of results from the reference's,
    always, with two `<... object at 0x...>` for a message. An Enum member, a callable or
    an object of no attributes keeps its `==`."""
    kind = type(value)
    if kind is not types.SimpleNamespace and (
        kind.__eq__ is not object.__eq__
        or kind.__module__ == "builtins"
        or isinstance(value, enum.Enum)
        or callable(value)
    ):
        return {}
    return _attributes(value)


def _attributes(value: object) -> dict[str, Any]:
    """An object's attributes: its `__dict__`, and the `__slots__` of its classes that are
    set. A class of `__slots__` (no `__dict__`), as a struct of results made many times
    often is, was still compared by identity, every right candidate failing."""
    attributes = getattr(value, "__dict__", None)
    found = dict(attributes) if isinstance(attributes, dict) else {}
    for kind in type(value).__mro__:
        slots = kind.__dict__.get("__slots__", ())
        for name in (slots,) if isinstance(slots, str) else slots:
            if name not in ("__dict__", "__weakref__") and name not in found:
                # A private slot's descriptor goes by its mangled name (`_Class__name`).
                private = name.startswith("__") and not name.endswith("__")
                stored = f"_{kind.__name__.lstrip('_')}{name}" if private else name
                with contextlib.suppress(AttributeError):  # a slot never set
                    found[name] = getattr(value, stored)
    return found


def compare_attributes(
    reference: object,
    actual: object,
    where: str,
    rules: Rules,
) -> list[str]:
    """Two objects of one type, attribute by attribute (`plain_attributes`), each compared as
    an output of its own, tolerances included, and named `output.name`. A pair met again
    inside its own comparison (a node's `parent` that points back at it) adds nothing: the
    comparison that met it first reports what differs."""
    pair = (id(reference), id(actual))
    comparing = _COMPARING.get()
    if pair in comparing:
        # Followed again, it recursed until Python's limit: a RecursionError out of the
        # check, where identity's `==` had at least said "differs".
        return []
    token = _COMPARING.set(comparing | {pair})
    try:
        return _compare_attribute_values(reference, actual, where, rules)
    finally:
        _COMPARING.reset(token)


_COMPARING: ContextVar[frozenset[tuple[int, int]]] = ContextVar("_COMPARING", default=frozenset())
"""The pairs of objects (`id`s) whose attributes are being compared, outermost first: per
thread and task, as checks run in any thread of a library's program."""


def _compare_attribute_values(
    reference: object,
    actual: object,
    where: str,
    rules: Rules,
) -> list[str]:
    ref_vars, act_vars = _attributes(reference), _attributes(actual)
    problems: list[str] = []
    missing = [name for name in ref_vars if name not in act_vars]
    unexpected = [name for name in act_vars if name not in ref_vars]
    if missing:
        problems.append(f"{where}: missing attributes {short_repr(missing)}")
    if unexpected:
        problems.append(f"{where}: unexpected attributes {short_repr(unexpected)}")
    for name, ref_value in ref_vars.items():
        if name in act_vars:
            problems += rules.compare(ref_value, act_vars[name], f"{where}.{name}")
    return problems


def compare_sequences(
    reference: tuple[Any, ...] | list[Any],
    actual: object,
    where: str,
    rules: Rules,
) -> list[str]:
    """A tuple or list reference against any output: item by item, named by position."""
    # A tuple and a list are different results: a caller may index or unpack them alike,
    # but one may also hash the tuple or append to the list.
    if not isinstance(actual, tuple if isinstance(reference, tuple) else list):
        return [mismatch(where, reference, actual)]
    named = hasattr(reference, "_fields") or hasattr(actual, "_fields")
    if named and type(reference) is not type(actual):
        # A NamedTuple's caller reads `result.mean`, which a plain tuple lacks.
        return [mismatch(where, reference, actual)]
    if len(reference) != len(actual):
        return [f"{where}: expected {counted(len(reference), 'item')}, got {len(actual)}"]
    differing = differing_numbers(reference, actual, rules)
    indices = range(len(reference)) if differing is None else differing
    problems: list[str] = []
    for i in indices:
        if differing is not None and len(problems) > LISTED_DIFFERENCES:
            # A number known to differ, only counted past here (`compare_outputs`): a
            # placeholder stands for it, and the slow element-wise wording is skipped.
            problems.append(f"{where}[{i}]: differs")
            continue
        ref_item, act_item = reference[i], actual[i]
        problems += rules.compare(ref_item, act_item, f"{where}[{i}]")
    return problems


def compare_mappings(
    reference: Mapping[Any, Any],
    actual: Mapping[Any, Any],
    where: str,
    rules: Rules,
) -> list[str]:
    missing = [k for k in reference if k not in actual]
    unexpected = [k for k in actual if k not in reference]
    problems: list[str] = []
    # Each list cut short, its length said: 100 000 keys of the wrong type flooded it.
    if missing:
        many = f"{len(missing)} " if len(repr(missing)) > LONG_REPR else ""
        problems.append(f"{where}: missing {many}keys {short_repr(missing)}")
    if unexpected:
        many = f"{len(unexpected)} " if len(repr(unexpected)) > LONG_REPR else ""
        problems.append(f"{where}: unexpected {many}keys {short_repr(unexpected)}")
    keys = [k for k in reference if k in actual]
    # Numbers compare as arrays, as a list's do: 100 000 of them took some 4 s one by one.
    values = [reference[k] for k in keys], [actual[k] for k in keys]
    differing = differing_numbers(*values, rules)
    listed = 0
    for i in range(len(keys)) if differing is None else differing:
        k = keys[i]
        if differing is not None and listed > LISTED_DIFFERENCES:
            problems.append(f"{where}[{k!r}]: differs")  # only counted (`compare_outputs`)
            continue
        found = rules.compare(reference[k], actual[k], f"{where}[{k!r}]")
        listed += len(found)
        problems += found
    return problems
