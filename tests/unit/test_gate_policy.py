"""How the gate measures a candidate (`candidate_measure.candidate_measurer`) where its repeated
calls raise a floating-point error."""

from __future__ import annotations

import numpy as np
import pytest

from pytest_autotune.backends.cpu import CpuClient
from pytest_autotune.candidate_measure import candidate_measurer
from pytest_autotune.tune.errors import AutotuneError


def test_an_in_place_candidate_that_overflows_on_its_own_output_is_measured() -> None:
    def double(x: np.ndarray) -> np.ndarray:
        x *= 2
        return x

    measure = candidate_measurer(CpuClient(), (np.full(64, 5e307),))
    with np.errstate(all="raise"):
        measurement = measure(double, "double")
    assert measurement.samples


def test_a_candidate_whose_own_floating_point_error_repeats_fails_as_the_candidates_error() -> None:
    # Measured again with NumPy's errors ignored, an error of its own raised the gate's
    # private signal for a retry, which no caller catches: not the candidate's error.
    def broken(x: np.ndarray) -> np.ndarray:
        raise FloatingPointError("its own")

    measure = candidate_measurer(CpuClient(), (np.ones(8),))
    with pytest.raises(AutotuneError, match="its own"):
        measure(broken, "broken")
