"""What pytest's own fixtures give a candidate's test body: each call of the body sees
them as the single call of a plain test does, though the body is called for each
candidate (the reference in every other candidate's test) and thousands of times when
tuned."""

from __future__ import annotations

import pytest

from tests.plugin.harness import run

CANDIDATES = """
import logging
import os
import warnings

import pytest
from conftest import spin

def a(n):
    spin(1e-4)
    return n

def b(n):
    spin(2e-4)
    return n
"""


@pytest.mark.parametrize("mode", [(), ("--autotune",)], ids=["plain", "tuning"])
def test_pytests_fixtures_in_the_body_are_the_tests_own_and_undone_at_its_teardown(
    autotune_pytester: pytest.Pytester, mode: tuple[str, ...]
) -> None:
    # They were copied with the inputs (each holds a list): the body's `monkeypatch` was a
    # copy whose patch the teardown never undid, so the variable stayed set for every later
    # test; `caplog.set_level` left the logger at DEBUG; `recwarn` recorded nothing.
    autotune_pytester.makepyfile(
        test_own=CANDIDATES
        + """
@pytest.mark.autotune(candidates={"a": a, "b": b})
def test_own(candidate, monkeypatch, caplog, recwarn):
    monkeypatch.setenv("WHO", candidate.__name__)
    caplog.set_level(logging.DEBUG, logger="kernels")
    warnings.warn("seen", UserWarning)
    assert "seen" in [str(w.message) for w in recwarn]
    return candidate(1)

def test_after():
    assert "WHO" not in os.environ
    assert logging.getLogger("kernels").level == logging.NOTSET
"""
    )
    run(autotune_pytester, "-p", "no:randomly", *mode).assert_outcomes(passed=3)


@pytest.mark.parametrize("mode", [(), ("--autotune",)], ids=["plain", "tuning"])
def test_a_monkeypatch_set_in_one_call_of_the_body_is_undone_before_the_next(
    autotune_pytester: pytest.Pytester, mode: tuple[str, ...]
) -> None:
    # The body's `monkeypatch` was its test's, undone only at the test's teardown: b's
    # body, run after a's in b's test, saw a's variable, and under --autotune each timed
    # call saw the one before it.
    autotune_pytester.makepyfile(
        test_patch=CANDIDATES
        + """
@pytest.mark.autotune(candidates={"a": a, "b": b})
def test_patch(candidate, monkeypatch):
    assert "WHO" not in os.environ, os.environ["WHO"]
    monkeypatch.setenv("WHO", candidate.__name__)
    return candidate(1)

def test_after():
    assert "WHO" not in os.environ
"""
    )
    run(autotune_pytester, "-p", "no:randomly", *mode).assert_outcomes(passed=3)


@pytest.mark.parametrize("mode", [(), ("--autotune",)], ids=["plain", "tuning"])
@pytest.mark.parametrize("arguments", ["request", "request, monkeypatch"])
def test_a_monkeypatch_the_body_asks_its_request_for_is_its_calls_own(
    autotune_pytester: pytest.Pytester, mode: tuple[str, ...], arguments: str
) -> None:
    # `request.getfixturevalue("monkeypatch")` gave the test's own: the call's patch
    # stayed for the next call and the next candidate (the reference's call ran first in
    # b's test, and b's body found its variable).
    autotune_pytester.makepyfile(
        test_asked=CANDIDATES
        + f"""
@pytest.mark.autotune(candidates={{"a": a, "b": b}}, reference="a")
def test_asked(candidate, {arguments}):
    patch = request.getfixturevalue("monkeypatch")
    assert patch is request.getfixturevalue("monkeypatch")
    assert "WHO" not in os.environ, "leaked from an earlier call: " + os.environ["WHO"]
    patch.setenv("WHO", candidate.__name__)
    return candidate(1)

def test_after():
    assert "WHO" not in os.environ
"""
    )
    run(autotune_pytester, "-p", "no:randomly", *mode).assert_outcomes(passed=3)


@pytest.mark.parametrize("mode", [(), ("--autotune",)], ids=["plain", "tuning"])
def test_a_fixtures_helper_that_holds_monkeypatch_patches_the_tests_own(
    autotune_pytester: pytest.Pytester, mode: tuple[str, ...]
) -> None:
    # The helper was copied with the inputs, and its `monkeypatch` with it (it holds a
    # list): the copy's patches were undone by no teardown, and the variable the body set
    # stayed set for every later test of the session.
    autotune_pytester.makepyfile(
        test_helper=CANDIDATES
        + """
class Env:
    def __init__(self, patch):
        self.patch = patch

@pytest.fixture
def env(monkeypatch):
    return Env(monkeypatch)

@pytest.mark.autotune(candidates={"a": a, "b": b})
def test_helper(candidate, env):
    env.patch.setenv("WHO", candidate.__name__)
    return candidate(1)

def test_after():
    assert "WHO" not in os.environ, "leaked from a body: " + os.environ["WHO"]
"""
    )
    run(autotune_pytester, "-p", "no:randomly", *mode).assert_outcomes(passed=3)


@pytest.mark.parametrize("mode", [(), ("--autotune",)], ids=["plain", "tuning"])
def test_caplog_and_recwarn_hold_the_records_of_the_bodys_own_call(
    autotune_pytester: pytest.Pytester, mode: tuple[str, ...]
) -> None:
    # Under --autotune `caplog.records` and `recwarn` held every timed call's records: a
    # body that checks what its call logged or warned failed for each candidate.
    autotune_pytester.makepyfile(
        test_log=CANDIDATES
        + """
@pytest.mark.autotune(candidates={"a": a, "b": b})
def test_log(candidate, caplog, recwarn):
    logging.getLogger("kernels").warning("ran %s", candidate.__name__)
    warnings.warn(f"ran {candidate.__name__}", UserWarning)
    assert [r.getMessage() for r in caplog.records] == [f"ran {candidate.__name__}"]
    assert [str(w.message) for w in recwarn] == [f"ran {candidate.__name__}"]
    return candidate(1)
"""
    )
    run(autotune_pytester, "-p", "no:randomly", *mode).assert_outcomes(passed=2)


@pytest.mark.parametrize("mode", [(), ("--autotune",)], ids=["plain", "tuning"])
def test_each_call_of_the_body_starts_from_tmp_path_as_its_fixtures_left_it(
    autotune_pytester: pytest.Pytester, mode: tuple[str, ...]
) -> None:
    # Every call shared the first test's folder: under --autotune a body that makes
    # `tmp_path / "out"` or opens a file with "x" failed from its second call on.
    autotune_pytester.makepyfile(
        test_files=CANDIDATES
        + """
@pytest.fixture
def given(tmp_path):
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "n.txt").write_text("1")
    return tmp_path / "data" / "n.txt"

@pytest.mark.autotune(candidates={"a": a, "b": b})
def test_files(candidate, given, tmp_path):
    assert sorted(p.name for p in tmp_path.rglob("*")) == ["data", "n.txt"]
    (tmp_path / "out").mkdir()
    with open(tmp_path / "out" / "result.txt", "x") as f:
        f.write(candidate.__name__)
    (tmp_path / "data" / "seen.txt").write_text("")
    return candidate(int(given.read_text()))
"""
    )
    run(autotune_pytester, "-p", "no:randomly", *mode).assert_outcomes(passed=2)


@pytest.mark.parametrize("mode", [(), ("--autotune",)], ids=["plain", "tuning"])
def test_a_finalizer_the_body_adds_runs_when_its_call_ends(
    autotune_pytester: pytest.Pytester, mode: tuple[str, ...]
) -> None:
    # It ran at the teardown of the test that made the call: under --autotune once per
    # timed call at the first test's teardown, so each call found the last one's resource
    # still open, and a plain run closed the reference's at another candidate's teardown.
    autotune_pytester.makepyfile(
        test_finalizer=CANDIDATES
        + """
OPEN = []

@pytest.mark.autotune(candidates={"a": a, "b": b})
def test_finalizer(candidate, request):
    assert OPEN == [], OPEN
    OPEN.append(candidate.__name__)
    request.addfinalizer(OPEN.clear)
    return candidate(1)

def test_after():
    assert OPEN == []
"""
    )
    run(autotune_pytester, "-p", "no:randomly", *mode).assert_outcomes(passed=3)


@pytest.mark.parametrize("mode", [(), ("--autotune",)], ids=["plain", "tuning"])
def test_getfixturevalue_in_the_body_gives_the_values_the_candidate_may_write_into(
    autotune_pytester: pytest.Pytester, mode: tuple[str, ...]
) -> None:
    # It gave the fixture's own array, where the argument is a copy: an in-place
    # candidate wrote into it, and the next candidate's body computed from its output.
    autotune_pytester.makepyfile(
        test_fixture_value="""
import numpy as np
import pytest
from conftest import spin

def a(x, y):
    spin(1e-4)
    x += y
    return x

def b(x, y):
    spin(2e-4)
    np.add(x, y, out=x)
    return x

@pytest.fixture
def x():
    return np.zeros(3)

@pytest.fixture
def y():
    return np.ones(3)

@pytest.mark.autotune(candidates={"a": a, "b": b})
def test_fixture_value(candidate, x, request):
    assert request.getfixturevalue("x") is x
    y = request.getfixturevalue("y")
    out = candidate(x, y).copy()
    y += 1
    return out
"""
    )
    run(autotune_pytester, "-p", "no:randomly", *mode).assert_outcomes(passed=2)


@pytest.mark.parametrize("mode", [(), ("--autotune",)], ids=["plain", "tuning"])
def test_getfixturevalue_of_candidate_in_the_body_gives_the_candidate_it_runs(
    autotune_pytester: pytest.Pytester, mode: tuple[str, ...]
) -> None:
    # It gave the running test's candidate: a plain run's check called the wrong one for
    # the reference too and passed it, and tuning timed the first test's candidate for all.
    autotune_pytester.makepyfile(
        test_asked=CANDIDATES
        + """
def wrong(n):
    spin(1e-4)
    return n + 1

@pytest.mark.autotune(candidates={"b": b, "wrong": wrong})
def test_asked(candidate, request):
    return request.getfixturevalue("candidate")(3)
"""
    )
    result = run(autotune_pytester, "-p", "no:randomly", *mode)
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["FAILED test_asked.py::test_asked[[]wrong[]]*"])


@pytest.mark.parametrize("mode", [(), ("--autotune",)], ids=["plain", "tuning"])
def test_a_method_body_keeps_state_on_self_for_its_own_candidate_alone(
    autotune_pytester: pytest.Pytester, mode: tuple[str, ...]
) -> None:
    # Every candidate's body ran on the first test's instance when tuned (and the
    # reference's on the running test's in a plain run): what a's body kept on `self`,
    # b's body found there. What `setup_method` set up stays for each.
    autotune_pytester.makepyfile(
        test_method=CANDIDATES
        + """
class TestKernels:
    def setup_method(self):
        self.n = 1

    @pytest.mark.autotune(candidates={"a": a, "b": b})
    def test_method(self, candidate):
        if not hasattr(self, "who"):
            self.who = candidate.__name__
        assert self.who == candidate.__name__, self.who
        return candidate(self.n)
"""
    )
    run(autotune_pytester, "-p", "no:randomly", *mode).assert_outcomes(passed=2)


@pytest.mark.parametrize("mode", [(), ("--autotune",)], ids=["plain", "tuning"])
def test_a_method_body_takes_pytests_state_fixtures_as_a_function_does(
    autotune_pytester: pytest.Pytester, mode: tuple[str, ...]
) -> None:
    # Given to a method, `monkeypatch`, `caplog`, `recwarn` or `tmp_path` failed every
    # candidate, in plain pytest too, with our call's "got multiple values for argument
    # 'self'".
    autotune_pytester.makepyfile(
        test_state=CANDIDATES
        + """
class TestKernels:
    @pytest.mark.autotune(candidates={"a": a, "b": b})
    def test_state(self, candidate, monkeypatch, caplog, recwarn, tmp_path):
        monkeypatch.setenv("AUTOTUNE_STATE", "set")
        return candidate(1)
"""
    )
    run(autotune_pytester, "-p", "no:randomly", *mode).assert_outcomes(passed=2)


@pytest.mark.parametrize("mode", [(), ("--autotune",)], ids=["plain", "tuning"])
def test_the_reference_runs_on_the_instance_as_the_test_found_it(
    autotune_pytester: pytest.Pytester, mode: tuple[str, ...]
) -> None:
    # The reference's copy of `self` was taken after the running test's body had counted
    # on it: the reference read 2 where plain pytest's fresh instance reads 1, and a
    # plain run failed unchanged code ("expected 2.0, got 1.0").
    autotune_pytester.makepyfile(
        test_counter=CANDIDATES
        + """
class TestSelf:
    @pytest.mark.autotune(candidates={"a": a, "b": b})
    def test_counter(self, candidate):
        self.calls = getattr(self, "calls", 0) + 1
        return candidate(self.calls)
"""
    )
    run(autotune_pytester, "-p", "no:randomly", *mode).assert_outcomes(passed=2)


@pytest.mark.parametrize("mode", [(), ("--autotune",)], ids=["plain", "tuning"])
def test_an_in_place_candidate_on_an_array_kept_on_self_changes_no_other_candidates(
    autotune_pytester: pytest.Pytester, mode: tuple[str, ...]
) -> None:
    # The copy of `self` each other candidate ran on was shallow: it shared the array that
    # `setup_method` kept there, so the running test's in-place candidate had already
    # added to it when the reference ran, and a plain run failed two correct candidates
    # ("expected 2.0, got 1.0"), as inputs given as arguments (copied) never do.
    autotune_pytester.makepyfile(
        test_buffer=CANDIDATES
        + """
import numpy as np

def add_a(x):
    spin(1e-4)
    x += 1
    return x.copy()

def add_b(x):
    spin(2e-4)
    np.add(x, 1, out=x)
    return x.copy()

class TestBuffer:
    def setup_method(self):
        self.x = np.zeros(4)

    @pytest.mark.autotune(candidates={"a": add_a, "b": add_b})
    def test_buffer(self, candidate):
        return candidate(self.x)
"""
    )
    run(autotune_pytester, "-p", "no:randomly", *mode).assert_outcomes(passed=2)


def test_the_timed_calls_of_a_body_print_and_log_nothing_its_checks_once(
    autotune_pytester: pytest.Pytester,
) -> None:
    # Every timed call printed and logged into the first test's capture: thousands of
    # lines on the terminal with -s (or live logging), and in the test's failure report.
    autotune_pytester.makepyfile(
        test_print=CANDIDATES
        + """
import sys

@pytest.mark.autotune(candidates={"a": a, "b": b})
def test_print(candidate):
    print("printed by", candidate.__name__)
    print("warned by", candidate.__name__, file=sys.stderr)
    logging.getLogger("kernels").warning("logged by %s", candidate.__name__)
    return candidate(1)
"""
    )
    live = ("-o", "log_cli=true", "-o", "log_cli_level=WARNING")
    result = run(autotune_pytester, "-p", "no:randomly", "-s", *live, "--autotune")
    result.assert_outcomes(passed=2)
    for name in ("a", "b"):
        assert result.stdout.str().count(f"printed by {name}") == 1
        assert result.stderr.str().count(f"warned by {name}") == 1
        assert result.stdout.str().count(f"logged by {name}") == 1


def test_the_timed_calls_of_a_body_that_reads_caplog_log_to_caplog_alone(
    autotune_pytester: pytest.Pytester,
) -> None:
    # Taking `caplog` let every timed call's records through to every handler of the root
    # logger: live logging printed each, and the test's report held thousands of lines.
    autotune_pytester.makepyfile(
        test_caplog=CANDIDATES
        + """
@pytest.mark.autotune(candidates={"a": a, "b": b})
def test_caplog(candidate, caplog):
    logging.getLogger("kernels").warning("logged by %s", candidate.__name__)
    assert [r.getMessage() for r in caplog.records] == [f"logged by {candidate.__name__}"]
    return candidate(1)
"""
    )
    live = ("-o", "log_cli=true", "-o", "log_cli_level=WARNING")
    result = run(autotune_pytester, "-p", "no:randomly", "-rP", *live, "--autotune")
    result.assert_outcomes(passed=2)
    for name in ("a", "b"):
        # Once live and once in its test's report, from its checked call.
        assert result.stdout.str().count(f"logged by {name}") == 2


def test_a_body_that_reads_its_own_output_reads_it_in_every_timed_call(
    autotune_pytester: pytest.Pytester,
) -> None:
    autotune_pytester.makepyfile(
        test_capsys=CANDIDATES
        + """
@pytest.mark.autotune(candidates={"a": a, "b": b})
def test_capsys(candidate, capsys):
    print("printed by", candidate.__name__)
    assert capsys.readouterr().out == f"printed by {candidate.__name__}\\n"
    return candidate(1)
"""
    )
    run(autotune_pytester, "-p", "no:randomly", "--autotune").assert_outcomes(passed=2)


def test_each_call_of_the_body_starts_from_a_folder_its_fixture_made_in_tmp_path(
    autotune_pytester: pytest.Pytester,
) -> None:
    autotune_pytester.makepyfile(
        test_out_dir=CANDIDATES
        + """
@pytest.fixture
def out_dir(tmpdir):
    return tmpdir.mkdir("out")

@pytest.mark.autotune(candidates={"a": a, "b": b})
def test_out_dir(candidate, out_dir):
    with open(out_dir / "result.txt", "x") as f:
        f.write(candidate.__name__)
    return candidate(1)
"""
    )
    run(autotune_pytester, "-p", "no:randomly", "--autotune").assert_outcomes(passed=2)


@pytest.mark.parametrize(
    "held",
    [
        '{"out": tmp_path / "result.txt"}',
        'Paths(tmp_path / "result.txt")',
        'str(tmp_path / "result.txt")',
    ],
    ids=["dict", "object", "str"],
)
def test_each_call_of_the_body_starts_from_tmp_path_where_a_fixture_holds_a_path_in_it(
    autotune_pytester: pytest.Pytester, held: str
) -> None:
    # Only a path given as the argument itself was seen: a fixture's dict or helper of
    # paths (or a path as a string) left every call the folder the last one wrote into,
    # and under --autotune the body's open(..., "x") failed from its second call on.
    autotune_pytester.makepyfile(
        test_held=CANDIDATES
        + f"""
class Paths:
    def __init__(self, out):
        self.out = out

def out_of(paths):
    return paths["out"] if isinstance(paths, dict) else getattr(paths, "out", paths)

@pytest.fixture
def paths(tmp_path):
    return {held}

@pytest.mark.autotune(candidates={{"a": a, "b": b}})
def test_held(candidate, paths):
    with open(out_of(paths), "x") as f:
        f.write(candidate.__name__)
    return candidate(1)
"""
    )
    run(autotune_pytester, "-p", "no:randomly", "--autotune").assert_outcomes(passed=2)


FAKE_PYTEST_MOCK = '''
import os
import unittest.mock

import pytest


class Counter:
    """A mock that counts its calls."""

    __slots__ = ("call_count",)

    def __init__(self):
        self.call_count = 0

    def __call__(self):
        self.call_count += 1

    def assert_called_once(self):
        assert self.call_count == 1, f"called {self.call_count} times"

    def reset_mock(self):
        self.call_count = 0


class MockerFixture:
    """pytest-mock's fixture as the plugin meets it: made from the config, its patches
    undone by `stopall()` at the test's teardown. It holds `unittest.mock.sentinel`, whose
    every attribute exists (`copy`, `shape`, `__array__` among them)."""

    __module__ = "pytest_mock.plugin"  # where pytest-mock's own lives

    def __init__(self, config):
        self.sentinel = unittest.mock.sentinel
        self.patches = []
        self.mocks = []

    def patch_env(self, name, value):
        patch = unittest.mock.patch.dict(os.environ, {name: value})
        patch.start()
        self.patches.append(patch)

    def stopall(self):
        while self.patches:
            self.patches.pop().stop()

    def counter(self):
        """A mock this fixture holds and `resetall()` resets, as `mocker.patch(...)`'s."""
        mock = Counter()
        self.mocks.append(mock)
        return mock

    def resetall(self, *, return_value=False, side_effect=False):
        for mock in self.mocks:
            mock.reset_mock()


@pytest.fixture
def mocker(pytestconfig):
    result = MockerFixture(pytestconfig)
    yield result
    result.stopall()
'''


def with_fake_pytest_mock(pytester: pytest.Pytester) -> None:
    """The fake in place of pytest-mock, installed or not: a package of another name (the
    real one, where installed, is imported by then, and would serve `pytest_mock`), and the
    real plugin's entry point left out, so that one `mocker` fixture is defined."""
    package = pytester.mkpydir("fake_pytest_mock")
    (package / "__init__.py").write_text(FAKE_PYTEST_MOCK)
    pytester.makeconftest(
        pytester.path.joinpath("conftest.py").read_text()
        + "\npytest_plugins = ['fake_pytest_mock']\n"
    )
    ini = pytester.path.joinpath("tox.ini").read_text()  # makeini's
    pytester.makeini(ini.rstrip("\n") + "\naddopts = -p no:pytest_mock\n")


def test_pytest_mocks_mocker_is_the_tests_own_never_copied(
    autotune_pytester: pytest.Pytester,
) -> None:
    # The copier walked into pytest-mock's fixture, met `unittest.mock.sentinel` and called
    # its `copy`: every candidate failed "'_SentinelObject' object is not callable", in
    # plain pytest and under --autotune.
    with_fake_pytest_mock(autotune_pytester)
    autotune_pytester.makepyfile(
        test_mocked=CANDIDATES
        + """
@pytest.mark.autotune(candidates={"a": a, "b": b})
def test_mocked(candidate, mocker):
    mocker.patch_env("X", "1")
    return candidate(3)
"""
    )
    assert run(autotune_pytester).ret == pytest.ExitCode.OK
    result = run(autotune_pytester, "--autotune")
    assert result.ret == pytest.ExitCode.OK, result.outlines
    assert "not callable" not in result.stdout.str()


@pytest.mark.parametrize("mode", [(), ("--autotune",)], ids=["plain", "tuning"])
@pytest.mark.parametrize(
    ("arguments", "asked"),
    [("mocker", "mocker"), ("request", "request.getfixturevalue('mocker')")],
    ids=["argument", "asked"],
)
def test_a_mockers_patch_in_one_call_of_the_body_is_undone_before_the_next(
    autotune_pytester: pytest.Pytester, mode: tuple[str, ...], arguments: str, asked: str
) -> None:
    # The body's `mocker` was its test's, whose patches only its teardown undid: each call
    # patched over the last one's, and under --autotune a body's `mocker.spy(mod, "f")`
    # spied on the last call's spy, failing every candidate "Cannot spec a Mock object".
    with_fake_pytest_mock(autotune_pytester)
    autotune_pytester.makepyfile(
        test_mocked=CANDIDATES
        + f"""
@pytest.mark.autotune(candidates={{"a": a, "b": b}})
def test_mocked(candidate, {arguments}):
    assert "WHO" not in os.environ, "leaked from an earlier call: " + os.environ["WHO"]
    {asked}.patch_env("WHO", candidate.__name__)
    return candidate(1)

def test_after():
    assert "WHO" not in os.environ
"""
    )
    run(autotune_pytester, "-p", "no:randomly", *mode).assert_outcomes(passed=3)


@pytest.mark.parametrize("mode", [(), ("--autotune",)], ids=["plain", "tuning"])
def test_the_bodys_mocker_resetall_resets_the_mocks_its_fixtures_made(
    autotune_pytester: pytest.Pytester, mode: tuple[str, ...]
) -> None:
    # Each call has a `mocker` of its own, which does not hold the mock a fixture made
    # with the test's: a body starting each call with `mocker.resetall()` must still find
    # that mock's calls cleared, as in a plain test.
    with_fake_pytest_mock(autotune_pytester)
    autotune_pytester.makepyfile(
        test_reset=CANDIDATES
        + """
@pytest.fixture
def fetch(mocker):
    return mocker.counter()

@pytest.mark.autotune(candidates={"a": a, "b": b})
def test_reset(candidate, fetch, mocker):
    mocker.resetall()
    fetch()
    fetch.assert_called_once()
    return candidate(1)
"""
    )
    run(autotune_pytester, "-p", "no:randomly", *mode).assert_outcomes(passed=2)


@pytest.mark.parametrize("mode", [(), ("--autotune",)], ids=["plain", "tuning"])
def test_a_mock_a_fixture_patched_in_is_the_one_the_body_asserts_on(
    autotune_pytester: pytest.Pytester, mode: tuple[str, ...]
) -> None:
    # The body was given a copy of the fixture's mock (as an input holding a dict), while
    # the code under test called the one patched in: `assert_called_once()` saw no call,
    # in a plain run too.
    autotune_pytester.makepyfile(
        test_wired=CANDIDATES
        + """
import unittest.mock

PATCHED = {}

@pytest.fixture
def fetch():
    PATCHED["fetch"] = unittest.mock.Mock(return_value=1)
    return PATCHED["fetch"]

@pytest.mark.autotune(candidates={"a": a, "b": b})
def test_wired(candidate, fetch):
    fetch.reset_mock()
    PATCHED["fetch"]()
    fetch.assert_called_once()
    return candidate(1)
"""
    )
    run(autotune_pytester, "-p", "no:randomly", *mode).assert_outcomes(passed=2)


@pytest.mark.parametrize("mode", [(), ("--autotune",)], ids=["plain", "tuning"])
def test_a_fixtures_view_of_another_fixtures_array_is_its_view_in_each_candidates_copies(
    autotune_pytester: pytest.Pytester, mode: tuple[str, ...]
) -> None:
    # `slot` views `cache`: copied apart, a candidate writing into `slot` left the `cache`
    # the body returned as it was, and `lazy`, which writes nothing, passed its check.
    autotune_pytester.makepyfile(
        test_views="""
import numpy as np
import pytest
from conftest import spin


def fill(slot):
    spin(1e-4)
    slot[:] = 1.0


def fill_rows(slot):
    spin(2e-4)
    for row in slot:
        row[:] = 1.0


def lazy(slot):
    spin(1e-4)


@pytest.fixture
def cache():
    return np.zeros((4, 8))


@pytest.fixture
def slot(cache):
    return cache[:, :2]


@pytest.mark.autotune(candidates={"fill": fill, "fill_rows": fill_rows, "lazy": lazy})
def test_fill(candidate, cache, slot):
    candidate(slot)
    return cache
"""
    )
    result = run(autotune_pytester, "-p", "no:randomly", *mode)
    result.assert_outcomes(passed=2, failed=1)
    result.stdout.fnmatch_lines(["FAILED test_views.py::test_fill[[]lazy[]] - *"])


def test_fixtures_over_one_bytearray_are_each_others_views_in_each_candidates_copies(
    autotune_pytester: pytest.Pytester,
) -> None:
    # Two `np.frombuffer` arrays over one bytearray are each their own owner: copied apart,
    # a candidate writing into `slot` left the `cache` the body returned as it was, and
    # `lazy`, which writes nothing, passed its check.
    autotune_pytester.makepyfile(
        test_views="""
import numpy as np
import pytest


def fill(slot):
    slot[:] = 1.0


def lazy(slot):
    pass


@pytest.fixture
def buffer():
    return bytearray(32)


@pytest.fixture
def cache(buffer):
    return np.frombuffer(buffer, np.float32)


@pytest.fixture
def slot(buffer):
    return np.frombuffer(buffer, np.float32, count=2, offset=8)


@pytest.mark.autotune(candidates={"fill": fill, "lazy": lazy})
def test_fill(candidate, cache, slot):
    candidate(slot)
    return cache
"""
    )
    result = run(autotune_pytester, "-p", "no:randomly")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["FAILED test_views.py::test_fill[[]lazy[]] - *"])
