"""What the plugin tests share: a fake client's conftest for pytester, and how to run."""

from __future__ import annotations

import importlib.metadata
import json
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

FAKE_CONFTEST = textwrap.dedent(
    '''
    import os

    from pytest_autotune.backends.peaks import Peaks

    class Clock:
        now_ns = 0

    CLOCK = Clock()

    def spin(seconds):
        """A candidate's cost on the fake clock; SLOWDOWN_<NAME> scales one candidate."""
        CLOCK.now_ns += round(seconds * 1e9)

    def slowdown(name):
        return float(os.environ.get(f"SLOWDOWN_{name.upper()}", "1"))

    class FakeClient:
        device_id = "cpu-fake-1t"
        launch_overhead = 0.0

        def fingerprint(self):
            return {"fake": True}

        def sync(self):
            pass

        def time(self, fn, inputs):
            start = CLOCK.now_ns
            fn(*inputs)
            return (CLOCK.now_ns - start) / 1e9

        def peaks(self):
            return Peaks(memory={"copy": 1e9, "read": 1e9}, compute={"fp32": 1e9}, threads=1)

    def pytest_autotune_client(config, device):
        return FakeClient() if device in ("auto", "fake") else None

    def pytest_configure(config):
        # A worker of this run is a process of its own, which the suite's conftest does
        # not patch: it reads neither the machine's load nor its stall counters, nor
        # pauses before a re-measurement, so that its verdicts and messages are those of
        # a run without workers whatever else the machine runs (tests/conftest.py).
        if hasattr(config, "workerinput"):
            import pytest_autotune.confirmations
            import pytest_autotune.gate.contention

            pytest_autotune.gate.contention.load_per_cpu = lambda: None
            pytest_autotune.gate.contention.stall_reading = lambda: None
            pytest_autotune.gate.contention.cpu_reading = lambda: None
            pytest_autotune.confirmations.CONFIRM_GAP_S = 0.0
    '''
)


def _plugin_is_installed() -> bool:
    return any(
        ep.value.startswith("pytest_autotune")
        for ep in importlib.metadata.entry_points(group="pytest11")
    )


PLUGIN_ARGS = () if _plugin_is_installed() else ("-p", "pytest_autotune.plugin")


# pytest-benchmark (the [benchmark] extra, in dev) warns under xdist from its own plugin,
# which filterwarnings = error turns into INTERNALERROR; our runs do not need it.
# pytest-randomly, where a developer has it installed, would reorder the inner runs' tests,
# whose outputs some tests read in order (pytester clears PYTEST_ADDOPTS).
RUN_ARGS = (*PLUGIN_ARGS, "-p", "no:cacheprovider", "-p", "no:benchmark", "-p", "no:randomly")

BOTH_MODES = pytest.mark.parametrize("mode", [(), ("--autotune",)], ids=["check", "tune"])
"""Parametrizes a test over `mode`: the arguments of a plain run, then of a tuning run."""


def run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    return pytester.runpytest(*RUN_ARGS, *args)


def run_in_a_subprocess(
    pytester: pytest.Pytester, *args: str, timeout: float | None = None
) -> pytest.RunResult:
    """`run`, in a process of its own: for what pytest's own process would hide or hold (a
    worker's crash, a KeyboardInterrupt, the frames of a failure kept for a post-mortem)."""
    return pytester.runpytest_subprocess(*RUN_ARGS, *args, timeout=timeout)


def noted(*lines: str) -> list[str]:
    """`lines`, which match an exception's notes, where Python keeps them (3.11 on): on 3.10
    a candidate's exception is shown without the tuning's note (`failing.raise_again`)."""
    return list(lines) if sys.version_info >= (3, 11) else []


def add_to_conftest(pytester: pytest.Pytester, text: str) -> None:
    """Appends `text` (hooks, a client's changes) to the conftest the test's pytester runs."""
    conftest = pytester.path / "conftest.py"
    conftest.write_text(conftest.read_text() + text)


def replace_in_conftest(pytester: pytest.Pytester, old: str, new: str) -> None:
    """Changes the fake client of the conftest the test's pytester runs: `old`, which must be
    there, becomes `new`."""
    conftest = pytester.path / "conftest.py"
    text = conftest.read_text()
    assert old in text, f"{old!r} is not in the conftest"
    conftest.write_text(text.replace(old, new))


def json_lines(path: Path) -> list[Any]:
    """The values of a JSON lines file (`--autotune-record`'s, a test's own log), in order."""
    return [json.loads(line) for line in path.read_text().splitlines()]


def cache_entries(pytester: pytest.Pytester, pattern: str = "*.json") -> list[Any]:
    """The entries of the fake client's one cache file whose name `pattern` matches."""
    (path,) = (pytester.path / ".autotune/cpu-fake-1t").glob(pattern)
    return list(json.loads(path.read_text())["entries"])


def step_summary(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The file GitHub's step summary would be, set for the test's runs to append to."""
    summary = pytester.path / "summary.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    return summary


def gate_after_an_update(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, changed: dict[str, str], *args: str
) -> pytest.RunResult:
    """Records the baselines with an update, which passes, then sets `changed` in the
    environment (a slowdown, a machine that skips a candidate) and runs the gate with `args`."""
    assert run(pytester, "--autotune-update").ret == pytest.ExitCode.OK
    for name, value in changed.items():
        monkeypatch.setenv(name, value)
    return run(pytester, "--autotune", *args)
