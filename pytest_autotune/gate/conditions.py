"""What the conditions of a comparison add to its noise: a CPU shared with more runnable
threads than it has, or whose runnable threads waited for it during the measurement, and a
baseline measured on another GPU than this run's.

None shows in one session's samples, which are steady in themselves; each moves the
whole session. So each widens the between-session noise of the comparison
(`RegressionCheck.sigma_between`), and a comparison that can then no longer catch the
slowdown the gate promises says "too noisy", with the reason, rather than guessing.

- **A loaded CPU.** On the shared 2-core VM with the load average at 3.5-8 (other jobs'
  test suites), an unchanged NumPy sum read -13% to -1% against its baseline and a 25%
  slowdown +7% to +35%, while each session's own error was about 2%: 12 of 20 slowdowns
  passed silently (benchmarks/gate_reliability.py, BENCHMARKS.md). The load average per
  CPU shows that state, so a CPU's between-session noise grows beyond one runnable thread
  per CPU (`load_factor`).
- **CPUs contended during the samples.** The 1-minute load average lags a burst of a few
  seconds (another job's test suite starting), so a session measured inside one is judged
  with the quiet noise. Linux's pressure-stall counters (the process's cgroup's
  `cpu.pressure`, else `/proc/pressure/cpu`) count the wall time during which runnable
  threads waited for a CPU; read on both sides of the winner's samples they give the share
  of the measurement so contended (`contention.pressure_share`, `Measurement.pressure`, and the
  records' `contention`). Beside bursts of two spinning processes on the 2-core VM,
  measurements stalled 30-60% moved no more than unstalled ones (the gate compares the
  median of many short samples: a time slice lost to another thread makes the samples it
  hits outliers, not the median), so the share widens the noise only past what was
  measured (`pressure_factor`). The larger of the
  load's and the stalls' factors applies: a steady neighbour shows in the load while two
  CPUs with two runnable threads stall little. Where the counters are absent (macOS,
  Windows, kernels without PSI or with it off) the load alone counts.
- **A neighbour beside the measurement is recorded, not counted.** A process that keeps
  the other of two CPUs busy is no thread too many and makes no thread wait, so neither
  counter above sees it; the records keep the share of the other CPUs' time that other
  processes used during the samples (`contention.neighbours`), the data a rule would be
  fitted to. Doubling the noise from half of it, as tried (774cbd8), cost every catch
  beside a process spinning on the other CPU (0 of 6 25% slowdowns, against 6 of 6 with
  no false failure without it: BENCHMARKS.md, 2026-12-06) and cleared no false failure:
  the +76.9% of an unchanged sum beside a test suite's start still failed under it.
- **A multithreaded winner on contended CPUs.** A call that splits its work over several
  threads (a BLAS matmul past a few hundred kilobytes) waits for the slowest of them, and
  any thread of another process that holds one of its CPUs holds the whole call: on the
  2-core VM a 256x256 `dot` on two OpenBLAS threads read 1.02-1.32 times its time alone
  beside one spinning process and 1.54-1.66 times beside three, while a one-thread sum did
  not move (benchmarks/cpu_threads_contention.py); in three processes of an earlier probe
  beside the gate benchmark's load it read 12-48 ms against 0.55 ms, and in a user's `-n 2
  --autotune` beside a test suite a 256x256 matmul read +891% against its baseline, while
  the one-thread calibration read moved 5%. No factor of the quiet noise
  describes that, so such a measurement (`Measurement.helpers`, the CPU time of the
  process's other threads over the samples' wall time) is given `CONTENDED_THREADS_SIGMA`
  of noise once the CPUs were contended at all.
- **A calibration read that moved far.** Dividing by the read takes the machine's state
  out only as far as the read follows the winner, and it follows in part: over the 475
  sessions of three 100-run conditions on the 2-core VM, where the read moved by r the
  sum moved by 0.4-0.8 r, and in the one session whose read moved +62% the 25% slower
  winner moved +29%, so its calibrated change read -0.9% and the slowdown passed
  silently. The correction's own error, `READ_TRACKING` of it, joins the noise once the
  read moved by `READ_MOVE` or more.
- **Another GPU of the same model.** The committed H200 baselines, recorded on one lent
  machine, read up to +11.9% slower on three of five others for unchanged memory-bound
  kernels (softmax, sum), with the peak probe moving 0-2%: machines of one model differ
  by more than a 3% tolerance. A baseline whose device block names another GPU uuid than
  this run's adds `SIGMA_BETWEEN_MACHINES` (12% is three of it).
- **Another CPU of a runner class.** Under `--autotune-runner` the baselines of a class of
  machines (a hosted runner, whose CPU model changes between runs) serve every machine of
  it, and the file's device block names the one its last update measured on
  (`measured_on`). Another CPU model runs an unchanged kernel at another speed, by far more
  than one machine's sessions move: compared as if it were the same machine, a model 35%
  slower for the kernel failed unchanged code as a +35% regression, with nothing in the
  message to say why. A baseline measured on another device than this run's adds
  `SIGMA_BETWEEN_CPU_CLASSES`, and the message names both.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from pytest_autotune.gate.contention import HELPERS_SHARE
from pytest_autotune.gate.rules import DEFAULT_SIGMA_BETWEEN, device_kind

if TYPE_CHECKING:
    from pytest_autotune.gate.baseline import Baseline
    from pytest_autotune.gate.rules import RegressionCheck
    from pytest_autotune.gate.samples import Measurement

SIGMA_BETWEEN_MACHINES = 0.04
"""The spread of ln(time) between GPUs of one model for one kernel (see the module
docstring): the +11.9% seen is three of it."""

SIGMA_BETWEEN_CPU_CLASSES = 0.12
"""The spread of ln(time) between the CPU models of one runner class for one kernel: not
measured here (one machine), but set so that an unchanged kernel up to about 1.5 times
slower on another model reads "too noisy", not a regression, while a kernel twice as slow
still fails (ln 2 is past the tolerance and 3.09 of it)."""

READ_TRACKING = 0.5
"""The share of the calibration read's move against the baseline's that a calibrated
change may carry as error: on the 2-core VM the winner moved 0.4-0.8 times as far as the
read, and about half as far in the read's largest move (see the module docstring)."""

READ_MOVE = 0.02
"""The move of the calibration read (on the log scale) past which its error widens the
noise: below, `READ_TRACKING` of it is under a third of the 3% calibrated noise and would
only add a line to every message."""

THREADS_PRESSURE = 0.1
"""The share of a multithreaded winner's measurement stalled for a CPU from which its CPUs
count as contended (`Measurement.pressure`): on the 2-core VM the two-thread `dot` read
0.01 alone, 0.50 beside one spinning process and 1.00 beside three."""

CONTENDED_THREADS_SIGMA = 1.5
"""The between-session noise of ln(time) of a multithreaded winner on contended CPUs: an
unchanged two-thread 256x256 `dot` read from 1.02 to 87 times its time alone there (see
the module docstring), a tail no sd of the quiet kind describes; 1.5 puts the 87 times
(ln 87 = 4.5) at three sigmas, so such a comparison says "too noisy" and fails only a
slowdown past a hundredfold."""

PRESSURE_MEASURED = 0.6
"""The largest share of a measurement stalled for a CPU at which the noise was measured
not to grow (`pressure_factor`): one runnable thread too many on two CPUs reads 0.5."""


@dataclass(frozen=True, slots=True)
class Condition:
    """A condition of one comparison that widened its noise: why, and what would help."""

    reason: str
    helps: str


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


def pressure_factor(share: float | None) -> float:
    """By how much the between-session noise of a CPU timing grows when runnable threads
    waited for a CPU `share` of its measurement (`contention.pressure_share`): not at all up to
    `PRESSURE_MEASURED`, twice beyond, as the load's factor past one thread too many.

    Measured on the shared 2-core VM (benchmarks/gate_reliability.py --condition bursty,
    BENCHMARKS.md, issue 9, 2026-12-01): beside bursts of two spinning processes, the
    measurements stalled over 30% of their samples (51 of 300) moved by an rms of 2.7%
    (sum), 2.4% (transpose) and 5.3% (matmul) about their group's mean, those stalled
    under 2% by 3.2%, 1.8% and 6.0%, and those of a run without bursts by 3.6%, 4.3% and
    6.9%; an earlier, noisier bursty run showed the same (stalled 6.2% for sum, unstalled
    8.0%), whether the calibration read scaled them or not. The gate compares the median
    of many short samples (under a millisecond here), and a time slice lost to another
    thread makes the samples it hits outliers, not the median; what moves a session's
    change comes from elsewhere, and no stall counter sees it. Past 0.6 (more than one
    thread too many on two CPUs for the whole measurement) too few measurements were
    taken to tell (10 of 780), so the noise counts twice there, as it does from a quarter
    thread too many by the load (`load_factor`)."""
    if share is None or not math.isfinite(share) or share <= PRESSURE_MEASURED:
        return 1.0
    return 2.0


def widen(
    check: RegressionCheck,
    current: Measurement,
    baseline: Baseline,
    machine: str | None,
    calibrated: bool = False,
    baseline_winner: Measurement | None = None,
) -> tuple[RegressionCheck, tuple[Condition, ...]]:
    """`check` with its between-session noise widened for this comparison's conditions,
    and the conditions that widened it (none: `check` itself). `calibrated`: the time is
    scaled by the calibration read (`Measurement.calibrated_against`, as the caller found).
    `baseline_winner` is the baseline's winner measured in this run, where tuning picked
    another candidate that measured faster (`baseline_winner.weigh_slip`): the comparison
    then stands for the baseline's winner too, and its conditions are the comparison's."""
    factor, error, conditions = _cpus_state(current, baseline_winner)
    sigma = math.hypot(check.sigma_between * factor, error)
    read = _read_condition(current, baseline) if calibrated else None
    for added in (read, _other_machine(baseline, machine)):
        if added is not None:
            error, condition = added
            sigma = math.hypot(sigma, error)
            conditions.append(condition)
    return (replace(check, sigma_between=sigma) if conditions else check), tuple(conditions)


def _other_machine(baseline: Baseline, machine: str | None) -> tuple[float, Condition] | None:
    """The noise between the machine `baseline` was last recorded on and this run's
    (`machine`), and the condition naming both: two CPU models (under a runner class, or a
    folder that --autotune-runner names from another machine), or two GPUs of one model;
    None where either is unknown, or they are one."""
    if not machine or not baseline.machine or machine == baseline.machine:
        return None
    if device_kind(baseline.device_id) == "cpu":
        return SIGMA_BETWEEN_CPU_CLASSES, Condition(
            f"the baseline was last recorded on another machine than this run's"
            f" ({baseline.machine}, this run on {machine}), and CPU models run one"
            " kernel at speeds apart by far more than one machine's sessions",
            "baselines recorded on this machine's model too (--autotune-update on"
            " it, so that the baseline's sessions span the class), or the gate on one"
            " kind of machine (a self-hosted runner)",
        )
    return SIGMA_BETWEEN_MACHINES, Condition(
        f"the baseline was measured on another GPU ({baseline.machine}, this run on"
        f" {machine}), and GPUs of one model differ by up to about 12%",
        "a baseline recorded on this machine (--autotune-update here), or the gate"
        " always on the machine that recorded it",
    )


def floor_noise(current: Measurement) -> tuple[float, tuple[Condition, ...]]:
    """The noise of ln(time) that the CPUs' state put into `current`, and the conditions
    that did; (0, ()) on free CPUs and on a GPU. A floor is judged on one session's time
    with no baseline beside it, and a busy neighbour slowed an unchanged CPU kernel by
    20-40% (a NumPy sum 20.4 us alone, 24.7 us beside two spinning processes): a floor
    missed by less than 3.09 of this is the machine's as much as the kernel's, which the
    gate says rather than failing (`judge`). Free CPUs keep the floor exact."""
    factor, error, conditions = _cpus_state(current)
    scaled = DEFAULT_SIGMA_BETWEEN["cpu"] * factor if factor > 1.0 else 0.0
    return math.hypot(scaled, error), tuple(conditions)


def _cpus_state(
    current: Measurement, baseline_winner: Measurement | None = None
) -> tuple[float, float, list[Condition]]:
    """What the CPUs' state during `current` does to a noise (`widen`, `floor_noise`): the
    load's or the stalls' factor (1.0 where neither), the error a multithreaded winner's
    contention adds (`current`'s, else `baseline_winner`'s; 0.0 where none), and the
    conditions that did either."""
    factor, error, conditions = 1.0, 0.0, []
    cpu = _cpu_condition(current)
    if cpu is not None:
        factor, condition = cpu
        conditions.append(condition)
    threads = _threads_condition(current)
    if threads is None and baseline_winner is not None:
        threads = _threads_condition(baseline_winner, BASELINE_WINNER)
    if threads is not None:
        error, condition = threads
        conditions.append(condition)
    return factor, error, conditions


def contended(current: Measurement) -> tuple[Condition, ...]:
    """The states of the CPUs that widen the noise of any comparison of `current`, whatever
    its baseline (oversubscribed or contended CPUs, a multithreaded winner on contended
    CPUs); empty when there were none, and always on a GPU. An update measured so is
    not a baseline to keep (`update_policy.settle_update`)."""
    found = (_cpu_condition(current), _threads_condition(current))
    return tuple(state[1] for state in found if state is not None)


BASELINE_WINNER = (
    "the baseline's winner, which measured slower in this run than the candidate compared,"
)
"""Who a threads condition names where it is the baseline's winner's (`widen`): a winner
on two threads, crippled by a busy neighbour, leaves the pick of a one-thread candidate,
which then reads as the group's regression (a 256x256 matmul, 215 us in the baseline:
its BLAS winner 15.6 ms here, the `einsum` picked 1.9 ms, "+1107%" on unchanged code)."""


def _threads_condition(
    current: Measurement, whose: str = "the winner"
) -> tuple[float, Condition] | None:
    """The noise of a multithreaded winner measured on contended CPUs, and the condition
    naming both; None when the winner ran on one thread or its CPUs were free (a
    stall share under `THREADS_PRESSURE`, or without stall counters a load up to one
    runnable thread per CPU). `whose` names the call measured (`BASELINE_WINNER`)."""
    helpers = current.helpers
    if helpers is None or not math.isfinite(helpers) or helpers < HELPERS_SHARE:
        return None
    if current.pressure is not None:
        if not current.pressure >= THREADS_PRESSURE:
            return None
        state = f"runnable threads waited for a CPU {current.pressure:.0%} of the measurement"
    elif current.load is not None and current.load > 1.0:
        state = f"{_times(current.load)} runnable threads per CPU"
    else:
        return None
    return CONTENDED_THREADS_SIGMA, Condition(
        f"{whose} runs on several threads (its process's other threads were busy"
        f" {helpers:.0%} of its samples' time) on contended CPUs ({state}), and a"
        f" multithreaded call waits for whichever of its threads another process holds up",
        "a runner with free CPUs for the gate (no jobs beside it), or the kernel's thread"
        " count fixed below the CPUs it has (OMP_NUM_THREADS, threadpoolctl;"
        " NUMBA_NUM_THREADS for Numba's parallel=True, which OMP_NUM_THREADS leaves alone)",
    )


def _read_condition(current: Measurement, baseline: Baseline) -> tuple[float, Condition] | None:
    """The error a change scaled by the calibration read carries from its correction, and
    the condition naming the read's move; None when the read moved less than `READ_MOVE`."""
    if current.calibration is None:
        return None
    _, then = baseline.typical(calibrated=True)
    if then is None:
        return None
    move = math.log(current.calibration.median / then)
    if abs(move) < READ_MOVE:
        return None
    return READ_TRACKING * abs(move), Condition(
        f"the calibration read of the inputs moved {math.expm1(move):+.0%} against the"
        f" baseline's, and a read follows the kernel only in part, so"
        f" {READ_TRACKING:.0%} of that move counts as noise",
        "a run when the machine is as fast as when the baseline was recorded (a quieter"
        " runner, or a rerun)",
    )


def _cpu_condition(current: Measurement) -> tuple[float, Condition] | None:
    """How much the CPUs' state widens the noise, the larger of the load's and the stalls'
    factors, and the condition naming each state that widened it; None when neither did."""
    load, pressure = load_factor(current.load), pressure_factor(current.pressure)
    reasons = []
    if pressure > 1.0:
        assert current.pressure is not None
        reasons.append(
            "the CPUs were contended (runnable threads waited for a CPU"
            f" {current.pressure:.0%} of the measurement)"
        )
    if load > 1.0:
        assert current.load is not None  # a factor past one is a load's
        reasons.append(
            f"the CPUs were oversubscribed ({_times(current.load)} runnable threads per CPU)"
        )
    if not reasons:
        return None
    factor = max(load, pressure)
    return factor, Condition(
        f"{' and '.join(reasons)}, so the between-session noise counts {_times(factor)} times",
        "a runner with free CPUs: fewer jobs beside the gate"
        # Workers only: a serial run was told to use fewer of the workers it had none of.
        + (", or fewer -n workers" if os.environ.get("PYTEST_XDIST_WORKER") else ""),
    )


def _times(value: float) -> str:
    """A load or a factor past one, to one decimal, or more where one would read 1.0: "1.0
    runnable threads per CPU, so the noise counts 1.0 times" said that nothing happened, of
    a session an update then refused."""
    for decimals in (1, 2, 3):
        if round(value, decimals) != 1.0:
            break
    return f"{value:.{decimals}f}"
