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

import math
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_autotune.gate import (
    Baseline,
    BaselineError,
    Calibration,
    GroupVerdict,
    Measurement,
    judge,
)
from pytest_autotune.gate.baseline import binding_peak, device_machine, work_amounts
from pytest_autotune.gate.comparable import not_judged_message, winner_out
from pytest_autotune.report import verdict_text
from pytest_autotune.report.columns import ljust, width
from pytest_autotune.report.failures import REPORTED
from pytest_autotune.report.figures import format_interval
from pytest_autotune.report.html import measured_name, winner_samples
from pytest_autotune.report.names import decision_name, group_order, key_text
from pytest_autotune.tune.benchmark import (
    AutotuneOutcome,
    AutotuneResult,
    SampleStats,
    result_from_json,
)
from pytest_autotune.tune.bounds import MEMORY, Bounds
from pytest_autotune.tune.cache import PersistentCache
from pytest_autotune.tune.cache_names import cache_files, misplaced
from pytest_autotune.tune.cache_read import legacy_names
from pytest_autotune.tune.errors import CacheFileWarning, CacheJournalWarning
from pytest_autotune.tune.files import json_text
from pytest_autotune.tune.log import format_duration
from pytest_autotune.tune.peaks import MemoryLevel, Peaks, device_peaks
from pytest_autotune.tune.records import AutotuneRecord, RecordError
from pytest_autotune.tune.tunable_set import checksum_of

__all__ = ["CompareError", "Compared", "compare_caches", "compare_records", "render_comparison"]


class CompareError(ValueError):
    """An input that cannot be compared; the message names the file and the key."""


@dataclass(frozen=True, slots=True)
class _Side:
    """One group's winner on one side: what a `Measurement` or a `Baseline` is made of."""

    device_id: str
    checksum: str
    winner: str
    measurement: Measurement
    """The winner's samples, calibration read and, from a record, the contention it was
    measured under: what the gate judged as this side's current measurement."""
    source: str
    baseline: Baseline | None = None
    """A cache side's own baseline (sessions, peak, sigma_between), None for a record."""
    peaks: Peaks | None = None
    max_regression: float | None = None
    """The tolerance the gate judged a record's group with (its marker's, or the run's
    settings'), None for the device kind's default and for a cache side."""
    machine: str | None = None
    """The GPU the side was measured on (its device block's uuid): runs on two GPUs of one
    model are judged with the gate's between-machine noise."""
    binding: tuple[float | None, str | None, str | None] = (None, None, None)
    """A record's binding roof (peak, resource, memory level), which a GPU baseline's time
    is scaled by against the other side's `peaks`, as the gate scales it."""
    bounds: Bounds | None = None
    """The bounds the side's winner was tuned under: the work it measured, which the gate
    finds another problem's where it differs (`Baseline.other_work`)."""
    results: Mapping[str, AutotuneResult] = field(default_factory=dict)
    """Every candidate's result by name: where the other side's winner failed or was
    skipped on this side, the two winners are not judged against each other, as the gate
    does not judge them (`gate.judge.winner_out`)."""

    def names(self) -> tuple[str, ...]:
        """The candidates' names in order, empty where its results do not list them all
        (their checksum is not the side's)."""
        names = tuple(self.results)
        return names if checksum_of(names) == self.checksum else ()


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


def _calibration(data: Any, where: str) -> Calibration | None:
    if data is None:
        return None
    try:
        return Calibration.from_json(data)
    except (TypeError, ValueError) as exc:
        raise CompareError(f"{where}: calibration does not read: {exc}") from None


def _contention(data: Any, where: str) -> dict[str, float | None]:
    """A record's `contention` block as `Measurement`'s fields: the gate widened the noise
    of a run on loaded CPUs by it (`gate.conditions`), so the same samples judged without
    it could fail where the gate said "too noisy"."""
    if data is None:
        return {}
    values = {}
    for name in ("load", "pressure", "helpers"):
        value = data.get(name)
        # Bounded: a hand-edited load of 1e308 widened the noise past the largest float, and
        # compare ended in an OverflowError traceback. A measured one is a few at most.
        if value is not None and (
            isinstance(value, bool)
            or not isinstance(value, (int, float))
            or not 0 <= value <= MAX_CONTENTION
        ):
            raise CompareError(
                f"{where}: contention: {name} is {json_text(value)}, expected a number from 0"
                f" to {MAX_CONTENTION:g} or null"
            )
        values[name] = None if value is None else float(value)
    return values


MAX_CONTENTION = 1e3
"""The largest `contention` value a record may hold: a load of a thousand runnable threads
per CPU is beyond any machine that could run a gate."""


def _device_block(value: Any) -> Mapping[str, Any] | None:
    """A record's device block where it is an object (older records have none)."""
    return value if isinstance(value, Mapping) else None


def _max_regression(value: Any, where: str) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value >= 0:
        raise CompareError(
            f"{where}: max_regression is {json_text(value)}, expected a number >= 0 or null"
        )
    return float(value)


def _record_sides(
    records: Sequence[AutotuneRecord], source: str
) -> dict[tuple[str, str, str], _Side | None]:
    """The last record of each group, key and device in a file (a file appended to by
    several runs holds the latest run last); None for a group the run tuned but could
    measure nothing of (every candidate failed): it was there, with nothing to judge."""
    sides: dict[tuple[str, str, str], _Side | None] = {}
    for record in records:
        group = record.extra.get("group")
        name = group if isinstance(group, str) else record.tuner
        key = key_text(record.key)
        try:
            samples = winner_samples(record)
            winner = measured_name(record)
        except RecordError as exc:
            # Its extras do not read: named with its file, as `report` names it.
            raise CompareError(f"{source}: {exc}") from None
        if not samples or winner is None:
            sides[(name, key, record.device_id)] = None
            continue
        where = f"{source}: {name} [{key}]"
        device = _device_block(record.extra.get("device"))
        try:
            binding = binding_peak(record.bounds, where)
        except BaselineError as exc:
            raise CompareError(str(exc)) from None
        sides[(name, key, record.device_id)] = _Side(
            device_id=record.device_id,
            checksum=record.checksum,
            winner=winner,
            measurement=Measurement(
                tuple(samples),
                _calibration(record.extra.get("calibration"), where),
                **_contention(record.extra.get("contention"), where),
            ),
            source=source,
            max_regression=_max_regression(record.extra.get("max_regression"), where),
            peaks=device_peaks(device),
            machine=device_machine(device),
            binding=binding,
            # `binding_peak` has read the bounds, or raised naming the record.
            bounds=None if record.bounds is None else Bounds.from_json(record.bounds),
            results=_results(record.results),
        )
    return sides


def _results(results: Sequence[Mapping[str, Any]]) -> dict[str, AutotuneResult]:
    """A record's results by candidate name; one that does not read is left out (its
    winner's samples, which the comparison rests on, were read already)."""
    read = {}
    for data in results:
        try:
            result = result_from_json(dict(data))
        except (KeyError, TypeError, ValueError):
            continue
        if result.name is not None:
            read[result.name] = result
    return read


def _cache_sides(folder: Path, renamed: Mapping[str, str]) -> dict[tuple[str, str, str], _Side]:
    """Every entry of every cache file under `folder` (`<device>/<tuner>.json`, or one
    device's folder), each file by its path below `folder`, a file of a 0.1.0 name by its
    current one (`renamed`)."""
    sides = {}
    for path in cache_files(folder):
        tuner = path.relative_to(folder).as_posix()
        if tuner in renamed:
            if (folder / renamed[tuner]).is_file():
                continue  # The gate reads the current name's file alone.
            tuner = renamed[tuner]
        cache = PersistentCache(path)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            entries = cache.load()
        for warning in caught:
            if issubclass(warning.category, CacheJournalWarning):
                # A torn last line of the journal: what was read stands, as in a run.
                warnings.warn(warning.message, warning.category, stacklevel=2)
            elif issubclass(warning.category, CacheFileWarning):
                raise CompareError(str(warning.message).split("; autotune goes on", 1)[0])
        device = cache.device()
        why = misplaced(path, device)
        if why is not None:
            raise CompareError(why)  # as a run refuses it
        for pk, value in entries.items():
            if value.fastest_index < len(value.results) and not isinstance(
                value.results[value.fastest_index], AutotuneOutcome
            ):
                continue
            # An index past the results is the gate's BaselineError ("repair it"), below.
            try:
                baseline = Baseline.from_cache_entry(
                    value, pk.checksum, device=device, metadata=cache.metadata(), source=str(path)
                )
            except BaselineError as exc:
                raise CompareError(str(exc)) from None
            winner = value.results[value.fastest_index]
            assert isinstance(winner, AutotuneOutcome)  # `from_cache_entry` read its samples
            sides[(tuner, key_text(value.key), baseline.device_id)] = _Side(
                device_id=baseline.device_id,
                checksum=pk.checksum,
                winner=value.fastest_name,
                measurement=Measurement(winner.effective_samples, baseline.calibration),
                source=str(path),
                baseline=baseline,
                peaks=_measured_with(baseline, device),
                machine=baseline.machine,
                bounds=None if value.bounds is None else Bounds.from_json(value.bounds),
                results={r.name: r for r in value.results if r.name is not None},
            )
    return sides


def _measured_with(entry: Baseline, device: Mapping[str, Any] | None) -> Peaks | None:
    """The peaks a cache entry was measured with, as the gate that measured it scaled its
    time by them: the binding roof its bounds hold (the run's probe when it was tuned).
    The file's device block is the latest update's, which may not have refreshed this
    entry (`-k`), and keeps older figures within `device_block.PEAKS_KEPT_WITHIN`: an entry
    alike in two folders read +10% against itself, scaled by the block's newer probe.
    The block serves an entry without bounds; None where the bound's peak is no rate."""
    if entry.peak_resource is None:
        return device_peaks(device)
    peak = entry.peak
    if peak is None or not (peak > 0 and math.isfinite(peak)):
        return None
    if entry.peak_resource == MEMORY:
        levels = (
            () if entry.peak_level is None else (MemoryLevel(entry.peak_level, 1, {"read": peak}),)
        )
        return Peaks(memory={"read": peak}, compute={}, levels=levels)
    return Peaks(memory={}, compute={entry.peak_level or "fp32": peak})


def _compare(
    before: Mapping[tuple[str, str, str], _Side | None],
    after: Mapping[tuple[str, str, str], _Side | None],
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
            baseline = old.baseline or Baseline(
                device_id=old.device_id,
                checksum=old.checksum,
                fastest_name=old.winner,
                samples=old.measurement.samples,
                source=old.source,
                calibration=old.measurement.calibration,
                machine=old.machine,
                peak=old.binding[0],
                peak_resource=old.binding[1],
                peak_level=old.binding[2],
                work=None if old.bounds is None else work_amounts(old.bounds),
                candidates=old.names(),
            )
            verdict = judge(
                new.measurement,
                baseline,
                device_id=new.device_id,
                checksum=new.checksum,
                peaks=new.peaks,
                # The group's own tolerance, as B's gate judged it, unless one is given.
                max_regression=new.max_regression if max_regression is None else max_regression,
                machine=new.machine,
                failed_here=_winner_out(old, new),
                bounds=new.bounds,
                # What changed in a candidate list is said by name, as the gate says it.
                candidates=new.names(),
            )
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


def _winner_out(old: _Side, new: _Side) -> str | None:
    """Why B's winner is not judged against A's, where A's winner, a candidate of the same
    list on the same device, failed or was skipped in B (`gate.judge.winner_out`), as
    the gate says it; None otherwise."""
    if old.winner == new.winner or (old.checksum, old.device_id) != (new.checksum, new.device_id):
        return None
    out = winner_out(old.winner, new.results.get(old.winner))
    return None if out is None else not_judged_message(out, new.winner)


def _no_verdict(in_before: bool, in_after: bool, old: _Side | None, new: _Side | None) -> str:
    """Why a row has no verdict: a side without the group, or a side whose run tuned it
    and measured nothing (every candidate failed), which is not a group new in the other."""
    if not in_before or not in_after:
        return "only in A" if in_before else "only in B"
    unmeasured = [side for side, value in (("A", old), ("B", new)) if value is None]
    return f"nothing measured in {' and '.join(unmeasured)}" if unmeasured else ""


def _describe(
    side: _Side | None, present: bool, *, baseline: bool = False, calibrated: bool = False
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
        _record_sides(before, sources[0]), _record_sides(after, sources[1]), max_regression
    )


def compare_caches(
    before: Path, after: Path, *, max_regression: float | None = None
) -> list[Compared]:
    """Each entry of two cache folders, B judged against A as the gate judges a run
    against the committed cache (A's sessions, peak and `sigma_between` included)."""
    renamed = {**legacy_names(before), **legacy_names(after)}
    return _compare(_cache_sides(before, renamed), _cache_sides(after, renamed), max_regression)


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
