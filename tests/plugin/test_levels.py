"""The autotune level under pytest: each group's key is made and tuned under the group's
level (its marker's `level=`, else the session's), and the process's level is left alone."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from pytest_autotune import AutotuneLevel, autotune_level, read_records, set_autotune_level
from tests.plugin.harness import run

LEVEL_TESTS = """
import pytest
from conftest import spin
from pytest_autotune import AutotuneLevel, anchor, autotune_level

def fast(n):
    spin(100e-6)
    return n

def slow(n):
    spin(200e-6)
    return n

@pytest.mark.autotune(
    candidates={"fast": fast, "slow": slow}, key=lambda n: anchor(n), level="full"
)
@pytest.mark.parametrize("n", [1000])
def test_exact(candidate, n):
    return candidate(n)

@pytest.mark.autotune(candidates={"fast": fast, "slow": slow}, key=lambda n: anchor(n))
@pytest.mark.parametrize("n", [1000])
def test_anchored(candidate, n):
    return candidate(n)

def test_outside_a_group_the_level_is_the_process_level():
    assert autotune_level() is AutotuneLevel.EXTENSIVE
"""


@pytest.fixture
def extensive_process() -> Iterator[None]:
    """This process's level set in code, as a library user would; restored after."""
    set_autotune_level(AutotuneLevel.EXTENSIVE)
    yield
    set_autotune_level(None)


def test_a_markers_level_makes_its_groups_key_and_the_others_keep_the_sessions(
    autotune_pytester: pytest.Pytester, extensive_process: None
) -> None:
    autotune_pytester.makepyfile(test_levels=LEVEL_TESTS)
    result = run(
        autotune_pytester, "--autotune", "--autotune-level=minimal", "--autotune-record=r.jsonl"
    )
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()
    keys = {r.extra["group"]: r.key for r in read_records(autotune_pytester.path / "r.jsonl")}
    # full: 1000 as it is; minimal: the next power of 2.5 (1526), not balanced's 1024.
    assert keys == {
        "test_levels.py::test_exact[1000]": 1000,
        "test_levels.py::test_anchored[1000]": 1526,
    }
    assert autotune_level() is AutotuneLevel.EXTENSIVE


def test_without_tuning_a_markers_level_is_checked_like_its_other_options(
    autotune_pytester: pytest.Pytester,
) -> None:
    autotune_pytester.makepyfile(test_levels=LEVEL_TESTS.replace('level="full"', 'level="turbo"'))
    result = run(autotune_pytester)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(
        ["*@pytest.mark.autotune(level='turbo'): expected an AutotuneLevel or minimal*"]
    )


def test_a_markers_level_and_device_are_read_in_any_case_as_the_options_are(
    pytester: pytest.Pytester,
) -> None:
    # `--autotune-level=FULL` and `--autotune-device=CPU` are read; the marker refused
    # `level="FULL"` ("expected an AutotuneLevel or minimal, ...") and `device="CPU"` ("no
    # pytest_autotune_client hook provides it"), failing every candidate's test.
    pytester.makepyfile(
        test_case="""
        import pytest

        def total(values):
            return sum(values)

        def builtin_sum(values):
            return sum(values, 0)

        @pytest.mark.autotune(
            candidates={"total": total, "builtin_sum": builtin_sum}, level="FULL", device="CPU"
        )
        def test_sum(candidate):
            return candidate([1, 2, 3])
        """
    )
    result = run(pytester)
    result.assert_outcomes(passed=2)
