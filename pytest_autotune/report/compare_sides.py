"""The two sides of `pytest-autotune compare`, read: each group's winner in a record file
(`--autotune-record`) or each entry of a cache folder, as a `Side` that the gate's
`Measurement` or `Baseline` is made of. An input that cannot be compared ends as
`CompareError`, naming the file and the key."""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_autotune.gate import Baseline, BaselineError, Calibration, Measurement
from pytest_autotune.gate.baseline import binding_peak, device_machine, device_thread_env
from pytest_autotune.report.html import measured_name, winner_samples
from pytest_autotune.report.names import key_text
from pytest_autotune.tune.benchmark import AutotuneOutcome, AutotuneResult, result_from_json
from pytest_autotune.tune.bounds import MEMORY, Bounds
from pytest_autotune.tune.cache import PersistentCache
from pytest_autotune.tune.cache_names import cache_files, misplaced
from pytest_autotune.tune.errors import CacheFileWarning, CacheJournalWarning
from pytest_autotune.tune.files import json_text
from pytest_autotune.tune.peaks import MemoryLevel, Peaks, device_peaks
from pytest_autotune.tune.records import AutotuneRecord, RecordError
from pytest_autotune.tune.tunable_set import checksum_of


class CompareError(ValueError):
    """An input that cannot be compared; the message names the file and the key."""


@dataclass(frozen=True, slots=True)
class Side:
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
    thread_env: Mapping[str, str] | None = None
    """The caps of BLAS, OpenMP and Numba threads the side was measured under (its device
    block's fingerprint), None where it does not say: under other caps the two sides are
    not comparable, as the gate finds them (`gate.comparable.other_thread_caps`)."""
    binding: tuple[float | None, str | None, str | None] = (None, None, None)
    """A record's binding roof (peak, resource, memory level), which a GPU baseline's time
    is scaled by against the other side's `peaks`, as the gate scales it."""
    bounds: Bounds | None = None
    """The bounds the side's winner was tuned under: the work it measured, which the gate
    finds another problem's where it differs (`Baseline.other_work`)."""
    results: Mapping[str, AutotuneResult] = field(default_factory=dict)
    """Every candidate's result by name: where the other side's winner failed or was
    skipped on this side, the two winners are not judged against each other, as the gate
    does not judge them (`gate.comparable.winner_out`)."""

    def names(self) -> tuple[str, ...]:
        """The candidates' names in order, empty where its results do not list them all
        (their checksum is not the side's)."""
        names = tuple(self.results)
        return names if checksum_of(names) == self.checksum else ()


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
    for name in ("load", "pressure", "helpers", "neighbours"):
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


def record_sides(
    records: Sequence[AutotuneRecord], source: str
) -> dict[tuple[str, str, str], Side | None]:
    """The last record of each group, key and device in a file (a file appended to by
    several runs holds the latest run last); None for a group the run tuned but could
    measure nothing of (every candidate failed): it was there, with nothing to judge."""
    sides: dict[tuple[str, str, str], Side | None] = {}
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
        sides[(name, key, record.device_id)] = Side(
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
            thread_env=device_thread_env(device),
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


def cache_sides(folder: Path, renamed: Mapping[str, str]) -> dict[tuple[str, str, str], Side]:
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
            sides[(tuner, key_text(value.key), baseline.device_id)] = Side(
                device_id=baseline.device_id,
                checksum=pk.checksum,
                winner=value.fastest_name,
                measurement=Measurement(winner.effective_samples, baseline.calibration),
                source=str(path),
                baseline=baseline,
                peaks=_measured_with(baseline, device),
                machine=baseline.machine,
                thread_env=baseline.thread_env,
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
