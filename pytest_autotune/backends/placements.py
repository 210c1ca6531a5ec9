"""The gate's sampler over several placements of a call's inputs, whatever the device: a
round of them per sample, or one placement in turn (`over_placements`). Where the copies
lie is each client's own (`cuda_graphs.Placement`, `cpu_placements`)."""

from __future__ import annotations

import itertools
import statistics
from collections.abc import Callable, Sequence


def over_placements(timings: Sequence[Callable[[], float]], round_s: float) -> Callable[[], float]:
    """A sampler over `timings`, one timing of the call at each placement, each taken once
    here: a sample is one timing at each, their mean, where such a round takes at most
    `round_s`; else one placement's timing, each in turn. A mixture that is the same in
    every sample keeps the samples' spread to the calls' own noise (two speeds 4% apart
    read as noise that wide); a long call's round would cost too much."""
    first = [timing() for timing in timings]
    if len(timings) * statistics.median(first) <= round_s:

        def round_of_placements() -> float:
            return statistics.fmean(timing() for timing in timings)

        return round_of_placements
    turn = itertools.cycle(timings)

    def one_placement_in_turn() -> float:
        return next(turn)()

    return one_placement_in_turn
