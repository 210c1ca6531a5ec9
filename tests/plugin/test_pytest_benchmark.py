"""Beside pytest-benchmark's own plugin: an autotune test whose body takes its `benchmark`."""

from __future__ import annotations

import json

import pytest

from tests.plugin.harness import PLUGIN_ARGS

pytest.importorskip("pytest_benchmark")

SLOW_AND_FAST = """
import pytest
from conftest import spin

def slow(n):
    spin(300e-6)
    return n * 2

def fast(n):
    spin(100e-6)
    return n * 2
"""
"""The start of an inner test file: two right candidates, fast the faster."""

BENCHMARKED = (
    SLOW_AND_FAST
    + """
def wrong(n):
    spin(200e-6)
    return n * 3

@pytest.mark.autotune(candidates={"slow": slow, "fast": fast, "wrong": wrong})
def test_scale(candidate, benchmark):
    return benchmark(candidate, 2)

@pytest.mark.autotune(candidates={"slow": slow, "fast": fast})
def test_pedantic(candidate, benchmark):
    return benchmark.pedantic(candidate, setup=lambda: ((2,), {}), rounds=3)

def test_plain(benchmark):
    assert benchmark(fast, 2) == 4
"""
)


def run_beside_benchmark(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    """A run with pytest-benchmark's plugin loaded, as a project using it runs; its loop
    kept short, and its figures in `bench.json`."""
    with pytest.MonkeyPatch.context() as patch:
        # Where this suite runs under `-n`: pytest-benchmark 5 takes PYTEST_XDIST_WORKER,
        # which the run inherits, for its own run's, and benchmarks nothing.
        patch.delenv("PYTEST_XDIST_WORKER", raising=False)
        result = pytester.runpytest(
            *PLUGIN_ARGS,
            "-p",
            "no:cacheprovider",
            "--benchmark-max-time=0.001",
            "--benchmark-min-rounds=1",
            "--benchmark-json=bench.json",
            *args,
            plugins=[_BenchmarkJsonClosed()],
        )
    return result


class _BenchmarkJsonClosed:
    """pytest-benchmark before 5.0 opens `--benchmark-json`'s file as pytest parses the
    options (argparse's FileType), once for each of pytest's two parses, and never closes
    them: the in-process run's options outlive it, and the garbage collector closed them
    in some later test, whose ResourceWarning failed it. Closed as the run ends (what it
    wrote is flushed on close)."""

    @staticmethod
    def pytest_unconfigure(config: pytest.Config) -> None:
        for options in (config.known_args_namespace, config.option):
            opened = getattr(options, "benchmark_json", None)
            if hasattr(opened, "close"):
                opened.close()


def benchmarked(pytester: pytest.Pytester) -> list[str]:
    data = json.loads((pytester.path / "bench.json").read_text())
    return sorted(b["name"] for b in data["benchmarks"])


def run_plain_then_tuned(
    pytester: pytest.Pytester, plain_benchmarks: list[str], passed: int
) -> None:
    """A plain run, which must pass `passed` tests and benchmark `plain_benchmarks`, then a
    tuning run, which must pass them too, test_scale's winner fast at its 100 us."""
    run_beside_benchmark(pytester).assert_outcomes(passed=passed)
    assert benchmarked(pytester) == plain_benchmarks
    result = run_beside_benchmark(pytester, "--autotune")
    result.assert_outcomes(passed=passed)
    result.stdout.fnmatch_lines(["*test_bench.py::test_scale*fast*100 us*"])


def test_a_plain_run_benchmarks_each_candidate_in_its_own_test_and_checks_it(
    autotune_pytester: pytest.Pytester,
) -> None:
    # The reference's body, called in each other candidate's test, used that test's
    # fixture: pytest-benchmark timed the reference under the other's name, and the
    # test's own fixture, copied as an input, failed its teardown as never used.
    autotune_pytester.makepyfile(test_bench=BENCHMARKED)

    result = run_beside_benchmark(autotune_pytester)

    result.assert_outcomes(passed=5, failed=1)
    result.stdout.fnmatch_lines(
        ["FAILED test_bench.py::test_scale?wrong? - Failed: candidate 'wrong' differs*"]
    )
    assert "was not used" not in result.stdout.str()
    assert benchmarked(autotune_pytester) == [
        "test_pedantic[fast]",
        "test_pedantic[slow]",
        "test_plain",
        "test_scale[fast]",
        "test_scale[slow]",
        "test_scale[wrong]",
    ]


def test_under_autotune_the_tuner_times_the_body_and_the_fixture_calls_once(
    autotune_pytester: pytest.Pytester,
) -> None:
    # Each timed call met the fixture already used (FixtureAlreadyUsed), so every
    # candidate failed, and each test's own fixture failed its teardown as never used.
    autotune_pytester.makepyfile(test_bench=BENCHMARKED)

    result = run_beside_benchmark(autotune_pytester, "--autotune", "-k", "not wrong")

    result.assert_outcomes(passed=5, deselected=1)
    result.stdout.fnmatch_lines(
        [
            "*test_bench.py::test_pedantic*fast*100 us*",
            "*test_bench.py::test_scale*fast*100 us*",
        ]
    )
    assert benchmarked(autotune_pytester) == ["test_plain"]


def test_a_fixture_of_the_users_that_returns_the_benchmark_fixture_works_alike(
    autotune_pytester: pytest.Pytester,
) -> None:
    # Reached through `bench`, pytest-benchmark's fixture was an input again: FixtureAlreadyUsed
    # under --autotune, the reference timed under each other candidate's name in a plain run.
    autotune_pytester.makepyfile(
        test_bench=SLOW_AND_FAST
        + """
@pytest.fixture
def bench(benchmark):
    benchmark.group = "scale"
    return benchmark

@pytest.mark.autotune(candidates={"slow": slow, "fast": fast})
def test_scale(candidate, bench, benchmark):
    return bench(candidate, 2)

def test_plain(bench):
    assert bench(fast, 2) == 4
"""
    )

    run_plain_then_tuned(
        autotune_pytester, ["test_plain", "test_scale[fast]", "test_scale[slow]"], passed=3
    )
    assert benchmarked(autotune_pytester) == ["test_plain"]


def test_our_benchmark_json_and_pytest_benchmarks_on_one_file_stop_at_the_start(
    autotune_pytester: pytest.Pytester,
) -> None:
    # Ours, written last, replaced pytest-benchmark's file: its plain benchmarks went missing.
    autotune_pytester.makepyfile(test_bench=BENCHMARKED)

    result = run_beside_benchmark(
        autotune_pytester, "--autotune-benchmark-json=./bench.json", "-k", "not wrong"
    )
    assert result.ret == pytest.ExitCode.OK  # a plain run writes none of ours

    result = run_beside_benchmark(
        autotune_pytester, "--autotune", "--autotune-benchmark-json=./bench.json"
    )
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        [
            "ERROR: pytest-autotune: command line: autotune_benchmark_json and"
            " --benchmark-json both name bench.json: one would replace the other*"
        ]
    )


def test_a_tuning_run_with_nothing_for_pytest_benchmark_to_save_keeps_its_files(
    autotune_pytester: pytest.Pytester,
) -> None:
    # Under --autotune the tuner times the autotune tests, and pytest-benchmark holds no
    # figures; with `--benchmark-json` set (a project's addopts) it warned "Not saving
    # anything" at the session's end, before this plugin's, and `filterwarnings = error`
    # made that an exception: exit 1, and no cache file, record or report written.
    autotune_pytester.makepyfile(test_bench=BENCHMARKED.split("def test_plain")[0])
    autotune_pytester.makeini("[pytest]\nfilterwarnings = error\n")
    result = run_beside_benchmark(
        autotune_pytester, "--autotune-update", "--autotune-record=records.jsonl", "-k", "not wrong"
    )
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()
    assert list((autotune_pytester.path / ".autotune").rglob("*.json"))
    assert (autotune_pytester.path / "records.jsonl").read_text()
    # A plain run of the same tests benchmarks them, and saves.
    assert run_beside_benchmark(autotune_pytester, "-k", "not wrong").ret == pytest.ExitCode.OK
    assert benchmarked(autotune_pytester)


def test_a_body_that_asks_its_request_for_the_benchmark_fixture_works_alike(
    autotune_pytester: pytest.Pytester,
) -> None:
    # `request.getfixturevalue("benchmark")` gave the body pytest-benchmark's own fixture,
    # which a tuning run had used up: each timed call met FixtureAlreadyUsed and every
    # candidate failed; in a plain run the reference's body, called in the other test,
    # used up that test's fixture, and its own call failed.
    autotune_pytester.makepyfile(
        test_bench=SLOW_AND_FAST
        + """
@pytest.mark.autotune(candidates={"slow": slow, "fast": fast})
def test_scale(candidate, request):
    return request.getfixturevalue("benchmark")(candidate, 2)
"""
    )

    run_plain_then_tuned(autotune_pytester, ["test_scale[fast]", "test_scale[slow]"], passed=2)


def test_a_fixture_returning_a_function_that_calls_the_benchmark_fixture_says_what_to_pass(
    autotune_pytester: pytest.Pytester,
) -> None:
    # The real fixture reached through a closure is called once per sample under
    # --autotune: every candidate failed with pytest-benchmark's bare "FixtureAlreadyUsed",
    # which said nothing of the tuner's many calls, nor what to pass instead.
    autotune_pytester.makepyfile(
        test_bench=SLOW_AND_FAST
        + """
@pytest.fixture
def timed(benchmark):
    return lambda f, *args: benchmark.pedantic(f, args=args, rounds=1)

@pytest.mark.autotune(candidates={"slow": slow, "fast": fast})
def test_scale(candidate, timed):
    return timed(candidate, 2)
"""
    )

    result = run_beside_benchmark(autotune_pytester, "--autotune")

    result.assert_outcomes(failed=2)
    result.stdout.fnmatch_lines(
        [
            "*candidate 'slow' called pytest-benchmark's fixture again (FixtureAlreadyUsed)*",
            "*take `benchmark` itself as the test's argument*",
        ]
    )


def test_in_a_plain_run_such_a_fixture_fails_the_check_it_cannot_make(
    autotune_pytester: pytest.Pytester,
) -> None:
    # The reference's call met the fixture used up by the test's own candidate, and was
    # taken for the reference's failure: the candidate was checked against itself, and a
    # wrong one passed in plain pytest.
    autotune_pytester.makepyfile(
        test_bench="""
        import pytest

        @pytest.fixture
        def timed(benchmark):
            return lambda f, *args: benchmark.pedantic(f, args=args, rounds=1)

        @pytest.mark.autotune(candidates={"right": lambda n: n * 2, "wrong": lambda n: n * 3})
        def test_scale(candidate, timed):
            return timed(candidate, 2)
        """
    )

    result = run_beside_benchmark(autotune_pytester)

    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(
        [
            "*_ test_scale[[]wrong[]] _*",
            "*candidate 'right' called pytest-benchmark's fixture again (FixtureAlreadyUsed)*",
        ]
    )
