"""Collection: what an autotune test function's marker says (`FunctionSpec`), which
candidate and group each collected item is (`ItemSpec`), and the names pytest gives them."""

from __future__ import annotations

import difflib
import enum
import inspect
import os
import platform
import re
import sys
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, cast

import numpy as np
import pytest

from pytest_autotune.marker_options import option_error
from pytest_autotune.plugin_settings import (
    PluginSettings,
    is_builtin_device,
    shown_from,
    unserved_device,
)

FUNCTIONS = pytest.StashKey[dict[str, "FunctionSpec"]]()
ITEM = pytest.StashKey["ItemSpec"]()
GROUP_ITEMS = pytest.StashKey[dict[str, list[pytest.Item]]]()
"""Every collected item of each group, deselected ones included (a group is tuned whole)."""
COLLECTED = pytest.StashKey[list[pytest.Item]]()
"""Every item an update's collection made, before any plugin's `pytest_collection_modifyitems`
(one `tryfirst`, registered after this plugin, runs before its own): what its stale entries
are judged by (`pytest_autotune.stale`)."""
FUNCTION_PATHS = pytest.StashKey[dict[str, Path]]()
"""The file of each autotune test function (marked, or of the `autotune` fixture), by its
node id: where two files' tests share one (`shared_nodeid_error`)."""
SHARED_NODEID = pytest.StashKey[str]()
"""On a test of the `autotune` fixture, why it fails: its node id is another file's too."""
UNREQUESTED = pytest.StashKey[dict[str, tuple["Unrequested", ...]]]()
"""The parametrizations of names each autotune test function (marked, or of the `autotune`
fixture) does not ask for (`Unrequested`), by the function's node id."""
AWAITING = pytest.StashKey[set[str]]()
"""The marked test functions whose candidates no hook had given when this plugin's
`pytest_generate_tests` ran: `CandidatesOfEveryHook` reads them once every hook has."""
NOT_RUN = pytest.StashKey[dict[str, dict[str, str]]]()
"""The candidates of each group whose items are marked not to run, and why (`not_run`),
once read."""
CANDIDATE_PLACES = pytest.StashKey[dict[str, int]]()
"""Where each marked test function's candidate id stands among its items' parameter ids
(`candidate_place`), by the function's node id."""
SKIPPED_AT_SETUP = pytest.StashKey[dict[str, dict[str, str]]]()
"""The candidates of each group whose tests a fixture skipped (or xfailed) at their setup,
and why (`note_skipped_at_setup`), as they are met."""

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
    marks: Mapping[str, tuple[pytest.Mark, ...]] = field(default_factory=dict)
    """The marks of each candidate's own `pytest.param`, by name: what keeps a candidate
    out of its group where its item is not collected (`not_run`)."""


@dataclass(frozen=True)
class Unrequested:
    """The parametrization of a name that the test function asks for neither as an argument
    nor through its fixtures: a plugin added it to the test's fixtures to run the test
    several times (pytest-repeat's `__pytest_repeat_step_number`, ids "1-2", "2-2"). It
    says which run of the test an item is, not which problem, so it is no part of the
    item's group nor of the group's key: each repetition is a test of the same group, and
    the group is tuned once, at the key its baseline is recorded under."""

    name: str
    ids: Any

    def component(self, callspec: Any) -> str | None:
        """Its part of an item's id, as pytest writes it (an `ids=` list's or function's,
        else pytest's own id of a plain value); None where it cannot be told."""
        index = callspec.indices.get(self.name)
        if index is None:
            return None
        value = callspec.params.get(self.name)
        given: object = None
        if callable(self.ids):
            given = _id_of(self.ids, value)
        elif isinstance(self.ids, (list, tuple)) and index < len(self.ids):
            given = self.ids[index]
        if given is None:
            plain = value is None or isinstance(value, (str, int, float, complex))
            given = value if plain else f"{self.name}{index}"
        return _escaped(str(given))


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
            names = _argnames(argnames)
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
            if "candidate" in _argnames(argnames):
                source = "hook" if kwargs.get("_param_mark") is None else "mark"
                if given:
                    refused.append(source)
                    _the_others_of(parametrize, argnames, argvalues, *args, **kwargs)
                    return
                given.append(source)
                place = candidate_place(metafunc) if _argnames(argnames) == ["candidate"] else None
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
            error = f"{nodeid}: {_given_twice(first, refused[0])}"
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
    names = _argnames(argnames)
    others = [i for i, name in enumerate(names) if name != "candidate"]
    rows = list(argvalues)
    if not others or not rows:
        return
    first = rows[0].values if _is_param(rows[0]) else rows[0]
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


_SOURCES = {
    "candidates": "the marker's candidates=",
    "hook": "a pytest_generate_tests hook",
    "mark": "@pytest.mark.parametrize('candidate', ...)",
}


def _given_twice(first: str, second: str) -> str:
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


def record_function(metafunc: pytest.Metafunc) -> None:
    """Stores the spec of a marked test function (`function_spec`) by its node id."""
    spec = function_spec(metafunc)
    # A test outside the root dir is named from the folder given on the command line, so
    # `--rootdir=src tests/a tests/b` names `tests/a/test_x.py` and `tests/b/test_x.py`
    # both `test_x.py`. Everything here is keyed by node id (the groups, the cache file):
    # the second spec replaced the first, whose candidates then failed with a KeyError, and
    # an update filed both tests' keys in one file. Both fail by name instead.
    path = metafunc.definition.path
    first = metafunc.config.stash.setdefault(FUNCTION_PATHS, {}).setdefault(spec.nodeid, path)
    if first != path:
        spec = replace(spec, error=shared_nodeid_error(metafunc.config, spec.nodeid, first, path))
    metafunc.config.stash.setdefault(FUNCTIONS, {})[spec.nodeid] = spec


def awaits_candidates(metafunc: pytest.Metafunc) -> bool:
    """Whether nothing gives a marked test's candidates yet (the marker, a parametrize
    mark, a hook called before this plugin's, a fixture with params): a hook called after
    it still may (`CandidatesOfEveryHook`)."""
    options, _ = marker_options(metafunc.definition)
    calls = getattr(metafunc, "_calls", ())
    return (
        "candidate" in metafunc.fixturenames
        and options.get("candidates") is None
        and _parametrized(metafunc) is None
        and _shared_parametrize_error(metafunc) is None
        and not _fixture_params(metafunc)
        and not any("candidate" in _params(c) for c in calls)
    )


def unprovided_device(config: pytest.Config, device: Any) -> str | None:
    """Why no client can serve the marker's `device`, where none can: a name that is not
    built in, with no `pytest_autotune_client` hook registered. Said in plain pytest too,
    as the marker's other bad values are: a typo (`device="gpu"`) otherwise passed every
    plain run and failed only the tuning job. Where a hook is registered, only calling it
    tells, and plain pytest does not make a client (a hook may need its device present).
    Asked when a test runs, not at its collection: a conftest of a folder collected after
    the test's own may register the hook."""
    if not isinstance(device, str) or is_builtin_device(device):
        return None
    if config.pluginmanager.hook.pytest_autotune_client.get_hookimpls():
        return None
    return unserved_device(device)


def _argnames(names: Any) -> list[str]:
    return [n.strip() for n in names.split(",")] if isinstance(names, str) else list(names)


@dataclass(frozen=True)
class ItemSpec:
    """One collected item: which candidate it runs, in which group."""

    function: FunctionSpec
    candidate: str
    group: str
    group_key: str
    positional: tuple[str, ...] = ()
    """The parameters that `group_key` numbers by place (`positional_parameters`)."""


def marker_options(definition: Any) -> tuple[dict[str, Any], str | None]:
    """The marker's options, and what is wrong with their form (positional arguments, an
    unknown option), if anything.

    Every `autotune` mark of the test counts, the closest value of each option winning: a
    module's `pytestmark` or a class's marker sets what its tests share (`rtol`, the
    candidates), which the closest marker alone would drop without a word."""
    markers = list(definition.iter_markers("autotune"))
    kwargs: dict[str, Any] = {}
    for marker in reversed(markers):
        kwargs.update(marker.kwargs)
    if any(marker.args for marker in markers):
        error = f"@pytest.mark.autotune takes keyword options only ({', '.join(MARKER_OPTIONS)})"
        return {k: v for k, v in kwargs.items() if k in MARKER_OPTIONS}, error
    unknown = sorted(set(kwargs) - set(MARKER_OPTIONS))
    if unknown:
        known = ", ".join(MARKER_OPTIONS)
        near = [m for u in unknown for m in difflib.get_close_matches(u, MARKER_OPTIONS, 1, 0.6)]
        hint = f"; did you mean {', '.join(near)}?" if near else ""
        error = f"@pytest.mark.autotune: unknown option(s) {unknown}; known: {known}{hint}"
        return {k: v for k, v in kwargs.items() if k in MARKER_OPTIONS}, error
    return kwargs, None


def _own_option(definition: Any, name: str) -> bool:
    """Whether the test's own `autotune` marker (not its class's or module's) sets `name`."""
    return any(m.name == "autotune" and name in m.kwargs for m in definition.own_markers)


def function_nodeid(definition: Any) -> str:
    return str(definition.nodeid)


def item_function_nodeid(item: pytest.Item) -> str:
    """The node id of an item's test function, without its parameters' ids. Not the node
    id cut at its first `[`: a folder's name may hold one (`tests[v2]/test_a.py`), and every
    test under it was named `tests`, one function and one cache file to the plugin."""
    name = getattr(item, "originalname", None)
    return f"{item.parent.nodeid}::{name}" if item.parent is not None and name else item.nodeid


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
        pytest.fail(
            f"{nodeid}: an autotune test takes a `candidate` argument{_marked_by(metafunc)}",
            pytrace=False,
        )
    candidates = options.pop("candidates", None)
    generated, candidates, hook_error = _beside_a_hook(metafunc, candidates)
    error = error or hook_error
    # A module's or class's candidates are shared, and the test's own parametrize of
    # `candidate` is closer: both would parametrize it twice.
    inherited = candidates is not None and not _own_option(metafunc.definition, "candidates")
    if inherited and parametrized_candidates(metafunc) is not None:
        candidates = None
    elif candidates is not None and parametrized_candidates(metafunc) is not None:
        # Both on the test itself: neither is closer. Parametrizing `candidate` twice
        # stopped the whole collection at pytest's "duplicate parametrization", which
        # named neither; the parametrize's items run and fail by name instead.
        candidates = None
        error = error or (
            "autotune(candidates=...) and @pytest.mark.parametrize('candidate', ...) both"
            " give this test's candidates; keep one"
        )
    pairs: tuple[tuple[str, Callable[..., Any]], ...] = ()
    parametrized = None
    marks: dict[str, tuple[pytest.Mark, ...]] = {}
    refused = _params_refused(candidates)
    error = error or refused
    candidates = cast(Any, None if refused else candidates)  # Any, as the marker gave it
    if _callables(candidates):
        # A list of functions, named as a parametrize over them is: by `__name__`.
        pairs = tuple(
            (printable(str(getattr(f, "__name__", f"candidate{i}"))), f)
            for i, f in enumerate(candidates)
        )
        duplicate = duplicate_error(
            pairs, hint="; name them with autotune(candidates={name: function, ...})"
        )
        error = error or duplicate
    elif candidates is not None and (not isinstance(candidates, Mapping) or not candidates):
        error = error or (
            "autotune(candidates=...) must be a non-empty dict of name -> callable"
            f" (or a list of functions), got {type(candidates).__name__} {_shown(candidates)}"
        )
    elif candidates is not None:
        pairs = tuple((printable(str(n)), f) for n, f in candidates.items())
    else:
        parametrized = parametrized_candidates(metafunc) if generated is None else generated
        marks = candidate_marks(metafunc)
        if parametrized is None:
            error = error or (
                "give the candidates with @pytest.mark.autotune(candidates={...})"
                " or @pytest.mark.parametrize('candidate', [...])"
            )
        pairs = parametrized or ()
    error = error or _empty_name_error(pairs) or duplicate_error(pairs)
    shared = _shared_parametrize_error(metafunc)
    if shared is not None:
        # pytest parametrizes `candidate` already: doing it again stopped the session.
        error = shared
    else:
        error = _parametrize(metafunc, pairs, candidates, parametrized) or error
    error = error or option_error(options) or groups_error(options.get("groups"), pairs)
    error = _body_error(metafunc) or error or _candidate_fixture_error(metafunc)
    error = None if error is None else f"{nodeid}: {error}"
    return FunctionSpec(nodeid, pairs, options, error, marks)


def _body_error(metafunc: pytest.Metafunc) -> str | None:
    """Why the test's body cannot be each candidate's timed call, if it cannot."""
    if inspect.iscoroutinefunction(metafunc.function):
        return (
            "an autotune test cannot be `async def`: the body is called as the timed call"
            " of each candidate; call async code with asyncio.run() in a plain def"
        )
    if getattr(getattr(metafunc.function, "hypothesis", None), "inner_test", None) is not None:
        # Hypothesis's @given calls the body once per example and wants None back: every
        # candidate failed its health check ("should return None"), with no word of why.
        return (
            "an autotune test cannot be Hypothesis's @given: the body is called as the timed"
            " call of each candidate, on one set of inputs that it returns the output of;"
            " give the inputs with parametrize or fixtures"
        )
    if "autotune" in metafunc.fixturenames:
        # A set tuned inside the body was tuned again in every timed call (a run of minutes
        # ending in time limits and a key "as it does for" the test itself), and a plain
        # run passed without checking a candidate.
        return (
            "a marked test (over `candidate`) cannot use the `autotune` fixture: its body is"
            " each candidate's timed call, and the fixture tunes a TunableSet of its own;"
            " use one: the marker's candidates, or autotune(tunable_set, *inputs) in an"
            " unmarked test"
        )
    return None


def _parametrize(
    metafunc: pytest.Metafunc,
    pairs: tuple[tuple[str, Callable[..., Any]], ...],
    candidates: object,
    parametrized: object,
) -> str | None:
    """Parametrize `candidate` over the marker's candidates (or one item that fails with
    why); the error where a fixture of that name with `params` (a conftest's) has already
    done so: pytest's "duplicate parametrization of 'candidate'" stopped the collection of
    every test of the session, naming neither. Its items are left as the fixture makes
    them, and each fails with the error. (pytest keeps a test's fixture definitions in
    `Metafunc._arg2fixturedefs`, read as pytest's own fixture parametrization reads it.)"""
    if parametrized is None and _fixture_params(metafunc):
        return (
            "`candidate` is a fixture with params here (a conftest's?), which pytest"
            " parametrizes the test over: an autotune test's candidates are its marker's"
            " or its own @pytest.mark.parametrize('candidate', [...]), which overrides the"
            " fixture; rename the fixture, or give its functions to the test's parametrize"
        )
    if pairs and candidates is not None:
        metafunc.parametrize("candidate", [f for _, f in pairs], ids=[n for n, _ in pairs])
    elif not pairs and (candidates is not None or parametrized is None):
        metafunc.parametrize("candidate", [None], ids=[INVALID])  # one item, to fail with why
    return None


def _candidate_fixture_error(metafunc: pytest.Metafunc) -> str | None:
    """Why the test cannot be checked or tuned, where a fixture of it (other than
    `candidate` itself) requests `candidate`, directly or through another fixture. Such a
    fixture is set up once, for its test's own candidate, and every candidate's body is
    called on that test's fixture values (the reference in a plain run, the whole group
    when tuning): each ran the first one's compiled kernel or plan, so a wrong candidate
    passed its check and a candidate won on another's time."""
    definitions = getattr(metafunc, "_arg2fixturedefs", {})
    memo: dict[str, bool] = {}

    def requests(name: str) -> bool:
        if name not in memo:
            memo[name] = False  # a cycle requests nothing more
            argnames = {a for d in definitions.get(name) or () for a in d.argnames} - {name}
            memo[name] = "candidate" in argnames or any(requests(a) for a in argnames)
        return memo[name]

    found = [n for n in metafunc.fixturenames if n != "candidate" and requests(n)]
    if not found:
        return None
    return (
        f"fixture {found[0]!r} requests `candidate`: a fixture is set up once, for its own"
        " test's candidate, and every candidate of the group is called on that test's"
        " fixture values (the reference in a plain run, all of them when tuning), so all"
        f" would run with one candidate's {found[0]!r}; build what it makes from the"
        " candidate in the test body, or give the built objects as the candidates"
    )


def _beside_a_hook(
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
            _given_twice("hook", "candidates"),
        )
    return generated, candidates, error


def _generated_candidates(
    metafunc: pytest.Metafunc,
) -> tuple[tuple[tuple[str, Callable[..., Any]], ...] | None, str | None]:
    """The candidates a `pytest_generate_tests` hook (a conftest's, called before this
    plugin's, or one after it, read by `CandidatesOfEveryHook` once every hook has run)
    gave with `metafunc.parametrize("candidate", ...)`, named by their ids in the
    items' ids, and why they cannot be used; (None, None) where no hook gave them. (Read
    as no candidates, they were parametrized again, and pytest's "duplicate
    parametrization" stopped the collection of every test of the session.)

    pytest keeps each call's parameters and ids in `Metafunc._calls`, one id per parametrize
    in order (`CallSpec2._idlist`): the candidate's is the one place whose id follows the
    candidate, a different id for each (a fixture's params vary apart from it)."""
    calls = [c for c in getattr(metafunc, "_calls", ()) if "candidate" in _params(c)]
    if not calls or _fixture_params(metafunc):
        return None, None  # none, or a fixture's params (`_parametrize` says why not)
    if not _direct(metafunc, calls):
        return (), (
            "a pytest_generate_tests hook parametrizes `candidate` indirectly, through a"
            " fixture: the candidates are the functions the test is given, so parametrize"
            " them directly (metafunc.parametrize('candidate', [...], ids=[...]))"
        )
    ids = [tuple(getattr(c, "_idlist", ())) for c in calls]
    functions = {_candidate_value(c): _params(c)["candidate"] for c in calls}
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
    return call.indices.get("candidate", -1), id(_params(call)["candidate"])


def _params(call: Any) -> dict[str, Any]:
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
        others = {k: v for k, v in _params(call).items() if k != "candidate"}
        first = groups.setdefault(row[:place] + row[place + 1 :], others)
        if first.keys() != others.keys() or any(first[k] is not v for k, v in others.items()):
            return False
    return True


def _fixture_params(metafunc: pytest.Metafunc) -> bool:
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


def shared_nodeid_error(config: pytest.Config, nodeid: str, first: Path, path: Path) -> str:
    """Why the tests of two files that pytest gives one node id fail. A test outside the root
    dir is named from the folder given on the command line, so `--rootdir=src tests/a
    tests/b` names `tests/a/test_x.py` and `tests/b/test_x.py` both `test_x.py`; their
    groups and cache file, named after the node id, would be one."""
    here = config.invocation_params.dir
    return (
        f"{nodeid}: the node id of both {shown_from(first, here)} and"
        f" {shown_from(path, here)}: pytest names a test outside the root dir"
        f" {config.rootpath} from the folder given on the command line, and the two would"
        " share one cache file: give a --rootdir above both"
    )


def outside_rootdir(item: pytest.Item, nodeid: str, settings: PluginSettings) -> str | None:
    """The warning for a test, named `nodeid`, whose file is outside the root dir (one for
    all the file's tests); None for one inside. pytest names it from the folder given on
    the command line, so its cache file's name depends on how pytest was called (`pytest
    pkg_a/tests pkg_b/tests` in a monorepo takes `pkg_a`'s configuration and names
    `pkg_b/tests/test_ops.py` `test_ops.py`), and it is filed in another project's cache
    directory: its baselines were written where a run of its own project never looked,
    without a word."""
    rootpath = item.config.rootpath
    if item.path.is_relative_to(rootpath):
        return None
    # One line a file, however many of its tests tune (a line a test filled the summary).
    module = nodeid.partition("::")[0]
    return (
        f"warning: {settings.relative(item.path)} is outside the root dir {rootpath}, so"
        f" pytest names its tests from the folder given on the command line ({module}::...),"
        " and their baselines are filed under those names in"
        f" {settings.relative(settings.cache_dir)}, where a run given another folder, or run"
        " from their own project, does not look: run them from their project (`cd` there)"
        " or with a --rootdir above them"
    )


def _params_refused(candidates: object) -> str | None:
    """Why `candidates=` that holds a `pytest.param(...)`, a parametrize's item, is refused;
    None for one that holds none. It was refused as "must be a non-empty dict ... got list
    [ParameterSet(...)]", which did not say where a candidate's marks go."""
    values = candidates.values() if isinstance(candidates, Mapping) else candidates
    params = isinstance(values, (list, tuple, type({}.values()))) and any(
        isinstance(v, type(pytest.param(None))) for v in values
    )
    return (
        "autotune(candidates=...) takes functions, not pytest.param(...): to mark a"
        " candidate (skip, xfail), give the candidates with"
        " @pytest.mark.parametrize('candidate', [fn, pytest.param(fn2, marks=...)])"
        if params
        else None
    )


def _marked_by(metafunc: pytest.Metafunc) -> str:
    """Where an inherited `autotune` mark comes from: a plain test beside tests that share a
    module's `pytestmark` or a class's marker is marked too, which its author never did."""
    node = next(metafunc.definition.iter_markers_with_node("autotune"))[0]
    if isinstance(node, pytest.Class):
        return (
            "; this one is marked by its class's marker, which marks every test of the class:"
            " move it out of the class"
        )
    if isinstance(node, pytest.Module):
        return (
            "; this one is marked by its module's `pytestmark`, which marks every test of the"
            " module: move it to a module of its own"
        )
    return ""


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def printable(name: str) -> str:
    """A candidate name safe to print: control characters (a terminal escape, a newline)
    become their backslash escapes; other characters, non-ASCII letters included, stay."""
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in name)


def duplicate_error(
    pairs: tuple[tuple[str, Callable[..., Any]], ...],
    hint: str = "; give each its own id (pytest.param(fn, id=...) or ids=[...])",
) -> str | None:
    """Two candidates of one name would be one in every lookup by name, and the check of
    the second against "itself" would pass a wrong implementation."""
    seen: dict[str, int] = {}
    for index, (name, fn) in enumerate(pairs):
        if name in seen:
            first = pairs[seen[name]][1]
            return (
                f"candidates {seen[name]} ({_describe(first)}) and {index}"
                f" ({_describe(fn)}) are both named {name!r}{hint}"
            )
        seen[name] = index
    return None


def _empty_name_error(pairs: tuple[tuple[str, Callable[..., Any]], ...]) -> str | None:
    """A candidate of the name "" passed a plain run and was refused when tuning began, with
    a traceback: a name is what the files, records and report show."""
    for index, (name, fn) in enumerate(pairs):
        if not name:
            return f"candidate {index} ({_describe(fn)}) has an empty name; give it a name"
    return None


def groups_error(groups: Any, pairs: tuple[tuple[str, Callable[..., Any]], ...]) -> str | None:
    """A `groups=` member that names no candidate: said at collection, so a plain run fails
    it too, not only the tuning that applies the groups."""
    names = [name for name, _ in pairs]
    if not pairs or not isinstance(groups, (list, tuple)):
        return None
    for _, members in groups:
        for name in members:
            if name not in names:
                return f"groups= names no candidate {name!r}: {sorted(names)}"
    return None


def _callables(candidates: Any) -> bool:
    """`candidates=[f, g]`: a non-empty list or tuple of callables."""
    return (
        isinstance(candidates, (list, tuple))
        and bool(candidates)
        and all(callable(f) for f in candidates)
    )


def _describe(fn: Any) -> str:
    module = getattr(fn, "__module__", None)
    qualname = getattr(fn, "__qualname__", None)
    return f"{module}.{qualname}" if module and qualname else repr(fn)


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
        names, values, ids = _parametrize_arguments(marker)
        if _argnames(names) != ["candidate"]:
            continue
        found = []
        values = list(values)
        for i, (value, own) in enumerate(zip(values, _explicit_ids(values, ids), strict=True)):
            fn = value.values[0] if _is_param(value) else value
            given = _id_of(ids, fn) if own is None and callable(ids) else own
            name = printable(str(given or _value_id(fn, i)))
            marks = tuple(getattr(m, "mark", m) for m in getattr(value, "marks", ()))
            found.append((name, fn, marks))
        return found
    return None


def _shared_parametrize_error(metafunc: pytest.Metafunc) -> str | None:
    """Why the candidates cannot be read, where one parametrize gives `candidate` with
    other names (`parametrize("candidate, n", [(f, 1), (g, 1)])`): a row is a candidate at
    one size, while a group is every candidate at one size, and its id holds both. The
    plugin parametrized `candidate` again, and pytest's "duplicate parametrization"
    stopped the collection of every test of the session."""
    for marker in metafunc.definition.iter_markers("parametrize"):
        names = _argnames(_parametrize_arguments(marker)[0])
        if "candidate" in names and len(names) > 1:
            others = ", ".join(n for n in names if n != "candidate")
            return (
                f"@pytest.mark.parametrize({', '.join(names)!r}, ...) gives `candidate` with"
                f" {others}: give the candidates a parametrize of their own"
                " (@pytest.mark.parametrize('candidate', [...]), or the marker's"
                f" candidates=) beside one of {others}, so that each group has them all"
            )
    return None


_PARAMETRIZE = inspect.signature(pytest.Metafunc.parametrize)
"""How pytest binds a parametrize mark's arguments: read once, not per mark and test."""


def _parametrize_arguments(marker: pytest.Mark) -> tuple[Any, Any, Any]:
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


def item_group(functions: Mapping[str, FunctionSpec], item: pytest.Item) -> ItemSpec | None:
    """The marked function of an item, its candidate's name, its group and the group's key
    (its id without the candidate, `_by_value`); None for an item of no marked function."""
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
    key = _by_value(callspec, group_key)
    positional = [n for n in positional_parameters(callspec, key) if n not in _named(item)]
    return ItemSpec(function, name, group, key, tuple(positional))


def merged_group_error(group: str, items: Iterable[pytest.Item]) -> str | None:
    """Why `items`, one group by their ids, are not one problem: two of them give the test
    other parameter values under one id. pytest joins parameter ids with '-', so stacked
    parametrizations `p` of "a-b", "a" and `q` of "c", "b-c" both read `a-b-c`; their
    items made one group, tuned on the first one's inputs, and under `--autotune` a
    candidate wrong only on the other's passed. Where the values are the same objects the
    items are one problem (pytest-repeat's repetitions differ only in a parameter the test
    does not ask for, `Unrequested`)."""
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
    return ", ".join(f"{name}={_shown(value)}" for name, value in params.items())


def _named(item: pytest.Item) -> frozenset[str]:
    """The parameters whose parametrize mark names every value itself (an `ids=` list
    without a None, an `ids=` function, or a `pytest.param(id=...)` each): an id of theirs
    that reads as pytest's numbered one (`case1` of `ids=["case2", "case1"]`) is the
    user's, and the summary's warning that their keys number them by place, asking for
    the `ids=` given, was wrong."""
    named = set()
    for marker in item.iter_markers("parametrize"):
        names, values, ids = _parametrize_arguments(marker)
        listed = values if isinstance(values, (list, tuple)) else ()
        own = _explicit_ids(listed, ids)
        if callable(ids) or (own and None not in own):
            named.update(_argnames(names))
    return frozenset(named)


def _is_param(value: object) -> bool:
    """Whether a parametrize value is a `pytest.param(...)`."""
    return hasattr(value, "values") and hasattr(value, "marks")


def _explicit_ids(values: Iterable[Any], ids: Any) -> list[str | None]:
    """The id each value of a parametrize mark is given by the user: its `pytest.param`'s
    `id=`, else its place in an `ids=` list; None where neither names it (an `ids=`
    function names it when called, `_id_of`)."""
    listed = ids if isinstance(ids, (list, tuple)) else ()
    found: list[str | None] = []
    for i, value in enumerate(values):
        own = value.id if _is_param(value) else None
        found.append(own if own is not None or i >= len(listed) else listed[i])
    return found


def _by_value(callspec: Any, key: str) -> str:
    """The group's key: its parameters' ids, each id pytest numbered by position
    (`shape0`, `shape1`: a tuple, a list, a dtype object) replaced by its value's text
    where that is plain (`(1000,)`). A key by position compared another value's baseline
    once the values were reordered or one was inserted before it: a 1,000-element sum
    against the 400,000-element one's baseline read +3586%, a REGRESSION of unchanged
    code. The group's name keeps pytest's id, as its node ids do.

    The numbered id is found in the key by its form, the parameter's name and digits, not
    by `callspec.indices`: pytest 8 and later renumber a direct parameter's index as the
    test's place among all its calls (`Metafunc._recompute_direct_params_indices`), which
    is the value's place in its list only where the test has one parametrization."""
    for name in callspec.params:
        if name == "candidate" or _written_by_pytest(callspec.params[name]):
            continue
        component = _numbered_component(key, name, callspec.params)
        text = plain_text(callspec.params[name]) if component is not None else None
        if component is not None and text is not None:
            key = _replaced_component(key, component, text)
    return key


def positional_parameters(callspec: Any, key: str) -> list[str]:
    """The parameters whose part of a group's key (`_by_value`'s) still numbers their value
    by its place in its list: a value with no plain text (an array, an object), whose
    baseline a reordered or inserted value would take over."""
    return [
        name
        for name in callspec.params
        if name != "candidate"
        and not _written_by_pytest(callspec.params[name])
        and _numbered_component(key, name, callspec.params) is not None
    ]


def _written_by_pytest(value: Any) -> bool:
    """Whether pytest ids `value` by its own text (a str, a number, a bool, None), never by
    the parameter's name and its place: an id of that form is then the user's own, an
    `ids=lambda n: f"n{n}"` of a parameter named `n` (`n10`), which the key kept as given,
    not replaced by the value's text (`10`), where a group priority read `key == "n10"`."""
    return value is None or isinstance(value, (str, bool, int, float, complex))


def _numbered_component(key: str, name: str, names: Iterable[str]) -> str | None:
    """The id pytest gives a value of parameter `name` that it cannot write (`name` and
    the value's place, `shape1`), where `key` holds exactly one. An id that also reads as
    that of another parameter whose name begins with this one (`x20`: x's 21st value, or
    x2's first) is not this one's: at worst a value of x keeps its number (a key by place,
    which the summary warns of), where x's value in x2's place gave two groups one key."""
    longer = [other for other in names if other != name and other.startswith(name)]
    found = {
        component
        for component in re.findall(rf"(?<=-){re.escape(name)}\d+(?=-)", f"-{key}-")
        if not any(re.fullmatch(rf"{re.escape(other)}\d+", component) for other in longer)
    }
    return found.pop() if len(found) == 1 else None


_MAX_VALUE_TEXT = 60
"""The longest value text a key takes in place of a positional id: longer, it is data
(an array's list), kept by its id."""


def plain_text(value: Any, depth: int = 0) -> str | None:
    """A text of `value` that is the same in every process and NumPy version, where it is
    made of plain values (numbers, strings, booleans, None, NumPy scalars and dtypes, in
    tuples and lists): None for anything else, and for a text too long to be a key."""
    text: str | None
    if value is None or isinstance(value, (bool, int, float, complex, str)):
        text = repr(value)
    elif isinstance(value, np.generic):
        text = repr(value.item())
    elif isinstance(value, np.dtype):
        text = str(value)
    elif isinstance(value, (tuple, list)) and depth < 3:
        parts = [plain_text(v, depth + 1) for v in value]
        if any(p is None for p in parts):
            return None
        inner = ", ".join(p for p in parts if p is not None)
        if isinstance(value, tuple):
            text = f"({inner},)" if len(parts) == 1 else f"({inner})"
        else:
            text = f"[{inner}]"
    else:
        return None
    return text if len(text) <= _MAX_VALUE_TEXT else None


def _replaced_component(key: str, component: str, text: str) -> str:
    """`key` with its parameter id `component` replaced by `text` (ids joined with '-')."""
    padded = f"-{key}-".replace(f"-{component}-", f"-{text}-", 1)
    return padded[1:-1]


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
        for component in dict.fromkeys((name, _escaped(name)))
        if has_component(callspec_id, component)
    ]
    # The longest: of "fast" and "fast-2", an id "fast-2-n16" holds both.
    if found:
        return max(found, key=lambda pair: len(pair[1]))
    return names[0], _escaped(names[0])


def repeated_nodeid(item: pytest.Item) -> str:
    """The item's node id without the ids of the parameters its test does not ask for
    (`Unrequested`): the id that its repetitions share."""
    name = item_function_nodeid(item)
    ids = item.nodeid.removeprefix(name)
    rest = _without_unrequested(item, ids[1:-1]) if ids.startswith("[") else ""
    return f"{name}[{rest}]" if rest else name


def _without_unrequested(item: pytest.Item, callspec_id: str) -> str:
    """`callspec_id`, an id of the item's parameters, without those of the parameters its
    test does not ask for (`Unrequested`)."""
    callspec = getattr(item, "callspec", None)
    parameters = item.config.stash.get(UNREQUESTED, {}).get(item_function_nodeid(item), ())
    for parameter in parameters if callspec is not None else ():
        part = parameter.component(callspec)
        if part is not None and has_component(callspec_id, part):
            callspec_id = without_component(callspec_id, part)
    return callspec_id


def _escaped(name: str) -> str:
    """`name` as pytest writes it in an id: non-ASCII characters escaped (`\\xe9`)."""
    return name.encode("unicode_escape").decode("ascii")


def _id_of(ids: Callable[[Any], object], value: Any) -> object:
    """What an `ids=` function names a value, as pytest calls it: None (pytest's own id)
    where it returns None or raises (pytest then reports the error on collection)."""
    try:
        return ids(value)
    except Exception:
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


def candidate_nodeids(config: pytest.Config, group: str) -> dict[str, str]:
    """The node id of each candidate's test item in `group`, by candidate name: where the
    candidate's id stands among the others' depends on the order of the parametrizations,
    so it is read from the items, not rebuilt from the group's name."""
    items = config.stash.get(GROUP_ITEMS, {}).get(group, [])
    return {item.stash[ITEM].candidate: item.nodeid for item in items}


def warning_marks(config: pytest.Config, group: str) -> dict[str, tuple[str, ...]]:
    """The filters of each candidate's test's `filterwarnings` marks in `group`, by
    candidate name, in the order pytest applies them to the test (`warning_marks.py`).

    A candidate whose item was not collected (a node id names only some of the group's
    tests) has a collected test's filters, that test's candidate's `pytest.param` marks
    replaced by its own: without them, tuning ran it under the project's filters alone,
    and where `filterwarnings = error` made its warning its failure, an update recorded
    another winner."""
    items = config.stash.get(GROUP_ITEMS, {}).get(group, [])
    found = {
        item.stash[ITEM].candidate: tuple(
            arg for mark in item.iter_markers("filterwarnings") for arg in mark.args
        )
        for item in items
    }
    if items:
        first = items[0]
        function = first.stash[ITEM].function
        for name, _ in function.candidates:
            if name not in found:
                marks = _filter_marks_of(first, function.marks, name)
                found[name] = tuple(arg for mark in marks for arg in mark.args)
    return found


def _filter_marks_of(
    item: pytest.Item, marks: Mapping[str, tuple[pytest.Mark, ...]], name: str
) -> list[pytest.Mark]:
    """The `filterwarnings` marks of candidate `name`'s test, made from `item`'s, a test of
    the same group: its own marks (the function's, then its parameters') with its
    candidate's `pytest.param` marks (`marks`) replaced by `name`'s, then its parents'."""
    every = list(item.iter_markers("filterwarnings"))
    count = sum(1 for mark in item.own_markers if mark.name == "filterwarnings")
    own, parents = every[:count], every[count:]
    at = len(own)
    for mark in reversed(marks.get(item.stash[ITEM].candidate, ())):
        if mark.name == "filterwarnings" and mark in own:
            at = len(own) - 1 - own[::-1].index(mark)
            del own[at]
    theirs = [mark for mark in marks.get(name, ()) if mark.name == "filterwarnings"]
    return own[:at] + theirs + own[at:] + parents


def expected_to_fail(config: pytest.Config, group: str) -> frozenset[str]:
    """The candidates of `group` whose tests are marked `xfail` here (a true condition, run):
    their failed checks are what the project expects, which the report does not raise.

    A candidate whose item was not collected (a node id names only some of the group's
    tests) is judged by its `pytest.param`'s marks, as in `not_run`: it was otherwise the
    reference that the selected candidate failed its check against, and the winner."""
    if not _marks_skip(config) or config.getoption("runxfail"):
        return frozenset()
    items = config.stash.get(GROUP_ITEMS, {}).get(group, [])
    marked = {
        item.stash[ITEM].candidate
        for item in items
        if any(_condition_holds(item, mark) for mark in item.iter_markers("xfail"))
    }
    if items:
        collected = {item.stash[ITEM].candidate for item in items}
        for name, own in items[0].stash[ITEM].function.marks.items():
            xfails = (mark for mark in own if mark.name == "xfail")
            if name not in collected and any(_condition_holds(items[0], m) for m in xfails):
                marked.add(name)
    return frozenset(marked)


def not_run(config: pytest.Config, group: str) -> Mapping[str, str]:
    """The candidates of `group` whose items are marked not to run here, each with the
    mark's reason: a `skip`, a true `skipif`, an `xfail(run=False)`, on the candidate's
    `pytest.param` or added by a conftest. They are never tuned nor the default reference,
    as pytest leaves their tests out: a candidate skipped as wrong or as crashing on this
    machine was otherwise the reference the others were checked against, or the winner.

    A candidate whose item was not collected (a node id or `--lf` names only some of the
    group's tests) is judged by its `pytest.param`'s marks: its skip mark is no less true.

    So is one whose test a fixture skipped at its setup before now (`SKIPPED_AT_SETUP`): a
    "needs feature X" fixture's skip of the first candidate left it the reference every
    other candidate failed its check against, and the winner.

    Read when the group first runs, once every hook has added its marks."""
    skipped = config.stash.get(SKIPPED_AT_SETUP, {}).get(group, {})
    marked = _marked_not_to_run(config, group)
    return {**skipped, **marked} if skipped else marked


def note_skipped_at_setup(item: pytest.Item, reason: str) -> None:
    """A candidate's test skipped at its setup, by a fixture (`pytest.skip()`, or
    `pytest.xfail()`): from now on its group leaves it out, as one marked to skip
    (`not_run`). A group tuned before cannot: it ran the candidate on its first test's
    fixtures."""
    spec = item.stash.get(ITEM, None)
    if spec is not None:
        skipped = item.config.stash.setdefault(SKIPPED_AT_SETUP, {})
        skipped.setdefault(spec.group, {}).setdefault(spec.candidate, reason)


def _marked_not_to_run(config: pytest.Config, group: str) -> Mapping[str, str]:
    known = config.stash.setdefault(NOT_RUN, {})
    if not _marks_skip(config):
        return {}
    if group not in known:
        items = config.stash.get(GROUP_ITEMS, {}).get(group, [])
        out: dict[str, str] = {}
        for item in items:
            why = _marked_out(item, item.iter_markers())
            if why is not None:
                out.setdefault(item.stash[ITEM].candidate, why)
        if items:
            collected = {item.stash[ITEM].candidate for item in items}
            marks = items[0].stash[ITEM].function.marks
            for name, own in marks.items():
                why = None if name in collected else _marked_out(items[0], own)
                if why is not None:
                    out[name] = why
        known[group] = out
    return known[group]


def _marks_skip(config: pytest.Config) -> bool:
    """Whether pytest acts on `skip`, `skipif` and `xfail` marks: under `-p no:skipping` it
    runs every test whatever its marks, and has no --runxfail option (reading it ended the
    run in an INTERNALERROR); so does the group then."""
    return bool(config.pluginmanager.hasplugin("skipping"))


def _marked_out(item: pytest.Item, marks: Iterable[pytest.Mark]) -> str | None:
    """Why pytest skips a test of these marks, or does not run it (`xfail(run=False)`),
    as its reason says; None where it runs. `item` is a test of the function, whose
    namespace a string condition is read in."""
    runxfail = item.config.getoption("runxfail")
    for mark in marks:
        if mark.name == "skip":
            return _reason(mark, "unconditional skip")
        if mark.name == "skipif" and _condition_holds(item, mark):
            return _reason(mark, "skipif")
        xfail_not_run = mark.name == "xfail" and mark.kwargs.get("run", True) is False
        if xfail_not_run and not runxfail and _condition_holds(item, mark):
            return _reason(mark, "xfail(run=False)")
    return None


def _reason(mark: pytest.Mark, default: str) -> str:
    """A skip mark's reason, as pytest shows it: `reason=`, a `skip`'s positional one, or
    a condition given as a string."""
    reason = mark.kwargs.get("reason")
    if reason is None and mark.name == "skip" and mark.args:
        reason = mark.args[0]
    if reason is None:
        conditions = (mark.kwargs["condition"],) if "condition" in mark.kwargs else mark.args
        strings = [c for c in conditions if isinstance(c, str)]
        reason = f"condition: {strings[0]}" if strings else default
    return str(reason)


def _condition_holds(item: pytest.Item, mark: pytest.Mark) -> bool:
    """A `skipif` or `xfail` mark's condition as pytest reads it: none is true, a string is
    evaluated in the test module's namespace. One pytest cannot read either reads as
    false: pytest reports it on that test."""
    conditions = (mark.kwargs["condition"],) if "condition" in mark.kwargs else mark.args
    if not conditions:
        return True
    namespace: dict[str, Any] = {"os": os, "sys": sys, "platform": platform, "config": item.config}
    for extra in reversed(item.ihook.pytest_markeval_namespace(config=item.config)):
        namespace.update(extra)
    namespace.update(getattr(getattr(item, "obj", None), "__globals__", {}))
    try:
        return any(bool(eval(c, namespace)) if isinstance(c, str) else bool(c) for c in conditions)
    except Exception:
        return False


def xdist_group_name(group: str) -> str:
    """The `xdist_group` name of an autotune group: without `]` and `@`, which would stop
    pytest-xdist from reading it back from the node id's `@name` suffix."""
    return "autotune:" + group.replace("[", "(").replace("]", ")").replace("@", "_")
