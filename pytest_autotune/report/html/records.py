"""Reading the records the HTML report is built from: results, checks and bounds, and the
plugin's `extra` (verdict, device, work, baseline, comparison, call costs), each field
checked, so that a field that does not read is a `RecordError` naming the record and field.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pytest_autotune.gate.verdicts import Comparison
from pytest_autotune.report.extra import RecordExtra
from pytest_autotune.report.figures import level_roofs
from pytest_autotune.report.html.views import MISSING, DeviceView
from pytest_autotune.report.names import key_text
from pytest_autotune.report.svg import format_si
from pytest_autotune.tune.benchmark import (
    NS_PER_S,
    AutotuneOutcome,
    AutotuneResult,
    result_from_json,
)
from pytest_autotune.tune.bounds import COMPUTE, MEMORY, Bounds, Work
from pytest_autotune.tune.check_result import CheckResult
from pytest_autotune.tune.log import format_duration
from pytest_autotune.tune.peaks import Peaks
from pytest_autotune.tune.records import AutotuneRecord, RecordError


class Extra:
    """A record's `extra` as the `RecordExtra` it holds (`typed`); a field of the wrong type
    is a `RecordError` naming the record and the field."""

    def __init__(self, extra: Mapping[str, Any], where: str) -> None:
        try:
            self.typed = RecordExtra.from_json(extra)
        except ValueError as exc:
            raise RecordError(f"{where}: {exc}") from None
        self.where = where

    def error(self, name: str, exc: Exception) -> RecordError:
        return RecordError(f"{self.where}: extra {name!r} does not read: {exc}")


def read_device(extra: Extra, device_id: str) -> tuple[DeviceView, Peaks | None]:
    """The record's device block (`extra["device"]`): the view, and the peaks to draw roofs."""
    block = extra.typed.device or {}
    peaks: Peaks | None = None
    if block.get("peaks") is not None:
        try:
            peaks = Peaks.from_json(block["peaks"])
        except (TypeError, ValueError) as exc:
            raise extra.error("device", exc) from None
    fingerprint = block.get("fingerprint")
    fingerprint_rows = (
        tuple(
            (str(name), value if isinstance(value, str) else json.dumps(value))
            for name, value in sorted(fingerprint.items())
        )
        if isinstance(fingerprint, dict)
        else ()
    )
    return (
        DeviceView(
            id=str(block.get("id") or device_id),
            fingerprint=fingerprint_rows,
            memory=tuple(
                (name, format_si(rate) + "B/s")
                for name, rate in (peaks.memory.items() if peaks else ())
            ),
            levels=level_roofs(peaks) if peaks else (),
            compute=tuple(
                (name, format_si(rate) + "op/s")
                for name, rate in (peaks.compute.items() if peaks else ())
            ),
            threads=MISSING if peaks is None or peaks.threads is None else str(peaks.threads),
        ),
        peaks,
    )


def read_results(record: AutotuneRecord, where: str) -> list[tuple[int, AutotuneResult]]:
    """Each candidate's result with its index (an error's JSON carries the index too)."""
    results = []
    for position, data in enumerate(record.results):
        try:
            results.append((int(data.get("index", position)), result_from_json(data)))
        except (KeyError, TypeError, ValueError) as exc:
            raise RecordError(f"{where}: results[{position}] does not read: {exc!r}") from None
    return results


def read_checks(record: AutotuneRecord, where: str) -> dict[str, CheckResult]:
    try:
        return {c.name: c for c in (CheckResult.from_json(data) for data in record.checks)}
    except (KeyError, TypeError, ValueError) as exc:
        raise RecordError(f"{where}: checks do not read: {exc!r}") from None


def read_bounds(record: AutotuneRecord, where: str) -> Bounds | None:
    if record.bounds is None:
        return None
    try:
        return Bounds.from_json(record.bounds)
    except (KeyError, TypeError, ValueError) as exc:
        raise RecordError(f"{where}: bounds do not read: {exc!r}") from None


def read_work(extra: Extra, bounds: Bounds | None) -> Work | None:
    """The plugin's `extra["work"]`, else the amounts of the record's bounds (which a
    `LocalTuner` with a bounds generator writes too)."""
    data = extra.typed.work
    if data is not None:
        try:
            working_set, dtype = data.get("working_set"), data.get("dtype")
            return Work(
                compute_ops=float(data["compute_ops"]),
                bytes=float(data["bytes"]),
                working_set=None if working_set is None else float(working_set),
                dtype=None if dtype is None else str(dtype),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise extra.error("work", exc) from None
    if bounds is None or not bounds.bounds:
        return None
    amounts = {b.resource: b.amount for b in bounds.bounds}
    return Work(compute_ops=amounts.get(COMPUTE, 0.0), bytes=amounts.get(MEMORY, 0.0))


def _samples_ns(extra: Extra, data: Any, name: str) -> list[float]:
    if not isinstance(data, list) or not all(
        isinstance(s, int) and not isinstance(s, bool) and s > 0 for s in data
    ):
        raise RecordError(f"{extra.where}: extra {name!r} must hold positive integers")
    return [s / NS_PER_S for s in data]


def measured_name(record: AutotuneRecord) -> str | None:
    """The candidate whose samples the record's winner samples are: the one the gate
    measured (`extra["measured"]`), which is tuning's pick unless the baseline's winner
    measured faster; tuning's pick for records that do not say. None where nothing was
    measured (every candidate failed): such a record names no fastest candidate, and its
    `measured`, written by earlier versions, is only the candidate tuning fell back to."""
    if record.fastest_name is None:
        return None
    measured = record.extra.get("measured")
    return measured if isinstance(measured, str) else record.fastest_name


def read_winner_samples(
    extra: Extra,
    results: Sequence[tuple[int, AutotuneResult]],
    fastest_index: int | None,
    fastest_name: str | None,
) -> list[float]:
    """The winner's precise measurement (`extra["winner_samples_ns"]`), else its tuning
    samples: the gate judged the former, a `LocalTuner` record has only the latter."""
    samples_ns = extra.typed.winner_samples_ns
    if samples_ns:
        return _samples_ns(extra, samples_ns, "winner_samples_ns")
    for index, result in results:
        if (
            index == fastest_index
            and result.name == fastest_name
            and isinstance(result, AutotuneOutcome)
        ):
            return list(result.effective_samples)
    return []


@dataclass(frozen=True, slots=True)
class BaselineSeen:
    """What a record keeps of the baseline it was judged against (`extra["baseline"]`)."""

    name: str
    samples: tuple[float, ...]
    sessions: int
    source: str


def read_baseline(extra: Extra) -> BaselineSeen | None:
    block = extra.typed.baseline
    if block is None:
        return None
    samples = _samples_ns(extra, block.get("samples_ns"), "baseline")
    sessions = block.get("sessions")
    return BaselineSeen(
        name=str(block.get("fastest_name") or MISSING),
        samples=tuple(samples),
        sessions=sessions if isinstance(sessions, int) and not isinstance(sessions, bool) else 1,
        source=str(block.get("source") or "the cache"),
    )


def read_comparison(extra: Extra) -> Comparison | None:
    data = extra.typed.comparison
    if data is None:
        return None
    try:
        return Comparison.from_json(data)
    except (KeyError, TypeError, ValueError) as exc:
        raise extra.error("comparison", exc) from None


def costs_text(extra: Extra, name: str) -> str:
    """ "device 5.50 us, enqueue 17.3 us" from the record's `call_costs`, "" without them."""
    costs = extra.typed.call_costs or {}
    cost = costs.get(name)
    if not isinstance(cost, dict):
        return ""
    device, enqueue = cost.get("device_s"), cost.get("enqueue_s")
    parts = [
        f"{label} {format_duration(float(value))}"
        for label, value in (("device", device), ("enqueue", enqueue))
        if isinstance(value, (int, float)) and not isinstance(value, bool)
    ]
    return ", ".join(parts)


def winner_samples(record: AutotuneRecord) -> list[float]:
    """The winner's samples in seconds: its precise measurement where the record has one,
    else its tuning samples; empty when nothing was measured."""
    extra = Extra(record.extra, f"{record.tuner}, key {key_text(record.key)}")
    return read_winner_samples(
        extra, read_results(record, extra.where), record.fastest_index, record.fastest_name
    )
