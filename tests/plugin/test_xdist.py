"""`pytest -n 2 --autotune`: each group's candidates run on one worker, and each worker
has a GPU of its own before any test module is imported."""

from __future__ import annotations

import importlib
import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from tests.plugin.harness import json_lines, run, run_in_a_subprocess
from tests.plugin.test_results_display import INTERRUPTED_TESTS

pytest.importorskip("xdist")


def run_on_one_worker(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    """`args` run on one pytest-xdist worker, in a process of its own and within a minute:
    the crash tests' workers end by `os._exit`, and a run that waits for one hangs."""
    return run_in_a_subprocess(pytester, "-n", "1", *args, timeout=60)


@pytest.fixture
def this_checkouts_package(monkeypatch: pytest.MonkeyPatch) -> None:
    """Makes a subprocess run import this checkout's package, not the one installed."""
    monkeypatch.setenv("PYTHONPATH", str(Path(__file__).parents[2]))


GROUPS_TESTS = """
import os
import pytest
from conftest import spin

def log(name, n):
    with open(os.path.join(os.environ["RAN_LOG_DIR"], "ran.txt"), "a") as out:
        out.write(f"{n} {name} {os.environ.get('PYTEST_XDIST_WORKER')}\\n")

def make(name, cost):
    def candidate(n):
        log(name, n)
        spin(cost)
        return n * 2
    candidate.__name__ = name
    return candidate

@pytest.mark.autotune(
    candidates={name: make(name, (i + 1) * 100e-6) for i, name in enumerate("abcdef")},
)
@pytest.mark.parametrize("n", [1, 2, 3, 4])
def test_group(candidate, n):
    return candidate(n)
"""


@pytest.fixture
def groups(autotune_pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    autotune_pytester.makepyfile(test_groups=GROUPS_TESTS)
    monkeypatch.setenv("RAN_LOG_DIR", str(autotune_pytester.path))
    return autotune_pytester


def _workers_per_group(path: Path) -> dict[str, set[str]]:
    workers: dict[str, set[str]] = {}
    for line in (path / "ran.txt").read_text().splitlines():
        n, _, worker = line.split()
        workers.setdefault(n, set()).add(worker)
    return workers


def test_under_xdist_each_group_is_tuned_by_one_worker_with_one_row_and_one_verdict(
    groups: pytest.Pytester,
) -> None:
    result = run(groups, "-n", "2", "--autotune", "--autotune-record=records.jsonl")
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()
    workers = _workers_per_group(groups.path)
    assert sorted(workers) == ["1", "2", "3", "4"]
    assert all(len(w) == 1 for w in workers.values()), workers
    per_group = Counter(r["extra"]["group"] for r in json_lines(groups.path / "records.jsonl"))
    assert sorted(per_group.values()) == [1, 1, 1, 1], per_group
    lines = result.stdout.lines
    table = lines[: lines.index("verdicts: 4 no baseline")]
    rows = [line for line in table if line.startswith("test_groups.py::test_group[")]
    assert len(rows) == 4 and all(row.endswith("no baseline") for row in rows), rows


@pytest.mark.parametrize(
    "dist",
    [
        ("--dist", "load"),
        ("--dist", "worksteal"),
        ("-d",),
        ("--tx", "2*popen", "-d"),
        ("-d", "--dist", "loadscope"),
    ],
    ids=["load", "worksteal", "-d", "tx -d", "-d loadscope"],
)
def test_a_dist_mode_that_hands_out_single_tests_still_keeps_each_group_on_one_worker(
    groups: pytest.Pytester, dist: tuple[str, ...]
) -> None:
    # `-d`, pytest-xdist's `--dist load` set after the plugin's switch, undid it: groups
    # split over the workers were tuned twice, with two rows and two verdicts.
    workers = () if "--tx" in dist else ("-n", "2")
    result = run(groups, *workers, *dist, "--autotune")
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()
    workers = _workers_per_group(groups.path)
    assert all(len(w) == 1 for w in workers.values()), workers
    result.stdout.fnmatch_lines(["verdicts: 4 no baseline"])


def test_dist_each_under_tuning_is_refused_with_what_to_do(groups: pytest.Pytester) -> None:
    # Every worker would tune every group again: a row and a verdict each.
    result = run(groups, "-n", "2", "--dist", "each", "--autotune")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: pytest-autotune: --dist each runs every test *"])
    assert run(groups, "-n", "2", "--dist", "each").ret == pytest.ExitCode.OK


CRASHING_TESTS = """
import os
import pytest
from conftest import spin

def fast(n):
    spin(100e-6)
    return n

def crash(n):
    os._exit(3)

@pytest.mark.autotune(candidates={"fast": fast})
def test_first(candidate):
    return candidate(1)

@pytest.mark.autotune(candidates={"fast": fast, "crash": crash})
def test_second(candidate):
    return candidate(2)
"""


def test_a_candidate_that_kills_its_worker_fails_and_the_run_ends(
    autotune_pytester: pytest.Pytester,
) -> None:
    # A worker that died was replaced and given the rest of its work one test at a time: a
    # worker runs its last test only once it has the next or is told to stop, and neither
    # came, so the run hung for good (a segfaulting kernel hung CI).
    autotune_pytester.makepyfile(test_crashing=CRASHING_TESTS)
    result = run_on_one_worker(autotune_pytester, "--autotune")
    result.stdout.fnmatch_lines(["*worker 'gw0' crashed while running*test_second*"])
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    # test_first's group, tuned by the worker that died, went with it: said, not silent.
    result.stdout.fnmatch_lines(["*worker gw0 stopped before handing back what it tuned*"])


@pytest.mark.parametrize(
    "dist",
    [(), ("--dist", "loadscope"), ("--dist", "loadfile")],
    ids=["the-plugins-scheduling", "dist-loadscope", "dist-loadfile"],
)
def test_the_test_a_worker_crashed_in_is_not_run_again_and_its_groups_other_tests_fail_why(
    autotune_pytester: pytest.Pytester, dist: tuple[str, ...]
) -> None:
    """pytest-xdist's scope scheduling, which the plugin's is, queued the test a worker
    crashed in again with the rest of its work: each replacement worker ran it again and
    crashed, until xdist's limit on restarts (four a worker) ended the run, and
    test_second[crash] was never run nor reported. Plain `-n` reports each test once.

    Where --dist loadscope or loadfile kept pytest-xdist's own scheduling, the crashed test
    was queued again with its scope: every replacement worker tuned the group and crashed,
    the run ended at the limit on restarts ("9 failed": one test reported nine times) and the
    module's other tests never ran."""
    autotune_pytester.makepyfile(test_crashing=CRASHING_TESTS)
    result = run_on_one_worker(autotune_pytester, *dist, "--autotune")
    result.assert_outcomes(passed=1, failed=2)
    assert "maximum crashed workers reached" not in result.stdout.str()
    # Nor does the group's next test tune it again, to crash the worker that replaced the
    # first: it fails saying why.
    assert "replacing crashed worker gw1" not in result.stdout.str()
    # The worker crashed in test_second[fast] while it tuned the group, in `crash`: fast's
    # own test is not blamed (the message said "fix or skip that candidate" of it).
    result.stdout.fnmatch_lines(
        [
            "*the tuning of test_crashing.py::test_second is not started again: a pytest-xdist"
            " worker crashed in test_crashing.py::test_second[[]fast[]] while that test tuned"
            " the group, which calls each of its candidates (fast, crash): one of them ends its"
            " process*plain pytest (without --autotune) calls each candidate in its own test,"
            " and fails the one"
        ]
    )


THREE_FIRST_CRASHING_TESTS = CRASHING_TESTS.replace(
    "def test_first(candidate):",
    "@pytest.mark.parametrize('n', [1, 2, 3])\ndef test_first(candidate, n):",
)
"""CRASHING_TESTS whose test_first is three tests, the larger unit, which is handed out first."""


@pytest.mark.usefixtures("this_checkouts_package")
def test_a_worker_that_crashed_hands_back_the_groups_it_had_tuned_and_its_crash_is_a_row(
    autotune_pytester: pytest.Pytester,
) -> None:
    # A worker handed its groups back only at the end of its session: one whose candidate
    # ended its process took every group it had tuned with it, and the update wrote none of
    # them; the group it crashed in was in no row either, only in its tests' failures.
    autotune_pytester.makepyfile(test_crashing=THREE_FIRST_CRASHING_TESTS)
    result = run_on_one_worker(
        autotune_pytester, "--autotune-update", "--autotune-record=records.jsonl"
    )
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(
        [
            "test_crashing.py::test_first[[]1[]] *updated",
            "test_crashing.py::test_first[[]2[]] *updated",
            "test_crashing.py::test_first[[]3[]] *updated",
            "test_crashing.py::test_second *ERROR",
            "updated .autotune/cpu-fake-1t/test_crashing.py__test_first-*.json (3 entries)",
        ]
    )
    result.stdout.fnmatch_lines(
        ["*worker gw0 stopped before handing back what it tuned: the 3 groups it had finished*"]
    )
    records = json_lines(autotune_pytester.path / "records.jsonl")
    assert sorted(r["tuner"] for r in records) == [
        *["test_crashing.py::test_first"] * 3,
        "test_crashing.py::test_second",
    ]
    assert not list((autotune_pytester.path / ".autotune").glob("*/*test_second*"))


@pytest.mark.usefixtures("this_checkouts_package")
def test_a_worker_that_crashed_after_one_group_says_it_in_the_singular(
    autotune_pytester: pytest.Pytester,
) -> None:
    # "the 1 group it had finished are read from what it noted". test_first's group, of
    # three tests, the larger unit, is handed out first.
    three = '@pytest.mark.autotune(candidates={"fast": fast, "f2": fast, "f3": fast})'
    autotune_pytester.makepyfile(
        test_crashing=CRASHING_TESTS.replace(
            '@pytest.mark.autotune(candidates={"fast": fast})', three
        )
    )
    result = run_on_one_worker(autotune_pytester, "--autotune")
    result.stdout.fnmatch_lines(
        ["*worker gw0 stopped before handing back what it tuned: the 1 group it had finished"
         " is read from what it noted*"]
    )  # fmt: skip


@pytest.mark.usefixtures("this_checkouts_package")
def test_a_group_whose_worker_crashed_in_its_only_test_is_an_error_row(
    autotune_pytester: pytest.Pytester,
) -> None:
    # Its ERROR row came from the group's next test, which says the tuning is not started
    # again: where no test of the group was left (`-k` selected one candidate), the group
    # was in no row, record or report, only in the crash's failure.
    autotune_pytester.makepyfile(test_crashing=CRASHING_TESTS)
    result = run_on_one_worker(
        autotune_pytester, "--autotune", "--autotune-record=records.jsonl", "-k", "second and fast"
    )
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(
        [
            "test_crashing.py::test_second *ERROR",
            "verdicts: 1 ERROR",
            "*the tuning of test_crashing.py::test_second is not started again: a pytest-xdist"
            " worker crashed in test_crashing.py::test_second[[]fast[]] while*",
            "warning: pytest-xdist worker gw0 stopped before handing back what it tuned: it"
            " had finished no group; fix the crash and run again",
        ]
    )
    records = json_lines(autotune_pytester.path / "records.jsonl")
    assert [r["tuner"] for r in records] == ["test_crashing.py::test_second"]


FIXTURE_CRASHING_TESTS = """
import os
from conftest import spin
from pytest_autotune import Tunable, TunableSet

def fast(n):
    spin(100e-6)
    return n

def crash(n):
    os._exit(3)

def test_fixture(autotune):
    autotune(
        TunableSet(lambda n: f"n{n}", tunables=(Tunable("fast", fast), Tunable("crash", crash))),
        4,
    )
"""


@pytest.mark.usefixtures("this_checkouts_package")
def test_an_autotune_fixtures_group_whose_worker_crashed_names_its_test_not_a_candidate(
    autotune_pytester: pytest.Pytester,
) -> None:
    # The fixture's group has no test a candidate: its row said the worker crashed "in
    # fast", the name of the candidate that the tuning called first.
    autotune_pytester.makepyfile(test_fixture_crash=FIXTURE_CRASHING_TESTS)
    result = run_on_one_worker(autotune_pytester, "--autotune")
    result.stdout.fnmatch_lines(
        [
            "test_fixture_crash.py::test_fixture *ERROR",
            "    the tuning of test_fixture_crash.py::test_fixture ended with its pytest-xdist"
            " worker's crash: it calls each of the set's candidates (fast, crash), and one of"
            " them ends its process*",
        ]
    )
    assert "crashed in fast" not in result.stdout.str()


DECLINED_THEN_CRASHING_TESTS = """
import os
import pytest
from pytest_autotune import AutotuneSkip

def declines(n):
    raise AutotuneSkip("not this key")

@pytest.mark.autotune(candidates={"a": declines, "b": declines})
def test_declined(candidate):
    return candidate(1)

def test_z_crash():
    os._exit(3)
"""


@pytest.mark.usefixtures("this_checkouts_package")
def test_a_worker_crash_outside_any_tuning_makes_no_error_row(
    autotune_pytester: pytest.Pytester,
) -> None:
    # A group whose every candidate declined its key keeps no record: a crash after it, in
    # an ordinary test, must not read as a crash in its tuning.
    autotune_pytester.makepyfile(test_declined=DECLINED_THEN_CRASHING_TESTS)
    result = run_on_one_worker(autotune_pytester, "--autotune")
    result.assert_outcomes(skipped=2, failed=1)
    assert "ERROR" not in result.stdout.str()
    result.stdout.fnmatch_lines(["*worker gw0 stopped before handing back what it tuned*"])


@pytest.mark.usefixtures("this_checkouts_package")
def test_a_run_that_pytest_xdist_ended_at_its_limit_on_crashed_workers_says_it_stopped_early(
    autotune_pytester: pytest.Pytester,
) -> None:
    # Past `--max-worker-restart`, pytest-xdist shuts the run down with the crashed
    # worker's other tests never run, and says so only where -q is not given: the summary
    # read as a whole run, an update's as a complete refresh.
    autotune_pytester.makepyfile(
        test_crashing=THREE_FIRST_CRASHING_TESTS + "\ndef test_third():\n    pass\n"
    )
    result = run_on_one_worker(
        autotune_pytester, "-q", "--max-worker-restart=0", "--autotune-update"
    )
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(
        [
            "stopped early (worker gw0 crashed and worker restarting disabled): the groups"
            " tuned before it are shown, no others"
        ]
    )


CRASHING_IN_ITS_TEST = """
import os
import pytest
from conftest import spin

@pytest.fixture(autouse=True)
def crash_in_setup(request):
    # In the setup of one candidate's test, once the group is tuned (in fast's test).
    if request.node.name == "test_group[slow]":
        os._exit(3)

def fast(n):
    spin(100e-6)
    return n

def slow(n):
    spin(200e-6)
    return n

def third(n):
    spin(300e-6)
    return n

@pytest.mark.autotune(candidates={"fast": fast, "slow": slow, "third": third})
def test_group(candidate):
    return candidate(2)
"""


def test_a_crash_outside_the_tuning_leaves_the_group_to_be_tuned_again(
    autotune_pytester: pytest.Pytester,
) -> None:
    # The worker that tuned the group died in another test's setup, its tuning with it: the
    # group's next test tunes it again (on the worker that replaced it) and the group is
    # judged, where it was failed as if a candidate had crashed the tuning.
    autotune_pytester.makepyfile(test_crashing=CRASHING_IN_ITS_TEST)
    result = run_on_one_worker(autotune_pytester, "--autotune")
    result.assert_outcomes(passed=2, failed=1)
    result.stdout.fnmatch_lines(
        [
            "*worker 'gw0' crashed while running*test_group[[]slow[]]*",
            "test_crashing.py::test_group  default  fast  *no baseline",
        ],
        consecutive=False,
    )
    assert "not started again" not in result.stdout.str()


CRASHING_IN_ONE_SIZE = """
import os
import pytest
from conftest import spin

def fast(n):
    spin(100e-6)
    return n

def crash(n):
    if n == 2:  # a kernel that fails only at one size
        os._exit(3)
    spin(200e-6)
    return n

@pytest.mark.autotune(candidates={"fast": fast, "crash": crash})
@pytest.mark.parametrize("n", [1, 2])
def test_sizes(candidate, n):
    return candidate(n)
"""


@pytest.mark.parametrize(
    ("tests", "tuned_again"),
    [(CRASHING_IN_ONE_SIZE, "test_sizes[1] "), (CRASHING_IN_ITS_TEST, "test_group ")],
    ids=["crash in another group's tuning", "crash in a test's setup"],
)
@pytest.mark.usefixtures("this_checkouts_package")
def test_a_group_tuned_again_after_its_worker_crashed_has_one_row_and_one_record(
    autotune_pytester: pytest.Pytester,
    tests: str,
    tuned_again: str,
) -> None:
    # The crashed worker's finished group came back from what it noted, and the worker
    # given the group's other tests tuned it again: two rows, two records, two verdicts.
    autotune_pytester.makepyfile(test_crashing=tests)
    result = run_on_one_worker(autotune_pytester, "--autotune", "--autotune-record=records.jsonl")
    result.stdout.fnmatch_lines(["*worker 'gw0' crashed while running*"])
    lines = result.stdout.lines
    table = lines[: next(i for i, x in enumerate(lines) if x.startswith("verdicts: "))]
    rows = [x for x in table if x.startswith(f"test_crashing.py::{tuned_again}")]
    assert len(rows) == 1 and rows[0].endswith("no baseline"), result.stdout.str()
    records = json_lines(autotune_pytester.path / "records.jsonl")
    groups = Counter(r["extra"]["group"] for r in records)
    assert set(groups.values()) == {1}, groups


TWO_CRASHES = """
import os
import pytest
from conftest import spin

@pytest.fixture(autouse=True)
def crash_in_setup(request):
    if request.node.name == "test_group[fast]":
        os._exit(3)  # before any tuning: the group is tuned next, in slow's test

def fast(n):
    spin(100e-6)
    return n

def slow(n):
    spin(200e-6)
    return n

def third(n):
    os._exit(3)

@pytest.mark.autotune(candidates={"fast": fast, "slow": slow, "third": third})
def test_group(candidate):
    return candidate(2)
"""


def test_a_crash_in_the_tuning_names_the_test_that_tuned_not_an_earlier_crash(
    autotune_pytester: pytest.Pytester,
) -> None:
    # Of the group's tests a worker crashed in, the first by name was said to have tuned it:
    # fast's, which crashed in its setup, before slow's test tuned the group into `third`.
    autotune_pytester.makepyfile(test_crashing=TWO_CRASHES)
    result = run_on_one_worker(autotune_pytester, "--autotune")
    result.assert_outcomes(failed=3)
    result.stdout.fnmatch_lines(
        [
            "*a pytest-xdist worker crashed in test_crashing.py::test_group[[]slow[]] while"
            " that test tuned the group*",
        ]
    )
    assert "crashed in test_crashing.py::test_group[fast] while" not in result.stdout.str()


IMPORT_TIME_TESTS = """
import os
import pytest
from conftest import spin

SEEN_AT_IMPORT = os.environ.get("CUDA_VISIBLE_DEVICES")

def fast(n):
    spin(100e-6)
    return n

def slow(n):
    spin(200e-6)
    return n

def log():
    with open(os.path.join(os.environ["RAN_LOG_DIR"], "gpus.txt"), "a") as out:
        out.write(f"{os.environ.get('PYTEST_XDIST_WORKER')} {SEEN_AT_IMPORT}\\n")

@pytest.mark.autotune(candidates={"fast": fast, "slow": slow})
@pytest.mark.parametrize("n", [1, 2])
def test_first(candidate, n):
    log()
    return candidate(n)

@pytest.mark.autotune(candidates={"fast": fast, "slow": slow})
@pytest.mark.parametrize("n", [1, 2])
def test_second(candidate, n):
    log()
    return candidate(n)
"""


@pytest.fixture
def two_gpus(
    autotune_pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> pytest.Pytester:
    """The import-time test module on a host that reports two GPUs; each worker logs the
    devices it sees to gpus.txt."""
    autotune_pytester.makepyfile(test_import_time=IMPORT_TIME_TESTS)
    monkeypatch.setenv("RAN_LOG_DIR", str(autotune_pytester.path))
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    monkeypatch.setattr(
        importlib.import_module("pytest_autotune.backends.cuda"), "device_count", lambda: 2
    )
    return autotune_pytester


@pytest.mark.parametrize(
    ("device", "seen"),
    [((), {"gw0 0", "gw1 1"}), (("--autotune-device=cpu",), {"gw0 None", "gw1 None"})],
    ids=["a gpu each", "the controller's without tuning on a gpu"],
)
def test_the_devices_each_worker_sees_are_set_before_its_test_modules_are_imported(
    two_gpus: pytest.Pytester, device: tuple[str, ...], seen: set[str]
) -> None:
    # Each worker sees a GPU of its own; without tuning on a GPU, the workers keep the
    # devices the controller sees.
    result = run(two_gpus, "-n", "2", *device, "--autotune")
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()
    assert set((two_gpus.path / "gpus.txt").read_text().splitlines()) == seen


PINNED_TESTS = """
import pytest
from conftest import spin

def fast(n):
    spin(100e-6)
    return n

def slow(n):
    spin(200e-6)
    return n

@pytest.mark.autotune(candidates={"fast": fast, "slow": slow}, device="cuda:1")
def test_pinned(candidate):
    return candidate(1)
"""


def test_a_group_that_names_a_gpu_index_is_refused_in_a_worker_given_one_gpu(
    two_gpus: pytest.Pytester,
) -> None:
    # In a worker that sees one GPU, cuda:1 is no GPU at all, and cuda:0 the worker's own
    # whichever GPU of the host that is: the group would run elsewhere than it names, or
    # fail, depending on which worker took it.
    two_gpus.makepyfile(test_pinned=PINNED_TESTS)
    result = run(two_gpus, "-n", "2", "--autotune", "test_pinned.py")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(
        [
            "*device cuda:1: this pytest-xdist worker sees one GPU alone"
            " (CUDA_VISIBLE_DEVICES=[01]: *--autotune-device=cuda:1*"
        ]
    )


def test_under_xdist_the_summary_records_caches_and_step_summary_are_those_of_one_process(
    groups: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    written = {}
    for name, workers in (("alone", ()), ("workers", ("-n", "2"))):
        monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(groups.path / f"{name}.md"))
        result = run(
            groups,
            *workers,
            "--autotune-update",
            f"--autotune-cache-dir={name}",
            f"--autotune-record={name}.jsonl",
        )
        assert result.ret == pytest.ExitCode.OK, result.stdout.str()
        caches = sorted((groups.path / name).rglob("*.json"))
        records = json_lines(groups.path / f"{name}.jsonl")
        lines = result.stdout.lines
        section = lines[lines.index(next(x for x in lines if " autotune " in x)) + 1 : -1]
        # Wall-clock durations (of the tuning, of its steps), the run, and how contended
        # the machine's CPUs were while the winner was measured are each run's own.
        written[name] = {
            "summary": [x.replace(name, "DIR") for x in section if x],
            "caches": [(p.relative_to(groups.path / name), p.read_text()) for p in caches],
            "step summary": (groups.path / f"{name}.md").read_text().replace(name, "DIR"),
            "records": sorted(
                (
                    {k: v for k, v in r.items() if k not in ("run", "duration_ns", "events")}
                    | {"extra": {k: v for k, v in r["extra"].items() if k != "contention"}}
                    for r in records
                ),
                key=lambda r: r["extra"]["group"],
            ),
        }
    # The table's head, 4 rows, the verdicts, one line for the 4 new baselines alike, the
    # file's, the sessions' note.
    assert len(written["alone"]["summary"]) == 2 + 4 + 1 + 1 + 1 + 1, written["alone"]["summary"]
    assert len(written["alone"]["caches"]) == 1
    assert written["workers"] == written["alone"]


QUIET_TESTS = """
import json, os, time
import pytest
from conftest import spin

def window(kind, seconds):
    started = time.monotonic()
    time.sleep(seconds)
    with open(os.path.join(os.environ["RAN_LOG_DIR"], "windows.jsonl"), "a") as out:
        worker = os.environ.get("PYTEST_XDIST_WORKER")
        out.write(json.dumps([kind, worker, started, time.monotonic()]) + "\\n")

def make(name, cost):
    def candidate(n):
        window("measured", 0.004)
        spin(cost)
        return n * 2
    candidate.__name__ = name
    return candidate

@pytest.mark.autotune(candidates={"a": make("a", 100e-6), "b": make("b", 200e-6)})
def test_group(candidate):
    return candidate(1)

@pytest.mark.parametrize("i", range(12))
def test_ordinary_one(i):
    window("ordinary", 0.03)

@pytest.mark.parametrize("i", range(12))
def test_ordinary_two(i):
    window("ordinary", 0.03)

@pytest.mark.parametrize("i", range(12))
def test_ordinary_three(i):
    window("ordinary", 0.03)
"""


def windows_of_a_two_worker_tuning(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, tests: str
) -> list[Any]:
    """Runs `tests`, which log each window of their own (kind, worker, start, end) to
    windows.jsonl, under --autotune on two workers, which passes; returns the windows."""
    pytester.makepyfile(test_quiet=tests)
    monkeypatch.setenv("RAN_LOG_DIR", str(pytester.path))
    result = run(pytester, "-n", "2", "--autotune")
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()
    return json_lines(pytester.path / "windows.jsonl")


def test_under_xdist_no_other_workers_test_runs_while_a_group_is_measured(
    autotune_pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    windows = windows_of_a_two_worker_tuning(autotune_pytester, monkeypatch, QUIET_TESTS)
    measured = [(start, end) for kind, _, start, end in windows if kind == "measured"]
    (tuner,) = {worker for kind, worker, _, _ in windows if kind == "measured"}
    others = [(start, end) for kind, worker, start, end in windows if worker != tuner]
    # The other worker ran ordinary tests, before and after the group, never during it.
    assert others, "every ordinary test ran on the worker that tuned: nothing was shown"
    first, last = min(s for s, _ in measured), max(e for _, e in measured)
    overlapping = [(s, e) for s, e in others if s < last and e > first]
    assert not overlapping, (first, last, overlapping)


def test_under_xdist_a_run_stopped_by_x_says_why_as_a_single_process_does(
    autotune_pytester: pytest.Pytester,
) -> None:
    # `-n 2 -x`: pytest-xdist ends the run by raising its `Interrupted`, with pytest's
    # reason as the message. The report said "stopped early (interrupted)", which reads as
    # Ctrl-C or a cancelled job, where a single process says pytest's own words.
    failing = INTERRUPTED_TESTS.replace("raise KeyboardInterrupt", "assert False")
    assert failing != INTERRUPTED_TESTS
    autotune_pytester.makepyfile(test_stop=failing)
    result = run_in_a_subprocess(
        autotune_pytester, "-n", "2", "-x", "--autotune", "--autotune-html=r.html"
    )
    assert result.ret == pytest.ExitCode.INTERRUPTED
    report = (autotune_pytester.path / "r.html").read_text(encoding="utf-8")
    # Said whether or not a worker tuned a group before the run stopped.
    assert "stopped early (stopping after 1 failures)" in report
    assert "(interrupted)" not in report


TIMED_OUT_TESTS = """
import time
import pytest
from conftest import spin

def fast(n):
    time.sleep(0.1)
    spin(100e-6)
    return n * 2

def slow(n):
    time.sleep(0.1)
    spin(300e-6)
    return n * 2

@pytest.mark.timeout(300)
@pytest.mark.autotune(candidates=[fast, slow])
def test_group(candidate):
    return candidate(1)

@pytest.mark.parametrize("i", range(12))
def test_ordinary(i):
    time.sleep(0.05)
"""

SHORT_GROUP = """

def quick(n):
    spin(100e-6)
    return n * 2

def quicker(n):
    spin(50e-6)
    return n * 2

@pytest.mark.parametrize("n", range(6))
@pytest.mark.autotune(candidates=[quick, quicker])
def test_short(candidate, n):
    return candidate(n)
"""


def test_under_xdist_a_tuned_tests_set_up_never_times_out_waiting_for_a_measurement(
    autotune_pytester: pytest.Pytester,
) -> None:
    # A test that tunes holds the shared locks for its set-up and teardown, inside
    # pytest-timeout's window: where another worker measured a long group, the wait for it
    # failed the short groups' tests at set-up or teardown with a bare "Timeout", naming
    # neither. Its body's wait for the device is the README's: its failure names it.
    pytest.importorskip("pytest_timeout")
    autotune_pytester.makepyfile(
        test_timed=TIMED_OUT_TESTS.replace("range(12)", "range(2)") + SHORT_GROUP
    )
    result = run(autotune_pytester, "-n", "2", "--timeout=1", "--autotune")
    outcomes = result.parseoutcomes()
    assert "errors" not in outcomes and "error" not in outcomes, result.stdout.str()
    for line in result.stdout.lines:
        if line.startswith("FAILED"):
            # The first test of a group stopped waiting for the device, or its group's others.
            assert "Timeout" in line or "the tuning of" in line, line
    failed = [line for line in result.stdout.lines if line.startswith("the tuning of")]
    assert all("while waiting for another process's timing" in line for line in failed)


CANCELLED_TESTS = INTERRUPTED_TESTS.replace(
    "    raise KeyboardInterrupt",
    """    # Ctrl-C reaches the controller, then its worker (as a terminal's whole process
    # group does, or a CI job's cancel): the controller stops reading its workers first.
    import os, signal, time
    os.kill(os.getppid(), signal.SIGINT)
    time.sleep(1)
    raise KeyboardInterrupt""",
)


def test_under_xdist_a_run_cancelled_by_ctrl_c_writes_what_its_workers_tuned(
    autotune_pytester: pytest.Pytester,
) -> None:
    # pytest-xdist stops reading its workers' events on Ctrl-C, and the groups a worker had
    # tuned were neither shown nor written, with no word: a run without workers writes
    # them and says it stopped early.
    assert CANCELLED_TESTS != INTERRUPTED_TESTS
    autotune_pytester.makepyfile(test_stop=CANCELLED_TESTS)
    result = run_in_a_subprocess(autotune_pytester, "-n", "1", "--autotune-update")
    assert result.ret == pytest.ExitCode.INTERRUPTED
    result.stdout.fnmatch_lines(
        [
            "test_stop.py::test_a[[]1[]] *updated",
            "test_stop.py::test_a[[]2[]] *updated",
            "updated .autotune/cpu-fake-1t/test_stop.py__test_a-*.json (2 entries)",
            "stopped early (interrupted): the groups tuned before it are shown, no others",
        ]
    )


SET_UP_TESTS = (
    QUIET_TESTS.split("@pytest.mark.parametrize")[0]
    + """
@pytest.fixture
def made(request):
    window("set up", 0.15)
    return 1

@pytest.mark.parametrize("key", range(4))
@pytest.mark.autotune(candidates={"c": make("c", 100e-6), "d": make("d", 200e-6)})
def test_keyed(candidate, made, key):
    return candidate(made)
"""
)


def test_under_xdist_a_tuned_tests_set_up_never_runs_while_another_worker_measures(
    autotune_pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A test that tunes took no shared hold: its fixtures (inputs made on the GPU) ran
    # beside the other worker's measurement, which only its body waited for.
    windows = windows_of_a_two_worker_tuning(autotune_pytester, monkeypatch, SET_UP_TESTS)
    assert {worker for kind, worker, _, _ in windows if kind == "measured"} == {"gw0", "gw1"}
    set_up = [(w, s, e) for kind, w, s, e in windows if kind == "set up"]
    measured = [(w, s, e) for kind, w, s, e in windows if kind == "measured"]
    overlapping = [
        (a, b) for a in set_up for b in measured if a[0] != b[0] and a[1] < b[2] and a[2] > b[1]
    ]
    assert not overlapping, overlapping[:3]


SHARED_KEY_TESTS = """
from conftest import spin
from pytest_autotune import LocalTuner, TunableSet

TUNER = LocalTuner("lib.ops")

def slow(n):
    spin(300e-6)
    return n + 1

def fast(n):
    spin(100e-6)
    return n + 1

def make_set():
    return TunableSet.of(lambda n: n, {"slow": slow, "fast": fast})

def test_first(autotune):
    assert autotune(TUNER.init(make_set), 1) == 2

def test_second(autotune):
    assert autotune(TUNER.init(make_set), 1) == 2
"""


def test_two_tests_tuning_one_key_of_a_tuner_fail_under_xdist_as_in_one_process(
    autotune_pytester: pytest.Pytester,
) -> None:
    # In one process the second test fails: one cache entry cannot hold two tests'
    # baselines. On two workers neither saw the other: the run passed and both wrote the
    # entry. On one worker the session refuses it; on two the controller does. Either way
    # the run fails saying why, and the entry is the first test's alone.
    autotune_pytester.makepyfile(test_shared=SHARED_KEY_TESTS)
    result = run(autotune_pytester, "-n", "2", "-p", "no:randomly", "--autotune-update")
    assert result.ret == pytest.ExitCode.TESTS_FAILED, result.stdout.str()
    assert "one cache entry cannot hold the baselines of both" in result.stdout.str()
    entries = json.loads(
        (autotune_pytester.path / ".autotune" / "cpu-fake-1t" / "lib.ops.json").read_text()
    )["entries"]
    assert [e["key"] for e in entries] == [1]


def test_under_xdist_a_worker_stopped_by_ctrl_c_hands_back_its_groups_once(
    autotune_pytester: pytest.Pytester,
) -> None:
    # A worker whose session ends on KeyboardInterrupt (Ctrl-C in a terminal reaches every
    # process of its group) is told down twice by pytest-xdist, once as finished and once
    # as errored: its groups were merged at each, and listed, recorded and counted twice.
    autotune_pytester.makepyfile(test_stop=INTERRUPTED_TESTS)
    result = run_in_a_subprocess(
        autotune_pytester, "-n", "1", "--autotune-update", "--autotune-record=r.jsonl"
    )
    assert result.ret == pytest.ExitCode.INTERRUPTED
    groups = Counter(r["extra"]["group"] for r in json_lines(autotune_pytester.path / "r.jsonl"))
    assert {"test_stop.py::test_a[1]", "test_stop.py::test_a[2]"} <= groups.keys()
    assert set(groups.values()) == {1}, groups
    output = result.stdout.str()
    assert output.count("test_stop.py::test_a[1]: new baseline") == 1, output
    result.stdout.fnmatch_lines(
        ["updated .autotune/cpu-fake-1t/test_stop.py__test_a-*.json (2 entries)"]
    )


def test_a_keyword_of_xdists_mark_selects_no_autotune_test(groups: pytest.Pytester) -> None:
    # The plugin marked every autotune test `xdist_group` wherever pytest-xdist was
    # installed, and a mark's name is a keyword of `-k`: `-k dist` selected them all.
    groups.makepyfile(test_plain="def test_distance():\n    pass\n")
    result = run(groups, "--collect-only", "-q", "-k", "dist")
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()
    assert "test_plain.py::test_distance" in result.outlines
    assert not any("test_groups.py" in line for line in result.outlines)
    result = run(groups, "--collect-only", "-q", "-k", "not xdist")
    result.stdout.fnmatch_lines(["25 tests collected*"])


@pytest.mark.skipif(pytest.version_tuple < (9,), reason="the mark is read before pytest 9")
def test_under_dist_loadgroup_a_keyword_of_xdists_mark_selects_no_autotune_test(
    groups: pytest.Pytester,
) -> None:
    # On a worker of `--dist loadgroup` the mark was still added, though pytest 9 applies
    # no `@name` suffix: `-n 1 --dist loadgroup -k dist` ran every autotune test.
    groups.makepyfile(test_plain="def test_distance():\n    pass\n")
    result = run(groups, "-n", "1", "--dist", "loadgroup", "-k", "dist")
    result.assert_outcomes(passed=1)


def test_under_xdist_a_numpy_float_key_is_handed_back_as_in_one_process(
    autotune_pytester: pytest.Pytester,
) -> None:
    # `key=lambda x: x.sum()` keys by an np.float64, which is a float: the records kept it
    # as it was, and each worker's hand-back failed ("can't serialize numpy.float64") with
    # a traceback, its groups read from its notes with a warning that it had crashed.
    autotune_pytester.makepyfile(
        """
        import numpy as np
        import pytest
        from conftest import spin

        def fast(x):
            spin(100e-6)
            return x * 2

        def slow(x):
            spin(200e-6)
            return x * 2

        @pytest.mark.autotune(candidates={"fast": fast, "slow": slow}, key=lambda x: x.sum())
        @pytest.mark.parametrize("x", [np.ones(2), np.ones(3)], ids=["a", "b"])
        def test_keyed(candidate, x):
            return candidate(x)
        """
    )
    result = run(autotune_pytester, "-n", "2", "-p", "no:randomly", "--autotune-update")
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()
    output = result.stdout.str() + result.stderr.str()
    assert "serialize" not in output
    assert "stopped before handing back" not in output
    result.stdout.fnmatch_lines(
        ["*test_keyed[[]a[]]  2 *updated", "*test_keyed[[]b[]]  3 *updated"]
    )


def test_under_xdist_a_groups_name_given_to_deselect_is_said_in_the_summary(
    groups: pytest.Pytester,
) -> None:
    # Without -n the run stops saying so; a worker's usage error would be an INTERNALERROR,
    # and the group was tuned and gated without a word, as if the run had left it out.
    group = "test_groups.py::test_group[1]"
    result = run(groups, "-n", "2", "--autotune", "--deselect", group)
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()
    said = [x for x in result.stdout.lines if x.startswith(f"warning: --deselect {group} ")]
    assert said == [
        f"warning: --deselect {group} names an autotune group, as the autotune summary does,"
        " and no test, so it deselects none: each of its tests' node ids holds its candidate's"
        ' id too; deselect the group\'s tests with -k "not (test_group and 1)"'
    ], result.stdout.str()
