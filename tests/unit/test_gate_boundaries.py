"""The gate's rule checked by hand at and around each of its lines.

With d = ln(t / t_base) and sigma = sqrt(se_cur^2 + se_base^2 + sigma_between^2), a
regression is d - 3.09 sigma > ln(1 + max_regression) (DESIGN.md section 5). Every figure
below is worked out from that rule alone, in the comments, and the gate must land on the
same side of it: a hair under the line passes, a hair over fails. The baselines are built
as the cache file holds them: the newest session's samples, the earlier sessions' medians.
"""

from __future__ import annotations

import math

import pytest

from pytest_autotune.gate import (
    Baseline,
    Measurement,
    Verdict,
    judge,
)
from pytest_autotune.gate.samples import BaselineSession

CPU = "cpu-amd-epyc-2t"
GPU = "cuda-nvidia-h200"
CHECKSUM = "0123456789abcdef"
T = 100e-6
HAIR = 1e-4
"""A relative step either side of a line: far past rounding, far inside any noise."""


def exact(seconds: float) -> Measurement:
    """Ten equal samples: a median without error (se 0)."""
    return Measurement((seconds,) * 10)


def baseline(
    *sessions: float, device_id: str = CPU, sigma_between: float | None = None
) -> Baseline:
    """A baseline of these sessions' medians, oldest first: the last is the stored samples'
    (ten equal ones, se 0), the others the file's earlier `sessions`."""
    *earlier, newest = sessions or (T,)
    return Baseline(
        device_id=device_id,
        checksum=CHECKSUM,
        fastest_name="fast",
        samples=(newest,) * 10,
        history=tuple(BaselineSession(m) for m in earlier),
        sigma_between=sigma_between,
        source=".autotune/x.json",
    )


def verdict(seconds: float, base: Baseline, device_id: str = CPU, **options: object) -> Verdict:
    return judge(
        exact(seconds),
        base,
        device_id=device_id,
        checksum=CHECKSUM,
        **options,  # type: ignore[arg-type]
    ).verdict


def line(max_regression: float, sigma: float) -> float:
    """The smallest t / t_base that fails: exp(ln(1 + max_regression) + 3.09 sigma)."""
    return math.exp(math.log1p(max_regression) + 3.09 * sigma)


# -- how many sessions -------------------------------------------------------------------


@pytest.mark.parametrize("sessions", [1, 2, 8, 9])
def test_sessions_that_agree_exactly_leave_the_line_where_one_session_puts_it(
    sessions: int,
) -> None:
    # A raw CPU comparison: 10% tolerated, 3% between sessions, no other error, so the
    # line is exp(ln 1.1 + 3.09 * 0.03) = 1.20685, whatever the number of equal sessions
    # (their spread, 0, pools with the default and cannot narrow it).
    base = baseline(*[T] * sessions)
    assert line(0.10, 0.03) == pytest.approx(1.206846, abs=1e-6)
    assert verdict(T * line(0.10, 0.03) * (1 - HAIR), base) is Verdict.PASS
    assert verdict(T * line(0.10, 0.03) * (1 + HAIR), base) is Verdict.REGRESSION


def test_two_sessions_that_disagree_compare_with_their_mean_and_its_error() -> None:
    # Sessions at T and 1.1 T: the baseline is their mean in logs, ln(1.1) / 2 above T,
    # with the error of that mean, sqrt(var / 2) = 0.047655; two sessions are too few to
    # measure sigma_between, which stays 3%. sigma = sqrt(0.047655^2 + 0.03^2) = 0.056312,
    # so the line is 1.0488 T * exp(ln 1.1 + 3.09 * 0.056312) = 1.372959 T.
    base = baseline(T, T * 1.1)
    t_base, sigma = T * math.sqrt(1.1), math.hypot(math.log(1.1) / 2, 0.03)
    assert t_base * line(0.10, sigma) == pytest.approx(1.372959 * T, rel=1e-6)
    # Under the line, that interval is too wide to catch 30% (3 x 10%) 95 times in 100.
    assert verdict(1.372959 * T * (1 - HAIR), base) is Verdict.TOO_NOISY
    assert verdict(1.372959 * T * (1 + HAIR), base) is Verdict.REGRESSION


def test_eight_sessions_that_spread_widen_the_noise_by_their_measured_spread() -> None:
    # Offsets of -6%..+6% in logs about T (sd 0.04 over 8 sessions, mean 0): sigma_between
    # pools 8 prior sessions at 3% with 7 degrees of freedom at 4%,
    # sqrt((8 * 0.03^2 + 7 * 0.04^2) / 15) = 0.035024; the mean's error is
    # sqrt(0.04^2 / 8) = 0.014142; sigma = 0.037771 and the line is 1.236177 T. Under it
    # that is too wide to catch 30%: ln 1.1 + (3.09 + 1.645) * 0.037771 > ln 1.3.
    offsets = (-0.06, -0.04, -0.02, 0.02, 0.04, 0.06, 0.0, 0.0)
    base = baseline(*(T * math.exp(o) for o in offsets))
    assert base.spread(calibrated=False) == (pytest.approx(0.04), 8)
    assert verdict(1.236177 * T * (1 - HAIR), base) is Verdict.TOO_NOISY
    assert verdict(1.236177 * T * (1 + HAIR), base) is Verdict.REGRESSION


def test_a_file_holding_more_than_eight_sessions_compares_with_the_newest_eight() -> None:
    # A file edited by hand, or two branches' updates merged, may hold twelve sessions:
    # the four oldest at 2 T would pull the mean up and hide a regression against the
    # newest eight at T. Judged on those eight, as an update would keep them, 1.3 T fails.
    base = baseline(*[2 * T] * 4, *[T] * 8)
    assert base.sessions() == baseline(*[T] * 8).sessions()
    assert verdict(1.3 * T, base) is Verdict.REGRESSION


# -- equal, faster, exact ------------------------------------------------------------------


@pytest.mark.parametrize("device_id", [CPU, GPU])
def test_an_unchanged_time_passes_with_no_change_and_is_judged_not_too_noisy(
    device_id: str,
) -> None:
    result = judge(exact(T), baseline(device_id=device_id), device_id=device_id, checksum=CHECKSUM)
    assert result.verdict is Verdict.PASS
    assert result.comparison is not None and result.comparison.delta == 0.0


@pytest.mark.parametrize("strict", [False, True])
@pytest.mark.parametrize("faster", [0.97, 0.5, 0.01])
def test_a_faster_kernel_passes_even_in_strict_mode(faster: float, strict: bool) -> None:
    result = judge(exact(T * faster), baseline(), device_id=CPU, checksum=CHECKSUM, strict=strict)
    assert result.verdict is Verdict.PASS and not result.failed
    assert result.comparison is not None and result.comparison.delta == pytest.approx(faster - 1)


def test_with_no_noise_at_all_the_line_is_the_tolerance_itself() -> None:
    # A file's sigma_between of 0 and medians without error: sigma = 0, and exactly the
    # tolerance is not past it (the rule's ">" is strict).
    base = baseline(sigma_between=0.0)
    assert verdict(T * 1.10, base) is Verdict.PASS
    assert verdict(T * 1.10 * (1 + HAIR), base) is Verdict.REGRESSION


# -- max_regression and sigma_between: given, stored, default ---------------------------


def test_max_regression_given_to_the_gate_moves_the_line_and_none_takes_the_kinds() -> None:
    # 25% tolerated: exp(ln 1.25 + 3.09 * 0.03) = 1.371415 on a CPU.
    base = baseline()
    assert verdict(1.371415 * T * (1 - HAIR), base, max_regression=0.25) is Verdict.PASS
    assert verdict(1.371415 * T * (1 + HAIR), base, max_regression=0.25) is Verdict.REGRESSION
    assert verdict(1.25 * T, base, max_regression=None) is Verdict.REGRESSION
    # On a GPU the default is 3% and 1% between sessions: exp(ln 1.03 + 0.0309) = 1.062324.
    gpu = baseline(device_id=GPU)
    assert verdict(1.062324 * T * (1 - HAIR), gpu, GPU) is Verdict.PASS
    assert verdict(1.062324 * T * (1 + HAIR), gpu, GPU) is Verdict.REGRESSION


def test_a_stored_sigma_between_replaces_the_default_and_the_spread_measured() -> None:
    # Stored 1% on a CPU: exp(ln 1.1 + 0.0309) = 1.134541 for one session, and the same
    # over eight sessions spread 4% apart, whose spread would pool only with the default.
    one = baseline(sigma_between=0.01)
    assert verdict(1.134541 * T * (1 - HAIR), one) is Verdict.PASS
    assert verdict(1.134541 * T * (1 + HAIR), one) is Verdict.REGRESSION
    offsets = (-0.06, -0.04, -0.02, 0.02, 0.04, 0.06, 0.0, 0.0)
    eight = baseline(*(T * math.exp(o) for o in offsets), sigma_between=0.01)
    # Only the mean's error, sqrt(0.04^2 / 8), joins: sigma = hypot(0.014142, 0.01).
    at = line(0.10, math.hypot(0.04 / math.sqrt(8), 0.01))
    assert at == pytest.approx(1.160476, rel=1e-6)
    assert verdict(at * T * (1 - HAIR), eight) is Verdict.PASS
    assert verdict(at * T * (1 + HAIR), eight) is Verdict.REGRESSION


# -- too noisy -----------------------------------------------------------------------------


def test_too_noisy_begins_where_the_interval_could_no_longer_catch_the_promised_slowdown() -> None:
    # A GPU promises to catch 10% (more than 3 x 3%) 95 times in 100: ln 1.03 +
    # (3.09 + 1.645) sigma <= ln 1.10, so sigma up to 0.0138862 is judged, wider is not.
    largest = (math.log(1.10) - math.log(1.03)) / (3.09 + 1.645)
    assert largest == pytest.approx(0.0138862, rel=1e-5)
    judged = baseline(device_id=GPU, sigma_between=largest * (1 - HAIR))
    unsure = baseline(device_id=GPU, sigma_between=largest * (1 + HAIR))
    assert verdict(T, judged, GPU) is Verdict.PASS
    assert verdict(T, unsure, GPU) is Verdict.TOO_NOISY
    assert judge(exact(T), unsure, device_id=GPU, checksum=CHECKSUM, strict=True).failed
    # The same width around a clear speedup rules out any slowdown: a pass.
    assert verdict(T * 0.8, unsure, GPU) is Verdict.PASS


@pytest.mark.parametrize("slow", [2, 3])
def test_a_few_samples_a_thousand_times_too_long_read_too_noisy_rather_than_raising(
    slow: int,
) -> None:
    # Two or three stalled samples in ten (a 1 ms kernel held up for a second) put the
    # median's error, from the order statistics at ranks 2 and 9, near 255: the interval's
    # high end is e^(3.09 x 255), past what a float holds, and its reach past e^(4.7 x 255).
    # The gate says it cannot tell; it raised OverflowError from math.expm1.
    stalled = Measurement((T,) * (10 - slow) + (1000 * T,) * slow)
    judged = judge(stalled, baseline(), device_id=CPU, checksum=CHECKSUM)
    assert judged.verdict is Verdict.TOO_NOISY
    assert judged.comparison is not None and judged.comparison.high == math.inf
    assert "would not catch even a 10x slowdown" in judged.message


def test_an_interval_whose_reach_alone_passes_a_float_reads_too_noisy() -> None:
    # Two samples in ten 600 times too long: a margin of 3.09 x 599 / 3.92 = 472 fits a
    # float (e^472), but the slowdown it catches 95 times in 100, past e^(472 x 4.735 /
    # 3.09) = e^723, does not: "too noisy" with its interval, not a raise.
    stalled = Measurement((T,) * 8 + (600 * T,) * 2)
    judged = judge(stalled, baseline(), device_id=CPU, checksum=CHECKSUM)
    assert judged.verdict is Verdict.TOO_NOISY
    assert judged.comparison is not None and math.isfinite(judged.comparison.high)
    assert "would not catch even a 10x slowdown" in judged.message
