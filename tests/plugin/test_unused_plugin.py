"""What the installed plugin does to a run that does not use it: nothing, and it loads
neither NumPy nor its engine there; a project whose one file uses it runs as before."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

import pytest_autotune
from tests.plugin.harness import FAKE_CONFTEST, PLUGIN_ARGS, run

REPO = Path(pytest_autotune.__file__).parent.parent

ENGINE = (
    "numpy",
    "pytest_autotune.plugin_engine",
    "pytest_autotune.item_reports",
    "pytest_autotune.collected_items",
    "pytest_autotune.candidate_call",
    "pytest_autotune.marker_callables",
    "pytest_autotune.tuning_notes",
    "pytest_autotune.session",
    "pytest_autotune.group_request",
    "pytest_autotune.devices",
    "pytest_autotune.group_keeper",
    "pytest_autotune.candidate_outcomes",
    "pytest_autotune.collection",
    "pytest_autotune.function_spec",
    "pytest_autotune.generate_tests",
    "pytest_autotune.item_groups",
    "pytest_autotune.group_key",
    "pytest_autotune.group_marks",
    "pytest_autotune.parameter_ids",
    "pytest_autotune.parametrized_candidates",
    "pytest_autotune.fixture",
    "pytest_autotune.fixture_modes",
    "pytest_autotune.call_limit",
    "pytest_autotune.failing",
    "pytest_autotune.key_checks",
    "pytest_autotune.body_arguments",
    "pytest_autotune.body_state",
    "pytest_autotune.body_outcomes",
    "pytest_autotune.gate",
    "pytest_autotune.gate_policy",
    "pytest_autotune.group_case",
    "pytest_autotune.candidate_measure",
    "pytest_autotune.confirmations",
    "pytest_autotune.baseline_winner",
    "pytest_autotune.update_policy",
    "pytest_autotune.report",
    "pytest_autotune.backends",
    "pytest_autotune.tune.tuner",
    "pytest_autotune.tune.device_tuner",
    "pytest_autotune.tune.checks",
)

LOADED_CONFTEST = f"""
import json
import sys

def pytest_sessionfinish(session):
    # Each process of the run (pytest-xdist's controller and workers) says what it loaded.
    worker = getattr(session.config, "workerinput", {{}}).get("workerid", "controller")
    loaded = [name for name in {ENGINE!r} if name in sys.modules]
    with open(f"loaded-{{worker}}.json", "w") as f:
        json.dump(loaded, f)
"""

PLAIN_TESTS = """
import pytest

@pytest.mark.parametrize("n", [1, 2])
def test_plain(n):
    assert n > 0

def test_fixture(tmp_path):
    assert tmp_path.is_dir()
"""

GROUP_TESTS = """
import numpy as np
import pytest
from conftest import spin

def right(n):
    spin(1e-3)
    return np.arange(n) * 2.0

def wrong(n):
    spin(2e-3)
    return np.arange(n) * 2.0 + 1.0

@pytest.mark.autotune(candidates=[right, wrong])
@pytest.mark.parametrize("n", [8])
def test_group(candidate, n):
    return candidate(n)
"""


def _loaded(pytester: pytest.Pytester) -> dict[str, list[str]]:
    return {
        path.stem.removeprefix("loaded-"): json.loads(path.read_text())
        for path in pytester.path.glob("loaded-*.json")
    }


def _run_apart(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, *args: str
) -> pytest.RunResult:
    """A pytest of its own process, which imports only what the run loads."""
    monkeypatch.setenv("PYTHONPATH", str(REPO))
    return pytester.runpytest_subprocess(
        *PLUGIN_ARGS, "-p", "no:cacheprovider", "-p", "no:benchmark", "-p", "no:randomly", *args
    )


def test_a_run_of_plain_tests_loads_neither_numpy_nor_the_engine(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester.makeconftest(LOADED_CONFTEST)
    pytester.makeini("[pytest]\nfilterwarnings = error\n")
    pytester.makepyfile(test_plain=PLAIN_TESTS)

    result = _run_apart(pytester, monkeypatch, "--strict-markers")

    result.assert_outcomes(passed=3)
    assert _loaded(pytester) == {"controller": []}


@pytest.mark.skipif(importlib.util.find_spec("xdist") is None, reason="needs pytest-xdist")
def test_plain_tests_under_xdist_load_neither_in_the_controller_nor_the_workers(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester.makeconftest(LOADED_CONFTEST)
    pytester.makepyfile(test_plain=PLAIN_TESTS)

    result = _run_apart(pytester, monkeypatch, "-n", "2")

    result.assert_outcomes(passed=3)
    assert _loaded(pytester) == {"controller": [], "gw0": [], "gw1": []}


def test_a_marked_group_loads_the_engine_in_a_plain_run(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester.makeconftest(FAKE_CONFTEST + LOADED_CONFTEST)
    pytester.makepyfile(test_plain=PLAIN_TESTS, test_group=GROUP_TESTS)

    result = _run_apart(pytester, monkeypatch, "-k", "not group")

    result.assert_outcomes(passed=3, deselected=2)
    assert "pytest_autotune.plugin_engine" in _loaded(pytester)["controller"]


def test_the_fixture_asked_for_in_the_body_loads_the_engine(
    autotune_pytester: pytest.Pytester,
) -> None:
    autotune_pytester.makepyfile(
        """
        import numpy as np
        from pytest_autotune import Tunable, TunableSet

        def test_late(request):
            tunables = TunableSet(lambda x: len(x), tunables=[
                Tunable("one", lambda x: x + 1.0), Tunable("other", lambda x: x + 2.0)])
            request.getfixturevalue("autotune")(tunables, np.ones(4))
        """
    )

    result = run(autotune_pytester)

    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*other*"])


@pytest.mark.parametrize(
    ("args", "outcomes"),
    [
        pytest.param((), {"passed": 4, "failed": 1}, id="plain"),
        pytest.param(("-k", "not group"), {"passed": 3, "deselected": 2}, id="k-plain"),
        pytest.param(("-k", "group"), {"passed": 1, "failed": 1, "deselected": 3}, id="k-group"),
        pytest.param(("--strict-markers", "-W", "error"), {"passed": 4, "failed": 1}, id="strict"),
        pytest.param(("--autotune",), {"passed": 4, "failed": 1}, id="autotune"),
        pytest.param(("-n", "2"), {"passed": 4, "failed": 1}, id="xdist"),
        pytest.param(("-n", "2", "--autotune"), {"passed": 4, "failed": 1}, id="xdist-autotune"),
    ],
)
def test_a_project_with_one_marked_file_runs_as_before(
    autotune_pytester: pytest.Pytester, args: tuple[str, ...], outcomes: dict[str, int]
) -> None:
    if "-n" in args and importlib.util.find_spec("xdist") is None:
        pytest.skip("needs pytest-xdist")
    autotune_pytester.makepyfile(test_plain=PLAIN_TESTS, test_group=GROUP_TESTS)

    result = run(autotune_pytester, *args)

    result.assert_outcomes(**outcomes)
    if outcomes.get("failed"):
        result.stdout.fnmatch_lines(["*test_group*wrong*", "*differs from*"])
    if "--autotune" in args:
        result.stdout.fnmatch_lines(["*autotune*"])


PYTESTER_TESTS = """
import pytest

PLUGIN_ARGS = {plugin_args!r}

INNER = '''
import pytest
from pytest_autotune import Tunable, TunableSet

def a(n):
    return [n] * 3

def b(n):
    return [n] * 3

@pytest.mark.autotune(candidates=[a, b])
def test_marked(candidate):
    return candidate(2)

def test_fixture(autotune):
    autotune(TunableSet(lambda n: n, tunables=[Tunable("a", a), Tunable("b", b)]), 2)
'''

@pytest.mark.parametrize("run", [1, 2])
def test_my_plugin(pytester, run):
    pytester.makepyfile(test_inner=INNER)
    result = pytester.runpytest(*PLUGIN_ARGS, "-p", "no:randomly", "-W", "error")
    result.assert_outcomes(passed=3)
"""


def test_a_project_testing_with_pytester_runs_the_plugin_in_each_of_its_runs(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A project whose tests make pytest runs in their own process (pytester's
    `runpytest`), each using the plugin, where nothing else of the project loads it:
    pytester drops what a run imported, and the second run imported NumPy again ("cannot
    load module more than once per process") and the plugin's modules anew."""
    pytester.makeconftest('pytest_plugins = ["pytester"]\n')
    pytester.makepyfile(test_my_plugin=PYTESTER_TESTS.format(plugin_args=PLUGIN_ARGS))

    result = _run_apart(pytester, monkeypatch)

    result.assert_outcomes(passed=2)


def test_a_test_case_marked_by_a_conftest_after_collection_fails_saying_why(
    pytester: pytest.Pytester,
) -> None:
    """A unittest.TestCase method marked `autotune` by a conftest's
    `pytest_collection_modifyitems`, in a run where nothing else uses the plugin, fails
    as one marked by hand does; it passed, checking nothing."""
    pytester.makeconftest(
        """
        import pytest

        def pytest_collection_modifyitems(items):
            for item in items:
                item.add_marker(pytest.mark.autotune)
        """
    )
    pytester.makepyfile(
        """
        import unittest

        class SpeedCase(unittest.TestCase):
            def test_speed(self):
                pass
        """
    )

    result = run(pytester)

    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*a unittest.TestCase method cannot be an autotune test*"])
