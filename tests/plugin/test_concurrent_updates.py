"""Two `pytest --autotune-update` processes on one checkout at once (two CI jobs, or a
developer beside a scheduled refresh): each session must end up in the baseline file."""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

import pytest

from tests.plugin.harness import FAKE_CONFTEST, PLUGIN_ARGS, run
from tests.plugin.test_tune_mode import CACHE, SCALE_TESTS

BARRIER_CONFTEST = (
    FAKE_CONFTEST
    + """
import pathlib
import time

import pytest

import pytest_autotune.confirmations
import pytest_autotune.gate.contention

# Not a pytester run in this process: the suite's conftest patches nothing here.
pytest_autotune.gate.contention.load_per_cpu = lambda: None
pytest_autotune.gate.contention.stall_reading = lambda: None
pytest_autotune.gate.contention.cpu_reading = lambda: None
pytest_autotune.confirmations.CONFIRM_GAP_S = 0.0

@pytest.hookimpl(tryfirst=True)
def pytest_sessionfinish(session):
    # Both processes have read the committed baseline and judged against it before either
    # writes (the plugin's own sessionfinish): they meet here.
    folder = pathlib.Path(os.environ["BARRIER_DIR"])
    (folder / str(os.getpid())).touch()
    deadline = time.monotonic() + 60
    while len(list(folder.iterdir())) < 2 and time.monotonic() < deadline:
        time.sleep(0.01)
"""
)


def _sessions(path: Path, key: str) -> list[int]:
    """The medians (ns) of every session the baseline of `key` holds, oldest first."""
    (entry,) = (e for e in json.loads(path.read_text())["entries"] if e["key"] == key)
    newest = statistics.median(entry["results"][entry["fastest_index"]]["samples_ns"])
    return [s["median_ns"] for s in entry.get("sessions") or []] + [newest]


def _updates_at_once(pytester: pytest.Pytester, barrier: Path) -> list[str]:
    """Two `--autotune-update` processes of `pytester`'s project, the fast kernel 2% slower
    in one and 2% faster in the other, which meet after judging, before writing; what
    each printed (each must pass)."""
    pytester.makeconftest(BARRIER_CONFTEST)
    barrier.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("CI", "BUILD_NUMBER")}
    env |= {"BARRIER_DIR": str(barrier), "PYTHONPATH": str(pytester.path)}
    command = [sys.executable, "-m", "pytest", *PLUGIN_ARGS, "-p", "no:cacheprovider"]
    command += ["-p", "no:benchmark", "-p", "no:randomly", "--autotune-update"]
    processes = [
        subprocess.Popen(
            command,
            cwd=pytester.path,
            env=env | {"SLOWDOWN_FAST": factor},
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        for factor in ("1.02", "0.98")
    ]
    outputs = [p.communicate(timeout=300)[0] for p in processes]
    for process, output in zip(processes, outputs, strict=True):
        assert process.returncode == 0, output
    assert len(list(barrier.iterdir())) == 2
    return outputs


def test_two_updates_at_once_both_join_the_baseline(
    autotune_pytester: pytest.Pytester, tmp_path: Path
) -> None:
    autotune_pytester.makepyfile(test_scale=SCALE_TESTS)
    assert run(autotune_pytester, "--autotune-update").ret == pytest.ExitCode.OK
    # Two sessions of one kernel, 4% apart: each joins the committed baseline.
    outputs = _updates_at_once(autotune_pytester, tmp_path / "barrier")
    for output in outputs:
        assert "joined the baseline: 2 sessions" in output, output
    # The second to write says that it found the other's session and joined it too.
    assert any("this session joined it as well (3 sessions)" in o for o in outputs), outputs
    medians = _sessions(autotune_pytester.path / CACHE, "1")
    # The committed session (100 us) and both new ones, whichever wrote first.
    assert len(medians) == 3
    assert medians[0] == 100_000
    assert sorted(medians[1:]) == [98_000, 102_000]


def test_of_two_first_updates_at_once_the_second_says_it_replaced_the_first(
    autotune_pytester: pytest.Pytester, tmp_path: Path
) -> None:
    # No baseline yet: each session starts one, and which of the two stands is the later
    # writer's. Whether they could have joined is the gate's judgement of one against the
    # other, which neither made; the later one now says that it replaced the other's,
    # where before one session was dropped without a word.
    autotune_pytester.makepyfile(test_scale=SCALE_TESTS)
    outputs = _updates_at_once(autotune_pytester, tmp_path / "barrier")
    for output in outputs:
        assert "new baseline: none before for this key" in output, output
    said = [o for o in outputs if "another update wrote this entry while this one ran" in o]
    assert len(said) == 1, outputs
    assert "this session's entry replaced it" in said[0]
    assert len(_sessions(autotune_pytester.path / CACHE, "1")) == 1
