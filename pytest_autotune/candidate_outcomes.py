"""What each candidate's test of a tuned group ends with
(`AutotuneSession.candidate_outcome`): its own error, the gate's failure and the test it goes
to, a skip where the candidate declined the key, and what the group's other tests say where
its tuning was stopped or its pytest-xdist worker crashed.
"""

from __future__ import annotations

from typing import TypeGuard

from pytest_autotune.gate import GroupVerdict, Verdict
from pytest_autotune.group_request import GroupRequest
from pytest_autotune.time_limit import stopped_in
from pytest_autotune.tune.check_result import RAISED
from pytest_autotune.tune.decision import TuneDecision
from pytest_autotune.tune.errors import NOT_REACHED, UNPLANNED, AutotuneError, AutotuneErrorKind

_ROOM = (
    "a test timeout (pytest-timeout) must leave room for the tuning of a whole group, which"
    " runs inside the first of its tests"
)


def group_failures(
    decision: TuneDecision,
    verdict: GroupVerdict,
    selected: tuple[str, ...] | None = None,
    measured: str | None = None,
    overtaken: str | None = None,
    unexpected: tuple[str, ...] = (),
) -> tuple[dict[str, str], str | None]:
    """What fails for each candidate of a tuned group, by name: its own error, and for the
    winner the gate's failure; and the candidate whose test the gate's failure goes to,
    where it failed. The winner is the candidate the gate judged: `measured`, the
    baseline's winner where tuning here slipped onto another (`gate_policy.judge_group`),
    since the failure is that candidate's time, and the summary names it. Where the
    winner's item was not selected (`selected`: the selected candidates whose tests may
    still run, None where every one is), the gate's failure goes to the first selected
    candidate instead: the run fails
    on a failing test, not on the summary alone. A regression where tuning's pick overtook
    the baseline's winner (`overtaken`, which measured slower here) fails the baseline's
    winner: its slowdown lost the group its time, and the pick, unchanged, passed. Where
    that test is marked `xfail`, the failure goes to the first of `unexpected` (the group's
    tests that run and are not marked so): the mark says the candidate's output may be
    wrong, not that the group may get slower, and it turned a 2.5x slowdown of a winner
    whose output was right into an expected failure, the run passing."""
    failures = {
        result.name or "": f"candidate {result.name!r} {_failed_as(result)}"
        for result in decision.results.values()
        if isinstance(result, AutotuneError) and result.kind is not AutotuneErrorKind.SKIP
    }
    gate = gate_failure_line(verdict)
    if gate is not None:
        judged = measured or decision.fastest_name
        name = judged
        regressed = verdict.verdict is Verdict.REGRESSION
        if regressed and overtaken not in (None, judged) and _chosen(overtaken, selected):
            gate += (
                f"\n(tuning here picks {decision.fastest_name}; {overtaken}, the baseline's"
                " winner, measured slower than it)"
            )
            name = str(overtaken)
        if not _chosen(name, selected):
            assert selected  # `_chosen` is True without a selection
            gate = f"{gate}\n(the winner {name!r} was not selected; its group's gate fails here)"
            name = selected[0]
        if unexpected and name not in unexpected:
            gate = (
                f"{gate}\n(the test of {name!r} is marked xfail, whose reason is its output's,"
                " not the group's speed: the group's gate fails here)"
            )
            name = unexpected[0]
        if (
            not decision.measured
            and not decision.unreached()
            and failures.keys() >= {r.name for r in decision.results.values()}
        ):
            # Every candidate failed, each test by its own error: the gate's "every candidate
            # failed: ..." repeated them all below the first one's.
            return failures, name
        failures[name] = f"{failures[name]}\n{gate}" if name in failures else gate
        return failures, name
    return failures, None


def _failed_as(error: AutotuneError) -> str:
    """How a candidate failed, after its name: what it raised when timed (its traceback
    kept) is said to be raised ("candidate 'boom' raised ValueError: ..."), as its check
    says it; a check's failure, a time limit and the like read as they are."""
    if error.trace and not error.message.startswith(RAISED):
        return f"{RAISED}{error.message}"
    return error.message


def unexpected_tests(request: GroupRequest, selected: tuple[str, ...] | None) -> tuple[str, ...]:
    """The group's candidates whose tests run and are not marked `xfail`, in order."""
    return tuple(
        name
        for name, _ in request.candidates
        if _chosen(name, selected)
        and name not in request.expected_to_fail
        and name not in request.not_run
    )


def _chosen(name: str | None, selected: tuple[str, ...] | None) -> bool:
    """Whether the test of candidate `name` runs (`selected`: None where every one does)."""
    return not selected or name in selected


def gate_failure_line(verdict: GroupVerdict) -> str | None:
    """The line a failed gate fails its test with; None where it did not fail."""
    if not verdict.failed:
        return None
    # "regression of ...", "no baseline for ...": a message that names its verdict is not
    # prefixed with it again ("regression: regression of").
    kind = verdict.verdict.value
    named = "" if verdict.message.startswith(kind) else f"{kind}: "
    return f"autotune gate: {named}{verdict.message}"


def nothing_takes(decision: TuneDecision) -> bool:
    """Whether no candidate takes the decision's key: every one declined it, or the
    `groups=` plan tries none for it (every priority negative there). The plan's case
    failed the group's first test ("no measured candidate is left") and passed the others,
    where plain pytest skips them all (`group_request.check_groups`)."""
    return all(_declines(r) or _unplanned(r) for r in decision.results.values())


def declined_in(decision: TuneDecision) -> dict[str, str]:
    """The candidates of a decision that declined its key, by name: why. The `groups=` plan
    declines a candidate it never tries for the key for it, as plain pytest does."""
    return {
        result.name or "": result.message
        for result in decision.results.values()
        if _declines(result) or _unplanned(result)
    }


def _unplanned(result: object) -> TypeGuard[AutotuneError]:
    """Whether a candidate's result says the `groups=` plan never tries it for the key."""
    return isinstance(result, AutotuneError) and result.message == UNPLANNED


def _declines(result: object) -> TypeGuard[AutotuneError]:
    """Whether a candidate's result is its own refusal of the key (`AutotuneSkip`), not a
    skip for having never run."""
    return (
        isinstance(result, AutotuneError)
        and result.kind is AutotuneErrorKind.SKIP
        and not result.message.startswith(NOT_REACHED)
    )


def stopped_tuning(
    group: str, name: str | None, error: BaseException, waiting: str | None = None
) -> str:
    """What the other tests of a group say where its tuning was stopped in `name`'s test
    (None: the one test of an `autotune` fixture's group, which calls every candidate):
    each tuned it again from the start, and each was stopped the same way (a test timeout
    shorter than the group's tuning failed every candidate's test, one timeout each)."""
    why = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
    test = f"{name}'s test" if name is not None else "its test"
    if isinstance(error, Exception):
        # Raised by the tuning itself, which refused its inputs, client or bounds before
        # any candidate ran (a candidate's own error is its failure, caught inside): no
        # timeout stopped it, and the hint about one misled.
        return f"the tuning of {group} failed in {test} ({why}) and is not started again"
    running = stopped_in(error)
    if waiting:
        where = f" while waiting for {waiting}"
    else:  # the test's own candidate needs no naming
        where = _while_running(running) if running != name else ""
    return (
        f"the tuning of {group} was stopped in {test}{where} ({why}) and is not started"
        f" again: {_ROOM}"
    )


def _while_running(running: str | None) -> str:
    """Which candidate's call a test timeout stopped, where one ran: the hung one is seldom
    the candidate whose test tunes the group."""
    return f" while candidate {running!r} ran" if running is not None else ""


def crashed_tuning(request: GroupRequest, nodeid: str | None) -> str:
    """What a group's other tests say where a pytest-xdist worker crashed in `nodeid`, a
    test of the group, while it tuned the group. That test calls every candidate of the
    group: the crash is no sign of its own (one that calls os._exit, tuned in the test of
    the first, was blamed on the first). None for an `autotune` fixture's group, whose
    one test calls every candidate in plain pytest too (its row named a candidate as the
    test the worker crashed in)."""
    names = ", ".join(name for name, _ in request.candidates)
    if nodeid is None:
        return (
            f"the tuning of {request.group} ended with its pytest-xdist worker's crash: it"
            f" calls each of the set's candidates ({names}), and one of them ends its"
            " process (a segfault, os._exit, pytest-timeout's thread method)"
        )
    return (
        f"the tuning of {request.group} is not started again: a pytest-xdist worker crashed"
        f" in {nodeid} while that test tuned the group, which calls each of its candidates"
        f" ({names}): one of them ends its process (a segfault, os._exit, pytest-timeout's"
        " thread method), and tuning the group again would crash another worker; plain"
        " pytest (without --autotune) calls each candidate in its own test, and fails the one"
    )


def note_stopped_here(error: BaseException, group: str, waiting: str | None) -> None:
    """The test whose tuning was stopped says what it was doing: pytest-timeout's message
    and a traceback through this package (or a lock's sleep) name neither the group nor
    why a test of a fast candidate ran out of time (Python 3.11 on, which keeps notes)."""
    add_note = getattr(error, "add_note", None)
    if add_note is not None:
        running = _while_running(stopped_in(error))
        where = f"waiting for {waiting}" if waiting else f"tuning it{running}"
        add_note(f"under --autotune: this test tunes {group}, and was stopped {where}: {_ROOM}")


__all__ = [
    "crashed_tuning",
    "declined_in",
    "gate_failure_line",
    "group_failures",
    "note_stopped_here",
    "nothing_takes",
    "stopped_tuning",
    "unexpected_tests",
]
