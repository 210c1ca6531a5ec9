"""Collection: what an autotune test function's marker says (`FunctionSpec`), which
candidate and group each collected item is (`ItemSpec`), and the names pytest gives them."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import pytest

from pytest_autotune.marker_options import option_error

FUNCTIONS = pytest.StashKey[dict[str, "FunctionSpec"]]()
ITEM = pytest.StashKey["ItemSpec"]()

MARKER_OPTIONS = (
    "candidates",
    "key",
    "work",
    "thresholds",
    "reference",
    "rtol",
    "atol",
    "max_regression",
    "groups",
    "device",
    "time_limit",
    "level",
    "check_output",
)


@dataclass(frozen=True)
class FunctionSpec:
    """What the marker of one test function says, with its candidates in order."""

    nodeid: str
    candidates: tuple[tuple[str, Callable[..., Any]], ...]
    options: Mapping[str, Any]
    error: str | None = None
    """A bad marker value, failing each of the function's tests with this line (the rest of
    the session runs, and writes its files)."""


@dataclass(frozen=True)
class ItemSpec:
    """One collected item: which candidate it runs, in which group."""

    function: FunctionSpec
    candidate: str
    group: str
    group_key: str


def marker_options(definition: Any) -> tuple[dict[str, Any], str | None]:
    """The marker's options, and what is wrong with their form (positional arguments, an
    unknown option), if anything."""
    marker = definition.get_closest_marker("autotune")
    if marker.args:
        error = f"@pytest.mark.autotune takes keyword options only ({', '.join(MARKER_OPTIONS)})"
        return {k: v for k, v in marker.kwargs.items() if k in MARKER_OPTIONS}, error
    unknown = sorted(set(marker.kwargs) - set(MARKER_OPTIONS))
    if unknown:
        known = ", ".join(MARKER_OPTIONS)
        error = f"@pytest.mark.autotune: unknown option(s) {unknown}; known: {known}"
        return {k: v for k, v in marker.kwargs.items() if k in MARKER_OPTIONS}, error
    return dict(marker.kwargs), None


def function_nodeid(definition: Any) -> str:
    return str(definition.nodeid).split("[", 1)[0]


INVALID = "invalid-candidates"
"""The id of the one item a test whose candidates cannot be read gets: it fails with why."""


def function_spec(metafunc: pytest.Metafunc) -> FunctionSpec:
    """The spec of a test function marked `autotune`: its candidates in order (from the
    marker or a plain parametrize), its options, and the error of a bad option, if any.

    A bad marker fails that function's tests, not the collection of its module: the other
    tests of the file still run (a test without a `candidate` argument, which nothing can
    be given to, still fails the collection)."""
    options, error = marker_options(metafunc.definition)
    nodeid = function_nodeid(metafunc.definition)
    if "candidate" not in metafunc.fixturenames:
        pytest.fail(f"{nodeid}: an autotune test takes a `candidate` argument", pytrace=False)
    candidates = options.pop("candidates", None)
    pairs: tuple[tuple[str, Callable[..., Any]], ...] = ()
    parametrized = None
    if candidates is not None and (not isinstance(candidates, Mapping) or not candidates):
        error = error or (
            "autotune(candidates=...) must be a non-empty dict of name -> callable,"
            f" got {type(candidates).__name__} {_shown(candidates)}"
        )
    elif candidates is not None:
        pairs = tuple((printable(str(n)), f) for n, f in candidates.items())
    else:
        parametrized = parametrized_candidates(metafunc)
        if parametrized is None:
            error = error or (
                "give the candidates with @pytest.mark.autotune(candidates={...})"
                " or @pytest.mark.parametrize('candidate', [...])"
            )
        pairs = parametrized or ()
    error = error or duplicate_error(pairs)
    if pairs and candidates is not None:
        metafunc.parametrize("candidate", [f for _, f in pairs], ids=[n for n, _ in pairs])
    elif not pairs and (candidates is not None or parametrized is None):
        metafunc.parametrize("candidate", [None], ids=[INVALID])  # one item, to fail with why
    error = error or option_error(options)
    if inspect.iscoroutinefunction(metafunc.function):
        error = (
            "an autotune test cannot be `async def`: the body is called as the timed call"
            " of each candidate; call async code with asyncio.run() in a plain def"
        )
    return FunctionSpec(nodeid, pairs, options, None if error is None else f"{nodeid}: {error}")


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def printable(name: str) -> str:
    """A candidate name safe to print: control characters (a terminal escape, a newline)
    become their backslash escapes; other characters, non-ASCII letters included, stay."""
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in name)


def duplicate_error(pairs: tuple[tuple[str, Callable[..., Any]], ...]) -> str | None:
    """Two candidates of one name would be one in every lookup by name, and the check of
    the second against "itself" would pass a wrong implementation."""
    seen: dict[str, int] = {}
    for index, (name, fn) in enumerate(pairs):
        if name in seen:
            first = pairs[seen[name]][1]
            return (
                f"candidates {seen[name]} ({_describe(first)}) and {index}"
                f" ({_describe(fn)}) are both named {name!r}; give each its own id"
                " (pytest.param(fn, id=...) or ids=[...])"
            )
        seen[name] = index
    return None


def _describe(fn: Any) -> str:
    module = getattr(fn, "__module__", None)
    qualname = getattr(fn, "__qualname__", None)
    return f"{module}.{qualname}" if module and qualname else repr(fn)


def parametrized_candidates(
    metafunc: pytest.Metafunc,
) -> tuple[tuple[str, Callable[..., Any]], ...] | None:
    """The candidates of a plain `@pytest.mark.parametrize("candidate", [...])`, named as
    pytest names their ids: an explicit id, else the function's `__name__`; None where
    there is no such parametrize."""
    for marker in metafunc.definition.iter_markers("parametrize"):
        names = marker.args[0]
        argnames = [n.strip() for n in names.split(",")] if isinstance(names, str) else list(names)
        if argnames != ["candidate"]:
            continue
        ids = marker.kwargs.get("ids")
        pairs = []
        for i, value in enumerate(marker.args[1]):
            given = getattr(value, "id", None) if hasattr(value, "values") else None
            fn = value.values[0] if hasattr(value, "values") else value
            if given is None and isinstance(ids, (list, tuple)) and i < len(ids):
                given = ids[i]
            pairs.append((printable(str(given or getattr(fn, "__name__", f"candidate{i}"))), fn))
        return tuple(pairs)
    return None


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


def xdist_group_name(group: str) -> str:
    """The `xdist_group` name of an autotune group: without `]` and `@`, which would stop
    pytest-xdist from reading it back from the node id's `@name` suffix."""
    return "autotune:" + group.replace("[", "(").replace("]", ")").replace("@", "_")
