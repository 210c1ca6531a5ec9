"""What a run shows: progress while tuning, the candidates table, and which tests run."""

from __future__ import annotations

import pytest

from pytest_autotune.cli import main
from tests.plugin.harness import add_to_conftest, noted, run, run_in_a_subprocess, step_summary
from tests.plugin.test_tune_mode import CACHE, SCALE_TESTS

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
    # A subprocess, so pytest captures at the file descriptor as in a real run; in the
    # file's order (pytest-randomly, where installed, would tune another group first).
    result = run_in_a_subprocess(both, "--autotune", "-v")
    result.stdout.fnmatch_lines(
        [
            "*test_scale.py::test_scale[[]slow-1[]]*",
            "autotune: tuning test_scale.py::test_scale[[]1[]] on cpu-fake-1t",
            "autotune:   slow: 300 us",
        ]
    )


def test_verbose_progress_starts_a_line_of_its_own_after_another_reporters_progress(
    both: pytest.Pytester,
) -> None:
    # pytest-sugar's progress line (`test_x.py ✓✓ 50% █████`) names no test's path for
    # pytest's reporter to end, and the first progress line ran on at its end.
    both.makepyfile(
        sugarlike="""
        CONFIG = None

        def pytest_configure(config):
            global CONFIG
            CONFIG = config

        def pytest_runtest_logstart(nodeid, location):
            CONFIG.pluginmanager.get_plugin("terminalreporter").ensure_newline()
            CONFIG.get_terminal_writer().write(" sugar-like 50%")
        """
    )
    both.syspathinsert()
    result = run(both, "-p", "sugarlike", "--autotune", "-v", "-k", "scale")
    result.stdout.fnmatch_lines(["autotune: tuning test_scale.py::test_scale[[]1[]] on *"])


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


@pytest.mark.parametrize("args", [("--collect-only",), ("-k", "nothing_matches")])
def test_a_tuning_run_that_tunes_nothing_shows_no_empty_autotune_section(
    both: pytest.Pytester, args: tuple[str, ...]
) -> None:
    result = run(both, "--autotune", *args)
    assert "= autotune =" not in result.stdout.str()


@pytest.mark.parametrize("tb", ["--tb=auto", "--tb=no"])
def test_the_autotune_section_starts_as_pytests_own_sections_do(
    both: pytest.Pytester, tb: str
) -> None:
    # All passing (or --tb=no), nothing came between the progress line and the section:
    # a blank line between its title and the table, where pytest's own sections have one
    # before their title.
    lines = run(both, "--autotune", "-k", "scale", tb).stdout.lines
    title = next(i for i, line in enumerate(lines) if "= autotune =" in line)
    assert (lines[title - 1], lines[title + 1][:5]) == ("", "group")


@pytest.mark.parametrize("calls_none", ["--co", "--setup-only", "--setup-plan"])
def test_a_run_that_calls_no_test_writes_no_report_and_no_records(
    both: pytest.Pytester, calls_none: str
) -> None:
    # An empty report replaced the last run's, and an empty records file was made: pytest
    # collects under --co, and sets up and tears down each test's fixtures, never calling
    # the test, under --setup-only and --setup-plan.
    result = run(
        both, "--autotune", calls_none, "--autotune-html=r.html", "--autotune-record=r.jsonl"
    )
    assert result.ret == pytest.ExitCode.OK
    assert not (both.path / "r.html").exists() and not (both.path / "r.jsonl").exists()
    assert "= autotune =" not in result.stdout.str()


FLOAT64_TESTS = """
import numpy as np
import pytest
import conftest
from conftest import spin
from pytest_autotune import Work
from pytest_autotune.backends.peaks import Peaks

# A device whose fp64 rate is half its fp32 rate, as on most CPUs and GPUs.
conftest.FakeClient.peaks = lambda self: Peaks(
    memory={"copy": 1e12, "read": 1e12}, compute={"fp32": 2e9, "fp64": 1e9}, threads=1
)

def fast(x):
    spin(2e-3)
    return x

def slow(x):
    spin(4e-3)
    return x

@pytest.fixture
def x():
    return np.zeros(1)

@pytest.mark.autotune(
    candidates={"fast": fast, "slow": slow},
    work=lambda x: Work(compute_ops=1e6, bytes=8, dtype=x.dtype),
)
def test_matmul(candidate, x):
    return candidate(x)

@pytest.mark.autotune(
    candidates={"fast": fast, "slow": slow},
    work=lambda x: Work(compute_ops=1e6, bytes=8, dtype=np.float32),
)
def test_single(candidate, x):
    return candidate(x)
"""


def test_a_float64_works_roof_is_the_fp64_peak_in_the_summary_and_the_records(
    autotune_pytester: pytest.Pytester,
) -> None:
    # NumPy's default dtype: a float64 kernel read its fraction against the fp32 roof (25%
    # here, where it reaches half of its own).
    autotune_pytester.makepyfile(test_float64=FLOAT64_TESTS)
    result = run(autotune_pytester, "--autotune", "--autotune-record=r.jsonl")
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()
    result.stdout.fnmatch_lines(["*test_matmul*fast*50.0% fp64 compute*"])
    from pytest_autotune import read_records

    records = {
        r.extra["group"].split("::")[-1]: r
        for r in read_records(autotune_pytester.path / "r.jsonl")
    }
    assert records["test_matmul"].extra["work"]["dtype"] == "fp64"
    assert records["test_matmul"].extra["fraction_of_roof"] == pytest.approx(0.5)
    # A float32 work is written as every work was before dtypes: without one.
    assert "dtype" not in records["test_single"].extra["work"]
    assert records["test_single"].extra["fraction_of_roof"] == pytest.approx(0.25)


SET_WORK_TESTS = (
    FLOAT64_TESTS.split("def fast(x):")[0]
    + """
from pytest_autotune import TunableSet

def fast(x):
    spin(2e-3)
    return x

def slow(x):
    spin(4e-3)
    return x

def make_set():
    return TunableSet.of(lambda x: x.size, {"fast": fast, "slow": slow}).with_work(
        lambda x: Work(compute_ops=1e6, bytes=8, dtype=np.float32)
    )

def test_set_work(autotune):
    autotune(make_set(), np.zeros(1))

def test_given_work(autotune):
    autotune(make_set(), np.zeros(1), work=lambda x: Work(compute_ops=2e6, bytes=8))
"""
)


def test_the_fixture_reads_the_roof_of_a_sets_own_work_model(
    autotune_pytester: pytest.Pytester,
) -> None:
    # A set with `with_work` showed "-" in the roof column: an author gave the model twice.
    autotune_pytester.makepyfile(test_set_work=SET_WORK_TESTS)
    result = run(autotune_pytester, "--autotune")
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()
    result.stdout.fnmatch_lines(
        ["*test_given_work*fast*50.0% fp32 compute*", "*test_set_work*fast*25.0% fp32 compute*"],
        consecutive=False,
    )


def test_a_sets_work_model_runs_only_when_tuning_and_is_named_when_it_is_wrong(
    autotune_pytester: pytest.Pytester,
) -> None:
    # Run in plain runs too, a model that returns (ops, bytes) failed a test that never
    # passed work=, blaming "autotune(work=...)".
    autotune_pytester.makepyfile(
        test_bad_model=SET_WORK_TESTS.replace(
            "lambda x: Work(compute_ops=1e6, bytes=8, dtype=np.float32)", "lambda x: (1e6, 8)"
        ).split("def test_given_work")[0]
    )
    assert run(autotune_pytester).ret == pytest.ExitCode.OK
    tuned = run(autotune_pytester, "--autotune")
    assert tuned.ret == pytest.ExitCode.TESTS_FAILED
    tuned.stdout.fnmatch_lines(
        ["*test_set_work: the set's with_work model returned (1000000.0, 8), expected a Work(...)"]
    )


def test_a_sets_work_model_is_the_work_its_thresholds_floor_is_judged_on(
    autotune_pytester: pytest.Pytester,
) -> None:
    # `thresholds=` without `work=` failed "without work=" for a set built with
    # `with_work`, in plain runs too, though the README says the set's model serves the floor.
    autotune_pytester.makepyfile(
        test_set_floor=SET_WORK_TESTS.split("def test_set_work")[0]
        + """
from pytest_autotune import Thresholds

def test_set_floor(autotune):
    autotune(make_set(), np.zeros(1), thresholds=Thresholds(compute=0.5))
"""
    )
    assert run(autotune_pytester).ret == pytest.ExitCode.OK
    tuned = run(autotune_pytester, "--autotune")
    assert tuned.ret == pytest.ExitCode.TESTS_FAILED
    tuned.stdout.fnmatch_lines(["*test_set_floor*fast*25.0% fp32 compute*FLOOR*"])
    tuned.stdout.no_fnmatch_line("*without work=*")


WRONG_TESTS = """
import pytest
from conftest import spin

def fast(n):
    spin(100e-6)
    return n * 2

def off_by_one(n):
    spin(300e-6)
    return n * 2 + 1

def known_bad(n):
    spin(400e-6)
    return n * 3

@pytest.mark.autotune()
@pytest.mark.parametrize(
    "candidate",
    [fast, off_by_one, pytest.param(known_bad, marks=pytest.mark.xfail(strict=True))],
    ids=["fast", "off_by_one", "known_bad"],
)
def test_double(candidate):
    return candidate(21)
"""


def test_the_step_summary_names_a_candidate_that_failed_its_check_as_the_run_does(
    autotune_pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The group's verdict ("no baseline") is the winner's; a wrong candidate fails its own
    # test, which the terminal's failures and the report name. The step summary said only
    # "no baseline" of a run that failed, so a reader of the job's page saw nothing wrong.
    autotune_pytester.makepyfile(test_wrong=WRONG_TESTS)
    summary = step_summary(autotune_pytester, monkeypatch)
    result = run(autotune_pytester, "--autotune")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(["FAILED test_wrong.py::test_double[[]off_by_one[]]*"])
    text = summary.read_text()
    assert "**Failed checks:**" in text
    assert (
        "- test\\_wrong.py::test\\_double \\[default\\]: candidate off\\_by\\_one failed its"
        " check: its test fails" in text
    )
    assert "known\\_bad" not in text  # its xfail mark expects it to fail


def test_the_step_summary_gives_the_runs_notes_as_the_terminal_does(
    autotune_pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The committed winner (what a library served from the cache runs) got twice as slow,
    # and tuning picked another candidate at about the baseline's time: the gate passes,
    # and the terminal notes the slower winner, which the job's page left out.
    autotune_pytester.makepyfile(test_scale=SCALE_TESTS)
    assert run(autotune_pytester, "--autotune-update").ret == pytest.ExitCode.OK
    summary = step_summary(autotune_pytester, monkeypatch)
    monkeypatch.setenv("SLOWDOWN_FAST", "2")
    monkeypatch.setenv("SLOWDOWN_MEDIUM", "0.7")
    result = run(autotune_pytester, "--autotune", "-k", "1")
    assert result.ret == pytest.ExitCode.OK
    result.stdout.fnmatch_lines(["verdicts: 1 pass", "note: *fast measured 2.00x its baseline*"])
    text = summary.read_text()
    assert "\n**Notes:**\n\n- test\\_scale.py::test\\_scale\\[1\\]: tuning picked medium" in text
    assert "fast measured 2.00x its baseline's 100 us, and the committed cache still names" in (
        text
    )


def test_the_step_summary_names_no_failed_check_whose_test_was_deselected(
    autotune_pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Under -k the group is still tuned and checked whole, but a wrong candidate's test
    # that did not run failed nothing: a passing run must not list it as failed.
    autotune_pytester.makepyfile(test_wrong=WRONG_TESTS)
    summary = step_summary(autotune_pytester, monkeypatch)
    result = run(autotune_pytester, "--autotune", "-k", "fast")
    assert result.ret == pytest.ExitCode.OK
    assert "Failed checks" not in summary.read_text()


def test_the_html_report_counts_no_failed_check_whose_test_was_deselected(
    autotune_pytester: pytest.Pytester,
) -> None:
    # The report re-renders from records: each says which candidates' tests this run did
    # not select, so the card and the tally do not fail a run that passed.
    autotune_pytester.makepyfile(test_wrong=WRONG_TESTS)
    result = run(autotune_pytester, "--autotune", "-k", "fast", "--autotune-html=r.html")
    assert result.ret == pytest.ExitCode.OK
    page = (autotune_pytester.path / "r.html").read_text()
    assert "failed checks" not in page.lower()
    assert "its test fails" not in page
    everything = run(autotune_pytester, "--autotune", "--autotune-html=all.html")
    assert everything.ret == pytest.ExitCode.TESTS_FAILED
    assert (
        "off_by_one failed its check: its test fails"
        in (autotune_pytester.path / "all.html").read_text()
    )


def test_a_run_without_pytests_terminal_plugin_runs_tunes_and_gates(
    both: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    # `-p no:terminal` (a tool's quiet machine run) takes away pytest's `-v` option with
    # its reporter: the plugin read `config.option.verbose` and every run, tuning or not,
    # ended in an INTERNALERROR, with exit code 3 where the tests passed.
    assert run(both, "-p", "no:terminal").ret == pytest.ExitCode.OK
    assert run(both, "-p", "no:terminal", "--autotune-update").ret == pytest.ExitCode.OK
    assert (both.path / CACHE).is_file()
    monkeypatch.setenv("SLOWDOWN_FAST", "1.25")
    assert run(both, "-p", "no:terminal", "--autotune").ret == pytest.ExitCode.TESTS_FAILED


INTERRUPTED_TESTS = """
import pytest
from conftest import spin

def fast(n):
    spin(100e-6)
    return n + 1

def slow(n):
    spin(300e-6)
    return n + 1

@pytest.mark.autotune(candidates={"fast": fast, "slow": slow})
@pytest.mark.parametrize("n", [1, 2])
def test_a(candidate, n):
    return candidate(n)

def test_b_ctrl_c():
    raise KeyboardInterrupt

@pytest.mark.autotune(candidates={"fast": fast, "slow": slow})
def test_c(candidate):
    return candidate(3)
"""

FINISHING_TESTS = INTERRUPTED_TESTS.replace("raise KeyboardInterrupt", "pass")


def test_a_run_stopped_early_says_so_in_the_step_summary_and_the_report(
    autotune_pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Ctrl-C (or a cancelled CI job) after the first test's groups: the step summary and
    # the report showed those two groups as the whole run, with nothing to say that
    # test_c was never tuned.
    autotune_pytester.makepyfile(test_stop=INTERRUPTED_TESTS)
    summary = step_summary(autotune_pytester, monkeypatch)
    # A subprocess: in-process, pytester raises the run's KeyboardInterrupt again.
    result = run_in_a_subprocess(
        autotune_pytester, "--autotune", "--autotune-html=r.html", "--autotune-record=r.jsonl"
    )
    assert result.ret == pytest.ExitCode.INTERRUPTED
    said = "stopped early (interrupted): the groups tuned before it are shown, no others"
    result.stdout.fnmatch_lines([f"*{said}*"])
    markdown = summary.read_text()
    assert markdown.count("| test\\_stop.py::") == 2 and said in markdown
    report = (autotune_pytester.path / "r.html").read_text(encoding="utf-8")
    assert said in report
    # Rendered again from its records, the report still says so.
    again = autotune_pytester.path / "again.html"
    assert main(["report", str(autotune_pytester.path / "r.jsonl"), "-o", str(again)]) == 0
    assert said in again.read_text(encoding="utf-8")


def test_a_run_that_ran_to_its_end_says_nothing_of_stopping(
    autotune_pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    autotune_pytester.makepyfile(test_stop=FINISHING_TESTS)
    summary = step_summary(autotune_pytester, monkeypatch)
    result = run(autotune_pytester, "--autotune", "--autotune-html=r.html")
    assert result.ret == pytest.ExitCode.OK
    assert "stopped early" not in result.stdout.str() + summary.read_text()
    assert "stopped early" not in (autotune_pytester.path / "r.html").read_text(encoding="utf-8")


def test_a_run_stopped_before_any_group_does_not_say_it_has_no_autotune_test(
    autotune_pytester: pytest.Pytester,
) -> None:
    # Ctrl-C in the first test: the report said "no test marked autotune ... was recorded"
    # of a project that has them, as if the gate had nothing to run.
    first = "def test_0_ctrl_c():\n    raise KeyboardInterrupt\n"
    autotune_pytester.makepyfile(test_stop=first + FINISHING_TESTS)
    result = run_in_a_subprocess(autotune_pytester, "--autotune", "--autotune-html=r.html")
    assert result.ret == pytest.ExitCode.INTERRUPTED
    report = (autotune_pytester.path / "r.html").read_text(encoding="utf-8")
    assert "No group was tuned before the run stopped early (interrupted)." in report
    assert "no test marked" not in report


NOTES_BLOCKED_MID_RUN = """
import pathlib

def test_block():
    # Made during the run: one there at its start stops it there (`plugin_settings`).
    pathlib.Path("notes.txt").write_text("a file where a folder should be")
"""


def summary_of_a_run_whose_records_are_blocked(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, *args: str
) -> str:
    """The step summary of a tuning run (of `args` too) of FINISHING_TESTS that fails, as
    the records' folder is blocked by a file test_block makes."""
    pytester.makepyfile(test_stop=FINISHING_TESTS, test_block=NOTES_BLOCKED_MID_RUN)
    summary = step_summary(pytester, monkeypatch)
    result = run(pytester, "--autotune", *args, "--autotune-record=notes.txt/r.jsonl")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    return summary.read_text()


def test_the_step_summary_says_why_a_run_whose_groups_all_passed_failed(
    autotune_pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The records could not be written, so the run fails: the job's page showed a table of
    # passing groups and no word of why the job was red.
    markdown = summary_of_a_run_whose_records_are_blocked(autotune_pytester, monkeypatch)
    assert "**Errors and warnings:**" in markdown
    assert "- error: the records could not be written to " in markdown
    assert "notes.txt is a file, not a folder" in markdown


def test_the_step_summary_of_a_run_that_tuned_nothing_still_says_what_went_wrong(
    autotune_pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    # No group reached the end (every one deselected here; under pytest-xdist, workers that
    # crashed take theirs with them): the run failed on a file it could not write, and its
    # step summary, with no table to show, was not written at all.
    # `-k test_b` keeps test_block, which blocks the records' folder.
    markdown = summary_of_a_run_whose_records_are_blocked(
        autotune_pytester, monkeypatch, "-k", "test_b"
    )
    assert markdown.startswith("### pytest-autotune\n\nNo group to show.\n")
    assert "| group |" not in markdown
    assert "- error: the records could not be written to " in markdown


FRACTIONAL_NS_TESTS = """
import os
import pytest
from conftest import spin

def only(n):
    spin(float(os.environ.get("SPIN_NS", "1000")) * 1e-9)
    return n

def other(n):
    spin(20e-6)
    return n

@pytest.mark.autotune(candidates={"only": only, "other": other})
def test_fractional(candidate):
    return candidate(1)
"""

FRACTIONAL_CLIENT = """

class FractionalClient(FakeClient):
    # A loop's time over its calls: a clock's whole nanoseconds divided, as the CPU
    # client's samples are.
    def time(self, fn, inputs):
        return super().time(fn, inputs) - 0.4e-9

def pytest_autotune_client(config, device):
    return FractionalClient() if device in ("auto", "fake") else None
"""


def test_the_gates_message_gives_the_median_the_table_and_the_records_give(
    autotune_pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Samples of a fraction of a nanosecond (3054.6 ns) are written in whole ones (3055):
    # the message's median read 3.05 us beside the table's 3.06 us, and `compare` of the
    # run's records, reading 3.06 us, gave other figures than the run itself.
    add_to_conftest(autotune_pytester, FRACTIONAL_CLIENT)
    autotune_pytester.makepyfile(test_frac=FRACTIONAL_NS_TESTS)
    assert run(autotune_pytester, "--autotune-update").ret == pytest.ExitCode.OK
    monkeypatch.setenv("SPIN_NS", "3055")
    result = run(autotune_pytester, "--autotune", "--autotune-record=r.jsonl")
    result.stdout.fnmatch_lines(
        [
            "*test_fractional*only*3.06 us*REGRESSION",
            "*regression of*: median 3.06 us against the baseline median 1.00 us*",
        ]
    )


SUB_NANOSECOND_CLIENT = """

class ModelClient(FakeClient):
    # A cost model's figures: every call a tenth of a nanosecond.
    def time(self, fn, inputs):
        fn(*inputs)
        return 1e-10

def pytest_autotune_client(config, device):
    return ModelClient() if device in ("auto", "fake") else None
"""


def test_a_winner_timed_under_a_nanosecond_is_compared_and_reported_in_whole_nanoseconds(
    autotune_pytester: pytest.Pytester,
) -> None:
    # Written as 0 ns, the winner's samples made the run's records refused by `report`
    # ("extra 'winner_samples_ns' must hold positive integers"), and the baseline the cache
    # file read back differed from the run's own figures.
    add_to_conftest(autotune_pytester, SUB_NANOSECOND_CLIENT)
    autotune_pytester.makepyfile(test_frac=FRACTIONAL_NS_TESTS)
    assert run(autotune_pytester, "--autotune-update").ret == pytest.ExitCode.OK
    result = run(autotune_pytester, "--autotune", "--autotune-record=r.jsonl")
    assert result.ret == pytest.ExitCode.OK
    result.stdout.fnmatch_lines(["*test_fractional*1.00 ns*+0.0%*pass*"])
    report = autotune_pytester.path / "r.html"
    assert main(["report", str(autotune_pytester.path / "r.jsonl"), "-o", str(report)]) == 0


NOTED_TESTS = """
import functools
import pytest
from conftest import spin

def fast(n):
    spin(n)
    return n

def boom(n):
    raise ValueError("bad block size <7>")

@pytest.mark.parametrize("n", [10])
@pytest.mark.autotune(candidates=[functools.partial(fast), boom])
def test_numbered(candidate, n):
    return candidate(n)
"""


def run_noted_tests(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> tuple[pytest.RunResult, str, str]:
    """A tuning run of NOTED_TESTS, which fails (boom raises): its output, its step summary
    and its HTML report."""
    pytester.makepyfile(test_noted=NOTED_TESTS)
    summary = step_summary(pytester, monkeypatch)
    result = run(pytester, "--autotune", "--autotune-html=r.html")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    return result, summary.read_text(), (pytester.path / "r.html").read_text()


def test_the_html_report_and_step_summary_carry_the_terminals_notes(
    autotune_pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The warning of candidates named by their place was said beside the terminal's table
    # alone: a CI user who reads the report artifact or the job's summary never saw it.
    result, summary, page = run_noted_tests(autotune_pytester, monkeypatch)
    result.stdout.fnmatch_lines(["warning: *candidate candidate0 is named by its place*"])
    assert "candidate candidate0 is named by its place in the list" in page
    assert "report: r.html" not in page  # the page does not name itself
    assert "candidate0 is named by its place" in summary


def test_a_candidate_that_raised_is_said_to_have_raised_not_failed_its_check(
    autotune_pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    # "candidate 'boom' failed its check: ValueError: ..." read as an output compared and
    # found wrong, in the test's failure, the step summary and the report alike.
    result, summary, page = run_noted_tests(autotune_pytester, monkeypatch)
    result.stdout.fnmatch_lines(
        noted("*under --autotune: candidate 'boom' raised ValueError: bad block size <7>*")
    )
    assert "candidate boom raised: its test fails" in summary
    assert "candidate boom raised: its test fails" in page
    assert "bad block size &lt;7&gt;" in page
    for text in (result.stdout.str(), summary, page):
        assert "failed its check" not in text.replace("failed its check or raised", "")


def test_a_group_whose_every_candidate_raised_is_said_once_not_again_in_the_captured_log(
    autotune_pytester: pytest.Pytester,
) -> None:
    # The tuner's logger warned "no candidate succeeded ..." beside the test's own failure,
    # which says it ("autotune gate: error: every candidate failed: ..."): pytest's
    # captured log section repeated it.
    autotune_pytester.makepyfile(
        test_broken="""
import pytest

def boom(n):
    raise ValueError("no such mode")

def bang(n):
    raise KeyError("nope")

@pytest.mark.autotune(candidates=[boom, bang])
def test_broken(candidate):
    return candidate(10)
"""
    )
    result = run(autotune_pytester, "--autotune", "-rA")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    # The gate's section says it on every Python (the test's note, on 3.11 on, too).
    result.stdout.fnmatch_lines(["    every candidate failed: boom: raised ValueError*"])
    result.stdout.no_fnmatch_line("*no candidate succeeded*")
    result.stdout.no_fnmatch_line("*Captured log*")


def test_a_first_update_of_many_groups_says_their_new_baselines_in_one_line(
    autotune_pytester: pytest.Pytester,
) -> None:
    # A first --autotune-update of 150 groups printed 148 lines of "new baseline: none
    # before for this key", one a group; the step summary already folded them.
    autotune_pytester.makepyfile(
        test_sizes="""
        import pytest
        from conftest import spin

        def a(n):
            spin(1e-4 * n)
            return n

        def b(n):
            spin(2e-4 * n)
            return n

        @pytest.mark.autotune(candidates={"a": a, "b": b})
        @pytest.mark.parametrize("n", [1, 2, 3, 4, 5])
        def test_sizes(candidate, n):
            return candidate(n)
        """
    )
    result = run(autotune_pytester, "--autotune-update", "-p", "no:randomly")
    assert result.ret == pytest.ExitCode.OK, result.outlines
    text = result.stdout.str()
    assert text.count("new baseline: none before for this key") == 1
    result.stdout.fnmatch_lines(
        [
            "5 groups (test_sizes.py::test_sizes[[]1[]], test_sizes.py::test_sizes[[]2[]],"
            " test_sizes.py::test_sizes[[]3[]] and 2 more): new baseline: none before for this key"
        ]
    )
