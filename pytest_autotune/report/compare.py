"""`pytest-autotune compare A B`: judge a later run against an earlier one with the gate's
own rule, outside pytest.

A and B are two record files (`--autotune-record`) or two cache folders (`.autotune/`, as
committed before and after a change). For every group and key both hold, A is the baseline
and B the current measurement, and `gate.judge` decides, so the verdict is the one the CI
gate would give (its tolerance, its interval, its calibration where both sides carry the
read); nothing of the rule is restated here.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
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
from pytest_autotune.report import decision_name, group_order, key_text, verdict_text
from pytest_autotune.report.figures import format_interval
from pytest_autotune.report.html import measured_name, winner_samples
from pytest_autotune.tune.benchmark import AutotuneOutcome, SampleStats
from pytest_autotune.tune.cache import PersistentCache
from pytest_autotune.tune.errors import CacheFileWarning, CacheJournalWarning
from pytest_autotune.tune.log import format_duration
from pytest_autotune.tune.peaks import Peaks
from pytest_autotune.tune.records import AutotuneRecord

__all__ = ["CompareError", "Compared", "compare_caches", "compare_records", "render_comparison"]


class CompareError(ValueError):
    """An input that cannot be compared; the message names the file and the key."""


@dataclass(frozen=True, slots=True)
class _Side:
    """One group's winner on one side: what a `Measurement` or a `Baseline` is made of."""

    device_id: str
    checksum: str
    winner: str
    samples: tuple[float, ...]
    calibration: Calibration | None
    source: str
    baseline: Baseline | None = None
    """A cache side's own baseline (sessions, peak, sigma_between), None for a record."""
    peaks: Peaks | None = None


@dataclass(frozen=True, slots=True)
class Compared:
    """One group and key: its winner and median on both sides, and the gate's verdict."""

    name: str
    order: tuple[Any, ...]
    before: str
    after: str
    verdict: GroupVerdict | None
    """None when one side holds the group and the other does not."""


def _calibration(data: Any, where: str) -> Calibration | None:
    if data is None:
        return None
    try:
        return Calibration.from_json(data)
    except (TypeError, ValueError) as exc:
        raise CompareError(f"{where}: calibration does not read: {exc}") from None


def _record_sides(
    records: Sequence[AutotuneRecord], source: str
) -> dict[tuple[str, str, str], _Side]:
    """The last record of each group, key and device in a file (a file appended to by
    several runs holds the latest run last)."""
    sides = {}
    for record in records:
        group = record.extra.get("group")
        name = group if isinstance(group, str) else record.tuner
        key = key_text(record.key)
        samples = winner_samples(record)
        winner = measured_name(record)
        if not samples or winner is None:
            continue
        sides[(name, key, record.device_id)] = _Side(
            device_id=record.device_id,
            checksum=record.checksum,
            winner=winner,
            samples=tuple(samples),
            calibration=_calibration(record.extra.get("calibration"), f"{source}: {name} [{key}]"),
            source=source,
        )
    return sides


def _cache_sides(folder: Path) -> dict[tuple[str, str, str], _Side]:
    """Every entry of every cache file under `folder` (`<device>/<tuner>.json`)."""
    sides = {}
    for path in sorted(folder.glob("*/*.json")):
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
        peaks = None
        if device is not None and device.get("peaks") is not None:
            try:
                peaks = Peaks.from_json(device["peaks"])
            except (TypeError, ValueError):
                peaks = None
        tuner = path.relative_to(folder).as_posix()
        for pk, value in entries.items():
            winner = (
                value.results[value.fastest_index]
                if value.fastest_index < len(value.results)
                else None
            )
            if not isinstance(winner, AutotuneOutcome):
                continue
            try:
                baseline = Baseline.from_cache_entry(
                    value, pk.checksum, device=device, metadata=cache.metadata(), source=str(path)
                )
            except BaselineError as exc:
                raise CompareError(str(exc)) from None
            sides[(tuner, key_text(value.key), baseline.device_id)] = _Side(
                device_id=baseline.device_id,
                checksum=pk.checksum,
                winner=value.fastest_name,
                samples=winner.effective_samples,
                calibration=baseline.calibration,
                source=str(path),
                baseline=baseline,
                peaks=peaks,
            )
    return sides


def _compare(
    before: Mapping[tuple[str, str, str], _Side],
    after: Mapping[tuple[str, str, str], _Side],
    max_regression: float | None,
) -> list[Compared]:
    rows = []
    for identity in sorted(before.keys() | after.keys(), key=lambda i: group_order(i[0], i[1])):
        name, key, _ = identity
        old, new = before.get(identity), after.get(identity)
        verdict = None
        if old is not None and new is not None:
            baseline = old.baseline or Baseline(
                device_id=old.device_id,
                checksum=old.checksum,
                fastest_name=old.winner,
                samples=old.samples,
                source=old.source,
                calibration=old.calibration,
            )
            verdict = judge(
                Measurement(new.samples, new.calibration),
                baseline,
                device_id=new.device_id,
                checksum=new.checksum,
                peaks=new.peaks,
                max_regression=max_regression,
            )
        rows.append(
            Compared(
                name=decision_name(name, key),
                order=group_order(name, key),
                before=_describe(old),
                after=_describe(new),
                verdict=verdict,
            )
        )
    return rows


def _describe(side: _Side | None) -> str:
    if side is None:
        return "-"
    return f"{side.winner} {format_duration(SampleStats.of(side.samples).median)}"


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
    return _compare(_cache_sides(before), _cache_sides(after), max_regression)


def render_comparison(rows: Sequence[Compared], labels: tuple[str, str]) -> str:
    """A table (group, A, B, change, verdict), then each failure's gate message."""
    table = [("group", labels[0], labels[1], "change [interval]", "verdict")]
    for row in rows:
        if row.verdict is None:
            change, verdict = "-", "only in A" if row.after == "-" else "only in B"
        else:
            comparison = row.verdict.comparison
            change = format_interval(comparison) if comparison is not None else "-"
            verdict = verdict_text(row.verdict.verdict.value, row.verdict.failed)
        table.append((row.name, row.before, row.after, change, verdict))
    widths = [max(len(r[i]) for r in table) for i in range(5)]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in table]
    lines.insert(1, "  ".join("-" * w for w in widths))
    failed = [r for r in rows if r.verdict is not None and r.verdict.failed]
    counted = [r for r in rows if r.verdict is not None]
    lines.append("")
    for row in failed:
        assert row.verdict is not None
        lines.append(f"{row.name}: {row.verdict.verdict.value}")
        lines.extend(f"    {line}" for line in row.verdict.message.splitlines())
    lines.append(f"{len(failed)} of {len(counted)} compared groups fail the gate")
    return "\n".join(lines)
