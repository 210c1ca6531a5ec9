"""On a host with two GPUs, `pytest -n 2 --autotune`: each worker tunes on a GPU of its own,
including arrays its test module made at import (before the plugin could pick a device)."""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

import pytest

from tests.plugin.harness import run

IMPORT_TIME_INPUTS = """
import cupy as cp
import pytest

X = cp.arange(1 << 20, dtype=cp.float32)  # made at import, on the worker's device 0

def twice(x):
    return x * 2

def doubled(x):
    return x + x

@pytest.mark.autotune(candidates={"twice": twice, "doubled": doubled})
@pytest.mark.parametrize("n", [1, 2])
def test_first(candidate, n):
    return candidate(X)

@pytest.mark.autotune(candidates={"twice": twice, "doubled": doubled})
@pytest.mark.parametrize("n", [1, 2])
def test_second(candidate, n):
    return candidate(X)
"""


def test_two_workers_tune_on_two_gpus_with_inputs_made_at_import(
    cp: Any, pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("xdist")
    if cp.cuda.runtime.getDeviceCount() < 2:
        pytest.skip("needs two GPUs")
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    pytester.makeini("[pytest]\nfilterwarnings = error\n")
    pytester.makepyfile(test_import_time=IMPORT_TIME_INPUTS)
    result = run(pytester, "-n", "2", "--autotune", "--autotune-record=records.jsonl")
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()
    records = [
        json.loads(line) for line in (pytester.path / "records.jsonl").read_text().splitlines()
    ]
    assert sorted(Counter(r["extra"]["group"] for r in records).values()) == [1, 1, 1, 1]
    by_function: dict[str, set[str]] = {}
    for record in records:
        function = record["extra"]["group"].split("[", 1)[0]
        by_function.setdefault(function, set()).add(
            record["extra"]["device"]["fingerprint"]["uuid"]
        )
    assert all(len(uuids) == 1 for uuids in by_function.values()), by_function
    assert len(set().union(*by_function.values())) == 2, by_function
