"""What a test's reports say of its groups, and what they show of it.

The engine's part of `pytest_runtest_makereport` and of the end of a test's protocol
(`plugin_engine`, `plugin._AfterTheBody`): the gate's failures of fixture calls in a body
that did not return, a candidate skipped at its setup, a skip or failure raised here shown
at the test, the properties a timed body recorded kept once, and the failed calls whose groups
are noted once every try of the test has run.
"""

from __future__ import annotations

import os
import pickle
from pathlib import Path

import pytest

from pytest_autotune.collection import ITEM
from pytest_autotune.fixture_modes import gate_failures_of
from pytest_autotune.group_marks import note_skipped_at_setup
from pytest_autotune.stash_keys import SESSION

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


def skipped_at_setup(item: pytest.Item, report: pytest.TestReport, why: str) -> None:
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


def gate_failures_in(item: pytest.Item, report: pytest.TestReport) -> None:
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


def skip_shown_at_the_test(item: pytest.Item, report: pytest.TestReport) -> None:
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


def failure_shown_at_the_test(
    item: pytest.Item, call: pytest.CallInfo[None], report: pytest.TestReport
) -> None:
    """A failure this plugin raised for a test (a wrong candidate, the gate's) is placed at
    the test, as a skip of ours is (`skip_shown_at_the_test`): pytest placed it where it was
    raised, a line of this package that `--tb=line` and pytest-json-report's `crash` showed
    for every such failure. Placed at the test's deepest line that led to it (a fixture's
    call), else its definition. An error of ours that is no test's failure keeps its place."""
    crash = getattr(report.longrepr, "reprcrash", None)
    if call.excinfo is None or crash is None:
        return
    error = call.excinfo.value
    if (
        not isinstance(error, pytest.fail.Exception)
        or error.pytrace
        or not Path(crash.path).resolve().is_relative_to(_PACKAGE_DIR)
    ):
        return
    lines = [entry.lineno for entry in call.excinfo.traceback if entry.path == item.path]
    if lines:
        crash.path, crash.lineno = os.fspath(item.path), lines[-1] + 1
        return
    test_path, line, _ = item.reportinfo()
    if line is not None:
        crash.path, crash.lineno = os.fspath(test_path), line + 1


def distinct_properties(item: pytest.Item) -> None:
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
