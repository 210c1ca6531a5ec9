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
the transpose between the two (2.3% against 1.4% and 3.8%). The count reads each array's
bytes as unsigned integers (`CALIBRATION_KIND`'s version 2): both kernels then stream
through memory, as the kernels the gate times mostly do.

A small input is read several times in a row, as many as make `READ_BYTES` (2 MiB), so
that a cache-resident kernel's read is long enough to follow the machine. On the 2-core VM
an `np.sort` of 32K floats (128 KiB, about 250 us) moved by 14.8% (sd of ln) over 112
fresh processes in six quiet minutes, and by 19.6% over 50 beside a test suite running on
both CPUs, where it ran 32% faster (the VM's CPUs are quicker when busy); divided by one
read of its input (38 us) the spread was 4.6% and 6.4%, by 16 reads 2.1% and 4.1%, and the
quiet-to-loaded move of the ratio +2.6% (benchmarks/cpu_read_repeats.py, BENCHMARKS.md,
2026-12-03). Inputs under 32 KiB are read once still: more than `MAX_REPEATS` reads of so
few bytes would time the calls into NumPy, not the machine's memory. The repeat count
depends on the inputs' sizes alone, and is part of the read's kind (`calibration_kind`),
so a baseline divided by one read is never compared with a run divided by sixteen.

The read is used only where it is long enough to time. A read of a few hundred bytes takes
a few microseconds, nearly all of it the interpreter's calls into NumPy: its changes from
one session to the next are the timer's and the interpreter's, not the machine's, and
dividing by it turned a steady +51% (a 2 ms kernel over 64-element arrays, slowed 50%)
into +6.8% to +107% over three runs. Below `MIN_READ_SECONDS` the gate compares raw
times, with the raw tolerance.
"""

from __future__ import annotations

import statistics
from collections.abc import Callable
from typing import Any, NamedTuple

import numpy as np

from pytest_autotune.tune.nested import nested_values

CALIBRATION_KIND = "read-inputs/2"
"""Names the calibration workload in the cache files. A baseline with another kind (or none)
measured something else, and the gate then compares the raw times; one of `FLOAT_COUNTS` is
divided by that read still.

Version 2 counts each array's bytes as unsigned integers of its item's width, where version
1 counted its values. On an AVX-512 Intel Xeon VM `np.count_nonzero` of 4 Mi float32 values
took 2.95 ms, against 0.61 ms for the same bytes as uint32 and 0.91 ms for their `np.sum`:
four fifths of the read was compute, which a neighbour slows otherwise than the memory a
streaming kernel waits on. Over 80 fresh-process sessions there (half beside a `pytest -n
2`), the 4 MiB sum's spread divided by version 1 was 2.6% quiet and 18.2% beside the
suite, by version 2 1.6% and 2.1% (raw 5.0% and 6.7%), and a gate of unchanged code beside
a starting test suite failed as +77% (BENCHMARKS.md, 2026-12-05, fortieth session)."""

FLOAT_COUNTS = "read-inputs/1"
"""The read of version 1, which counted the values themselves: a baseline recorded with it
is divided by it (`timed_calibration`), until an update records today's."""

_KINDS = (CALIBRATION_KIND, FLOAT_COUNTS)

_UNSIGNED = {1: np.uint8, 2: np.uint16, 4: np.uint32, 8: np.uint64}
"""The unsigned integer of each item width: what version 2 counts an array's bytes as."""

_ORDERED_KINDS = frozenset("biuf")
"""dtype kinds a `maximum` reduction reads without a meaning of its own to worry about."""


READ_BYTES = 2 << 20
"""The bytes a calibration read covers at least, its inputs read as many times in a row as
that takes (`read_repeats`): see the module docstring."""

MAX_REPEATS = 64
"""The most times the read reads its inputs: inputs under `READ_BYTES / MAX_REPEATS` (32 KiB)
are read once, as a read of so few bytes is mostly the calls into NumPy, not the machine's
memory (issue 9's 2 ms kernel over 64-element arrays)."""

MIN_READ_SECONDS = 50e-6
"""The shortest calibration read the gate divides by: 25 times the ~2 us the read's own
calls into NumPy cost, so that their jitter (a microsecond or two between sessions) moves
it by a few percent at most, as the machine's state does."""


def long_enough(seconds: float) -> bool:
    """Whether a calibration read of this median time measures the machine."""
    return seconds >= MIN_READ_SECONDS


def read_repeats(inputs: tuple[Any, ...]) -> int:
    """How many times in a row the calibration read reads `inputs`: as many as cover
    `READ_BYTES`, where that takes at most `MAX_REPEATS`; else once. A function of the
    inputs' sizes alone, so a baseline and a run of the same inputs read the same."""
    nbytes = sum(int(a.nbytes) for a in input_arrays(inputs))
    if not nbytes:
        return 1
    repeats = -(-READ_BYTES // nbytes)
    return repeats if repeats <= MAX_REPEATS else 1


def calibration_kind(
    inputs: tuple[Any, ...], repeats: int | None = None, workload: str = CALIBRATION_KIND
) -> str:
    """The kind of `inputs`' calibration read, as the cache files name it: its `workload`
    (`CALIBRATION_KIND`) for one read of them, with `x<repeats>` after it for that many
    (`read_repeats` unless given)."""
    repeats = read_repeats(inputs) if repeats is None else repeats
    return workload if repeats == 1 else f"{workload}x{repeats}"


def parse_kind(kind: str) -> tuple[str, int] | None:
    """The workload (`CALIBRATION_KIND` or `FLOAT_COUNTS`) and the repeats of a read of
    `kind`; None for a kind this version does not make."""
    if kind in _KINDS:
        return kind, 1
    head, x, count = kind.rpartition("x")
    # ASCII digits only: a hand-edited `x²` passes `isdigit`, and `int` refuses it.
    digits = count.isascii() and count.isdigit()
    if head in _KINDS and x and digits and 1 < int(count) <= MAX_REPEATS:
        return head, int(count)
    return None


def calibration_read(
    inputs: tuple[Any, ...], repeats: int | None = None, workload: str = CALIBRATION_KIND
) -> Callable[[], None] | None:
    """The calibration read of `inputs`: every NumPy array in them (also inside tuples, lists
    and dict values) read `repeats` times (`read_repeats` unless given), as `workload` reads
    them; None when they hold no non-empty numeric array, since then there is nothing of the
    kernel's to read."""
    arrays = input_arrays(inputs)
    if not arrays:
        return None
    ordered = [a for a in arrays if a.dtype.kind in _ORDERED_KINDS]
    counted = arrays if workload == FLOAT_COUNTS else [_as_unsigned(a) for a in arrays]
    times = range(read_repeats(inputs) if repeats is None else repeats)

    def read() -> None:
        for _ in times:
            for array in counted:
                np.count_nonzero(array)
            for array in ordered:
                np.maximum.reduce(array, axis=None)

    return read


def _as_unsigned(array: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
    """The array's bytes as unsigned integers of its item's width (a view: the same memory,
    whatever its strides), whose count is a stream through memory; the array itself where
    no such integer is as wide (complex128's 16 bytes)."""
    unsigned = _UNSIGNED.get(array.dtype.itemsize)
    if unsigned is None or array.dtype.kind in "bu":
        return array
    try:
        return array.view(unsigned)
    except (TypeError, ValueError):
        return array


class TimedRead(NamedTuple):
    """A calibration read as the gate times it beside the winner: one sample of it
    (seconds), and its kind (`calibration_kind`)."""

    sample: Callable[[], float]
    kind: str


def timed_calibration(
    inputs: tuple[Any, ...],
    time: Callable[[Callable[[], None], tuple[()]], float],
    kind: str | None = None,
) -> TimedRead | None:
    """The calibration read of `inputs` as a timed sample (`time(read, ())`, seconds), or
    None where there is no read or it is too short to time (the median of `_PROBES` reads,
    the first of which also warms it up). With `kind` (a baseline's, where this version
    makes reads of that kind), the read is of that kind: a gate divides by the read its
    baseline divided by, and a baseline recorded before small inputs were read repeatedly
    is compared as it was then, rather than raw."""
    parsed = None if kind is None else parse_kind(kind)
    workload, repeats = parsed if parsed is not None else (CALIBRATION_KIND, None)
    read = calibration_read(inputs, repeats, workload)
    if read is None:
        return None

    def sample() -> float:
        return time(read, ())

    if not long_enough(statistics.median(sample() for _ in range(_PROBES))):
        return None
    return TimedRead(sample, calibration_kind(inputs, repeats, workload))


_PROBES = 5


def input_arrays(inputs: tuple[Any, ...]) -> list[np.ndarray[Any, Any]]:
    """The numeric NumPy arrays in `inputs` (in tuples, lists and mappings, a few levels
    deep: `nested_values`), each once: what a calibration read reads, and what a fresh
    process is sent (`fresh_process`)."""
    arrays = (
        value
        for value in nested_values(inputs)
        if isinstance(value, np.ndarray) and value.size and value.dtype.kind in "biufc"
    )
    return list({id(a): a for a in arrays}.values())
