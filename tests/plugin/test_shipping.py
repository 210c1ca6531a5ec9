"""The `autotune` fixture writes the cache file a library's `LocalTuner` reads at run time."""

from __future__ import annotations

import json

import pytest

from pytest_autotune import TunableSet
from pytest_autotune.tune.config import AutotuneConfig
from pytest_autotune.tune.local import LocalTuner
from tests.fakes import FakeClient, candidate
from tests.plugin.harness import run

LIBRARY_TEST = """
    from conftest import spin
    from pytest_autotune import LocalTuner, TunableSet

    TUNER = LocalTuner("sigkit.ops")

    def slow(n):
        spin(300e-6)
        return n + 1

    def fast(n):
        spin(100e-6)
        return n + 1

    def make_set():
        return TunableSet.of(lambda n: n, {"slow": slow, "fast": fast})

    def test_small(autotune):
        assert autotune(TUNER.init(make_set), 1) == 2

    def test_large(autotune):
        assert autotune(TUNER.init(make_set), 1000) == 1001

    def test_named_by_argument(autotune):
        assert autotune(make_set(), 7, tuner="sigkit.other") == 8

    def test_named_by_a_tuner_object(autotune):
        assert autotune(make_set(), 9, tuner=LocalTuner("sigkit.third")) == 10
"""


def test_the_fixture_writes_under_the_name_of_the_local_tuner_of_the_set(
    autotune_pytester: pytest.Pytester,
) -> None:
    autotune_pytester.makepyfile(test_ops=LIBRARY_TEST)
    run(autotune_pytester, "--autotune-update").assert_outcomes(passed=4)
    folder = autotune_pytester.path / ".autotune" / "cpu-fake-1t"
    assert sorted(p.name for p in folder.glob("*.json")) == [
        "sigkit.ops.json",
        "sigkit.other.json",
        "sigkit.third.json",
    ]
    entries = json.loads((folder / "sigkit.ops.json").read_text())["entries"]
    assert [(e["key"], e["fastest_name"]) for e in entries] == [
        (1, "fast"),
        (1000, "fast"),
    ]


def test_an_update_leaves_the_entry_of_a_test_that_failed_after_its_call_as_it_was(
    autotune_pytester: pytest.Pytester,
) -> None:
    # The library's output changed and the test's assertion on it failed: the update wrote
    # the winner of a set whose output its own test rejects, for the user to commit.
    autotune_pytester.makepyfile(test_ops=LIBRARY_TEST)
    run(autotune_pytester, "--autotune-update").assert_outcomes(passed=4)
    path = autotune_pytester.path / ".autotune" / "cpu-fake-1t" / "sigkit.ops.json"
    before = path.read_bytes()
    autotune_pytester.makepyfile(test_ops=LIBRARY_TEST.replace("1000) == 1001", "1000) == 0"))
    result = run(autotune_pytester, "--autotune-update")
    result.assert_outcomes(passed=3, failed=1)
    result.stdout.fnmatch_lines(
        [
            "*test_large*1000*not recorded*",
            "test_ops.py::test_large [[]1000[]]: not recorded: a test of the group failed"
            " after its call*",
        ]
    )
    entries = json.loads(path.read_text())["entries"]
    old = {e["key"]: e for e in json.loads(before)["entries"]}
    (large,) = [e for e in entries if e["key"] == 1000]
    (small,) = [e for e in entries if e["key"] == 1]
    assert large == old[1000]  # as committed, not this run's
    assert small != old[1]  # the passing test's entry was refreshed


def test_baselines_filed_under_the_test_name_by_0_1_are_the_gates_until_an_update_moves_them(
    autotune_pytester: pytest.Pytester,
) -> None:
    """pytest-autotune 0.1.0 filed an `autotune` fixture's set under its test's name
    (`test_ops.py__test_small.json`); the set's `LocalTuner` names its file now. Upgraded,
    every such baseline read "no baseline", the update started new ones in the tuner's
    file, and nothing named the old files."""
    project = autotune_pytester
    project.makepyfile(test_ops=LIBRARY_TEST)
    chosen = ("-k", "test_small or test_large")
    run(project, "--autotune-update", *chosen).assert_outcomes(passed=2)
    folder = project.path / ".autotune" / "cpu-fake-1t"
    document = json.loads((folder / "sigkit.ops.json").read_text())
    (folder / "sigkit.ops.json").unlink()
    del document["tuner"]  # as 0.1.0 wrote it
    for test, key in (("test_small", 1), ("test_large", 1000)):
        entries = [e for e in document["entries"] if e["key"] == key]
        (folder / f"test_ops.py__{test}.json").write_text(
            json.dumps({**document, "entries": entries}, indent=2, sort_keys=True) + "\n"
        )

    gated = run(project, "--autotune", "--autotune-strict", *chosen)
    assert gated.ret == pytest.ExitCode.OK, gated.outlines
    gated.stdout.fnmatch_lines(
        [
            "note: test_ops.py::test_small: the baselines of its autotune fixture's set are"
            " read from .autotune/cpu-fake-1t/test_ops.py__test_small.json,*test's name*"
            " .autotune/cpu-fake-1t/sigkit.ops.json*--autotune-update carries*"
        ]
    )
    updated = run(project, "--autotune-update", *chosen)
    updated.stdout.fnmatch_lines(
        [
            "test_ops.py::test_small [[]1[]]: joined the baseline: 2 sessions*",
            "note: test_ops.py::test_small: *carries each over as it records its key; then delete*",
        ]
    )
    entries = json.loads((folder / "sigkit.ops.json").read_text())["entries"]
    assert [(e["key"], len(e["sessions"])) for e in entries] == [(1, 1), (1000, 1)]
    gated = run(project, "--autotune", "--autotune-strict", *chosen)
    assert gated.ret == pytest.ExitCode.OK, gated.outlines
    gated.stdout.no_fnmatch_line("*test's name*")


RERUN_ONCE = """
    # pytest-rerunfailures' protocol (`--reruns 1`), which the dev environment lacks: a
    # failed try's report becomes a "rerun", logged, and the test runs again.
    from _pytest.runner import runtestprotocol

    def pytest_runtest_protocol(item, nextitem):
        for last in (False, True):
            item.ihook.pytest_runtest_logstart(nodeid=item.nodeid, location=item.location)
            reports = runtestprotocol(item, nextitem=nextitem, log=False)
            again = not last and any(r.failed for r in reports)
            for report in reports:
                if again and report.failed:
                    report.outcome = "rerun"
                item.ihook.pytest_runtest_logreport(report=report)
            item.ihook.pytest_runtest_logfinish(nodeid=item.nodeid, location=item.location)
            if not again:
                return True
        return True
"""


def test_an_update_records_the_group_of_a_test_that_passed_when_tried_again(
    autotune_pytester: pytest.Pytester,
) -> None:
    # Under pytest-rerunfailures a flaky assertion failed the first try and passed the
    # second: the test passed, but its group read "not recorded: a test of the group failed
    # after its call", and the update kept the old entry.
    flaky = LIBRARY_TEST.replace(
        "assert autotune(TUNER.init(make_set), 1000) == 1001",
        "assert autotune(TUNER.init(make_set), 1000) == 1001\n"
        "        TRIES.append(1)\n"
        "        assert len(TRIES) > 1",
    ).replace("    TUNER = ", "    TRIES = []\n    TUNER = ")
    autotune_pytester.makepyfile(test_ops=flaky, rerun_once=RERUN_ONCE)
    autotune_pytester.syspathinsert()
    result = run(autotune_pytester, "-p", "rerun_once", "--autotune-update")
    assert result.parseoutcomes() == {"passed": 4, "rerun": 1}
    result.stdout.no_fnmatch_line("*not recorded*")
    path = autotune_pytester.path / ".autotune" / "cpu-fake-1t" / "sigkit.ops.json"
    assert [e["key"] for e in json.loads(path.read_text())["entries"]] == [1, 1000]


def test_a_set_of_no_tuner_is_still_named_after_its_test(
    autotune_pytester: pytest.Pytester,
) -> None:
    autotune_pytester.makepyfile(
        test_plain="""
        from conftest import spin
        from pytest_autotune import TunableSet

        def one(n):
            spin(1e-4)
            return n

        def two(n):
            spin(2e-4)
            return n

        def test_plain(autotune):
            autotune(TunableSet.of(lambda n: n, {"one": one, "two": two}), 3)
        """
    )
    run(autotune_pytester, "--autotune-update").assert_outcomes(passed=1)
    assert (
        autotune_pytester.path / ".autotune/cpu-fake-1t/test_plain.py__test_plain-a66ef803eb.json"
    ).is_file()


def test_what_the_fixture_tuned_is_served_at_run_time_without_benchmarking(
    autotune_pytester: pytest.Pytester,
) -> None:
    autotune_pytester.makepyfile(test_ops=LIBRARY_TEST)
    run(autotune_pytester, "--autotune-update").assert_outcomes(passed=4)

    class Device(FakeClient):
        device_id = "cpu-fake-1t"

    client = Device()
    slow = candidate(client.clock, 3e-4, "slow", result="slow")
    fast = candidate(client.clock, 1e-4, "fast", result="fast")
    runtime = LocalTuner(
        "sigkit.ops", AutotuneConfig(cache_dir=autotune_pytester.path / ".autotune")
    )
    tunables = runtime.init(lambda: TunableSet.of(lambda n: n, {"slow": slow, "fast": fast}))
    assert runtime.execute(client.device_id, client, tunables, (1000,)) == "fast"
    assert (slow.calls, fast.calls, client.timed) == (0, 1, [])
