"""Output checks: every candidate must compute the same answer as the reference.

A fast wrong kernel is a bug, so with checks on each candidate runs once and its output is
compared with the reference's. The comparison (`comparison`) is strict where strictness is
free (dtype, shape, integers, NaN positions) and tolerant only where floating point rounding
makes exact equality meaningless (`rtol`/`atol` on inexact values).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Collection, Sequence
from typing import Any, cast

from pytest_autotune.tune.check_result import RAISED, SKIPPED, UNCHECKABLE, CheckResult
from pytest_autotune.tune.clone import clone_value
from pytest_autotune.tune.comparison import DEFAULT_ATOL as DEFAULT_ATOL
from pytest_autotune.tune.comparison import DEFAULT_RTOL as DEFAULT_RTOL
from pytest_autotune.tune.comparison import AutotuneOutput as AutotuneOutput
from pytest_autotune.tune.comparison import compare_outputs as compare_outputs
from pytest_autotune.tune.comparison import uncomparable
from pytest_autotune.tune.differences import describe
from pytest_autotune.tune.errors import AutotuneError, AutotuneErrorKind, CandidateStopped


class WrittenInputs(tuple):  # type: ignore[type-arg]
    """The inputs an in-place call wrote into, standing for the output it did not return;
    compared as the tuple it is, and named as what it is where a call that wrote nothing
    fails against it (`returned_none`)."""


def in_place_output(written: tuple[Any, ...], before: tuple[Any, ...]) -> object:
    """The output of a call that returned None: the inputs it was given (`written`, its own
    copies) where it wrote into them, compared with a copy of them as they were (`before`);
    else None, nothing to compare. A library's in-place kernel (a CuPy kernel launched into
    an `out` argument) returns nothing, and what it wrote is its answer; a function that
    forgot its `return` wrote nothing, and none of its candidates may pass unchecked."""
    wrote = compare_outputs(before, written, 0.0, 0.0) is not None
    return WrittenInputs(written) if wrote else None


NOTHING_TO_COMPARE = (
    "{} returned None, so there is nothing to compare (return the output from the test"
    " body or the set's functions, or pass check_output=False to the marker or the"
    " autotune(...) call)"
)
"""Why a reference output of None fails: None equals None, so a test body without `return`
would pass every candidate, a wrong one included. It names both places the option goes: a
test of the `autotune` fixture has no marker, and was told to pass it "to the marker"."""


def returned_none(label: str, expected: object) -> str:
    """Why a candidate that returned None fails, where the reference (`label`) returned
    `expected`: in both modes alike. Where the reference too returned None, having written
    into its inputs (`WrittenInputs`), the candidate wrote nothing into its own."""
    if isinstance(expected, WrittenInputs):
        return (
            f"returned None and wrote nothing into its inputs, where {label} returned None"
            " having written into its inputs"
        )
    return f"returned None, where {label} returned {describe(expected)}"


def unusable_reference(output: object, label: str, require_output: bool = True) -> str | None:
    """Why a reference's output (`label` names the reference) shows no candidate right, where
    it does not: None where an output is required, or an iterator. The one rule of the
    checks in both modes and of an explicit reference. A reference that returns an
    iterator or a future is none: compared with itself, its candidate passed under
    --autotune and failed in a plain run, where its own test compares it."""
    if output is None and require_output:
        return NOTHING_TO_COMPARE.format(label)
    unreadable = uncomparable(output)
    return None if unreadable is None else f"{label} returned {unreadable}"


def check_candidates(
    names: Sequence[str],
    run: Callable[[int], object],
    reference: int | Callable[[], object] | None = None,
    rtol: float = DEFAULT_RTOL,
    atol: float = DEFAULT_ATOL,
    equal_nan: bool = True,
    require_output: bool = False,
    last: Collection[int] = (),
    compare: bool = True,
) -> list[CheckResult]:
    """Run every candidate once and compare its output with the reference's.

    `run(i)` calls candidate `i` on fresh inputs and returns its output. The reference is
    the output of `reference()` when it is a callable, of candidate `reference` when it is
    an index, else of the first candidate that succeeds, those in `last` (expected to be
    wrong: their tests are marked `xfail`) tried after every other. Candidates run one at a time and
    each output is compared as soon as it exists, so only the reference's output is kept
    alive (GPU memory holds two outputs, not one per candidate). A candidate that raises
    fails with the exception's text and is never compared; one that raises `AutotuneSkip`
    passes as skipped. A reference that declines the key so leaves the others checked as
    without one, against the first that succeeds. When the reference itself fails or
    produces nothing, every candidate that ran fails with that reason: none of them can be
    shown correct. Results come in the
    order of `names`. With `require_output`, a reference output of None is such a case:
    a None before any output waits (`_Judge.none_waits`), and is that case only where no
    candidate returns an output; otherwise the candidates that returned None fail alone.
    Without `compare` (`check_output=False`: nothing to compare), every candidate that runs
    passes and no reference is called, as in plain pytest's check of each candidate.
    """
    if not compare:
        return [_ran(names[index], run, index) for index in range(len(names))]
    # An imprecise candidate listed first was the reference: it passed, and every
    # correct one failed as differing from it.
    order = [i for i in range(len(names)) if i not in last]
    order += [i for i in range(len(names)) if i in last]
    judge = _Judge(names, rtol, atol, equal_nan, require_output, last)
    if callable(reference):
        judge.explicit(reference)
    elif reference is not None:
        if not 0 <= reference < len(names):
            raise IndexError(
                f"reference index {reference} is out of range for {len(names)} candidates"
            )
        order.remove(reference)
        order.insert(0, reference)
        # Its None is the reference, as its caller asked, not an output yet to come.
        judge.none_waits = False
    for index in order:
        try:
            output = run(index)
        except Exception as exc:
            judge.results[index] = _raised(names[index], exc)
        else:
            judge.output(index, output)
            # Dropped before the next candidate runs: still bound, it was a third output in
            # memory (beside the kept reference and the next one), and a candidate that fits
            # beside the reference ran out of (device) memory beside two.
            del output
        if index == reference:
            judge.named_reference_ran(index)
    judge.nothing_returned()
    judge.name_agreeing()
    return [judge.results[i] for i in range(len(names))]


class _Judge:
    """`check_candidates`' reference and each candidate's result, as the outputs come."""

    def __init__(
        self,
        names: Sequence[str],
        rtol: float,
        atol: float,
        equal_nan: bool,
        require_output: bool,
        last: Collection[int] = (),
    ) -> None:
        self.names = names
        self.last = last
        self.tolerances = (rtol, atol, equal_nan)
        self.require_output = require_output
        self.results: dict[int, CheckResult] = {}
        self.ref_output: object = None
        self.ref_label = ""
        self.have_reference = False
        self.no_reference: str | None = None
        """Why no candidate can be shown correct (the reference failed or gave nothing)."""
        self.none_waits = True
        """Whether a None before any output is no output (an in-place kernel's, or a
        forgotten `return`) rather than the reference: judged once a candidate returns one,
        or at the end (`nothing_returned`)."""
        self.returned_none: list[int] = []
        self.differing: tuple[int, object] | None = None
        """The first candidate that differed from the reference, and its output: one more
        output kept, only once a check has failed."""
        self.agreeing: list[int] = []
        """The candidates that differed from the reference as `differing` did."""

    def explicit(self, reference: Callable[[], object]) -> None:
        output, self.no_reference, declined = _explicit_reference(reference, self.require_output)
        if declined:
            return  # as without one: the first candidate that succeeds is the reference
        self.ref_label = "the explicit reference"
        self.ref_output = output
        self.have_reference = self.no_reference is None

    def output(self, index: int, output: object) -> None:
        name = self.names[index]
        if self.have_reference and output is None:
            # As plain pytest says it: "expected WrittenInputs of 2 items, got None" named
            # an in-place reference's written inputs by a type of ours.
            self.results[index] = CheckResult(
                name, False, returned_none(self.ref_label, self.ref_output)
            )
        elif self.have_reference:
            diff = compare_outputs(self.ref_output, output, *self.tolerances)
            self.results[index] = (
                CheckResult(name, True)
                if diff is None
                else CheckResult(name, False, f"differs from {self.ref_label}: {diff}")
            )
            if diff is not None and index not in self.last:
                self._differed(index, output)
        elif self.no_reference is not None:
            self.results[index] = CheckResult(name, False, f"{UNCHECKABLE}{self.no_reference}")
        elif output is None and self.none_waits:
            first = not self.returned_none
            self.results[index] = CheckResult(name, True, "reference" if first else "")
            self.returned_none.append(index)
        elif (
            unusable := unusable_reference(output, f"the reference {name!r}", self.require_output)
        ) is not None:
            self.no_reference = unusable
            self.results[index] = CheckResult(name, False, unusable)
        else:
            self.ref_output, self.have_reference = copy_output(output), True
            self.ref_label = f"the reference {name!r}"
            self.results[index] = CheckResult(name, True, "reference")
            for earlier in self.returned_none:
                # A candidate that forgot its `return` was the reference where it came
                # first: it won the tuning, every correct one failing as "expected None".
                self.results[earlier] = CheckResult(
                    self.names[earlier], False, returned_none(self.ref_label, output)
                )

    def named_reference_ran(self, index: int) -> None:
        """After the reference named by its index (`reference=`) ran: where it gave no
        output to compare with, what that means for the others."""
        if self.have_reference:
            return
        if self.results[index].skipped:
            # It declined the key: the others are checked against the first that
            # succeeds, as where no reference is named (plain pytest skipped them all as
            # declining, and tuning failed them all as "cannot be checked").
            self.none_waits = True
        elif self.no_reference is None:
            # It raised. An output that shows nothing (its None, an iterator) said why
            # already: told "failed", the others sent the user looking for an error.
            self.no_reference = f"the reference {self.names[index]!r} failed"

    def nothing_returned(self) -> None:
        """Where an output is required and no candidate returned one, those that returned
        None fail as the first of them, the reference, gives nothing to compare. Judged at
        the end: a first candidate that forgot its `return` failed every right one after
        it as "cannot be checked", with advice to return the output from the test body,
        which did return it."""
        if not self.require_output or self.have_reference or not self.returned_none:
            return
        first, *others = self.returned_none
        unusable = NOTHING_TO_COMPARE.format(f"the reference {self.names[first]!r}")
        self.results[first] = CheckResult(self.names[first], False, unusable)
        for index in others:
            self.results[index] = CheckResult(self.names[index], False, f"{UNCHECKABLE}{unusable}")

    def _differed(self, index: int, output: object) -> None:
        if self.differing is None:
            self.differing = (index, copy_output(output))
        elif compare_outputs(self.differing[1], output, *self.tolerances) is None:
            self.agreeing.append(index)

    def name_agreeing(self) -> None:
        """Candidates that differ from the reference but agree with each other say so: the
        first candidate, the reference by default, was the wrong one (a QA round's `* 1.01`
        in it failed both correct candidates, and it won), and nothing said which to
        suspect. Those that agree may still share a bug: a hint, not a verdict."""
        if self.differing is None or not self.agreeing:
            return
        group = [self.differing[0], *self.agreeing]
        for index in group:
            others = ", ".join(repr(self.names[i]) for i in group if i != index)
            result = self.results[index]
            self.results[index] = dataclasses.replace(
                result,
                message=f"{result.message}; it agrees with {others}: is {self.ref_label} the"
                " wrong one? (reference= names the candidate the others are checked against)",
            )


def _raised(name: str, exc: Exception) -> CheckResult:
    """The check of a candidate that raised: failed with its error, or skipped where it
    declined the key (`AutotuneSkip`, or the seed's `AutotuneError::Skip` raised), as it
    does when the candidate is timed."""
    error = AutotuneError.from_exception(name, exc)
    declined = error.kind is AutotuneErrorKind.SKIP
    stopped = isinstance(exc, CandidateStopped)
    said = SKIPPED if declined else "" if stopped else RAISED
    message = f"{said}{error.message}"
    return CheckResult(
        name, declined, message, skipped=declined, stopped=stopped, trace=error.trace
    )


def _ran(name: str, run: Callable[[int], object], index: int) -> CheckResult:
    """The check of a candidate whose output is not compared: passed where it ran."""
    try:
        run(index)
    except Exception as exc:
        return _raised(name, exc)
    return CheckResult(name, True)


def _explicit_reference(
    reference: Callable[[], object], require_output: bool
) -> tuple[object, str | None, bool]:
    """The output of an explicit reference, or None and why it cannot serve as one; and
    whether it declined the key (`AutotuneSkip`), which leaves the group without one."""
    try:
        output = reference()
    except Exception as exc:
        error = AutotuneError.from_exception("", exc)
        if error.kind is AutotuneErrorKind.SKIP:
            return None, None, True
        return None, f"the reference raised {error.message}", False
    unusable = unusable_reference(output, "the explicit reference", require_output)
    if unusable is not None:
        return None, unusable, False
    return copy_output(output), None, False


def copy_output(output: object) -> object:
    """An output as kept while another candidate runs: a copy of its arrays. An in-place
    reference returns its input, and where the input generator gives every call the same
    arrays (`lambda key, inputs: inputs`), the next in-place candidate wrote over it and was
    compared with its own output: a wrong one passed (so too with a module-level workspace
    every candidate writes into and returns). One copy, made once, while the original is
    dropped: memory still holds two outputs, the kept one and one other."""
    kept: object = clone_value(output)
    if isinstance(output, WrittenInputs):
        # Ours, no user's type: kept uncopied as one, an in-place reference's inputs were
        # the next candidate's (a generator handing every call the same arrays), and a
        # wrong candidate was compared with what it wrote itself, and passed.
        return WrittenInputs(cast(tuple[Any, ...], kept))
    # A dict or tuple subclass of the user's is copied as a plain one, which would lose its
    # own `autotune_compare`: such a value is kept as it is.
    return kept if type(kept) is type(output) else output
