"""A tuning run inside a user's usual CI command, `pytest --cov=mypkg` (pytest-cov): the
timed calls run untraced, and coverage still sees every candidate's lines."""

from __future__ import annotations

import pytest

from tests.plugin.harness import PLUGIN_ARGS, run
from tests.plugin.test_tune_mode import SCALE_TESTS

pytest.importorskip("pytest_cov")

KERNELS = """
import sys

import numpy as np

TRACED = []


def loop_sum(x):
    TRACED.append(sys.gettrace() is not None)
    total = 0.0
    for v in x.tolist():
        total += v
    return total


def numpy_sum(x):
    return float(np.sum(x))
"""

TUNED = """
import numpy as np

from pytest_autotune import AutotuneConfig, Tunable, TunableSet, local_tuner
from pytest_autotune.backends import cpu

TUNER = local_tuner(config=AutotuneConfig(disable_cache=True))


def loop_max(x):
    best = x[0]
    for v in x.tolist():
        if v > best:
            best = v
    return float(best)


def numpy_max(x):
    return float(np.max(x))


def make_set():
    return TunableSet(lambda x: x.size).with_(Tunable("loop", loop_max)).with_(
        Tunable("numpy", numpy_max)
    )


def tuned_max(x):
    client = cpu()
    return TUNER.execute(client.device_id, client, TUNER.init(make_set), (x,))
"""

LATER = """
def later(n):
    if n > 0:
        return n
    return -n
"""

TESTS = """
import sys

import numpy as np
import pytest

from mypkg import kernels
from mypkg.tuned import tuned_max


@pytest.mark.autotune(candidates=[kernels.loop_sum, kernels.numpy_sum], rtol=1e-9)
def test_sum(candidate):
    return candidate(np.arange(64.0))


def test_timed_calls_ran_untraced():
    traced = sum(kernels.TRACED)
    assert 0 < traced < len(kernels.TRACED) - traced, kernels.TRACED.count(True)


def test_a_library_tunes_inside_a_traced_test():
    tracer = sys.gettrace()
    assert tuned_max(np.arange(256.0)) == 255.0
    assert sys.gettrace() is tracer


def test_a_later_test_is_still_covered():
    from mypkg.later import later

    assert later(-3) == 3
    assert later(3) == 3
"""


def test_a_tuning_run_under_pytest_cov_times_untraced_and_covers_every_line(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Before, coverage's tracer ran inside the timed loops, and a 3 us pure-Python
    # candidate read 2-4 times its time: a false regression against baselines recorded
    # without --cov, and another winner. Its C tracer, which Python 3.14's coverage.py
    # replaces by default with `sys.monitoring` events (costless once seen: left alone).
    monkeypatch.setenv("COVERAGE_CORE", "ctrace")
    pytester.mkpydir("mypkg")
    pytester.makepyfile(**{"mypkg/kernels": KERNELS, "mypkg/tuned": TUNED, "mypkg/later": LATER})
    pytester.makepyfile(test_traced=TESTS)
    pytester.makeini("[pytest]\nfilterwarnings = error\n")
    result = pytester.runpytest_subprocess(
        *PLUGIN_ARGS,
        "-p",
        "no:cacheprovider",
        "-p",
        "no:randomly",
        "-p",
        "no:benchmark",
        "--cov=mypkg",
        "--cov-branch",
        "--cov-report=term-missing",
        "--autotune",
    )
    result.assert_outcomes(passed=5)
    # Every line and branch: the tuned library's losing candidate included, which only
    # the one untimed, traced call before its timed loops runs.
    result.stdout.fnmatch_lines(
        [
            "mypkg/kernels.py * 100%",
            "mypkg/later.py * 100%",
            "mypkg/tuned.py * 100%",
        ]
    )
    assert "Warning" not in result.stdout.str() + result.stderr.str()


PROFILED = """
import cProfile

PROFILER = cProfile.Profile()


def pytest_configure(config):
    PROFILER.enable()


def pytest_unconfigure(config):
    PROFILER.disable()
"""


def test_a_tuning_run_under_cprofile_says_its_times_carry_the_profilers_cost(
    autotune_pytester: pytest.Pytester,
) -> None:
    # `python -m cProfile -m pytest --autotune`: cProfile's profiler is installed from C
    # (Python 3.11) or through `sys.monitoring` (3.12 on), where no trace function can
    # put it aside and back, and it read a 3 us NumPy call as 10 us: said, not silent.
    autotune_pytester.makepyfile(profiled=PROFILED, test_scale=SCALE_TESTS)
    autotune_pytester.syspathinsert()
    result = run(autotune_pytester, "-p", "profiled", "--autotune")
    result.stdout.fnmatch_lines(
        [
            "warning: timed under a profiler that cannot be put aside (cProfile*): every"
            " time carries its cost, so winners and verdicts may not hold",
        ]
    )
    assert result.ret == 0


def test_a_tuning_run_without_a_profiler_says_nothing_of_one(
    autotune_pytester: pytest.Pytester,
) -> None:
    autotune_pytester.makepyfile(test_scale=SCALE_TESTS)
    result = run(autotune_pytester, "--autotune")
    assert "cannot be put aside" not in result.stdout.str()
