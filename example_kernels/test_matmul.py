"""fp32 matrix product, tuned over its candidates."""

import pytest

from example_kernels import matmul
from example_kernels.backend import candidates, sizes, xp


@pytest.fixture(scope="module", params=sizes(cpu=[256], cuda=[4096]), ids=lambda n: f"n{n}")
def ab(request):
    return matmul.inputs(request.param, xp())


@pytest.mark.autotune(
    candidates=candidates(matmul),
    work=lambda ab: matmul.work(*ab),
    reference=matmul.reference,
    rtol=1e-3,
    atol=1e-3,
)
def test_matmul(candidate, ab):
    return candidate(*ab)
