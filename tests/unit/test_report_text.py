"""The terminal summary, the failure details and the GitHub Markdown table."""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Any

import pytest

from pytest_autotune.gate import Baseline, Comparison, Measurement, Verdict, judge
from pytest_autotune.report import CandidateRow, GroupSummary
from pytest_autotune.report.failures import INTENDED, failures, reported
from pytest_autotune.report.markdown import escape, render_markdown
from pytest_autotune.report.names import key_text, node_name, ordered
from pytest_autotune.report.terminal import (
    render_candidates,
    render_failures,
    render_reported,
    render_summary,
)

GPU = "cuda-nvidia-h200"
SUM_CACHE = ".autotune/cuda-nvidia-h200/test_sum.json"


def regressed_sum() -> GroupSummary:
    """A group the gate judged: 20% slower than its baseline."""
    baseline = Baseline(GPU, "c", "pairwise", (1e-3,) * 10, source=SUM_CACHE)
    verdict = judge(Measurement((1.2e-3,) * 10), baseline, device_id=GPU, checksum="c")
    return GroupSummary(
        "tests/test_sum.py::test_sum",
        "n65536",
        "pairwise",
        verdict.verdict,
        verdict.failed,
        verdict.message,
        samples=verdict.measurement.samples if verdict.measurement is not None else (),
        fraction_of_roof=verdict.fraction_of_roof,
        comparison=verdict.comparison,
        candidates=(
            CandidateRow("pairwise", 1.19e-3, check_passed=True),
            CandidateRow("dot", error="RuntimeError: boom"),
            CandidateRow("add_reduce", 1.5e-3, check_passed=False),
            CandidateRow("threaded", error="needs 4 cores", skipped=True),
            CandidateRow("sequential", 2e-3, check_passed=False, expected_to_fail=True),
        ),
        device_id=GPU,
    )


SAXPY = GroupSummary(
    group="tests/test_saxpy.py::test_saxpy",
    key="n67108864",
    winner="float4",
    verdict=Verdict.PASS,
    failed=False,
    samples=(189e-6,) * 10,
    fraction_of_roof=0.99,
    comparison=Comparison(0.01, -0.03, 0.05, False),
)
BROKEN = GroupSummary(
    group="tests/test_saxpy.py::test_saxpy",
    key="n1024",
    winner=None,
    verdict=Verdict.ERROR,
    failed=True,
    message="every candidate failed",
)
ODD_NAMES = GroupSummary(
    group="tests/test_a|b.py::test_<x>",
    key="n=1|2",
    winner="a_b*",
    verdict=Verdict.NO_BASELINE,
    failed=False,
    message="no baseline",
    samples=(3e-9,) * 3,
)


def summed(key: str, verdict: Verdict, message: str = "", **more: Any) -> GroupSummary:
    """A group of tests/test_sum.py's test_sum at `key`, won by pairwise."""
    return GroupSummary(
        "tests/test_sum.py::test_sum", key, "pairwise", verdict, False, message, **more
    )


def sized(test: str, n: int, verdict: Verdict, message: str = "") -> GroupSummary:
    """The group of t.py's `test` at size `n`, its id its key (`n{n}`), won by a."""
    return GroupSummary(f"t.py::{test}[n{n}]", f"n{n}", "a", verdict, False, message)


def sum_of(*candidates: CandidateRow, samples: tuple[float, ...] = (1e-3,)) -> GroupSummary:
    """The passing group t.py::test_sum[n4] of `candidates`, won by fast in `samples`."""
    return GroupSummary(
        "t.py::test_sum[n4]",
        "n4",
        "fast",
        Verdict.PASS,
        False,
        samples=samples,
        candidates=candidates,
    )


ELSEWHERE = "; baselines of this test exist for cpu-ci-box (--autotune-runner names the one to use)"


def no_baseline(file: str, elsewhere: str = "") -> str:
    """The message of a group without a baseline on cpu-x-2t, whose cache file, `file`, is
    missing; `elsewhere` (ELSEWHERE) says where baselines of its test are."""
    return (
        f"no baseline for this key on cpu-x-2t (no file .autotune/cpu-x-2t/{file}.json);"
        f" --autotune-update records one{elsewhere}"
    )


def test_the_summary_is_an_aligned_table_in_group_then_key_order() -> None:
    assert render_summary([regressed_sum(), SAXPY, BROKEN]).splitlines() == (
        [
            (
                "group                            key        winner     median   roof"
                "  delta vs baseline        verdict"
            ),
            (
                "-------------------------------  ---------  --------  -------  -----"
                "  -----------------------  ----------"
            ),
            (
                "tests/test_saxpy.py::test_saxpy  n1024      -               -      -"
                "  -                        ERROR"
            ),
            (
                "tests/test_saxpy.py::test_saxpy  n67108864  float4     189 us  99.0%"
                "  +1.0% [-3.0%, +5.0%]     pass"
            ),
            (
                "tests/test_sum.py::test_sum      n65536     pairwise  1.20 ms      -"
                "  +20.0% [+16.3%, +23.8%]  REGRESSION"
            ),
            "verdicts: 1 pass, 1 REGRESSION, 1 ERROR",
        ]
    )


def test_the_order_the_groups_arrive_in_does_not_show() -> None:
    groups = [regressed_sum(), SAXPY, BROKEN]
    assert render_summary(groups) == render_summary(list(reversed(groups)))
    assert [s.key for s in ordered(groups)] == ["n1024", "n67108864", "n65536"]


def test_with_candidates_each_group_lists_them_under_it_the_winner_starred() -> None:
    lines = render_summary([regressed_sum()], candidates=True).splitlines()
    assert lines[3:] == [
        "    * pairwise      1.20 ms  check passed",
        "      dot                 -  error: RuntimeError: boom",
        "      add_reduce    1.50 ms  CHECK FAILED",
        "      threaded            -  skipped: needs 4 cores",
        # Its test is marked xfail: the failure is what the mark expects, no alarm.
        "      sequential    2.00 ms  check failed (xfail)",
        "verdicts: 1 REGRESSION",
    ]


def test_a_candidate_that_raised_in_its_check_reads_as_raised_not_as_a_failed_check() -> None:
    # A candidate that raises fails its check without comparing an output; `-v`'s line read
    # "CHECK FAILED  error: raised ...", where the HTML and the step summary say it raised.
    summary = replace(
        regressed_sum(),
        candidates=(
            CandidateRow("pairwise", 1.19e-3, check_passed=True),
            CandidateRow("boom", error="raised RuntimeError: boom", check_passed=False),
        ),
    )
    assert render_summary([summary], candidates=True).splitlines()[4] == (
        "      boom              -  error: raised RuntimeError: boom"
    )


def test_groups_sort_by_test_then_parameters_with_numbers_read_as_numbers() -> None:
    groups = [
        sized("test_conv", 131072, Verdict.PASS),
        sized("test_add", 16384, Verdict.PASS),
        sized("test_conv", 16384, Verdict.PASS),
    ]
    assert [(s.group.split("::")[1]) for s in ordered(groups)] == [
        "test_add[n16384]",
        "test_conv[n16384]",
        "test_conv[n131072]",
    ]


def test_keys_with_superscript_exponents_sort_as_text_beside_their_numbers() -> None:
    # A key= of sizes written as powers ("2¹⁰"): str.isdigit calls "¹⁰" digits, which int()
    # refuses, and the run's summary ended in an INTERNALERROR.
    def group(key: str) -> GroupSummary:
        return GroupSummary(f"t.py::test_pow[{key}]", key, "a", Verdict.PASS, False)

    groups = [group("10²"), group("2¹⁰"), group("2")]
    assert [s.key for s in ordered(groups)] == ["2", "2¹⁰", "10²"]
    assert "2¹⁰" in render_summary(groups)


def test_the_winners_median_is_the_same_number_in_its_row_and_under_it() -> None:
    summary = regressed_sum()
    lines = render_summary([summary], candidates=True).splitlines()
    assert "1.20 ms" in lines[2] and lines[3].startswith("    * pairwise      1.20 ms")


def test_every_candidate_is_shown_with_its_statistics_relative_to_the_fastest() -> None:
    summary = sum_of(
        CandidateRow("slow", 3e-3, samples=(3e-3, 3e-3, 3.3e-3, 2.9e-3)),
        CandidateRow("fast", 1.1e-3, samples=(1.1e-3,)),
        CandidateRow("broken", error="boom"),
        samples=(1e-3, 1e-3, 1.2e-3),
    )
    assert render_candidates([summary]).splitlines() == [
        "t.py::test_sum[n4]",
        "  candidate      min   median     mean  stddev  rounds  relative",
        "  ---------  -------  -------  -------  ------  ------  --------",
        "  * fast     1.00 ms  1.00 ms  1.07 ms  115 us       3     1.00x",
        "    slow     2.90 ms  3.00 ms  3.05 ms  173 us       4     3.00x",
        "    broken         -        -        -       -       0      boom",
    ]
    # The sample standard deviation, as pytest-benchmark's stddev: fast's three samples
    # (1, 1, 1.2 ms) give sqrt(0.0267 ms^2 / 2) = 115 us (over n, it read 94.3 us).


def test_a_candidate_whose_xfail_mark_expects_its_failed_check_reads_so_in_the_table() -> None:
    summary = sum_of(
        CandidateRow("fast", 1e-3, samples=(1e-3,)),
        CandidateRow(
            "naive",
            error="failed its check: differs from the reference 'fast'",
            check_passed=False,
            expected_to_fail=True,
        ),
    )
    assert render_candidates([summary]).splitlines()[-1] == (
        "    naive          -        -        -        -       0  failed (xfail)"
    )


def test_a_candidate_that_declined_the_key_at_length_is_skipped_in_the_table_not_an_error() -> None:
    # `AutotuneSkip` with a reason too long for the column read "error", where the lines
    # under the summary say "skipped: ..." of the same candidate.
    summary = sum_of(
        CandidateRow("fast", 1e-3, samples=(1e-3,)),
        CandidateRow("tiled", error="needs n to be a multiple of 4096", skipped=True),
        CandidateRow("broken", error="the buffer was too small for it"),
    )
    rows = render_candidates([summary]).splitlines()[4:]
    assert [row.split()[-1] for row in rows] == ["skipped", "error"]


def test_a_failed_verdict_is_in_capitals_and_a_reported_one_is_not() -> None:
    strict = GroupSummary("t::f", "k", "a", Verdict.NO_BASELINE, True, samples=(1e-3,))
    relaxed = GroupSummary("t::f", "k", "a", Verdict.NO_BASELINE, False, samples=(1e-3,))
    assert render_summary([strict]).splitlines()[2].endswith("NO BASELINE")
    assert render_summary([relaxed]).splitlines()[2].endswith("no baseline")


def test_the_failure_details_say_which_group_by_how_much_and_against_what() -> None:
    assert render_failures([SAXPY, regressed_sum(), BROKEN]).splitlines() == (
        [
            "tests/test_saxpy.py::test_saxpy [n1024]: error",
            "    every candidate failed",
            "tests/test_sum.py::test_sum [n65536] (winner pairwise): regression",
            (
                "    regression of +20.0% [+16.3%, +23.8%]: median 1.20 ms against the baseline"
                f" median 1.00 ms (pairwise on {GPU}, {SUM_CACHE}); tolerated 3.0%"
            ),
        ]
    )


def test_there_are_no_failure_details_when_nothing_failed() -> None:
    assert render_failures([SAXPY, ODD_NAMES]) == ""
    assert failures([SAXPY, ODD_NAMES]) == []


def test_every_line_of_a_multi_line_message_is_indented_under_its_group() -> None:
    both = GroupSummary("t::f", "k", "a", Verdict.REGRESSION, True, "regression of x\nfloor y")
    assert render_failures([both]).splitlines() == [
        "t::f [k] (winner a): regression",
        "    regression of x",
        "    floor y",
    ]


NEW_KEY = summed(
    "n4096",
    Verdict.NO_BASELINE,
    "no baseline for this key on cpu-x-2t; --autotune-update records one",
    samples=(1e-3,),
)


def test_a_reported_verdict_says_why_and_what_to_do_though_it_does_not_fail() -> None:
    # The table's "no baseline" alone names neither the device nor the command that helps.
    strict = GroupSummary("t::f", "k", "a", Verdict.NO_BASELINE, True, "no baseline on x")
    assert reported([SAXPY, NEW_KEY, BROKEN, strict]) == [NEW_KEY]
    assert render_reported([SAXPY, NEW_KEY, BROKEN, strict]).splitlines() == [
        "tests/test_sum.py::test_sum [n4096] (winner pairwise): no baseline",
        "    no baseline for this key on cpu-x-2t; --autotune-update records one",
    ]
    assert render_reported([SAXPY, BROKEN]) == ""


def test_groups_reported_for_one_reason_are_shown_once_with_their_names() -> None:
    # A first --autotune of a test over 100 sizes printed one message 100 times.
    missing = "no baseline for this key on cpu-x-2t (no file f.json); --autotune-update records one"
    sizes = [sized("test_s", n, Verdict.NO_BASELINE, missing) for n in range(5)]
    assert render_reported([sizes[0], NEW_KEY, *sizes[1:]]).splitlines() == [
        "5 groups: no baseline (t.py::test_s[n0], t.py::test_s[n1], t.py::test_s[n2] and 2 more)",
        f"    {missing}",
        "tests/test_sum.py::test_sum [n4096] (winner pairwise): no baseline",
        "    no baseline for this key on cpu-x-2t; --autotune-update records one",
    ]
    # As many as it would name are shown each with its winner, as a single one is.
    assert render_reported(sizes[:3]) == render_reported(sizes[:1]) + "\n" + render_reported(
        sizes[1:3]
    )
    assert render_reported(sizes[:3]).count(missing) == 3


def test_groups_of_several_tests_with_baselines_elsewhere_are_not_told_of_one_test() -> None:
    # Folded into one line, the groups of two tests read "baselines of this test exist for
    # cpu-ci-box", in the terminal and the step summary alike.
    def groups(*tests: str) -> list[GroupSummary]:
        return [
            sized(t, n, Verdict.NO_BASELINE, no_baseline(t, ELSEWHERE))
            for t in tests
            for n in (1, 2)
        ]

    several = "; baselines of these tests exist for cpu-ci-box (--autotune-runner"
    for text in (
        render_reported(groups("test_a", "test_b")),
        render_markdown(groups("test_a", "test_b")),
    ):
        assert several in text
        assert "this test" not in text
    one = "; baselines of this test exist for cpu-ci-box (--autotune-runner"
    for text in (
        render_reported(groups("test_a", "test_a")),
        render_markdown(groups("test_a", "test_a")),
    ):
        assert one in text
        assert "4 groups" in text


def test_the_autotune_fixture_calls_of_one_test_are_told_of_one_test() -> None:
    # A test that calls the fixture at four sizes has four groups, its later calls named
    # `t.py::test_sizes (call 2)` and so on: folded, they read "of these tests".
    calls = [
        GroupSummary(
            "t.py::test_sizes" + (f" (call {n})" if n > 1 else ""),
            str(8 * n),
            "a",
            Verdict.NO_BASELINE,
            False,
            no_baseline("mylib", ELSEWHERE),
        )
        for n in (1, 2, 3, 4)
    ]
    for text in (render_reported(calls), render_markdown(calls)):
        assert "4 groups" in text
        assert "baselines of this test exist for cpu-ci-box" in text


@pytest.mark.parametrize(
    ("group", "listed"),
    [
        pytest.param(
            NEW_KEY,
            "\n**Reported, not failing:**\n\n"
            "- tests/test\\_sum.py::test\\_sum \\[n4096\\] (winner pairwise): **no baseline**:"
            " no baseline for this key on cpu-x-2t; --autotune-update records one\n",
            id="reported",
        ),
        pytest.param(
            BROKEN,
            "\n**Failed:**\n\n"
            "- tests/test\\_saxpy.py::test\\_saxpy \\[n1024\\]: **error**: every candidate"
            " failed\n",
            id="failed",
        ),
    ],
)
def test_the_markdown_lists_the_reported_and_the_failed_groups_after_the_table(
    group: GroupSummary, listed: str
) -> None:
    assert render_markdown([SAXPY, group]).endswith(listed)


def test_the_markdown_shows_groups_reported_for_one_reason_once_as_the_terminal_does() -> None:
    # A first --autotune of 150 groups over 30 test files listed 150 "no baseline" items
    # after the table, alike but for each test's cache file.
    def first_run(count: int) -> list[GroupSummary]:
        return [
            GroupSummary(
                f"tests/test_m{i}.py::test_s[n8]",
                "n8",
                "a",
                Verdict.NO_BASELINE,
                False,
                no_baseline(f"m{i}"),
            )
            for i in range(count)
        ]

    def reported_part(count: int) -> str:
        return render_markdown(first_run(count)).split("**Reported, not failing:**")[1]

    assert reported_part(150) == (
        "\n\n- 150 groups (tests/test\\_m0.py::test\\_s\\[n8\\], tests/test\\_m1.py::test\\_s"
        "\\[n8\\], tests/test\\_m2.py::test\\_s\\[n8\\] and 147 more): **no baseline**: no"
        " baseline for this key on cpu-x-2t (no file of theirs in .autotune/cpu-x-2t);"
        " --autotune-update records one\n"
    )
    assert len(reported_part(600)) == len(reported_part(150))
    # Three are each listed with their winner and file, as before.
    assert reported_part(3).count("(winner a): **no baseline**: no baseline") == 3
    assert reported_part(3).count("(no file .autotune/cpu-x-2t/m") == 3


def test_the_markdown_table_has_the_same_cells_with_numbers_right_aligned() -> None:
    assert render_markdown([SAXPY]).split("\n") == (
        [
            "### pytest-autotune",
            "",
            "| group | key | winner | median | roof | delta vs baseline | verdict |",
            "|---|---|---|---:|---:|---|---|",
            (
                "| tests/test\\_saxpy.py::test\\_saxpy | n67108864 | float4 | 189 us | 99.0%"
                " | +1.0% \\[-3.0%, +5.0%\\] | pass |"
            ),
            "",
            "Verdicts: 1 pass",
            "",
        ]
    )


def test_names_with_pipes_html_and_markdown_syntax_stay_literal_in_their_cell() -> None:
    row = render_markdown([ODD_NAMES]).splitlines()[4]
    assert row == (
        "| tests/test\\_a\\|b.py::test\\_&lt;x&gt; | n=1\\|2 | a\\_b\\* | 3.00 ns | - | - |"
        " no baseline |"
    )
    cells = re.split(r"(?<!\\)\|", row)[1:-1]
    assert len(cells) == 7


def test_escaping_puts_a_multi_line_message_on_one_line() -> None:
    assert escape("regression of x\n<b>floor</b>") == "regression of x<br>&lt;b&gt;floor&lt;/b&gt;"


def test_the_markdown_says_what_to_do_about_an_intended_slowdown_as_the_terminal_does() -> None:
    # A reviewer reads the failure on the job's page: a regression that is meant is
    # recorded by an update, which only the terminal said.
    regressed = regressed_sum()
    assert regressed.verdict is Verdict.REGRESSION
    text = render_markdown([SAXPY, regressed])
    failed = text[text.index("**Failed:**") :]
    assert failed.count(escape(INTENDED)) == 1
    assert f"\n\n{escape(INTENDED)}\n\n**Failed checks:**" in failed
    assert escape(INTENDED) not in render_markdown([SAXPY, BROKEN])


def test_the_markdown_says_why_an_update_left_a_baseline_and_which_failures_xfail_expected() -> (
    None
):
    # A refresh job's step summary: the terminal gives the reason, so must the summary.
    kept = summed(
        "n1024",
        Verdict.NOT_RECORDED,
        "not recorded: .autotune/cpu/x.json could not be read (is not valid JSON)",
    )
    # Both groups' tests had an xfail mark; only a failure is said to be expected.
    text = render_markdown([kept, BROKEN], expected=lambda summary: True)
    assert (
        "\n**Not recorded:**\n\n- tests/test\\_sum.py::test\\_sum \\[n1024\\] (winner pairwise):"
        " not recorded:"
        " .autotune/cpu/x.json could not be read (is not valid JSON)\n"
    ) in text
    assert "**error**: every candidate failed (expected to fail (xfail): the run does not" in text


def test_the_markdown_of_an_update_says_what_it_did_with_each_baseline_as_the_terminal_does() -> (
    None
):
    # A refresh job's step summary said "updated" alone where the terminal said the
    # baseline started again (+32%) or was recorded on busy CPUs and should be recorded
    # again: the reader of the job's summary is the one who must act on it.
    restarted = summed("n1024", Verdict.UPDATED, "new baseline: +32.0% against the old one")
    text = render_markdown([restarted])
    assert text.endswith(
        "\n**Updated:**\n\n- tests/test\\_sum.py::test\\_sum \\[n1024\\] (winner pairwise):"
        " **updated**: new baseline: +32.0% against the old one\n"
    )


def test_the_markdown_of_a_first_update_lists_its_alike_new_baselines_once() -> None:
    # A first --autotune-update of 150 groups listed 148 items "new baseline: none before
    # for this key"; one recorded on busy CPUs says so, each on its own.
    alike = "new baseline: none before for this key"
    busy = sized("test_s", 99, Verdict.UPDATED, f"{alike}; recorded although the CPUs")
    text = render_markdown(
        [*(sized("test_s", n, Verdict.UPDATED, alike) for n in range(148)), busy]
    )
    assert text.endswith(
        "\n**Updated:**\n\n- 148 groups (t.py::test\\_s\\[n0\\], t.py::test\\_s\\[n1\\],"
        " t.py::test\\_s\\[n2\\] and 145 more): **updated**: new baseline: none before for"
        " this key\n- t.py::test\\_s\\[n99\\] (winner a): **updated**: new baseline: none"
        " before for this key; recorded although the CPUs\n"
    )


def test_a_summary_of_a_judged_group_carries_the_measurement_the_verdict_rests_on() -> None:
    summary = regressed_sum()
    assert summary.samples == (1.2e-3,) * 10
    assert summary.median == 1.2e-3
    assert (summary.verdict, summary.failed, summary.device_id) == (Verdict.REGRESSION, True, GPU)
    assert BROKEN.median is None


def test_a_failing_group_whose_parameters_are_its_key_is_named_once() -> None:
    summary = GroupSummary(
        "k/test_conv.py::test_conv1d[n131072]",
        "n131072",
        "fft",
        Verdict.REGRESSION,
        True,
        message="slower",
    )
    assert render_failures([summary]).splitlines()[0] == (
        "k/test_conv.py::test_conv1d[n131072] (winner fft): regression"
    )
    assert (
        "- k/test\\_conv.py::test\\_conv1d\\[n131072\\] (winner fft): **regression**: slower"
        in (render_markdown([summary]))
    )


def test_the_markdown_names_each_failed_check_but_not_an_expected_one() -> None:
    summary = summed(
        "n65536",
        Verdict.NO_BASELINE,
        candidates=(
            CandidateRow("pairwise", 1e-3, check_passed=True),
            CandidateRow("add_reduce|2", 2e-3, check_passed=False),
            CandidateRow("dot", 3e-3, check_passed=False, expected_to_fail=True),
        ),
    )
    text = render_markdown([summary, SAXPY])
    assert text.split("**Failed checks:**\n\n")[1].splitlines()[0] == (
        "- tests/test\\_sum.py::test\\_sum \\[n65536\\]: candidate add\\_reduce\\|2 failed its"
        " check: its test fails"
    )
    assert "dot" not in text
    assert "Failed checks" not in render_markdown([SAXPY])


def test_a_short_name_cuts_the_node_id_before_the_parameters_not_inside_them() -> None:
    # The HTML report's chart labels and the benchmark JSON's names were cut at the last
    # `::`, which a parameter's id may hold: `test_scale[a::b]` was shown as `b]`.
    assert node_name("tests/t.py::TestX::test_sum[a::b]") == "test_sum[a::b]"
    assert node_name("tests/t.py::test_sum [x::y]") == "test_sum [x::y]"
    assert node_name("tests/t.py::test_sum") == "test_sum"
    assert node_name("mylib.ops") == "mylib.ops"


def test_wide_characters_in_names_keep_the_columns_of_every_table_aligned() -> None:
    # A CJK or emoji name takes two columns in a terminal but counted one: every cell
    # after it, and the rows under it, were shifted by one column per character.
    wide = GroupSummary(
        group="t.py::test_sum",
        key="n1",
        winner="累加",
        verdict=Verdict.NO_BASELINE,
        failed=False,
        samples=(1e-4,) * 3,
        candidates=(
            CandidateRow("累加", 1e-4, samples=(1e-4,)),
            CandidateRow("naive🚀", 3e-4, samples=(3e-4,)),
        ),
    )
    narrow = GroupSummary(
        group="t.py::test_sum",
        key="n2",
        winner="naive",
        verdict=Verdict.NO_BASELINE,
        failed=False,
        samples=(1e-4,) * 3,
    )

    summary = render_summary([wide, narrow], candidates=True).splitlines()
    assert summary[2:6] == [
        "t.py::test_sum  n1   累加    100 us     -  -                  no baseline",
        "    * 累加        100 us",
        "      naive🚀     300 us",
        "t.py::test_sum  n2   naive   100 us     -  -                  no baseline",
    ]
    assert render_candidates([wide]).splitlines()[3:] == [
        "  * 累加     100 us  100 us  100 us  0.00 ns       3     1.00x",
        "    naive🚀  300 us  300 us  300 us  0.00 ns       1     3.00x",
    ]


def test_a_key_with_a_line_break_is_shown_escaped_on_one_line() -> None:
    # `key=lambda n: f"line\nbreak{n}"` printed its key as itself: the summary table's row
    # was cut in two, and the rest of it shifted.
    assert key_text("line\nbreak1\t|x") == '"line\\nbreak1\\t|x"'
    assert key_text("n1024 ü") == "n1024 ü"
    summary = replace(SAXPY, key=key_text("line\nbreak"))
    assert len(render_summary([summary]).splitlines()) == 4


def test_a_key_of_several_values_shows_its_letters_as_a_key_of_one_string_does() -> None:
    # `key=lambda n: (n, "naïve")` read [1024,"na\u00efve"] in the table, the report and
    # `show`, where a key "naïve" reads as itself; a character no terminal shows stays escaped.
    assert key_text((1024, "naïve", None)) == '[1024,"naïve",null]'
    assert key_text({"op": "累加", "n": 1}) == '{"n":1,"op":"累加"}'
    assert key_text(("a\u200bb",)) == '["a\\u200bb"]'


def test_a_step_summary_too_large_for_github_keeps_its_failures_and_says_what_it_left_out() -> None:
    # GitHub takes 1 MiB of step summary a step and drops the whole of a larger one (an
    # error annotation in its place): a sweep of 8000 groups lost its summary, failures and
    # all. The passing rows go first, and the summary says where they are.
    sweep = [
        GroupSummary(
            f"kernels/tests/test_convolution.py::test_conv2d_nchw_implicit_gemm[{dtype}-c{c}-k{k}]",
            f"{dtype}-c{c}-k{k}",
            "im2col_tiled_64x64",
            Verdict.PASS,
            False,
            samples=(1e-3,),
        )
        for dtype in ("float16", "bfloat16", "float32", "float64")
        for c in range(100)
        for k in range(20)
    ]
    text = render_markdown([*sweep, regressed_sum()])
    assert len(text.encode("utf-8")) <= 1024 * 1024
    assert "**Failed:**" in text and "test\\_sum.py::test\\_sum" in text
    assert (
        "8000 passing groups are left out of the table: GitHub takes 1 MiB of step summary"
        " a step; the terminal summary and the HTML report show every group." in text
    )


def test_a_step_summary_still_too_large_is_cut_at_a_line_saying_so() -> None:
    # What is left, every group reported (no baseline yet), may still be too large.
    new = [sized("test_a", n, Verdict.NO_BASELINE, "no baseline") for n in range(100)]
    text = render_markdown(new, limit=2000)
    assert len(text.encode("utf-8")) <= 2000
    # A file the step's other commands filled to the limit gets nothing more.
    assert render_markdown(new, limit=0) == render_markdown(new, limit=40) == ""
    assert text.startswith("### pytest-autotune\n") and text.endswith(
        "\n... cut here: GitHub takes 1 MiB of step summary a step; the terminal summary and"
        " the HTML report show every group.\n"
    )


def test_groups_of_many_tests_without_a_baseline_are_shown_once_with_their_folder() -> None:
    # A first --autotune of 150 groups over 60 test files printed 150 "no baseline"
    # messages alike but for each test's cache file: 300 lines after the table.
    groups = [
        GroupSummary(
            f"t{i}.py::test_s", "n8", "a", Verdict.NO_BASELINE, False, no_baseline(f"t{i}")
        )
        for i in range(6)
    ]
    assert render_reported(groups).splitlines() == [
        "6 groups: no baseline (t0.py::test_s [n8], t1.py::test_s [n8], t2.py::test_s [n8] and 3"
        " more)",
        "    no baseline for this key on cpu-x-2t (no file of theirs in .autotune/cpu-x-2t);"
        " --autotune-update records one",
    ]
    # Three are each shown with their own file, as before.
    assert render_reported(groups[:3]).count("(no file .autotune/cpu-x-2t/t") == 3
