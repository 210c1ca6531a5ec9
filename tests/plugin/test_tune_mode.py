"""`pytest --autotune`: tune, check, measure the winner, compare with the committed cache."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.plugin.harness import run

SCALE_TESTS = """
import pytest
from conftest import spin, slowdown
from pytest_autotune import Thresholds, Work

def slow(n):
    spin(300e-6 * slowdown("slow"))
    return n * 2

def fast(n):
    spin(100e-6 * slowdown("fast"))
    return n * 2

def medium(n):
    spin(150e-6 * slowdown("medium"))
    return n * 2

@pytest.mark.autotune(
    candidates={"slow": slow, "fast": fast, "medium": medium},
    work=lambda n: Work(bytes=1e5),
)
@pytest.mark.parametrize("n", [1, 2])
def test_scale(candidate, n):
    return candidate(n)
"""

CACHE = Path(".autotune/cpu-fake-1t/test_scale.py__test_scale-bdc7d159eb.json")


@pytest.fixture
def scale(autotune_pytester: pytest.Pytester) -> pytest.Pytester:
    autotune_pytester.makepyfile(test_scale=SCALE_TESTS)
    return autotune_pytester


def cache_file(pytester: pytest.Pytester) -> Path:
    return pytester.path / CACHE


def test_update_writes_the_baselines_and_the_gate_then_passes(scale: pytest.Pytester) -> None:
    updated = run(scale, "--autotune-update")
    assert updated.ret == pytest.ExitCode.OK
    data = json.loads(cache_file(scale).read_text())
    assert [(e["key"], e["fastest_name"]) for e in data["entries"]] == [
        ("1", "fast"),
        ("2", "fast"),
    ]
    assert data["device"]["id"] == "cpu-fake-1t"

    gated = run(scale, "--autotune")
    assert gated.ret == pytest.ExitCode.OK
    gated.stdout.fnmatch_lines(["*test_scale.py::test_scale[[]1[]]*fast*100 us*100.0%*+0.0%*pass*"])


def test_without_update_the_cache_files_are_only_read(scale: pytest.Pytester) -> None:
    run(scale, "--autotune-update")
    before = cache_file(scale).read_bytes()
    run(scale, "--autotune")
    assert cache_file(scale).read_bytes() == before


def test_a_slowdown_of_the_winner_fails_with_how_much_and_against_what(
    scale: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    run(scale, "--autotune-update")
    monkeypatch.setenv("SLOWDOWN_FAST", "1.25")
    result = run(scale, "--autotune")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(
        [
            "*autotune gate: regression: regression of +25.0% [[]*",
            (
                "*median 125 us against the baseline median 100 us (fast on cpu-fake-1t,"
                f" {CACHE}); tolerated 10.0%*"
            ),
        ]
    )
    result.stdout.fnmatch_lines(["FAILED test_scale.py::test_scale[[]fast-1[]]*"])
    result.assert_outcomes(passed=4, failed=2)


def test_a_slowdown_within_the_noise_allowance_does_not_fail(
    scale: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    run(scale, "--autotune-update")
    # 10% tolerated plus 3.09 x 3% between-session noise on a CPU: +15% must pass.
    monkeypatch.setenv("SLOWDOWN_FAST", "1.15")
    assert run(scale, "--autotune").ret == pytest.ExitCode.OK


def test_update_records_a_slower_winner_without_failing(
    scale: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    run(scale, "--autotune-update")
    monkeypatch.setenv("SLOWDOWN_FAST", "2.0")
    result = run(scale, "--autotune-update")
    assert result.ret == pytest.ExitCode.OK
    result.stdout.fnmatch_lines(["*updated*"])
    data = json.loads(cache_file(scale).read_text())
    winner = data["entries"][0]["results"][data["entries"][0]["fastest_index"]]
    assert data["entries"][0]["fastest_name"] == "medium"
    assert set(winner["samples_ns"]) == {150_000}


def test_updates_keep_their_sessions_until_one_differs_as_the_gate_would_fail(
    scale: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    for _ in range(3):
        assert run(scale, "--autotune-update").ret == pytest.ExitCode.OK
    entry = json.loads(cache_file(scale).read_text())["entries"][0]
    assert entry["sessions"] == [{"median_ns": 100_000, "read_ns": None}] * 2

    # A baseline of three sessions is what the gate compares with, and says so.
    monkeypatch.setenv("SLOWDOWN_FAST", "1.25")
    failed = run(scale, "--autotune")
    failed.stdout.fnmatch_lines(["*against the baseline median 100 us (mean of 3 sessions)*"])

    # 25% slower is a regression the gate would fail: an update then starts a new baseline.
    assert run(scale, "--autotune-update").ret == pytest.ExitCode.OK
    entry = json.loads(cache_file(scale).read_text())["entries"][0]
    assert "sessions" not in entry
    assert entry["fastest_name"] == "fast"

    # 12% faster than that is inside the gate's band (10% + 3.09 x 3%): one more session.
    monkeypatch.setenv("SLOWDOWN_FAST", "1.1")
    assert run(scale, "--autotune-update").ret == pytest.ExitCode.OK
    entry = json.loads(cache_file(scale).read_text())["entries"][0]
    assert entry["sessions"] == [{"median_ns": 125_000, "read_ns": None}]


def test_a_corrupt_cache_file_is_named_in_a_warning_and_left_untouched(
    scale: pytest.Pytester,
) -> None:
    path = cache_file(scale)
    path.parent.mkdir(parents=True)
    path.write_text("{ this is not json")
    result = run(scale, "--autotune")
    assert result.ret == pytest.ExitCode.OK
    result.stdout.fnmatch_lines([f"*warning: *{CACHE}*"])
    assert path.read_text() == "{ this is not json"
    updated = run(scale, "--autotune-update")
    assert updated.ret == pytest.ExitCode.TESTS_FAILED
    updated.stdout.fnmatch_lines(
        [
            f"test_scale.py::test_scale[[]1[]] [[]1[]]: not recorded: {CACHE} could not be read"
            " (is not valid JSON: *), and is left as it is",
            f"*error: *{CACHE}*this file was not updated*",
        ]
    )
    assert "new baseline" not in updated.stdout.str()
    assert path.read_text() == "{ this is not json"


def test_strict_mode_fails_a_group_without_a_baseline(scale: pytest.Pytester) -> None:
    result = run(scale, "--autotune", "--autotune-strict")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(["*no baseline*--autotune-update records one*"])
    assert run(scale, "--autotune").ret == pytest.ExitCode.OK


def test_a_baseline_of_another_candidate_list_is_not_comparable_and_never_fails(
    scale: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    run(scale, "--autotune-update")
    scale.makepyfile(test_scale=SCALE_TESTS.replace('"medium": medium', '"middle": medium'))
    monkeypatch.setenv("SLOWDOWN_FAST", "2.0")
    result = run(scale, "--autotune", "--autotune-strict")
    assert result.ret == pytest.ExitCode.OK
    result.stdout.fnmatch_lines(["*not comparable*"])


CALIBRATED_TESTS = """
import os

import numpy as np
import pytest
from conftest import spin

MACHINE = float(os.environ.get("MACHINE", "1"))
\"\"\"How much slower this machine is today than when the baseline was recorded.\"\"\"


@pytest.fixture(autouse=True)
def fake_read(monkeypatch):
    # The calibration read on the fake clock: 400 us, slowed by the machine unless READ_FROZEN.
    read_s = 400e-6 * (1 if os.environ.get("READ_FROZEN") else MACHINE)
    monkeypatch.setattr(
        "pytest_autotune.calibration.calibration_read", lambda inputs: lambda: spin(read_s)
    )


def fast(x):
    spin(100e-6 * MACHINE)
    return x.sum()


def slow(x):
    spin(300e-6 * MACHINE)
    return x.sum()


@pytest.fixture
def x():
    return np.ones(64, dtype=np.float32)


@pytest.mark.autotune(candidates={"fast": fast, "slow": slow})
def test_sum(candidate, x):
    return candidate(x)
"""


def test_a_cpu_baseline_keeps_the_calibration_read_and_a_slower_machine_is_no_regression(
    autotune_pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    autotune_pytester.makepyfile(test_calibrated=CALIBRATED_TESTS)
    assert run(autotune_pytester, "--autotune-update").ret == pytest.ExitCode.OK
    path = (
        autotune_pytester.path
        / ".autotune/cpu-fake-1t/test_calibrated.py__test_sum-9bef36f46f.json"
    )
    entry = json.loads(path.read_text())["entries"][0]
    winner = entry["results"][entry["fastest_index"]]
    assert entry["calibration"]["kind"] == "read-inputs/1"
    assert entry["calibration"]["samples_ns"] == [400_000] * len(winner["samples_ns"])

    # The kernel and the read both 1.5% slower: the machine, not the kernel.
    monkeypatch.setenv("MACHINE", "1.015")
    passed = run(autotune_pytester, "--autotune")
    assert passed.ret == pytest.ExitCode.OK
    passed.stdout.fnmatch_lines(["*test_sum*fast*102 us*+0.0%*pass*"])

    # Both 30% slower: never a regression, but a move that large is divided out only as
    # far as the read follows the kernel, so the gate says it cannot tell.
    monkeypatch.setenv("MACHINE", "1.3")
    moved = run(autotune_pytester, "--autotune")
    assert moved.ret == pytest.ExitCode.OK
    moved.stdout.fnmatch_lines(["*test_sum*fast*130 us*+0.0%*too noisy*"])

    # The kernel alone 30% slower: a regression, and the message says the read was used.
    monkeypatch.setenv("READ_FROZEN", "1")
    failed = run(autotune_pytester, "--autotune")
    assert failed.ret == pytest.ExitCode.TESTS_FAILED
    failed.stdout.fnmatch_lines(
        [
            "*regression of +30.0%*",
            "*130 us scaled x1.000 by the calibration read of the inputs (400 us here, 400 us*",
        ]
    )


SLIP_TESTS = """
import os

import pytest
from conftest import spin

CALLS = {"fast": 0}
HICCUP = int(os.environ.get("HICCUP", "0"))
\"\"\"fast's first HICCUP calls (its check and tuning samples) take 400 us, as if a
neighbour had the machine just then; every later call takes 100 us.\"\"\"


def fast(n):
    CALLS["fast"] += 1
    spin(400e-6 if CALLS["fast"] <= HICCUP else 100e-6)
    return n * 2


def medium(n):
    spin(150e-6)
    return n * 2


@pytest.mark.autotune(candidates={"fast": fast, "medium": medium})
def test_slip(candidate):
    return candidate(3)
"""


def test_a_tuning_slip_onto_a_slower_candidate_is_not_a_regression(
    autotune_pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    autotune_pytester.makepyfile(test_slip=SLIP_TESTS)
    assert run(autotune_pytester, "--autotune-update").ret == pytest.ExitCode.OK
    # The check and the tuning samples of fast: 6 calls, all slow, so tuning picks medium.
    monkeypatch.setenv("HICCUP", "6")
    result = run(autotune_pytester, "--autotune")
    assert result.ret == pytest.ExitCode.OK
    result.stdout.fnmatch_lines(
        [
            "*test_slip*fast*100 us*+0.0%*pass*",  # the row names whose time it shows
            (
                "*note: *test_slip*: tuning picked medium (150 us), but the baseline's winner"
                " fast measured faster (100 us); the gate compared fast"
            ),
        ]
    )


def test_a_slower_candidate_picked_when_the_baselines_winner_is_slower_too_is_judged(
    autotune_pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    autotune_pytester.makepyfile(test_slip=SLIP_TESTS)
    assert run(autotune_pytester, "--autotune-update").ret == pytest.ExitCode.OK
    monkeypatch.setenv("HICCUP", "1000")  # fast really got 4x slower: medium is the best now
    result = run(autotune_pytester, "--autotune")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(["*regression of +50.0%*median 150 us*baseline median 100 us*"])


def test_errors_are_never_reported_as_regressions(autotune_pytester: pytest.Pytester) -> None:
    autotune_pytester.makepyfile(
        """
        import pytest

        def broken(n):
            raise ValueError("no")

        def worse(n):
            raise KeyError(n)

        @pytest.mark.autotune(candidates={"broken": broken, "worse": worse})
        def test_all_fail(candidate):
            return candidate(1)
        """
    )
    result = run(autotune_pytester, "--autotune")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    output = result.stdout.str()
    assert "every candidate failed" in output
    assert "regression of" not in output
    assert "REGRESSION" not in output


def test_a_winner_below_the_floor_fails(autotune_pytester: pytest.Pytester) -> None:
    autotune_pytester.makepyfile(
        """
        import pytest
        from conftest import spin
        from pytest_autotune import Thresholds, Work

        def only(n):
            spin(100e-6)
            return n

        def other(n):
            spin(200e-6)
            return n

        # 5e4 bytes in 100 us at 1 GB/s is 50% of the memory roof; the floor asks for 80%.
        @pytest.mark.autotune(
            candidates={"only": only, "other": other},
            work=lambda: Work(bytes=5e4),
            thresholds=Thresholds(memory=0.8),
        )
        def test_floor(candidate):
            return candidate(1)
        """
    )
    result = run(autotune_pytester, "--autotune")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(
        ["*below the floor: 50.0% of the DRAM memory roof*the floor is 80.0%*"]
    )


def test_a_bad_option_value_is_a_usage_error(scale: pytest.Pytester) -> None:
    result = run(scale, "--autotune", "--autotune-level=turbo")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*command line: autotune_level*turbo*"])


def test_a_bad_ini_value_is_a_usage_error_naming_the_ini(scale: pytest.Pytester) -> None:
    scale.makeini("[pytest]\nautotune_device = gpu 7\n")
    result = run(scale, "--autotune")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*ini: autotune_device: expected auto, cpu, cuda*'gpu 7'*"])


def test_a_bad_yaml_setting_is_a_usage_error_naming_the_file(scale: pytest.Pytester) -> None:
    (scale.path / "autotune.yaml").write_text("max_samples: many\n")
    result = run(scale, "--autotune")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*autotune.yaml: max_samples:*many*"])


def test_settings_come_from_the_yaml_file(scale: pytest.Pytester) -> None:
    (scale.path / "autotune.yaml").write_text("cache_dir: baselines\n")
    run(scale, "--autotune-update")
    assert (
        scale.path / "baselines/cpu-fake-1t/test_scale.py__test_scale-bdc7d159eb.json"
    ).is_file()


def test_records_are_written_one_per_decision(scale: pytest.Pytester) -> None:
    run(scale, "--autotune", "--autotune-record=out/records.jsonl")
    from pytest_autotune import read_records

    records = read_records(scale.path / "out/records.jsonl")
    assert [(r.key, r.fastest_name) for r in records] == [("1", "fast"), ("2", "fast")]
    assert records[0].extra["verdict"] == "no baseline"


def test_verbose_shows_each_candidate_while_it_is_tuned(scale: pytest.Pytester) -> None:
    result = run(scale, "--autotune", "-v")
    result.stdout.fnmatch_lines(["*tuning test_scale.py::test_scale[[]1[]]*", "*slow: 300 us*"])


def test_the_step_summary_gets_the_table_in_markdown(
    scale: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    summary = scale.path / "summary.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    run(scale, "--autotune")
    text = summary.read_text()
    assert "| group |" in text.replace("  ", " ") or "| group" in text
    assert "test\\_scale" in text or "test_scale" in text


def test_the_winners_are_written_in_pytest_benchmarks_format(scale: pytest.Pytester) -> None:
    run(scale, "--autotune", "--autotune-benchmark-json=bench.json")
    data = json.loads((scale.path / "bench.json").read_text())
    # Every measured candidate: fast and slow; medium was not reached (fast hit the roof).
    assert sorted(b["name"] for b in data["benchmarks"]) == [
        "test_scale[fast-1]",
        "test_scale[fast-2]",
        "test_scale[slow-1]",
        "test_scale[slow-2]",
    ]
    winners = [b for b in data["benchmarks"] if b["extra_info"]["winner"]]
    assert [b["name"] for b in winners] == ["test_scale[fast-1]", "test_scale[fast-2]"]
    assert {b["stats"]["median"] for b in winners} == {100e-6}


def test_hooks_can_add_to_the_fingerprint_and_override_a_verdict(
    scale: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    conftest = scale.path / "conftest.py"
    conftest.write_text(
        conftest.read_text()
        + """
import dataclasses

def pytest_autotune_fingerprint(config, fingerprint):
    fingerprint["image"] = "runner-7"

def pytest_autotune_verdict(config, summary, verdict):
    return dataclasses.replace(verdict, failed=False)
"""
    )
    run(scale, "--autotune-update")
    assert json.loads(cache_file(scale).read_text())["device"]["fingerprint"]["image"] == "runner-7"
    monkeypatch.setenv("SLOWDOWN_FAST", "1.5")
    assert run(scale, "--autotune").ret == pytest.ExitCode.OK


def test_the_autotune_fixture_tunes_a_production_tunable_set(
    autotune_pytester: pytest.Pytester,
) -> None:
    autotune_pytester.makepyfile(
        """
        from conftest import spin
        from pytest_autotune import TunableSet

        def fast(n):
            spin(100e-6)
            return n + 1

        def slow(n):
            spin(300e-6)
            return n + 1

        def wrong(n):
            spin(10e-6)
            return n

        def make_set():
            return TunableSet.of(lambda n: n, {"slow": slow, "fast": fast})

        def test_production_set(autotune):
            assert autotune(make_set(), 41) == 42

        def test_a_wrong_candidate_fails_the_fixture(autotune):
            autotune(TunableSet.of(lambda n: n, {"fast": fast, "wrong": wrong}), 41)
        """
    )
    checked = run(autotune_pytester, "-rf")
    checked.assert_outcomes(passed=1, failed=1)
    checked.stdout.fnmatch_lines(["*candidate 'wrong' differs*"])
    tuned = run(autotune_pytester, "--autotune-update", "-rf")
    tuned.assert_outcomes(passed=1, failed=1)
    files = sorted(
        p.name for p in (autotune_pytester.path / ".autotune/cpu-fake-1t").glob("*.json")
    )
    assert files == [
        "test_the_autotune_fixture_tunes_a_production_tunable_set.py__test_a_wrong_candidate_fails_the_fixture-07ca365b89.json",
        "test_the_autotune_fixture_tunes_a_production_tunable_set.py__test_production_set-002d408f80.json",
    ]


def test_xdist_workers_tune_and_the_controller_writes_both_keys(scale: pytest.Pytester) -> None:
    pytest.importorskip("xdist")
    # pytest-benchmark warns that it disables itself under xdist; that is not ours to fail on.
    scale.makeini(
        "[pytest]\nfilterwarnings =\n    error\n"
        "    ignore::pytest_benchmark.logger.PytestBenchmarkWarning\n"
    )
    result = run(scale, "-n", "2", "--autotune-update")
    assert result.ret == pytest.ExitCode.OK
    data = json.loads(cache_file(scale).read_text())
    assert [e["key"] for e in data["entries"]] == ["1", "2"]
    result.stdout.fnmatch_lines(["*test_scale[[]1[]]*fast*", "*test_scale[[]2[]]*fast*"])


def test_asking_for_cuda_without_a_gpu_fails_in_one_line_naming_the_extra(
    scale: pytest.Pytester,
) -> None:
    from pytest_autotune.backends.cuda import device_count

    if device_count():
        pytest.skip("this machine has a CUDA GPU")
    result = run(scale, "--autotune", "--autotune-device=cuda")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    output = result.stdout.str()
    assert "pytest-autotune[cuda12]" in output or "no CUDA device found" in output
    assert "Traceback" not in output


def test_an_output_path_that_cannot_be_written_fails_the_run_in_one_line(
    scale: pytest.Pytester,
) -> None:
    blocker = scale.path / "not_a_folder"
    blocker.write_text("a file where a folder should be")
    result = run(
        scale,
        "--autotune",
        f"--autotune-html={blocker}/report.html",
        "--autotune-benchmark-json=bench.json",
    )
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(
        ["*error: the report could not be written to *not_a_folder/report.html*"]
    )
    assert "Traceback" not in result.stdout.str() + result.stderr.str()
    assert (scale.path / "bench.json").is_file()


def test_a_key_function_returning_an_unusable_key_fails_in_one_line(
    autotune_pytester: pytest.Pytester,
) -> None:
    autotune_pytester.makepyfile(
        """
        import pytest
        from conftest import spin

        def a(n):
            spin(1e-4)
            return n

        def b(n):
            spin(2e-4)
            return n

        @pytest.mark.autotune(candidates={"a": a, "b": b}, key=lambda: {"n": 1})
        def test_key(candidate):
            return candidate(1)
        """
    )
    result = run(autotune_pytester, "--autotune")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(["*key= returned an unusable key*"])
    assert "Traceback" not in result.stdout.str()
