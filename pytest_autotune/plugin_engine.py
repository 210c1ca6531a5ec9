"""The plugin's engine: its session, and what its hooks do for the tests that use it.

`plugin.py`, the module pytest loads in every run, imports this one the first time a run
needs it (`plugin.py` says when), and calls each function here named after a hook from
its hook of that name: they are no hooks of their own, registered nowhere.

Everything that decides something lives in modules that never import pytest (`tune/`,
`session.py` and the modules it runs over, `gate/`, `report/`); this file turns pytest's
hooks into calls on them.
"""

from __future__ import annotations

import contextlib
import inspect
import os
import pickle
import unittest
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from pytest_autotune.backends.cuda import CudaUnavailableError
from pytest_autotune.benchmark_fixture import (
    real_fixtures,
    stand_in,
)
from pytest_autotune.candidate_run import (
    EXPECTED_TO_FAIL,
    RAISED,
    Failed,
    arguments_of,
    called_again,
    candidate_run,
    inputs_of,
    used_up_input_error,
)
from pytest_autotune.check_mode import check_candidate
from pytest_autotune.collection import (
    AWAITING,
    COLLECTED,
    FUNCTIONS,
    GROUP_ITEMS,
    ITEM,
    SHARED_NODEID,
    ItemSpec,
    function_nodeid,
    item_function_nodeid,
    outside_rootdir,
    shared_nodeid_error,
)
from pytest_autotune.fixture import (
    CALL_GROUPS,
    call_time_limit,
    checked_key,
    fail,
    fail_if_unstable,
    gate_failures_of,
    raise_again,
)
from pytest_autotune.function_spec import awaits_candidates, record_function, unprovided_device
from pytest_autotune.group_marks import expected_to_fail, not_run, note_skipped_at_setup
from pytest_autotune.group_request import GroupRequest, check_groups
from pytest_autotune.item_groups import (
    candidate_nodeids,
    item_group,
    merged_group_error,
    xdist_group_name,
)
from pytest_autotune.marker_options import work_error
from pytest_autotune.own_request import record_xml_attributes
from pytest_autotune.plugin_settings import (
    PluginSettings,
    is_builtin_device,
)
from pytest_autotune.quiet import Quiet, hand_back_path, run_folder
from pytest_autotune.session import AutotuneSession, SessionHooks
from pytest_autotune.stale import Collected, defined_names
from pytest_autotune.stash_keys import SESSION
from pytest_autotune.time_limit import TimeLimitExceeded
from pytest_autotune.tune.config import ConfigError
from pytest_autotune.tune.errors import UNPLANNED, AutotuneSkip
from pytest_autotune.tune.tunable import PriorityError
from pytest_autotune.xdist import WORKER_GPU

if TYPE_CHECKING:
    from pytest_autotune.tune.client import Client


def start(config: pytest.Config, settings: PluginSettings) -> None:
    """The run's session, started: the engine is loaded (`plugin.py`)."""
    worker_input = getattr(config, "workerinput", None)
    hooks = _hooks(config, settings, worker=worker_input is not None)
    session = AutotuneSession(
        settings,
        worker=worker_input is not None,
        hooks=hooks,
        worker_gpu=(worker_input or {}).get(WORKER_GPU),
    )
    config.stash[SESSION] = session
    quiet_folder = run_folder(config) if settings.tune else None
    if quiet_folder is not None:
        session.quiet = Quiet(quiet_folder)
        worker = (worker_input or {}).get("workerid")
        if worker:
            session.output.hand_back = hand_back_path(quiet_folder, worker)
    if config.pluginmanager.hasplugin("xdist") and worker_input is None:
        from pytest_autotune.backends.cuda import device_count
        from pytest_autotune.xdist import XdistBridge

        config.pluginmanager.register(XdistBridge(config, session, device_count), "autotune-xdist")


FAILED_CALLS = pytest.StashKey[list[tuple[pytest.TestReport, list[str], bool]]]()
"""A tuning test's call reports that failed (or xfailed), each with its groups, noted once
its protocol ends: pytest-rerunfailures turns a failure it tries again into a "rerun", and a
test that passed on its second try left its fixture's group "not recorded" by the update,
as if it had failed."""


def note_failed_calls(item: pytest.Item) -> None:
    """Every try of the test has run: the groups of those of its failures that stand are
    noted (`FAILED_CALLS`; `plugin._AfterTheBody`)."""
    state = item.config.stash.get(SESSION, None)
    failed = item.stash.get(FAILED_CALLS, [])
    if FAILED_CALLS in item.stash:
        del item.stash[FAILED_CALLS]
    for report, groups, expected in failed:
        # A try run again is no longer `failed` (its outcome is "rerun"); an xfail is
        # never run again.
        if state is not None and (report.failed or expected):
            for group in groups:
                state.note_test_failure(group, expected=expected)


def pytest_runtest_call(item: pytest.Item) -> None:
    """A unittest.TestCase method marked `autotune` (by its own marker, its class's or its
    module's) fails saying why, as a test of a bad marker does: pytest parametrizes no
    such method with `candidate`, so it would run once as a plain test, checking and
    tuning nothing, and pass."""
    cls = getattr(item, "cls", None)
    if not (isinstance(cls, type) and issubclass(cls, unittest.TestCase)):
        return
    if item.get_closest_marker("autotune") is None or ITEM in item.stash:
        return
    fail(
        f"{item.nodeid}: a unittest.TestCase method cannot be an autotune test: pytest gives"
        " it no `candidate` to check and tune; write it as a test function or a method of a"
        " plain class, taking `candidate` (`def test_x(self, candidate)`)"
    )


def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    """Which tests that tune failed, and whether as their `xfail` mark expected (an
    `xfail` on a parameter, or on the whole test): a group whose tests failed only as
    expected has its gate failure, such as every candidate failing, expected too, and the
    run fails on it no more than pytest does. Outermost (`tryfirst`), so that pytest's own
    xfail handling has run."""
    if call.when == "call" and ITEM in item.stash:
        _distinct_properties(item)
    outcome = yield
    report = outcome.get_result()
    _skip_shown_at_the_test(item, report)
    if report.when == "setup" and report.skipped and call.excinfo is not None:
        _skipped_at_setup(item, report, str(getattr(call.excinfo.value, "msg", "") or "skipped"))
    if report.when == "call":
        _gate_failures_in(item, report)
    state = item.config.stash.get(SESSION, None)
    if state is None or not state.settings.tune or report.when != "call":
        return
    xfailed = report.skipped and hasattr(report, "wasxfail")
    if not (xfailed or report.failed):
        return
    spec = item.stash.get(ITEM, None)
    groups = [spec.group] if spec is not None else list(item.stash.get(CALL_GROUPS, {}).values())
    item.stash.setdefault(FAILED_CALLS, []).append((report, groups, xfailed))


def _skipped_at_setup(item: pytest.Item, report: pytest.TestReport, why: str) -> None:
    """A candidate's test skipped at its setup, by a fixture or a skip mark: its group
    leaves it out from now on (`note_skipped_at_setup`). Where the group was tuned before,
    with it, and the gate's failure was given to its test, the test fails with it, so that
    the run fails on a test shown (`AutotuneSession.skipped_after_tuning`)."""
    spec = item.stash.get(ITEM, None)
    if spec is None:
        return
    note_skipped_at_setup(item, why)
    state = item.config.stash.get(SESSION, None)
    if state is None or not state.settings.tune:
        return
    failure = state.skipped_after_tuning(spec.group, spec.candidate, why)
    if failure is not None:
        report.outcome = "failed"
        report.longrepr = failure
        if hasattr(report, "wasxfail"):
            del report.wasxfail


def _gate_failures_in(item: pytest.Item, report: pytest.TestReport) -> None:
    """The gate's failures of fixture calls in a body that did not return (`GATE_FAILURES`):
    a body that raised fails with its own error, the gate's said beside it; one that skipped
    or xfailed after them fails on them, since neither its skip nor its `xfail` was about
    the time of a group it tuned (before them, a gate failure stopped the body at its
    call, and the test failed)."""
    failures = gate_failures_of(item)
    if failures is None:
        return
    if report.failed:
        report.sections.append(("autotune gate", failures))
        return
    report.outcome = "failed"
    report.longrepr = failures
    if hasattr(report, "wasxfail"):
        del report.wasxfail


_PACKAGE_DIR = Path(__file__).resolve().parent


def _skip_shown_at_the_test(item: pytest.Item, report: pytest.TestReport) -> None:
    """A skip this plugin raised for a test (a candidate that declined, by `AutotuneSkip` or
    the body's `pytest.skip()`) is reported at the test, as a skip mark's is: pytest names
    where the skip was raised, a line of this package in site-packages that tells the user
    nothing."""
    if not (report.skipped and isinstance(report.longrepr, tuple)):
        return
    path, _, reason = report.longrepr
    if not Path(path).resolve().is_relative_to(_PACKAGE_DIR):
        return
    test_path, line, _ = item.reportinfo()
    if line is not None:
        report.longrepr = (os.fspath(test_path), line + 1, reason)


def _hooks(config: pytest.Config, settings: PluginSettings, worker: bool) -> SessionHooks:
    """The session's hooks: other plugins' (when tuning) and `-v`'s progress lines."""
    # `-v` is the terminal plugin's option: under `-p no:terminal` there is none, nor
    # anything to show the progress on.
    verbose = config.getoption("verbose", 0)
    progress = _progress(config) if verbose > 0 and not worker else None
    if not settings.tune:
        return SessionHooks(progress=progress)

    def client(device: str) -> Client | None:
        found: Client | None = config.hook.pytest_autotune_client(config=config, device=device)
        return found

    return SessionHooks(
        client=client,
        fingerprint=lambda fp: config.hook.pytest_autotune_fingerprint(
            config=config, fingerprint=fp
        ),
        verdict=lambda summary, verdict: config.hook.pytest_autotune_verdict(
            config=config, summary=summary, verdict=verdict
        ),
        progress=progress,
    )


def _progress(config: pytest.Config) -> Callable[[str], None]:
    def progress(line: str) -> None:
        # Looked up when used: the terminal reporter is configured after this plugin.
        # Tuning runs inside a test, whose output pytest captures: the line goes to the
        # terminal with capture suspended, so `-v` shows it without `-s`.
        reporter = config.pluginmanager.get_plugin("terminalreporter")
        if reporter is None:
            return
        capture = config.pluginmanager.get_plugin("capturemanager")
        with capture.global_and_fixture_disabled() if capture else contextlib.nullcontext():
            reporter.write_line(line)

    return progress


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if metafunc.definition.get_closest_marker("autotune") is None:
        return
    if "autotune" in metafunc.fixturenames and "candidate" not in metafunc.fixturenames:
        # A test of the `autotune` fixture, which this plugin marks itself (`-m autotune`):
        # marked by hand too, or by its module's `pytestmark`, it tunes the sets it is given.
        return
    if awaits_candidates(metafunc):
        # A hook called after this one may give them (`CandidatesOfEveryHook`).
        metafunc.config.stash.setdefault(AWAITING, set()).add(function_nodeid(metafunc.definition))
        return
    record_function(metafunc)


def pytest_collection_modifyitems(
    session: pytest.Session, config: pytest.Config, items: list[pytest.Item]
) -> None:
    """Name each candidate's group; mark the tests that use the `autotune` fixture, so
    `-m autotune` (which runs after this hook) selects them too; with `--autotune-only`,
    deselect every other test."""
    functions = config.stash.get(FUNCTIONS, {})
    _mark_shared_nodeids(config, items)
    # Only on a worker of `--dist loadgroup`, the one run in which pytest-xdist reads the
    # mark (its `@name` suffix, `pytest_autotune.xdist`), and before pytest 9, whose node id
    # the suffix no longer changes: every mark's name is a keyword of `-k`, so with
    # pytest-xdist installed `-k x`, `-k dist` or `-k group` selected every autotune test,
    # and `-k "not group"` none (under pytest 9's `--dist loadgroup` still, for nothing).
    xdist = (
        pytest.version_tuple < (9,)
        and config.pluginmanager.hasplugin("xdist")
        and getattr(config.option, "loadgroup", False)
    )
    for item in items:
        if (
            "autotune" in getattr(item, "fixturenames", ())
            and item.get_closest_marker("autotune") is None
        ):
            item.add_marker(pytest.mark.autotune)
        spec = item_group(functions, item)
        if spec is None:
            continue
        item.stash[ITEM] = spec
        config.stash.setdefault(GROUP_ITEMS, {}).setdefault(spec.group, []).append(item)
        if xdist:  # one group on one worker (see pytest_autotune.xdist)
            item.add_marker(pytest.mark.xdist_group(name=xdist_group_name(spec.group)))
    _fail_merged_groups(config)
    state = config.stash[SESSION]
    if state.settings.tune:  # an update's stale entries, a gate's moved baselines (`stale`)
        state.output.collected = _collected(config, config.stash.get(COLLECTED, items))
    if state.settings.only:
        others = [item for item in items if item.get_closest_marker("autotune") is None]
        if others:
            config.hook.pytest_deselected(items=others)
            items[:] = [item for item in items if item.get_closest_marker("autotune") is not None]


def _fail_merged_groups(config: pytest.Config) -> None:
    """Each item of a group that two sets of parameters share by their ids
    (`merged_group_error`) fails saying so, rather than be tuned on another's inputs."""
    for group, grouped in config.stash.get(GROUP_ITEMS, {}).items():
        error = merged_group_error(group, grouped)
        for item in grouped if error is not None else ():
            spec = item.stash[ITEM]
            failing = replace(spec.function, error=spec.function.error or error)
            item.stash[ITEM] = replace(spec, function=failing)


def _mark_shared_nodeids(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Each test of the `autotune` fixture whose node id another file's test has too (see
    `shared_nodeid_error`): a set of no tuner is filed after the node id, so the second
    test's set was served the first's winner, never tuned nor judged."""
    users = [item for item in items if "autotune" in getattr(item, "fixturenames", ())]
    files: dict[str, set[Path]] = {}
    for item in users:
        files.setdefault(item_function_nodeid(item), set()).add(item.path)
    for item in users:
        nodeid = item_function_nodeid(item)
        if len(files[nodeid]) > 1:
            first, second, *_ = sorted(files[nodeid])
            item.stash[SHARED_NODEID] = shared_nodeid_error(config, nodeid, first, second)


def pytest_itemcollected(item: pytest.Item) -> None:
    state = item.config.stash.get(SESSION, None)
    if state is not None and state.settings.tune:
        item.config.stash.setdefault(COLLECTED, []).append(item)


def _collected(config: pytest.Config, items: list[pytest.Item]) -> Collected:
    """What an update's stale entries are judged by (`pytest_autotune.stale`): the names
    each collected module defines, and every group of each marked test where collection
    chose no items by itself (`items`: every item collected, before any deselection)."""
    defined: dict[str, frozenset[str]] = {}
    rooted = True
    for item in items:
        module = item.nodeid.split("::", 1)[0]
        if module not in defined and isinstance(item, pytest.Function):
            defined[module] = defined_names(item.module)
            rooted = rooted and item.path == config.rootpath / module
    chosen = config.getoption("lf", False) or any("[" in str(arg) for arg in config.args)
    groups: dict[str, frozenset[str]] = {}
    functions = config.stash.get(FUNCTIONS, {})
    for spec in () if chosen else (item_group(functions, item) for item in items):
        if spec is not None:
            test = spec.function.nodeid
            groups[test] = groups.get(test, frozenset()) | {spec.group}
    return Collected(defined, groups, rooted)


def pytest_collection_finish(session: pytest.Session) -> None:
    """Which candidates of each group were selected, after every deselection (`-k`, `-m`,
    `--autotune-only`, node ids): the session reports a group's gate failure on one of
    them (`AutotuneSession.selected`), never on one marked not to run."""
    state = session.config.stash.get(SESSION, None)
    if state is None:
        return
    _refuse_an_unserved_device(session.config, state)
    selected: dict[str, list[str]] = {}
    for item in session.items:
        spec = item.stash.get(ITEM, None)
        if spec is not None and spec.candidate not in not_run(session.config, spec.group):
            selected.setdefault(spec.group, []).append(spec.candidate)
    state.selected = {group: tuple(names) for group, names in selected.items()}


def _refuse_an_unserved_device(config: pytest.Config, state: AutotuneSession) -> None:
    """Stop a tuning run whose settings name a device that is not built in and that no
    `pytest_autotune_client` hook serves, before its first test. Asked once the tests are
    collected, not at the start: a conftest below the root dir (`tests/dsp/conftest.py`) is
    loaded with its tests, and its hook was said to be missing. A pytest-xdist worker
    leaves it to the tests, which each fail saying so (the controller collects nothing)."""
    settings = state.settings
    if not settings.tune or state.worker or is_builtin_device(settings.device):
        return
    named = f"pytest-autotune: {settings.origin('device')}: {settings.device!r}"
    try:
        client = state.hooks.client(settings.device) if state.hooks.client else None
    except Exception as error:
        # Through pytest, pluggy's frames as an INTERNALERROR around the hook's line.
        raise pytest.UsageError(
            f"{named}: its pytest_autotune_client hook raised {type(error).__name__}: {error}"
        ) from None
    if client is None:
        raise pytest.UsageError(
            f"{named}: no pytest_autotune_client hook provides it (built in: auto, cpu,"
            " cuda, cuda:N)"
        )


# -- running --------------------------------------------------------------------------------


def pytest_pyfunc_call(pyfuncitem: pytest.Function) -> bool | None:
    spec = pyfuncitem.stash.get(ITEM, None)
    if spec is None:
        return None
    if spec.function.error is not None:
        pytest.fail(spec.function.error, pytrace=False)
    _fail_if_the_fixture_changed_the_candidate(pyfuncitem, spec)
    session = pyfuncitem.config.stash[SESSION]
    given = arguments_of(pyfuncitem)
    arguments = stand_in(given, tuning=session.settings.tune)
    record_xml_attributes(pyfuncitem, given)
    inputs = inputs_of(arguments)
    # What `key=` and `work=` may name: the test's arguments, and the fixtures those use
    # (a `work=lambda n: ...` where `n` feeds the test's `x` failed every test with "asks
    # for ['n'], which the test does not take").
    named = Named(arguments, pyfuncitem.funcargs)
    _fail_if_used_up(spec, named)
    options = _options_here(pyfuncitem.config, spec)
    limit = call_time_limit(session, options)
    run = candidate_run(
        pyfuncitem, spec, arguments, real_fixtures(given), limit, session.settings.tune
    )
    try:
        with limit.armed(), session.level_scope(options):
            if session.settings.tune:
                _note_positional_key(session, spec)
                _note_numbered_candidates(session, spec)
                _note_once(
                    session, outside_rootdir(pyfuncitem, spec.function.nodeid, session.settings)
                )
                request = GroupRequest(
                    group=spec.group,
                    tuner_name=spec.function.nodeid,
                    key=spec.group_key or "default",  # until its key= callable gives it
                    candidates=spec.function.candidates,
                    run=run,
                    inputs=inputs,
                    options={k: v for k, v in options.items() if k != "work"},
                    not_run=not_run(pyfuncitem.config, spec.group),
                    test_ids=candidate_nodeids(pyfuncitem.config, spec.group),
                    expected_to_fail=expected_to_fail(pyfuncitem.config, spec.group),
                )
                # Each test of the group fails with its `key=` or `work=` callable's error;
                # the report and the records keep the group too, as an ERROR (its tests'
                # failures alone left a report that read "2 no baseline" over a failed run).
                with _kept_if_raising(session, replace(request, key_known=False), "key="):
                    request = replace(request, key=_group_key(spec, named))
                with _kept_if_raising(session, request, "work="):
                    evaluated = _evaluated_options(options, named, spec.function.nodeid)
                    request = replace(request, options=evaluated)
                failure = session.candidate_outcome(request, spec.candidate)
                fn = dict(spec.function.candidates)[spec.candidate]
                if failure and id(fn) in pyfuncitem.config.stash[RAISED][spec.group]:
                    raise_again(called_again(run, spec, inputs), failure)
                declined = None if failure else session.declined(spec.group, spec.candidate)
                if declined is not None:
                    raise AutotuneSkip(declined)
            else:
                unplanned = _fail_what_tuning_would(pyfuncitem, spec, options, named)
                failure = check_candidate(
                    spec.candidate,
                    spec.function.candidates,
                    run,
                    inputs,
                    reference=options.get("reference"),
                    config=session.settings.for_marker(options).engine,
                    check_output=options.get("check_output") is not False,
                    not_run={*not_run(pyfuncitem.config, spec.group), *unplanned},
                    expected_to_fail=expected_to_fail(pyfuncitem.config, spec.group),
                )
    except AutotuneSkip as exc:
        if str(exc).startswith(EXPECTED_TO_FAIL):
            pytest.xfail(str(exc).removeprefix(EXPECTED_TO_FAIL))
        pytest.skip(f"candidate {spec.candidate!r} declined: {exc}")
    except Failed as exc:
        raise exc.pytests() from None
    except (ConfigError, CudaUnavailableError, PriorityError) as exc:
        fail(f"{spec.function.nodeid}: {exc}")
    except TimeLimitExceeded as exc:
        fail(f"{spec.function.nodeid}: candidate {exc.name!r} {exc}")
    if failure:
        pytest.fail(failure, pytrace=False)
    return True


def _distinct_properties(item: pytest.Item) -> None:
    """Each property the test's body recorded once, in the order first recorded: under
    --autotune its body is the timed call, made thousands of times (8317 copies of one
    `record_property` reached the JUnit XML of a plain one-property test), and a plain run
    calls the reference's body in the other candidates' tests too.

    A value that does not hash (a list, a NumPy array, whose `==` is elementwise) is known
    by its pickle: comparing each with every one kept took time quadratic in the calls,
    for a list that differs at each. One that neither hashes nor pickles is kept."""
    distinct: list[tuple[str, object]] = []
    seen: set[object] = set()
    for prop in item.user_properties:
        known: object = prop
        try:
            hash(prop)
        except TypeError:
            try:
                known = pickle.dumps(prop)
            except Exception:
                distinct.append(prop)
                continue
        if known not in seen:
            seen.add(known)
            distinct.append(prop)
    item.user_properties[:] = distinct


def _fail_if_the_fixture_changed_the_candidate(item: pytest.Function, spec: ItemSpec) -> None:
    """A `candidate` parametrized indirectly reaches the test through a fixture of the
    user's, which may turn it into another callable (a kernel compiled, an axis bound).
    The group's candidates are checked and tuned at its first test, before the others'
    fixtures are set up, so the plugin calls the parametrized values themselves: one the
    fixture changed would be checked and timed as a function the test never runs."""
    given = item.funcargs.get("candidate")
    if given is item.callspec.params.get("candidate"):
        return
    fail(
        f"{spec.function.nodeid}: the `candidate` fixture turned candidate"
        f" {spec.candidate!r} into {given!r}; the plugin checks and times the parametrized"
        " callables themselves, so parametrize `candidate` directly with the callables to"
        " run (prepare them, a kernel compiled, before the parametrize)"
    )


def _options_here(config: pytest.Config, spec: ItemSpec) -> Mapping[str, Any]:
    """The marker's options for a run on this machine. `reference="gpu"` with the gpu
    candidate skipped on this runner: it was called all the same, and its error failed
    every other candidate. A skipped candidate is never called, so the others are checked
    as without a reference: against the first that succeeds."""
    options = spec.function.options
    reference = options.get("reference")
    if isinstance(reference, str) and reference in not_run(config, spec.group):
        return {**options, "reference": None}
    return options


@dataclass(frozen=True)
class Named:
    """What a marker's callable (`key=`, `work=`) may ask for by name: the test's own
    arguments, then the other fixtures set up for it. A parameter with a default takes the
    test's argument of its name only, as before any other fixture could fill it: a key
    `lambda size="default": ...` keeps the key its committed baselines are filed under."""

    arguments: Mapping[str, Any]
    closure: Mapping[str, Any]

    def value(self, name: str, required: bool) -> tuple[bool, Any]:
        """Whether `name` is given, and its value."""
        for source in (self.arguments, self.closure) if required else (self.arguments,):
            if name in source:
                return True, source[name]
        return False, None

    def names(self) -> list[str]:
        return sorted({*self.arguments, *self.closure} - {"candidate"})


def _fail_if_used_up(spec: ItemSpec, named: Named) -> None:
    """Fail the test in one line where an argument is one that a call uses up (a
    generator), in either mode: a plain run's reference found it emptied by the candidate
    ("differs from the reference"), and the tuner's refusal showed its TypeError with a
    traceback through this plugin in the group's first test."""
    used_up = used_up_input_error(spec.function.nodeid, named.arguments)
    if used_up is not None:
        pytest.fail(used_up, pytrace=False)


def _fail_what_tuning_would(
    item: pytest.Function, spec: ItemSpec, options: Mapping[str, Any], named: Named
) -> frozenset[str]:
    """What tuning would call or ask first, asked in a plain run too, so that a bad `work=`,
    `key=`, group priority or `device=` fails the plain run every CI job makes, not only
    --autotune. The candidates `groups=` never tries for the group's key, which decline it
    as in tuning: this test's own is skipped."""
    _evaluated_options(options, named, spec.function.nodeid)
    unprovided = unprovided_device(item.config, options.get("device"))
    if unprovided is not None:
        pytest.fail(f"{spec.function.nodeid}: {unprovided}", pytrace=False)
    unplanned = check_groups(
        spec.function.candidates,
        options.get("groups"),
        not_run(item.config, spec.group),
        _group_key(spec, named),
    )
    if spec.candidate in unplanned:
        raise AutotuneSkip(UNPLANNED)
    return unplanned


def _note_positional_key(session: AutotuneSession, spec: ItemSpec) -> None:
    """Say once per test where its groups' keys number a parameter's values by their place
    in its list (`ItemSpec.positional`): what the value's text would have kept apart, a
    reordered or inserted value mixes up, each group then judged against another's
    baseline (an array keyed `x0` read +1863%, a REGRESSION of unchanged code, once the
    two arrays of its list were swapped)."""
    if not spec.positional or spec.function.options.get("key") is not None:
        return
    first = spec.positional[0]
    # One line for every group and worker alike (the workers' lines are merged as equal).
    line = (
        f"warning: {spec.function.nodeid}: its groups' keys number the values of"
        f" {', '.join(spec.positional)} by their place in the list ({first}0, {first}1, ...):"
        " such a value (an array, an object) has no plain text to key by, so reordering the"
        " values, or inserting one before others, would judge a group against another's"
        " baseline; give the parameter ids= or the marker a key="
    )
    if line not in session.output.notes:
        session.note(line)


def _note_once(session: AutotuneSession, line: str | None) -> None:
    """`line` at the end of the summary, once however many tests or workers say it."""
    if line is not None and line not in session.output.notes:
        session.note(line)


def _note_numbered_candidates(session: AutotuneSession, spec: ItemSpec) -> None:
    """Say once per test where candidates are named by their place in the list
    (`candidate0`: a `functools.partial` or another callable of no `__name__`, in
    `candidates=[...]` or a parametrize without ids): the cache file knows them by those
    names, and its candidate-list checksum too, so reordering the list, or inserting one
    before others, silently gave each baseline to another function."""
    numbered = [
        name
        for i, (name, fn) in enumerate(spec.function.candidates)
        if name == f"candidate{i}" and not isinstance(getattr(fn, "__name__", None), str)
    ]
    if not numbered:
        return
    them = (
        f"candidates {', '.join(numbered)} are named by their place in the list (they have"
        " no __name__): reordering the list, or inserting a candidate before them, would give"
        " their baselines to other functions"
        if len(numbered) > 1
        else f"candidate {numbered[0]} is named by its place in the list (it has no"
        " __name__): reordering the list, or inserting a candidate before it, would give its"
        " baseline to another function"
    )
    line = (
        f"warning: {spec.function.nodeid}: {them};"
        " name them with autotune(candidates={name: function, ...}) or parametrize ids="
    )
    if line not in session.output.notes:
        session.note(line)


def _group_key(spec: ItemSpec, arguments: Named) -> Any:
    key = spec.function.options.get("key")
    if key is None:
        fail_if_unstable(
            spec.group_key,
            f"{spec.function.nodeid}: the key {spec.group_key!r} (the parameters' ids)",
            "give the parameters ids= or the marker a key=",
        )
        return spec.group_key or "default"
    value = _call_with_fixtures(key, arguments, f"{spec.function.nodeid}: key=")
    return checked_key(value, f"{spec.function.nodeid}: key=")


@contextlib.contextmanager
def _kept_if_raising(
    session: AutotuneSession, request: GroupRequest, option: str
) -> Iterator[None]:
    """Keep `request`'s group as untuned where its marker's `option` callable fails: the
    plugin's message where it failed it (a fixture it asks for is missing, a bad Work),
    else the callable's own exception."""
    try:
        yield
    except pytest.fail.Exception as failed:
        session.keep_untuned(request, str(failed.msg))
        raise
    except Exception as error:
        session.keep_untuned(
            request, f"its {option} callable raised {type(error).__name__}: {error}"
        )
        raise


def _evaluated_options(options: Mapping[str, Any], arguments: Named, nodeid: str) -> dict[str, Any]:
    evaluated = dict(options)
    work = options.get("work")
    if callable(work):
        evaluated["work"] = _call_with_fixtures(work, arguments, f"{nodeid}: work=")
        error = work_error(evaluated["work"])
        if error is not None:
            pytest.fail(f"{nodeid}: {error}", pytrace=False)
    return evaluated


def _call_with_fixtures(fn: Callable[..., Any], arguments: Named, what: str) -> Any:
    """Call a marker callable with the fixtures it names, as pytest calls a test."""
    wanted = inspect.signature(fn).parameters
    if "candidate" in wanted:
        # One key and one work for all of a group's candidates, made in the test that tunes
        # it: they were the first candidate's, and a `-k` run of another candidate's test
        # made another key, under which no baseline was ever found.
        pytest.fail(
            f"{what} asks for `candidate`: it is called once for a whole group, whose"
            " candidates share one key and one work, so it may not depend on the candidate;"
            f" ask for the fixtures they are given; available: {arguments.names()}",
            pytrace=False,
        )
    given: dict[str, Any] = {}
    missing = []
    for name, parameter in wanted.items():
        required = parameter.default is inspect.Parameter.empty
        found, value = arguments.value(name, required)
        if found:
            given[name] = value
        elif required:
            missing.append(name)
    if missing:
        pytest.fail(
            f"{what} asks for {missing}, which is no fixture of the test; "
            f"available: {arguments.names()}",
            pytrace=False,
        )
    try:
        return fn(**given)
    except Exception as error:
        # The user's own error, with its traceback; but a `work=` or `key=` callable is
        # called by the plugin, and the failure (a ZeroDivisionError, say) named neither.
        add_note = getattr(error, "add_note", None)  # Python 3.11 on
        if add_note is not None:
            nodeid, option = what.rsplit(": ", 1)
            add_note(f"{nodeid}: raised by its {option} callable")
        raise
