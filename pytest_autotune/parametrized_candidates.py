"""The candidates that pytest parametrizes a marked test over, where the marker's
`candidates=` does not give them: a `@pytest.mark.parametrize('candidate', [...])` mark's,
a `pytest_generate_tests` hook's, or a `candidate` fixture's params (which cannot be
used); and why a test given them by two places fails."""

from __future__ import annotations

import enum
import re
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from pytest_autotune.parameter_ids import (
    argname_list,
    explicit_ids,
    id_of,
    is_param,
    parametrize_arguments,
    printable,
)

_SOURCES = {
    "candidates": "the marker's candidates=",
    "hook": "a pytest_generate_tests hook",
    "mark": "@pytest.mark.parametrize('candidate', ...)",
}


def given_twice(first: str, second: str) -> str:
    """Why a test given its candidates by two places (`_SOURCES`) fails, in one wording
    whichever of them pytest called first."""
    if first == second:
        both = "two pytest_generate_tests hooks" if first == "hook" else "two parametrize marks"
    else:
        both = f"{_SOURCES[first]} and {_SOURCES[second]}"
    return (
        f"{both} both parametrize `candidate`, which pytest refuses, stopping the whole"
        ' session at its "duplicate parametrization"; give the candidates in one place'
    )


def beside_a_hook(
    metafunc: pytest.Metafunc, candidates: object
) -> tuple[tuple[tuple[str, Callable[..., Any]], ...] | None, object, str | None]:
    """The candidates a `pytest_generate_tests` hook gave (`_generated_candidates`), the
    marker's, and the error of the two: where both give them, the marker's are dropped, as
    the plugin's parametrize of them would stop the session at pytest's "duplicate
    parametrization of 'candidate'", naming neither."""
    generated, error = _generated_candidates(metafunc)
    if generated is not None and candidates is not None:
        return (
            generated,
            None,
            given_twice("hook", "candidates"),
        )
    return generated, candidates, error


def _generated_candidates(
    metafunc: pytest.Metafunc,
) -> tuple[tuple[tuple[str, Callable[..., Any]], ...] | None, str | None]:
    """The candidates a `pytest_generate_tests` hook (a conftest's, called before this
    plugin's, or one after it, read by `generate_tests.CandidatesOfEveryHook` once every
    hook has run) gave with `metafunc.parametrize("candidate", ...)`, named by their ids in the
    items' ids, and why they cannot be used; (None, None) where no hook gave them. (Read
    as no candidates, they were parametrized again, and pytest's "duplicate
    parametrization" stopped the collection of every test of the session.)

    pytest keeps each call's parameters and ids in `Metafunc._calls`, one id per parametrize
    in order (`CallSpec2._idlist`): the candidate's is the one place whose id follows the
    candidate, a different id for each (a fixture's params vary apart from it)."""
    calls = [c for c in getattr(metafunc, "_calls", ()) if "candidate" in params(c)]
    if not calls or fixture_params(metafunc):
        return None, None  # none, or a fixture's params (`function_spec._parametrize` says why not)
    if not _direct(metafunc, calls):
        return (), (
            "a pytest_generate_tests hook parametrizes `candidate` indirectly, through a"
            " fixture: the candidates are the functions the test is given, so parametrize"
            " them directly (metafunc.parametrize('candidate', [...], ids=[...]))"
        )
    ids = [tuple(getattr(c, "_idlist", ())) for c in calls]
    functions = {_candidate_value(c): params(c)["candidate"] for c in calls}
    places = [
        (place, names)
        for place in range(min(map(len, ids)) if len({len(i) for i in ids}) == 1 else 0)
        if (names := _ids_by_candidate(calls, [i[place] for i in ids])) is not None
        and len(set(names.values())) == len(functions)
    ]
    if len(places) != 1 or not _one_group_shares_its_parameters(calls, ids, places[0][0]):
        return (), (
            "a pytest_generate_tests hook parametrizes `candidate` together with other"
            " names, whose values then differ within a group (or whose ids cannot be told"
            " from the candidates'): parametrize `candidate` alone there"
            " (metafunc.parametrize('candidate', [...], ids=[...])), or give the"
            " candidates with the marker's candidates="
        )
    names = places[0][1]
    return tuple((printable(names[value]), f) for value, f in functions.items()), None


def _candidate_value(call: Any) -> tuple[int, int]:
    """Which value of the hook's list a call's candidate is: its place there (pytest's
    `CallSpec2.indices` while the hooks run) and its function. One function listed under
    two ids (a registry's alias, `{"fast": f, "fast_again": f}`) is two candidates, as in
    a parametrize mark: known by the function alone, it had two ids, which read as a
    parameter other than the candidate, and every item failed saying so."""
    return call.indices.get("candidate", -1), id(params(call)["candidate"])


def params(call: Any) -> dict[str, Any]:
    """A call's parameters while the hooks run: pytest 7 keeps the direct ones apart, in
    `funcargs`, until the items are made."""
    return {**getattr(call, "funcargs", {}), **call.params}


def _direct(metafunc: pytest.Metafunc, calls: list[Any]) -> bool:
    """Whether `candidate` is parametrized directly (the values are what the test is
    given), not through a fixture: pytest 7 keeps a direct value in `funcargs`, pytest 8
    and later make it a fixture of `get_direct_param_fixture_func`."""
    if any("candidate" in getattr(c, "funcargs", {}) for c in calls):
        return True
    definitions = getattr(metafunc, "_arg2fixturedefs", {}).get("candidate") or ()
    func = getattr(definitions[-1], "func", None) if definitions else None
    return getattr(func, "__name__", None) == "get_direct_param_fixture_func"


def _ids_by_candidate(calls: list[Any], ids: list[str]) -> dict[tuple[int, int], str] | None:
    """Each candidate's id at one place of the calls' ids; None where one candidate has
    two there (the place is another parameter's)."""
    names: dict[tuple[int, int], str] = {}
    for call, name in zip(calls, ids, strict=True):
        if names.setdefault(_candidate_value(call), name) != name:
            return None
    return names


def _one_group_shares_its_parameters(
    calls: list[Any], ids: list[tuple[str, ...]], place: int
) -> bool:
    """Whether the calls of each group (the same ids but the candidate's) have the same
    other parameters: `parametrize(("candidate", "n"), [(f, 10), (g, 20)])` names one id
    per row, and a group of f at 10 and g at 20 would compare them at two sizes."""
    groups: dict[tuple[str, ...], dict[str, Any]] = {}
    for call, row in zip(calls, ids, strict=True):
        others = {k: v for k, v in params(call).items() if k != "candidate"}
        first = groups.setdefault(row[:place] + row[place + 1 :], others)
        if first.keys() != others.keys() or any(first[k] is not v for k, v in others.items()):
            return False
    return True


def fixture_params(metafunc: pytest.Metafunc) -> bool:
    """Whether a `candidate` fixture with params parametrizes the test, as pytest finds
    one: from the closest definition outwards, the first with params, through overrides
    that request the fixture they override (`def candidate(candidate)`)."""
    definitions = getattr(metafunc, "_arg2fixturedefs", {}).get("candidate") or ()
    for definition in reversed(definitions):
        if definition.params is not None:
            return True
        if "candidate" not in definition.argnames:
            return False
    return False


def parametrized_candidates(
    metafunc: pytest.Metafunc,
) -> tuple[tuple[str, Callable[..., Any]], ...] | None:
    """The candidates of a plain `@pytest.mark.parametrize("candidate", [...])`, named as
    pytest names their ids: an explicit id (`pytest.param(id=)`, an `ids=` list, or what an
    `ids=` function returns for it), else the id pytest gives its value (`_value_id`);
    None where there is no such parametrize."""
    found = _parametrized(metafunc)
    return None if found is None else tuple((name, fn) for name, fn, _ in found)


def candidate_marks(metafunc: pytest.Metafunc) -> dict[str, tuple[pytest.Mark, ...]]:
    """The marks of each candidate's `pytest.param` in a plain parametrize, by name."""
    return {name: marks for name, _, marks in _parametrized(metafunc) or () if marks}


def _parametrized(
    metafunc: pytest.Metafunc,
) -> list[tuple[str, Callable[..., Any], tuple[pytest.Mark, ...]]] | None:
    """`parametrized_candidates`, each with the marks of its `pytest.param`."""
    for marker in metafunc.definition.iter_markers("parametrize"):
        names, values, ids = parametrize_arguments(marker)
        if argname_list(names) != ["candidate"]:
            continue
        if _read_once(values, ids):
            return []  # left for pytest to read: `one_pass_error` fails the items
        found = []
        values = list(values)
        for i, (value, own) in enumerate(zip(values, explicit_ids(values, ids), strict=True)):
            fn = value.values[0] if is_param(value) else value
            given = id_of(ids, fn) if own is None and callable(ids) else own
            name = printable(str(given or _value_id(fn, i)))
            marks = tuple(getattr(m, "mark", m) for m in getattr(value, "marks", ()))
            found.append((name, fn, marks))
        return found
    return None


def shared_parametrize_error(metafunc: pytest.Metafunc) -> str | None:
    """Why the candidates cannot be read, where one parametrize gives `candidate` with
    other names (`parametrize("candidate, n", [(f, 1), (g, 1)])`): a row is a candidate at
    one size, while a group is every candidate at one size, and its id holds both. The
    plugin parametrized `candidate` again, and pytest's "duplicate parametrization"
    stopped the collection of every test of the session."""
    for marker in metafunc.definition.iter_markers("parametrize"):
        names = argname_list(parametrize_arguments(marker)[0])
        if "candidate" in names and len(names) > 1:
            others = ", ".join(n for n in names if n != "candidate")
            return (
                f"@pytest.mark.parametrize({', '.join(names)!r}, ...) gives `candidate` with"
                f" {others}: give the candidates a parametrize of their own"
                " (@pytest.mark.parametrize('candidate', [...]), or the marker's"
                f" candidates=) beside one of {others}, so that each group has them all"
            )
    return None


def one_pass_error(metafunc: pytest.Metafunc) -> str | None:
    """Why the candidates of a `parametrize('candidate', ...)` whose values or `ids=` are a
    generator (an iterator) cannot be read: the plugin and pytest each read them, and the
    first reading uses them up. The plugin read the values first, and pytest skipped the
    test as "got empty parameter set", no candidate run; it named the candidates by
    `__name__` beside generated ids, and each item was a group of its own."""
    for marker in metafunc.definition.iter_markers("parametrize"):
        names, values, ids = parametrize_arguments(marker)
        if argname_list(names) == ["candidate"] and _read_once(values, ids):
            given = "values" if isinstance(values, Iterator) else "ids="
            return (
                f"@pytest.mark.parametrize('candidate', ...) gives its {given} as a generator,"
                " which only one reading can use, and both pytest and pytest-autotune read"
                " them: give a list (or a tuple)"
            )
    return None


def _read_once(values: object, ids: object) -> bool:
    """Whether a parametrize's values or `ids=` are an iterator, used up by one reading."""
    return isinstance(values, Iterator) or isinstance(ids, Iterator)


def _value_id(value: Any, index: int) -> str:
    """The id pytest gives a parametrize value without one of its own: a string, number,
    None, pattern or enum by its text, a function or class by `__name__`, anything else by
    position (`candidate0`). Every value named by position (`parametrize("candidate",
    ["quicksort", "stable"])`, a body dispatching on a name) was a name found in no item's
    id: each item became a group of its own, one candidate `candidate0` tuned alone."""
    if isinstance(value, bytes):
        return value.decode("ascii", "backslashreplace")
    if isinstance(value, (str, int, float, complex, enum.Enum)) or value is None:
        return str(value)
    if isinstance(value, re.Pattern):
        return str(value.pattern)
    name = getattr(value, "__name__", None)
    return name if isinstance(name, str) else f"candidate{index}"
