"""Where a CPU call's arrays lie, for the gate: the winner sampled over several placements
of its NumPy array inputs, so that the time it measures does not depend on where this
process's history put them (`CpuClient.placed_sampler`).

Why: a call over arrays that fit a cache runs at a speed that depends on their addresses
modulo a page, where loads of one array and stores to another alias (Intel's "4K
aliasing") or share cache sets. On the 2-thread Xeon CI machine `y += a * x` over 64 Ki
fp32 ran in 10.8-12.5 us as y moved by multiples of 64 bytes against x, and the example
saxpy's winner read 12.2 us in the `-n 2` process that recorded its baseline and 14.6-17.1
us in every single process of `pytest -k saxpy --autotune` run from one installation (13.1
from another): a regression of 20-36% by the gate's rule, confirmed in fresh processes,
which lay their arrays out alike (BENCHMARKS.md, twenty-seventh session). Each placement
copies the array inputs to an offset of its own, a different one for each array, so the
relative layouts differ too; none is the caller's own arrays. What the placements leave
alone is where the call's own temporaries land (malloc's heap): one run in eight still
read the saxpy 28% slow.
"""

from __future__ import annotations

import functools
import itertools
from collections.abc import Callable
from typing import Any

import numpy as np

from pytest_autotune.backends.placements import over_placements

PLACEMENTS = 4
"""Placements the gate samples a CPU winner over, each a copy of the inputs: never the
caller's own arrays, whose layout is the process's history (two 256 KiB arrays NumPy made
one after the other lay 16 bytes apart modulo a page, in a new process and after malloc's
threshold rose alike)."""

PLACEMENT_PERIOD = 4096
"""Offsets are taken modulo a page: what aliasing and cache sets depend on."""

PLACEMENT_STEP = 1088
"""Bytes between the offsets of consecutive placements of one array (17 cache lines: the
offsets of placements and arrays then fall on different lines and sets of the page)."""

PLACED_MAX_BYTES = 16 * 1024 * 1024
"""Inputs larger than this in all are not copied (the placements would hold four times
as much): they are sampled as the caller's. Working sets that large stream from DRAM,
where where they lie matters least."""

ROUND_OF_PLACEMENTS_S = 50e-3
"""A sample is one timing at each placement, their mean, where such a round takes at most
this long; a longer call's samples visit one placement each, in turn. A mixture that is the
same in every sample keeps the samples' spread to the calls' own noise."""


def offset(placement: int, array: int, itemsize: int) -> int:
    """Bytes past a page boundary where array `array` of placement `placement` starts: a
    multiple of 64 (a cache line) and of the array's item size."""
    raw = (placement + 1) * (2 * array + 1) * PLACEMENT_STEP % PLACEMENT_PERIOD
    unit = np.lcm(64, itemsize)
    return int(raw // unit * unit)


def placeable(inputs: tuple[Any, ...]) -> bool:
    """Whether copies of `inputs` time what the caller's call does: its arrays are
    contiguous (a copy keeps their order) and share no memory with each other but by being
    the same array (`op(x, x)` is copied once and given twice; `op(x, x[1:])` is not
    copied), and they are not too large to copy (`PLACED_MAX_BYTES`). A copy is a plain
    array of raw bytes: an object array cannot be one (every candidate of a ragged batch
    failed while measured, "Cannot change data-type for array of references"), and a
    subclass's would lose its kind (a matrix's `*`, a masked array's mask)."""
    arrays = list({id(v): v for v in inputs if isinstance(v, np.ndarray)}.values())
    if not arrays or sum(a.nbytes for a in arrays) > PLACED_MAX_BYTES:
        return False
    if any(type(a) is not np.ndarray or a.dtype.hasobject for a in arrays):
        return False
    if not all(a.flags.c_contiguous or a.flags.f_contiguous for a in arrays):
        return False
    return not any(np.shares_memory(a, b) for a, b in itertools.combinations(arrays, 2))


def copies(inputs: tuple[Any, ...], placement: int) -> tuple[Any, ...]:
    """`inputs` with each NumPy array copied to `placement`'s offset of it, in its own
    order; other values as they are."""
    copied: dict[int, np.ndarray] = {}

    def copy(v: Any) -> Any:
        if not isinstance(v, np.ndarray):
            return v
        if id(v) not in copied:
            start = offset(placement, len(copied), v.itemsize)
            block = np.empty(v.nbytes + 2 * PLACEMENT_PERIOD, dtype=np.uint8)
            start += -block.ctypes.data % PLACEMENT_PERIOD
            fortran = v.flags.f_contiguous and not v.flags.c_contiguous
            placed = block[start : start + v.nbytes].view(v.dtype)
            placed = placed.reshape(v.shape, order="F" if fortran else "C")
            np.copyto(placed, v)
            copied[id(v)] = placed
        return copied[id(v)]

    return tuple(copy(v) for v in inputs)


def placed_sampler(
    time: Callable[[Callable[..., object], tuple[Any, ...]], float],
    fn: Callable[..., object],
    inputs: tuple[Any, ...],
    count: int = PLACEMENTS,
) -> Callable[[], float]:
    """A sampler of `fn` over `count` placements of `inputs`, each timed by `time(fn, args)`:
    a round of them per sample or one in turn (`ROUND_OF_PLACEMENTS_S`). Inputs that cannot
    be placed (`placeable`) are sampled as they are. Each placement is timed once here."""
    if count < 2 or not placeable(inputs):
        return lambda: time(fn, inputs)
    timings = [functools.partial(time, fn, copies(inputs, i)) for i in range(count)]
    return over_placements(timings, ROUND_OF_PLACEMENTS_S)
