"""Results stay aligned with candidate indices when tuning stops before every candidate ran."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.plugin.harness import run

GROUPED_TESTS = """
import pytest
from conftest import spin, slowdown
from pytest_autotune import TuneGroup, Work

def alt(n):
    spin(120e-6 * slowdown("alt"))
    return n * 2

def fast(n):
    spin(100e-6 * slowdown("fast"))
    return n * 2

def slow(n):
    spin(300e-6 * slowdown("slow"))
    return n * 2

BIG = TuneGroup("big", lambda key: 1)
SMALL = TuneGroup("small", lambda key: 0)

@pytest.mark.autotune(
    candidates={"alt": alt, "fast": fast, "slow": slow},
    groups=[(BIG, {"fast": 1, "slow": 1}), (SMALL, {"alt": 1})],
    work=lambda n: Work(bytes=1e5),
)
@pytest.mark.parametrize("n", [3])
def test_grouped(candidate, n):
    return candidate(n)
"""

CACHE = Path(".autotune/cpu-fake-1t/test_grouped.py__test_grouped-aeb2b54bff.json")


@pytest.fixture
def grouped(autotune_pytester: pytest.Pytester) -> pytest.Pytester:
    autotune_pytester.makepyfile(test_grouped=GROUPED_TESTS)
    return autotune_pytester


def test_a_candidate_never_reached_is_written_as_skipped_at_its_own_index(
    grouped: pytest.Pytester,
) -> None:
    assert run(grouped, "--autotune-update").ret == pytest.ExitCode.OK
    (entry,) = json.loads((grouped.path / CACHE).read_text())["entries"]
    assert entry["fastest_index"] == 1
    assert entry["fastest_name"] == "fast"
    assert [r["name"] for r in entry["results"]] == ["alt", "fast", "slow"]
    assert [r["index"] for r in entry["results"]] == [0, 1, 2]
    assert entry["results"][0]["error"]["kind"] == "skip"


def test_a_grouped_winner_slowed_twice_over_fails_the_gate_by_name(
    grouped: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The first batch ("fast", "slow") succeeds, so "alt" is never reached: the winner's
    # baseline must still be its own samples, not those of the candidate after it.
    assert run(grouped, "--autotune-update").ret == pytest.ExitCode.OK
    monkeypatch.setenv("SLOWDOWN_FAST", "2.0")
    result = run(grouped, "--autotune")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(
        ["*regression of +100.0%*", "*against the baseline median 100 us (fast on cpu-fake-1t*"]
    )


def test_a_plan_that_tries_no_candidate_for_the_key_skips_each_test_in_every_mode(
    autotune_pytester: pytest.Pytester,
) -> None:
    # Every group's priority negative for the key: the plan tries none. The group's first
    # test failed ("no measured candidate is left") and the others passed; each candidate
    # declines the key, as a negative priority says, and its test is skipped, plain
    # pytest's too (which ran them all, the first as the others' reference).
    autotune_pytester.makepyfile(
        test_grouped=GROUPED_TESTS.replace("lambda key: 1", "lambda key: -1").replace(
            "lambda key: 0", "lambda key: -2"
        )
    )
    for mode in ((), ("--autotune",), ("--autotune-update",)):
        result = run(autotune_pytester, *mode)
        assert result.ret == pytest.ExitCode.OK, result.outlines
        result.assert_outcomes(skipped=3)
    assert not (autotune_pytester.path / ".autotune").exists()  # nothing measured to record
