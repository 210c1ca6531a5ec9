"""Which candidate and group each collected item of a marked test is (`ItemSpec`): the
item's id without its candidate's, and without the parametrizations its test does not ask
for; the items one id would merge that are not one problem; and the names of a group's
items."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping
from typing import Any

import pytest

from pytest_autotune.collection import (
    CANDIDATE_PLACES,
    FUNCTION_PATHS,
    FUNCTIONS,
    GROUP_ITEMS,
    ITEM,
    UNREQUESTED,
    FunctionSpec,
    ItemSpec,
    item_function_nodeid,
)
from pytest_autotune.group_key import by_value, positional_parameters
from pytest_autotune.parameter_ids import (
    argname_list,
    escaped,
    explicit_ids,
    parametrize_arguments,
    shown,
)


def item_group(functions: Mapping[str, FunctionSpec], item: pytest.Item) -> ItemSpec | None:
    """The marked function of an item, its candidate's name, its group and the group's key
    (its id without the candidate, `by_value`); None for an item of no marked function."""
    function = functions.get(item_function_nodeid(item))
    callspec = getattr(item, "callspec", None)
    if function is None or callspec is None:
        return None
    place = item.config.stash.get(CANDIDATE_PLACES, {}).get(function.nodeid)
    ids = list(getattr(callspec, "_idlist", ()))
    own = ids[place] if place is not None and place < len(ids) else None
    value = callspec.params["candidate"]
    name, component = candidate_of(function.candidates, value, callspec.id if own is None else own)
    if component == own and place is not None:
        # By its place, not by its text: another parameter's id may hold the candidate's
        # name between dashes (`fast-path` beside a candidate `fast`), whose first match
        # was cut from the id, making a group of each candidate and a key of neither.
        rest = "-".join(ids[:place] + ids[place + 1 :])
    else:
        rest = without_component(callspec.id, component)
    group_key = _without_unrequested(item, rest)
    group = f"{function.nodeid}[{group_key}]" if group_key else function.nodeid
    key = by_value(callspec, group_key)
    positional = [n for n in positional_parameters(callspec, key) if n not in _named(item)]
    return ItemSpec(function, name, group, key, tuple(positional))


def merged_group_error(group: str, items: Iterable[pytest.Item]) -> str | None:
    """Why `items`, one group by their ids, are not one problem: two of them give the test
    other parameter values under one id. pytest joins parameter ids with '-', so stacked
    parametrizations `p` of "a-b", "a" and `q` of "c", "b-c" both read `a-b-c`; their
    items made one group, tuned on the first one's inputs, and under `--autotune` a
    candidate wrong only on the other's passed. Where the values are the same objects the
    items are one problem (pytest-repeat's repetitions differ only in a parameter the test
    does not ask for, `collection.Unrequested`)."""
    first: dict[str, Any] | None = None
    for item in items:
        callspec = getattr(item, "callspec", None)
        if callspec is None:
            continue
        unrequested = {
            parameter.name
            for parameter in item.config.stash.get(UNREQUESTED, {}).get(
                item_function_nodeid(item), ()
            )
        }
        params = {
            name: value
            for name, value in callspec.params.items()
            if name != "candidate" and name not in unrequested
        }
        if first is None:
            first = params
            continue
        if params.keys() != first.keys() or any(params[n] is not first[n] for n in params):
            return (
                f"{group}: two sets of parameters have this id"
                f" ({_parameters_shown(first)}; {_parameters_shown(params)}), since pytest"
                " joins parameter ids with '-': they would be tuned as one group, on the"
                " first one's inputs; give the parameters ids= that tell them apart"
            )
    return None


def _parameters_shown(params: Mapping[str, Any]) -> str:
    return ", ".join(f"{name}={shown(value)}" for name, value in params.items())


def _named(item: pytest.Item) -> frozenset[str]:
    """The parameters whose parametrize mark names every value itself (an `ids=` list
    without a None, an `ids=` function, or a `pytest.param(id=...)` each): an id of theirs
    that reads as pytest's numbered one (`case1` of `ids=["case2", "case1"]`) is the
    user's, and the summary's warning that their keys number them by place, asking for
    the `ids=` given, was wrong."""
    named = set()
    for marker in item.iter_markers("parametrize"):
        names, values, ids = parametrize_arguments(marker)
        listed = values if isinstance(values, (list, tuple)) else ()
        own = explicit_ids(listed, ids)
        if callable(ids) or (own and None not in own):
            named.update(argname_list(names))
    return frozenset(named)


def candidate_of(
    candidates: tuple[tuple[str, Callable[..., Any]], ...], value: Any, callspec_id: str
) -> tuple[str, str]:
    """The name of the candidate an item runs, and that name as it stands in the item's id.

    The id decides between candidates of one value: one function under two names
    (`{"fast": f, "fast_again": f}`) is two candidates, and the first name for both would
    run and report the first twice and file the other's items as a group of their own."""
    names = [n for n, f in candidates if f is value] or [n for n, f in candidates if f == value]
    names = names or [repr(value)]
    found = [
        (name, component)
        for name in names
        # pytest writes non-ASCII ids escaped (`\\xe9`): find the name as pytest wrote it.
        for component in dict.fromkeys((name, escaped(name)))
        if has_component(callspec_id, component)
    ]
    # The longest: of "fast" and "fast-2", an id "fast-2-n16" holds both.
    if found:
        return max(found, key=lambda pair: len(pair[1]))
    return names[0], escaped(names[0])


def repeated_nodeid(item: pytest.Item) -> str:
    """The item's node id without the ids of the parameters its test does not ask for
    (`collection.Unrequested`): the id that its repetitions share."""
    name = item_function_nodeid(item)
    ids = item.nodeid.removeprefix(name)
    rest = _without_unrequested(item, ids[1:-1]) if ids.startswith("[") else ""
    return f"{name}[{rest}]" if rest else name


def _without_unrequested(item: pytest.Item, callspec_id: str) -> str:
    """`callspec_id`, an id of the item's parameters, without those of the parameters its
    test does not ask for (`collection.Unrequested`)."""
    callspec = getattr(item, "callspec", None)
    parameters = item.config.stash.get(UNREQUESTED, {}).get(item_function_nodeid(item), ())
    for parameter in parameters if callspec is not None else ():
        part = parameter.component(callspec)
        if part is not None and has_component(callspec_id, part):
            callspec_id = without_component(callspec_id, part)
    return callspec_id


def without_component(callspec_id: str, component: str) -> str:
    """The id of the other parameters: pytest joins parameter ids with '-'."""
    if callspec_id == component:
        return ""
    if callspec_id.startswith(component + "-"):
        return callspec_id[len(component) + 1 :]
    if callspec_id.endswith("-" + component):
        return callspec_id[: -len(component) - 1]
    return callspec_id.replace("-" + component + "-", "-", 1)


def has_component(callspec_id: str, component: str) -> bool:
    return f"-{component}-" in f"-{callspec_id}-"


def candidate_nodeids(config: pytest.Config, group: str) -> dict[str, str]:
    """The node id of each candidate's test item in `group`, by candidate name: where the
    candidate's id stands among the others' depends on the order of the parametrizations,
    so it is read from the items, not rebuilt from the group's name."""
    items = config.stash.get(GROUP_ITEMS, {}).get(group, [])
    return {item.stash[ITEM].candidate: item.nodeid for item in items}


def xdist_group_name(group: str) -> str:
    """The `xdist_group` name of an autotune group: without `]` and `@`, which would stop
    pytest-xdist from reading it back from the node id's `@name` suffix."""
    return "autotune:" + group.replace("[", "(").replace("]", ")").replace("@", "_")


_K_WORD = re.compile(r"[\w:+.\[\]\\/-]+")
"""A word that pytest's `-k` grammar reads as one name (`_pytest.mark.expression`)."""


def group_names_given(config: pytest.Config) -> list[str]:
    """Why each command-line argument that names an autotune group as the summary names it
    (`tests/test_sum.py::test_sum[n1024]`) found no test, and how to select the group: each
    of its tests' ids adds the candidate's id, and pytest's own line, "not found:
    tests/test_sum.py::test_sum" (the parameters cut off), read as if the test were
    missing. The groups' names are those of the marked functions collected before pytest
    gave up (`FUNCTION_PATHS`)."""
    paths = config.stash.get(FUNCTION_PATHS, {})
    specs = config.stash.get(FUNCTIONS, {})
    lines = []
    for arg in config.args:
        path, colons, names = arg.partition("::")
        function, bracket, parameters = names.partition("[")
        if not colons or not bracket or not parameters.endswith("]"):
            continue
        file = (config.invocation_params.dir / path).resolve()
        spec = next(
            (
                specs[nodeid]
                for nodeid, where in paths.items()
                if nodeid in specs
                and where.resolve() == file
                and nodeid.partition("::")[2] == function
            ),
            None,
        )
        # An id that holds a candidate's is a test's, found or not: another argument failed.
        if spec is None or any(
            has_component(parameters[:-1], escaped(name)) for name, _ in spec.candidates
        ):
            continue
        words = _k_expression(function, parameters[:-1])
        select = f'-k "{words}"' if words else "-k, or by the node ids --co -q lists"
        lines.append(
            f"{arg} names an autotune group, as the autotune summary does, and no test: each"
            f" of its tests' node ids holds its candidate's id too; select the group's tests"
            f" with {select}"
        )
    return lines


def group_names_deselected(config: pytest.Config, items: Iterable[pytest.Item]) -> list[str]:
    """Why each `--deselect` that names an autotune group as the summary names it
    (`tests/test_sum.py::test_sum[n1024]`) would deselect none of its tests, and how to
    deselect them: pytest deselects the node ids that start with what it is given, each of
    the group's adds the candidate's id inside the brackets, and pytest says nothing of a
    `--deselect` that matched no test, so the group was tuned and gated all the same."""
    nodeids = [item.nodeid for item in items]
    groups = config.stash.get(GROUP_ITEMS, {})
    lines = []
    for arg in config.getoption("deselect", None) or ():
        if arg not in groups or any(nodeid.startswith(arg) for nodeid in nodeids):
            continue
        function, _, parameters = arg.partition("::")[2].partition("[")
        words = _k_expression(function, parameters[:-1])
        count = len(groups[arg])
        select = (
            f'-k "not ({words})"'
            if words
            else f"a --deselect of each of its {count} tests' node ids (--co -q lists them)"
        )
        lines.append(
            f"--deselect {arg} names an autotune group, as the autotune summary does, and no"
            f" test, so it deselects none: each of its tests' node ids holds its candidate's id"
            f" too; deselect the group's tests with {select}"
        )
    return lines


def _k_expression(function: str, parameters: str) -> str | None:
    """The `-k` expression that selects a group's tests (`test_sum and n1024`): its test's
    name and each of its parameters' ids; None where one is no word `-k` reads as a name."""
    words = [function.rpartition("::")[2], *parameters.split("-")]
    usable = all(_K_WORD.fullmatch(w) and w not in ("and", "or", "not") for w in words)
    return " and ".join(words) if usable else None
