"""The gate's policy for one group of a session: which candidate it measures and how, what
it compares with, and which earlier sessions an update keeps.

`gate/` holds the rules of one comparison (`judge`); this module decides what goes into
it: the winner's precise measurement (over several placements on a GPU, beside a
calibration read on a CPU), the baseline's winner when tuning here picked another, and the
history an update blends into.
"""

from __future__ import annotations

import functools
import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

import numpy as np

from pytest_autotune.backends.cpu import cpu, settle_allocator
from pytest_autotune.baselines import UnreadableFile, update_message
from pytest_autotune.calibration import CALIBRATION_KIND, timed_calibration
from pytest_autotune.fresh_process import NotFresh, measure_fresh
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
    device_kind,
    judge,
    measure_winner,
)
from pytest_autotune.gate.comparable import not_judged_message, winner_out
from pytest_autotune.gate.judge import fraction_and_roof
from pytest_autotune.plugin_settings import PluginSettings
from pytest_autotune.report.figures import counted, format_fraction
from pytest_autotune.time_limit import unlimited
from pytest_autotune.tune.benchmark import AutotuneOutcome
from pytest_autotune.tune.bounds import Thresholds, Work
from pytest_autotune.tune.call_scope import call_scope
from pytest_autotune.tune.client import client_context
from pytest_autotune.tune.decision import TuneDecision
from pytest_autotune.tune.errors import AutotuneError, AutotuneErrorKind
from pytest_autotune.tune.log import format_duration
from pytest_autotune.tune.peaks import Peaks
from pytest_autotune.tune.sampler import FLOATING_POINT_ERRORS
from pytest_autotune.tune.tunable_set import TunableSet

if TYPE_CHECKING:
    from pytest_autotune.tune.client import Client

CPU_CONFIRMATIONS = 2
"""How many re-measurements a suspected failure on a CPU must fail too (`judge`'s
`confirmations`), each `CONFIRM_GAP_S` after the last measurement."""

CONFIRM_GAP_S = 2.0
"""The pause before each re-measurement on a CPU. On the shared 2-core VM a small kernel
slows in episodes of a fraction of a second to a few seconds: a 64x64 `dot` timed in
0.1 s windows every 0.2 s for a minute read 8% or more over its usual time in 6-26% of
the windows, in episodes of 1 to 11 windows; in 20 fresh processes that timed it six
times each, a slow read was followed by a slow one in 27 of 35 cases read back to back
and in 10 of 32 two seconds apart, about the share of slow reads overall (39 of 120):
after two seconds the episode no longer predicts the read (benchmarks/cpu_episodes.py,
BENCHMARKS.md). A re-measurement right after the first stays in the episode: beside a
busy core, 3 of 100 unchanged sessions failed on a 7 us matmul read +31% to +37% twice in
a row (the two reads' correlation over all sessions +0.92). A regression of the code is
there every time."""

FoundBaseline = tuple[Baseline | None, str | None]
"""A baseline and the warning of an entry that does not read (`Baselines.find`)."""


@dataclass(frozen=True)
class GroupCase:
    """What the gate judges of one group: its tuning, its device and its settings."""

    group: str
    key: Any
    inputs: tuple[Any, ...]
    tunables: TunableSet
    decision: TuneDecision
    device_id: str
    settings: PluginSettings
    """The group's: the session's under its marker."""


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
    its check: ..."), and a candidate that declined the key as skipped, no error."""
    if not isinstance(result, AutotuneError):
        return str(result)
    if result.kind is AutotuneErrorKind.UNKNOWN and result.message:
        return f"{result.name}: {result.message}"
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
    with client_context(client):  # on the client's device
        inputs = tunables.generate_inputs(case.key, case.inputs)
    baseline, note = find_baseline()
    measurer = _measurer(client, tunables, inputs, _read_kind(case, baseline))
    index = decision.fastest_index
    measure = measurer(index)
    try:
        current = measure()
    except AutotuneError as exc:
        return Judged(
            judge(None, None, error=f"the winner failed while measured: {exc}", **common),
            winner_failed=exc,
        )
    peaks = client.peaks()
    if note:
        notes.append(note)
    measured: str | None = None
    baseline_winner: Measurement | None = None
    rival: Candidate | None = None
    slip_note: str | None = None
    slip = tuning_slip(case, baseline)
    if slip is not None:
        # Tuning here picked another candidate than the baseline's, on samples far
        # fewer than the gate's: if the baseline's winner is still the faster one, the
        # group's code did not slow down, this run's pick did, and only the committed
        # cache decides what runs in production. The group is judged on the faster.
        # A note says which was compared either way: a failure of tuning's pick against
        # the time of the baseline's winner would otherwise read as a slip of tuning.
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
                current, index, measure, measured = other, slip, measurer(slip), name
            else:
                found = f", and the baseline's winner {name} measured no faster here ({took})"
                # What slowed it here (several threads on contended CPUs) is then the
                # comparison's noise too (`gate.conditions.widen`); and it is measured
                # again beside the pick wherever a failure is confirmed (`_confirming`).
                baseline_winner = other
                rival = (tunables.fns[slip], name, measurer(slip))
        slip_note = (
            f"note: {case.group}: {picked}{found}; the gate compared {tunables.names[index]}"
        )
    if work is not None:
        peaks = _peaks_under(client, peaks, work, current, case.group, notes)
    confirmations = _Confirmations()
    verdict = judge(
        current,
        baseline,
        work=work,
        peaks=peaks,
        thresholds=thresholds,
        launch_overhead=client.launch_overhead,
        max_regression=case.settings.engine.max_regression,
        **_confirming(
            client,
            inputs,
            (tunables.fns[index], tunables.names[index], measure),
            rival,
            confirmations,
            _read_kind(case, baseline),
        ),
        baseline_devices=() if baseline is not None else baseline_devices(),
        machine=machine,
        failed_here=winner_failed_here(case, baseline, tunables.names[index]),
        unreadable=None if baseline is not None else _unreadable(unreadable_file(), note),
        baseline_winner=baseline_winner,
        missing_file=None if baseline is not None else missing_file(),
        bounds=decision.bounds,
        **common,
    )
    confirmed_by = confirmations.judged
    if slip_note is not None:
        notes.append(
            _confirmed_note(slip_note, verdict, current, tunables.names[index], confirmed_by)
            + _stale_winner(
                rival,
                [] if baseline_winner is None else [baseline_winner, *confirmations.rival_reads],
                baseline,
                decision.fastest_name,
                confirmed_by,
                lambda: _again_after_gap(client, inputs, confirmations, case, baseline, rival),
            )
        )
    notes.extend(confirmations.not_fresh_note(case.group, verdict))
    if verdict.remeasured and confirmed_by and confirmed_by[-1] != tunables.names[index]:
        measured = confirmed_by[-1]  # the row names whose time it shows
    return Judged(
        verdict,
        measured,
        overtaken=None if rival is None or confirmations.rival_raised else rival[1],
        winner_failed=verdict.raised or confirmations.rival_raised,
    )


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


def _again_after_gap(
    client: Client,
    inputs: tuple[Any, ...],
    confirmations: _Confirmations,
    case: GroupCase,
    baseline: Baseline | None,
    rival: Candidate | None,
) -> Measurement | None:
    """The baseline's winner measured again as a confirmation measures it (after a pause
    on a CPU, in a fresh process there); None where it raises now."""
    if rival is None:
        return None
    if device_kind(client.device_id) == "cpu":
        time.sleep(CONFIRM_GAP_S)
    try:
        return _again(client, inputs, confirmations, _read_kind(case, baseline), rival)
    except AutotuneError:
        return None


def _read_kind(case: GroupCase, baseline: Baseline | None) -> str | None:
    """The calibration read the gate measures with: its baseline's kind, so that it divides
    by the read its baseline divided by (`calibration.timed_calibration`); None, this
    version's own read, for an update, whose baseline is then of today's read."""
    if case.settings.update or baseline is None or baseline.calibration is None:
        return None
    return baseline.calibration.kind


def _confirmed_note(
    note: str, verdict: GroupVerdict, first: Measurement, judged: str, confirmed_by: list[str]
) -> str:
    """A tuning slip's note, with what the re-measurements found: the row and the message
    show the confirming measurement, which may differ from the first one the two
    candidates were weighed by, or be the baseline's winner's (`_confirming`); unsaid, the
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


Candidate = tuple[Callable[..., Any], str, Callable[[], Measurement]]
"""A candidate as the gate measures it: its function, its name, and its measurement here."""


@dataclass(slots=True)
class _Confirmations:
    """What the confirmations of a suspected failure did (`_confirming`)."""

    judged: list[str] = field(default_factory=list)
    """The name of the candidate each re-measurement judged, in order."""
    not_fresh: dict[str, str] = field(default_factory=dict)
    """Why a candidate was measured in the test process rather than a fresh one, by name."""
    rival_raised: AutotuneError | None = None
    """What the baseline's winner, measured beside tuning's pick (the rival), raised when
    measured again: a failing candidate, dropped as a winner that raises is."""
    rival_reads: list[Measurement] = field(default_factory=list)
    """The rival's re-measurements, in order."""

    def not_fresh_note(self, group: str, verdict: GroupVerdict) -> list[str]:
        """The README promises the confirmations in fresh processes: a failure confirmed
        without them says so, and why, so that the user can weigh it (and mend it)."""
        if not (verdict.failed and self.not_fresh):
            return []
        said = "; ".join(f"{name}: {why}" for name, why in self.not_fresh.items())
        return [f"note: {group}: measured again in the test process, not in a fresh one: {said}"]


def _confirming(
    client: Client,
    inputs: tuple[Any, ...],
    judged: Candidate,
    rival: Candidate | None,
    confirmations: _Confirmations,
    read_kind: str | None = None,
) -> dict[str, Any]:
    """How `judge` confirms a suspected failure: on a CPU up to `CPU_CONFIRMATIONS`
    re-measurements, each after `CONFIRM_GAP_S` (the machine's episodes pass, the code's
    regression stays) and, on the built-in CPU client, each in a fresh process
    (`fresh_process`: what one process keeps does not follow); on a GPU, whose time does
    not come in such episodes, one right away.

    `rival` is the baseline's winner where tuning picked another and it measured no faster
    here: each re-measurement measures it too, and the faster of the two is judged (its
    name appended to `confirmations.judged`). On the 2-core VM a tiled transpose ran at 36 us in
    most processes and at 67 us in one in six, as fast as the plain copy there; in such a
    process tuning picked the copy, the baseline's winner measured no faster, and the
    confirmations measured the copy alone, whose 63 us never moves: an unchanged group
    failed at +79%, confirmed twice."""
    on_cpu = device_kind(client.device_id) == "cpu"
    again = functools.partial(_again, client, inputs, confirmations, read_kind)

    def remeasure() -> Measurement:
        if on_cpu:
            time.sleep(CONFIRM_GAP_S)
        measured = again(judged)
        name = judged[1]
        if rival is not None:
            try:
                other = again(rival)
            except AutotuneError as exc:
                # The pick is judged as it is; the rival fails its own test, not hidden.
                if confirmations.rival_raised is None:
                    confirmations.rival_raised = exc
            else:
                confirmations.rival_reads.append(other)
                if other.median < measured.median:
                    measured, name = other, rival[1]
        confirmations.judged.append(name)
        return measured

    return {"remeasure": remeasure, "confirmations": CPU_CONFIRMATIONS if on_cpu else 1}


def _again(
    client: Client,
    inputs: tuple[Any, ...],
    confirmations: _Confirmations,
    read_kind: str | None,
    candidate: Candidate,
) -> Measurement:
    """`candidate` measured again: with the built-in CPU client in a fresh process
    (`fresh_process`), else, or where it cannot be, in this one (saying why)."""
    fn, name, measure = candidate
    if client is not cpu():
        return measure()
    fresh = measure_fresh(
        fn, inputs, name, functools.partial(measure_candidate, read_kind=read_kind)
    )
    if isinstance(fresh, NotFresh):
        confirmations.not_fresh.setdefault(name, fresh.why)
        return measure()
    return fresh


def _measurer(
    client: Client, tunables: TunableSet, inputs: tuple[Any, ...], read_kind: str | None = None
) -> Callable[[int], Callable[[], Measurement]]:
    """How the gate measures candidate `index` (`candidate_measurer`)."""
    measure = candidate_measurer(client, inputs, read_kind)

    def measurer(index: int) -> Callable[[], Measurement]:
        # A production set's candidate is measured bare, as its baselines were: tuning
        # called it under the time limit (`time_limit.Limited`).
        fn = unlimited(tunables.fns[index])
        return functools.partial(measure, fn, tunables.names[index])

    return measurer


def candidate_measurer(
    client: Client, inputs: tuple[Any, ...], read_kind: str | None = None
) -> Callable[[Callable[..., Any], str], Measurement]:
    """How the gate measures a candidate `(fn, name)` on `inputs`: one warm-up, then its
    precise samples, and on a CPU the state of the CPUs during them, with a calibration
    read of `read_kind` where this version makes that kind (else of its own)."""
    # On a CPU, a read of the same inputs is timed beside each sample, so the gate can
    # divide out what the machine's state did to both (pytest_autotune.calibration).
    on_cpu = device_kind(client.device_id) == "cpu"
    if on_cpu:
        # Where the process's history would otherwise put malloc's thresholds: the
        # baseline's process, this one and a fresh one then time the same kernel.
        settle_allocator()
    calibrate = timed_calibration(inputs, client.time, read_kind) if on_cpu else None
    # A client samples the winner over several placements of its inputs (and on a GPU its
    # graph pool), so that the time does not depend on where this process's history put
    # them (pytest_autotune.backends.cuda, "Several placements for the gate";
    # pytest_autotune.backends.cpu_placements).
    placed_sampler = getattr(client, "placed_sampler", None)

    def measure(fn: Callable[..., Any], name: str) -> Measurement:
        # The candidate's own scope (its test's warning filters) once around all its
        # samples, not inside each timed call (`tune.call_scope`).
        with call_scope(fn):
            try:
                return measured_in_scope(fn, name, repeats_raise=True)
            except _RaisedOfRepeats:
                # An in-place candidate meets its own output again in every call after the
                # first and may overflow (`x *= 2`), which its one checked call did not:
                # timed as the tuner times it, with NumPy's floating-point errors ignored
                # (`tune.sampler.Samples`). An error of its own raises again here.
                with np.errstate(all="ignore"):
                    return measured_in_scope(fn, name, repeats_raise=False)

    def measured_in_scope(fn: Callable[..., Any], name: str, repeats_raise: bool) -> Measurement:
        try:
            client.time(fn, inputs)  # one warm-up: every sample counts
            sample = (
                placed_sampler(fn, inputs)
                if placed_sampler is not None
                else lambda: client.time(fn, inputs)
            )
            # The CPUs' stall counter read on both sides of the samples, so their
            # difference covers the measurement exactly, and the CPU time of the
            # process's other threads over the samples alone (`gate.conditions`).
            helpers = conditions.HelperClock()
            if on_cpu:
                # A thread pool an earlier call left spinning (the peak probe's BLAS
                # matmul, a losing candidate's) is not the winner's: it falls quiet first.
                conditions.settle_helpers()
                sample = helpers.wrap(sample)
            before = conditions.stall_reading() if on_cpu else None
            measured = measure_winner(
                sample,
                calibration=calibrate.sample if calibrate else None,
                calibration_kind=calibrate.kind if calibrate else CALIBRATION_KIND,
                name=name,
            )
            after = conditions.stall_reading() if on_cpu else None
        except FLOATING_POINT_ERRORS as exc:
            if repeats_raise:
                raise _RaisedOfRepeats from exc
            raise AutotuneError.from_exception(name, exc) from None
        except Exception as exc:
            raise AutotuneError.from_exception(name, exc) from None
        if not on_cpu:
            return measured
        # How loaded the CPUs were, read once the samples are taken: the 1-minute
        # average then covers them, and how long runnable threads waited during them.
        return replace(
            measured,
            load=conditions.load_per_cpu(),
            pressure=conditions.pressure_share(before, after),
            helpers=helpers.share(),
        )

    return measure


class _RaisedOfRepeats(Exception):
    """A floating-point error in the gate's repeated calls of a candidate (`measure`)."""


def measure_candidate(
    client: Client,
    fn: Callable[..., Any],
    name: str,
    inputs: tuple[Any, ...],
    read_kind: str | None = None,
) -> Measurement:
    """One measurement of a candidate as the gate takes it (`candidate_measurer`): what a
    fresh process runs to confirm a suspected failure (`fresh_process.measure_fresh`)."""
    return candidate_measurer(client, inputs, read_kind)(fn, name)


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
    """`gate.judge.winner_out` of the baseline's winner where it is another candidate of
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
    measurement = verdict.measurement
    states = conditions.contended(measurement) if measurement is not None else ()
    reasons = "; ".join(c.reason for c in states)
    helps = "; ".join(c.helps for c in states)
    if states and baseline is not None and _same_baseline(case, baseline) and not _clear(verdict):
        count = len(baseline.sessions())
        head = (
            f"kept the baseline ({counted(count, 'session')}): this session"
            f" is not recorded, as {reasons}; what would help: {helps}"
        )
        message = head + verdict.message.removeprefix(UPDATED_MESSAGE)
        return Settled(_not_recorded(verdict, message), (), recorded=False)
    kept = tuple(history(case, verdict, baseline))
    judged = case.decision.fastest_name
    out = baseline_winner_out(case, baseline, judged)
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


def _not_recorded(verdict: GroupVerdict, message: str) -> GroupVerdict:
    return replace(verdict, verdict=Verdict.NOT_RECORDED, message=message)


def _same_baseline(case: GroupCase, baseline: Baseline) -> bool:
    """Whether the baseline measured this group's candidates on this device, for the
    work this run measured, so that this run's session could join it or replace it."""
    return (
        baseline.device_id == case.device_id
        and baseline.checksum == case.tunables.checksum
        and baseline.mismatch is None
        and baseline.other_work(case.decision.bounds) is None
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


__all__ = [
    "FoundBaseline",
    "GroupCase",
    "Judged",
    "Settled",
    "history",
    "judge_group",
    "settle_update",
    "tuning_slip",
    "winner_failed_here",
]
