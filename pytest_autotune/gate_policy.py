"""The gate's policy for one group of a session: which candidate it measures and how, and
what it compares with (`judge_group`).

`gate/` holds the rules of one comparison (`judge`); this module decides what goes into
it: the winner's precise measurement (`candidate_measure`: over several placements on a
GPU, beside a calibration read on a CPU), the baseline's winner when tuning here picked
another (`baseline_winner`), and how a suspected failure is confirmed (`confirmations`).
What an update keeps is `update_policy`'s.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from pytest_autotune.baseline_winner import Weighed, slip_note, weigh_slip, winner_failed_here
from pytest_autotune.baselines import UnreadableFile
from pytest_autotune.candidate_measure import index_measurer, read_kind
from pytest_autotune.confirmations import Confirmations, again_after_gap, confirming
from pytest_autotune.gate import Baseline, FloorCheck, GroupVerdict, Measurement, judge
from pytest_autotune.gate.judge import fraction_and_roof
from pytest_autotune.group_case import GroupCase
from pytest_autotune.report.figures import format_fraction
from pytest_autotune.tune.bounds import Thresholds, Work
from pytest_autotune.tune.client import client_context
from pytest_autotune.tune.client_calls import client_peaks
from pytest_autotune.tune.decision import TuneDecision
from pytest_autotune.tune.errors import AutotuneError, AutotuneErrorKind
from pytest_autotune.tune.peaks import Peaks
from pytest_autotune.tune.wording import first_line

if TYPE_CHECKING:
    from pytest_autotune.tune.client import Client


FoundBaseline = tuple[Baseline | None, str | None]
"""A baseline and the warning of an entry that does not read (`Baselines.find`)."""


@dataclass(frozen=True)
class Judged:
    verdict: GroupVerdict
    measured: str | None = None
    """The candidate the gate measured, where it is not tuning's pick."""
    overtaken: str | None = None
    """The baseline's winner, where tuning here picked another candidate and the baseline's
    winner measured no faster than it: slowed, where the group regressed."""
    winner_failed: AutotuneError | None = None
    """What a candidate the gate measured raised, measured or measured again to confirm a
    failure (tuning's pick, the baseline's winner judged in its place, or that winner
    measured beside the pick; a call that fails after many, an in-place candidate whose
    repeated calls overflow under `filterwarnings = error`): the group is to be judged again
    without it, the candidate its `name` says (`TuneDecision.without_winner`)."""


def _failure_text(result: object) -> str:
    """One candidate's failure as the gate's message names it, in the words its own test
    fails with: the message of an error it raised, not its kind first ("unknown: failed
    its check: ..."), and a candidate that declined the key as skipped, no error. Its
    first line only, as its test gives it whole (`wording.first_line`)."""
    if not isinstance(result, AutotuneError):
        return str(result)
    if result.kind is AutotuneErrorKind.UNKNOWN and result.message:
        return f"{result.name}: {first_line(result.message, 'its test')}"
    if result.kind is AutotuneErrorKind.SKIP:
        return f"{result.name}: skipped: {result.message or 'declined the key'}"
    return str(result)


def _nothing_measured(decision: TuneDecision) -> str:
    """Why a group has no winner: every candidate failed, or, where its winner failed while
    the gate measured it (`TuneDecision.without_winner`), some were never reached (a batch
    of a `groups=` plan ended the tuning): "every candidate failed" named those as failed."""
    errors = "; ".join(map(_failure_text, decision.results.values()))
    what = "no measured candidate is left" if decision.unreached() else "every candidate failed"
    return f"{what}: {errors}"


def judge_group(
    case: GroupCase,
    client: Client,
    *,
    work: Work | None,
    thresholds: Thresholds | None,
    find_baseline: Callable[[], FoundBaseline],
    baseline_devices: Callable[[], list[str]],
    notes: list[str],
    machine: str | None = None,
    unreadable_file: Callable[[], UnreadableFile | None] = lambda: None,
    missing_file: Callable[[], str | None] = lambda: None,
) -> Judged:
    """Measure the winner precisely and judge it against the committed baseline. `machine`
    is the client's physical device (a GPU's uuid), where it names one; `unreadable_file`
    says which baseline file of the test could not be read (`Baselines.unreadable`);
    `missing_file` which it looked in, where there is none (`Baselines.missing`)."""
    tunables, decision = case.tunables, case.decision
    common: dict[str, Any] = {
        "device_id": case.device_id,
        "checksum": tunables.checksum,
        "candidates": tunables.names,
        "strict": case.settings.engine.strict,
        "update": case.settings.update,
    }
    if not decision.measured:
        return Judged(judge(None, None, error=_nothing_measured(decision), **common))

    def fresh_inputs() -> tuple[Any, ...]:
        with client_context(client):  # on the client's device
            return tunables.generate_inputs(case.key, case.inputs)

    baseline, note = find_baseline()
    kind = read_kind(case, baseline)
    # Each measurement here gets inputs of its own (`index_measurer`), as does each
    # confirmation in a fresh process (made when one is taken: a copy kept for it here
    # held the inputs' memory once more through every group's gate).
    measurer = index_measurer(client, tunables, fresh_inputs(), kind, fresh_inputs)
    index = decision.fastest_index
    measure = measurer(index)
    try:
        current = measure()
    except AutotuneError as exc:
        return Judged(
            judge(None, None, error=f"the winner failed while measured: {exc}", **common),
            winner_failed=exc,
        )
    peaks = client_peaks(client)
    if note:
        notes.append(note)
    weighed = weigh_slip(case, baseline, measurer, Weighed(index, current, measure))
    current, index, measure = weighed.current, weighed.index, weighed.measure
    measured, baseline_winner, rival = weighed.measured, weighed.baseline_winner, weighed.rival
    if work is not None:
        peaks = _peaks_under(client, peaks, work, current, case.group, notes)
    if thresholds is not None:
        unjudged = FloorCheck(thresholds, work.unit if work is not None else "fp32").unjudged(
            work, peaks
        )
        if unjudged is not None:
            notes.append(f"note: {case.group}: its floor (thresholds=) was not judged: {unjudged}")
    confirmations = Confirmations()
    verdict = judge(
        current,
        baseline,
        work=work,
        peaks=peaks,
        thresholds=thresholds,
        launch_overhead=client.launch_overhead,
        max_regression=case.settings.engine.max_regression,
        **confirming(
            client,
            fresh_inputs,
            (tunables.fns[index], tunables.names[index], measure),
            rival,
            confirmations,
            read_kind(case, baseline),
        ),
        baseline_devices=() if baseline is not None else baseline_devices(),
        machine=machine,
        thread_env=case.thread_env,
        failed_here=winner_failed_here(case, baseline, tunables.names[index]),
        unreadable=(
            None
            if baseline is not None
            else _cache_off(case) or _unreadable(unreadable_file(), note)
        ),
        baseline_winner=baseline_winner,
        missing_file=None if baseline is not None else missing_file(),
        bounds=decision.bounds,
        **common,
    )
    slipped = slip_note(
        case,
        weighed,
        verdict,
        confirmations,
        baseline,
        lambda: again_after_gap(client, fresh_inputs, confirmations, case, baseline, rival),
    )
    if slipped is not None:
        notes.append(slipped)
    notes.extend(confirmations.not_fresh_note(case.group, verdict))
    confirmed_by = confirmations.judged
    if verdict.remeasured and confirmed_by and confirmed_by[-1] != tunables.names[index]:
        measured = confirmed_by[-1]  # the row names whose time it shows
    return Judged(
        verdict,
        measured,
        overtaken=None if rival is None or confirmations.rival_raised else rival[1],
        winner_failed=verdict.raised or confirmations.rival_raised,
    )


def _cache_off(case: GroupCase) -> str | None:
    """What a missing baseline says where the setting that turns the cache off read none:
    "--autotune-update records one" sent the user to an update that the same setting stops
    at the start, and hid that the committed baselines were there, unread."""
    settings = case.settings
    if not settings.engine.disable_cache:
        return None
    return (
        f"no baseline read: {settings.origin('disable_cache')} turns the cache files off"
        " (neither read nor written); unset it to compare with the committed baselines"
    )


def _unreadable(file: UnreadableFile | None, entry: str | None) -> str | None:
    """What a missing baseline says where it is there and does not read: "--autotune-update
    records one" would send the user to an update that refuses to overwrite an unreadable
    file (a merge left its markers, a hand edit), or to replace an entry whose only fault
    may be one hand edit; and the summary's warning names them only at the terminal's end,
    not in the step summary, the records or the report."""
    if file is not None:
        remove = "remove it and --autotune-update records a new one"
        return f"no baseline: {file.what}; {file.advice(remove)}"
    if entry:
        return (
            f"the baseline entry does not read: {entry.removeprefix('warning: ')};"
            " repair it, or --autotune-update replaces it"
        )
    return None


ABOVE_ROOF = 1.0
"""The fraction of its roof past which a winner's time shows that the probe read low."""


def _peaks_under(
    client: Client,
    peaks: Peaks,
    work: Work,
    current: Measurement,
    group: str,
    notes: list[str],
) -> Peaks:
    """The peaks to judge a winner with: a winner above its roof (the probe measured a rate
    slower than the kernel reached) has the device probed again where its client can
    (`CpuClient.probe_peaks_again`: a CPU's probe may have run beside a busy neighbour).
    One still above is said in a note: the probe read low again, or the `Work` counts more
    than the kernel does."""
    fraction, roof = fraction_and_roof(work, current.median, peaks, work.unit)
    if fraction is None or fraction <= ABOVE_ROOF:
        return peaks
    probe_again = getattr(client, "probe_peaks_again", None)
    if probe_again is not None:
        peaks = probe_again()
        again, roof = fraction_and_roof(work, current.median, peaks, work.unit)
        if again is None or again <= ABOVE_ROOF:
            return peaks
        fraction = again
    notes.append(
        f"note: {group}: the winner reached {format_fraction(fraction)} of its {roof} roof:"
        " the peak probe read low (on CPUs, a neighbour process busy while it ran), or"
        " the work= counts more operations or bytes than the kernel moves"
    )
    return peaks


__all__ = ["FoundBaseline", "Judged", "judge_group"]
