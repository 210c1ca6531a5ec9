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
from pytest_autotune.marker_options import option_error, work_error
from pytest_autotune.plugin_settings import (
    PluginSettings,
    is_builtin_device,
    settings_from_sources,
)
from pytest_autotune.session import AutotuneSession, GroupRequest, SessionHooks
from pytest_autotune.time_limit import TimeLimit, TimeLimitExceeded
from pytest_autotune.tune.config import ConfigError
from pytest_autotune.tune.errors import AutotuneSkip
from pytest_autotune.tune.files import dumps
from pytest_autotune.tune.key import key_to_json
from pytest_autotune.tune.local import LocalTuner
from pytest_autotune.tune.settings import DEFAULT_TIME_LIMIT_S, SETTINGS, misspelt_env_names
from pytest_autotune.tune.tunable_set import TunableSet, clone_value

if TYPE_CHECKING:
    from pytest_autotune.tune.client import Client

SESSION = pytest.StashKey["AutotuneSession"]()
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
    "check_output",
)

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
        "check_output=True): the test body is the timed call of `candidate`; every candidate "
        "is checked, and tuned with --autotune",
    )
    settings = _settings(config)
    worker_input = getattr(config, "workerinput", None)
    hooks = _hooks(config, settings, worker=worker_input is not None)
    session = AutotuneSession(settings, worker=worker_input is not None, hooks=hooks)
    config.stash[SESSION] = session
    if config.pluginmanager.hasplugin("xdist") and worker_input is None:
        from pytest_autotune.backends.cuda import device_count
        from pytest_autotune.xdist import XdistBridge

        config.pluginmanager.register(XdistBridge(config, session, device_count), "autotune-xdist")


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


def pytest_report_header(config: pytest.Config) -> list[str]:
    """A misspelt PYTEST_AUTOTUNE_* variable, said in the header: a warning at configure
    time would be an INTERNALERROR under a project's `filterwarnings = error`."""
    return misspelt_env_names(os.environ)


def _ini_value(config: pytest.Config, name: str) -> object:
    value = config.getini(name)
    # An unset string ini is "", an unset bool False: both mean "not set here".
    return value or None


# -- collection -----------------------------------------------------------------------------


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


def _marker_options(definition: Any) -> dict[str, Any]:
    marker = definition.get_closest_marker("autotune")
    if marker.args:
        pytest.fail(
            f"{definition.nodeid}: @pytest.mark.autotune takes keyword options only "
            f"({', '.join(MARKER_OPTIONS)})",
            pytrace=False,
        )
    unknown = sorted(set(marker.kwargs) - set(MARKER_OPTIONS))
    if unknown:
        pytest.fail(
            f"{definition.nodeid}: @pytest.mark.autotune: unknown option(s) {unknown}; "
            f"known: {', '.join(MARKER_OPTIONS)}",
            pytrace=False,
        )
    return dict(marker.kwargs)


def _function_nodeid(definition: Any) -> str:
    return str(definition.nodeid).split("[", 1)[0]


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if metafunc.definition.get_closest_marker("autotune") is None:
        return
    options = _marker_options(metafunc.definition)
    nodeid = _function_nodeid(metafunc.definition)
    if "candidate" not in metafunc.fixturenames:
        pytest.fail(f"{nodeid}: an autotune test takes a `candidate` argument", pytrace=False)
    candidates = options.pop("candidates", None)
    if candidates is not None:
        if not isinstance(candidates, Mapping) or not candidates:
            pytest.fail(
                f"{nodeid}: autotune(candidates=...) must be a non-empty dict of name -> callable",
                pytrace=False,
            )
        pairs = tuple((printable(str(n)), f) for n, f in candidates.items())
        _refuse_duplicates(nodeid, pairs)
        metafunc.parametrize("candidate", [f for _, f in pairs], ids=[n for n, _ in pairs])
    else:
        pairs = _parametrized_candidates(metafunc)
        _refuse_duplicates(nodeid, pairs)
    error = option_error(options)
    if inspect.iscoroutinefunction(metafunc.function):
        error = (
            "an autotune test cannot be `async def`: the body is called as the timed call"
            " of each candidate; call async code with asyncio.run() in a plain def"
        )
    spec = FunctionSpec(nodeid, pairs, options, None if error is None else f"{nodeid}: {error}")
    metafunc.config.stash.setdefault(FUNCTIONS, {})[nodeid] = spec


def printable(name: str) -> str:
    """A candidate name safe to print: control characters (a terminal escape, a newline)
    become their backslash escapes; other characters, non-ASCII letters included, stay."""
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in name)


def _refuse_duplicates(nodeid: str, pairs: tuple[tuple[str, Callable[..., Any]], ...]) -> None:
    """Two candidates of one name would be one in every lookup by name, and the check of
    the second against "itself" would pass a wrong implementation."""
    seen: dict[str, int] = {}
    for index, (name, fn) in enumerate(pairs):
        if name in seen:
            first = pairs[seen[name]][1]
            pytest.fail(
                f"{nodeid}: candidates {seen[name]} ({_describe(first)}) and {index}"
                f" ({_describe(fn)}) are both named {name!r}; give each its own id"
                " (pytest.param(fn, id=...) or ids=[...])",
                pytrace=False,
            )
        seen[name] = index


def _describe(fn: Any) -> str:
    module = getattr(fn, "__module__", None)
    qualname = getattr(fn, "__qualname__", None)
    return f"{module}.{qualname}" if module and qualname else repr(fn)


def _parametrized_candidates(
    metafunc: pytest.Metafunc,
) -> tuple[tuple[str, Callable[..., Any]], ...]:
    """The candidates of a plain `@pytest.mark.parametrize("candidate", [...])`, named as
    pytest names their ids: an explicit id, else the function's `__name__`."""
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
    pytest.fail(
        f"{_function_nodeid(metafunc.definition)}: give the candidates with "
        "@pytest.mark.autotune(candidates={...}) or @pytest.mark.parametrize('candidate', [...])"
    )


def _without_component(callspec_id: str, component: str) -> str:
    """The id of the other parameters: pytest joins parameter ids with '-'."""
    if callspec_id == component:
        return ""
    if callspec_id.startswith(component + "-"):
        return callspec_id[len(component) + 1 :]
    if callspec_id.endswith("-" + component):
        return callspec_id[: -len(component) - 1]
    return callspec_id.replace("-" + component + "-", "-", 1)


def _has_component(callspec_id: str, component: str) -> bool:
    return f"-{component}-" in f"-{callspec_id}-"


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
        component = name if _has_component(item.callspec.id, name) else escaped
        group_key = _without_component(item.callspec.id, component)
        group = f"{function.nodeid}[{group_key}]" if group_key else function.nodeid
        item.stash[ITEM] = ItemSpec(function, name, group, group_key)
        if xdist:  # one group on one worker (see pytest_autotune.xdist)
            item.add_marker(pytest.mark.xdist_group(name=xdist_group_name(group)))
    if config.stash[SESSION].settings.only:
        others = [item for item in items if item.get_closest_marker("autotune") is None]
        if others:
            config.hook.pytest_deselected(items=others)
            items[:] = [item for item in items if item.get_closest_marker("autotune") is not None]


def xdist_group_name(group: str) -> str:
    """The `xdist_group` name of an autotune group: without `]` and `@`, which would stop
    pytest-xdist from reading it back from the node id's `@name` suffix."""
    return "autotune:" + group.replace("[", "(").replace("]", ")").replace("@", "_")


# -- running --------------------------------------------------------------------------------


def _test_arguments(item: pytest.Function) -> dict[str, Any]:
    """The fixture values the test function asks for, by name (set up, never timed)."""
    names = inspect.signature(item.obj).parameters
    return {name: item.funcargs[name] for name in names if name in item.funcargs}


def _body(
    item: pytest.Function, arguments: Mapping[str, Any], limit: TimeLimit, names: _Names
) -> Callable[..., Any]:
    """`run(candidate, *values)`: the test body with `candidate` and the other arguments,
    stopped by name if it runs past the time limit."""
    others = [n for n in arguments if n != "candidate"]

    def run(candidate: Callable[..., Any], *values: Any) -> Any:
        def body() -> Any:
            return item.obj(candidate=candidate, **dict(zip(others, values, strict=True)))

        return limit.call(names(candidate), body)

    return run


class _Names:
    """The name of a candidate function, for a time limit's message."""

    def __init__(self, candidates: tuple[tuple[str, Callable[..., Any]], ...]) -> None:
        self._by_id = {id(fn): name for name, fn in candidates}

    def __call__(self, fn: Callable[..., Any]) -> str:
        return self._by_id.get(id(fn), "the reference")


def _time_limit(session: AutotuneSession, options: Mapping[str, Any]) -> TimeLimit:
    """The marker's limit, else the settings' (command line, environment, YAML, ini), else
    the default under --autotune; a plain run has none unless one is set."""
    seconds = session.settings.for_marker(options).engine.time_limit
    if seconds is None and session.settings.tune:
        seconds = DEFAULT_TIME_LIMIT_S
    return TimeLimit(seconds)


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
    limit = _time_limit(session, options)
    run = _body(pyfuncitem, arguments, limit, _Names(spec.function.candidates))
    try:
        with limit.armed():
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
    return _checked_key(value, f"{spec.function.nodeid}: key=")


def _checked_key(value: Any, what: str) -> Any:
    """A key the cache can hold: hashable, JSON, and finite (JSON has no NaN or inf)."""
    try:
        hash(value)
        dumps(key_to_json(value))
    except (TypeError, ValueError) as exc:
        pytest.fail(f"{what} returned an unusable key {value!r}: {exc}", pytrace=False)
    return value


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


@pytest.fixture
def autotune(request: pytest.FixtureRequest) -> Callable[..., Any]:
    """Tune (with --autotune) or check (plain pytest) a production `TunableSet`.

    `out = autotune(TUNER.init(make_set), x, work=..., thresholds=...)` returns the output
    of the winner (or of the reference, in check mode), with the same checks, records and
    gate as the marker. The cache file is named after the set's `LocalTuner` (the one whose
    `init` built it, or `tuner=`), so the library ships what its tests tuned; a set of no
    tuner is named after the test. `check_output=False` for candidates that return nothing
    to compare.
    """
    session = request.config.stash[SESSION]
    nodeid = request.node.nodeid

    def run_set(
        tunables: TunableSet,
        *inputs: Any,
        work: Any = None,
        thresholds: Any = None,
        reference: Callable[..., Any] | None = None,
        rtol: float | None = None,
        atol: float | None = None,
        max_regression: float | None = None,
        tuner: LocalTuner | str | None = None,
        check_output: bool = True,
    ) -> Any:
        if not isinstance(tunables, TunableSet):
            pytest.fail(
                f"{nodeid}: the autotune fixture takes a TunableSet first, got {tunables!r};"
                " build one with TunableSet(key_gen, tunables=[Tunable(name, fn), ...])",
                pytrace=False,
            )
        candidates = tuple(zip(tunables.names, tunables.fns, strict=True))
        given = {
            "thresholds": thresholds,
            "rtol": rtol,
            "atol": atol,
            "tuner": tuner,
            "check_output": check_output,
        }
        error = option_error({**given, "max_regression": max_regression, "work": work})
        if error is not None:
            pytest.fail(
                f"{nodeid}: {error.replace('@pytest.mark.autotune', 'autotune')}", pytrace=False
            )
        names = _Names(candidates)
        limit = _time_limit(session, {})

        def run(candidate: Callable[..., Any], *values: Any) -> Any:
            return limit.call(names(candidate), candidate, *values)

        with limit.armed():
            try:
                return _run_set(
                    tunables, candidates, run, inputs, work, given, reference, max_regression
                )
            except TimeLimitExceeded as exc:
                pytest.fail(f"{nodeid}: candidate {exc.name!r} {exc}", pytrace=False)

    def _run_set(
        tunables: TunableSet,
        candidates: tuple[tuple[str, Callable[..., Any]], ...],
        run: Callable[..., Any],
        inputs: tuple[Any, ...],
        work: Any,
        given: dict[str, Any],
        reference: Callable[..., Any] | None,
        max_regression: float | None,
    ) -> Any:
        thresholds, rtol, atol = given["thresholds"], given["rtol"], given["atol"]
        work = work(*inputs) if callable(work) else work
        error = work_error(work)
        if error is not None:
            pytest.fail(
                f"{nodeid}: {error.replace('@pytest.mark.autotune', 'autotune')}", pytrace=False
            )
        options = {
            "work": work,
            "thresholds": thresholds,
            "reference": reference,
            "rtol": rtol,
            "atol": atol,
            "max_regression": max_regression,
            "check_output": given["check_output"],
        }
        if not session.settings.tune:
            failures = [
                f
                for name, _ in candidates
                if (
                    f := check_candidate(
                        name,
                        candidates,
                        run,
                        inputs,
                        reference=reference,
                        config=session.settings.for_marker(options).engine,
                        check_output=given["check_output"],
                    )
                )
            ]
            if failures:
                pytest.fail("\n\n".join(failures), pytrace=False)
            return run(reference or candidates[0][1], *clone_value(inputs))
        group = GroupRequest(
            group=nodeid,
            tuner_name=fixture_tuner_name(tunables, given["tuner"], nodeid),
            key=_checked_key(tunables.key_gen(*inputs), f"{nodeid}: the set's key_gen"),
            candidates=candidates,
            run=run,
            inputs=inputs,
            options=options,
            tunables=tunables,
        )
        failures = [f for name, _ in candidates if (f := session.candidate_outcome(group, name))]
        if failures:
            pytest.fail("\n\n".join(failures), pytrace=False)
        return session.run_winner(group)

    return run_set


def fixture_tuner_name(tunables: TunableSet, tuner: LocalTuner | str | None, nodeid: str) -> str:
    """The tuner a fixture call tunes for: `tuner=`, else the set's own, else the test's."""
    if isinstance(tuner, LocalTuner):
        return tuner.name
    return tuner or tunables.tuner or nodeid.split("[", 1)[0]


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
