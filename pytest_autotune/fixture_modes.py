"""A fixture call's set checked (a plain run: every candidate against the reference) or
tuned and judged (`--autotune`), and the output its test gets; the gate's failures of a
test's calls, kept until its body has run."""

from __future__ import annotations

import functools
from collections.abc import Callable, Collection, Mapping
from typing import Any, NoReturn

import pytest

from pytest_autotune.check_mode import check_candidate
from pytest_autotune.failing import fail, raise_again
from pytest_autotune.group_request import GroupRequest
from pytest_autotune.session import AutotuneSession
from pytest_autotune.stash_keys import IN_BODY
from pytest_autotune.tune.clone import clone_value
from pytest_autotune.tune.errors import UNPLANNED, AutotuneError, AutotuneSkip, declines

GATE_FAILURES = pytest.StashKey[dict[str, None]]()
"""The gate's failures of a test's `autotune` fixture calls in its body so far, each with
its group, once each (a call repeated finds its group's failure again): the test fails
with all of them once its body has run (`fail_on_gate_failures`; a body that raised,
skipped or xfailed, `gate_failures_of`), so that a regression at one size does not leave
the sizes after it untuned and unjudged."""


def _skip_if_all_declined(declined: Mapping[str, str], count: int) -> None:
    """Skip the test when each of its `count` candidates declined these inputs, saying why."""
    if len(declined) == count:
        _skip_declined(declined)


def _skip_declined(declined: Mapping[str, str]) -> NoReturn:
    said = ", ".join(f"{name!r} ({why})" for name, why in declined.items())
    pytest.skip(f"every candidate declined: {said}")


def tune_set(
    session: AutotuneSession, node: pytest.Item, group: GroupRequest, raised: set[str]
) -> Any:
    """Tune mode: the group tuned and judged; the winner's output. Where candidates
    raised (`raised`, their names), the first shows its traceback (`raise_again`)."""
    __tracebackhide__ = True  # a candidate's traceback shows the user's frames alone
    failures = [f for name, _ in group.candidates if (f := session.candidate_outcome(group, name))]
    gate = session.gate_failure(group)
    if gate is not None and failures == [gate] and node.stash.get(IN_BODY, False):
        # Every candidate ran right and the winner's output is sound: the test goes on to
        # its later calls and fails at its end with every group's verdict.
        node.stash.setdefault(GATE_FAILURES, {})[f"{group.group}: {gate}"] = None
        failures = []
    if failures:
        # Once each: what fails the whole group (a key collision) is every candidate's.
        failure = "\n\n".join(dict.fromkeys(failures))
        for name, fn in group.candidates:
            if name in raised:
                raise_again(functools.partial(group.run, fn, *clone_value(group.inputs)), failure)
                break
        pytest.fail(failure, pytrace=False)
    declined = {
        name: why for name, _ in group.candidates if (why := session.declined(group.group, name))
    }
    _skip_if_all_declined(declined, len(group.candidates))  # as in check mode
    return _run_winner(session, group)


def _run_winner(session: AutotuneSession, group: GroupRequest) -> Any:
    """The winner's output on the caller's own inputs, as `LocalTuner.execute` calls it
    (on copies, a set that writes into an `out` argument left the test's array as it was).
    Where it declines them (a call repeating an earlier one's key on inputs it refuses),
    the next candidate that takes them runs the call, as the key tuned again on them would
    give; the test is skipped where every candidate declines them."""
    __tracebackhide__ = True  # a candidate's traceback shows the user's frames alone
    declined: dict[str, str] = {}  # name: why
    for name, fn in session.winners(group):
        try:
            return fn(*group.inputs)
        except (AutotuneSkip, AutotuneError) as exc:
            if not declines(exc):
                raise
            declined[name] = str(exc)
    _skip_declined(declined)


def fail_on_gate_failures(item: pytest.Item) -> None:
    """After a test's body returned: fail it with the gate's failures of its fixture calls,
    if any (`GATE_FAILURES`)."""
    failures = gate_failures_of(item)
    if failures is not None:
        fail(failures)


def gate_failures_of(item: pytest.Item) -> str | None:
    """The gate's failures of the test's fixture calls not yet failed on, taken: None where
    there are none. Also ends the body (`IN_BODY`)."""
    item.stash[IN_BODY] = False
    failures = item.stash.get(GATE_FAILURES, None)
    if not failures:
        return None
    del item.stash[GATE_FAILURES]
    return "\n\n".join(failures)


def check_set(
    session: AutotuneSession,
    candidates: tuple[tuple[str, Callable[..., Any]], ...],
    run: Callable[..., Any],
    inputs: tuple[Any, ...],
    options: Mapping[str, Any],
    unplanned: Collection[str] = (),
) -> Any:
    """Check mode: every candidate against the reference; the reference's output (else the
    first candidate's that does not decline). A candidate that raises `AutotuneSkip` declines
    these inputs and is left out, as tuning leaves it out; the test is skipped when every
    candidate declines. Those the set's groups skip for the key (`unplanned`) decline it
    unrun, as in tuning (`Tuner._check`): the library never runs them for this key."""
    __tracebackhide__ = True  # a candidate's traceback shows the user's frames alone
    reference = options["reference"]
    failures: list[str] = []
    declined: dict[str, str] = {}  # name: why
    for name, _ in candidates:
        if name in unplanned:
            declined[name] = UNPLANNED
            continue
        try:
            failure = check_candidate(
                name,
                candidates,
                run,
                inputs,
                reference=reference,
                config=session.settings.for_marker(options).engine,
                check_output=options["check_output"],
                not_run=unplanned,
                # The library's own functions: one writing into an `out` argument returns
                # nothing, and is judged by what it wrote, as the library's tuner judges it.
                in_place=True,
                noted=True,
            )
        except AutotuneSkip as exc:
            declined[name] = str(exc)
            continue
        if failure:
            failures.append(failure)
    if failures:
        pytest.fail("\n\n".join(failures), pytrace=False)
    _skip_if_all_declined(declined, len(candidates))
    if isinstance(reference, str):  # a candidate's name, as the marker takes it
        # One that declined these inputs, or that the set's groups leave out of the key, is
        # no reference here, as in the checks above: called on the caller's inputs, it
        # raised its AutotuneSkip, or gave an output the library never computes.
        reference = None if reference in declined else dict(candidates)[reference]
    # On the caller's own inputs, as under --autotune (`_run_winner`).
    if reference is not None:
        return run(reference, *inputs)
    first = next(fn for name, fn in candidates if name not in declined)
    return run(first, *inputs)
