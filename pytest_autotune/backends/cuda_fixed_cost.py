"""What a CUDA sample reads beyond the call, the instrument's own, which the client measures
and takes off every sample (`CudaClient._empty_sample`): how long a measurement serves and
how much lower a new one must read to replace it (`FixedCost`), and the calls with no work
of their own that it samples (`enqueue_nothing`, `launch_empty`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

REPLAY_CALIBRATION_NODES = (1, 32)
"""Graphs of this many empty kernels measure a replay's fixed cost
(`CudaClient._replay_fixed_cost`)."""

FIXED_COST_REFRESH_S = 2.0
"""How long a measurement of what a sample reads beyond the call
(`CudaClient._empty_sample`) serves before the next sample measures it again: another
process's work beside a measurement (a second pytest-xdist worker) can only add to it, and
once measured high it would be taken off every later sample of the process. About 2 ms of
empty replays every 2 s of timing."""

FIXED_COST_MARGIN_S = 0.3e-6
"""How much lower a new measurement of the fixed cost must read to replace the one taken off:
more than the 0.1-0.2 us that repeated measurements in one H200 process spread by, so that
the least of many does not drift down with a session's length (what is taken off would
then depend on which tests ran), and far less than a reading disturbed by other work."""


@dataclass(slots=True)
class FixedCost:
    """What one sampling mode reads beyond a call (`CudaClient._empty_sample`), as measured in
    this process: what is taken off its samples, when it was last measured (`time.monotonic`),
    the highest measurement and how many were taken (`CudaClient.instrument`)."""

    taken: float
    measured_at: float
    highest: float
    count: int = 1

    def measured(self, seconds: float, at: float) -> None:
        """A new measurement: taken off from now on where it reads `FIXED_COST_MARGIN_S`
        lower than what is taken off, else only counted."""
        if seconds < self.taken - FIXED_COST_MARGIN_S:
            self.taken = seconds
        self.highest = max(self.highest, seconds)
        self.count += 1
        self.measured_at = at


def enqueue_nothing() -> None:
    """A candidate with no device work: what its sample reads is the instrument's cost."""


def launch_empty(kernel: Any, times: int) -> None:
    """`times` launches of an empty kernel. Not a method: a graph's key holds its call, and
    one that held the client would keep it, and its graphs, alive
    (`cuda_graphs.release_graphs`)."""
    for _ in range(times):
        kernel((1,), (1,), ())
