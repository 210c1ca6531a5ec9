# NumPy (and CuPy, when present) are imported here once, so pytester's module snapshots in
# the plugin tests do not import them a second time.
import contextlib

import numpy  # noqa: F401
import pytest

# The plugin's engine, which pytest's plugin loads only in a run that uses it: imported
# once here, as NumPy is, and not again by each inner run that uses it.
import pytest_autotune.plugin_engine  # noqa: F401

# CuPy is optional: a broken install must not stop the CPU suite.
with contextlib.suppress(Exception):
    import cupy  # noqa: F401

# Hypothesis's pytest plugin imports the package in every session's terminal summary, and
# pytester takes modules imported by an inner run out again when it ends: each of the
# suite's hundreds of inner runs imported all of Hypothesis anew, its modules rewritten by
# pytest's assertions and, where PYTHONDONTWRITEBYTECODE is set (as on CI), never cached
# (1.2-1.7 s a run on the 2-core VM). Imported here, it stays for them all.
with contextlib.suppress(ImportError):
    import hypothesis.internal.observability  # noqa: F401

pytest_plugins = ["pytester"]


@pytest.fixture(autouse=True)
def _user_cache_in_tmp(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A `LocalTuner` of no explicit cache_dir writes to the per-user cache directory
    (`platformdirs`, which reads XDG_CACHE_HOME on Linux): never the real one in a test."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path_factory.getbasetemp() / "user-cache"))


# Variables of a CI service that change what an inner pytest run prints or writes: pytest
# prints whole short-summary lines when `CI` or `BUILD_NUMBER` is set (cut to the terminal's
# width elsewhere), and the plugin appends to GitHub's step summary and reads the branch.
CI_VARIABLES = ("CI", "BUILD_NUMBER", "GITHUB_STEP_SUMMARY", "GITHUB_HEAD_REF", "RUNNER_IMAGE")


@pytest.fixture(autouse=True)
def _not_on_ci(monkeypatch: pytest.MonkeyPatch) -> None:
    """A test's inner pytest run sees the environment of a developer's machine wherever the
    suite runs: the suite failed only on CI, where a message a test counts once stood a
    second time, whole, in pytest's short summary. Tests of those variables set them."""
    for name in CI_VARIABLES:
        monkeypatch.delenv(name, raising=False)


@pytest.fixture(autouse=True)
def _no_machine_load(monkeypatch: pytest.MonkeyPatch) -> None:
    """The gate widens a CPU comparison by the machine's load average and by how long
    runnable threads waited for a CPU during its samples (`pytest_autotune.gate.conditions`),
    and records the CPU time other processes used meanwhile; a test's verdicts and records
    must not depend on what else runs on the machine, so tests read none of them unless
    they set one."""
    monkeypatch.setattr("pytest_autotune.gate.contention.load_per_cpu", lambda: None)
    monkeypatch.setattr("pytest_autotune.gate.contention.stall_reading", lambda: None)
    monkeypatch.setattr("pytest_autotune.gate.contention.cpu_reading", lambda: None)


@pytest.fixture(autouse=True)
def _no_confirmation_pause(monkeypatch: pytest.MonkeyPatch) -> None:
    """On a CPU the gate pauses before each re-measurement of a suspected failure, so that
    an episode of a shared machine passes (`confirmations.CONFIRM_GAP_S`); the tests' clients
    are fakes or their slowdowns are the code's, and the pause would only add seconds."""
    monkeypatch.setattr("pytest_autotune.confirmations.CONFIRM_GAP_S", 0.0)
