"""Plain `pytest`: every candidate runs once and is compared with the reference."""

from __future__ import annotations

import pytest

from tests.plugin.harness import run

DOUBLE_TESTS = """
import numpy as np
import pytest

def crash(x):
    raise RuntimeError("kaboom")

def double(x):
    return x * 2

def double_wrong(x):
    out = x * 2
    out[5] = -1.0
    return out

@pytest.fixture
def x():
    return np.arange(16, dtype=np.float64)

@pytest.mark.autotune(candidates={"twice": double, "off_by_one": double_wrong, "crash": crash})
def test_double(candidate, x):
    return candidate(x)
"""


def test_a_right_candidate_passes_and_a_wrong_or_crashing_one_fails_by_name(
    autotune_pytester: pytest.Pytester,
) -> None:
    autotune_pytester.makepyfile(test_ops=DOUBLE_TESTS)
    result = run(autotune_pytester, "-rf")
    result.assert_outcomes(passed=1, failed=2)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(
        [
            "*candidate 'off_by_one' differs from the reference candidate 'twice'*",
            "*max abs error 11, max rel error 1.1; first at [[]5[]]: expected 10.0, got -1.0*",
            "*RuntimeError: kaboom*",
            "FAILED test_ops.py::test_double[[]off_by_one[]]*",
            "FAILED test_ops.py::test_double[[]crash[]]*",
        ]
    )
    assert "test_double[twice]" not in "\n".join(
        line for line in result.stdout.lines if line.startswith("FAILED")
    )


def test_an_in_place_candidate_does_not_change_what_the_others_see(
    autotune_pytester: pytest.Pytester,
) -> None:
    autotune_pytester.makepyfile(
        """
        import numpy as np
        import pytest

        def in_place(x):
            x *= 2
            return x

        def copy(x):
            return x * 2

        @pytest.fixture(scope="module")
        def x():
            return np.ones(8)

        @pytest.mark.autotune(candidates={"in_place": in_place, "copy": copy})
        def test_scale(candidate, x):
            return candidate(x)

        def test_the_fixture_is_untouched(x):
            assert (x == 1).all()
        """
    )
    run(autotune_pytester).assert_outcomes(passed=3)


def test_an_explicit_reference_and_tolerances_are_honoured(
    autotune_pytester: pytest.Pytester,
) -> None:
    autotune_pytester.makepyfile(
        """
        import numpy as np
        import pytest

        def exact(x):
            return x.sum()

        def rough(x):
            return x.sum() * (1 + 1e-4)

        @pytest.fixture
        def x():
            return np.ones(100)

        @pytest.mark.autotune(
            candidates={"rough": rough, "exact": exact}, reference=exact, rtol=1e-3
        )
        def test_loose(candidate, x):
            return candidate(x)

        @pytest.mark.autotune(candidates={"rough": rough, "exact": exact}, reference="exact")
        def test_strict(candidate, x):
            return candidate(x)
        """
    )
    result = run(autotune_pytester, "-rf")
    result.assert_outcomes(passed=3, failed=1)
    result.stdout.fnmatch_lines(["FAILED *test_strict[[]rough[]]*"])


def test_a_plain_parametrize_of_candidate_works_too(autotune_pytester: pytest.Pytester) -> None:
    autotune_pytester.makepyfile(
        """
        import pytest

        def add(a, b):
            return a + b

        def add_wrong(a, b):
            return a + b + 1

        @pytest.mark.autotune
        @pytest.mark.parametrize("candidate", [add, add_wrong])
        def test_add(candidate):
            return candidate(2, 3)
        """
    )
    result = run(autotune_pytester, "-rf")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*candidate 'add_wrong' differs*"])


def test_a_candidate_may_decline_with_autotune_skip(autotune_pytester: pytest.Pytester) -> None:
    autotune_pytester.makepyfile(
        """
        import pytest
        from pytest_autotune import AutotuneSkip

        def general(n):
            return n * 2

        def even_only(n):
            if n % 2:
                raise AutotuneSkip("odd sizes are not supported")
            return n * 2

        @pytest.mark.autotune(candidates={"general": general, "even_only": even_only})
        @pytest.mark.parametrize("n", [3])
        def test_double(candidate, n):
            return candidate(n)
        """
    )
    result = run(autotune_pytester, "-rs")
    result.assert_outcomes(passed=1, skipped=1)
    result.stdout.fnmatch_lines(["*declined: odd sizes are not supported*"])


def test_a_marker_with_an_unknown_option_is_a_usage_error(
    autotune_pytester: pytest.Pytester,
) -> None:
    autotune_pytester.makepyfile(
        """
        import pytest

        @pytest.mark.autotune(candidates={"a": abs}, tolerance=3)
        def test_x(candidate):
            return candidate(-1)
        """
    )
    result = run(autotune_pytester)
    assert result.ret != pytest.ExitCode.OK
    result.stdout.fnmatch_lines(["*unknown option(s) [[]'tolerance'[]]; known: candidates*"])
    assert "Traceback" not in result.stdout.str()


def test_a_candidate_of_the_fixture_may_decline_with_autotune_skip(
    autotune_pytester: pytest.Pytester,
) -> None:
    autotune_pytester.makepyfile(
        """
        import numpy as np
        from pytest_autotune import AutotuneSkip, TunableSet

        def decline(x):
            raise AutotuneSkip("only for big arrays")

        def total(x):
            return np.sum(x)

        def test_one_declines(autotune):
            tunables = TunableSet.of(lambda x: x.size, {"decline": decline, "ok": total})
            assert autotune(tunables, np.ones(100)) == 100

        def test_every_candidate_declines(autotune):
            autotune(TunableSet.of(lambda x: x.size, {"decline": decline}), np.ones(100))
        """
    )
    result = run(autotune_pytester, "-rs")
    result.assert_outcomes(passed=1, skipped=1)
    result.stdout.fnmatch_lines(["*every candidate declined: 'decline' (only for big arrays)*"])


def test_a_fixture_sets_unusable_key_fails_plain_pytest(autotune_pytester: pytest.Pytester) -> None:
    autotune_pytester.makepyfile(
        """
        import math
        import numpy as np
        from pytest_autotune import TunableSet

        def test_nan_key(autotune):
            autotune(TunableSet.of(lambda x: math.nan, {"sum": np.sum}), np.ones(4))
        """
    )
    result = run(autotune_pytester)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*the set's key_gen returned an unusable key nan*"])


def test_a_bad_marker_fails_its_test_and_the_modules_other_tests_still_run(
    autotune_pytester: pytest.Pytester,
) -> None:
    autotune_pytester.makepyfile(
        """
        import numpy as np
        import pytest

        @pytest.mark.autotune(candidates=[np.sum, np.add.reduce])
        def test_list(candidate):
            return candidate(np.ones(4))

        @pytest.mark.autotune(candidates={"sum": np.sum}, tolerance=3)
        def test_unknown_option(candidate):
            return candidate(np.ones(4))

        @pytest.mark.autotune()
        def test_no_candidates(candidate):
            return candidate(np.ones(4))

        def test_other():
            pass
        """
    )
    result = run(autotune_pytester)
    result.assert_outcomes(failed=3, passed=1)
    result.stdout.fnmatch_lines(
        [
            "*test_list: autotune(candidates=...) must be a non-empty dict of name -> callable,"
            " got list*",
            "*give the candidates with @pytest.mark.autotune(candidates={...})*",
        ]
    )
    assert "Traceback" not in result.stdout.str()
