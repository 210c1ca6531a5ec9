"""Triton kernels as candidates, on PyTorch's CUDA tensors: launched on torch's current
stream, checked against a torch reference, and timed as Triton's own `do_bench` times them."""

from __future__ import annotations

from typing import Any

import pytest

from pytest_autotune import AutotuneConfig, AutotuneOutcome, TunableSet, Tuner
from pytest_autotune.backends import CudaClient

torch = pytest.importorskip("torch")
triton = pytest.importorskip("triton")
tl = pytest.importorskip("triton.language")


# Unannotated but for BLOCK: Triton reads a parameter's annotation as its type, and `Any`
# is a global it cannot see from the kernel.
@triton.jit
def _scale_kernel(x_ptr, out_ptr, n, factor, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) * factor, mask=mask)


def _triton_scale(block: int, factor: float = 2.0) -> Any:
    def scale(x: Any) -> Any:
        out = torch.empty_like(x)
        n = x.numel()
        _scale_kernel[(triton.cdiv(n, block),)](x, out, n, factor, BLOCK=block)
        return out

    scale.__name__ = f"triton_{block}"
    return scale


@pytest.fixture(scope="module")
def x() -> Any:
    if not torch.cuda.is_available():
        pytest.skip("torch sees no CUDA device")
    return torch.rand(1 << 24, device="cuda")


def test_triton_candidates_are_checked_and_timed_as_do_bench_times_them(
    x: Any, client: CudaClient
) -> None:
    candidates = {
        "torch": lambda v: v * 2.0,
        "triton_128": _triton_scale(128),
        "triton_1024": _triton_scale(1024),
        "wrong": _triton_scale(1024, factor=2.5),
    }
    for fn in candidates.values():
        fn(x)  # compiled outside the tuning, as do_bench's warm-up compiles them
    tunables = TunableSet.of(lambda v: v.numel(), candidates)
    config = AutotuneConfig(disable_cache=True, checks=True)
    decision = Tuner("triton-scale", client.device_id, config).tune(
        x.numel(), tunables, (x,), client
    )

    checks = {check.name: check.passed for check in decision.checks}
    assert checks == {"torch": True, "triton_128": True, "triton_1024": True, "wrong": False}
    ours = {r.name: r.median for r in decision.results.values() if isinstance(r, AutotuneOutcome)}
    for name in ("torch", "triton_1024"):
        theirs = triton.testing.do_bench(lambda f=candidates[name]: f(x), return_mode="median")
        # The same device work by both clocks: a client that timed the launch alone would
        # read a hundredth of it, one that timed a synchronisation far more.
        assert 0.5 < ours[name] / (theirs / 1e3) < 2.0, (name, ours[name], theirs)
