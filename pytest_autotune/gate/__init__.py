"""The CI gate: measure the winner precisely, compare it with the committed baseline, judge.

A flaky gate is worse than no gate (people learn to rerun until it is green), so every rule
here errs on the side of passing unless the evidence is strong: the comparison is on the log
scale with an explicit noise model, a baseline that measured something else is "not
comparable" rather than a failure, an error is never reported as a regression, and a
suspected failure is measured again before it counts.

One module a concern: `measure` samples the winner, `samples` holds the measured values,
`baseline` reads the committed one out of a cache entry, `rules` are the checks with their
defaults, `contention` how contended the CPUs were during the samples, `conditions` what
that or another machine adds to the noise, `verdicts` what the gate concludes, `comparable`
whether a baseline can judge a run at all, `comparison` the change against one that can,
with its messages, and `judge` combines the checks into one `GroupVerdict` per tuned group.
The figures in its messages are formatted by `report.figures`, which the reports share.
Nothing here imports pytest: the plugin feeds it.
This package re-exports the public names the one `gate` module had (the measuring, the
baseline, the rules, the samples, the verdicts and `judge`); the helpers of `contention`,
`conditions`, `comparable` and `comparison` are the gate's own and are imported from there.
"""

from __future__ import annotations

from pytest_autotune.gate.baseline import MAX_BASELINE_SESSIONS, Baseline, BaselineError
from pytest_autotune.gate.judge import judge
from pytest_autotune.gate.measure import (
    DEFAULT_MAX_SAMPLES,
    DEFAULT_MIN_SAMPLES,
    DEFAULT_TARGET_RSE,
    DEFAULT_TIME_CAP,
    measure_precisely,
    measure_winner,
)
from pytest_autotune.gate.rules import (
    CALIBRATED_MAX_REGRESSION,
    CALIBRATED_SIGMA_BETWEEN,
    DEFAULT_MAX_REGRESSION,
    DEFAULT_SIGMA_BETWEEN,
    DEFAULT_Z,
    NOISY_FACTOR,
    NORMALISE_BY_PEAKS,
    PRIOR_SESSIONS,
    PROMISED_CATCH,
    DeviceKind,
    FloorCheck,
    RegressionCheck,
    device_kind,
    runner_device_id,
)
from pytest_autotune.gate.samples import BaselineSession, Calibration, Measurement
from pytest_autotune.gate.verdicts import UPDATED_MESSAGE, Comparison, GroupVerdict, Verdict
from pytest_autotune.report.figures import format_change, format_fraction, format_interval

__all__ = [
    "CALIBRATED_MAX_REGRESSION",
    "CALIBRATED_SIGMA_BETWEEN",
    "DEFAULT_MAX_REGRESSION",
    "DEFAULT_MAX_SAMPLES",
    "DEFAULT_MIN_SAMPLES",
    "DEFAULT_SIGMA_BETWEEN",
    "DEFAULT_TARGET_RSE",
    "DEFAULT_TIME_CAP",
    "DEFAULT_Z",
    "MAX_BASELINE_SESSIONS",
    "NOISY_FACTOR",
    "NORMALISE_BY_PEAKS",
    "PRIOR_SESSIONS",
    "PROMISED_CATCH",
    "UPDATED_MESSAGE",
    "Baseline",
    "BaselineError",
    "BaselineSession",
    "Calibration",
    "Comparison",
    "DeviceKind",
    "FloorCheck",
    "GroupVerdict",
    "Measurement",
    "RegressionCheck",
    "Verdict",
    "device_kind",
    "format_change",
    "format_fraction",
    "format_interval",
    "judge",
    "measure_precisely",
    "measure_winner",
    "runner_device_id",
]
