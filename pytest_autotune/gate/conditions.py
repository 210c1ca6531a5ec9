"""What the conditions of a comparison add to its noise: a CPU shared with more runnable
threads than it has, and a baseline measured on another GPU than this run's.

Neither shows in one session's samples, which are steady in themselves; each moves the
whole session. So each widens the between-session noise of the comparison
(`RegressionCheck.sigma_between`), and a comparison that can then no longer catch the
slowdown the gate promises says "too noisy", with the reason, rather than guessing.

- **A loaded CPU.** On the shared 2-core VM with the load average at 3.5-8 (other jobs'
  test suites), an unchanged NumPy sum read -13% to -1% against its baseline and a 25%
  slowdown +7% to +35%, while each session's own error was about 2%: 12 of 20 slowdowns
  passed silently (benchmarks/gate_reliability.py, BENCHMARKS.md). The load average per
  CPU shows that state, so a CPU's between-session noise grows beyond one runnable thread
  per CPU (`load_factor`).
- **Another GPU of the same model.** The committed H200 baselines, recorded on one lent
  machine, read up to +11.9% slower on three of five others for unchanged memory-bound
  kernels (softmax, sum), with the peak probe moving 0-2%: machines of one model differ
  by more than a 3% tolerance. A baseline whose device block names another GPU uuid than
  this run's adds `SIGMA_BETWEEN_MACHINES` (12% is three of it).
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pytest_autotune.gate.baseline import Baseline
    from pytest_autotune.gate.rules import RegressionCheck
    from pytest_autotune.gate.samples import Measurement

SIGMA_BETWEEN_MACHINES = 0.04
"""The spread of ln(time) between GPUs of one model for one kernel (see the module
docstring): the +11.9% seen is three of it."""


@dataclass(frozen=True, slots=True)
class Condition:
    """A condition of one comparison that widened its noise: why, and what would help."""

    reason: str
    helps: str


def load_per_cpu() -> float | None:
    """The 1-minute load average over the CPUs this process may run on; None where the
    platform has no load average (Windows)."""
    try:
        load = os.getloadavg()[0]
    except (AttributeError, OSError):
        return None
    try:
        cpus = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cpus = os.cpu_count() or 1
    return load / max(cpus, 1)


def load_factor(load: float | None) -> float:
    """By how much the between-session noise of a CPU timing grows at `load` runnable
    threads per CPU: not at all up to one; beyond, at once to twice (at a quarter of a
    thread too many) and then in proportion to the load. Measured on the 2-core VM: with one
    core kept busy by a neighbour (1.25 per CPU) the sessions' change had an sd of 5.5%
    against the 3% assumed, and 16 of 20 25% slowdowns passed; at 1.75-4 per CPU an sd of
    4.2% with the baseline 6.8% off: about twice the quiet noise from the first thread too
    many, however many."""
    if load is None or not math.isfinite(load) or load <= 1.0:
        return 1.0
    return max(load, 1.0 + min(1.0, 4.0 * (load - 1.0)))


def widen(
    check: RegressionCheck,
    current: Measurement,
    baseline: Baseline,
    machine: str | None,
) -> tuple[RegressionCheck, tuple[Condition, ...]]:
    """`check` with its between-session noise widened for this comparison's conditions,
    and the conditions that widened it (none: `check` itself)."""
    sigma, conditions = check.sigma_between, []
    factor = load_factor(current.load)
    if factor > 1.0:
        sigma *= factor
        conditions.append(
            Condition(
                f"the CPUs were oversubscribed ({current.load:.1f} runnable threads per CPU,"
                f" so the between-session noise counts {factor:.1f} times)",
                "a runner with free CPUs (fewer jobs beside the gate, or fewer -n workers)",
            )
        )
    if machine and baseline.machine and machine != baseline.machine:
        sigma = math.hypot(sigma, SIGMA_BETWEEN_MACHINES)
        conditions.append(
            Condition(
                f"the baseline was measured on another GPU ({baseline.machine}, this run on"
                f" {machine}), and GPUs of one model differ by up to about 12%",
                "a baseline recorded on this machine (--autotune-update here), or the gate"
                " always on the machine that recorded it",
            )
        )
    return (replace(check, sigma_between=sigma) if conditions else check), tuple(conditions)
