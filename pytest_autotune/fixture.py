"""The `autotune` fixture: one call's arguments checked, its group named (a test may tune
two sets, or one set at two sizes), and a production `TunableSet` checked or tuned from the
test (`fixture_modes`)."""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any

import pytest

from pytest_autotune.backends.cuda import CudaUnavailableError
from pytest_autotune.call_limit import Names, call_time_limit
from pytest_autotune.collection import (
    SHARED_NODEID,
    item_function_nodeid,
    outside_rootdir,
    tuner_of_test,
)
from pytest_autotune.failing import fail
from pytest_autotune.fixture_modes import check_set, tune_set
from pytest_autotune.function_spec import form_error
from pytest_autotune.group_request import GroupRequest
from pytest_autotune.item_groups import repeated_nodeid
from pytest_autotune.key_checks import checked_key
from pytest_autotune.marker_options import (
    near_names_hint,
    option_error,
    run_setting_hint,
    work_error,
)
from pytest_autotune.session import AutotuneSession
from pytest_autotune.stash_keys import SESSION
from pytest_autotune.time_limit import Limited, TimeLimit, TimeLimitExceeded
from pytest_autotune.tune.config import ConfigError
from pytest_autotune.tune.inputs import takes_inputs, used_up_input
from pytest_autotune.tune.key import stable_key
from pytest_autotune.tune.local import LocalTuner
from pytest_autotune.tune.tunable import PriorityError, tune_plan, unplanned
from pytest_autotune.tune.tunable_set import TunableSet
from pytest_autotune.tune.wording import counted

CALL_GROUPS = pytest.StashKey[dict[tuple[str, str, str], str]]()
"""The groups a test's `autotune` fixture calls tuned, by tuner, stable key and checksum
(`call_group`); read back for what pytest says of the test (an expected failure,
`plugin.pytest_runtest_makereport`)."""
RAISED_NAMES = pytest.StashKey[dict[str, set[str]]]()
"""The candidates of each fixture call's group that raised while it was tuned, by name
(`fixture_modes.tune_set`): kept for the session, as the group is tuned once, and each test
that calls it again (a repetition under pytest-repeat) shows the traceback too."""

_CALL_DEFAULTS: dict[str, Any] = {
    "work": None,
    "thresholds": None,
    "reference": None,
    "rtol": None,
    "atol": None,
    "max_regression": None,
    "check_output": True,
    "time_limit": None,
    "level": None,
}
"""The keyword options of a call of the fixture but `tuner`, and their defaults."""

FIXTURE_OPTIONS = (*_CALL_DEFAULTS, "tuner")
"""The keyword options of a call of the `autotune` fixture: the marker's that apply to a
set built elsewhere (not its candidates, key, groups or device: the device is the test's,
`_marked_options`), and the tuner to write its winners under."""


def autotune_calls(request: pytest.FixtureRequest) -> Callable[..., Any]:
    """The `autotune` fixture's value, the function its test calls (`plugin.autotune`, the
    fixture, says how a test uses it)."""
    return _FixtureCall(_run_set, request.config.stash[SESSION], request.node)


class _FixtureCall(functools.partial[Any]):
    """The fixture's function, named by its test where pytest shows it: a failing test's
    traceback prints each of its arguments, and a partial's repr spelt out our function, our
    session object and the test's node there."""

    def __repr__(self) -> str:
        return f"<autotune fixture of {self.args[1].nodeid}>"


def _run_set(
    session: AutotuneSession,
    node: pytest.Item,
    tunables: TunableSet,
    *inputs: Any,
    tuner: LocalTuner | str | None = None,
    **given: Any,
) -> Any:
    """One call of the fixture: its arguments checked, then the set checked or tuned. Each
    option the call leaves out is its test's marker's (`_marked_options`), else the default
    (`_CALL_DEFAULTS`)."""
    __tracebackhide__ = True  # a candidate's traceback shows the user's frames alone
    nodeid = node.nodeid
    unknown = {name: value for name, value in given.items() if name not in _CALL_DEFAULTS}
    options = {
        **_CALL_DEFAULTS,
        "device": None,
        **_marked_options(node),
        **{name: value for name, value in given.items() if name in _CALL_DEFAULTS},
    }
    work = options["work"]
    _check_arguments(node, tunables, inputs, options, tuner, unknown)
    candidates = tuple(zip(tunables.names, tunables.fns, strict=True))
    names = Names(candidates)
    limit = call_time_limit(session, options)

    def run(candidate: Callable[..., Any], *values: Any) -> Any:
        __tracebackhide__ = True
        return limit.call(names(candidate), candidate, *values)

    with limit.armed(), session.level_scope(options):
        try:
            if work is None and tunables.work is not None and session.settings.tune:
                # The set's own model (`with_work`), for the roof column of a tuning run;
                # a plain run never ran it, and tuning checks what it returns.
                options["work"] = tunables.work(*inputs)
                _fail_on(nodeid, work_error(options["work"], "the set's with_work model"))
            else:
                options["work"] = work(*inputs) if callable(work) else work
                _fail_on(nodeid, work_error(options["work"]))
            # Called in check mode too: a key_gen that fails or returns what cannot be
            # cached, or a group priority that fails for the key, fails the plain run, not
            # only --autotune (or the library's callers).
            key = checked_key(_key_of(nodeid, tunables, inputs), f"{nodeid}: the set's key_gen")
            if not session.settings.tune:
                # Its groups' priorities, as tuning asks them.
                plan = tune_plan(key, tunables.tunables)
                skipped = {tunables.names[i] for i in unplanned(plan, len(tunables))}
                return check_set(session, candidates, run, inputs, options, skipped)
            return _tune_call(
                session, node, tunables, tuner, key, candidates, run, inputs, options, limit
            )
        # A bad `reference=` or device, or a group's priority that returned no number.
        except (ConfigError, CudaUnavailableError, PriorityError) as exc:
            fail(f"{nodeid}: {exc}")
        except TimeLimitExceeded as exc:
            fail(f"{nodeid}: candidate {exc.name!r} {exc}")


def _key_of(nodeid: str, tunables: TunableSet, inputs: tuple[Any, ...]) -> Any:
    """The set's key of `inputs`. Where the key generator raises on one input that is a
    tuple it could have taken unpacked (`autotune(tunables, (x,))`, the inputs given as
    `LocalTuner.execute` takes them), the test fails saying the fixture takes them as
    arguments: the key generator's own error ("'tuple' object has no attribute 'size'")
    named neither."""
    __tracebackhide__ = True
    try:
        return tunables.key_gen(*inputs)
    except Exception as exc:
        if len(inputs) != 1 or not isinstance(inputs[0], tuple):
            raise
        if not takes_inputs(tunables.key_gen, inputs[0]):
            raise
        fail(
            f"{nodeid}: the set's key_gen raised {type(exc).__name__}: {exc}, given one input,"
            f" a tuple of {counted(len(inputs[0]), 'value')}: the autotune fixture takes the"
            " inputs as arguments, autotune(tunables, x, y), where LocalTuner.execute takes"
            " them as one tuple"
        )


def _set_hint(given: object) -> str:
    """What to pass in place of `given`, which is no `TunableSet`: a function called with no
    arguments is most likely the one that builds the set (`mylib.make_set`, passed where
    README's `mylib.TUNER.init(mylib.make_set)` goes), which the user has already written."""
    name = getattr(given, "__name__", None)
    if callable(given) and isinstance(name, str) and name.isidentifier():
        try:
            inspect.signature(given).bind()
        except (TypeError, ValueError):  # it needs arguments, or has no signature to read
            pass
        else:
            return (
                f"to pass the set it builds, call it: autotune({name}(), ...), or"
                f" autotune(TUNER.init({name}), ...) for a set of your LocalTuner"
            )
    return "build one with TunableSet(key_gen, tunables=[Tunable(name, fn), ...])"


def _check_arguments(
    node: pytest.Item,
    tunables: TunableSet,
    inputs: tuple[Any, ...],
    options: Mapping[str, Any],
    tuner: LocalTuner | str | None,
    unknown: Mapping[str, Any],
) -> None:
    """A fixture call's arguments checked, each failing the test in a line: a node id of its
    own, no unknown option, a `TunableSet` with candidates first, the options' values, and
    inputs its key generator takes."""
    nodeid = node.nodeid
    shared = node.stash.get(SHARED_NODEID, None)
    if shared is not None:  # another file's test has this node id, and would share its groups
        pytest.fail(shared, pytrace=False)
    if unknown:
        # As the marker says it: a misspelt option named "_run_set()", a function of ours.
        # An input passed by keyword (`x=arr`, as the key_gen names it) lands here too,
        # and the list of options alone did not say how to pass it.
        fail(
            f"{nodeid}: autotune: unknown option(s) {sorted(unknown)};"
            f" known: {', '.join(FIXTURE_OPTIONS)}"
            f"{near_names_hint(sorted(unknown), FIXTURE_OPTIONS)}"
            f"{run_setting_hint(sorted(unknown))};"
            " inputs go by position: autotune(tunable_set, *inputs)"
        )
    if not isinstance(tunables, TunableSet):
        pytest.fail(
            f"{nodeid}: the autotune fixture takes a TunableSet first, got {tunables!r};"
            f" {_set_hint(tunables)}",
            pytrace=False,
        )
    checked = (
        *("thresholds", "rtol", "atol", "check_output", "max_regression", "work", "reference"),
        *("time_limit", "level", "device"),
    )
    checked_options = {"tuner": tuner, **{name: options[name] for name in checked}}
    if options["work"] is None:
        # A set's own `with_work` model is the work a floor of `thresholds=` is judged on,
        # as `work=` would be: without it, thresholds= read as a floor with nothing to judge.
        checked_options["work"] = tunables.work
    _fail_on(nodeid, option_error(checked_options))
    if len(tunables) == 0:
        # Every candidate of none "declined": the test was skipped, and CI stayed green.
        pytest.fail(
            f"{nodeid}: the TunableSet has no candidates (with_() returns a new set, leaving"
            " the one it is called on as it was: tunables = tunables.with_(...))",
            pytrace=False,
        )
    _fail_on(nodeid, _inputs_error(tunables, inputs))


_MARKED = (*(name for name in _CALL_DEFAULTS if name != "work"), "device")
"""The options of an `autotune` marker that a fixture test takes from it: those a call
takes but `work` (a marker's is a function of the fixtures, a call's of its inputs), and the
device, which is the test's, not a call's."""

_TIED = {"reference": "candidates", "thresholds": "work"}
"""The marker's options that are of another of its options: a `reference` names or stands
in for one of the marker's `candidates` (called with its test's fixtures), and a floor of
`thresholds` is judged on the marker's `work`. A marker that gives those is its marked
tests', and a fixture test beside them takes neither from it."""


def _marked_options(node: pytest.Item) -> dict[str, Any]:
    """The options the `autotune` markers of the test name (its own, else its class's or its
    module's `pytestmark`, the nearest first), for its calls to leave out. Dropped, a module
    of GPU tests (`pytestmark = pytest.mark.autotune(device="cuda")`) had its fixture tests
    tuned on the CPU of a machine without a GPU, filed there, and passing; a marker's
    `rtol=` was ignored, its test failing at the default tolerance. An option a fixture
    test cannot take (`candidates`, `key`, `groups`, `work`) on the test's own marker fails
    it saying where to give it; on its class's or module's it is for the marked tests
    there, as are the `reference` and `thresholds` given with them (`_TIED`): a fixture test
    in a module of marker tests failed as its set "names no candidate" of the module's
    reference, or as a floor "without work=" where the call gave none."""
    options: dict[str, Any] = {}
    for owner, marker in node.iter_markers_with_node("autotune"):
        if owner is node:
            # Its own marker's form is checked as a marked test's (a typo, `rtoll=`, or a
            # positional value); a class's or module's is its marked tests' to check.
            form = form_error([marker], marker.kwargs)
            if form is not None:
                pytest.fail(f"{node.nodeid}: {form}", pytrace=False)
            misplaced = sorted(set(marker.kwargs) - set(_MARKED))
            if misplaced:
                pytest.fail(
                    f"{node.nodeid}: the autotune marker's"
                    f" {', '.join(f'{name}=' for name in misplaced)}"
                    f" {'does' if len(misplaced) == 1 else 'do'} not"
                    " apply to a test of the autotune fixture, which tunes the TunableSet"
                    " it is given: the set holds the candidates and key_gen, and work= goes"
                    " to the call, autotune(tunable_set, *inputs, work=...)",
                    pytrace=False,
                )
        for name in _MARKED:
            if name in marker.kwargs and _TIED.get(name) not in marker.kwargs:
                options.setdefault(name, marker.kwargs[name])
    return options


def _tune_call(
    session: AutotuneSession,
    node: pytest.Item,
    tunables: TunableSet,
    tuner: LocalTuner | str | None,
    key: Any,
    candidates: tuple[tuple[str, Callable[..., Any]], ...],
    run: Callable[..., Any],
    inputs: tuple[Any, ...],
    options: dict[str, Any],
    limit: TimeLimit,
) -> Any:
    """Tune mode: the call's group named, the set's functions each under the limit, then the
    group tuned and judged (`fixture_modes.tune_set`)."""
    __tracebackhide__ = True  # a candidate's traceback shows the user's frames alone
    test = tuner_of_test(item_function_nodeid(node))
    tuner_name = fixture_tuner_name(tunables, tuner, test)
    _note_outside_rootdir(session, node, tuner_name)
    limited = tunables
    group_name = call_group(node, tuner_name, key, tunables.checksum)
    raised = node.config.stash.setdefault(RAISED_NAMES, {}).setdefault(group_name, set())
    if limit.seconds is not None:
        # The tuner calls the set's own functions: each under the limit, as the
        # marker's candidates are called through its test body. The gate measures
        # the bare winner (`unlimited`), what the library runs.
        limited = replace(
            tunables,
            tunables=tuple(
                replace(t, fn=Limited(t.fn, limit, t.name, raised)) for t in tunables.tunables
            ),
        )
    group = GroupRequest(
        group=group_name,
        tuner_name=tuner_name,
        key=key,
        candidates=candidates,
        run=run,
        inputs=inputs,
        options=options,
        tunables=limited,
        filed_before=test if tuner_name != test else None,
    )
    return tune_set(session, node, group, raised)


def _inputs_error(tunables: TunableSet, inputs: tuple[Any, ...]) -> str | None:
    """Why the set's key generator cannot take the inputs the fixture was given, if it
    cannot: `autotune(make_set())`, its inputs forgotten, raised a TypeError from a
    traceback through this module. A key generator whose signature cannot be read is
    left to its call. An input one call uses up (a generator) fails a plain run as tuning
    refuses it: its checks gave the reference an emptied generator, and the candidate after
    it "differed"."""
    found = used_up_input(inputs)
    if found is not None:
        index, used_up = found
        return (
            f"input {index} {used_up}, which one call uses"
            " up: every candidate is called on it (and the reference again, to check"
            " each), and the first would leave it empty for the others; pass a list or a"
            " tuple (list(it))"
        )
    try:
        signature = inspect.signature(tunables.key_gen)
    except (TypeError, ValueError):
        return None
    try:
        signature.bind(*inputs)
    except TypeError as exc:
        return (
            f"the set's key_gen cannot be called with the {counted(len(inputs), 'input')}"
            f" given ({exc}): autotune(tunable_set, *inputs) calls key_gen(*inputs), and"
            " each candidate as fn(*inputs)"
        )
    return None


def call_group(node: pytest.Item, tuner: str, key: Any, checksum: str) -> str:
    """The group of one fixture call: the test's node id for its first set and key, and the
    id with the call's number for each other one. A test may tune two sets, or one set at
    two sizes, and each is a cache entry and a verdict of its own: named after the test
    alone, the second call was served the first call's winner (another set's candidate, on
    the second call's inputs) and never tuned. A call that repeats an earlier one (the same
    tuner, key and candidates) is that group again."""
    groups = node.stash.setdefault(CALL_GROUPS, {})
    identity = (tuner, stable_key(key), checksum)
    if identity not in groups:
        number = len(groups) + 1
        # Its repetitions (pytest-repeat's `--count`) share it: named by each node id, the
        # second's call was refused as a key collision with the first's.
        nodeid = repeated_nodeid(node)
        groups[identity] = nodeid if number == 1 else f"{nodeid} (call {number})"
    return groups[identity]


def _fail_on(nodeid: str, error: str | None) -> None:
    """A fixture argument's error, in the fixture's words."""
    if error is not None:
        pytest.fail(
            f"{nodeid}: {error.replace('@pytest.mark.autotune', 'autotune')}", pytrace=False
        )


def _note_outside_rootdir(session: AutotuneSession, node: pytest.Item, tuner_name: str) -> None:
    """Say once where a set of no tuner, named after its test, is in a file outside the root
    dir, whose name depends on the folder pytest was given (`collection.outside_rootdir`)."""
    if tuner_name != tuner_of_test(item_function_nodeid(node)):
        return
    warning = outside_rootdir(node, tuner_name, session.settings)
    if warning is not None and warning not in session.output.notes:
        session.note(warning)


def fixture_tuner_name(tunables: TunableSet, tuner: LocalTuner | str | None, nodeid: str) -> str:
    """The tuner a fixture call tunes for: `tuner=`, else the set's own, else the test's."""
    if isinstance(tuner, LocalTuner):
        return tuner.name
    return tuner or tunables.tuner or nodeid
