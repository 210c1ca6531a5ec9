"""A decision's candidate table: each candidate's row (median, spread, roof, check, error)
and its bar on the chart of candidate medians, the winner shown with its precise
measurement."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from pytest_autotune.report.failures import error_text, reason_in_a_word
from pytest_autotune.report.figures import format_fraction
from pytest_autotune.report.html.records import Extra, costs_text, measured_name
from pytest_autotune.report.html.roofs import Roofline
from pytest_autotune.report.html.views import MISSING, CandidateView
from pytest_autotune.report.svg import Bar, quartiles
from pytest_autotune.tune.benchmark import AutotuneOutcome, AutotuneResult, SampleStats
from pytest_autotune.tune.check_result import RAISED, CheckResult
from pytest_autotune.tune.errors import AutotuneErrorKind
from pytest_autotune.tune.log import format_duration
from pytest_autotune.tune.records import AutotuneRecord


def spread(samples: Sequence[float]) -> str:
    """Min to max of the samples: with the handful of samples tuning takes, a quartile
    would be an interpolation between two of them; the range hides nothing."""
    return f"{format_duration(min(samples))} \u2013 {format_duration(max(samples))}"


def _sort_number(value: float | None, missing: str = "Infinity") -> str:
    """A sort key for the page's script. A missing value (a failed candidate) sorts as the
    worst: an infinite median, a roof fraction of minus infinity."""
    return missing if value is None else repr(value)


def _check_cell(check: CheckResult | None, expected: bool = False) -> tuple[str, str, str]:
    """(text, CSS class, message) of a candidate's output check; `expected`: its test is
    marked xfail, so a failed check is what the mark expects, not a failure of the run."""
    if check is None:
        return MISSING, "none", ""
    if check.skipped:
        return "skipped", "skipped", check.message
    if not check.passed and expected:
        return "failed (xfail)", "skipped", check.message
    if not check.passed:
        # One that raised there compared nothing: it raised, its message says what.
        raised = check.message.startswith(RAISED)
        return "RAISED" if raised else "FAILED", "failed", check.message.removeprefix(RAISED)
    if check.message == "reference":
        return "reference", "passed", ""
    return "passed", "passed", check.message


def _candidate(
    index: int,
    result: AutotuneResult,
    winner: bool,
    check: CheckResult | None,
    roofline: Roofline,
    samples: Sequence[float],
    costs: str = "",
    *,
    precise: bool = False,
    expected_to_fail: bool = False,
) -> tuple[CandidateView, Bar]:
    """A candidate's row and bar; `samples` are what it is shown with (the winner's precise
    measurement where `precise`, else tuning samples)."""
    cell = _check_cell(check, expected_to_fail)
    if isinstance(result, AutotuneOutcome) and samples:
        return _measured(index, result, winner, cell, roofline, samples, costs, precise)
    return _unmeasured(index, result, winner, cell)


def _measured(
    index: int,
    result: AutotuneOutcome,
    winner: bool,
    cell: tuple[str, str, str],
    roofline: Roofline,
    samples: Sequence[float],
    costs: str,
    precise: bool,
) -> tuple[CandidateView, Bar]:
    """The row and bar of a candidate with samples: its median, spread and roof."""
    check_text, check_class, check_message = cell
    stats = SampleStats.of(samples)
    fraction = roofline.fraction(stats.median)
    count = f"{stats.count}" + (" (precise)" if precise else "")
    view = CandidateView(
        index=index,
        name=result.name,
        winner=winner,
        median=format_duration(stats.median),
        median_sort=_sort_number(stats.median),
        relative="",
        spread=spread(samples),
        spread_sort=_sort_number(min(samples)),
        samples=count,
        samples_sort=str(stats.count),
        roof=format_fraction(fraction),
        roof_sort=_sort_number(fraction, "-Infinity"),
        check=check_text,
        check_class=check_class,
        check_message=check_message,
        error="",
        costs=costs,
    )
    q1, _, q3 = quartiles(samples)
    return view, Bar(result.name, stats.median, q1, q3, winner)


def _unmeasured(
    index: int, result: AutotuneResult, winner: bool, cell: tuple[str, str, str]
) -> tuple[CandidateView, Bar]:
    """The row and bar of a candidate without samples: its error, or why it has none."""
    check_text, check_class, check_message = cell
    name = result.name or MISSING
    kind = result.kind.value if not isinstance(result, AutotuneOutcome) else "unmeasured"
    message = "" if isinstance(result, AutotuneOutcome) else result.message
    view = CandidateView(
        index=index,
        name=name,
        winner=winner,
        median=MISSING,
        median_sort=_sort_number(None),
        relative=MISSING,
        spread=MISSING,
        spread_sort=_sort_number(None),
        samples="0",
        samples_sort="0",
        roof=MISSING,
        roof_sort=_sort_number(None, "-Infinity"),
        check=check_text,
        check_class=check_class,
        check_message=check_message,
        error=error_text(kind, message),
    )
    # What the terminal says of it: a candidate that declined the key is skipped, no error,
    # and the kind of an error ("unknown" for one the candidate raised) says nothing.
    said = "skipped" if kind == AutotuneErrorKind.SKIP.value else "error"
    word = reason_in_a_word(message, skipped=said == "skipped") if message else kind
    # A reason too long for the note is that word alone, not "error: error".
    return view, Bar(name, None, note=said if word == said else f"{said}: {word}")


def with_relative(candidates: list[CandidateView]) -> list[CandidateView]:
    """Each measured candidate's median over the fastest one's, as pytest-benchmark shows."""
    medians = [float(c.median_sort) for c in candidates if c.median != MISSING]
    fastest = min(medians, default=0.0)
    return [
        replace(c, relative=f"{float(c.median_sort) / fastest:.2f}x")
        if c.median != MISSING and fastest > 0
        else c
        for c in candidates
    ]


def candidate_rows(
    record: AutotuneRecord,
    results: Sequence[tuple[int, AutotuneResult]],
    checks: dict[str, CheckResult],
    roofline: Roofline,
    winner_samples: Sequence[float],
    extra: Extra,
) -> tuple[list[CandidateView], list[Bar]]:
    """Each candidate's row and bar, the winner's shown with its precise measurement."""
    measured = measured_name(record)
    # A LocalTuner's record has no precise measurement: its winner's tuning samples stand in.
    precise = bool(extra.typed.winner_samples_ns)
    candidates, bars = [], []
    for index, result in results:
        # A winner index naming another candidate marks no winner (a record that does not
        # agree with itself); the gate's measured candidate, when not tuning's, by name.
        winner = (
            index == record.fastest_index and result.name == record.fastest_name
            if measured == record.fastest_name
            else result.name == measured
        ) and measured is not None
        shown: Sequence[float] = (
            winner_samples
            if winner
            else (result.effective_samples if isinstance(result, AutotuneOutcome) else ())
        )
        view, bar = _candidate(
            index,
            result,
            winner,
            checks.get(result.name or ""),
            roofline,
            shown,
            costs_text(extra, result.name or ""),
            precise=winner and precise,
            expected_to_fail=result.name in (extra.typed.expected_failures or ()),
        )
        candidates.append(view)
        bars.append(bar)

    return candidates, bars
