"""Seed parity of `groups=`: a candidate the groups skip for a key never judges the others."""

from __future__ import annotations

import pytest

from tests.plugin.harness import run

VEC4_TESTS = """
import numpy as np
import pytest
from conftest import spin
from pytest_autotune import TuneGroup

def vec4(x):  # for sizes that are multiples of 4; its group skips the others
    spin(50e-6)
    return np.float64(0.0) if x.size % 4 else x.reshape(-1, 4).sum()

def plain(x):
    spin(100e-6)
    return x.sum()

def pairwise(x):
    spin(200e-6)
    return np.add.reduce(x)

fourable = TuneGroup("vec4", lambda key: 1 if key % 4 == 0 else -1)

@pytest.mark.autotune(
    candidates={"vec4": vec4, "plain": plain, "pairwise": pairwise},
    key=lambda x: x.size,
    groups=[(fourable, {"vec4": 1})],
)
@pytest.mark.parametrize("x", [np.arange(5.0)], ids=["n5"])
def test_sum(candidate, x):
    return candidate(x)
"""


@pytest.mark.parametrize("mode", [(), ("--autotune-update",)], ids=["plain", "tune"])
def test_a_candidate_its_groups_skip_for_the_key_declines_it_and_judges_no_other(
    autotune_pytester: pytest.Pytester, mode: tuple[str, ...]
) -> None:
    # The skipped kernel, listed first, was the reference (the first that succeeds): the
    # two right candidates failed against its answer for a size it is not for, and under
    # --autotune the group had no winner (ERROR). The seed tunes the planned ones and runs
    # the fastest; a negative priority skips, here as a declined key does.
    autotune_pytester.makepyfile(test_vec=VEC4_TESTS)
    result = run(autotune_pytester, "-rs", *mode)
    result.assert_outcomes(passed=2, skipped=1)
    result.stdout.fnmatch_lines(["SKIPPED*candidate 'vec4' declined: not reached: no group*"])
    if mode:
        result.stdout.fnmatch_lines(["*test_vec.py::test_sum[[]n5[]]*plain*"])


LIBRARY = """
import numpy as np
from conftest import spin
from pytest_autotune import Tunable, TunableSet, TuneGroup, local_tuner

TUNER = local_tuner()

def vec4(x):  # for sizes that are multiples of 4; its group skips the others
    spin(50e-6)
    return np.float64(0.0) if x.size % 4 else x.reshape(-1, 4).sum()

def plain(x):
    spin(100e-6)
    return x.sum()

def make_set():
    fourable = TuneGroup("vec4", lambda n: 1 if n % 4 == 0 else -1)
    return (
        TunableSet(lambda x: x.size)
        .with_(Tunable("vec4", vec4).group(fourable, lambda n: 1))
        .with_(Tunable("plain", plain))
    )
"""


@pytest.mark.parametrize("mode", [(), ("--autotune-update",)], ids=["plain", "tune"])
def test_the_autotune_fixture_checks_and_returns_what_the_library_runs_for_the_key(
    autotune_pytester: pytest.Pytester, mode: tuple[str, ...]
) -> None:
    # A plain run checked every candidate of a production set against the first, the one
    # its groups skip for size 5: 'plain' failed, and the test got vec4's answer.
    autotune_pytester.makepyfile(
        mylib=LIBRARY,
        test_lib="""
        import numpy as np
        import mylib

        def test_sum(autotune):
            assert autotune(mylib.TUNER.init(mylib.make_set), np.arange(5.0)) == 10.0
        """,
    )
    run(autotune_pytester, *mode).assert_outcomes(passed=1)


@pytest.mark.parametrize("mode", [(), ("--autotune-update",)], ids=["plain", "tune"])
def test_a_reference_its_groups_skip_for_the_key_is_no_reference_there(
    autotune_pytester: pytest.Pytester, mode: tuple[str, ...]
) -> None:
    # Named by `reference=`, the skipped kernel was called all the same in a plain run: the
    # right candidates failed against its answer for a size it is not for, which tuning
    # passed, and the fixture returned that answer, which the library never computes.
    autotune_pytester.makepyfile(
        test_vec=VEC4_TESTS.replace("groups=[", 'reference="vec4", groups=['),
        mylib=LIBRARY,
        test_lib="""
        import numpy as np
        import mylib

        def test_sum(autotune):
            out = autotune(mylib.TUNER.init(mylib.make_set), np.arange(5.0), reference="vec4")
            assert out == 10.0
        """,
    )
    run(autotune_pytester, *mode).assert_outcomes(passed=3, skipped=1)


def test_the_autotune_fixture_returns_no_output_of_a_reference_that_declines_the_key(
    autotune_pytester: pytest.Pytester,
) -> None:
    # The others were checked as without a reference, but the fixture then called the
    # reference on the test's inputs for its output, and the test failed in a plain run
    # with the reference's AutotuneSkip; tuning passed it.
    autotune_pytester.makepyfile(
        test_lib="""
        import numpy as np
        from pytest_autotune import AutotuneSkip, TunableSet

        def vec4(x):
            if x.size % 4:
                raise AutotuneSkip("sizes that are multiples of 4")
            return x.reshape(-1, 4).sum()

        def test_sum(autotune):
            tunables = TunableSet.of(lambda x: x.size, {"vec4": vec4, "plain": np.sum})
            assert autotune(tunables, np.arange(5.0), reference="vec4") == 10.0
        """,
    )
    run(autotune_pytester).assert_outcomes(passed=1)
