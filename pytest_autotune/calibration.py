"""The calibration read: a fixed read of the winner's own inputs, timed beside it, so the gate
can tell a slower machine from a slower kernel on a CPU.

On a shared CPU a kernel's speed moves 5-8% from one pytest session to the next (neighbours'
load, turbo clocks, cache contention; benchmarks/gate_reliability.py measured it), which is
more than a gate may tolerate and still catch a 25% slowdown. The peak probes cannot follow
it: they run once, at the session's start, over buffers far larger than the kernel's, and
their changes did not correlate with the kernels'. A read of the same buffers, sample for
sample beside the winner, meets the same caches, clocks and neighbours at the same moment,
and its own code never changes with the code under test. Over 100 sessions on this
repository's 2-core VM (BENCHMARKS.md, run E) the spread of the kernels' times fell from
6.7-8.5% to 3.7-5% once divided by it: half the machine's share, not all of it.

Two read kernels, `count_nonzero` and a `maximum` reduction, each over every array, rather
than one: each has its own session-to-session quirks. In 40 short sessions the pair followed
the 4 MiB sum kernel better than either alone (a spread of 1.6% against 2.6% and 2.8%) and
the transpose between the two (2.3% against 1.4% and 3.8%).

The read is used only where it is long enough to time. A read of a few hundred bytes takes
a few microseconds, nearly all of it the interpreter's calls into NumPy: its changes from
one session to the next are the timer's and the interpreter's, not the machine's, and
dividing by it turned a steady +51% (a 2 ms kernel over 64-element arrays, slowed 50%)
into +6.8% to +107% over three runs. Below `MIN_READ_SECONDS` the gate compares raw
times, with the raw tolerance.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import numpy as np

CALIBRATION_KIND = "read-inputs/1"
"""Names the calibration workload in the cache files. A baseline with another kind (or none)
measured something else, and the gate then compares the raw times."""

_ORDERED_KINDS = frozenset("biuf")
"""dtype kinds a `maximum` reduction reads without a meaning of its own to worry about."""

_MAX_DEPTH = 4

MIN_READ_SECONDS = 50e-6
"""The shortest calibration read the gate divides by: 25 times the ~2 us the read's own
calls into NumPy cost, so that their jitter (a microsecond or two between sessions) moves
it by a few percent at most, as the machine's state does."""


def long_enough(seconds: float) -> bool:
    """Whether a calibration read of this median time measures the machine."""
    return seconds >= MIN_READ_SECONDS


def calibration_read(inputs: tuple[Any, ...]) -> Callable[[], None] | None:
    """The calibration read of `inputs`: every NumPy array in them (also inside tuples, lists
    and dict values) read once; None when they hold no non-empty numeric array, since then
    there is nothing of the kernel's to read."""
    arrays = input_arrays(inputs)
    if not arrays:
        return None
    ordered = [a for a in arrays if a.dtype.kind in _ORDERED_KINDS]

    def read() -> None:
        for array in arrays:
            np.count_nonzero(array)
        for array in ordered:
            np.maximum.reduce(array, axis=None)

    return read


def timed_calibration(
    inputs: tuple[Any, ...], time: Callable[[Callable[[], None], tuple[()]], float]
) -> Callable[[], float] | None:
    """The calibration read of `inputs` as a timed sample (`time(read, ())`, seconds), or
    None where there is no read or it is too short to time (the median of `_PROBES` reads,
    the first of which also warms it up)."""
    read = calibration_read(inputs)
    if read is None:
        return None

    def sample() -> float:
        return time(read, ())

    return sample if long_enough(statistics.median(sample() for _ in range(_PROBES))) else None


_PROBES = 5


def input_arrays(inputs: tuple[Any, ...]) -> list[np.ndarray[Any, Any]]:
    """The numeric NumPy arrays in `inputs` (in tuples, lists and mappings, a few levels
    deep), each once: what a calibration read reads, and what a fresh process is sent
    (`fresh_process`)."""
    return list({id(a): a for a in _arrays(inputs, 0)}.values())


def _arrays(value: Any, depth: int) -> Iterator[np.ndarray[Any, Any]]:
    if isinstance(value, np.ndarray):
        if value.size and value.dtype.kind in "biufc":
            yield value
    elif depth < _MAX_DEPTH and isinstance(value, (tuple, list)):
        for item in value:
            yield from _arrays(item, depth + 1)
    elif depth < _MAX_DEPTH and isinstance(value, Mapping):
        for item in value.values():
            yield from _arrays(item, depth + 1)
