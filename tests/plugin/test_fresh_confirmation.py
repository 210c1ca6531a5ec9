"""On the built-in CPU client a suspected failure is measured again in a fresh process: a
slowness that belongs to the pytest process does not fail the gate, a slower kernel does
(`pytest_autotune.fresh_process`). The only plugin tests on the real CPU client: the
slowdowns are sleeps of milliseconds against a kernel of tens of microseconds."""

from __future__ import annotations

import pytest

from tests.plugin.harness import run

CONFTEST = """
import os

SLOW_HERE = [False]
FAST_HERE = [False]


def pytest_configure(config):
    # A state of the pytest process alone: a process spawned to measure again imports
    # this module anew, and runs no hook.
    SLOW_HERE[0] = os.environ.get("SLOW_PROCESS") == "1"
    FAST_HERE[0] = os.environ.get("FAST_PROCESS") == "1"
"""

TESTS = """
import os
import time

import numpy as np
import pytest
from conftest import FAST_HERE, SLOW_HERE


def kernel(x):
    if SLOW_HERE[0] or (os.environ.get("SLOW_CODE") == "1" and not FAST_HERE[0]):
        time.sleep(2e-3)
    return x * 2.0


def other(x):
    time.sleep(5e-3)
    return x * 2.0


@pytest.fixture
def x():
    return np.arange(1 << 16, dtype=np.float64)


# A 20 us kernel that allocates its output reads up to 40% apart in two processes on a
# shared 2-core VM (27.6 us fresh against 19.6 us in the updating process, one run in
# five): the tolerance leaves that to the gate's noise, and judges the 100-fold slowdowns
# this test is about.
@pytest.mark.autotune(candidates={"kernel": kernel, "other": other}, max_regression=1.0)
def test_fresh(candidate, x):
    return candidate(x)
"""


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(test_fresh=TESTS)
    pytester.makeini("[pytest]\nfilterwarnings = error\n")
    return pytester


def test_a_slowness_of_the_pytest_process_passes_and_a_slower_kernel_fails(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert run(project, "--autotune-update").ret == pytest.ExitCode.OK
    monkeypatch.setenv("SLOW_PROCESS", "1")
    slow_process = run(project, "--autotune")
    # Measured again in a process of its own, where the kernel is as fast as it was.
    assert slow_process.ret == pytest.ExitCode.OK, slow_process.stdout.str()
    assert "REGRESSION" not in slow_process.stdout.str()
    monkeypatch.delenv("SLOW_PROCESS")
    monkeypatch.setenv("SLOW_CODE", "1")
    slow_code = run(project, "--autotune")
    assert slow_code.ret == pytest.ExitCode.TESTS_FAILED
    slow_code.stdout.fnmatch_lines(["verdicts: 1 REGRESSION"])


# The same tests with the pytest process's slowness decided in the test module itself: a
# conftest.py does not import by name under importlib mode. True in the pytest process
# alone: the fresh process is `python -c`, and it loads this module anew from its file.
IMPORTLIB_TESTS = TESTS.replace(
    "from conftest import FAST_HERE, SLOW_HERE\n",
    "import sys\n\n"
    'SLOW_HERE = [os.environ.get("SLOW_PROCESS") == "1" and sys.argv[:1] != ["-c"]]\n'
    "FAST_HERE = [False]\n",
)


@pytest.mark.parametrize("layout", ["folder", "package"])
def test_under_importlib_mode_the_confirmations_still_run_in_fresh_processes(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, layout: str
) -> None:
    # pytest's importlib mode names the module checks.test_fresh from the rootdir, which
    # is not on sys.path: the fresh process could not import it, and every confirmation
    # ran in the slow pytest process, silently. In a package, the module's relative import
    # needs its package there too.
    assert "conftest" not in IMPORTLIB_TESTS
    if layout == "package" and pytest.version_tuple < (8, 2):
        # pytest before 8.2 cannot collect such a module at all (its importlib mode does
        # not import the package a relative import needs): nothing of ours to check.
        pytest.skip("pytest < 8.2's importlib mode cannot import a test package's module")
    pytester.makeini("[pytest]\nfilterwarnings = error\naddopts = --import-mode=importlib\n")
    folder = pytester.mkdir("checks")
    source = IMPORTLIB_TESTS
    if layout == "package":
        (folder / "__init__.py").write_text("")
        (folder / "helpers.py").write_text("FACTOR = 2.0\n")
        source = source.replace("return x * 2.0", "return x * FACTOR").replace(
            "import pytest\n", "import pytest\n\nfrom .helpers import FACTOR\n", 1
        )
        assert source.count("FACTOR") == 3
    (folder / "test_fresh.py").write_text(source)
    assert run(pytester, "--autotune-update").ret == pytest.ExitCode.OK
    monkeypatch.setenv("SLOW_PROCESS", "1")
    slow_process = run(pytester, "--autotune")
    assert slow_process.ret == pytest.ExitCode.OK, slow_process.stdout.str()
    assert "not in a fresh one" not in slow_process.stdout.str()
    monkeypatch.delenv("SLOW_PROCESS")
    monkeypatch.setenv("SLOW_CODE", "1")
    slow_code = run(pytester, "--autotune")
    assert slow_code.ret == pytest.ExitCode.TESTS_FAILED
    slow_code.stdout.fnmatch_lines(["verdicts: 1 REGRESSION"])
    assert "not in a fresh one" not in slow_code.stdout.str()


CLOSURE_TESTS = """
import os
import threading
import time

import numpy as np
import pytest


def make_kernel():
    held = LOCK  # no pickler takes a lock, by value or not

    def kernel(x):
        if os.environ.get("SLOW_CODE") == "1" and held:
            time.sleep(2e-3)
        return x * 2.0

    return kernel


LOCK = threading.Lock()


def other(x):
    time.sleep(5e-3)
    return x * 2.0


@pytest.mark.autotune(candidates={"kernel": make_kernel(), "other": other})
def test_closure(candidate):
    return candidate(np.full(1 << 12, 1.0))
"""


@pytest.mark.parametrize("kernel", ["locked", "closure"])
def test_a_failure_confirmed_in_the_test_process_says_why_not_in_a_fresh_one(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, kernel: str
) -> None:
    # A closure goes to the fresh process by value (cloudpickle); one holding what no
    # pickler takes (a lock) is measured here, and the note says why.
    tests = CLOSURE_TESTS
    if kernel == "closure":
        tests = tests.replace("    held = LOCK  #", "    held = True  #")
    pytester.makepyfile(test_closure=tests)
    pytester.makeini("[pytest]\nfilterwarnings = error\n")
    assert run(pytester, "--autotune-update").ret == pytest.ExitCode.OK
    monkeypatch.setenv("SLOW_CODE", "1")
    slow_code = run(pytester, "--autotune")
    assert slow_code.ret == pytest.ExitCode.TESTS_FAILED
    if kernel == "closure":
        assert "not in a fresh one" not in slow_code.stdout.str(), slow_code.outlines
        return
    slow_code.stdout.fnmatch_lines(
        [
            "note: test_closure.py::test_closure: measured again in the test process, not in"
            " a fresh one: kernel: the candidate or its inputs do not pickle (*lock*)"
        ]
    )


def test_an_update_in_a_slow_process_joins_the_baseline_and_a_slower_kernel_starts_one(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    # An update's slowdown is measured again, in fresh processes, before it becomes the
    # baseline: one slow session made the baseline that hid every later slowdown.
    assert run(project, "--autotune-update").ret == pytest.ExitCode.OK
    monkeypatch.setenv("SLOW_PROCESS", "1")
    assert_no_new_baseline(run(project, "--autotune-update", "-rA"))
    monkeypatch.delenv("SLOW_PROCESS")
    monkeypatch.setenv("SLOW_CODE", "1")
    slow_code = run(project, "--autotune-update")
    assert slow_code.ret == pytest.ExitCode.OK
    slow_code.stdout.fnmatch_lines(
        ["*test_fresh* new baseline: +*% against the old one*; measured 3 times: +*, +*, +*"]
    )


def test_an_update_in_a_fast_process_joins_the_baseline(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A fast spell of a VM read unchanged code -43% in an update, which became the
    # baseline; unchanged code then failed at +110%. A speedup is measured again too.
    monkeypatch.setenv("SLOW_CODE", "1")
    assert run(project, "--autotune-update").ret == pytest.ExitCode.OK
    monkeypatch.setenv("FAST_PROCESS", "1")
    assert_no_new_baseline(run(project, "--autotune-update", "-rA"))


def assert_no_new_baseline(update: pytest.RunResult) -> None:
    """An update of unchanged code whose first read a spell of its process moved: it
    joins the baseline with the fresh processes' re-measurement. They read the machine's
    load themselves (this suite's patches stay in its own process): on busy CPUs the update
    keeps the baseline instead, which is as good. Either way it starts no new one."""
    assert update.ret == pytest.ExitCode.OK
    output = update.stdout.str()
    assert (
        "test_fresh.py::test_fresh [default]: joined the baseline: 2 sessions" in output
        or "test_fresh.py::test_fresh [default]: kept the baseline (1 session)" in output
    ), output
    assert "new baseline" not in output


def test_a_test_methods_confirmations_run_in_fresh_processes(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The body of a method carries its instance, kept as the test found it: a closure
    # kept there did not pickle, and every confirmation of a class's test ran in the slow
    # pytest process ("Can't pickle local object 'Instance.__post_init__.<locals>...'").
    pytester.makeconftest(CONFTEST)
    # The marker above the class marks its method.
    method = TESTS.replace(
        "def test_fresh(candidate, x):\n    return candidate(x)",
        "class TestFresh:\n    def test_fresh(self, candidate, x):\n        return candidate(x)",
    )
    assert "class TestFresh" in method
    pytester.makepyfile(test_fresh=method)
    pytester.makeini("[pytest]\nfilterwarnings = error\n")
    assert run(pytester, "--autotune-update").ret == pytest.ExitCode.OK
    monkeypatch.setenv("SLOW_PROCESS", "1")
    slow_process = run(pytester, "--autotune")
    assert slow_process.ret == pytest.ExitCode.OK, slow_process.stdout.str()
    assert "not in a fresh one" not in slow_process.stdout.str()


SPELLS_CONFTEST = """
import os

SPELL_HERE = [False]


def pytest_configure(config):
    # The pytest process alone reads a slow spell: the fresh processes that measure again
    # import this module anew, run no hook, and read a fast one.
    SPELL_HERE[0] = os.environ.get("SPELLS") == "1"
"""

SPELLS_TESTS = """
import os
import time

import numpy as np
import pytest
from conftest import SPELL_HERE


def kernel(x):
    if SPELL_HERE[0]:
        time.sleep(8e-3)
    elif os.environ.get("SPELLS") != "1":
        time.sleep(2e-3)
    return x * 2.0


def other(x):
    time.sleep(20e-3)
    return x * 2.0


@pytest.mark.autotune(candidates={"kernel": kernel, "other": other}, max_regression=0.5)
def test_spells(candidate):
    return candidate(np.arange(1 << 10, dtype=np.float64))
"""


def test_an_update_whose_reads_disagree_keeps_the_committed_baseline(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    # On the 2-core VM an update read unchanged code +35.6%, then -15.2%, then +31.8%, and
    # the last read alone became the new baseline. Here the pytest process reads 4x slower
    # and the fresh process that measures again 100x faster: no change is confirmed, and
    # the committed baseline stays as it is, byte for byte.
    pytester.makeconftest(SPELLS_CONFTEST)
    pytester.makepyfile(test_spells=SPELLS_TESTS)
    pytester.makeini("[pytest]\nfilterwarnings = error\n")
    assert run(pytester, "--autotune-update").ret == pytest.ExitCode.OK
    (cache,) = (pytester.path / ".autotune").rglob("*.json")
    committed = cache.read_bytes()
    monkeypatch.setenv("SPELLS", "1")
    update = run(pytester, "--autotune-update", "-rA")
    assert update.ret == pytest.ExitCode.OK
    update.stdout.fnmatch_lines(
        [
            "test_spells.py::test_spells [[]default[]]: kept the baseline (1 session): this"
            " session is not"
            " recorded, as the machine ran in slow and fast spells*; measured 2 times, the"
            " reads disagree: +*%, -*%"
        ]
    )
    assert "new baseline" not in update.stdout.str()
    assert cache.read_bytes() == committed
