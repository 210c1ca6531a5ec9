"""PyTorch's CUDA tensors as a candidate's inputs and outputs on the CUDA client: copied on
their device for each call, compared on the device, and timed (torch's kernels run on its
own stream, which the client's events order with, never inside the client's graphs)."""

from __future__ import annotations

from typing import Any

import pytest

from pytest_autotune import (
    AutotuneConfig,
    AutotuneOutcome,
    LocalTuner,
    TunableSet,
    Tuner,
    compare_outputs,
)
from pytest_autotune.backends import CudaClient
from pytest_autotune.tune import torch_tensors
from pytest_autotune.tune.clone import clone_value
from tests.plugin.harness import run

torch = pytest.importorskip("torch")


@pytest.fixture(scope="module")
def device() -> Any:
    if not torch.cuda.is_available():
        pytest.skip("torch sees no CUDA device")
    return torch.device("cuda", 0)


def test_cuda_tensors_of_one_storage_are_copied_as_views_of_one_copy_on_their_device(
    device: Any,
) -> None:
    # A cache and its view given apart were copied apart: a kernel writing into the view's
    # copy left the cache's copy as it was, and a wrong one writing nothing passed.
    cache = torch.zeros(64, 64, device=device)
    slot = cache.t()[8:16, 4:60]  # a transposed view: torch has no negative steps
    copied_cache, copied_slot = clone_value((cache, slot))
    copied_slot.fill_(1.0)
    assert copied_cache.device == device and copied_slot.stride() == slot.stride()
    assert float(copied_cache[4:60, 8:16].sum()) == 56 * 8 and float(copied_cache.sum()) == 56 * 8
    assert float(cache.sum()) == 0


def test_a_cuda_tensor_is_copied_on_its_device_with_its_strides(device: Any) -> None:
    matrix = torch.arange(4096.0, device=device).reshape(64, 64)
    for view in (matrix, matrix.t(), matrix[:, ::2]):
        copied = clone_value(view)
        assert copied.device == view.device and copied.stride() == view.stride()
        assert copied.data_ptr() != view.data_ptr()
        assert torch.equal(copied, view)


def test_cuda_tensors_that_agree_are_compared_on_the_device(
    device: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    reference = torch.rand(1 << 20, device=device)

    def no_host_copy(value: Any) -> Any:
        raise AssertionError("copied to the host")

    monkeypatch.setattr(torch_tensors, "tensor_on_host", no_host_copy)
    monkeypatch.setattr("pytest_autotune.tune.host_arrays.tensor_on_host", no_host_copy)
    assert compare_outputs(reference, reference * (1 + 1e-7)) is None


def test_cuda_tensors_that_differ_name_the_first_bad_element(device: Any) -> None:
    reference = torch.zeros(1000, device=device)
    actual = reference.clone()
    actual[123] = 1.0
    message = compare_outputs(reference, actual)
    assert message is not None and "first at [123]" in message
    half = torch.ones(10, device=device, dtype=torch.bfloat16)  # no CuPy dtype: on the host
    assert compare_outputs(half, half.clone()) is None
    assert compare_outputs(half, half.float()) is not None


def _ten_passes(v: Any) -> Any:
    out = v
    for _ in range(10):
        out = out + v
    return out - 9.0 * v


def _one_pass(v: Any) -> Any:
    return v * 2.0


def _tuned_medians(client: CudaClient, x: Any, name: str) -> tuple[str, dict[str, float]]:
    tunables = TunableSet.of(lambda v: v.numel(), {"ten": _ten_passes, "one": _one_pass})
    tuner = Tuner(name, client.device_id, AutotuneConfig(disable_cache=True))
    decision = tuner.tune(x.numel(), tunables, (x,), client)
    failed = [r for r in decision.results.values() if not isinstance(r, AutotuneOutcome)]
    assert not failed, failed
    return decision.fastest_name, {r.name: r.median for r in decision.results.values()}


def test_torch_candidates_are_timed_and_the_faster_one_wins(
    device: Any, client: CudaClient
) -> None:
    x = torch.rand(1 << 24, device=device)
    winner, times = _tuned_medians(client, x, "torch-timed")
    assert winner == "one"
    # A pass over 64 MiB takes tens of microseconds on any recent GPU: device work was timed,
    # not the launch alone.
    assert times["one"] > 5e-6
    assert times["ten"] > 5 * times["one"]


def test_torch_candidates_on_a_stream_the_program_set_are_timed_on_it(
    device: Any, client: CudaClient
) -> None:
    # Torch's streams are non-blocking: events on CuPy's default stream missed the work of
    # a tuning run inside `with torch.cuda.stream(s)`, and the ten passes read a fraction
    # of their time.
    x = torch.rand(1 << 24, device=device)
    _, on_default = _tuned_medians(client, x, "torch-default-stream")
    with torch.cuda.stream(torch.cuda.Stream(device)):
        winner, on_side = _tuned_medians(client, x, "torch-side-stream")
    assert winner == "one"
    assert on_side["ten"] > 0.7 * on_default["ten"]


def test_an_in_place_torch_candidate_leaves_the_callers_tensor_unchanged(
    device: Any, client: CudaClient
) -> None:
    first_seen: dict[str, float] = {}

    def in_place(v: Any) -> Any:
        first_seen.setdefault("in_place", float(v[0]))
        return v.mul_(2.0)

    def copy(v: Any) -> Any:
        first_seen.setdefault("copy", float(v[0]))
        return v * 2.0

    tuner = LocalTuner("torch-in-place-gpu", AutotuneConfig(disable_cache=True))
    tunables = tuner.init(
        lambda: TunableSet.of(lambda v: v.numel(), {"in_place": in_place, "copy": copy})
    )
    x = torch.ones(1 << 16, device=device)
    out = tuner.execute(client.device_id, client, tunables, (x,))
    # Each candidate's own copy held the caller's values when it was first called.
    assert first_seen == {"in_place": 1.0, "copy": 1.0}
    assert torch.equal(out, torch.full_like(out, 2.0))
    assert torch.equal(x, torch.full_like(x, 2.0 if out is x else 1.0))


TORCH_PROJECT = """
import pytest
import torch

@pytest.fixture(params=[1 << 16, 1 << 20])
def x(request):
    torch.manual_seed(0)
    return torch.rand(request.param, device="cuda")

def reference(x):
    return torch.softmax(x, dim=0)

def in_place(x):
    x.sub_(x.max()).exp_()
    return x.div_(x.sum())

def off(x):
    y = torch.softmax(x, dim=0)
    y[7] += 0.5
    return y

@pytest.mark.autotune(reference=reference, candidates=[in_place, off], device="cuda")
def test_softmax(candidate, x):
    return candidate(x)
"""


@pytest.mark.parametrize("mode", [(), ("--autotune-update",)], ids=["check", "update"])
def test_a_marked_group_of_torch_cuda_candidates_runs_as_a_user_writes_it(
    device: Any, pytester: pytest.Pytester, mode: tuple[str, ...]
) -> None:
    pytester.makeini("[pytest]\nfilterwarnings = error\n")
    pytester.makepyfile(test_torch_softmax=TORCH_PROJECT)
    result = run(pytester, *mode, "-rf")
    result.assert_outcomes(passed=2, failed=2)
    result.stdout.fnmatch_lines(["*first at [[]7[]]*"])
    result.stdout.no_fnmatch_line("*cannot compare*")
