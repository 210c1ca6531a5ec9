"""Judging one group: its winner's measurement against its baseline, by the rules, into one
`GroupVerdict`.

Every rule errs on the side of passing unless the evidence is strong: a baseline that
measured something else is "not comparable" rather than a failure, an error is never
reported as a regression, and a suspected failure is measured again before it counts.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import replace

from pytest_autotune.calibration import MIN_READ_SECONDS, long_enough
from pytest_autotune.gate.baseline import Baseline
from pytest_autotune.gate.conditions import Condition, floor_noise, widen
from pytest_autotune.gate.rules import (
    DEFAULT_Z,
    NORMALISE_BY_PEAKS,
    FloorCheck,
    RegressionCheck,
    device_kind,
)
from pytest_autotune.gate.samples import Measurement
from pytest_autotune.gate.verdicts import UPDATED_MESSAGE, Comparison, GroupVerdict, Verdict
from pytest_autotune.report.figures import format_change, format_fraction, format_interval
from pytest_autotune.tune.bounds import (
    COMPUTE,
    MEMORY,
    Bounds,
    Thresholds,
    Work,
    calculate_bounds,
    fraction_of_roof,
)
from pytest_autotune.tune.errors import NOT_REACHED, AutotuneError, AutotuneErrorKind
from pytest_autotune.tune.log import format_duration
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
    (`gate_policy.winner_failed_here`); `bounds` this run's, which say what work it
    measured: a baseline of other work is NOT_COMPARABLE (`Baseline.other_work`).
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
        )

    verdict = once(current, remeasured=False)
    reads = [verdict]
    # An update whose baseline's winner failed or is skipped here starts a new baseline
    # whatever a re-measurement reads: its change is against another kernel's time.
    confirm = remeasure is not None and not (update and failed_here is not None)
    # The tolerance an update's speedup must pass to start a new baseline, as
    # `gate_policy.history` decides it: a smaller one joins the old baseline anyway.
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
            return GroupVerdict(
                Verdict.ERROR,
                "the winner failed while re-measured to confirm a suspected failure: "
                # A raise in its words, as its own test fails with; another kind named.
                + (
                    f"{exc.name}: {exc.message}"
                    if exc.kind is AutotuneErrorKind.UNKNOWN
                    else str(exc)
                ),
                None,
                verdict.fraction_of_roof,
                True,
                current,
                raised=exc,
            )
        verdict = once(again, remeasured=True)
        reads.append(verdict)
    return _confirmed(verdict, reads, tolerance)


def _suspected(verdict: GroupVerdict, tolerance: float) -> bool:
    """Whether a verdict is measured again before it stands: a failure, and an update's
    change that would start a new baseline from this session alone (`gate_policy.history`),
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
    first, *rest = verdict.message.split("\n")
    message = "\n".join([f"{first}; measured {len(reads)} times: {said}", *rest])
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
    other = _not_comparable(baseline, device_id, checksum, candidates, bounds)
    if baseline is not None and other is None:
        comparison, regression_message, noisy_message = _compare(
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
    no_baseline = _no_baseline(device_id, baseline_devices, baseline, unreadable, missing_file)
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


def _compare(
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
        single = _single_samples(current, baseline, calibrated)
        stored = _stored_noise(baseline, device_id, max_regression, calibrated)
        conditions = (*conditions, stored) if stored is not None else conditions
        noisy_message = (
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
    return comparison, regression_message, noisy_message


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


def fraction_and_roof(
    work: Work, seconds: float, peaks: Peaks, dtype: str
) -> tuple[float | None, str | None]:
    """The fraction of the binding roof reached, and which roof that is: the memory level
    the working set fits in, or the compute unit of `dtype`."""
    compute_peak, memory = peaks.compute_peak(dtype), peaks.memory_roof(work.footprint)
    fraction = fraction_of_roof(work, seconds, compute_peak, memory.peak)
    if fraction is None:
        return None, None
    binding = calculate_bounds(work, Thresholds(), compute_peak, memory.peak, 0.0, memory.level)
    resource = binding.binding_resource()
    return fraction, memory.level if resource == MEMORY else f"{dtype} {COMPUTE}"


def _no_baseline(
    device_id: str,
    baseline_devices: Sequence[str],
    baseline: Baseline | None,
    unreadable: str | None = None,
    missing_file: str | None = None,
) -> str | None:
    """The message of a missing baseline, naming the other devices that have one, or
    `unreadable` where the baseline is there and does not read; None when there is a
    baseline. `missing_file` is the cache file looked in, where there is none: a test run
    under another root dir than its update's has another name and cache folder, and "no
    baseline" alone did not say where it was looked for. `--autotune-runner` is offered
    only for a device of this one's kind: it files baselines under `cpu-<runner>` or
    `cuda-<runner>` by this device's kind, so a GPU's baseline is out of a CPU's reach."""
    if baseline is not None:
        return None
    if unreadable is not None:
        return unreadable
    others = sorted(set(baseline_devices) - {device_id})
    same_kind = [d for d in others if device_kind(d) == device_kind(device_id)]
    runner = (
        ""
        if not same_kind
        else " (--autotune-runner names the one to use)"
        if same_kind == others
        else f" (--autotune-runner names the one to use of {', '.join(same_kind)})"
    )
    elsewhere = f"; baselines of this test exist for {', '.join(others)}{runner}" if others else ""
    looked = f" (no file {missing_file})" if missing_file is not None else ""
    return (
        f"no baseline for this key on {device_id}{looked}; --autotune-update records one{elsewhere}"
    )


def _not_comparable(
    baseline: Baseline | None,
    device_id: str,
    checksum: str,
    candidates: Sequence[str] = (),
    bounds: Bounds | None = None,
) -> str | None:
    """Why the baseline measured something else, None when it is comparable (or missing)."""
    if baseline is None:
        return None
    where = baseline.source or "the cache"
    if baseline.mismatch is not None:
        return baseline.mismatch
    if baseline.device_id != device_id:
        return (
            f"the baseline in {where} was measured on {baseline.device_id},"
            f" this run is on {device_id}"
        )
    if baseline.checksum != checksum:
        change = candidate_change(baseline.candidates, candidates)
        if change is not None and change.startswith("reordered"):
            # A dict built over a set (or a list from one) takes its order from
            # PYTHONHASHSEED, drawn anew by each process: re-recording alone never helped,
            # and the test was never gated.
            change += "; a list built from a set changes order from run to run: sort it"
        return (
            f"the baseline in {where} was tuned over another candidate list"
            f" ({change or f'checksum {baseline.checksum}, now {checksum}'});"
            " --autotune-update re-records it"
        )
    if (work := baseline.other_work(bounds)) is not None:
        return (
            f"the baseline in {where} was measured for other work ({work}): the inputs"
            " changed under the same key, or the work= model did; --autotune-update"
            " re-records it"
        )
    return None


def candidate_change(before: Sequence[str], now: Sequence[str]) -> str | None:
    """What changed between two candidate lists, as a user would say it ("added 'c';
    removed 'a'", "reordered: now 'b', 'a'"); None where either list is unknown."""
    if not before or not now:
        return None
    added = [name for name in now if name not in before]
    removed = [name for name in before if name not in now]
    said = [
        f"{verb} {', '.join(map(repr, names))}"
        for verb, names in (("added", added), ("removed", removed))
        if names
    ]
    if not said:
        said = [f"reordered: now {', '.join(map(repr, now))}"]
    return "; ".join(said)


def winner_out(name: str, result: object) -> tuple[str, bool] | None:
    """What happened to the baseline's winner `name` in a run whose result for it is
    `result`, where that run did not measure it: it failed (raised, hung, or failed its
    check) or was skipped (declined the key, or its test is marked not to run there; not
    one a batch never reached). That says ("the baseline's winner fast is skipped here
    (needs 4 cores)"), and whether it was skipped; None otherwise."""
    if not isinstance(result, AutotuneError):
        return None
    if result.kind is AutotuneErrorKind.SKIP:
        if result.message.startswith(NOT_REACHED):
            return None
        return f"the baseline's winner {name} is skipped here ({result.message})", True
    return f"the baseline's winner {name} failed here ({result.message})", False


def not_judged_message(out: tuple[str, bool], judged: str) -> str:
    """Why `judged` is not judged against the baseline whose winner `winner_out` says
    what happened to: its time is of another kernel, slower because the faster one is
    broken or does not run here, and an error (or a skip) is never a regression."""
    why, skipped = out
    advice = "" if skipped else "fix it, or "
    return (
        f"{why}, and {judged} is not judged against its time;"
        f" {advice}--autotune-update{' here' if skipped else ''} records {judged}"
        " as the baseline"
    )
