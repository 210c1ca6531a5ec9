"""transpose, tuned over its candidates."""

import pytest

from example_kernels import transpose
from example_kernels.backend import candidates, sizes, xp


@pytest.fixture(scope="module", params=sizes(cpu=[1024], cuda=[8192]), ids=lambda n: f"n{n}")
def x(request):
    return transpose.inputs(request.param, xp())[0]


@pytest.mark.autotune(
    candidates=candidates(transpose),
    work=transpose.work,
    reference=transpose.reference,
)
def test_transpose(candidate, x):
    return candidate(x)
