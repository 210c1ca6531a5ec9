"""The CPU gate's placements: copies of a winner's NumPy inputs at offsets of their own."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from pytest_autotune.backends import cpu_placements
from pytest_autotune.backends.cpu import CpuClient
from pytest_autotune.backends.cpu_placements import (
    PLACEMENT_PERIOD,
    PLACEMENTS,
    copies,
    offset,
    placeable,
    placed_sampler,
)
from pytest_autotune.candidate_measure import candidate_measurer


def page_offset(a: np.ndarray) -> int:
    return int(a.ctypes.data % PLACEMENT_PERIOD)


@pytest.mark.parametrize("itemsize", [1, 4, 8, 16])
def test_offsets_fall_on_cache_lines_and_differ_by_placement_and_array(itemsize: int) -> None:
    table = [[offset(p, a, itemsize) for a in range(3)] for p in range(PLACEMENTS)]
    for row in table:
        for value in row:
            assert 0 <= value < PLACEMENT_PERIOD
            assert value % 64 == 0 and value % itemsize == 0
    # One array lands at another offset in each placement, and two arrays of a placement
    # lie apart by another distance in each: the relative layouts differ too.
    assert len({row[0] for row in table}) == PLACEMENTS
    assert len({(row[1] - row[0]) % PLACEMENT_PERIOD for row in table}) == PLACEMENTS


def test_copies_hold_the_values_in_the_callers_order_at_their_offsets() -> None:
    x = np.arange(1000, dtype=np.float32)
    f = np.asfortranarray(np.arange(12.0).reshape(3, 4))
    a = 2.5
    placed = copies((a, x, f, x), 2)
    assert placed[0] is a
    assert placed[1] is placed[3]  # one array given twice is copied once, given twice
    assert placed[1] is not x and not np.shares_memory(placed[1], x)
    np.testing.assert_array_equal(placed[1], x)
    np.testing.assert_array_equal(placed[2], f)
    assert placed[2].flags.f_contiguous and placed[2].dtype == f.dtype
    assert page_offset(placed[1]) == offset(2, 0, 4)
    assert page_offset(placed[2]) == offset(2, 1, 8)


def test_inputs_whose_copies_would_time_another_call_are_not_placed(monkeypatch) -> None:
    x = np.zeros(1024)
    assert placeable((x, np.ones(8), 3))
    assert not placeable((3, "text"))  # nothing to place
    assert not placeable((x, x[1:]))  # views of one buffer: the call relies on the overlap
    assert not placeable((x[::2],))  # a copy would be contiguous, the caller's is not
    assert not placeable((np.array([x, None], dtype=object),))  # no raw bytes hold references
    assert not placeable((np.ma.masked_array(np.ones(3), mask=[0, 1, 0]),))  # loses its mask
    monkeypatch.setattr(cpu_placements, "PLACED_MAX_BYTES", x.nbytes - 1)
    assert not placeable((x,))


class Timer:
    """A `time(fn, args)` that reads `seconds` and keeps the arrays each call was given."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.given: list[Any] = []

    def __call__(self, fn: Any, args: tuple[Any, ...]) -> float:
        self.given.append(args[0])
        return self.seconds * (1 + 0.1 * page_offset(args[0]) / PLACEMENT_PERIOD)


def test_a_short_calls_sample_is_the_mean_of_a_round_of_the_placements() -> None:
    x = np.zeros(4096, dtype=np.float32)
    timer = Timer(1e-3)
    sample = placed_sampler(timer, print, (x,))
    warm = timer.given[:]
    assert len(warm) == PLACEMENTS and all(a is not x for a in warm)  # never the caller's
    assert len({page_offset(a) for a in warm}) == PLACEMENTS
    timer.given.clear()
    expected = np.mean([1e-3 * (1 + 0.1 * page_offset(a) / PLACEMENT_PERIOD) for a in warm])
    assert sample() == pytest.approx(expected)
    assert [id(a) for a in timer.given] == [id(a) for a in warm]


def test_a_long_calls_samples_visit_one_placement_each_in_turn() -> None:
    x = np.zeros(4096, dtype=np.float32)
    timer = Timer(cpu_placements.ROUND_OF_PLACEMENTS_S)
    sample = placed_sampler(timer, print, (x,))
    warm = timer.given[:]
    timer.given.clear()
    for _ in range(2 * PLACEMENTS):
        sample()
    assert [id(a) for a in timer.given] == [id(a) for a in warm] * 2


def test_unplaceable_inputs_are_sampled_as_the_callers() -> None:
    x = np.zeros(4096)
    timer = Timer(1e-3)
    sample = placed_sampler(timer, print, (x, x[1:]))
    sample()
    assert timer.given == [x]


def test_the_gate_measures_a_cpu_winner_on_copies_of_its_inputs() -> None:
    x = np.ones(1 << 12, dtype=np.float32)
    seen: set[int] = set()

    def double(v: np.ndarray) -> np.ndarray:
        seen.add(v.ctypes.data)
        return v * 2

    measure = candidate_measurer(CpuClient(), (x,))
    measurement = measure(double, "double")
    assert measurement.samples
    assert x.ctypes.data in seen  # the warm-up: the caller's call as it is
    placed = seen - {x.ctypes.data}
    assert len({address % PLACEMENT_PERIOD for address in placed}) == PLACEMENTS
