"""The `autotune` fixture: tune or check a production `TunableSet` from a test, and what it
shares with the marker's tests (each candidate's name for a time limit's message, the
limit itself, the check that a key can be cached)."""

from __future__ import annotations

import functools
import inspect
import re
import reprlib
from collections.abc import Callable, Collection, Mapping
from dataclasses import replace
from typing import Any, NoReturn

import pytest

from pytest_autotune.backends.cuda import CudaUnavailableError
from pytest_autotune.check_mode import check_candidate
from pytest_autotune.collection import SHARED_NODEID, item_function_nodeid, outside_rootdir
from pytest_autotune.group_request import GroupRequest
from pytest_autotune.item_groups import repeated_nodeid
from pytest_autotune.marker_options import option_error, work_error
from pytest_autotune.session import AutotuneSession
from pytest_autotune.stash_keys import IN_BODY, SESSION
from pytest_autotune.time_limit import Limited, TimeLimit, TimeLimitExceeded, crashed
from pytest_autotune.tune.clone import clone_value
from pytest_autotune.tune.config import ConfigError
from pytest_autotune.tune.errors import UNPLANNED, AutotuneError, AutotuneSkip, declines
from pytest_autotune.tune.files import dumps
from pytest_autotune.tune.inputs import used_up_input
from pytest_autotune.tune.key import AutotuneKey, key_to_json, stable_key
from pytest_autotune.tune.local import LocalTuner
from pytest_autotune.tune.settings import DEFAULT_TIME_LIMIT_S
from pytest_autotune.tune.tunable import PriorityError, tune_plan, unplanned
from pytest_autotune.tune.tunable_set import TunableSet
from pytest_autotune.tune.wording import counted

CALL_GROUPS = pytest.StashKey[dict[tuple[str, str, str], str]]()
"""The groups a test's `autotune` fixture calls tuned, by tuner, stable key and checksum
(`call_group`); read back for what pytest says of the test (an expected failure,
`plugin.pytest_runtest_makereport`)."""
GATE_FAILURES = pytest.StashKey[dict[str, None]]()
"""The gate's failures of a test's `autotune` fixture calls in its body so far, each with
its group, once each (a call repeated finds its group's failure again): the test fails
with all of them once its body has run (`fail_on_gate_failures`; a body that raised,
skipped or xfailed, `gate_failures_of`), so that a regression at one size does not leave
the sizes after it untuned and unjudged."""
RAISED_NAMES = pytest.StashKey[dict[str, set[str]]]()
"""The candidates of each fixture call's group that raised while it was tuned, by name
(`_tune_set`): kept for the session, as the group is tuned once, and each test that
calls it again (a repetition under pytest-repeat) shows the traceback too."""


class Names:
    """The name of a candidate function, for a time limit's message."""

    def __init__(self, candidates: tuple[tuple[str, Callable[..., Any]], ...]) -> None:
        self._by_id = {id(fn): name for name, fn in candidates}

    def __call__(self, fn: Callable[..., Any]) -> str:
        return self._by_id.get(id(fn), "the reference")


FIXTURE_OPTIONS = (
    *("work", "thresholds", "reference", "rtol", "atol", "max_regression", "tuner"),
    *("check_output", "time_limit", "level"),
)
"""The keyword options of a call of the `autotune` fixture: the marker's that apply to a
set built elsewhere (not its candidates, key, groups or device)."""


def call_time_limit(session: AutotuneSession, options: Mapping[str, Any]) -> TimeLimit:
    """The marker's limit, else the settings' (command line, environment, YAML, ini), else
    the default under --autotune; a plain run has none unless one is set."""
    seconds = session.settings.for_marker(options).engine.time_limit
    if seconds is None and session.settings.tune:
        seconds = DEFAULT_TIME_LIMIT_S
    return TimeLimit(seconds)


def fail(message: str) -> NoReturn:
    """Fail the test with `message` alone, also from inside an `except` block: there pytest
    would print the error being handled first, then "During handling of the above exception,
    another exception occurred:", and the one line would read as three."""
    raise pytest.fail.Exception(message, pytrace=False) from None


def checked_key(value: Any, what: str) -> Any:
    """A key the cache can hold: hashable, JSON, and finite (JSON has no NaN or inf), and
    the same in the next process (`fail_if_unstable`)."""
    try:
        hash(value)
    except TypeError as exc:
        fail(
            f"{what} returned an unusable key {reprlib.repr(value)}: {exc};"
            f" {_hashable_advice(value)}"
        )
    try:
        text = dumps(key_to_json(value))
    except (TypeError, ValueError) as exc:
        # Shown short: an array's whole repr ran to hundreds of lines.
        fail(f"{what} returned an unusable key {reprlib.repr(value)}: {exc}")
    fail_if_unstable(text, f"{what} returned the key {value!r}, which")
    return value


def _hashable_advice(value: Any) -> str:
    """What makes an unhashable key hashable: an `AutotuneKey` class of its own is frozen
    (a plain `@dataclass` has no hash), and its fields, as any key, are built of ints, strs
    and tuples; "return an int, a str or a tuple" sent such a class's user to give it up."""
    if isinstance(value, AutotuneKey) and type(value).__hash__ is None:
        return f"decorate {type(value).__name__} with @dataclass(frozen=True)"
    what = "give its fields values" if isinstance(value, AutotuneKey) else "return a value"
    return (
        f"{what} built from sizes and names, as an int, a str or a tuple of them (tuple(x.shape))"
    )


_MEMORY_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+>")
"""Python's default repr of an object, `<Shape object at 0x7f3a...>`, in a key's text."""


def fail_if_unstable(key_text: str, subject: str, advice: str = "") -> None:
    """Fail where a key holds an object's default repr: its address is new in every
    process, so each update would add an entry that no later run reads, and each gate
    would say "no baseline" without saying why."""
    if _MEMORY_ADDRESS.search(key_text):
        fail(
            f"{subject} holds a memory address, which changes with every process: no later"
            f" run would find its baseline; {advice or 'build the key from values (sizes, dtypes)'}"
        )


def autotune_calls(request: pytest.FixtureRequest) -> Callable[..., Any]:
    """The `autotune` fixture's value, the function its test calls (`plugin.autotune`, the
    fixture, says how a test uses it)."""
    return functools.partial(_run_set, request.config.stash[SESSION], request.node)


def _run_set(
    session: AutotuneSession,
    node: pytest.Item,
    tunables: TunableSet,
    *inputs: Any,
    work: Any = None,
    thresholds: Any = None,
    reference: Callable[..., Any] | str | None = None,
    rtol: float | None = None,
    atol: float | None = None,
    max_regression: float | None = None,
    tuner: LocalTuner | str | None = None,
    check_output: bool = True,
    time_limit: float | None = None,
    level: Any = None,
    **unknown: Any,
) -> Any:
    """One call of the fixture: its arguments checked, then the set checked or tuned."""
    __tracebackhide__ = True  # a candidate's traceback shows the user's frames alone
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
            f" known: {', '.join(FIXTURE_OPTIONS)}; inputs go by position:"
            " autotune(tunable_set, *inputs)"
        )
    if not isinstance(tunables, TunableSet):
        pytest.fail(
            f"{nodeid}: the autotune fixture takes a TunableSet first, got {tunables!r};"
            " build one with TunableSet(key_gen, tunables=[Tunable(name, fn), ...])",
            pytrace=False,
        )
    options = {
        "work": work,
        "thresholds": thresholds,
        "reference": reference,
        "rtol": rtol,
        "atol": atol,
        "max_regression": max_regression,
        "check_output": check_output,
        "time_limit": time_limit,
        "level": level,
    }
    checked = (
        *("thresholds", "rtol", "atol", "check_output", "max_regression", "work", "reference"),
        *("time_limit", "level"),
    )
    checked_options = {"tuner": tuner, **{name: options[name] for name in checked}}
    if work is None:
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
            key = checked_key(tunables.key_gen(*inputs), f"{nodeid}: the set's key_gen")
            if not session.settings.tune:
                # Its groups' priorities, as tuning asks them.
                plan = tune_plan(key, tunables.tunables)
                skipped = {tunables.names[i] for i in unplanned(plan, len(tunables))}
                return _check_set(session, candidates, run, inputs, options, skipped)
            test = item_function_nodeid(node)
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
                        replace(t, fn=Limited(t.fn, limit, t.name, raised))
                        for t in tunables.tunables
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
            return _tune_set(session, node, group, raised)
        # A bad `reference=` or device, or a group's priority that returned no number.
        except (ConfigError, CudaUnavailableError, PriorityError) as exc:
            fail(f"{nodeid}: {exc}")
        except TimeLimitExceeded as exc:
            fail(f"{nodeid}: candidate {exc.name!r} {exc}")


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


def _skip_if_all_declined(declined: Mapping[str, str], count: int) -> None:
    """Skip the test when each of its `count` candidates declined these inputs, saying why."""
    if len(declined) == count:
        _skip_declined(declined)


def _skip_declined(declined: Mapping[str, str]) -> NoReturn:
    said = ", ".join(f"{name!r} ({why})" for name, why in declined.items())
    pytest.skip(f"every candidate declined: {said}")


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


def _tune_set(
    session: AutotuneSession, node: pytest.Item, group: GroupRequest, raised: set[str]
) -> Any:
    """Tune mode: the group tuned and judged; the winner's output. Where candidates
    raised (`raised`, their names), the first shows its traceback (`raise_again`)."""
    __tracebackhide__ = True  # a candidate's traceback shows the user's frames alone
    failures = [f for name, _ in group.candidates if (f := session.candidate_outcome(group, name))]
    gate = session.gate_failure(group)
    if gate is not None and failures == [gate] and node.stash.get(IN_BODY, False):
        # Every candidate ran right and the winner's output is sound: the test goes on to
        # its later calls and fails at its end with every group's verdict.
        node.stash.setdefault(GATE_FAILURES, {})[f"{group.group}: {gate}"] = None
        failures = []
    if failures:
        # Once each: what fails the whole group (a key collision) is every candidate's.
        failure = "\n\n".join(dict.fromkeys(failures))
        for name, fn in group.candidates:
            if name in raised:
                raise_again(functools.partial(group.run, fn, *clone_value(group.inputs)), failure)
                break
        pytest.fail(failure, pytrace=False)
    declined = {
        name: why for name, _ in group.candidates if (why := session.declined(group.group, name))
    }
    _skip_if_all_declined(declined, len(group.candidates))  # as in check mode
    return _run_winner(session, group)


def _run_winner(session: AutotuneSession, group: GroupRequest) -> Any:
    """The winner's output on the caller's own inputs, as `LocalTuner.execute` calls it
    (on copies, a set that writes into an `out` argument left the test's array as it was).
    Where it declines them (a call repeating an earlier one's key on inputs it refuses),
    the next candidate that takes them runs the call, as the key tuned again on them would
    give; the test is skipped where every candidate declines them."""
    __tracebackhide__ = True  # a candidate's traceback shows the user's frames alone
    declined: dict[str, str] = {}  # name: why
    for name, fn in session.winners(group):
        try:
            return fn(*group.inputs)
        except (AutotuneSkip, AutotuneError) as exc:
            if not declines(exc):
                raise
            declined[name] = str(exc)
    _skip_declined(declined)


def fail_on_gate_failures(item: pytest.Item) -> None:
    """After a test's body returned: fail it with the gate's failures of its fixture calls,
    if any (`GATE_FAILURES`)."""
    failures = gate_failures_of(item)
    if failures is not None:
        fail(failures)


def gate_failures_of(item: pytest.Item) -> str | None:
    """The gate's failures of the test's fixture calls not yet failed on, taken: None where
    there are none. Also ends the body (`IN_BODY`)."""
    item.stash[IN_BODY] = False
    failures = item.stash.get(GATE_FAILURES, None)
    if not failures:
        return None
    del item.stash[GATE_FAILURES]
    return "\n\n".join(failures)


def _check_set(
    session: AutotuneSession,
    candidates: tuple[tuple[str, Callable[..., Any]], ...],
    run: Callable[..., Any],
    inputs: tuple[Any, ...],
    options: Mapping[str, Any],
    unplanned: Collection[str] = (),
) -> Any:
    """Check mode: every candidate against the reference; the reference's output (else the
    first candidate's that does not decline). A candidate that raises `AutotuneSkip` declines
    these inputs and is left out, as tuning leaves it out; the test is skipped when every
    candidate declines. Those the set's groups skip for the key (`unplanned`) decline it
    unrun, as in tuning (`Tuner._check`): the library never runs them for this key."""
    __tracebackhide__ = True  # a candidate's traceback shows the user's frames alone
    reference = options["reference"]
    failures: list[str] = []
    declined: dict[str, str] = {}  # name: why
    for name, _ in candidates:
        if name in unplanned:
            declined[name] = UNPLANNED
            continue
        try:
            failure = check_candidate(
                name,
                candidates,
                run,
                inputs,
                reference=reference,
                config=session.settings.for_marker(options).engine,
                check_output=options["check_output"],
                not_run=unplanned,
                # The library's own functions: one writing into an `out` argument returns
                # nothing, and is judged by what it wrote, as the library's tuner judges it.
                in_place=True,
            )
        except AutotuneSkip as exc:
            declined[name] = str(exc)
            continue
        if failure:
            failures.append(failure)
    if failures:
        pytest.fail("\n\n".join(failures), pytrace=False)
    _skip_if_all_declined(declined, len(candidates))
    if isinstance(reference, str):  # a candidate's name, as the marker takes it
        # One that declined these inputs, or that the set's groups leave out of the key, is
        # no reference here, as in the checks above: called on the caller's inputs, it
        # raised its AutotuneSkip, or gave an output the library never computes.
        reference = None if reference in declined else dict(candidates)[reference]
    # On the caller's own inputs, as under --autotune (`_run_winner`).
    if reference is not None:
        return run(reference, *inputs)
    first = next(fn for name, fn in candidates if name not in declined)
    return run(first, *inputs)


def raise_again(call: Callable[[], object], failure: str) -> None:
    """Call a candidate whose call raised while its group was tuned once more, in its own
    test, and raise what it raises with the failure's message as a note, so that pytest
    shows its traceback (by `--tb`) as a plain run does: the tuning keeps only the
    exception's text (and, for a marker's group, ran inside another test). Where this call
    does not raise (the candidate failed only after many timed calls) or declines, it
    returns, for the message alone to be shown. Python 3.10 keeps no notes: the exception
    is raised without it (the message is the exception's own text), so that its traceback,
    and an `xfail(raises=...)` mark that matches it, work there too."""
    __tracebackhide__ = True  # a candidate's traceback shows the user's frames alone
    try:
        call()
    except (Exception, pytest.fail.Exception) as exc:
        if not crashed(exc):
            return
        error: BaseException = exc
    else:
        return
    add_note = getattr(error, "add_note", None)
    if add_note is not None:
        add_note(f"under --autotune: {failure}")
    raise error


def _fail_on(nodeid: str, error: str | None) -> None:
    """A fixture argument's error, in the fixture's words."""
    if error is not None:
        pytest.fail(
            f"{nodeid}: {error.replace('@pytest.mark.autotune', 'autotune')}", pytrace=False
        )


def _note_outside_rootdir(session: AutotuneSession, node: pytest.Item, tuner_name: str) -> None:
    """Say once where a set of no tuner, named after its test, is in a file outside the root
    dir, whose name depends on the folder pytest was given (`collection.outside_rootdir`)."""
    if tuner_name != item_function_nodeid(node):
        return
    warning = outside_rootdir(node, tuner_name, session.settings)
    if warning is not None and warning not in session.output.notes:
        session.note(warning)


def fixture_tuner_name(tunables: TunableSet, tuner: LocalTuner | str | None, nodeid: str) -> str:
    """The tuner a fixture call tunes for: `tuner=`, else the set's own, else the test's."""
    if isinstance(tuner, LocalTuner):
        return tuner.name
    return tuner or tunables.tuner or nodeid
