"""The plugin's extras of a record: a typed value whose JSON form is the record format's."""

from __future__ import annotations

import dataclasses
import json

import pytest

from pytest_autotune.report.extra import RecordExtra

# An `extra` as the plugin writes it (every key, in the written order).
WRITTEN = {
    "group": "test_scale.py::test_scale[1]",
    "verdict": "pass",
    "failed": False,
    "message": "",
    "fraction_of_roof": 0.8,
    "roof": "memory",
    "call_costs": {"fast": {"device_s": 1e-4, "enqueue_s": None}},
    "comparison": {"delta": 0.0, "low": -0.01, "high": 0.01, "failed": False},
    "measured": "fast",
    "winner_samples_ns": [100000, 100000],
    "calibration": None,
    "contention": {"load": 0.5, "pressure": 0.25, "helpers": 0.0},
    "instrument": {"held_replay_ns": 2010},
    "device": {"id": "cpu-fake-1t", "fingerprint": {"fake": True}, "peaks": {}},
    "work": {"compute_ops": 0.0, "bytes": 100000.0, "working_set": 100000.0},
    "baseline": None,
    "candidates": ["fast", "slow"],
    "history": None,
    "kept_baseline": None,
    "test_ids": {"fast": "t.py::test_t[fast-1]", "slow": "t.py::test_t[slow-1]"},
    "expected_failures": ["slow"],
    "max_regression": 0.05,
    "key_unknown": True,
    "not_selected": ["slow"],
    "xfailed": None,
}


def test_a_written_extra_reads_back_to_the_same_json_line() -> None:
    extra = RecordExtra.from_json(json.loads(json.dumps(WRITTEN)))
    assert json.dumps(extra.to_json()) == json.dumps(WRITTEN)


def test_every_field_is_a_key_of_the_written_extra() -> None:
    assert [f.name for f in dataclasses.fields(RecordExtra)] == list(WRITTEN)


def test_an_older_record_without_some_extras_reads_with_them_missing() -> None:
    extra = RecordExtra.from_json({"group": "g", "verdict": "pass", "fraction_of_roof": 1})
    assert (extra.group, extra.verdict, extra.measured, extra.baseline) == ("g", "pass", None, None)
    assert extra.fraction_of_roof == 1.0
    assert RecordExtra.from_json({}) == RecordExtra()


def test_a_field_of_the_wrong_type_is_named() -> None:
    with pytest.raises(ValueError, match=r"^extra 'failed' has the wrong type: 1$"):
        RecordExtra.from_json({"failed": 1})
    with pytest.raises(ValueError, match=r"^extra 'verdict' has the wrong type: 3$"):
        RecordExtra.from_json({"verdict": 3})
