"""Device `auto` on a real GPU: NumPy inputs are tuned on the CPU, CuPy inputs on the GPU,
and a candidate that moves NumPy inputs to the GPU is timed until its kernels are done."""

from __future__ import annotations

import json
import statistics

import pytest

from tests.plugin.harness import run

TESTS = """
import cupy as cp
import numpy as np
import pytest

@pytest.fixture
def host():
    return np.random.default_rng(0).random(1 << 20, dtype=np.float32)

@pytest.fixture
def device(host):
    return cp.asarray(host)

@pytest.mark.autotune(candidates={"sum": np.sum, "reduce": np.add.reduce}, rtol=1e-4)
def test_numpy(candidate, host):
    return candidate(host)

@pytest.mark.autotune(candidates={"sum": cp.sum, "reduce": lambda x: cp.add.reduce(x)}, rtol=1e-4)
def test_cupy(candidate, device):
    return candidate(device)

@pytest.fixture
def big():
    return np.random.default_rng(0).random(1 << 24, dtype=np.float32)

def busy(x):
    # 200 passes over 64 MiB on the GPU, 600 kernels (tens of milliseconds): its call
    # returns once they are enqueued (a few milliseconds).
    y = cp.asarray(x)
    for _ in range(200):
        y = cp.sqrt(y * y + 1.0)
    return y

def synchronized(x):
    y = busy(x)
    cp.cuda.Device().synchronize()
    return y

@pytest.mark.autotune(candidates={"busy": busy, "synchronized": synchronized}, rtol=1e-4)
def test_hybrid(candidate, big):
    return candidate(big)
"""


def test_auto_puts_numpy_groups_on_the_cpu_and_cupy_groups_on_the_gpu(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(test_groups=TESTS)
    records = pytester.path / "records.jsonl"
    result = run(pytester, "--autotune", f"--autotune-record={records}", "-W", "error")
    result.assert_outcomes(passed=6)
    by_test = {
        r["extra"]["group"].split("::")[1]: r
        for r in map(json.loads, records.read_text().splitlines())
    }
    assert by_test["test_numpy"]["extra"]["device"]["id"].startswith("cpu-")
    assert by_test["test_hybrid"]["extra"]["device"]["id"].startswith("cpu-")
    assert by_test["test_cupy"]["extra"]["device"]["id"].startswith("cuda-")
    result.stdout.fnmatch_lines(["note: device auto: 2 groups of host arrays*"])
    # The GPU's work is in the hybrid's time, not its enqueueing alone: the candidate
    # that returns unsynchronized reads as long as its synchronizing twin.
    hybrid = {
        r["name"]: statistics.median(r["samples_ns"])
        for r in by_test["test_hybrid"]["results"]
        if r.get("samples_ns")
    }
    assert set(hybrid) == {"busy", "synchronized"}
    assert hybrid["busy"] >= 0.8 * hybrid["synchronized"], hybrid
