"""The plugin's engine: its session, and what its hooks do for the tests that use it.

`plugin.py`, the module pytest loads in every run, imports this one the first time a run
needs it (`plugin.py` says when), and calls each function here named after a hook from
its hook of that name: they are no hooks of their own, registered nowhere.

Everything that decides something lives in modules that never import pytest (`tune/`,
`session.py` and the modules it runs over, `gate/`, `report/`); this file turns pytest's
hooks into calls on them.

The hooks' work lives beside this file, a module a concern: `item_reports` (what a test's
reports say of its groups and show of it), `collected_items` (what the engine makes of the
collected items), `candidate_call` (a candidate's test in place of its body: tuned or
checked, over `marker_callables` and `tuning_notes`).
"""

from __future__ import annotations

import contextlib
import unittest
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import pytest

from pytest_autotune.backends.cuda import CudaUnavailableError
from pytest_autotune.benchmark_fixture import (
    real_fixtures,
    stand_in,
)
from pytest_autotune.body_arguments import arguments_of, inputs_of
from pytest_autotune.body_outcomes import EXPECTED_TO_FAIL, Failed
from pytest_autotune.call_limit import call_time_limit
from pytest_autotune.candidate_call import (
    checked,
    fail_if_the_fixture_changed_the_candidate,
    fail_if_used_up,
    options_here,
    tuned,
)
from pytest_autotune.candidate_run import candidate_run
from pytest_autotune.collected_items import collected, fail_merged_groups, mark_shared_nodeids
from pytest_autotune.collection import (
    AWAITING,
    COLLECTED,
    FUNCTIONS,
    GROUP_ITEMS,
    ITEM,
    function_nodeid,
)
from pytest_autotune.failing import fail, let_go_of_memory
from pytest_autotune.fixture import CALL_GROUPS
from pytest_autotune.function_spec import (
    awaits_candidates,
    marked_by,
    parameter_mark_error,
    record_function,
)
from pytest_autotune.group_marks import not_run
from pytest_autotune.item_groups import (
    group_names_deselected,
    item_group,
    xdist_group_name,
)
from pytest_autotune.item_reports import (
    FAILED_CALLS,
    distinct_properties,
    failure_shown_at_the_test,
    gate_failures_in,
    skip_shown_at_the_test,
    skipped_at_setup,
)
from pytest_autotune.marker_callables import Named
from pytest_autotune.own_request import record_xml_attributes
from pytest_autotune.plugin_settings import (
    PluginSettings,
    is_builtin_device,
)
from pytest_autotune.quiet import Quiet, hand_back_path, run_folder
from pytest_autotune.session import AutotuneSession, SessionHooks
from pytest_autotune.stash_keys import SESSION
from pytest_autotune.time_limit import TimeLimitExceeded
from pytest_autotune.tune.config import ConfigError
from pytest_autotune.tune.errors import AutotuneSkip
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


def pytest_runtest_setup(item: pytest.Item) -> None:
    """A test whose `autotune` mark is among a parameter's marks fails saying where the
    mark goes (`function_spec.parameter_mark_error`), before its fixtures are set up: one
    of them is `candidate`, which nothing parametrizes there ("fixture 'candidate' not
    found")."""
    error = parameter_mark_error(item)
    if error is not None:
        fail(error)


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
        " plain class, taking `candidate` (`def test_x(self, candidate)`)" + marked_by(item)
    )


def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    """Which tests that tune failed, and whether as their `xfail` mark expected (an
    `xfail` on a parameter, or on the whole test): a group whose tests failed only as
    expected has its gate failure, such as every candidate failing, expected too, and the
    run fails on it no more than pytest does. Outermost (`tryfirst`), so that pytest's own
    xfail handling has run."""
    if call.when == "call" and ITEM in item.stash:
        distinct_properties(item)
    outcome = yield
    report = outcome.get_result()
    if call.excinfo is not None and (ITEM in item.stash or CALL_GROUPS in item.stash):
        let_go_of_memory(item.config, call.excinfo.value)
    skip_shown_at_the_test(item, report)
    failure_shown_at_the_test(item, call, report)
    if report.when == "setup" and report.skipped and call.excinfo is not None:
        skipped_at_setup(item, report, str(getattr(call.excinfo.value, "msg", "") or "skipped"))
    if report.when == "call":
        gate_failures_in(item, report)
    state = item.config.stash.get(SESSION, None)
    if state is None or not state.settings.tune or report.when != "call":
        return
    xfailed = report.skipped and hasattr(report, "wasxfail")
    if not (xfailed or report.failed):
        return
    spec = item.stash.get(ITEM, None)
    groups = [spec.group] if spec is not None else list(item.stash.get(CALL_GROUPS, {}).values())
    item.stash.setdefault(FAILED_CALLS, []).append((report, groups, xfailed))


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
            on_a_line_of_its_own(config)
            reporter.write_line(line)

    return progress


def on_a_line_of_its_own(config: pytest.Config) -> None:
    """End the terminal's line where it holds text, for what follows to start a line: pytest's
    reporter ends the test's line only where it wrote the test's path (`ensure_newline`), and
    `-q`'s dots and pytest-sugar's progress bar write none: a record (`.. [100%]{"sch...`)
    or a `-v` progress line (`50% █████ autotune: tuning ...`) ran on at their end."""
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    if reporter is None:
        return
    reporter.ensure_newline()
    writer = config.get_terminal_writer()
    if writer.width_of_current_line:
        writer.line()


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
    mark_shared_nodeids(config, items)
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
    fail_merged_groups(config)
    # Before pytest's own `--deselect` (this hook runs first), which would say nothing; not
    # on a pytest-xdist worker, whose usage error the controller reports as an INTERNALERROR.
    deselecting_nothing = group_names_deselected(config, items)
    if deselecting_nothing and not hasattr(config, "workerinput"):
        raise pytest.UsageError(*deselecting_nothing)
    state = config.stash[SESSION]
    # A worker says it in the summary instead (each worker's same line, once): under `-n`
    # the group was tuned and gated without a word, as if the run had left it out.
    for line in deselecting_nothing:
        state.note(f"warning: {line}")
    if state.settings.tune:  # an update's stale entries, a gate's moved baselines (`stale`)
        state.output.collected = collected(config, config.stash.get(COLLECTED, items))
    if state.settings.only:
        others = [item for item in items if item.get_closest_marker("autotune") is None]
        if others:
            config.hook.pytest_deselected(items=others)
            items[:] = [item for item in items if item.get_closest_marker("autotune") is not None]


def pytest_itemcollected(item: pytest.Item) -> None:
    state = item.config.stash.get(SESSION, None)
    if state is not None and state.settings.tune:
        item.config.stash.setdefault(COLLECTED, []).append(item)


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
    fail_if_the_fixture_changed_the_candidate(pyfuncitem, spec)
    session = pyfuncitem.config.stash[SESSION]
    given = arguments_of(pyfuncitem)
    arguments = stand_in(given, tuning=session.settings.tune)
    record_xml_attributes(pyfuncitem, given)
    inputs = inputs_of(arguments)
    # What `key=` and `work=` may name: the test's arguments, and the fixtures those use
    # (a `work=lambda n: ...` where `n` feeds the test's `x` failed every test with "asks
    # for ['n'], which the test does not take").
    named = Named(arguments, pyfuncitem.funcargs)
    fail_if_used_up(spec, named)
    options = options_here(pyfuncitem.config, spec)
    limit = call_time_limit(session, options)
    run = candidate_run(
        pyfuncitem, spec, arguments, real_fixtures(given), limit, session.settings.tune
    )
    try:
        with limit.armed(), session.level_scope(options):
            if session.settings.tune:
                failure = tuned(pyfuncitem, spec, session, run, inputs, options, named)
            else:
                failure = checked(pyfuncitem, spec, session, run, inputs, options, named)
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
