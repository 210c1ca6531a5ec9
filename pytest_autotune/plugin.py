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

Some hooks live beside the code they share: the options' and ini keys' (`plugin_options`),
those holding a tuning worker's tests to its locks (`quiet_hooks`), and those of the end of
the session (`session_end`). pytest finds a plugin's hooks by name on its module, so each is
imported here under its own name, and registered with the others, at the start.
"""

from __future__ import annotations

import contextlib
import unittest
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from pytest_autotune import hookspecs
from pytest_autotune.plugin_options import pytest_addoption as pytest_addoption
from pytest_autotune.plugin_options import settings_of
from pytest_autotune.plugin_settings import PluginSettings
from pytest_autotune.quiet_hooks import pytest_runtest_protocol as pytest_runtest_protocol
from pytest_autotune.quiet_hooks import pytest_runtest_setup as pytest_runtest_setup
from pytest_autotune.quiet_hooks import pytest_runtest_teardown as pytest_runtest_teardown
from pytest_autotune.quiet_hooks import pytest_timeout_set_timer as pytest_timeout_set_timer
from pytest_autotune.session_end import pytest_runtestloop as pytest_runtestloop
from pytest_autotune.session_end import pytest_sessionfinish as pytest_sessionfinish
from pytest_autotune.session_end import pytest_terminal_summary as pytest_terminal_summary
from pytest_autotune.stash_keys import IN_BODY, SESSION
from pytest_autotune.tune.settings import choose


def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    pluginmanager.add_hookspecs(hookspecs)


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
        tuning = settings_of(config).tune
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
    settings = settings_of(config)
    config.stash[SETTINGS_OF_THE_RUN] = settings
    config.pluginmanager.register(
        _CollectionWrapper("UnrequestedParameters"), "autotune-unrequested"
    )
    config.pluginmanager.register(
        _CollectionWrapper("CandidatesOfEveryHook"), "autotune-candidates"
    )
    config.pluginmanager.register(_BeforeTheFixtures(), "autotune-before-the-fixtures")
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


class _BeforeTheFixtures:
    """The hook that runs before a test's fixtures are set up, registered apart
    (`pytest_configure`): a module has one `pytest_runtest_setup`, and ours there holds a
    tuning worker's tests to its locks (`quiet_hooks`)."""

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_setup(self, item: pytest.Item) -> None:
        if _started(item.config):
            from pytest_autotune.plugin_engine import pytest_runtest_setup as refuse_a_mark

            refuse_a_mark(item)


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


@pytest.hookimpl(hookwrapper=True)
def pytest_collection(session: pytest.Session) -> Any:
    """A group's name given as a node id (copied from the summary) found no test: pytest's
    usage error gets a line saying so and how to select the group (`item_groups`)."""
    outcome = yield
    error = outcome.excinfo[1] if outcome.excinfo is not None else None
    if isinstance(error, pytest.UsageError) and _started(session.config):
        from pytest_autotune.item_groups import group_names_given

        # pytest prints each of the error's arguments as an `ERROR:` line of its own.
        error.args = (*error.args, *group_names_given(session.config))


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
