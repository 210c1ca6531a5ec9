"""What the gate says: updates that join or restart a baseline, a verdict too noisy to
judge, and baselines of another device or runner class (issue 9, items 5 to 7)."""

from __future__ import annotations

import itertools
import json
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from filelock import FileLock

import pytest_autotune.devices as devices_module
from pytest_autotune.gate.contention import StallReading
from pytest_autotune.tune.files import shared_lock
from tests.plugin.harness import (
    add_to_conftest,
    gate_after_an_update,
    json_lines,
    replace_in_conftest,
    run,
    run_in_a_subprocess,
)
from tests.plugin.test_tune_mode import BREAKING_TESTS, CACHE, SCALE_TESTS


@pytest.fixture
def scale(autotune_pytester: pytest.Pytester) -> pytest.Pytester:
    autotune_pytester.makepyfile(test_scale=SCALE_TESTS)
    return autotune_pytester


def test_an_update_says_whether_it_joined_the_baseline_or_started_a_new_one(
    scale: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = run(scale, "--autotune-update")
    first.stdout.fnmatch_lines(["*test_scale[[]1[]]: new baseline: none before for this key*"])
    second = run(scale, "--autotune-update")
    second.stdout.fnmatch_lines(["*test_scale[[]1[]]: joined the baseline: 2 sessions*"])
    monkeypatch.setenv("SLOWDOWN_FAST", "1.32")
    monkeypatch.setenv("SLOWDOWN_MEDIUM", "1.32")
    third = run(scale, "--autotune-update")
    third.stdout.fnmatch_lines(["*test_scale[[]1[]]: new baseline: +32.0% against the old one*"])


def test_a_baseline_too_noisy_to_catch_a_slowdown_is_a_counted_verdict_failing_only_if_strict(
    scale: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Five update sessions 10-12% apart: their spread is the noise the gate must carry.
    for factor in ("1.0", "1.12", "0.9", "1.12", "0.9"):
        monkeypatch.setenv("SLOWDOWN_FAST", factor)
        assert run(scale, "--autotune-update").ret == pytest.ExitCode.OK
    monkeypatch.setenv("SLOWDOWN_FAST", "1.0")
    result = run(scale, "--autotune")
    assert result.ret == pytest.ExitCode.OK
    result.stdout.fnmatch_lines(["*test_scale[[]1[]]*fast*too noisy", "verdicts: 2 too noisy"])
    strict = run(scale, "--autotune", "--autotune-strict")
    assert strict.ret == pytest.ExitCode.TESTS_FAILED
    strict.stdout.fnmatch_lines(["verdicts: 2 TOO NOISY", "*too noisy to judge: *what would help*"])


def test_a_runner_class_names_the_baselines_and_a_device_without_one_names_those_with_one(
    scale: pytest.Pytester,
) -> None:
    updated = run(scale, "--autotune-update", "--autotune-runner=github-x64")
    assert updated.ret == pytest.ExitCode.OK
    assert (
        scale.path / ".autotune/cpu-github-x64/test_scale.py__test_scale-bdc7d159eb.json"
    ).is_file()
    assert not (scale.path / ".autotune/cpu-fake-1t").exists()

    same_class = run(scale, "--autotune", "--autotune-runner=github-x64", "--autotune-strict")
    assert same_class.ret == pytest.ExitCode.OK
    same_class.stdout.fnmatch_lines(["verdicts: 2 pass"])

    scale.makeini("[pytest]\nfilterwarnings = error\nautotune_runner = github-x64\n")
    assert run(scale, "--autotune", "--autotune-strict").ret == pytest.ExitCode.OK

    scale.makeini("[pytest]\nfilterwarnings = error\n")
    own_device = run(scale, "--autotune", "--autotune-strict")
    assert own_device.ret == pytest.ExitCode.TESTS_FAILED
    own_device.stdout.fnmatch_lines(
        [
            "*no baseline for this key on cpu-fake-1t*"
            "baselines of this test exist for cpu-github-x64*"
        ]
    )


def slow_every_candidate(monkeypatch: pytest.MonkeyPatch, factor: str) -> None:
    """The scale project's candidates all run `factor` times slower (a slower machine)."""
    for name in ("fast", "medium", "slow"):
        monkeypatch.setenv(f"SLOWDOWN_{name.upper()}", factor)


def edit_device_block(path: Path, **fields: str) -> dict[str, Any]:
    """Sets `fields` in the device block of the cache file at `path`; returns the block as it
    was."""
    data = json.loads(path.read_text())
    was = dict(data["device"])
    data["device"].update(fields)
    path.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")
    return was


def gate_finds_another_machine_too_noisy(scale: pytest.Pytester, runner: str, other: str) -> None:
    """A gate of `--autotune-runner=runner`, against baselines the machine `other` recorded,
    passes: its groups too noisy, as the baselines are another machine's."""
    unchanged = run(scale, "--autotune", f"--autotune-runner={runner}")
    assert unchanged.ret == pytest.ExitCode.OK
    unchanged.stdout.fnmatch_lines(
        [
            "verdicts: 2 too noisy",
            "*the baseline was last recorded on another machine than this run's"
            f" ({other}, this run on cpu-fake-1t)*",
        ]
    )


def test_a_runner_class_baseline_from_another_cpu_model_is_too_noisy_not_a_regression(
    scale: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A hosted runner class: the baselines were recorded on one CPU model (here another
    # device than the fake's, as its file's `measured_on` says), the gate runs on a model
    # 35% slower for these kernels. Compared as one machine, unchanged code failed.
    for _ in range(3):
        assert run(scale, "--autotune-update", "--autotune-runner=github-x64").ret == 0
    path = scale.path / ".autotune/cpu-github-x64/test_scale.py__test_scale-bdc7d159eb.json"
    was = edit_device_block(path, measured_on="cpu-amd-epyc-7763-4t")
    assert was["measured_on"] == "cpu-fake-1t"
    slow_every_candidate(monkeypatch, "1.35")
    gate_finds_another_machine_too_noisy(scale, "github-x64", "cpu-amd-epyc-7763-4t")
    slow_every_candidate(monkeypatch, "2")
    slower = run(scale, "--autotune", "--autotune-runner=github-x64")
    assert slower.ret == pytest.ExitCode.TESTS_FAILED
    slower.stdout.fnmatch_lines(["verdicts: 2 REGRESSION"])


def test_another_devices_baselines_that_runner_names_are_compared_as_another_machine(
    scale: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    # "no baseline ... baselines of this test exist for cpu-amd-epyc-4t (--autotune-runner
    # names the one to use)": a user who follows it compares another machine's times with
    # this one's, and a machine 35% slower for these kernels failed unchanged code.
    for _ in range(3):
        assert run(scale, "--autotune-update").ret == pytest.ExitCode.OK
    other = scale.path / ".autotune/cpu-amd-epyc-4t"
    (scale.path / ".autotune/cpu-fake-1t").rename(other)
    path = other / "test_scale.py__test_scale-bdc7d159eb.json"
    was = edit_device_block(path, id="cpu-amd-epyc-4t")  # as that machine's update wrote it
    assert "measured_on" not in was
    slow_every_candidate(monkeypatch, "1.35")
    no_baseline = run(scale, "--autotune")
    no_baseline.stdout.fnmatch_lines(
        ["*baselines of this test exist for cpu-amd-epyc-4t (--autotune-runner names*"]
    )
    gate_finds_another_machine_too_noisy(scale, "amd-epyc-4t", "cpu-amd-epyc-4t")


def test_a_runner_class_that_cannot_name_a_folder_is_one_line_naming_the_option(
    scale: pytest.Pytester,
) -> None:
    result = run(scale, "--autotune", "--autotune-runner=../up")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*autotune_runner*expected a runner class name*"])


def stalled_at(share: float) -> Callable[[], StallReading]:
    """A stall counter running at `share` of the wall clock between any two reads."""
    reads = itertools.count()

    def reading() -> StallReading:
        at = float(next(reads))
        return StallReading(Path("/proc/pressure/cpu"), share * at, at)

    return reading


def cpus_contended(monkeypatch: pytest.MonkeyPatch, share: float) -> None:
    """Runnable threads wait for a CPU `share` of every measurement from now on, as inside
    another job's burst."""
    monkeypatch.setattr("pytest_autotune.gate.contention.stall_reading", stalled_at(share))


def test_a_cpu_slowdown_measured_while_threads_waited_for_a_cpu_is_too_noisy_and_recorded(
    scale: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    quiet = gate_after_an_update(scale, monkeypatch, {"SLOWDOWN_FAST": "1.25"})
    assert quiet.ret == pytest.ExitCode.TESTS_FAILED
    quiet.stdout.fnmatch_lines(["verdicts: 2 REGRESSION"])
    # Runnable threads waited for a CPU 90% of every measurement, as inside another job's
    # burst.
    cpus_contended(monkeypatch, 0.9)
    contended = run(scale, "--autotune", "--autotune-record=records.jsonl")
    assert contended.ret == pytest.ExitCode.OK
    contended.stdout.fnmatch_lines(["verdicts: 2 too noisy"])
    strict = run(scale, "--autotune", "--autotune-strict")
    strict.stdout.fnmatch_lines(
        [
            "*too noisy to judge: *the CPUs were contended (runnable threads waited for a CPU"
            " 90% of the measurement), so the between-session noise counts * times;"
            " what would help: a runner with free CPUs*"
        ]
    )
    contention = [
        record["extra"]["contention"] for record in json_lines(scale.path / "records.jsonl")
    ]
    assert [(c["load"], c["pressure"]) for c in contention] == [(None, pytest.approx(0.9))] * 2
    # The fake candidates run on the caller's thread: no other thread was busy.
    assert all(c["helpers"] < 0.1 for c in contention)


def test_a_multithreaded_winner_on_contended_cpus_is_too_noisy_and_no_update_records_it(
    scale: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert run(scale, "--autotune-update").ret == pytest.ExitCode.OK
    cache = scale.path / CACHE
    committed = cache.read_bytes()
    # As a BLAS matmul beside a test suite: its process's other threads busy 60% of its
    # samples' time, a third of each measurement stalled for a CPU, the call ten times
    # slower (a 256x256 matmul read +891% so on the 2-core VM).
    cpus_contended(monkeypatch, 0.3)
    monkeypatch.setattr("pytest_autotune.gate.contention.HelperClock.share", lambda self: 0.6)
    monkeypatch.setenv("SLOWDOWN_FAST", "10")
    gated = run(scale, "--autotune", "--autotune-record=records.jsonl")
    assert gated.ret == pytest.ExitCode.OK
    gated.stdout.fnmatch_lines(["verdicts: 2 too noisy"])
    contention = [
        record["extra"]["contention"] for record in json_lines(scale.path / "records.jsonl")
    ]
    assert (
        contention
        == [{"load": None, "pressure": pytest.approx(0.3), "helpers": 0.6, "neighbours": None}] * 2
    )

    updated = run(scale, "--autotune-update")
    assert updated.ret == pytest.ExitCode.OK
    updated.stdout.fnmatch_lines(
        [
            "verdicts: 2 not recorded",
            "*test_scale[[]1[]]: kept the baseline (1 session): this session is not"
            " recorded, as the winner runs on several threads*what would help: a runner with"
            " free CPUs*",
        ]
    )
    # Kept, both still rest on one session: the note says so, as an update that records.
    updated.stdout.fnmatch_lines(
        ["note: 2 CPU baselines rest on fewer than 3 update sessions: run --autotune-update*"]
    )
    assert cache.read_bytes() == committed

    # The same slowdown on one thread is caught on the same CPUs, against the kept baseline.
    monkeypatch.setattr("pytest_autotune.gate.contention.HelperClock.share", lambda self: 0.0)
    one_thread = run(scale, "--autotune")
    assert one_thread.ret == pytest.ExitCode.TESTS_FAILED
    one_thread.stdout.fnmatch_lines(["verdicts: 2 REGRESSION"])


def test_an_update_on_contended_cpus_records_a_change_the_contention_does_not_explain(
    scale: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A kernel rewritten ten times slower, updated on a busy machine: the gate would fail it
    # with the contention's noise counted, so it is a change the user made, not the load's.
    assert run(scale, "--autotune-update").ret == pytest.ExitCode.OK
    cpus_contended(monkeypatch, 0.9)
    monkeypatch.setenv("SLOWDOWN_FAST", "10")
    updated = run(scale, "--autotune-update")
    assert updated.ret == pytest.ExitCode.OK
    updated.stdout.fnmatch_lines(
        ["verdicts: 2 updated", "*test_scale[[]1[]]: new baseline: *recorded although*"]
    )
    # The next gated run on the same CPUs compares with the new baseline: no regression.
    assert run(scale, "--autotune").ret == pytest.ExitCode.OK


def test_an_update_on_contended_cpus_records_the_candidate_in_place_of_a_winner_failing_here(
    autotune_pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The gate's advice for a baseline whose winner now raises is "--autotune-update records
    # slow as the baseline". On busy CPUs the update kept the broken baseline ("this session
    # is not recorded"), so the committed cache still named fast, which raises, and the gate
    # went on saying "not comparable" until the CPUs were free. slow is as fast as fast
    # was, within the noise: a change the contention could explain.
    autotune_pytester.makepyfile(test_pair=BREAKING_TESTS.replace("spin(300e-6)", "spin(110e-6)"))
    assert run(autotune_pytester, "--autotune-update").ret == pytest.ExitCode.OK
    monkeypatch.setenv("BREAK", "raise")
    cpus_contended(monkeypatch, 0.9)
    updated = run(autotune_pytester, "--autotune-update")
    updated.stdout.fnmatch_lines(
        [
            "*test_pair*slow*updated",
            "test_pair.py::test_pair [[]default[]]: new baseline: the baseline's winner fast"
            " failed here (raised RuntimeError: broken), and slow is recorded in its place"
            " (+10.0% against its time); recorded although the CPUs were contended*",
        ]
    )
    gated = run(autotune_pytester, "--autotune")
    gated.stdout.fnmatch_lines(["*test_pair*slow*too noisy"])
    assert "not comparable" not in gated.stdout.str()


def test_an_updates_lines_name_and_order_its_groups_as_the_table_does(
    autotune_pytester: pytest.Pytester,
) -> None:
    autotune_pytester.makepyfile(
        test_scale=SCALE_TESTS.replace("[1, 2]", "[10, 2]"),
        test_set="""
        from conftest import spin
        from pytest_autotune import TunableSet

        def fast(n):
            spin(100e-6)
            return n

        def test_keyed(autotune):
            autotune(TunableSet.of(lambda n: n, {"fast": fast, "other": fast}), 3)
        """,
    )
    result = run(autotune_pytester, "--autotune-update")
    assert result.ret == pytest.ExitCode.OK
    table = [line.split()[0] for line in result.outlines if line.endswith("  updated")]
    said = [line.split(": new baseline")[0] for line in result.outlines if ": new baseline" in line]
    assert table == [
        "test_scale.py::test_scale[2]",
        "test_scale.py::test_scale[10]",
        "test_set.py::test_keyed",
    ]
    assert said == [*table[:2], "test_set.py::test_keyed [3]"]


def test_a_first_baseline_measured_on_contended_cpus_is_recorded_with_a_warning(
    scale: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    cpus_contended(monkeypatch, 0.9)
    updated = run(scale, "--autotune-update")
    assert updated.ret == pytest.ExitCode.OK
    updated.stdout.fnmatch_lines(
        [
            "*test_scale[[]1[]]: new baseline: none before for this key; recorded"
            " although the CPUs were contended (runnable threads waited for a CPU 90% of the"
            " measurement)*record it again when the CPUs are free*"
        ]
    )
    assert (scale.path / CACHE).is_file()


def test_a_regression_of_a_winner_left_out_by_k_fails_a_selected_test_of_its_group(
    scale: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A group is tuned whole; with -k selecting only `slow`, the winner `fast` has no
    # item of its own, and a run that fails must still show a failing test.
    result = gate_after_an_update(scale, monkeypatch, {"SLOWDOWN_FAST": "1.25"}, "-k", "slow")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.assert_outcomes(failed=2, deselected=4)
    result.stdout.fnmatch_lines(
        [
            "*autotune gate: regression of +25.0%*",
            "*(the winner 'fast' was not selected; its group's gate fails here)*",
        ]
    )
    result.stdout.fnmatch_lines(["FAILED test_scale.py::test_scale[[]slow-1[]]*"])
    selected = run(scale, "--autotune", "-k", "fast")
    selected.assert_outcomes(failed=2, deselected=4)
    assert "was not selected" not in selected.stdout.str()


def test_a_device_lock_held_by_a_hung_process_delays_the_run_and_does_not_stop_it(
    scale: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    # As a process that hung holding the machine's lock on timing the device: the run
    # waits at most DEVICE_WAIT_S, then times anyway and says so.
    monkeypatch.setattr("pytest_autotune.devices.DEVICE_WAIT_S", 0.2)
    held = shared_lock("pytest-autotune-cpu-fake-1t")
    with held:
        result = run(scale, "--autotune")
    assert result.ret == pytest.ExitCode.OK
    result.stdout.fnmatch_lines(
        ["warning: timed cpu-fake-1t without its lock (*): another process held it*"]
    )


def test_a_long_wait_for_another_runs_timing_is_said(
    scale: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("pytest_autotune.devices.NOTED_WAIT_S", 0.1)
    # Released by a timer's thread (a lock that is not the thread's own), half a second
    # after the run first asks for it: a timer started before the run ran out while a
    # loaded CI machine was still setting the run up, and nothing was waited for.
    held = FileLock(shared_lock("pytest-autotune-cpu-fake-1t").lock_file, thread_local=False)
    held.acquire()
    releaser = threading.Timer(0.5, held.release)
    device_lock = devices_module._device_lock

    def lock_released_once_asked(*args: object) -> FileLock:
        lock = device_lock(*args)  # type: ignore[arg-type]
        acquire = lock.acquire

        def asked(*a: object, **k: object) -> object:
            if not releaser.is_alive() and not releaser.finished.is_set():
                releaser.start()
            return acquire(*a, **k)  # type: ignore[arg-type]

        lock.acquire = asked  # type: ignore[method-assign]
        return lock

    monkeypatch.setattr(devices_module, "_device_lock", lock_released_once_asked)
    try:
        result = run(scale, "--autotune")
    finally:
        if releaser.is_alive() or releaser.finished.is_set():
            releaser.join()
        else:
            held.release()
    assert result.ret == pytest.ExitCode.OK
    result.stdout.fnmatch_lines(["waited * for another process's timing of cpu-fake-1t (*)"])
    assert "without its lock" not in result.stdout.str()


def test_a_regression_a_verdict_hook_lets_pass_is_reported_with_the_gates_message(
    scale: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The hook's own example "reports the regressions of a kernel known to be unstable
    # without failing the run": the table said "regression" and nothing said by how much
    # against what, since only failures and three verdicts had their messages shown.
    add_to_conftest(
        scale,
        """
import dataclasses
from pytest_autotune.gate import Verdict

def pytest_autotune_verdict(config, summary, verdict):
    if verdict.verdict is Verdict.REGRESSION:
        return dataclasses.replace(verdict, failed=False)
    return None
""",
    )
    result = gate_after_an_update(scale, monkeypatch, {"SLOWDOWN_FAST": "1.5"})
    assert result.ret == pytest.ExitCode.OK
    result.stdout.fnmatch_lines(
        [
            "reported, not failing:",
            "test_scale.py::test_scale[[]1[]] (winner fast): regression",
            "    regression of +50.0% *against the baseline median*",
        ]
    )


def test_a_candidate_list_in_hash_order_is_named_as_the_reason_it_never_compares(
    autotune_pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A dict built over a set takes its order from PYTHONHASHSEED, which each process
    # draws anew: every gate found the baseline "reordered" and told the user to
    # re-record it, which the next process reordered again, so the test was never gated.
    autotune_pytester.makepyfile(
        """
        import pytest
        from conftest import spin

        def make(name):
            def kernel(n):
                spin(100e-6)
                return n * 2
            return kernel

        @pytest.mark.autotune(candidates={name: make(name) for name in {"x1", "y2", "z3"}})
        def test_x(candidate):
            return candidate(1)
        """
    )
    monkeypatch.setenv("PYTHONHASHSEED", "0")
    assert run_in_a_subprocess(autotune_pytester, "--autotune-update").ret == 0
    # Seeds are tried until one reorders the set: which do is up to Python's hashing.
    for seed in range(1, 20):
        monkeypatch.setenv("PYTHONHASHSEED", str(seed))
        result = run_in_a_subprocess(autotune_pytester, "--autotune")
        if "reordered" in result.stdout.str():
            break
    else:
        pytest.fail("no seed reordered the candidates")
    assert result.ret == 0
    result.stdout.fnmatch_lines(["*reordered: now *a set*changes order*sort*"])


def test_a_record_keeps_what_the_client_took_off_each_sample_where_it_says(
    scale: pytest.Pytester,
) -> None:
    """A client that says what its instrument takes off each sample (a CUDA client's fixed
    cost) has it in every record, so that a time read too fast by a constant can be traced
    to it; the fake CPU client says nothing, and its records hold none."""
    assert run(scale, "--autotune-update", "--autotune-record=plain.jsonl").ret == 0
    plain = json_lines(scale.path / "plain.jsonl")
    assert [record["extra"]["instrument"] for record in plain] == [None, None]
    add_to_conftest(scale, "\nFakeClient.instrument = lambda self: {'held_replay_ns': 2100}\n")
    assert run(scale, "--autotune", "--autotune-record=said.jsonl").ret == 0
    said = json_lines(scale.path / "said.jsonl")
    assert [record["extra"]["instrument"] for record in said] == [{"held_replay_ns": 2100}] * 2


def test_a_baseline_recorded_under_other_blas_thread_caps_is_not_comparable_naming_them(
    scale: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The CPU client's fingerprint names the variables that cap BLAS threads. A gate run
    # with OMP_NUM_THREADS=1 against a baseline recorded without it timed a 256x256
    # matmul on one thread against two: unchanged code failed as a +80% regression whose
    # message did not say why.
    replace_in_conftest(
        scale,
        'return {"fake": True}',
        'return {"fake": True, "thread_env": {k: os.environ[k] for k in ("OMP_NUM_THREADS",)'
        " if k in os.environ}}",
    )
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    assert run(scale, "--autotune-update").ret == pytest.ExitCode.OK
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    slow_every_candidate(monkeypatch, "2")  # one thread where the baseline had two
    capped = run(scale, "--autotune", "--autotune-strict")
    assert capped.ret == pytest.ExitCode.OK
    capped.stdout.fnmatch_lines(
        [
            "verdicts: 2 not comparable",
            "*measured under other thread caps (OMP_NUM_THREADS unset there, 1 here)*"
            "--autotune-update re-records it",
        ]
    )
    # An update on busy CPUs keeps a baseline it could join or replace; one of other caps
    # it can do neither with, and kept, the gate could never compare again.
    with monkeypatch.context() as busy:
        cpus_contended(busy, 0.9)
        updated = run(scale, "--autotune-update")
    assert updated.ret == pytest.ExitCode.OK
    updated.stdout.fnmatch_lines(
        [
            "verdicts: 2 updated",
            "*test_scale[[]1[]]: new baseline: the old one was measured under other thread"
            " caps (OMP_NUM_THREADS unset there, 1 here)*",
        ]
    )
    assert run(scale, "--autotune", "--autotune-strict").ret == pytest.ExitCode.OK
