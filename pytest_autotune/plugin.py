"""The pytest glue: options, the `autotune` marker and fixture, and the session hooks.

Everything that decides something lives in modules that never import pytest (`tune/`,
`session.py` and the modules it runs over, `gate/`, `report/`); this file turns pytest's
hooks into calls on them.
"""

from __future__ import annotations

import contextlib
import inspect
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pytest

from pytest_autotune import hookspecs
from pytest_autotune.backends.cuda import CudaUnavailableError
from pytest_autotune.check_mode import check_candidate
from pytest_autotune.collection import (
    FUNCTIONS,
    ITEM,
    ItemSpec,
    function_spec,
    has_component,
    without_component,
    xdist_group_name,
)
from pytest_autotune.fixture import SESSION, Names, checked_key, time_limit

# pytest finds a plugin's fixtures among the plugin module's names.
from pytest_autotune.fixture import autotune as autotune
from pytest_autotune.marker_options import work_error
from pytest_autotune.plugin_settings import (
    PluginSettings,
    is_builtin_device,
    settings_from_sources,
)
from pytest_autotune.quiet import Quiet, run_folder
from pytest_autotune.session import AutotuneSession, GroupRequest, SessionHooks
from pytest_autotune.time_limit import TimeLimit, TimeLimitExceeded
from pytest_autotune.tune.config import ConfigError
from pytest_autotune.tune.errors import AutotuneSkip
from pytest_autotune.tune.settings import SETTINGS

if TYPE_CHECKING:
    from pytest_autotune.tune.client import Client

_OPTIONS = tuple(s for s in SETTINGS if "command line" in s.sources)
_INI_KEYS = tuple(s for s in SETTINGS if "ini" in s.sources)


def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    pluginmanager.add_hookspecs(hookspecs)


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("autotune", "autotune: tune, check and gate several implementations")
    for setting in _OPTIONS:
        if setting.kind == "bool":
            group.addoption(setting.flag, action="store_true", default=None, help=setting.help)
        else:
            group.addoption(setting.flag, default=None, metavar="VALUE", help=setting.help)
    for setting in _INI_KEYS:
        parser.addini(setting.ini, help=setting.help, type=setting.kind)


def _settings(config: pytest.Config) -> PluginSettings:
    """The session's settings from every source (`pytest_autotune.plugin_settings`)."""
    try:
        return settings_from_sources(
            command_line={s.ini: config.getoption(s.flag) for s in _OPTIONS},
            ini={s.ini: _ini_value(config, s.ini) for s in _INI_KEYS},
            environ=os.environ,
            rootpath=config.rootpath,
            invocation_dir=config.invocation_params.dir,
        )
    except ConfigError as exc:
        raise pytest.UsageError(f"pytest-autotune: {exc}") from None


@pytest.hookimpl(hookwrapper=True)
def pytest_cmdline_main(config: pytest.Config) -> Any:
    """With `-n N`, no `--dist` and tuning asked for, distribute by group (pytest-xdist's
    default is "load", which would split one group's candidates across workers). A
    wrapper, so that this runs before pytest-xdist's own hook turns "no" into "load"."""
    option = config.option
    tuning = False
    with contextlib.suppress(pytest.UsageError):  # said by pytest_configure, which runs next
        tuning = _settings(config).tune
    if tuning and getattr(option, "numprocesses", None) and getattr(option, "dist", None) == "no":
        from pytest_autotune.xdist import DIST

        option.dist = DIST
    yield


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "autotune(candidates=None, key=None, work=None, thresholds=None, reference=None, "
        "rtol=None, atol=None, max_regression=None, groups=None, device=None, time_limit=None, "
        "level=None, check_output=True): the test body is the timed call of `candidate`; every "
        "candidate is checked, and tuned with --autotune",
    )
    settings = _settings(config)
    worker_input = getattr(config, "workerinput", None)
    hooks = _hooks(config, settings, worker=worker_input is not None)
    session = AutotuneSession(settings, worker=worker_input is not None, hooks=hooks)
    config.stash[SESSION] = session
    quiet_folder = run_folder(config) if settings.tune else None
    if quiet_folder is not None:
        session.quiet = Quiet(quiet_folder)
    if config.pluginmanager.hasplugin("xdist") and worker_input is None:
        from pytest_autotune.backends.cuda import device_count
        from pytest_autotune.xdist import XdistBridge

        config.pluginmanager.register(XdistBridge(config, session, device_count), "autotune-xdist")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item) -> Any:
    """On a pytest-xdist worker that tunes, an ordinary test (setup, call and teardown)
    holds its shared locks, so that it never runs beside another worker's measurement
    (`pytest_autotune.quiet`). A test that tunes waits for the device lock instead."""
    state = item.config.stash.get(SESSION, None)
    quiet = state.quiet if state is not None else None
    if quiet is None or item.get_closest_marker("autotune") is not None:
        yield
        return
    with quiet.testing():
        yield


def _hooks(config: pytest.Config, settings: PluginSettings, worker: bool) -> SessionHooks:
    """The session's hooks: other plugins' (when tuning) and `-v`'s progress lines."""
    progress = _progress(config) if config.option.verbose > 0 and not worker else None
    if not settings.tune:
        return SessionHooks(progress=progress)

    def client(device: str) -> Client | None:
        found: Client | None = config.hook.pytest_autotune_client(config=config, device=device)
        return found

    if not is_builtin_device(settings.device) and client(settings.device) is None:
        raise pytest.UsageError(
            f"pytest-autotune: --autotune-device={settings.device}: no"
            " pytest_autotune_client hook provides it (built in: auto, cpu, cuda, cuda:N)"
        )
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


def _ini_value(config: pytest.Config, name: str) -> object:
    value = config.getini(name)
    # An unset string ini is "", an unset bool False: both mean "not set here".
    return value or None


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if metafunc.definition.get_closest_marker("autotune") is None:
        return
    spec = function_spec(metafunc)
    metafunc.config.stash.setdefault(FUNCTIONS, {})[spec.nodeid] = spec


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(
    session: pytest.Session, config: pytest.Config, items: list[pytest.Item]
) -> None:
    """Name each candidate's group; mark the tests that use the `autotune` fixture, so
    `-m autotune` (which runs after this hook) selects them too; with `--autotune-only`,
    deselect every other test."""
    functions = config.stash.get(FUNCTIONS, {})
    # Only where pytest-xdist registers its marker: `--strict-markers` fails an unknown one.
    xdist = config.pluginmanager.hasplugin("xdist")
    for item in items:
        if (
            "autotune" in getattr(item, "fixturenames", ())
            and item.get_closest_marker("autotune") is None
        ):
            item.add_marker(pytest.mark.autotune)
        function = functions.get(item.nodeid.split("[", 1)[0])
        if function is None or not hasattr(item, "callspec"):
            continue
        value = item.callspec.params["candidate"]
        name = next((n for n, f in function.candidates if f is value), None)
        if name is None:
            name = next((n for n, f in function.candidates if f == value), repr(value))
        # pytest writes non-ASCII ids escaped (`\\xe9`): strip the id as pytest wrote it.
        escaped = name.encode("unicode_escape").decode("ascii")
        component = name if has_component(item.callspec.id, name) else escaped
        group_key = without_component(item.callspec.id, component)
        group = f"{function.nodeid}[{group_key}]" if group_key else function.nodeid
        item.stash[ITEM] = ItemSpec(function, name, group, group_key)
        if xdist:  # one group on one worker (see pytest_autotune.xdist)
            item.add_marker(pytest.mark.xdist_group(name=xdist_group_name(group)))
    if config.stash[SESSION].settings.only:
        others = [item for item in items if item.get_closest_marker("autotune") is None]
        if others:
            config.hook.pytest_deselected(items=others)
            items[:] = [item for item in items if item.get_closest_marker("autotune") is not None]


def pytest_collection_finish(session: pytest.Session) -> None:
    """Which candidates of each group were selected, after every deselection (`-k`, `-m`,
    `--autotune-only`, node ids): the session reports a group's gate failure on one of
    them (`AutotuneSession.selected`)."""
    state = session.config.stash.get(SESSION, None)
    if state is None:
        return
    selected: dict[str, list[str]] = {}
    for item in session.items:
        spec = item.stash.get(ITEM, None)
        if spec is not None:
            selected.setdefault(spec.group, []).append(spec.candidate)
    state.selected = {group: tuple(names) for group, names in selected.items()}


# -- running --------------------------------------------------------------------------------


def _test_arguments(item: pytest.Function) -> dict[str, Any]:
    """The fixture values the test function asks for, by name (set up, never timed)."""
    names = inspect.signature(item.obj).parameters
    return {name: item.funcargs[name] for name in names if name in item.funcargs}


def _body(
    item: pytest.Function, arguments: Mapping[str, Any], limit: TimeLimit, names: Names
) -> CandidateRun:
    """`run(candidate, *values)`: the test body with `candidate` and the other arguments,
    stopped by name if it runs past the time limit."""
    return CandidateRun(item.obj, tuple(n for n in arguments if n != "candidate"), limit, names)


@dataclass(frozen=True)
class CandidateRun:
    """`run(candidate, *values)`: the test function called with `candidate` and the other
    arguments (`others`, in order), stopped by name past the time limit.

    It pickles as the test function's name and the argument names, without the limit: a
    fresh process that measures a CPU winner again (`fresh_process`) runs the body there,
    under the process's own timeout."""

    test: Callable[..., Any]
    others: tuple[str, ...]
    limit: TimeLimit | None = None
    names: Names | None = None

    def __call__(self, candidate: Callable[..., Any], *values: Any) -> Any:
        def body() -> Any:
            return self.test(candidate=candidate, **dict(zip(self.others, values, strict=True)))

        if self.limit is None or self.names is None:
            return body()
        return self.limit.call(self.names(candidate), body)

    def __reduce__(self) -> tuple[Any, ...]:
        return (CandidateRun, (self.test, self.others))


@pytest.hookimpl(tryfirst=True)
def pytest_pyfunc_call(pyfuncitem: pytest.Function) -> bool | None:
    spec = pyfuncitem.stash.get(ITEM, None)
    if spec is None:
        return None
    if spec.function.error is not None:
        pytest.fail(spec.function.error, pytrace=False)
    session = pyfuncitem.config.stash[SESSION]
    arguments = _test_arguments(pyfuncitem)
    inputs = tuple(value for name, value in arguments.items() if name != "candidate")
    options = spec.function.options
    limit = time_limit(session, options)
    run = _body(pyfuncitem, arguments, limit, Names(spec.function.candidates))
    try:
        with limit.armed(), session.level_scope(options):
            if session.settings.tune:
                request = GroupRequest(
                    group=spec.group,
                    tuner_name=spec.function.nodeid,
                    key=_group_key(spec, arguments),
                    candidates=spec.function.candidates,
                    run=run,
                    inputs=inputs,
                    options=_evaluated_options(options, arguments, spec.function.nodeid),
                )
                failure = session.candidate_outcome(request, spec.candidate)
            else:
                # What tuning would call first is called here too, so that a bad `work=`
                # or `key=` fails the plain run every CI job makes, not only --autotune.
                _evaluated_options(options, arguments, spec.function.nodeid)
                _group_key(spec, arguments)
                failure = check_candidate(
                    spec.candidate,
                    spec.function.candidates,
                    run,
                    inputs,
                    reference=options.get("reference"),
                    config=session.settings.for_marker(options).engine,
                    check_output=options.get("check_output") is not False,
                )
    except AutotuneSkip as exc:
        pytest.skip(f"candidate {spec.candidate!r} declined: {exc}")
    except (ConfigError, CudaUnavailableError) as exc:
        pytest.fail(f"{spec.function.nodeid}: {exc}", pytrace=False)
    except TimeLimitExceeded as exc:
        pytest.fail(f"{spec.function.nodeid}: candidate {exc.name!r} {exc}", pytrace=False)
    if failure:
        pytest.fail(failure, pytrace=False)
    return True


def _group_key(spec: ItemSpec, arguments: Mapping[str, Any]) -> Any:
    key = spec.function.options.get("key")
    if key is None:
        return spec.group_key or "default"
    value = _call_with_fixtures(key, arguments, f"{spec.function.nodeid}: key=")
    return checked_key(value, f"{spec.function.nodeid}: key=")


def _evaluated_options(
    options: Mapping[str, Any], arguments: Mapping[str, Any], nodeid: str
) -> dict[str, Any]:
    evaluated = dict(options)
    work = options.get("work")
    if callable(work):
        evaluated["work"] = _call_with_fixtures(work, arguments, f"{nodeid}: work=")
        error = work_error(evaluated["work"])
        if error is not None:
            pytest.fail(f"{nodeid}: {error}", pytrace=False)
    return evaluated


def _call_with_fixtures(fn: Callable[..., Any], arguments: Mapping[str, Any], what: str) -> Any:
    """Call a marker callable with the fixtures it names, as pytest calls a test."""
    wanted = inspect.signature(fn).parameters
    missing = [
        n for n in wanted if n not in arguments and wanted[n].default is inspect.Parameter.empty
    ]
    if missing:
        pytest.fail(
            f"{what} asks for {missing}, which the test does not take; "
            f"available: {sorted(arguments)}",
            pytrace=False,
        )
    return fn(**{n: arguments[n] for n in wanted if n in arguments})


# -- the end of the session -----------------------------------------------------------------


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    state = session.config.stash.get(SESSION, None)
    if state is None or not state.settings.tune:
        return
    if state.worker:
        session.config.workeroutput["autotune"] = state.to_worker_output()  # type: ignore[attr-defined]
        return
    failed = state.finish()
    if failed and session.exitstatus == pytest.ExitCode.OK:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    state = config.stash.get(SESSION, None)
    if state is None or not state.settings.tune or state.worker:
        return
    terminalreporter.section("autotune")
    for line in state.summary_lines(stats=state.settings.candidates):
        terminalreporter.write_line(line)
