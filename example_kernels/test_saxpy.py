"""saxpy, tuned over its candidates: `y = a*x + y` in fp32."""

import pytest

from example_kernels import saxpy
from example_kernels.backend import candidates, sizes, xp


@pytest.fixture(
    scope="module", params=sizes(cpu=[1 << 16, 1 << 22], cuda=[1 << 26]), ids=lambda n: f"n{n}"
)
def inputs(request):
    return saxpy.inputs(request.param, xp())


@pytest.mark.autotune(
    candidates=candidates(saxpy),
    work=lambda inputs: saxpy.work(*inputs),
    reference=saxpy.reference,
)
def test_saxpy(candidate, inputs):
    return candidate(*inputs)
