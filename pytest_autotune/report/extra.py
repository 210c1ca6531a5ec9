"""What the plugin adds to each record (`AutotuneRecord.extra`): the gate's verdict and what
the report draws, typed, with its JSON form (DESIGN.md, "Records").

The session writes one per decision and reads each group's summary and cache update back
from it (`group_record`); the report reads it back from the records alone. The nested
blocks (`device`, `work`, `baseline`, `comparison`, `calibration`, `contention`,
`instrument`, `call_costs`, `history`) stay JSON objects here: each has its own reader where
it is used. Every field may be missing, as in records of older versions or those a
`LocalTuner` wrote outside pytest.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any

from pytest_autotune.tune.benchmark import NS_PER_S

JsonObject = Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class RecordExtra:
    group: str | None = None
    """The autotune group (the test id with its parameters but the candidate)."""
    verdict: str | None = None
    """The gate's `Verdict` value."""
    failed: bool | None = None
    message: str | None = None
    fraction_of_roof: float | None = None
    roof: str | None = None
    call_costs: JsonObject | None = None
    """Each candidate's device and enqueue seconds, by name (a CUDA client's)."""
    comparison: JsonObject | None = None
    measured: str | None = None
    """Whose samples these are: tuning's pick, or the baseline's winner when that measured
    faster here and the gate judged it instead."""
    winner_samples_ns: list[int] | None = None
    calibration: JsonObject | None = None
    contention: JsonObject | None = None
    """How contended the CPUs were while the winner was measured (a CPU's): `load`, the
    1-minute load average per CPU, and `pressure`, the share of the measurement during
    which runnable threads waited for a CPU, `helpers`, the CPU time of the process's
    other threads over the samples' wall time, and `neighbours`, the share of the other
    CPUs' time that other processes used meanwhile; each None where the platform does not
    tell (`gate.contention`)."""
    instrument: JsonObject | None = None
    """What the client took off each sample as its instrument's own, integer nanoseconds by
    mode (a CUDA client's replay fixed cost, `CudaClient.instrument`)."""
    device: JsonObject | None = None
    """The device block (id, fingerprint, peaks), so the report needs no other file."""
    work: JsonObject | None = None
    baseline: JsonObject | None = None
    """What the record keeps of the baseline it was judged against."""
    candidates: list[str] | None = None
    """Every candidate's name, in the set's order, tuned or not: the summary's rows."""
    history: list[JsonObject] | None = None
    """The earlier sessions an update keeps beside this one (`gate.BaselineSession`), as
    the cache entry it writes holds them; None when it keeps none."""
    kept_baseline: bool | None = None
    """True where an update did not record this session and the committed baseline stays
    (it was measured on contended CPUs, `update_policy.settle_update`); None otherwise."""
    test_ids: dict[str, str] | None = None
    """Each candidate's test item by name, as its node id (the marker's groups); None where
    the candidates are not tests of their own (the `autotune` fixture's)."""
    expected_failures: list[str] | None = None
    """The candidates whose tests are marked xfail: their failed checks are expected, and
    the report does not raise them. None where the record does not say (one written
    before it did, a `LocalTuner`'s): the report then raises no failed check."""
    max_regression: float | None = None
    """The slowdown the group's settings tolerate (its marker, `autotune.yaml`, the
    environment), None for the device kind's default: `compare` judges with it, as the
    gate did."""
    key_unknown: bool | None = None
    """True where the group's `key=` callable failed, so that `key` holds the parameters'
    ids instead (an ERROR record): an update's stale entries then leave its test's alone.
    None otherwise."""
    not_selected: list[str] | None = None
    """The candidates whose tests this run did not select (`-k`, `-m`, node ids): the group
    is checked whole, and such a candidate's failed check fails no test of this run. None
    where every candidate's test was selected, or the record does not say."""
    xfailed: bool | None = None
    """True where the group failed the gate and each of its tests that failed did so as
    its `xfail` mark expected: the run does not fail on it (the terminal's "expected to
    fail (xfail)"). Set by the session once its tests' outcomes are known; None otherwise,
    and in records of older versions."""

    @property
    def winner_seconds(self) -> tuple[float, ...]:
        """`winner_samples_ns` in seconds: the winner's precise measurement the verdict
        rests on; empty when nothing was measured."""
        return tuple(s / NS_PER_S for s in self.winner_samples_ns or ())

    def to_json(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in fields(self)}

    @classmethod
    def from_json(cls, data: JsonObject) -> RecordExtra:
        """The extras of a record; a field of the wrong type is a `ValueError` naming it.
        Keys this version does not know are left out (a newer writer's)."""
        values: dict[str, Any] = {}
        for name, kind in _KINDS.items():
            value = data.get(name)
            if value is not None and (
                not isinstance(value, kind) or (isinstance(value, bool) and kind is not bool)
            ):
                raise ValueError(f"extra {name!r} has the wrong type: {value!r}")
            values[name] = value
        if values["fraction_of_roof"] is not None:
            values["fraction_of_roof"] = float(values["fraction_of_roof"])
        return cls(**values)


_KINDS: dict[str, type | tuple[type, ...]] = {
    "group": str,
    "verdict": str,
    "failed": bool,
    "message": str,
    "fraction_of_roof": (int, float),
    "roof": str,
    "call_costs": dict,
    "comparison": dict,
    "measured": str,
    "winner_samples_ns": list,
    "calibration": dict,
    "contention": dict,
    "instrument": dict,
    "device": dict,
    "work": dict,
    "baseline": dict,
    "candidates": list,
    "history": list,
    "kept_baseline": bool,
    "test_ids": dict,
    "expected_failures": list,
    "max_regression": (int, float),
    "key_unknown": bool,
    "not_selected": list,
    "xfailed": bool,
}
"""The JSON type of each field."""

__all__ = ["RecordExtra"]
