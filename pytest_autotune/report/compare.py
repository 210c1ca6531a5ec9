"""`pytest-autotune compare A B`: judge a later run against an earlier one with the gate's
own rule, outside pytest.

A and B are two record files (`--autotune-record`) or two cache folders (`.autotune/`, as
committed before and after a change). For every group and key both hold, A is the baseline
and B the current measurement, and `gate.judge` decides, so the verdict is the one the CI
gate would give (its tolerance, its interval, its calibration where both sides carry the
read, the contention a record says B was measured under, and the GPU each side names);
nothing of the rule is restated here.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_autotune.gate import Baseline, GroupVerdict, judge
from pytest_autotune.gate.baseline import work_amounts
from pytest_autotune.gate.comparable import not_judged_message, winner_out
from pytest_autotune.report import verdict_text
from pytest_autotune.report.columns import ljust, width
from pytest_autotune.report.compare_sides import CompareError, Side, cache_sides, record_sides
from pytest_autotune.report.failures import REPORTED
from pytest_autotune.report.figures import format_interval
from pytest_autotune.report.names import decision_name, group_order
from pytest_autotune.tune.benchmark import SampleStats
from pytest_autotune.tune.cache_read import legacy_names
from pytest_autotune.tune.log import format_duration
from pytest_autotune.tune.records import AutotuneRecord

__all__ = ["CompareError", "Compared", "compare_caches", "compare_records", "render_comparison"]


@dataclass(frozen=True, slots=True)
class Compared:
    """One group and key: its winner and median on both sides, and the gate's verdict."""

    name: str
    order: tuple[Any, ...]
    before: str
    after: str
    verdict: GroupVerdict | None
    """None when one side does not hold the group, or holds it with nothing measured."""
    note: str = ""
    """Why there is no verdict: "only in A", "nothing measured in B", ..."""
    device_id: str = ""
    """The device the row's sides were measured on (a group measured on several has a row
    for each)."""
    winner: str = ""
    """B's winner, the candidate the verdict judged."""


def _compare(
    before: Mapping[tuple[str, str, str], Side | None],
    after: Mapping[tuple[str, str, str], Side | None],
    max_regression: float | None,
) -> list[Compared]:
    rows = []
    identities = sorted(before.keys() | after.keys(), key=lambda i: (group_order(i[0], i[1]), i[2]))
    devices: dict[tuple[str, str], set[str]] = {}
    for name, key, device_id in identities:
        devices.setdefault((name, key), set()).add(device_id)
    for identity in identities:
        name, key, device_id = identity
        old, new = before.get(identity), after.get(identity)
        verdict = None
        if old is not None and new is not None:
            verdict = _judged(old, new, max_regression)
        # The baseline as the gate judges against it: a calibrated comparison's is the mean
        # of the sessions that carry a read.
        calibrated = (
            old is not None
            and new is not None
            and old.baseline is not None
            and new.measurement.calibrated_against(old.baseline)
        )
        shown = decision_name(name, key)
        if len(devices[name, key]) > 1:
            # One group measured on several devices: its rows would read alike.
            shown += f" on {device_id}"
        rows.append(
            Compared(
                name=shown,
                order=group_order(name, key),
                before=_describe(old, identity in before, baseline=True, calibrated=calibrated),
                after=_describe(new, identity in after),
                verdict=verdict,
                note=_no_verdict(identity in before, identity in after, old, new),
                device_id=device_id,
                winner=new.winner if new is not None else "",
            )
        )
    return rows


def _judged(old: Side, new: Side, max_regression: float | None) -> GroupVerdict:
    """B's winner judged by the gate against A's: A's cache entry as the baseline, or
    one made of A's record."""
    baseline = old.baseline or Baseline(
        device_id=old.device_id,
        checksum=old.checksum,
        fastest_name=old.winner,
        samples=old.measurement.samples,
        source=old.source,
        calibration=old.measurement.calibration,
        machine=old.machine,
        thread_env=old.thread_env,
        peak=old.binding[0],
        peak_resource=old.binding[1],
        peak_level=old.binding[2],
        work=None if old.bounds is None else work_amounts(old.bounds),
        candidates=old.names(),
    )
    return judge(
        new.measurement,
        baseline,
        device_id=new.device_id,
        checksum=new.checksum,
        peaks=new.peaks,
        # The group's own tolerance, as B's gate judged it, unless one is given.
        max_regression=new.max_regression if max_regression is None else max_regression,
        machine=new.machine,
        thread_env=new.thread_env,
        failed_here=_winner_out(old, new),
        bounds=new.bounds,
        # What changed in a candidate list is said by name, as the gate says it.
        candidates=new.names(),
    )


def _winner_out(old: Side, new: Side) -> str | None:
    """Why B's winner is not judged against A's, where A's winner, a candidate of the same
    list on the same device, failed or was skipped in B (`gate.comparable.winner_out`), as
    the gate says it; None otherwise."""
    if old.winner == new.winner or (old.checksum, old.device_id) != (new.checksum, new.device_id):
        return None
    out = winner_out(old.winner, new.results.get(old.winner))
    return None if out is None else not_judged_message(out, new.winner)


def _no_verdict(in_before: bool, in_after: bool, old: Side | None, new: Side | None) -> str:
    """Why a row has no verdict: a side without the group, or a side whose run tuned it
    and measured nothing (every candidate failed), which is not a group new in the other."""
    if not in_before or not in_after:
        return "only in A" if in_before else "only in B"
    unmeasured = [side for side, value in (("A", old), ("B", new)) if value is None]
    return f"nothing measured in {' and '.join(unmeasured)}" if unmeasured else ""


def _describe(
    side: Side | None, present: bool, *, baseline: bool = False, calibrated: bool = False
) -> str:
    """A side's winner and time ("no winner" where its run measured nothing, "-" where it
    has no such group). As the `baseline`, a cache entry of several update sessions is
    shown as the time the gate judges against, their mean, not its newest session's
    median: the change beside it is computed from that. Where the other side's read
    scales the time (`calibrated`), that mean is of the sessions that carry a read."""
    if side is None:
        return "no winner" if present else "-"
    sessions = side.baseline.sessions() if side.baseline is not None else ()
    if calibrated:
        sessions = tuple(s for s in sessions if s.read is not None)
    if baseline and side.baseline is not None and len(sessions) > 1:
        median, _ = side.baseline.typical(calibrated)
        return f"{side.winner} {format_duration(median)} (mean of {len(sessions)} sessions)"
    return f"{side.winner} {format_duration(SampleStats.of(side.measurement.samples).median)}"


def compare_records(
    before: Sequence[AutotuneRecord],
    after: Sequence[AutotuneRecord],
    *,
    sources: tuple[str, str] = ("A", "B"),
    max_regression: float | None = None,
) -> list[Compared]:
    """Each group of two record files, B judged against A."""
    return _compare(
        record_sides(before, sources[0]), record_sides(after, sources[1]), max_regression
    )


def compare_caches(
    before: Path, after: Path, *, max_regression: float | None = None
) -> list[Compared]:
    """Each entry of two cache folders, B judged against A as the gate judges a run
    against the committed cache (A's sessions, peak and `sigma_between` included)."""
    renamed = {**legacy_names(before), **legacy_names(after)}
    return _compare(cache_sides(before, renamed), cache_sides(after, renamed), max_regression)


def render_comparison(
    rows: Sequence[Compared], labels: tuple[str, str], note: str | None = None
) -> str:
    """A table (group, A, B, change, verdict), then the gate's message of each group reported
    without failing and of each failure, as the gate's summary gives them, then `note` (how
    the groups were judged), then the count."""
    table = [("group", labels[0], labels[1], "change [interval]", "verdict")]
    for row in rows:
        if row.verdict is None:
            change, verdict = "-", row.note
        else:
            comparison = row.verdict.comparison
            change = format_interval(comparison) if comparison is not None else "-"
            verdict = verdict_text(row.verdict.verdict.value, row.verdict.failed)
        table.append((row.name, row.before, row.after, change, verdict))
    widths = [max(width(r[i]) for r in table) for i in range(5)]
    lines = ["  ".join(ljust(c, w) for c, w in zip(r, widths, strict=True)).rstrip() for r in table]
    lines.insert(1, "  ".join("-" * w for w in widths))
    failed = [r for r in rows if r.verdict is not None and r.verdict.failed]
    counted = [r for r in rows if r.verdict is not None]
    # As the gate's summary: a table's "too noisy" or "not comparable" says neither why nor
    # what would help, which the gate's message of such a group does.
    reported = [
        r
        for r in counted
        if r.verdict is not None
        and r.verdict.verdict in REPORTED
        and not r.verdict.failed
        and r.verdict.message
    ]
    for title, group in (("reported, not failing:", reported), ("gate failures:", failed)):
        if group:
            lines.extend(["", title])
        for row in group:
            assert row.verdict is not None
            winner = f" (winner {row.winner})" if row.winner else ""
            lines.append(f"{row.name}{winner}: {row.verdict.verdict.value}")
            lines.extend(f"    {line}" for line in row.verdict.message.splitlines())
    lines.append("")
    if note is not None:
        lines.append(note)
    lines.append(f"{len(failed)} of {len(counted)} compared groups fail the gate")
    return "\n".join(lines)
