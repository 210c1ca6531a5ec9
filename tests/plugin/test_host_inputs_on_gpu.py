"""Device `auto` on a machine with a GPU: a group whose inputs are host arrays alone (NumPy)
is host code, tuned on the CPU, not timed as a GPU call and judged by a GPU's rules; a
group of device arrays stays on the GPU, as does one a device is named for."""

from __future__ import annotations

import json
import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

import pytest_autotune.backends
from pytest_autotune.backends.peaks import Peaks
from tests.plugin.harness import run


class FakeGpu:
    """What the built-in `cuda()` returns on a machine with a GPU, in place of a CudaClient."""

    device_id = "cuda-fake-gpu"
    launch_overhead = 0.0

    def fingerprint(self) -> dict[str, Any]:
        return {"fake": True}

    def sync(self) -> None:
        pass

    def time(self, fn: Callable[..., object], inputs: tuple[Any, ...]) -> float:
        fn(*inputs)
        return 1e-3

    def peaks(self) -> Peaks:
        return Peaks(memory={"copy": 1e12, "read": 1e12}, compute={"fp32": 1e12})


@pytest.fixture(autouse=True)
def _a_gpu(monkeypatch: pytest.MonkeyPatch) -> None:
    # Set by the outer test, so that the pytester runs in this process that follow find
    # the real `cuda()` again. No client hook serves `auto` (but in the last test), so the
    # plugin's own resolution is what is tested.
    monkeypatch.setattr(pytest_autotune.backends, "cuda", lambda index=None, **_: FakeGpu())


CONFTEST = textwrap.dedent(
    """
    class DeviceArray:
        # What CuPy's arrays, Numba's device arrays and CUDA tensors expose.
        __cuda_array_interface__ = {"shape": (4,), "typestr": "<f4", "data": (0, False)}

        def __init__(self, n):
            self.n = n
    """
)

TESTS = """
import numpy as np
import pytest
from conftest import DeviceArray

@pytest.fixture
def x():
    return np.arange(1000.0)

@pytest.mark.autotune(candidates={"sum": np.sum, "reduce": np.add.reduce})
def test_host(candidate, x):
    return candidate(x)

@pytest.mark.autotune(candidates={"sum": np.sum, "reduce": np.add.reduce}, device="cuda")
def test_named(candidate, x):
    return candidate(x)

@pytest.mark.autotune(candidates={"a": lambda d: d.n, "b": lambda d: d.n})
def test_device(candidate):
    return candidate(DeviceArray(4))

@pytest.mark.autotune(candidates={"a": lambda n: n * 2, "b": lambda n: n + n})
def test_sizes(candidate):
    return candidate(4)

def test_fixture(autotune):
    from pytest_autotune import TunableSet
    tunables = TunableSet.of(lambda x: x.size, {"sum": np.sum, "reduce": np.add.reduce})
    assert autotune(tunables, np.ones(100)) == 100
"""


def _devices(records: Path) -> dict[str, str]:
    return {
        r["extra"]["group"].split("::")[1]: r["extra"]["device"]["id"]
        for r in map(json.loads, records.read_text().splitlines())
    }


def test_auto_tunes_host_arrays_on_the_cpu_and_device_arrays_on_the_gpu(
    pytester: pytest.Pytester,
) -> None:
    # NumPy candidates on a GPU machine were timed by the CUDA client as a GPU call, judged
    # by a GPU's 3% tolerance, and filed under the GPU's folder.
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(test_groups=TESTS)
    records = pytester.path / "records.jsonl"
    result = run(pytester, "--autotune", f"--autotune-record={records}", "-W", "error")
    result.assert_outcomes(passed=9)
    devices = _devices(records)
    assert devices.pop("test_host").startswith("cpu-")
    assert devices.pop("test_fixture").startswith("cpu-")  # the fixture's set as the marker's
    assert devices == {
        "test_named": "cuda-fake-gpu",  # a device named is the device used
        "test_device": "cuda-fake-gpu",
        "test_sizes": "cuda-fake-gpu",  # no array: nothing says where the work runs
    }
    result.stdout.fnmatch_lines(
        [
            "note: device auto: 2 groups of host arrays (NumPy, CPU tensors) tuned on the CPU,"
            " not the GPU (test_groups.py::test_*, test_groups.py::test_*); give"
            " device='cuda' to time host code as a GPU call"
        ]
    )
    # Its baselines go to the CPU's folder.
    result = run(pytester, "--autotune-update", "-q")
    assert result.ret == 0
    root = pytester.path / ".autotune"
    assert sorted(p.name for p in root.iterdir() if not p.name.startswith("cpu-")) == [
        "cuda-fake-gpu"
    ]
    assert sorted(p.name.split("-")[0] for p in root.glob("cpu-*/*.json")) == [
        "test_groups.py__test_fixture",
        "test_groups.py__test_host",
    ]


def test_a_hook_that_serves_auto_keeps_every_group(pytester: pytest.Pytester) -> None:
    # A project's own client for `auto` (a fake in its tests, a remote device) decides.
    pytester.makeconftest(
        CONFTEST
        + textwrap.dedent(
            """
            from tests.plugin.test_host_inputs_on_gpu import FakeGpu

            def pytest_autotune_client(config, device):
                return FakeGpu() if device == "auto" else None
            """
        )
    )
    pytester.makepyfile(test_groups=TESTS)
    records = pytester.path / "records.jsonl"
    result = run(pytester, "--autotune", f"--autotune-record={records}")
    result.assert_outcomes(passed=9)
    assert set(_devices(records).values()) == {"cuda-fake-gpu"}
    assert "device auto:" not in result.stdout.str()


def test_a_test_of_the_fixture_is_tuned_on_the_device_its_marker_names(
    pytester: pytest.Pytester,
) -> None:
    # The marker's `device=` (the test's own or its module's `pytestmark`, shared with its
    # marker tests) was dropped for a test of the fixture: its host arrays were tuned on the
    # CPU and filed under its folder, though the summary's note says to give device='cuda'.
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(
        test_marked="""
        import numpy as np
        import pytest
        from pytest_autotune import TunableSet

        pytestmark = pytest.mark.autotune(device="cuda")

        def make_set():
            return TunableSet.of(lambda x: x.size, {"sum": np.sum, "reduce": np.add.reduce})

        def test_module_marked(autotune):
            assert autotune(make_set(), np.ones(100)) == 100

        @pytest.mark.autotune(device="cpu")
        def test_own_marker(autotune):
            assert autotune(make_set(), np.ones(100)) == 100

        @pytest.mark.autotune(candidates={"sum": np.sum, "reduce": np.add.reduce})
        def test_candidates(candidate):
            return candidate(np.ones(100))
        """
    )
    records = pytester.path / "records.jsonl"
    result = run(pytester, "--autotune", f"--autotune-record={records}")
    result.assert_outcomes(passed=4)
    devices = _devices(records)
    assert devices.pop("test_own_marker").startswith("cpu-")
    assert devices == {"test_module_marked": "cuda-fake-gpu", "test_candidates": "cuda-fake-gpu"}
    assert "device auto:" not in result.stdout.str()
