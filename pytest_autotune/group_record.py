"""A tuned group's record: the one value a session keeps of each group, and the summary line
read back from it.

The record (an `AutotuneRecord` whose `extra` is the plugin's `RecordExtra`) holds the
decision, the gate's verdict and what the report draws. A pytest-xdist worker sends its
groups' records and nothing else of them; the controller, like a session without workers,
reads each group's summary line (`group_summary`), cache update (`cache_updates.update_entry`)
and device from that one value, so the summary, the records file and the cache files
cannot disagree, whichever process tuned the group. Durations are integer nanoseconds in
it, as in every file we write.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from pytest_autotune.gate import BaselineSession, Comparison, GroupVerdict, Verdict
from pytest_autotune.group_case import GroupCase
from pytest_autotune.report import CandidateRow, GroupSummary
from pytest_autotune.report.extra import RecordExtra
from pytest_autotune.report.names import key_text
from pytest_autotune.tune.benchmark import AutotuneOutcome, result_from_json, sample_ns
from pytest_autotune.tune.bounds import Work
from pytest_autotune.tune.check_result import CheckResult
from pytest_autotune.tune.errors import AutotuneError, AutotuneErrorKind
from pytest_autotune.tune.records import AutotuneRecord
from pytest_autotune.tune.tunable_set import TunableSet

if TYPE_CHECKING:
    from pytest_autotune.tune.client import Client


def group_record(
    case: GroupCase,
    verdict: GroupVerdict,
    *,
    tuner: str,
    work: Work | None,
    call_costs: Mapping[str, Mapping[str, float | None]],
    instrument: Mapping[str, int] | None = None,
    measured: str | None,
    device: Mapping[str, Any],
    baseline: Mapping[str, Any] | None,
    history: tuple[BaselineSession, ...] = (),
    recorded: bool = True,
    test_ids: Mapping[str, str] | None = None,
    expected_to_fail: frozenset[str] = frozenset(),
    selected: tuple[str, ...] | None = None,
    key_known: bool = True,
) -> AutotuneRecord:
    """The record of a judged group: the decision's, with the plugin's extras. `measured`
    is the candidate the gate measured where it is not tuning's pick, `instrument` what the
    client took off each sample (`instrument`), `baseline` what the record keeps of the
    baseline (`baselines.baseline_extra`), `history` the earlier sessions an update keeps,
    `recorded` False where an update keeps the committed baseline instead of writing this
    session (`update_policy.settle_update`), `test_ids` each candidate's test item by name,
    `expected_to_fail` the candidates whose tests are marked xfail, `selected` those whose
    tests this run selected (None: every one), `key_known` False where the case's key is
    not the group's (its `key=` callable failed)."""
    decision, measurement = case.decision, verdict.measurement
    extra = RecordExtra(
        group=case.group,
        verdict=verdict.verdict.value,
        failed=verdict.failed,
        message=verdict.message,
        fraction_of_roof=verdict.fraction_of_roof,
        roof=verdict.roof,
        call_costs=call_costs,
        comparison=verdict.comparison.to_json() if verdict.comparison else None,
        # Nothing measured names no candidate: the decision's fastest is then only the
        # candidate tuning fell back to, and the record's own winner is None.
        measured=(measured or decision.fastest_name) if decision.measured else None,
        winner_samples_ns=[sample_ns(s) for s in (measurement.samples if measurement else ())],
        calibration=(
            measurement.calibration.to_json()
            if measurement is not None and measurement.calibration is not None
            else None
        ),
        contention=(
            {
                "load": measurement.load,
                "pressure": measurement.pressure,
                "helpers": measurement.helpers,
                "neighbours": measurement.neighbours,
            }
            if measurement is not None
            and any(
                v is not None
                for v in (
                    measurement.load,
                    measurement.pressure,
                    measurement.helpers,
                    measurement.neighbours,
                )
            )
            else None
        ),
        instrument=dict(instrument) if instrument else None,
        # The report re-renders from records alone, so each carries its device and work.
        device=device,
        work=(
            {
                "compute_ops": work.compute_ops,
                "bytes": work.bytes,
                "working_set": work.footprint,
                # Only where not fp32: records of fp32 work read as they did before.
                **({"dtype": work.unit} if work.unit != "fp32" else {}),
            }
            if work
            else None
        ),
        baseline=baseline,
        candidates=list(case.tunables.names),
        history=[s.to_json() for s in history] or None,
        kept_baseline=None if recorded else True,
        test_ids=dict(test_ids) if test_ids else None,
        expected_failures=sorted(expected_to_fail),
        not_selected=(
            sorted(set(case.tunables.names) - set(selected)) or None
            if selected is not None
            else None
        ),
        max_regression=case.settings.engine.max_regression,
        key_unknown=None if key_known else True,
    )
    record = decision.to_record(tuner, case.device_id)
    return dataclasses.replace(record, extra=extra.to_json())


def group_summary(record: AutotuneRecord) -> GroupSummary:
    """The summary line of a group, with a row per candidate, read from its record."""
    extra = RecordExtra.from_json(record.extra)
    results = {int(r["index"]): result_from_json(r) for r in record.results}
    checks = {c.name: c for c in map(CheckResult.from_json, record.checks)}
    costs = extra.call_costs or {}
    rows = []
    for index, name in enumerate(extra.candidates or ()):
        result, check, cost = results.get(index), checks.get(name), costs.get(name, {})
        rows.append(
            CandidateRow(
                name=name,
                median=result.median if isinstance(result, AutotuneOutcome) else None,
                error=result.message if isinstance(result, AutotuneError) else None,
                check_passed=None if check is None or check.skipped else check.passed,
                samples=result.effective_samples if isinstance(result, AutotuneOutcome) else (),
                device=cost.get("device_s"),
                enqueue=cost.get("enqueue_s"),
                test_id=(extra.test_ids or {}).get(name),
                expected_to_fail=name in (extra.expected_failures or ()),
                skipped=isinstance(result, AutotuneError) and result.kind is AutotuneErrorKind.SKIP,
            )
        )
    return GroupSummary(
        group=str(extra.group),
        key=key_text(record.key),
        winner=extra.measured if record.fastest_name is not None else None,
        verdict=Verdict(extra.verdict),
        failed=bool(extra.failed),
        message=extra.message or "",
        samples=extra.winner_seconds,
        fraction_of_roof=extra.fraction_of_roof,
        comparison=None if extra.comparison is None else Comparison.from_json(extra.comparison),
        candidates=tuple(rows),
        device_id=record.device_id,
        roof=extra.roof,
    )


def call_costs(client: Client, tunables: TunableSet) -> dict[str, dict[str, float | None]]:
    """Each candidate's device and host enqueue seconds of its latest sample, by name,
    where the client tells them apart (a CUDA client; empty for others)."""
    costs_of = getattr(client, "call_costs", None)
    if costs_of is None:
        return {}
    costs = {}
    for name, fn in zip(tunables.names, tunables.fns, strict=True):
        cost = costs_of(fn)
        if cost is not None:
            costs[name] = {"device_s": cost.device, "enqueue_s": cost.enqueue}
    return costs


def instrument(client: Client) -> dict[str, int]:
    """What the client takes off each sample as its instrument's own, integer nanoseconds by
    mode, where it says (a CUDA client; empty for others)."""
    said = getattr(client, "instrument", None)
    return dict(said()) if said is not None else {}


__all__ = ["call_costs", "group_record", "group_summary", "instrument"]
