"""What a run shows: progress while tuning, the candidates table, and which tests run."""

from __future__ import annotations

import pytest

from tests.plugin.harness import PLUGIN_ARGS, run
from tests.plugin.test_tune_mode import SCALE_TESTS

FIXTURE_TESTS = """
from conftest import spin
from pytest_autotune import TunableSet

def fast(n):
    spin(100e-6)
    return n + 1

def slow(n):
    spin(300e-6)
    return n + 1

def test_production_set(autotune):
    assert autotune(TunableSet.of(lambda n: n, {"slow": slow, "fast": fast}), 41) == 42

def test_plain():
    assert True
"""


@pytest.fixture
def both(autotune_pytester: pytest.Pytester) -> pytest.Pytester:
    autotune_pytester.makepyfile(test_scale=SCALE_TESTS, test_fixture=FIXTURE_TESTS)
    return autotune_pytester


def test_verbose_progress_reaches_the_terminal_through_output_capture(
    both: pytest.Pytester,
) -> None:
    # A subprocess, so pytest captures at the file descriptor as in a real run.
    result = both.runpytest_subprocess(*PLUGIN_ARGS, "-p", "no:cacheprovider", "--autotune", "-v")
    result.stdout.fnmatch_lines(
        [
            "*test_scale.py::test_scale[[]slow-1[]]*",
            "autotune: tuning test_scale.py::test_scale[[]1[]] on cpu-fake-1t",
            "autotune:   slow: 300 us",
        ]
    )


def test_dash_m_autotune_selects_marked_tests_and_tests_of_the_fixture(
    both: pytest.Pytester,
) -> None:
    result = run(both, "-m", "autotune", "-q")
    result.assert_outcomes(passed=7, deselected=1)


def test_autotune_only_tunes_the_autotune_tests_and_deselects_the_rest(
    both: pytest.Pytester,
) -> None:
    result = run(both, "--autotune-only")
    result.assert_outcomes(passed=7, deselected=1)
    result.stdout.fnmatch_lines(["*autotune*", "group*winner*", "*test_production_set*fast*"])


def test_the_candidates_option_shows_every_candidates_statistics(both: pytest.Pytester) -> None:
    result = run(both, "--autotune", "--autotune-candidates", "-k", "scale")
    result.stdout.fnmatch_lines(
        [
            "test_scale.py::test_scale[[]1[]]",
            "  candidate*min*median*mean*stddev*rounds*relative",
            "  * fast*100 us*100 us*100 us*0.00 ns*1.00x",
            "    slow*300 us*3.00x",
            # fast reached the roof, which ended tuning before medium's turn
            "    medium*-*-*-*-*0*not reached",
        ]
    )


def test_keys_read_the_same_in_the_terminal_as_in_the_report(
    autotune_pytester: pytest.Pytester,
) -> None:
    autotune_pytester.makepyfile(
        """
        from conftest import spin
        from pytest_autotune import TunableSet

        def fast(n):
            spin(100e-6)
            return n

        def test_keyed(autotune):
            autotune(TunableSet.of(lambda n: ("n", n), {"fast": fast, "other": fast}), 3)
        """
    )
    result = run(autotune_pytester, "--autotune", "--autotune-html=r.html")
    result.stdout.fnmatch_lines(['*test_keyed*[[]"n",3[]]*fast*'])
    assert "[&#34;n&#34;,3]" in (autotune_pytester.path / "r.html").read_text()


def test_when_the_gate_measures_the_baselines_winner_every_view_names_it(
    autotune_pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    from pytest_autotune import read_records
    from pytest_autotune.report.html import run_view
    from tests.plugin.test_tune_mode import SLIP_TESTS

    autotune_pytester.makepyfile(test_slip=SLIP_TESTS)
    assert run(autotune_pytester, "--autotune-update").ret == pytest.ExitCode.OK
    monkeypatch.setenv("HICCUP", "6")  # tuning picks medium; fast, the baseline's, is faster
    result = run(autotune_pytester, "--autotune", "-v", "--autotune-record=r.jsonl")
    result.stdout.fnmatch_lines(["*test_slip*fast*100 us*pass*", "    * fast*100 us*"])
    (record,) = read_records(autotune_pytester.path / "r.jsonl")
    assert (record.fastest_name, record.extra["measured"]) == ("medium", "fast")
    (decision,) = run_view([record], title="t").decisions
    winner = next(c for c in decision.candidates if c.winner)
    assert (decision.winner, winner.name, winner.median, decision.median) == (
        "fast",
        "fast",
        "100 us",
        "100 us",
    )
    assert "Tuning picked medium" in decision.pick_note
