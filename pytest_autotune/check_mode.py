"""Check mode: each candidate run once and compared with the reference (plain pytest)."""

from __future__ import annotations

import functools
from collections.abc import Callable, Collection, Sequence
from typing import Any

from pytest_autotune.body_outcomes import BodyFailed
from pytest_autotune.tune.checks import (
    copy_output,
    in_place_output,
    returned_none,
    unusable_reference,
)
from pytest_autotune.tune.clone import clone_value
from pytest_autotune.tune.comparison import compare_outputs
from pytest_autotune.tune.config import AutotuneConfig, ConfigError
from pytest_autotune.tune.errors import AutotuneError, AutotuneErrorKind, AutotuneSkip

Candidates = Sequence[tuple[str, Callable[..., Any]]]
Body = Callable[..., Any]
"""`run(candidate, *inputs)`: the test body called with one candidate."""


def candidate_call(run: Body, name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    """`run`'s call of candidate `name` (its function `fn`), taking the inputs. One
    function under two names (two configurations sharing it) is two candidates, each with
    a test of its own, which the function alone cannot tell apart: a body that knows its
    candidates by name (`candidate_run.CandidateRun.named`) is called by name. A partial, so
    that it pickles where the body and the candidate do (`fresh_process`)."""
    named = getattr(run, "named", None)
    return named(name, fn) if named is not None else functools.partial(run, fn)


def _produced(call: Callable[..., Any], inputs: tuple[Any, ...], in_place: bool) -> Any:
    """What `call` gives on its own copy of `inputs`: its output, or `in_place`, where it
    returns None, the copy where it wrote into it (`checks.in_place_output`, as tuning
    judges a library's in-place kernels, `Tuner.written_inputs`)."""
    __tracebackhide__ = True  # the candidate's traceback shows the user's frames alone
    args = clone_value(inputs)
    output = call(*args)
    return in_place_output(args, inputs) if output is None and in_place else output


def check_candidate(
    name: str,
    candidates: Candidates,
    run: Body,
    inputs: tuple[Any, ...],
    *,
    reference: Callable[..., Any] | str | None,
    config: AutotuneConfig,
    check_output: bool = True,
    not_run: Collection[str] = (),
    expected_to_fail: Collection[str] = (),
    in_place: bool = False,
    noted: bool = False,
) -> str | None:
    """Run one candidate once and compare its output with the reference's; the failure
    message, or None. Each call gets its own copy of the inputs, so a candidate writing into
    them changes nothing for the next. `config` holds the tolerances, the marker's
    included (`PluginSettings.for_marker`). The candidate's own exception propagates (the test
    shows its traceback); `AutotuneSkip` propagates too, for the caller to skip the test, as
    an `AutotuneError` of kind SKIP does, made one.
    A reference output of None fails unless `check_output` is False: None equals None, so
    a test body without `return` would pass every candidate, a wrong one included.
    The candidates in `not_run` (their tests marked not to run) are never the default
    reference, and those in `expected_to_fail` (marked `xfail`) only where no other
    succeeds: an imprecise one listed first failed every correct one.
    With `in_place` (a production set's functions, through the `autotune` fixture), a call
    that returns None having written into its copy of the inputs is judged by them
    (`_produced`); one that wrote nothing fails as returning None.
    With `noted` (the `autotune` fixture's set, whose candidates one test checks), what the
    candidate raises carries a note naming it (Python 3.11 on): a Numba candidate's
    TypingError shows Numba's frames alone, and the test's failure named no candidate.
    """
    __tracebackhide__ = True  # the candidate's traceback shows the user's frames alone
    by_name = dict(candidates)
    try:
        output = _produced(candidate_call(run, name, by_name[name]), inputs, in_place)
    except AutotuneError as exc:
        # The seed's `AutotuneError::Skip`, raised, declines as `AutotuneSkip` does (and as
        # it does when the candidate is timed).
        if exc.kind is AutotuneErrorKind.SKIP:
            raise AutotuneSkip(exc.message) from None
        raise
    except Exception as exc:
        add_note = getattr(exc, "add_note", None)
        if noted and add_note is not None and not isinstance(exc, AutotuneSkip):
            add_note(f"raised by candidate {name!r} of the set")
        raise
    if not check_output:
        return None
    # A copy: the reference runs next, and where both write into one module-level buffer
    # and return it, it overwrote this output, and a wrong candidate equalled the reference.
    output = copy_output(output)
    if isinstance(reference, str) and reference in not_run:
        # Never called for this key (marked not to run, or left out of the key by its
        # groups' priorities): no reference, as in tuning. Named by `reference=`, a
        # candidate of a group that declines the key was called all the same, and every
        # candidate it disagreed with failed in plain pytest alone.
        reference = None
    if reference is not None:
        try:
            label, expected = _explicit(name, output, by_name, run, inputs, reference, in_place)
        except AutotuneSkip:
            # The reference declined the key: this candidate is checked as without one, as
            # in tuning. The decline read as this candidate's own: every test of the group
            # skipped as declining, or xfailed where the reference's body called
            # `pytest.xfail()`, while tuning failed them all as "cannot be checked".
            reference = None
    if reference is None:
        label, expected = _first_that_succeeds(
            name, output, by_name, run, inputs, not_run, expected_to_fail, in_place
        )
    unusable = unusable_reference(expected, label)
    if unusable is not None:
        return f"candidate {name!r} cannot be checked: {unusable}"
    if output is None:
        return f"candidate {name!r} {returned_none(label, expected)}"
    diff = compare_outputs(expected, output, config.rtol, config.atol)
    # What differs on the first line, which the short test summary and `--tb=line` show.
    return None if diff is None else f"candidate {name!r} differs from {label}: {diff}"


def _first_that_succeeds(
    name: str,
    output: Any,
    by_name: dict[str, Callable[..., Any]],
    run: Body,
    inputs: tuple[Any, ...],
    not_run: Collection[str],
    expected_to_fail: Collection[str],
    in_place: bool = False,
) -> tuple[str, Any]:
    """The label and output of the default reference (candidate `name`'s own is `output`):
    the first candidate that succeeds with an output; where every one returns None, the
    first of them, whose None then shows none right (nothing to compare). A first candidate
    that forgot its `return` was the reference: every right one after it failed as "cannot
    be checked", where tuning (`checks.check_candidates`) fails that one alone."""
    # Stable: the expected failures last, each kind in the candidates' order.
    ordered = sorted(by_name, key=lambda other: other in expected_to_fail)
    first_none: tuple[str, Any] | None = None
    for other in ordered:
        if other in not_run and other != name:
            # This candidate ran here (its test was run by node id): it may be its own
            # reference, where every other raises, as without marks.
            continue
        label = f"the reference candidate {other!r} (the first that succeeds)"
        if other == name:
            expected = output
        else:
            try:
                expected = _produced(candidate_call(run, other, by_name[other]), inputs, in_place)
            except BodyFailed:
                # The body's failure, not the other's: taken for the other's, the
                # candidate was checked against itself, and a wrong one passed.
                raise
            except Exception:
                continue
        if expected is not None:
            return label, expected
        first_none = first_none or (label, None)
    # This candidate was its own last resort, so one None at least was met.
    return first_none or (f"the reference candidate {name!r}", None)


def _explicit(
    name: str,
    output: Any,
    by_name: dict[str, Callable[..., Any]],
    run: Body,
    inputs: tuple[Any, ...],
    reference: Callable[..., Any] | str,
    in_place: bool = False,
) -> tuple[str, Any]:
    """The label and output of the reference the marker names (a candidate's name, or a
    callable); `AutotuneSkip` where it declined the key, as an `AutotuneError` of kind SKIP
    does, made one."""
    try:
        if isinstance(reference, str):
            if reference not in by_name:
                raise ConfigError(f"reference={reference!r} names no candidate: {sorted(by_name)}")
            label = f"the reference candidate {reference!r}"
            if reference == name:
                return label, output
            call = candidate_call(run, reference, by_name[reference])
            return label, _produced(call, inputs, in_place)
        explicit = functools.partial(run, reference)
        return "the explicit reference", _produced(explicit, inputs, in_place)
    except AutotuneError as exc:
        if exc.kind is AutotuneErrorKind.SKIP:
            raise AutotuneSkip(exc.message) from None
        _note_the_reference(exc, name, reference)
        raise
    except Exception as exc:
        _note_the_reference(exc, name, reference)
        raise


def _note_the_reference(exc: Exception, name: str, reference: Callable[..., Any] | str) -> None:
    """Say on the reference's own error, raised in candidate `name`'s test, whose it is:
    that test showed the reference's traceback alone ("ValueError: ..." under
    `test_x[plain]`), which read as `plain`'s failure (Python 3.11 on: notes)."""
    add_note = getattr(exc, "add_note", None)
    if add_note is not None:
        which = (
            f"the reference {reference!r}"
            if isinstance(reference, str)
            else "the explicit reference"
        )
        add_note(
            f"raised by {which}, against which candidate {name!r} is checked:"
            f" {name!r} cannot be checked"
        )


__all__ = ["Body", "Candidates", "candidate_call", "check_candidate"]
