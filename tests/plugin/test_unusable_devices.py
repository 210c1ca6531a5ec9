"""A group whose device cannot be used (no client serves it, CuPy missing, no such GPU):
its candidates' tests fail, and the group is shown as any group that measured nothing is,
an ERROR in the summary, the report, the records and the step summary."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.plugin.harness import FAKE_CONFTEST, run

DEVICE_TESTS = """
import pytest
from conftest import spin

def fast(n):
    spin(100e-6)
    return n * 2

def slow(n):
    spin(300e-6)
    return n * 2

def broken(n):
    raise ValueError("broken")

@pytest.mark.autotune(candidates={"fast": fast, "slow": slow}, device="DEVICE")
def test_far(candidate):
    return candidate(1)

@pytest.mark.autotune(candidates={"fast": fast, "slow": slow})
def test_near(candidate):
    return candidate(1)

@pytest.mark.autotune(candidates={"a": broken, "b": broken})
def test_broken(candidate):
    return candidate(1)
"""

DEVICES = [
    # No pytest_autotune_client hook serves it (the fake client's declines it).
    pytest.param("tpu", "no pytest_autotune_client hook provides it", id="unserved"),
    # CuPy missing, or no GPU 99 where it is there: a CUDA device no machine has.
    pytest.param("cuda:99", "", id="cuda"),
]


def _records(path: Path) -> dict[str, dict[str, Any]]:
    """The records by group, each group once."""
    records = [json.loads(line) for line in path.read_text().splitlines()]
    by_group = {r["extra"]["group"]: r for r in records}
    assert len(by_group) == len(records), [r["extra"]["group"] for r in records]
    return by_group


def _shown_as_an_error(root: Path, output: str, device: str, why: str) -> None:
    """The far group in the terminal's table and gate failures, the records (in the schema
    of a group whose every candidate failed), the report and the step summary."""
    lines = output.splitlines()
    rows = [line for line in lines if line.split()[:2] == ["test_dev.py::test_far", "default"]]
    assert len(rows) == 1 and rows[0].split()[-1] == "ERROR", output
    failures = lines[lines.index("gate failures:") :]
    reason = next(line for line in failures if f"device {device!r} cannot be used: " in line)
    assert why in reason, output
    assert "test_dev.py::test_far [default]: error" in failures, output
    records = _records(root / "r.jsonl")
    assert sorted(records) == [
        "test_dev.py::test_broken",
        "test_dev.py::test_far",
        "test_dev.py::test_near",
    ]
    far, broken = records["test_dev.py::test_far"], records["test_dev.py::test_broken"]
    assert far.keys() == broken.keys()
    assert far["extra"].keys() == broken["extra"].keys()
    assert (far["extra"]["verdict"], far["extra"]["failed"]) == ("error", True)
    assert far["extra"]["message"] == reason.strip()
    assert far["fastest_name"] is None
    assert far["device_id"] == far["extra"]["device"]["id"] == device  # no client to name one
    assert [r["name"] for r in far["results"]] == ["fast", "slow"]
    assert "test_dev.py::test_far" in (root / "r.html").read_text(encoding="utf-8")
    assert "test\\_dev.py::test\\_far" in (root / "summary.md").read_text()


@pytest.mark.parametrize(("device", "why"), DEVICES)
def test_a_group_whose_device_cannot_be_used_is_an_error_everywhere_a_failed_group_is(
    autotune_pytester: pytest.Pytester,
    monkeypatch: pytest.MonkeyPatch,
    device: str,
    why: str,
) -> None:
    # Its tests failed with the device's message, and the group was missing from the
    # table, the records and the report, as if it had not been asked for.
    autotune_pytester.makepyfile(test_dev=DEVICE_TESTS.replace("DEVICE", device))
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(autotune_pytester.path / "summary.md"))
    result = run(
        autotune_pytester, "--autotune", "--autotune-html=r.html", "--autotune-record=r.jsonl"
    )
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.assert_outcomes(passed=2, failed=4)
    _shown_as_an_error(autotune_pytester.path, result.stdout.str(), device, why)


def test_a_device_a_client_hook_raises_for_is_an_error_with_the_hooks_message(
    autotune_pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    autotune_pytester.makeconftest(
        FAKE_CONFTEST + "\n_fake_client = pytest_autotune_client\n\n"
        "def pytest_autotune_client(config, device):\n"
        "    if device == 'board':\n"
        "        raise RuntimeError('no board attached')\n"
        "    return _fake_client(config, device)\n"
    )
    autotune_pytester.makepyfile(test_dev=DEVICE_TESTS.replace("DEVICE", "board"))
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(autotune_pytester.path / "summary.md"))
    result = run(
        autotune_pytester, "--autotune", "--autotune-html=r.html", "--autotune-record=r.jsonl"
    )
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.assert_outcomes(passed=2, failed=4)
    # One line naming the hook, as where the run's device is the one it raises for; the
    # first test failed with a traceback through the session's frames and pluggy's.
    said = "its pytest_autotune_client hook raised RuntimeError: no board attached"
    result.stdout.fnmatch_lines([f"test_dev.py::test_far: device 'board': {said}"])
    assert "Traceback" not in result.stdout.str() and "devices.py" not in result.stdout.str()
    _shown_as_an_error(autotune_pytester.path, result.stdout.str(), "board", said)


def test_an_update_writes_no_baseline_for_a_group_whose_device_cannot_be_used(
    autotune_pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Its baseline from a run where the device was there is kept, not pruned as stale.
    autotune_pytester.makepyfile(test_dev=DEVICE_TESTS.replace("DEVICE", "fake"))
    run(autotune_pytester, "--autotune-update", "-k", "not broken")
    folder = autotune_pytester.path / ".autotune" / "cpu-fake-1t"
    before = {p.name: p.read_text() for p in folder.glob("*.json")}
    assert sorted(name.split("-")[0] for name in before) == [
        "test_dev.py__test_far",
        "test_dev.py__test_near",
    ]
    autotune_pytester.makepyfile(test_dev=DEVICE_TESTS.replace("DEVICE", "tpu"))
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(autotune_pytester.path / "summary.md"))
    args = ("--autotune-html=r.html", "--autotune-record=r.jsonl", "--autotune-prune")
    result = run(autotune_pytester, "--autotune-update", *args)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    _shown_as_an_error(autotune_pytester.path, result.stdout.str(), "tpu", "")
    assert [p.name for p in folder.parent.iterdir()] == ["cpu-fake-1t"]
    after = {p.name: p.read_text() for p in folder.glob("*.json")}
    assert after.keys() == before.keys()
    far = next(name for name in before if name.startswith("test_dev.py__test_far"))
    assert after[far] == before[far]
    gated = run(autotune_pytester, "--autotune", "-k", "near")
    assert gated.ret == pytest.ExitCode.OK
    gated.stdout.fnmatch_lines(["test_dev.py::test_near *fast*pass"])


def test_a_device_forced_on_every_group_makes_each_group_an_error_once(
    autotune_pytester: pytest.Pytester,
) -> None:
    autotune_pytester.makepyfile(test_dev=DEVICE_TESTS.replace(', device="DEVICE"', ""))
    result = run(autotune_pytester, "--autotune", "--autotune-device=cuda:99")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.assert_outcomes(failed=6)
    rows = [line.split() for line in result.outlines if line.endswith(" ERROR")]
    groups = [row[0] for row in rows if row[1] == "default"]
    assert groups == ["test_dev.py::test_broken", "test_dev.py::test_far", "test_dev.py::test_near"]
    assert sum("device 'cuda:99' cannot be used: " in line for line in result.outlines) == 3


def test_a_test_of_the_fixture_whose_marker_names_a_device_that_cannot_be_used_fails(
    autotune_pytester: pytest.Pytester,
) -> None:
    # Its marker's device was dropped: a module of GPU tests (`pytestmark =
    # pytest.mark.autotune(device="cuda")`) tuned its fixture tests on the CPU of a CI
    # machine without a GPU, filed their baselines there and passed.
    autotune_pytester.makepyfile(
        test_dev="""
        import pytest
        from pytest_autotune import TunableSet
        from conftest import spin

        pytestmark = pytest.mark.autotune(device="tpu")

        def fast(n):
            spin(100e-6)
            return n * 2

        def test_far(autotune):
            autotune(TunableSet.of(lambda n: n, {"fast": fast, "also": fast}), 1)
        """
    )
    result = run(autotune_pytester, "--autotune-update")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        ["test_dev.py::test_far: device 'tpu': no pytest_autotune_client hook provides it*"]
    )
    assert "Traceback" not in result.stdout.str()
    assert not (autotune_pytester.path / ".autotune").exists()


@pytest.mark.parametrize(("device", "why"), DEVICES)
def test_under_xdist_a_group_whose_device_cannot_be_used_reaches_the_controller_once(
    autotune_pytester: pytest.Pytester,
    monkeypatch: pytest.MonkeyPatch,
    device: str,
    why: str,
) -> None:
    pytest.importorskip("xdist")
    autotune_pytester.makepyfile(test_dev=DEVICE_TESTS.replace("DEVICE", device))
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(autotune_pytester.path / "summary.md"))
    result = run(
        autotune_pytester,
        "-n",
        "2",
        "--autotune",
        "--autotune-html=r.html",
        "--autotune-record=r.jsonl",
    )
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.assert_outcomes(passed=2, failed=4)
    _shown_as_an_error(autotune_pytester.path, result.stdout.str(), device, why)


CALLABLE_TESTS = """
import pytest
from conftest import spin

def fast(n):
    spin(100e-6)
    return n * 2

def slow(n):
    spin(300e-6)
    return n * 2

def key_of(n):
    if KEY_RAISES:
        raise LookupError("no key for " + str(n))
    return ("size", n)

def work_of(n):
    if WORK_RAISES:
        raise ArithmeticError("no work for " + str(n))
    return None

@pytest.mark.autotune(candidates={"fast": fast, "slow": slow}, key=key_of)
@pytest.mark.parametrize("n", [1, 2])
def test_keyed(candidate, n):
    return candidate(n)

@pytest.mark.autotune(
    candidates={"fast": fast, "slow": slow}, work=work_of, key=lambda n: ("worked", n)
)
@pytest.mark.parametrize("n", [3])
def test_worked(candidate, n):
    return candidate(n)

@pytest.mark.autotune(candidates={"fast": fast, "slow": slow})
def test_near(candidate):
    return candidate(1)
"""


def _callables(key_raises: bool, work_raises: bool) -> str:
    return CALLABLE_TESTS.replace("KEY_RAISES", str(key_raises)).replace(
        "WORK_RAISES", str(work_raises)
    )


@pytest.mark.parametrize("workers", [(), ("-n", "2")], ids=["one-process", "xdist"])
def test_a_group_whose_key_or_work_callable_raises_is_an_error_on_the_clients_device(
    autotune_pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, workers: tuple[str, ...]
) -> None:
    # Their tests failed with the callable's error, and the table, the records and the
    # report showed the other group alone: a failed run whose report read "1 no baseline".
    if workers:
        pytest.importorskip("xdist")
    autotune_pytester.makepyfile(test_dev=_callables(True, True))
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(autotune_pytester.path / "summary.md"))
    args = ("--autotune", "--autotune-html=r.html", "--autotune-record=r.jsonl", *workers)
    result = run(autotune_pytester, *args)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.assert_outcomes(passed=2, failed=6)
    result.stdout.fnmatch_lines(["*LookupError: no key for 1*", "*ArithmeticError: no work*"])
    rows = [line.split() for line in result.outlines if line.startswith("test_dev.py::")]
    errors = sorted(row[0] for row in rows if row[-1] == "ERROR")
    assert errors == [
        "test_dev.py::test_keyed[1]",
        "test_dev.py::test_keyed[2]",
        "test_dev.py::test_worked[3]",
    ]
    lines = result.outlines
    failures = lines[lines.index("gate failures:") :]
    assert "    its key= callable raised LookupError: no key for 2" in failures
    assert "    its work= callable raised ArithmeticError: no work for 3" in failures
    records = _records(autotune_pytester.path / "r.jsonl")
    assert sorted(records) == [*errors[:2], "test_dev.py::test_near", errors[2]]
    keyed = records["test_dev.py::test_keyed[1]"]
    assert (keyed["extra"]["verdict"], keyed["extra"]["failed"]) == ("error", True)
    # Filed under the device its tuning would have used, not the setting's "auto".
    assert keyed["device_id"] == keyed["extra"]["device"]["id"] == "cpu-fake-1t"
    assert [r["error"]["message"] for r in keyed["results"]] == [
        "its key= callable raised LookupError: no key for 1"
    ] * 2
    assert keyed["extra"]["key_unknown"] is True  # the key is the parameters' ids
    worked = records["test_dev.py::test_worked[3]"]
    assert worked["key"] == ["worked", 3] and worked["extra"].get("key_unknown") is None
    html = (autotune_pytester.path / "r.html").read_text(encoding="utf-8")
    assert "its work= callable raised ArithmeticError: no work for 3" in html
    assert (
        "test\\_dev.py::test\\_keyed\\[2\\]" in (autotune_pytester.path / "summary.md").read_text()
    )


def test_an_update_where_a_key_callable_raises_keeps_the_groups_baselines(
    autotune_pytester: pytest.Pytester,
) -> None:
    autotune_pytester.makepyfile(test_dev=_callables(False, False))
    assert run(autotune_pytester, "--autotune-update").ret == pytest.ExitCode.OK
    folder = autotune_pytester.path / ".autotune" / "cpu-fake-1t"
    before = {p.name: p.read_text() for p in folder.glob("*.json")}
    assert len(before) == 3
    autotune_pytester.makepyfile(test_dev=_callables(True, True))
    result = run(autotune_pytester, "--autotune-update", "--autotune-prune")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.assert_outcomes(passed=2, failed=6)
    after = {p.name: p.read_text() for p in folder.glob("*.json")}
    untuned = sorted(name for name in before if not name.startswith("test_dev.py__test_near"))
    assert len(untuned) == 2
    assert {name: after[name] for name in untuned} == {name: before[name] for name in untuned}
    autotune_pytester.makepyfile(test_dev=_callables(False, False))
    gated = run(autotune_pytester, "--autotune")
    assert gated.ret == pytest.ExitCode.OK
    gated.stdout.fnmatch_lines(["test_dev.py::test_keyed[[]1[]] *fast*pass"])
