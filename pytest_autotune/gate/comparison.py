"""The comparison of a winner with a comparable baseline (`compare`): the change against it,
its noise widened for the conditions it was measured in, the message of a regression, and
what a comparison too wide to judge says instead (why, and what would help).
"""

from __future__ import annotations

from pytest_autotune.calibration import MIN_READ_SECONDS, long_enough
from pytest_autotune.gate.baseline import Baseline
from pytest_autotune.gate.conditions import Condition, widen
from pytest_autotune.gate.rules import NORMALISE_BY_PEAKS, RegressionCheck, device_kind
from pytest_autotune.gate.samples import Measurement
from pytest_autotune.gate.verdicts import Comparison
from pytest_autotune.report.figures import format_change, format_fraction, format_interval
from pytest_autotune.tune.log import format_duration
from pytest_autotune.tune.peaks import Peaks


def compare(
    current: Measurement,
    baseline: Baseline,
    device_id: str,
    peaks: Peaks | None,
    max_regression: float | None,
    machine: str | None = None,
    baseline_winner: Measurement | None = None,
) -> tuple[Comparison, str | None, str | None]:
    """The comparison with a comparable baseline, the regression message and the too-noisy
    message (each None when it does not apply; too noisy only without a regression)."""
    calibrated = current.calibrated_against(baseline)
    check, conditions = widen(
        RegressionCheck.for_device(
            device_id,
            max_regression,
            baseline.sigma_between,
            calibrated=calibrated,
            measured=baseline.spread(calibrated),
        ),
        current,
        baseline,
        machine,
        calibrated,
        baseline_winner,
    )
    normalise = peaks is not None and NORMALISE_BY_PEAKS[device_kind(device_id)]
    ratio = baseline.peak_ratio(peaks) if normalise and peaks is not None else 1.0
    comparison = check.delta(current, baseline, ratio)
    regression_message = check.fails(current, baseline, ratio)
    raw = None if calibrated else _why_raw(current, baseline)
    if regression_message is not None and raw:
        regression_message += f"; {raw}"
    if regression_message is not None and conditions:
        # Failed with its noise widened: said, so that a user weighing a failure on a busy
        # runner sees that the gate counted the load it saw (a record held the load, and
        # the message said nothing of it).
        regression_message += "".join(f"; counted in its noise: {c.reason}" for c in conditions)
    noisy_message: str | None = None
    # An interval wholly under the tolerance already says "not slower": a clear speedup
    # (-38% [-60%, -5%]) is a pass, not "too noisy" (which fails under --autotune-strict).
    unsure = comparison.high >= check.max_regression
    if regression_message is None and unsure and check.too_noisy(comparison, device_id):
        noisy_message = _too_noisy(
            check,
            comparison,
            current,
            baseline,
            ratio,
            conditions,
            raw,
            device_id,
            max_regression,
            calibrated,
        )
    return comparison, regression_message, noisy_message


def _too_noisy(
    check: RegressionCheck,
    comparison: Comparison,
    current: Measurement,
    baseline: Baseline,
    ratio: float,
    conditions: tuple[Condition, ...],
    raw: str | None,
    device_id: str,
    max_regression: float | None,
    calibrated: bool,
) -> str:
    """What a comparison too wide to judge says (`compare`): its interval and figures, the
    smallest slowdown it would catch, why it is that wide, and what would help."""
    single = _single_samples(current, baseline, calibrated)
    stored = _stored_noise(baseline, device_id, max_regression, calibrated)
    conditions = (*conditions, stored) if stored is not None else conditions
    return (
        f"too noisy to judge: {format_interval(comparison)}:"
        f" {check.figures(current, baseline, ratio)};"
        f" {single or _reach(check.catches(comparison))}"
        f" (tolerated {format_fraction(check.max_regression)})"
        + "".join(f"; {c.reason}" for c in conditions)
        + (f"; {raw}" if raw else "")
        + "; what would help: "
        + (
            "; ".join(
                [
                    "a measurement of several samples on each side (--autotune and"
                    " --autotune-update measure a winner 10 times or more)",
                    *(c.helps for c in conditions),
                ]
            )
            if single
            else "; ".join(c.helps for c in conditions)
            or "more baseline sessions (run --autotune-update again), a quieter runner,"
            " or a longer measurement"
        )
    )


def _stored_noise(
    baseline: Baseline, device_id: str, max_regression: float | None, calibrated: bool
) -> Condition | None:
    """The between-session noise the baseline's cache file sets by hand (its top-level
    `sigma_between`), where it is wider than the one the gate would have used without it
    (the default, pooled with the sessions' spread); None otherwise. It replaces both, so
    where it leaves a comparison too noisy, more sessions or a quieter runner do not help:
    a file set to 10% read "too noisy" on every group, and the message named only those."""
    stored = baseline.sigma_between
    if stored is None:
        return None
    measured = baseline.spread(calibrated)
    default = RegressionCheck.for_device(
        device_id, max_regression, calibrated=calibrated, measured=measured
    ).sigma_between
    if stored <= default:
        return None
    where = baseline.source or "the cache file"
    return Condition(
        f"the between-session noise is the {format_fraction(stored)} that {where} sets"
        f' (its "sigma_between"), in place of the {format_fraction(default)} the gate would'
        " use",
        f'a smaller "sigma_between" in {where}, or none',
    )


def _single_samples(current: Measurement, baseline: Baseline, calibrated: bool) -> str | None:
    """Why a comparison has no interval, where a side of it is a single sample (a cache
    entry or record a program's tuning wrote can keep one): one sample has no spread to
    measure its error by. None where every side has several. Said in place of "would not
    catch even a 10x slowdown", whose advice (more sessions, a quieter runner) would not
    help."""
    sides = [
        name
        for name, samples in (
            ("this run's winner", current),
            ("the baseline's winner", baseline),
            ("this run's calibration read", current.calibration if calibrated else None),
            ("the baseline's calibration read", baseline.calibration if calibrated else None),
        )
        if samples is not None and len(samples.samples) < 2
    ]
    if not sides:
        return None
    are = "is a single sample" if len(sides) == 1 else "are single samples"
    return (
        f"{' and '.join(sides)} {are}, whose error cannot be measured, so the change has no"
        " interval"
    )


def _why_raw(current: Measurement, baseline: Baseline) -> str | None:
    """Why a time compared raw (the caller's judgement) was, though both sides carry a
    calibration read: the reads are of two kinds (the inputs read another number of times,
    as by a version that read small inputs once), and dividing by them would divide by two
    workloads; or a read is too short to time the machine (`calibration.MIN_READ_SECONDS`).
    None where another reason kept it raw (a read the baseline's sessions show not following
    the winner)."""
    mine, theirs = current.calibration, baseline.calibration
    if mine is None or theirs is None:
        return None
    if mine.kind != theirs.kind:
        return (
            f"compared raw: the baseline's calibration read is of another kind ({theirs.kind};"
            f" this run's {mine.kind}), and an --autotune-update records one of this run's"
        )
    short = [
        f"{side} {format_duration(read.median)}"
        for side, read in (("here", mine), ("in the baseline", theirs))
        if not long_enough(read.median)
    ]
    if short:
        # A tiny input's read is mostly the calls into NumPy (calibration.py): a user saw
        # a raw +54% of unchanged code with nothing to say that no scale had been applied.
        return (
            f"compared raw: the calibration read of its inputs is too short to follow the"
            f" machine ({', '.join(short)}; under {format_duration(MIN_READ_SECONDS)}), so a"
            " slow spell of this CPU reads as the kernel's"
        )
    return None


FAR_REACH = 9.0
"""A slowdown (as a fraction: 9.0 is a tenfold time) past which "would catch only past
+125254%" stops meaning anything to a reader: say that not even this one is caught."""


def _reach(catches: float) -> str:
    """What the smallest slowdown a comparison catches 95 times in 100 says to a reader."""
    if catches > FAR_REACH:
        return (
            f"this comparison would not catch even a {FAR_REACH + 1:.0f}x slowdown 95 times in 100"
        )
    return f"this comparison would catch 95 in 100 slowdowns only past {format_change(catches)}"
