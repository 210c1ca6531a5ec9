"""Judging one group: its winner's measurement against its baseline, by the rules, into one
`GroupVerdict`.

Every rule errs on the side of passing unless the evidence is strong: a baseline that
measured something else is "not comparable" rather than a failure, an error is never
reported as a regression, and a suspected failure is measured again before it counts.
Whether the baseline can judge the run at all is `gate.comparable`'s question; the change
against one that can, with its messages, is `gate.comparison`'s.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace

from pytest_autotune.gate.baseline import Baseline
from pytest_autotune.gate.comparable import no_baseline_message, not_comparable
from pytest_autotune.gate.comparison import compare
from pytest_autotune.gate.conditions import floor_noise
from pytest_autotune.gate.rules import DEFAULT_Z, FloorCheck, RegressionCheck
from pytest_autotune.gate.samples import Measurement
from pytest_autotune.gate.verdicts import UPDATED_MESSAGE, Comparison, GroupVerdict, Verdict
from pytest_autotune.report.figures import format_change
from pytest_autotune.tune.bounds import (
    COMPUTE,
    MEMORY,
    Bounds,
    Thresholds,
    Work,
    binding_resource,
    fraction_of_roof,
)
from pytest_autotune.tune.errors import AutotuneError, AutotuneErrorKind
from pytest_autotune.tune.peaks import Peaks


def judge(
    current: Measurement | None,
    baseline: Baseline | None,
    *,
    device_id: str,
    checksum: str,
    work: Work | None = None,
    peaks: Peaks | None = None,
    thresholds: Thresholds | None = None,
    dtype: str | None = None,
    launch_overhead: float = 0.0,
    max_regression: float | None = None,
    error: str | None = None,
    strict: bool = False,
    update: bool = False,
    remeasure: Callable[[], Measurement] | None = None,
    confirmations: int = 1,
    baseline_devices: Sequence[str] = (),
    machine: str | None = None,
    candidates: Sequence[str] = (),
    unreadable: str | None = None,
    baseline_winner: Measurement | None = None,
    failed_here: str | None = None,
    missing_file: str | None = None,
    bounds: Bounds | None = None,
    thread_env: Mapping[str, str] | None = None,
) -> GroupVerdict:
    """Judge one group: its winner's `current` measurement against the `baseline`.

    `error` (or no measurement) makes the verdict ERROR whatever the baseline says: a group
    that measured nothing has no speed to compare. `peaks` are this run's; with `work` they
    give the fraction of roof, with `thresholds` too the floor, and with the baseline's
    peak the normalisation of the time. `max_regression` None takes the device kind's
    default; `sigma_between` comes from the baseline's file, else the kind's default.
    `baseline_devices` are the devices that have a baseline of this test, which a
    NO_BASELINE verdict names; `candidates` this run's names, with which a baseline tuned
    over another list says what changed; `unreadable` what a NO_BASELINE verdict says
    instead where the baseline is there and does not read (and what to do); `missing_file`
    the cache file looked in, where there is none; `failed_here` why the baseline's
    winner, which failed in this run, leaves the group NOT_COMPARABLE
    (`baseline_winner.winner_failed_here`); `bounds` this run's, which say what work it
    measured: a baseline of other work is NOT_COMPARABLE (`Baseline.other_work`), as is
    one measured under other `thread_env` caps than this run's (None: unknown).
    `machine` is this run's physical device (a GPU's uuid): a baseline from another one, or
    a measurement on oversubscribed CPUs, widens the noise (`gate.conditions`), as does a
    `baseline_winner` (the baseline's winner measured here, slower than the `current`
    candidate tuning picked) that ran on several threads on contended CPUs. A
    comparison too wide to catch the slowdown the gate is built to catch is TOO_NOISY, a
    failure only when `strict`, as a missing baseline is.

    A suspected failure (REGRESSION or FLOOR, or an update's change that would start a new
    baseline: `_suspected`) is measured again with `remeasure`, up to `confirmations` times,
    and stands only if every re-measurement reads it too: the first that does not decides. A
    re-measurement alone decides, rather than its samples pooled with the first: what a
    confirmation guards against is a transient (a clock dip, another process on the device)
    that shifted the whole first measurement, and pooling would carry half of that shift
    into the verdict. An independent second measurement of an unchanged kernel fails with
    the same small probability as the first, so the pair rarely fails together, while a real
    slowdown shows in both. A winner that fails while re-measured (`AutotuneError`) gives
    ERROR, never a regression.
    """
    if error is not None or current is None:
        return GroupVerdict(Verdict.ERROR, error or "nothing was measured", None, None, True)
    # The compute roof of the work's own arithmetic (`Work.dtype`), fp32 without one.
    unit = dtype if dtype is not None else work.unit if work is not None else "fp32"

    def once(measurement: Measurement, remeasured: bool) -> GroupVerdict:
        return _judge_once(
            measurement,
            baseline,
            device_id=device_id,
            checksum=checksum,
            work=work,
            peaks=peaks,
            floor=(
                FloorCheck(thresholds, unit, launch_overhead) if thresholds is not None else None
            ),
            dtype=unit,
            max_regression=max_regression,
            strict=strict,
            update=update,
            remeasured=remeasured,
            baseline_devices=baseline_devices,
            machine=machine,
            candidates=candidates,
            unreadable=unreadable,
            baseline_winner=baseline_winner,
            failed_here=failed_here,
            missing_file=missing_file,
            bounds=bounds,
            thread_env=thread_env,
        )

    verdict = once(current, remeasured=False)
    reads = [verdict]
    # An update whose baseline's winner failed or is skipped here starts a new baseline
    # whatever a re-measurement reads: its change is against another kernel's time.
    confirm = remeasure is not None and not (update and failed_here is not None)
    # The tolerance an update's speedup must pass to start a new baseline, as
    # `update_policy.history` decides it: a smaller one joins the old baseline anyway.
    tolerance = (
        RegressionCheck.for_device(
            device_id, max_regression, calibrated=current.calibrated_against(baseline)
        ).max_regression
        if baseline is not None
        else 0.0
    )
    for _ in range(confirmations if confirm else 0):
        if not _suspected(verdict, tolerance):
            break
        assert remeasure is not None
        try:
            again = remeasure()
        except AutotuneError as exc:
            return _raised_again(exc, verdict, current)
        read = once(again, remeasured=True)
        reads.append(read)
        if _suspected(read, tolerance) and _slower(read) != _slower(verdict):
            # A slow spell read, then a fast one (or the reverse): were the loop to go
            # on, the last read alone would start a new baseline the one before it
            # contradicted. Neither change is confirmed, and the update keeps the
            # committed baseline (`update_policy.settle_update`).
            verdict = replace(read, unconfirmed=True)
            break
        verdict = read
    return _confirmed(verdict, reads, tolerance)


def _slower(verdict: GroupVerdict) -> bool:
    """Whether a suspected verdict (`_suspected`) is a slowdown, rather than an update's
    speedup."""
    comparison = verdict.comparison
    return verdict.verdict is not Verdict.UPDATED or (comparison is not None and comparison.failed)


def _raised_again(exc: AutotuneError, verdict: GroupVerdict, current: Measurement) -> GroupVerdict:
    """The ERROR of a winner that raised while re-measured to confirm `verdict`, a suspected
    failure of its `current` measurement: never a regression."""
    return GroupVerdict(
        Verdict.ERROR,
        "the winner failed while re-measured to confirm a suspected failure: "
        # A raise in its words, as its own test fails with; another kind named.
        + (f"{exc.name}: {exc.message}" if exc.kind is AutotuneErrorKind.UNKNOWN else str(exc)),
        None,
        verdict.fraction_of_roof,
        True,
        current,
        raised=exc,
    )


def _suspected(verdict: GroupVerdict, tolerance: float) -> bool:
    """Whether a verdict is measured again before it stands: a failure, and an update's
    change that would start a new baseline from this session alone (`update_policy.history`),
    a slowdown past the tolerance or a speedup (its whole interval faster by more than
    `tolerance`). On a VM in a slow phase an update
    read +131% of unchanged code, and that session became the baseline that every later
    comparison, a real slowdown's too, was measured against (BENCHMARKS.md, 2026-12-02);
    in a fast spell another read -43%, and unchanged code then failed at +110% in nine of
    eleven runs. Confirmed like a failure, a spell passes and the session joins the
    baseline with the re-measurement, while a change of the code is there every time and
    starts its new baseline as before."""
    if verdict.verdict in (Verdict.REGRESSION, Verdict.FLOOR):
        return True
    comparison = verdict.comparison
    return (
        verdict.verdict is Verdict.UPDATED
        and comparison is not None
        and (comparison.failed or math.log1p(comparison.high) < -math.log1p(tolerance))
    )


def _confirmed(
    verdict: GroupVerdict, reads: Sequence[GroupVerdict], tolerance: float
) -> GroupVerdict:
    """A regression (or an update's change) confirmed by re-measurements, with the change each
    measurement read, on the regression's line (a floor missed too is the next line): the
    message shows the last one's figures, and a user weighing a failure of a small kernel on a
    shared machine wants to see that every read failed, and by how much. Not a floor's failure:
    what its reads missed is the roof, which the change against the baseline does not say."""
    changes = [read.comparison.delta for read in reads if read.comparison is not None]
    changed = verdict.verdict is Verdict.REGRESSION or (
        verdict.verdict is Verdict.UPDATED and _suspected(verdict, tolerance)
    )
    if not changed or len(reads) < 2 or len(changes) != len(reads):
        return verdict
    said = ", ".join(map(format_change, changes))
    disagree = ", the reads disagree" if verdict.unconfirmed else ""
    first, *rest = verdict.message.split("\n")
    message = "\n".join([f"{first}; measured {len(reads)} times{disagree}: {said}", *rest])
    return replace(verdict, message=message)


def _judge_once(
    current: Measurement,
    baseline: Baseline | None,
    *,
    device_id: str,
    checksum: str,
    work: Work | None,
    peaks: Peaks | None,
    floor: FloorCheck | None,
    dtype: str,
    max_regression: float | None,
    strict: bool,
    update: bool,
    remeasured: bool,
    baseline_devices: Sequence[str],
    machine: str | None = None,
    candidates: Sequence[str] = (),
    unreadable: str | None = None,
    baseline_winner: Measurement | None = None,
    failed_here: str | None = None,
    missing_file: str | None = None,
    bounds: Bounds | None = None,
    thread_env: Mapping[str, str] | None = None,
) -> GroupVerdict:
    fraction: float | None = None
    floor_message: str | None = None
    roof: str | None = None
    if work is not None and peaks is not None:
        fraction, roof = fraction_and_roof(work, current.median, peaks, dtype)
        if floor is not None:
            floor_message = floor.fails(work, current.median, peaks)

    comparison: Comparison | None = None
    regression_message: str | None = None
    noisy_message: str | None = None
    other = not_comparable(baseline, device_id, checksum, candidates, bounds, thread_env)
    if baseline is not None and other is None:
        comparison, regression_message, noisy_message = compare(
            current, baseline, device_id, peaks, max_regression, machine, baseline_winner
        )
        if failed_here is not None:
            # The change against the broken winner's time is shown (and an update says
            # it), but judges nothing: the two times are of two kernels.
            other, regression_message, noisy_message = failed_here, None, None

    floor_noisy: str | None = None
    if floor_message is not None and floor is not None and work is not None:
        assert peaks is not None  # a floor message is made with them
        floor_noisy = _floor_too_noisy(floor, floor_message, current, work, peaks)
        if floor_noisy is not None:
            floor_message = None

    def verdict(kind: Verdict, message: str, failed: bool) -> GroupVerdict:
        return GroupVerdict(kind, message, comparison, fraction, failed, current, remeasured, roof)

    failures = [m for m in (regression_message, floor_message) if m is not None]
    if update:
        would = f"; without --autotune-update: {'; '.join(failures)}" if failures else ""
        return verdict(Verdict.UPDATED, f"{UPDATED_MESSAGE}{would}", False)
    if regression_message is not None:
        return verdict(Verdict.REGRESSION, "\n".join(failures), True)
    # The first that applies, in this order: a floor missed fails whatever else is true.
    no_baseline = no_baseline_message(
        device_id, baseline_devices, baseline, unreadable, missing_file
    )
    outcomes = (
        (Verdict.FLOOR, floor_message, True),
        # A floor the CPUs' state leaves unjudged comes first: it is said whatever the
        # baseline, with what else is to say.
        (
            Verdict.TOO_NOISY,
            "\n".join(m for m in (floor_noisy, no_baseline, noisy_message) if m)
            if floor_noisy
            else None,
            strict,
        ),
        (Verdict.NO_BASELINE, no_baseline, strict),
        (Verdict.TOO_NOISY, noisy_message, strict),
        (Verdict.NOT_COMPARABLE, other, False),
    )
    for kind, message, failed in outcomes:
        if message is not None:
            return verdict(kind, message, failed)
    return verdict(Verdict.PASS, "", False)


def _floor_too_noisy(
    floor: FloorCheck, message: str, current: Measurement, work: Work, peaks: Peaks
) -> str | None:
    """What a floor missed on busy CPUs says in place of failing, where the CPUs' state
    (`floor_noise`) explains the shortfall: one session's time beside a busy neighbour
    failed the floor of unchanged code, and the message said nothing of the load. None where
    the CPUs were free, or the shortfall is past 3.09 of that noise (the kernel's own)."""
    sigma, conditions = floor_noise(current)
    shortfall = floor.shortfall(work, current.median, peaks)
    if not conditions or shortfall is None or shortfall > DEFAULT_Z * sigma:
        return None
    return (
        f"too noisy to judge the floor: {message}; {format_change(math.expm1(shortfall))}"
        f" from it, within what the CPUs' state explains (up to"
        f" {format_change(math.expm1(DEFAULT_Z * sigma))})"
        + "".join(f"; {c.reason}" for c in conditions)
        + "; what would help: "
        + "; ".join(dict.fromkeys(c.helps for c in conditions))
    )


def fraction_and_roof(
    work: Work, seconds: float, peaks: Peaks, dtype: str
) -> tuple[float | None, str | None]:
    """The fraction of the binding roof reached, and which roof that is: the memory level
    the working set fits in, or the compute unit of `dtype`."""
    compute_peak, memory = peaks.compute_peak(dtype), peaks.memory_roof(work.footprint)
    fraction = fraction_of_roof(work, seconds, compute_peak, memory.peak)
    if fraction is None:
        return None, None
    resource = binding_resource(work, compute_peak, memory.peak)
    return fraction, memory.level if resource == MEMORY else f"{dtype} {COMPUTE}"
