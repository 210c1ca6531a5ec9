"""On a host with two GPUs, `pytest -n 2 --autotune`: each worker tunes on a GPU of its own,
including arrays its test module made at import (before the plugin could pick a device)."""

from __future__ import annotations

import json
import os
from collections import Counter
from typing import Any

import pytest

from pytest_autotune.backends import cuda
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


ARRAYS_IN_THE_TESTS = """
import cupy as cp
import pytest

def twice(x):
    return x * 2

def doubled(x):
    return x + x

@pytest.mark.autotune(candidates={"twice": twice, "doubled": doubled})
@pytest.mark.parametrize("n", [1, 2])
def test_first(candidate, n):
    return candidate(cp.arange(n << 16, dtype=cp.float32))

@pytest.mark.autotune(candidates={"twice": twice, "doubled": doubled})
@pytest.mark.parametrize("n", [1, 2])
def test_second(candidate, n):
    return candidate(cp.arange(n << 17, dtype=cp.float32))
"""


def test_workers_take_only_the_gpus_cuda_sees_of_cuda_visible_devices(
    cp: Any, pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    # CUDA stops at the first entry of CUDA_VISIBLE_DEVICES that names no GPU: with this
    # host's GPUs and one more ("0,99" on a host of one), the workers were given the GPUs
    # in turn, and the one given "99" found none (fef4a03). Each worker now sees what the
    # controller sees.
    pytest.importorskip("xdist")
    count = cp.cuda.runtime.getDeviceCount()
    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    seen = [d.strip() for d in visible.split(",")][:count] if visible else ["0"] * (count > 0)
    if len(seen) != 1:
        pytest.skip("for a host of one GPU: on more, the workers take one each")
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", f"{seen[0]},99")
    pytester.makeini("[pytest]\nfilterwarnings = error\n")
    pytester.makepyfile(test_in_tests=ARRAYS_IN_THE_TESTS)
    result = run(pytester, "-n", "2", "--autotune", "--autotune-record=records.jsonl")
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()
    records = [
        json.loads(line) for line in (pytester.path / "records.jsonl").read_text().splitlines()
    ]
    assert len(records) == 4
    uuids = {r["extra"]["device"]["fingerprint"].get("uuid") for r in records}
    assert uuids == {cuda().fingerprint()["uuid"]}, uuids
