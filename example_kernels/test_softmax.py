"""Row-wise softmax, tuned over its candidates."""

import pytest

from example_kernels import softmax
from example_kernels.backend import candidates, sizes, xp


@pytest.fixture(
    scope="module", params=sizes(cpu=[1024], cuda=[32768]), ids=lambda rows: f"rows{rows}"
)
def x(request):
    return softmax.inputs(request.param, xp=xp())[0]


@pytest.mark.autotune(
    candidates=candidates(softmax),
    work=softmax.work,
    reference=softmax.reference,
    rtol=1e-4,
    atol=1e-7,
)
def test_softmax(candidate, x):
    return candidate(x)
