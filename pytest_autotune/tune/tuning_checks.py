"""The checks of one tuning: every candidate called once, each on its own copy of the
inputs, and its output compared with the reference's before any candidate is timed."""

from __future__ import annotations

from collections.abc import Callable, Collection
from typing import Any

from pytest_autotune.tune.check_result import CheckResult
from pytest_autotune.tune.checks import check_candidates, in_place_output
from pytest_autotune.tune.client import Client, client_context
from pytest_autotune.tune.client_calls import note_if_unusable
from pytest_autotune.tune.clone import clone_value
from pytest_autotune.tune.errors import UNPLANNED, AutotuneSkip
from pytest_autotune.tune.inputs import candidate_cannot_take
from pytest_autotune.tune.tunable_set import CloneInputGenerator, TunableSet, TuneInputs

Reference = Callable[..., Any] | str
"""What the checks compare the candidates' outputs with: a function of the inputs, or the
name of a candidate."""


def run_checks(
    name: str,
    key: Any,
    tunables: TunableSet,
    inputs: TuneInputs,
    client: Client,
    unplanned: Collection[int] = (),
    *,
    reference: Reference | None,
    require_output: bool,
    written_inputs: bool,
    compare_outputs: bool,
    reference_last: Collection[str],
    rtol: float,
    atol: float,
) -> tuple[CheckResult, ...]:
    """Every candidate run once and compared with the reference, but those the plan
    never tries for `key` (`unplanned`), which decline it unrun: a negative priority
    says a kernel is not for such keys (sizes it computes something else for), and run
    as the default reference, the first that succeeds, it failed every right candidate
    against its answer, leaving no winner, where the seed tunes the planned ones and
    runs the fastest."""

    # What a call that returned None wrote is found against the inputs as they were
    # before any candidate ran: a generation of the default generator, which copies,
    # else a copy taken now. A generator handing every call the caller's arrays gave
    # them written by the candidates before, and a right kernel writing what the
    # reference wrote there "wrote nothing".
    before: list[TuneInputs] = []
    judged_written = written_inputs and require_output

    def called(fn: Callable[..., Any], label: str) -> object:
        args = tunables.generate_inputs(key, inputs)
        try:
            try:
                out = fn(*args)
            except TypeError as exc:
                said = candidate_cannot_take(fn, args, exc)
                if said is None:
                    raise
                raise said from exc
            client.sync()
        except Exception as error:
            note_if_unusable(client, f"{label} of {name} raised {type(error).__name__}: {error}")
            raise
        if out is None and not require_output:
            # An in-place kernel (a CuPy kernel launched into an output buffer) returns
            # None, and None equals None: every candidate passed, a wrong one included,
            # and could win. What it wrote into its own copies of the inputs is its
            # output. (The plugin requires an output and says so instead.)
            return args
        if out is None and judged_written:
            if not before:
                before.append(tunables.generate_inputs(key, inputs))
            return in_place_output(args, before[0])
        return out

    def run(index: int) -> object:
        if index in unplanned:
            raise AutotuneSkip(UNPLANNED)
        return called(tunables.fns[index], f"candidate {tunables.names[index]!r}")

    checked_against = _reference_for(name, reference, tunables, called)
    with client_context(client):  # the copies, the calls and the comparisons
        if judged_written and not isinstance(tunables.input_gen, CloneInputGenerator):
            before.append(clone_value(tunables.generate_inputs(key, inputs)))
        return tuple(
            check_candidates(
                tunables.names,
                run,
                checked_against,
                rtol=rtol,
                atol=atol,
                require_output=require_output,
                compare=compare_outputs,
                last=[i for i, n in enumerate(tunables.names) if n in reference_last],
            )
        )


def _reference_for(
    name: str,
    reference: Reference | None,
    tunables: TunableSet,
    called: Callable[[Callable[..., Any], str], object],
) -> int | Callable[[], object] | None:
    """What the checks compare with: the index of the candidate named as the reference,
    the reference function called as a candidate is (`called`), or None, the first
    candidate that succeeds."""
    if isinstance(reference, str):
        # A candidate named as the reference is its own check's reference, named in
        # every message as plain pytest names it ("the reference 'exact'"); a name of
        # none is refused rather than checked against the first that succeeds.
        if reference not in tunables.names:
            raise ValueError(
                f"{name}: reference {reference!r} names no candidate: {sorted(tunables.names)}"
            )
        return tunables.names.index(reference)
    if reference is not None:
        ref = reference

        def reference_output() -> object:
            return called(ref, "the reference")

        return reference_output
    return None
