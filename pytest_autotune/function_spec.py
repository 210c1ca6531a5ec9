"""What a marked test function's `autotune` marker says (`FunctionSpec`): its options, its
candidates in order (the marker's, or those pytest parametrizes it over), and what is wrong
with them, failing the function's tests by name rather than the collection."""

from __future__ import annotations

import ast
import functools
import inspect
import textwrap
from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any, cast

import pytest

from pytest_autotune.collection import (
    FUNCTION_PATHS,
    FUNCTIONS,
    FunctionSpec,
    function_nodeid,
    shared_nodeid_error,
)
from pytest_autotune.key_checks import MEMORY_ADDRESS
from pytest_autotune.marker_options import near_names_hint, option_error, run_setting_hint
from pytest_autotune.parameter_ids import printable, shown
from pytest_autotune.parametrized_candidates import (
    beside_a_hook,
    candidate_marks,
    fixture_params,
    one_pass_error,
    parametrized_candidates,
    params,
    shared_parametrize_error,
)
from pytest_autotune.plugin_settings import is_builtin_device, unserved_device

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
    it still may (`generate_tests.CandidatesOfEveryHook`)."""
    options, _ = marker_options(metafunc.definition)
    calls = getattr(metafunc, "_calls", ())
    return (
        "candidate" in metafunc.fixturenames
        and options.get("candidates") is None
        and parametrized_candidates(metafunc) is None
        and shared_parametrize_error(metafunc) is None
        and not fixture_params(metafunc)
        and not any("candidate" in params(c) for c in calls)
    )


def unprovided_device(config: pytest.Config, device: Any) -> str | None:
    """Why no client can serve the marker's `device`, where none can: a name that is not
    built in, with no `pytest_autotune_client` hook registered. Said in plain pytest too,
    as the marker's other bad values are: a typo (`device="gpu"`) otherwise passed every
    plain run and failed only the tuning job. Where a hook is registered, only calling it
    tells, and plain pytest does not make a client (a hook may need its device present).
    Asked when a test runs, not at its collection: a conftest of a folder collected after
    the test's own may register the hook."""
    # Any case, as the settings' parser reads it (`device="CPU"` is cpu, as the option's).
    if not isinstance(device, str) or is_builtin_device(device.strip().lower()):
        return None
    if config.pluginmanager.hook.pytest_autotune_client.get_hookimpls():
        return None
    return unserved_device(device)


def form_error(markers: list[pytest.Mark], kwargs: Mapping[str, Any]) -> str | None:
    """What is wrong with the form of `autotune` marks whose options are `kwargs`: a
    positional argument, or an option no marker takes (with the near names and where a run
    setting goes); None where nothing is."""
    if any(marker.args for marker in markers):
        return f"@pytest.mark.autotune takes keyword options only ({', '.join(MARKER_OPTIONS)})"
    unknown = sorted(set(kwargs) - set(MARKER_OPTIONS))
    if not unknown:
        return None
    known = ", ".join(MARKER_OPTIONS)
    hint = near_names_hint(unknown, MARKER_OPTIONS) + run_setting_hint(unknown)
    return f"@pytest.mark.autotune: unknown option(s) {unknown}; known: {known}{hint}"


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
    error = form_error(markers, kwargs)
    if error is not None:
        return {k: v for k, v in kwargs.items() if k in MARKER_OPTIONS}, error
    # Two marks on the test itself are no shared and closer pair: the lower one's value
    # was taken and the other's dropped without a word (candidates that ran in no test).
    own = [m.kwargs for m in definition.own_markers if m.name == "autotune"]
    twice = sorted({k for i, a in enumerate(own) for b in own[i + 1 :] for k in a if k in b})
    if twice:
        given = ", ".join(f"{k}=" for k in twice)
        return kwargs, f"two @pytest.mark.autotune marks of the test give {given}; keep one"
    return kwargs, None


def _own_option(definition: Any, name: str) -> bool:
    """Whether the test's own `autotune` marker (not its class's or module's) sets `name`."""
    return any(m.name == "autotune" and name in m.kwargs for m in definition.own_markers)


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
            f"{nodeid}: an autotune test takes a `candidate` argument"
            f"{marked_by(metafunc.definition) or _named_otherwise(metafunc)}",
            pytrace=False,
        )
    candidates = options.pop("candidates", None)
    generated, candidates, hook_error = beside_a_hook(metafunc, candidates)
    error = error or hook_error
    candidates, both = _closer_candidates(metafunc, candidates)
    error = error or both
    pairs: tuple[tuple[str, Callable[..., Any]], ...] = ()
    parametrized = None
    marks: dict[str, tuple[pytest.Mark, ...]] = {}
    refused = _params_refused(candidates)
    error = error or refused
    candidates = cast(Any, None if refused else candidates)  # Any, as the marker gave it
    if candidates is not None:
        pairs, wrong = _marker_pairs(candidates)
        error = error or wrong
    else:
        parametrized = parametrized_candidates(metafunc) if generated is None else generated
        marks = candidate_marks(metafunc)
        if parametrized is None:
            error = error or (
                "give the candidates with @pytest.mark.autotune(candidates={...})"
                " or @pytest.mark.parametrize('candidate', [...])"
            )
        pairs = parametrized or ()
    error = (
        error or _empty_name_error(pairs) or duplicate_error(pairs) or _unstable_name_error(pairs)
    )
    shared = shared_parametrize_error(metafunc) or one_pass_error(metafunc)
    if shared is not None:
        # pytest parametrizes `candidate` already: doing it again stopped the session.
        error = shared
    else:
        error = _parametrize(metafunc, pairs, candidates, parametrized) or error
    error = error or option_error(options) or groups_error(options.get("groups"), pairs)
    error = _body_error(metafunc) or error or _candidate_fixture_error(metafunc)
    error = None if error is None else f"{nodeid}: {error}"
    return FunctionSpec(nodeid, pairs, options, error, marks)


def _closer_candidates(metafunc: pytest.Metafunc, candidates: object) -> tuple[object, str | None]:
    """The marker's candidates, or None where the test's own parametrize of `candidate`
    gives them instead; and the error where both are on the test itself."""
    # A module's or class's candidates are shared, and the test's own parametrize of
    # `candidate` is closer: both would parametrize it twice.
    inherited = candidates is not None and not _own_option(metafunc.definition, "candidates")
    if inherited and parametrized_candidates(metafunc) is not None:
        return None, None
    if candidates is not None and parametrized_candidates(metafunc) is not None:
        # Both on the test itself: neither is closer. Parametrizing `candidate` twice
        # stopped the whole collection at pytest's "duplicate parametrization", which
        # named neither; the parametrize's items run and fail by name instead.
        return None, (
            "autotune(candidates=...) and @pytest.mark.parametrize('candidate', ...) both"
            " give this test's candidates; keep one"
        )
    return candidates, None


def _marker_pairs(
    candidates: Any,
) -> tuple[tuple[tuple[str, Callable[..., Any]], ...], str | None]:
    """The marker's `candidates=` (given) as (name, function) pairs in order, and what is
    wrong with them, if anything."""
    if _callables(candidates):
        # A list of functions, named as a parametrize over them is: by `__name__`.
        pairs = tuple(
            (printable(str(getattr(f, "__name__", f"candidate{i}"))), f)
            for i, f in enumerate(candidates)
        )
        duplicate = duplicate_error(
            pairs, hint="; name them with autotune(candidates={name: function, ...})"
        )
        return pairs, duplicate
    if not isinstance(candidates, Mapping) or not candidates:
        return (), (
            "autotune(candidates=...) must be a non-empty dict of name -> callable"
            f" (or a list of functions), got {type(candidates).__name__} {shown(candidates)}"
        )
    pairs = tuple((printable(str(n)), f) for n, f in candidates.items())
    # A value that is no function failed its test in the body's call ("'int' object is not
    # callable"), naming no option, and tuning went on around it as a candidate that raised.
    uncallable = next(((n, f) for n, f in pairs if not callable(f)), None)
    if uncallable is not None:
        name, value = uncallable
        return pairs, (
            f"autotune(candidates=...) maps each name to a callable; {name!r} is"
            f" {type(value).__name__} {shown(value)}"
        )
    return pairs, None


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
    if parametrized is None and fixture_params(metafunc):
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
    `candidate` itself) requests `candidate`, directly, through another fixture or as
    `request.getfixturevalue("candidate")` (`_gets_candidate`). Such a
    fixture is set up once, for its test's own candidate, and every candidate's body is
    called on that test's fixture values (the reference in a plain run, the whole group
    when tuning): each ran the first one's compiled kernel or plan, so a wrong candidate
    passed its check and a candidate won on another's time."""
    definitions = getattr(metafunc, "_arg2fixturedefs", {})
    memo: dict[str, bool] = {}

    def requests(name: str) -> bool:
        if name not in memo:
            memo[name] = False  # a cycle requests nothing more
            defs = definitions.get(name) or ()
            argnames = {a for d in defs for a in d.argnames} - {name}
            memo[name] = (
                "candidate" in argnames
                or any(requests(a) for a in argnames)
                or any(_gets_candidate(d.func) for d in defs if "request" in d.argnames)
            )
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


@functools.lru_cache(maxsize=1024)
def _gets_candidate(func: Callable[..., Any]) -> bool:
    """Whether a fixture function asks for `candidate` at run time, as
    `request.getfixturevalue("candidate")`: its signature does not name it, and every
    candidate then ran the first test's (tuning timed one candidate under each name, and the
    check compared it with itself). Read from its source, where there is one; a name held in
    a variable is not seen."""
    try:
        tree = ast.parse(textwrap.dedent(inspect.getsource(inspect.unwrap(func))))
    except (OSError, TypeError, SyntaxError, ValueError):
        return False
    return any(
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "getfixturevalue"
        and any(
            isinstance(name, ast.Constant) and name.value == "candidate"
            for name in [*node.args[:1], *(k.value for k in node.keywords if k.arg == "argname")]
        )
        for node in ast.walk(tree)
    )


def _params_refused(candidates: object) -> str | None:
    """Why `candidates=` that holds a `pytest.param(...)`, a parametrize's item, is refused;
    None for one that holds none. It was refused as "must be a non-empty dict ... got list
    [ParameterSet(...)]", which did not say where a candidate's marks go."""
    values = candidates.values() if isinstance(candidates, Mapping) else candidates
    params = isinstance(values, (list, tuple, type({}.values()))) and any(
        isinstance(v, PARAM) for v in values
    )
    return (
        "autotune(candidates=...) takes functions, not pytest.param(...): to mark a"
        " candidate (skip, xfail), give the candidates with"
        " @pytest.mark.parametrize('candidate', [fn, pytest.param(fn2, marks=...)])"
        if params
        else None
    )


PARAM = type(pytest.param(None))
"""The class of `pytest.param(...)`, which pytest does not export."""


def _named_otherwise(metafunc: pytest.Metafunc) -> str:
    """A hint where the test parametrizes its callables under another name
    (`parametrize("impl", [np.sort, ...])`): the plugin reads them from `candidate` only."""
    for mark in metafunc.definition.iter_markers("parametrize"):
        names = mark.args[0] if mark.args else mark.kwargs.get("argnames")
        values: Any = mark.args[1] if len(mark.args) > 1 else mark.kwargs.get("argvalues", ())
        if isinstance(names, str):
            names = [n.strip() for n in names.split(",") if n.strip()]
        if not isinstance(names, (list, tuple)) or len(names) != 1:
            continue
        try:
            values = [v.values[0] if isinstance(v, PARAM) else v for v in values]
        except (TypeError, IndexError):
            continue
        if values and all(callable(v) for v in values):
            return (
                f"; its parametrized {names[0]!r} looks like the candidates: name that"
                " argument `candidate` (parametrize('candidate', [...]))"
            )
    return ""


def parameter_mark_error(test: pytest.Item) -> str | None:
    """Why an `autotune` mark among a parameter's marks (`pytest.param(4,
    marks=pytest.mark.autotune(...))`) is refused, where the test has one: pytest adds
    those marks to its tests only after the function's marker was read, so a test marked
    there alone ran as a plain test (its candidates never checked nor tuned) and passed,
    and an option given there (a looser `rtol` for float16) was never applied."""
    marks = getattr(getattr(test, "callspec", None), "marks", ())
    if not any(mark.name == "autotune" for mark in marks):
        return None
    return (
        f"{test.nodeid}: an `autotune` mark in a parameter's marks (pytest.param(...,"
        " marks=...)) is never read: a marker's options are its test function's, shared by"
        " all its parameters; put the mark on the test, its class or its module, and give"
        " parameters that need other options (an rtol for float16) a test of their own"
    )


def marked_by(test: pytest.Item) -> str:
    """Where an inherited `autotune` mark comes from: a plain test (or a unittest.TestCase)
    beside tests that share a module's `pytestmark` or a class's marker is marked too,
    which its author never did."""
    node = next(test.iter_markers_with_node("autotune"))[0]
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


def _unstable_name_error(pairs: tuple[tuple[str, Callable[..., Any]], ...]) -> str | None:
    """A candidate name holding an object's default repr (`ids=str` or `ids=repr` over the
    functions: `<function f at 0x7f...>`) is new in every process: each update recorded a
    winner of a name no later run has, and each gate said "not comparable" (tuned over
    another candidate list), listing the same functions as added and removed."""
    for index, (name, fn) in enumerate(pairs):
        if MEMORY_ADDRESS.search(name):
            return (
                f"candidate {index} ({_describe(fn)}) is named {name!r}, which holds a memory"
                " address that changes with every process: no later run would find its"
                " baseline; name it by its __name__ (leave out ids=str or ids=repr) or give it"
                " an id (pytest.param(fn, id=...), ids=[...] or candidates={name: fn})"
            )
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
