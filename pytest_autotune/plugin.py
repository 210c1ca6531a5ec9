"""The pytest plugin: options, ini keys, the `autotune` marker and fixture, and the hooks.

pytest imports this module at the start of every run where the package is installed, one
that tests nothing of ours included, so it imports neither NumPy nor the engine
(`plugin_engine`: the session, collection, checks, tuning, gate and report), which it
loads once the run needs it (`_start`): at `pytest_configure` where any of the plugin's
settings is given, from any source (a tuning run, `--autotune-only`, an ini key, a
`PYTEST_AUTOTUNE_*` variable); otherwise the first time collection meets a test marked
`autotune` or one of the `autotune` fixture, or the fixture is asked for. Until then each
hook has nothing to do. A test that sets up `pytester` imports the engine's modules, not
its session (`pytest_fixture_setup`). Every hook is registered here, at the start, where
it always was, so that its order among other plugins' hooks does not depend on when the
engine loads.
"""

from __future__ import annotations

import contextlib
import os
import unittest
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from pytest_autotune import hookspecs
from pytest_autotune.plugin_settings import (
    PluginSettings,
    ignored_options,
    settings_from_sources,
    shown_from,
)
from pytest_autotune.stash_keys import IN_BODY, SESSION
from pytest_autotune.tune.config import ConfigError
from pytest_autotune.tune.settings import SETTINGS, Setting, choose

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
        _add_ini(parser, setting)


def _add_ini(parser: pytest.Parser, setting: Setting) -> None:
    """Register an ini key. A number is `float | str` where pytest takes a union (9.2):
    a native `[tool.pytest]` table's `autotune_time_limit = 5` is an int, which a string
    key refuses, and `"5"`, as older pytest needed it, stays a string; our parser reads
    both. Older pytest takes strings only (quote numbers in a native table there)."""
    if setting.numeric and pytest.version_tuple >= (9, 2):
        with contextlib.suppress(AssertionError, TypeError, ValueError):
            parser.addini(setting.ini, help=setting.help, type=float | str, default=None)
            return
    # An unset bool is None, not False: `autotune_adaptive = false` must read as set, since
    # its default is True (pytest 7 gives [] for it, read as unset too).
    default = None if setting.kind == "bool" else ""
    parser.addini(setting.ini, help=setting.help, type=setting.kind, default=default)


def _command_line(config: pytest.Config, *, typed_only: bool = False) -> dict[str, object]:
    """The options of the command line, by ini key; None where not given. `typed_only`:
    those typed for this run, without the ini file's `addopts` and `PYTEST_ADDOPTS`, which
    a project sets for every run, plain ones included."""
    typed = [str(arg) for arg in config.invocation_params.args]

    def given(flag: str) -> bool:
        return not typed_only or any(a == flag or a.startswith(f"{flag}=") for a in typed)

    return {s.ini: config.getoption(s.flag) for s in _OPTIONS if given(s.flag)}


def _written_by_others(config: pytest.Config) -> dict[str, Path]:
    """The files other plugins write at the end of the run: pytest-benchmark's JSON, a
    path taken from the directory pytest was run in."""
    benchmark_json = config.getoption("benchmark_json", None)
    if benchmark_json is None:
        return {}
    # pytest-benchmark before 5.0 opens the file as it parses the option (argparse's
    # FileType): an open file, whose `name` is the path as given. (A Path's `name` is
    # only its last part: a path is taken as it is.)
    if not isinstance(benchmark_json, (str, os.PathLike)):
        benchmark_json = benchmark_json.name
    return {"--benchmark-json": config.invocation_params.dir / benchmark_json}


def _settings(config: pytest.Config) -> PluginSettings:
    """The session's settings from every source (`pytest_autotune.plugin_settings`)."""
    try:
        settings = settings_from_sources(
            command_line=_command_line(config),
            ini={s.ini: _ini_value(config, s.ini) for s in _INI_KEYS},
            environ=os.environ,
            rootpath=config.rootpath,
            invocation_dir=config.invocation_params.dir,
            written_by_others=_written_by_others(config),
            ini_source=_ini_source(config),
        )
    except ConfigError as exc:
        raise pytest.UsageError(f"pytest-autotune: {exc}") from None
    unconfigured = (
        config.inipath is None
        and not config.getoption("rootdir", None)
        and not (config.rootpath / "setup.py").is_file()
    )
    above = (
        (folder / settings.cache_dir.name for folder in config.rootpath.parents)
        if unconfigured and settings.cache_dir.parent == config.rootpath
        else ()
    )
    return replace(settings, cache_above=next((p for p in above if p.is_dir()), None))


@pytest.hookimpl(hookwrapper=True)
def pytest_cmdline_main(config: pytest.Config) -> Any:
    """With `-n N` and tuning asked for, distribute by group where the `--dist` mode would
    hand a group's candidates to several workers (none given, which pytest-xdist makes
    "load"; "load", or its `-d`; "worksteal"): each worker would tune the group again,
    with a row and a verdict of its own. By group is still a load balance, by test
    function. A wrapper, so that this runs before pytest-xdist's own hook turns "no" into
    "load"."""
    option = config.option
    tuning = False
    with contextlib.suppress(pytest.UsageError):  # said by pytest_configure, which runs next
        tuning = _settings(config).tune
    dist = getattr(option, "dist", None)
    workers = getattr(option, "numprocesses", None)
    # `-d` is pytest-xdist's `--dist load`, which its hook sets after this one: left as it
    # was, it undid the switch, and every group split over the workers was tuned twice.
    # It wins over any --dist (loadscope, loadfile and each included).
    distload = bool(getattr(option, "distload", False))
    by_test = distload or dist in ("load", "worksteal") or (dist == "no" and workers)
    if tuning and dist == "each" and not distload:
        raise pytest.UsageError(
            "pytest-autotune: --dist each runs every test on every worker, so each worker"
            " would tune every group again (a row and a verdict each, and two writers of"
            " one baseline): leave --dist out under -n (each group then goes to one worker)"
        )
    if tuning and by_test:
        from pytest_autotune.xdist import DIST

        option.dist = DIST
        option.distload = False
    yield


SETTINGS_OF_THE_RUN = pytest.StashKey[PluginSettings]()
"""The run's settings, read at `pytest_configure`, for the engine whenever it loads."""


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "autotune(candidates=None, key=None, work=None, thresholds=None, reference=None, "
        "rtol=None, atol=None, max_regression=None, groups=None, device=None, time_limit=None, "
        "level=None, check_output=True): the test body is the timed call of `candidate`; every "
        "candidate is checked, and tuned with --autotune",
    )
    if config.option.help:
        # The help is where a user looks up the option a bad setting needs: pytest shows
        # it whatever else the command line holds, and a bad setting must not hide it.
        return
    settings = _settings(config)
    config.stash[SETTINGS_OF_THE_RUN] = settings
    config.pluginmanager.register(
        _CollectionWrapper("UnrequestedParameters"), "autotune-unrequested"
    )
    config.pluginmanager.register(
        _CollectionWrapper("CandidatesOfEveryHook"), "autotune-candidates"
    )
    config.pluginmanager.register(_AfterTheBody(), "autotune-after-the-body")
    if choose(settings.layers):
        # A setting given is a run that uses the plugin, or may, whatever it collects: its
        # end (an update's stale entries, a report) and pytest-xdist's controller, which
        # collects nothing, need the engine from the start.
        _start(config)


def _start(config: pytest.Config) -> None:
    """Load the engine for this run, once: its session starts (`plugin_engine.start`)."""
    if SESSION not in config.stash:
        from pytest_autotune import plugin_engine

        plugin_engine.start(config, config.stash[SETTINGS_OF_THE_RUN])


def _started(config: pytest.Config) -> bool:
    """Whether this run has loaded the engine; before it has, no test of the plugin has
    been met, and each hook has nothing to do."""
    return SESSION in config.stash


def _uses_the_plugin(metafunc: pytest.Metafunc) -> bool:
    """Whether a test function is one of the plugin's: marked, or of the fixture."""
    marked = metafunc.definition.get_closest_marker("autotune") is not None
    return marked or "autotune" in metafunc.fixturenames


class _CollectionWrapper:
    """A hook wrapper of `generate_tests` (`UnrequestedParameters`, `CandidatesOfEveryHook`),
    registered where it always was, and run for the tests of the plugin (which load the
    engine). pytest calls the one registered last first."""

    def __init__(self, name: str) -> None:
        self.name = name

    @pytest.hookimpl(hookwrapper=True)
    def pytest_generate_tests(self, metafunc: pytest.Metafunc) -> Iterator[None]:
        if not _uses_the_plugin(metafunc):
            yield
            return
        _start(metafunc.config)
        from pytest_autotune import generate_tests

        yield from getattr(generate_tests, self.name)().pytest_generate_tests(metafunc)


@pytest.hookimpl(hookwrapper=True, tryfirst=True)
def pytest_runtest_protocol(item: pytest.Item) -> Any:
    """On a pytest-xdist worker that tunes, an ordinary test (setup, call and teardown)
    holds its shared locks, so that it never runs beside another worker's measurement
    (`pytest_autotune.quiet`). A test that tunes waits for the device lock instead.
    Outside every other plugin's wrapper, whichever loaded first: the wait for another
    worker's measurement is no part of the test, and pytest-timeout's alarm, where its
    wrapper held this one, fired in it outside any phase of the test, an INTERNALERROR."""
    state = item.config.stash.get(SESSION, None)
    quiet = state.quiet if state is not None else None
    if quiet is None:
        yield
        return
    if item.get_closest_marker("autotune") is not None:
        # It holds the shared locks for its set-up (`pytest_runtest_setup`), inside
        # pytest-timeout's window: waiting there for another worker's measurement failed
        # the test with a bare "Timeout" naming neither. The wait is made here first.
        with quiet.testing():
            pass
        yield
        return
    with quiet.testing():
        yield


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_setup(item: pytest.Item) -> Any:
    """A test that tunes holds the shared locks for its set-up, as an ordinary test does
    for all of it: its fixtures (inputs made on the GPU, 256 MiB of random numbers) ran
    beside another worker's measurement, which its body alone waits for."""
    with _set_up_or_torn_down(item):
        yield


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_teardown(item: pytest.Item) -> Any:
    """A test that tunes holds the shared locks for its teardown (`pytest_runtest_setup`)."""
    with _set_up_or_torn_down(item):
        yield


@contextlib.contextmanager
def _set_up_or_torn_down(item: pytest.Item) -> Iterator[None]:
    state = item.config.stash.get(SESSION, None)
    quiet = state.quiet if state is not None else None
    if quiet is None or item.get_closest_marker("autotune") is None:
        yield  # an ordinary test holds them already, for its whole protocol
        return
    if TEST_TIMER in item.stash:
        # Inside pytest-timeout's window, a wait for another worker's measurement failed the
        # test with a bare "Timeout", naming neither: such a test waited before it began
        # (`pytest_runtest_protocol`), and holds nothing here. (A hold given up on its own
        # timeout left, on Python 3.10's sqlite3, the other workers' holds waiting.)
        yield
        return
    with quiet.testing():
        yield


TEST_TIMER = pytest.StashKey[float]()
"""The seconds of pytest-timeout's timer of a test, where it times the test's set-up and
teardown too (not `func_only`)."""


@pytest.hookimpl(optionalhook=True, tryfirst=True)
def pytest_timeout_set_timer(item: pytest.Item, settings: Any) -> None:
    """pytest-timeout's timer of a test starts (its own hook; it sets the timer itself)."""
    seconds = getattr(settings, "timeout", None)
    if (
        isinstance(seconds, (int, float))
        and seconds > 0
        and not getattr(settings, "func_only", False)
    ):
        item.stash[TEST_TIMER] = float(seconds)


class _AfterTheBody:
    """The hooks that run after a test's body, registered apart (`pytest_configure`): a
    module has one `pytest_runtest_call`, and ours there runs before the body."""

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_setup(self, item: pytest.Item) -> None:
        # A rerun (pytest-rerunfailures) starts afresh: what its last try left is said.
        if not _started(item.config):
            item.stash[IN_BODY] = False  # all `gate_failures_of` does where no fixture ran
            return
        from pytest_autotune.fixture_modes import gate_failures_of

        gate_failures_of(item)

    @pytest.hookimpl(trylast=True)
    def pytest_runtest_call(self, item: pytest.Item) -> None:
        """The body returned: the gate's failures of its `autotune` fixture calls fail the
        test, every one of them (`fixture_modes.GATE_FAILURES`); a body that raised, skipped or
        xfailed meets them in its report (`item_reports.gate_failures_in`)."""
        if not _started(item.config):
            item.stash[IN_BODY] = False
            return
        from pytest_autotune.fixture_modes import fail_on_gate_failures

        fail_on_gate_failures(item)

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_protocol(self, item: pytest.Item) -> Any:
        """Every try of the test has run: the groups of those of its failures that stand are
        noted (`item_reports.FAILED_CALLS`)."""
        yield
        if _started(item.config):
            from pytest_autotune.item_reports import note_failed_calls

            note_failed_calls(item)


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_call(item: pytest.Item) -> None:
    """Marks the body as running (`stash_keys.IN_BODY`), in every test: the `autotune`
    fixture may be asked for in the body (`request.getfixturevalue`). A unittest.TestCase
    method marked `autotune` fails (`plugin_engine.pytest_runtest_call`), one marked after
    collection met it too (by a conftest's `pytest_collection_modifyitems`), which loads the
    engine here: it passed, as a plain test, where nothing else loaded it."""
    item.stash[IN_BODY] = True
    cls = getattr(item, "cls", None)
    if (
        isinstance(cls, type)
        and issubclass(cls, unittest.TestCase)
        and item.get_closest_marker("autotune") is not None
    ):
        _start(item.config)
        from pytest_autotune.plugin_engine import pytest_runtest_call as refuse_a_test_case

        refuse_a_test_case(item)


@pytest.hookimpl(hookwrapper=True, tryfirst=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    """What the test's outcome means for its groups (`plugin_engine`); outermost
    (`tryfirst`), so that pytest's own xfail handling has run."""
    if not _started(item.config):
        yield
        return
    from pytest_autotune.plugin_engine import pytest_runtest_makereport as report

    yield from report(item, call)


def _ini_source(config: pytest.Config) -> str:
    """How messages name the ini file pytest read (`pyproject.toml`, `tox.ini`), as seen
    from where pytest was run; "ini" where it read none."""
    path = config.inipath
    return "ini" if path is None else shown_from(path, config.invocation_params.dir)


def _ini_value(config: pytest.Config, name: str) -> object:
    try:
        value = config.getini(name)
    except (ValueError, pytest.UsageError) as exc:
        # pytest parses a bool key itself and says only "invalid truth value 'maybe'"
        # (pytest 7 with a traceback through this plugin): name the key and the file, and
        # the words it takes. A native TOML table's type errors name the key already.
        if name in str(exc):
            raise
        words = " (true or false: yes/no, on/off, 1/0)" if "truth value" in str(exc) else ""
        raise ConfigError(f"{_ini_source(config)}: {name}: {exc}{words}") from None
    # An unset string ini is "", an unset bool or number None (pytest 7: an unset bool
    # []): each means "not set here". False and 0 are values (0 one the parser may refuse
    # by name).
    return None if value is None or value in ("", []) else value


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if metafunc.definition.get_closest_marker("autotune") is None:
        return
    _start(metafunc.config)
    from pytest_autotune import plugin_engine

    plugin_engine.pytest_generate_tests(metafunc)


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(
    session: pytest.Session, config: pytest.Config, items: list[pytest.Item]
) -> None:
    """The items' groups and marks (`plugin_engine`). A test of the plugin met here that no
    `pytest_generate_tests` saw (a unittest.TestCase method marked `autotune`, a test given
    the fixture by `usefixtures`) loads the engine, before `-k` or `-m` deselects any."""
    if not _started(config) and not any(_is_the_plugins(item) for item in items):
        return
    _start(config)
    from pytest_autotune import plugin_engine

    plugin_engine.pytest_collection_modifyitems(session, config, items)


def _is_the_plugins(item: pytest.Item) -> bool:
    """Whether a test is one of the plugin's: marked, or of the fixture."""
    marked = item.get_closest_marker("autotune") is not None
    return marked or "autotune" in getattr(item, "fixturenames", ())


def pytest_itemcollected(item: pytest.Item) -> None:
    if _started(item.config):
        from pytest_autotune import plugin_engine

        plugin_engine.pytest_itemcollected(item)


def pytest_collection_finish(session: pytest.Session) -> None:
    if _started(session.config):
        from pytest_autotune import plugin_engine

        plugin_engine.pytest_collection_finish(session)


@pytest.hookimpl(tryfirst=True)
def pytest_pyfunc_call(pyfuncitem: pytest.Function) -> bool | None:
    if not _started(pyfuncitem.config):
        return None
    from pytest_autotune import plugin_engine

    return plugin_engine.pytest_pyfunc_call(pyfuncitem)


@pytest.fixture
def autotune(request: pytest.FixtureRequest) -> Callable[..., Any]:
    """Tune (with --autotune) or check (plain pytest) a production `TunableSet`.

    `out = autotune(TUNER.init(make_set), x, work=..., thresholds=...)` returns the output
    of the winner (or of the reference, in check mode), called on the inputs given as the
    library's `execute` calls it (a set that writes into an `out` argument writes into the
    test's), with the same checks, records and gate as the marker. The cache file is named
    after the set's `LocalTuner` (the one whose `init` built it, or `tuner=`), so the
    library ships what its tests tuned; a set of no tuner is named after the test.
    `check_output=False` for candidates that return nothing to compare.
    """
    _start(request.config)
    from pytest_autotune.fixture import autotune_calls

    return autotune_calls(request)


@pytest.hookimpl(tryfirst=True)
def pytest_fixture_setup(fixturedef: Any, request: pytest.FixtureRequest) -> None:
    """The `pytester` fixture, about to be set up, loads the engine's modules (not its
    session), as every run did before the engine loaded lazily: pytester drops each module
    that a run it makes in this process (`runpytest`) imported, so a run of a test of the
    plugin after the first imported NumPy again ("cannot load module more than once per
    process") and the plugin's modules anew, whose classes and stash keys were no longer
    those the loaded ones use (a `TunableSet` refused as no TunableSet, candidates never
    run)."""
    if fixturedef.argname == "pytester":
        import pytest_autotune.plugin_engine  # noqa: F401


# -- the end of the session -----------------------------------------------------------------


@pytest.hookimpl(hookwrapper=True)
def pytest_runtestloop(session: pytest.Session) -> Any:
    """After the tests of a tuning run, before any plugin's end of the session: a
    pytest-benchmark with nothing to save stays quiet (`benchmark_fixture.nothing_to_save`)."""
    yield
    state = session.config.stash.get(SESSION, None)
    if state is not None and state.settings.tune:
        from pytest_autotune.benchmark_fixture import nothing_to_save

        nothing_to_save(session.config)


def _calls_no_test(config: pytest.Config) -> bool:
    """--collect-only, --setup-only and --setup-plan (which sets `setuponly`) call no test:
    nothing is tuned, so there is no report, records or cache files to write (an empty
    report replaced the last run's, and an empty records file was made)."""
    return bool(config.option.collectonly or getattr(config.option, "setuponly", False))


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    state = session.config.stash.get(SESSION, None)
    if state is None or not state.settings.tune or _calls_no_test(session.config):
        return
    if state.worker:
        session.config.workeroutput["autotune"] = state.to_worker_output()  # type: ignore[attr-defined]
        return
    bridge = session.config.pluginmanager.get_plugin("autotune-xdist")
    if bridge is not None:  # after pytest-xdist's own end of the session, which ends its workers
        bridge.hand_back_unread()
    failed = state.finish(stopped=_stopped_early(session, exitstatus))
    if failed and session.exitstatus == pytest.ExitCode.OK:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def _stopped_early(session: pytest.Session, exitstatus: int) -> str | None:
    """Why the session stopped before every test ran, None when it ran to its end: Ctrl-C
    or a cancelled CI job (interrupted), `-x` or `--maxfail` (pytest's own words, which
    pytest-xdist gives as its interruption's), pytest-xdist's limit on crashed workers."""
    if exitstatus == pytest.ExitCode.INTERRUPTED:
        from pytest_autotune.xdist import INTERRUPTED_BY

        return session.config.stash.get(INTERRUPTED_BY, "interrupted")
    reason = session.shouldstop or session.shouldfail
    if not reason:
        bridge = session.config.pluginmanager.get_plugin("autotune-xdist")
        return None if bridge is None else bridge.shut_down_by()
    # A sentence of pytest's own (`--sw`: "Test failed, continuing from this test next
    # run.") goes inside the summary's brackets without its full stop.
    return reason.rstrip(".") if isinstance(reason, str) else "stopped"


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    state = config.stash.get(SESSION, None)
    if state is None or state.worker or _calls_no_test(config):
        return
    if not state.settings.tune:
        ignored = ignored_options(_command_line(config, typed_only=True), state.settings)
        if ignored is not None:
            terminalreporter.write_line(ignored)
        return
    lines = state.summary_lines(stats=state.settings.candidates)
    if not lines:  # nothing tuned nor noted (--collect-only, every test deselected)
        return
    terminalreporter.section("autotune")
    for line in lines:
        terminalreporter.write_line(line)
