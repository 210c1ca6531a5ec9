"""Every CuPy candidate of the example kernels computes what its NumPy reference does."""

from __future__ import annotations

from types import ModuleType
from typing import Any

import pytest

from example_kernels import matmul, saxpy, softmax, transpose
from example_kernels import sum as vector_sum
from pytest_autotune import compare_outputs

# (module, sizes, tolerances): the sizes include ones that are not multiples of any block
# or tile, so every tail path runs.
FAMILIES: dict[str, tuple[ModuleType, dict[str, tuple[Any, ...]], dict[str, float]]] = {
    "saxpy": (saxpy, {"odd": (1_000_003,), "big": (1 << 22,)}, {}),
    "sum": (vector_sum, {"odd": (4099,), "big": (1 << 26,)}, {}),
    "transpose": (transpose, {"odd": (1000,), "big": (2048,)}, {"rtol": 0, "atol": 0}),
    "softmax": (softmax, {"odd": (999, 1000), "big": (4096, 1024)}, {}),
    "matmul": (matmul, {"odd": (500,), "big": (1024,)}, {"rtol": 1e-4, "atol": 1e-5}),
}
WRONG_BY_DESIGN = {("sum", "big", "atomic_naive")}
"""Candidates the checks must reject: fp32 atomics into one total lose precision."""

CASES = [
    pytest.param(family, size, name, id=f"{family}-{size}-{name}")
    for family, (module, sizes, _) in FAMILIES.items()
    for size in sizes
    for name in module.CUPY
]


@pytest.mark.parametrize(("family", "size", "name"), CASES)
def test_cupy_candidate_matches_the_numpy_reference(
    cp: Any, family: str, size: str, name: str
) -> None:
    module, sizes, tolerances = FAMILIES[family]
    host = module.inputs(*sizes[size])
    device = module.inputs(*sizes[size], xp=cp)
    expected = module.reference(*host)
    actual = module.CUPY[name](*device)
    cp.cuda.Device().synchronize()
    diff = compare_outputs(expected, actual, **tolerances)
    if (family, size, name) in WRONG_BY_DESIGN:
        assert diff is not None, f"{name} must lose precision at this size"
    else:
        assert diff is None, diff


@pytest.mark.parametrize("family", list(FAMILIES))
def test_the_reference_runs_on_the_device_and_agrees_with_the_host_one(
    cp: Any, family: str
) -> None:
    """The `--autotune` checks call the references on device inputs: they must compute
    there (a CuPy result, no copy to the host) what they compute on the host."""
    module, sizes, tolerances = FAMILIES[family]
    on_device = module.reference(*module.inputs(*sizes["odd"], xp=cp))
    assert isinstance(on_device, cp.ndarray)
    diff = compare_outputs(module.reference(*module.inputs(*sizes["odd"])), on_device, **tolerances)
    assert diff is None, diff
