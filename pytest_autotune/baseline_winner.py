"""The baseline's winner where tuning here picked another candidate of the same list: measured
beside tuning's pick, and the faster judged, where it ran (`tuning_slip`), with what the
note says of it; why the group is not judged against its time where it failed or was
skipped here (`winner_failed_here`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

from pytest_autotune.confirmations import Candidate, Confirmations
from pytest_autotune.gate import Baseline, GroupVerdict, Measurement
from pytest_autotune.gate.comparable import not_judged_message, winner_out
from pytest_autotune.group_case import GroupCase
from pytest_autotune.tune.benchmark import AutotuneOutcome
from pytest_autotune.tune.errors import AutotuneError
from pytest_autotune.tune.log import format_duration


def tuning_slip(case: GroupCase, baseline: Baseline | None) -> int | None:
    """The index of the baseline's winner when this run's tuning picked another candidate
    of the same list and the baseline's winner was measured and passed its check here;
    None otherwise (and always with --autotune-update, which records what it tuned)."""
    tunables, decision = case.tunables, case.decision
    if case.settings.update or baseline is None or baseline.checksum != tunables.checksum:
        return None
    if baseline.mismatch is not None:
        return None
    if baseline.fastest_name == decision.fastest_name:
        return None
    if baseline.fastest_name not in tunables.names:
        return None
    index = tunables.names.index(baseline.fastest_name)
    measured = isinstance(decision.results.get(index), AutotuneOutcome)
    failed_check = any(
        c.name == baseline.fastest_name and not c.skipped and not c.passed for c in decision.checks
    )
    return index if measured and not failed_check else None


@dataclass(frozen=True, slots=True)
class Weighed:
    """The candidate the gate judges (`weigh_slip`): tuning's pick, or the baseline's winner
    where tuning slipped onto another and the baseline's winner measured faster here."""

    index: int
    current: Measurement
    """Its measurement here."""
    measure: Callable[[], Measurement]
    """How it is measured again."""
    measured: str | None = None
    """Its name, where it is not tuning's pick."""
    baseline_winner: Measurement | None = None
    """The baseline's winner measured here, where it measured no faster than the pick."""
    rival: Candidate | None = None
    """The baseline's winner as the confirmations measure it beside the pick, then."""
    note: str | None = None
    """Where tuning slipped, what the gate compared (`slip_note` adds what the
    re-measurements found)."""


def weigh_slip(
    case: GroupCase,
    baseline: Baseline | None,
    measurer: Callable[[int], Callable[[], Measurement]],
    pick: Weighed,
) -> Weighed:
    """Tuning's `pick` or, where tuning slipped (`tuning_slip`) and the baseline's winner
    measured faster here, the baseline's winner: the candidate the gate judges, with the
    note that says which was compared."""
    tunables, decision = case.tunables, case.decision
    slip = tuning_slip(case, baseline)
    if slip is None:
        return pick
    # Tuning here picked another candidate than the baseline's, on samples far
    # fewer than the gate's: if the baseline's winner is still the faster one, the
    # group's code did not slow down, this run's pick did, and only the committed
    # cache decides what runs in production. The group is judged on the faster.
    # A note says which was compared either way: a failure of tuning's pick against
    # the time of the baseline's winner would otherwise read as a slip of tuning.
    current, judged = pick.current, pick
    picked = f"tuning picked {decision.fastest_name} ({format_duration(current.median)})"
    name = tunables.names[slip]
    try:
        other = measurer(slip)()
    except AutotuneError as exc:
        found = f"; the baseline's winner failed when measured here ({exc})"
    else:
        took = format_duration(other.median)
        if other.median < current.median:
            # How much faster, said: two medians a hair apart print the same ("964 us").
            less = f"{(1 - other.median / current.median) * 100:.2g}% less"
            found = f", but the baseline's winner {name} measured faster ({took}, {less})"
            judged = Weighed(slip, other, measurer(slip), name)
        else:
            found = f", and the baseline's winner {name} measured no faster here ({took})"
            # What slowed it here (several threads on contended CPUs) is then the
            # comparison's noise too (`gate.conditions.widen`); and it is measured
            # again beside the pick wherever a failure is confirmed (`confirming`).
            judged = replace(
                pick, baseline_winner=other, rival=(tunables.fns[slip], name, measurer(slip))
            )
    return replace(
        judged,
        note=(
            f"note: {case.group}: {picked}{found}; the gate compared {tunables.names[judged.index]}"
        ),
    )


def slip_note(
    case: GroupCase,
    weighed: Weighed,
    verdict: GroupVerdict,
    confirmations: Confirmations,
    baseline: Baseline | None,
    again: Callable[[], Measurement | None],
) -> str | None:
    """The note of a tuning slip (`weigh_slip`), with what the re-measurements found and
    whether the committed cache serves a slowed candidate; None where tuning did not slip.
    `again` measures the baseline's winner once more (`confirmations.again_after_gap`)."""
    if weighed.note is None:
        return None
    confirmed_by = confirmations.judged
    winner = weighed.baseline_winner
    return _confirmed_note(
        weighed.note, verdict, weighed.current, case.tunables.names[weighed.index], confirmed_by
    ) + _stale_winner(
        weighed.rival,
        [] if winner is None else [winner, *confirmations.rival_reads],
        baseline,
        case.decision.fastest_name,
        confirmed_by,
        again,
    )


def winner_failed_here(case: GroupCase, baseline: Baseline | None, judged: str) -> str | None:
    """Why the group is not judged against its baseline where the baseline's winner, a
    candidate of the same list, failed or was skipped in this run (`baseline_winner_out`):
    None otherwise.

    The baseline's time is that winner's; what tuning picked instead is another kernel,
    slower because the faster one is broken or does not run here. Judged against it, a
    candidate that raised turned into a "regression" of the candidate next in line, a
    second failure that fixing the broken one clears, and errors are never reported as
    regressions; a candidate skipped on this machine (a `skipif` on its cores, a
    platform) failed the others as a regression of the code."""
    out = baseline_winner_out(case, baseline, judged)
    return None if out is None else not_judged_message(out, judged)


def baseline_winner_out(
    case: GroupCase, baseline: Baseline | None, judged: str
) -> tuple[str, bool] | None:
    """`gate.comparable.winner_out` of the baseline's winner where it is another candidate of
    the same list than `judged`, on this device; None otherwise."""
    tunables, decision = case.tunables, case.decision
    if baseline is None or baseline.mismatch is not None:
        return None
    if baseline.checksum != tunables.checksum or baseline.device_id != case.device_id:
        return None
    name = baseline.fastest_name
    if name == judged or name not in tunables.names:
        return None
    return winner_out(name, decision.results.get(tunables.names.index(name)))


STALE_WINNER = 1.25
"""How many times its baseline's median the baseline's winner must measure, where tuning
picked another, before the note says that the committed cache serves a slowed candidate:
past any session-to-session noise of the gate's measurements (a few percent on a GPU, up
to 10-20% raw on a shared CPU)."""


def _stale_winner(
    rival: Candidate | None,
    reads: list[Measurement],
    baseline: Baseline | None,
    pick: str,
    confirmed_by: list[str],
    again: Callable[[], Measurement | None],
) -> str:
    """What the tuning-slip note adds where the baseline's winner slowed well past its
    baseline while tuning's pick kept the group's time: the gate passes the group, but
    code served from the committed cache (a `LocalTuner` shipping it) still calls the
    slowed one. A QA round slowed `reduce` 2x beside an equally fast `pairwise`: the run
    passed, and nothing said to refresh the cache.

    `reads` are the baseline's winner's measurements here; where there is one alone (no
    failure was confirmed), `again` takes another, as a confirmation does, before the
    note says so: an unchanged `np.add.reduce` read 2.08x its baseline in one process of
    ten unchanged runs on a shared CPU (a slow spell, or where its arrays lay), and the
    note sent its user to refresh a cache that served it at full speed."""
    # Not where it was measured again and found the faster after all (a slow spell of the
    # machine, not of its code).
    if rival is None or not reads or baseline is None or rival[1] in confirmed_by[-1:]:
        return ""
    name, then = rival[1], baseline.typical()[0]
    if max(read.median for read in reads) / then < STALE_WINNER:
        return ""
    if len(reads) == 1:
        read = again()
        if read is None:
            return ""
        reads = [*reads, read]
    ratio = min(read.median for read in reads) / then
    if ratio < STALE_WINNER:
        return ""
    return (
        f"; {name} measured {ratio:.2f}x its baseline's {format_duration(then)}, and the"
        f" committed cache still names it (what code served from it runs):"
        f" --autotune-update names {pick}"
    )


def _confirmed_note(
    note: str, verdict: GroupVerdict, first: Measurement, judged: str, confirmed_by: list[str]
) -> str:
    """A tuning slip's note, with what the re-measurements found: the row and the message
    show the confirming measurement, which may differ from the first one the two
    candidates were weighed by, or be the baseline's winner's (`confirming`); unsaid, the
    row's time beside "measured no faster here (400 us)" reads as a contradiction."""
    again = verdict.measurement
    if not verdict.remeasured or again is None:
        return note
    confirmed = format_duration(again.median)
    if confirmed_by and confirmed_by[-1] != judged:
        return (
            f"{note}; measured again to confirm, {confirmed_by[-1]} was the faster"
            f" ({confirmed}), and the gate judged it"
        )
    if confirmed != format_duration(first.median):
        return f"{note}, {confirmed} when measured again to confirm"
    return note
