"""The plugin's wrappers of `pytest_generate_tests`, which see every plugin's
parametrizations of a test of the plugin: the names it does not ask for
(`UnrequestedParameters`), and the candidates a hook called after this plugin's gives
(`CandidatesOfEveryHook`)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import replace
from typing import Any

import pytest

from pytest_autotune.collection import (
    AWAITING,
    CANDIDATE_PLACES,
    FUNCTIONS,
    UNREQUESTED,
    Unrequested,
    function_nodeid,
)
from pytest_autotune.function_spec import marker_options, record_function
from pytest_autotune.parameter_ids import argname_list, is_param
from pytest_autotune.parametrized_candidates import given_twice


class UnrequestedParameters:
    """Finds the `Unrequested` parametrizations of each marked test function, and of each
    test of the `autotune` fixture (whose repetitions tune one set at one key): a wrapper of
    `pytest_generate_tests`, so that it sees the parametrizations every plugin makes,
    those of `trylast` hooks (pytest-repeat's) included, and which names the test asked for
    before any was added."""

    @pytest.hookimpl(hookwrapper=True)
    def pytest_generate_tests(self, metafunc: pytest.Metafunc) -> Iterator[None]:
        marked = metafunc.definition.get_closest_marker("autotune") is not None
        if not marked and "autotune" not in metafunc.fixturenames:
            yield
            return
        requested = frozenset(metafunc.fixturenames)
        found: list[Unrequested] = []
        parametrize = metafunc.parametrize

        def recorded(argnames: Any, argvalues: Any, *args: Any, **kwargs: Any) -> None:
            names = argname_list(argnames)
            if len(names) == 1 and names[0] not in requested:
                ids = kwargs.get("ids", args[1] if len(args) > 1 else None)
                found.append(Unrequested(names[0], ids))
            parametrize(argnames, argvalues, *args, **kwargs)

        with _parametrize_through(metafunc, recorded):
            yield
        if found:
            unrequested = metafunc.config.stash.setdefault(UNREQUESTED, {})
            unrequested[function_nodeid(metafunc.definition)] = tuple(found)


class CandidatesOfEveryHook:
    """Reads a marked test's candidates once every `pytest_generate_tests` hook has run,
    where a hook called after this plugin's gives them: a trylast hook, or a plugin loaded
    with `-p` (registered before this one, so called after it). This plugin parametrized
    `candidate` to fail with "give the candidates", and the hook's own parametrize then
    stopped the session at pytest's "duplicate parametrization of 'candidate'".

    A second parametrize of `candidate` (such a hook's beside the marker's `candidates=`,
    or a parametrize mark beside a hook's) is not made: it would stop the session the same
    way; the test's items fail saying where the candidates come from twice."""

    @pytest.hookimpl(hookwrapper=True)
    def pytest_generate_tests(self, metafunc: pytest.Metafunc) -> Iterator[None]:
        marked = metafunc.definition.get_closest_marker("autotune") is not None
        if not marked or "candidate" not in metafunc.fixturenames:
            yield
            return
        given: list[str] = []
        refused: list[str] = []
        parametrize = metafunc.parametrize

        def once(argnames: Any, argvalues: Any, *args: Any, **kwargs: Any) -> None:
            if "candidate" in argname_list(argnames):
                source = "hook" if kwargs.get("_param_mark") is None else "mark"
                if given:
                    refused.append(source)
                    _the_others_of(parametrize, argnames, argvalues, *args, **kwargs)
                    return
                given.append(source)
                place = (
                    candidate_place(metafunc) if argname_list(argnames) == ["candidate"] else None
                )
                if place is not None:
                    places = metafunc.config.stash.setdefault(CANDIDATE_PLACES, {})
                    places[function_nodeid(metafunc.definition)] = place
            parametrize(argnames, argvalues, *args, **kwargs)

        with _parametrize_through(metafunc, once):
            yield
        nodeid = function_nodeid(metafunc.definition)
        awaiting = metafunc.config.stash.setdefault(AWAITING, set())
        if nodeid in awaiting:
            awaiting.discard(nodeid)
            record_function(metafunc)
        functions = metafunc.config.stash.get(FUNCTIONS, {})
        if refused and nodeid in functions:
            options, _ = marker_options(metafunc.definition)
            first = "candidates" if "candidates" in options else given[0]
            spec = functions[nodeid]
            error = f"{nodeid}: {given_twice(first, refused[0])}"
            functions[nodeid] = replace(spec, error=spec.error or error)


def candidate_place(metafunc: pytest.Metafunc) -> int | None:
    """The place in each item's parameter ids (pytest's `CallSpec2._idlist`, joined with
    '-' into the item's id) that a parametrize of `candidate` made now takes: one id is
    appended to every call per parametrize, so it is the number each call has. None where
    the calls have not one number (a `pytest.HIDDEN_PARAM` id adds none)."""
    counts = {len(getattr(c, "_idlist", ())) for c in getattr(metafunc, "_calls", ())}
    return (counts.pop() if len(counts) == 1 else None) if counts else 0


def _the_others_of(
    parametrize: Callable[..., None], argnames: Any, argvalues: Any, *args: Any, **kwargs: Any
) -> None:
    """The names a refused parametrize of `candidate` gives beside it (`("candidate", "n")`),
    parametrized with its first row's values: dropped with `candidate`, the test's items
    failed at set-up with "fixture 'n' not found" and never reached the message saying
    that the candidates come from two places. One row, as the items only fail."""
    names = argname_list(argnames)
    others = [i for i, name in enumerate(names) if name != "candidate"]
    rows = list(argvalues)
    if not others or not rows:
        return
    first = rows[0].values if is_param(rows[0]) else rows[0]
    try:
        values = [first[i] for i in others]
    except (TypeError, IndexError):
        return  # a row pytest would refuse itself: the items fail on the message alone
    indirect = kwargs.pop("indirect", args[0] if args else False)
    if not isinstance(indirect, bool):
        indirect = [name for name in indirect if name != "candidate"]
    row = values[0] if len(others) == 1 else tuple(values)
    # Not as the refused mark's (`_param_mark`): pytest keeps the ids it makes for a mark on
    # the mark, for every test it marks, and this row's one id ended the collection of a
    # module whose `pytestmark` gives the rows to another test ("2 parameter sets
    # specified, with different number of ids: 1").
    scope = {k: v for k, v in kwargs.items() if k == "scope"}
    parametrize(",".join(names[i] for i in others), [row], indirect=indirect, **scope)


@contextmanager
def _parametrize_through(metafunc: pytest.Metafunc, watch: Callable[..., None]) -> Iterator[None]:
    """`metafunc.parametrize` replaced by `watch` for the call of one hook: Metafunc has no
    hook of its own for a parametrization. The method it replaced (another wrapper's
    watch) is put back after, not dropped."""
    previous = vars(metafunc).get("parametrize")
    setattr(metafunc, "parametrize", watch)  # noqa: B010 - a method, not a field
    try:
        yield
    finally:
        if previous is None:
            delattr(metafunc, "parametrize")
        else:
            setattr(metafunc, "parametrize", previous)  # noqa: B010 - as above
