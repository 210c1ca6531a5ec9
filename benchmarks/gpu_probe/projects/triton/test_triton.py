"""A Triton kernel as a candidate beside a torch expression and a CuPy one. Triton launches
only on torch tensors (its driver imports torch), so this module skips where torch is
missing."""

import pytest

torch = pytest.importorskip("torch")
triton = pytest.importorskip("triton")
tl = pytest.importorskip("triton.language")


@triton.jit
def _scale_kernel(x_ptr, out_ptr, n, factor, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offsets < n
    tl.store(out_ptr + offsets, tl.load(x_ptr + offsets, mask=mask) * factor, mask=mask)


def _triton_scale(block):
    def scale(x):
        out = torch.empty_like(x)
        n = x.numel()
        _scale_kernel[(triton.cdiv(n, block),)](x, out, n, 2.0, BLOCK=block)
        return out

    scale.__name__ = f"triton_{block}"
    return scale


def torch_scale(x):
    return x * 2.0


def cupy_scale(x):
    # A CuPy view of the tensor, its result handed back to torch: a mixed program.
    import cupy as cp

    return torch.as_tensor(cp.asarray(x) * 2.0, device=x.device)


@pytest.fixture(scope="module")
def x():
    if not torch.cuda.is_available():
        pytest.skip("torch sees no CUDA device")
    return torch.rand(1 << 22, device="cuda")


@pytest.mark.autotune(
    candidates={
        "torch": torch_scale,
        "triton_256": _triton_scale(256),
        "triton_1024": _triton_scale(1024),
        "cupy": cupy_scale,
    }
)
def test_scale(candidate, x):
    return candidate(x)
