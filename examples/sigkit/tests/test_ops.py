"""The library's own tests: plain `pytest` checks the three implementations agree;
`pytest --autotune-update` tunes them and writes `sigkit/.autotune`, which the wheel ships."""

import numpy as np
import pytest
from sigkit import ops


@pytest.fixture(params=[1 << 10, 1 << 14], ids=lambda n: f"n{n}")
def x(request):
    return np.random.default_rng(0).random(request.param)


@pytest.mark.parametrize("window", [16])
def test_moving_sum(autotune, x, window):
    # TUNER.init stamps the set with the tuner's name, so the cache file written here is
    # sigkit/.autotune/<device_id>/sigkit.ops.json: the file `ops.moving_sum` reads.
    out = autotune(ops.TUNER.init(ops.moving_sum_set), x, window, rtol=1e-9, max_regression=1.0)
    expected = np.array([x[i : i + window].sum() for i in range(x.size - window + 1)])
    np.testing.assert_allclose(out, expected, rtol=1e-9)
