"""The hooks of the end of the session: pytest-benchmark kept quiet, the session finished
(a worker's output handed to the controller, the records, reports and caches written) and
the terminal summary."""

from __future__ import annotations

from typing import Any

import pytest

from pytest_autotune.plugin_options import command_line
from pytest_autotune.plugin_settings import ignored_options
from pytest_autotune.stash_keys import SESSION


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
    if state.settings.engine.record in ("stdout", "stderr"):
        # The records began on the line of the last test's progress (`.. [100%]{"sch...`),
        # where `grep '^{'` or a JSON-lines reader of the output found none.
        from pytest_autotune.plugin_engine import on_a_line_of_its_own

        on_a_line_of_its_own(session.config)
    failed = state.finish(stopped=_stopped_early(session, exitstatus))
    if state.output.interrupted:
        session.exitstatus = pytest.ExitCode.INTERRUPTED
    elif failed and session.exitstatus == pytest.ExitCode.OK:
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
        ignored = ignored_options(command_line(config, typed_only=True), state.settings)
        if ignored is not None:
            terminalreporter.write_line(ignored)
        return
    lines = state.summary_lines(stats=state.settings.candidates)
    if not lines:  # nothing tuned nor noted (--collect-only, every test deselected)
        return
    # write_sep, not section: it ends the progress line first, as pytest's own sections do,
    # where section left that to the first write_line, a blank line under the title.
    terminalreporter.write_sep("=", "autotune")
    for line in lines:
        terminalreporter.write_line(line)
