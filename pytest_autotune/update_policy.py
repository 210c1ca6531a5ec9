"""What an update does with a group's baseline (`settle_update`): the new entry and the earlier
sessions it keeps (`history`), or, for a session measured on contended CPUs, the committed
baseline kept, with its verdict worded to say which.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace

from pytest_autotune.baseline_winner import baseline_winner_out
from pytest_autotune.baselines import UnreadableFile, update_message
from pytest_autotune.gate import (
    MAX_BASELINE_SESSIONS,
    UPDATED_MESSAGE,
    Baseline,
    BaselineSession,
    GroupVerdict,
    Measurement,
    RegressionCheck,
    Verdict,
    conditions,
)
from pytest_autotune.gate.comparable import other_thread_caps
from pytest_autotune.group_case import GroupCase
from pytest_autotune.report.figures import counted


@dataclass(frozen=True, slots=True)
class Settled:
    """What an update does with one group: its verdict, worded with what it did to the
    baseline, the earlier sessions the new entry keeps, and whether it writes one."""

    verdict: GroupVerdict
    history: tuple[BaselineSession, ...]
    recorded: bool = True
    """False when the committed baseline stays as it is (`settle_update`)."""


def settle_update(
    case: GroupCase,
    verdict: GroupVerdict,
    baseline: Baseline | None,
    unreadable: UnreadableFile | None = None,
    unusable: str | None = None,
) -> Settled:
    """What an update does with the group's baseline: the new entry and the earlier
    sessions it keeps (`history`), or, for a session measured on contended CPUs
    (`gate.conditions.contended`) beside a baseline of the same device and candidates,
    nothing: the committed baseline stays and the message says why. A baseline recorded
    under load misleads every later comparison (on the 2-core VM a matmul recorded beside
    a test suite failed a quiet run at +73.6%), and an update that leaves the old one
    loses nothing; with no such baseline, or a change the contention does not explain
    (`_clear`), the session is recorded, with the warning.
    `unusable` says why the key's entry could not serve as a baseline (`Baselines.find`'s
    warning), which the update replaces.
    `unreadable` names the group's baseline file that could not be read: the save will
    refuse it, so the message says so rather than "new baseline". Either way a session not
    recorded is NOT_RECORDED, not UPDATED: the table must not say the file was refreshed."""
    if verdict.unconfirmed and baseline is not None and _same_baseline(case, baseline):
        # None of its reads is this code's time: the re-measurement read the change the
        # other way (slower, then faster: `GroupVerdict.unconfirmed`). Joined, the last read
        # (+31.8% of unchanged code on the 2-core VM, after +35.6% and -15.2%) moved the
        # baseline by its share; made the baseline, it hid the next real slowdown or failed
        # unchanged code.
        spells = (
            "the machine ran in slow and fast spells while it was measured: update again when"
            " it is steady"
        )
        return _kept_baseline(verdict, baseline, spells)
    measurement = verdict.measurement
    states = conditions.contended(measurement) if measurement is not None else ()
    reasons = "; ".join(c.reason for c in states)
    helps = "; ".join(c.helps for c in states)
    judged = case.decision.fastest_name
    out = baseline_winner_out(case, baseline, judged)
    # A baseline whose winner fails or is skipped here is kept by no contention: the gate
    # calls it "not comparable" until an update replaces it, and the committed cache
    # would go on naming the broken candidate its winner.
    if (
        states
        and baseline is not None
        and _same_baseline(case, baseline)
        and out is None
        and not _clear(verdict)
    ):
        return _kept_baseline(verdict, baseline, f"{reasons}; what would help: {helps}")
    kept = tuple(history(case, verdict, baseline))
    # A baseline's winner skipped or failed here is not a slowdown of the code: the update
    # says that it records another in its place. Of a failed one it said only "new
    # baseline: +200.0% against the old one", which a reviewer of the refreshed file reads
    # as the code made slower on purpose, not as the faster candidate left broken.
    replaced = f"{out[0]}, and {judged} is recorded in its place" if out else None
    message = update_message(
        baseline,
        verdict,
        kept,
        unreadable,
        case.device_id,
        case.tunables.names,
        replaced,
        unusable=unusable,
        other_caps=other_thread_caps(baseline.thread_env, case.thread_env)
        if baseline is not None and baseline.device_id == case.device_id
        else None,
        # Said where the candidates are the same, as the gate checks the list first.
        other_work=(
            baseline.other_work(case.decision.bounds)
            if baseline is not None and baseline.checksum == case.tunables.checksum
            else None
        ),
    )
    if unreadable is not None:
        # Still offered to the save, which refuses the file with an error that fails the
        # run: an update that could not record what it was asked to must not pass.
        return Settled(_not_recorded(verdict, message), kept)
    if states:
        message += (
            f"; recorded although {reasons}, so comparisons against it may mislead: record"
            f" it again when the CPUs are free; what would help: {helps}"
        )
    return Settled(replace(verdict, message=message), kept)


def _clear(verdict: GroupVerdict) -> bool:
    """Whether the change is one the contention does not explain: the gate, its noise
    widened by the contention, would fail it (or its whole interval is faster). An update
    that keeps the baseline then would refuse a change the user made on purpose (a kernel
    rewritten three times slower, +206% [+154%, +271%] on a busy machine) until the CPUs
    are free; it is recorded, with the warning."""
    comparison = verdict.comparison
    return comparison is not None and (comparison.failed or comparison.high < 0)


def _kept_baseline(verdict: GroupVerdict, baseline: Baseline, why: str) -> Settled:
    """An update that leaves the committed baseline as it is, its session not recorded,
    `why` said."""
    head = (
        f"kept the baseline ({counted(len(baseline.sessions()), 'session')}): this session"
        f" is not recorded, as {why}"
    )
    message = head + verdict.message.removeprefix(UPDATED_MESSAGE)
    return Settled(_not_recorded(verdict, message), (), recorded=False)


def _not_recorded(verdict: GroupVerdict, message: str) -> GroupVerdict:
    return replace(verdict, verdict=Verdict.NOT_RECORDED, message=message)


def _same_baseline(case: GroupCase, baseline: Baseline) -> bool:
    """Whether the baseline measured this group's candidates on this device under its
    thread caps, for the work this run measured, so that this run's session could join it
    or replace it."""
    return (
        baseline.device_id == case.device_id
        and baseline.checksum == case.tunables.checksum
        and baseline.mismatch is None
        and baseline.other_work(case.decision.bounds) is None
        and other_thread_caps(baseline.thread_env, case.thread_env) is None
    )


def history(
    case: GroupCase, verdict: GroupVerdict, baseline: Baseline | None
) -> Sequence[BaselineSession]:
    """The earlier sessions an update keeps beside its own: the committed baseline's,
    when it measured the same candidate list on this device, unless the gate would
    call this session's change a regression or an improvement (its interval wholly
    past `max_regression` either way), which starts a new baseline rather than blending
    into the old one. One slow session on a noisy machine is not such a change: it
    joins the others and moves their mean by its share, where resetting on it would
    make it the whole baseline. The winner's name may differ: like the gate, a
    baseline is the group's best time, whichever of two equal candidates gave it."""
    comparison = verdict.comparison
    if baseline is None or comparison is None:
        return ()
    same = _same_baseline(case, baseline)
    measurement = verdict.measurement
    tolerance = RegressionCheck.for_device(
        case.device_id,
        case.settings.engine.max_regression,
        calibrated=measurement is not None and measurement.calibrated_against(baseline),
    ).max_regression
    changed = comparison.failed or math.log1p(comparison.high) < -math.log1p(tolerance)
    # The sessions of a baseline's winner that failed or was skipped here are of another
    # kernel than this session's: however close the two times, they do not blend.
    replaced = baseline_winner_out(case, baseline, case.decision.fastest_name) is not None
    if not same or changed or replaced:
        return ()
    kept = baseline.sessions()[-(MAX_BASELINE_SESSIONS - 1) :]
    if not _same_read(measurement, baseline):
        # The earlier sessions' reads are of another read than this session's (of another
        # repeat count, `calibration.read_repeats`): their times still join, their reads
        # would divide this session's winner by another workload. Where this session has
        # no read, the entry it writes names no kind, and reads of no known kind go too.
        kept = tuple(replace(s, read=None) for s in kept)
    return kept


def _same_read(measurement: Measurement | None, baseline: Baseline) -> bool:
    """Whether this session's calibration read is of the kind the baseline's sessions read."""
    mine = measurement.calibration if measurement is not None else None
    theirs = baseline.calibration
    return mine is not None and theirs is not None and mine.kind == theirs.kind


__all__ = ["Settled", "history", "settle_update"]
