"""Python's cyclic garbage collector held off while a CUDA call is timed (`collector_paused`),
on every thread timing, until the last of them is done."""

from __future__ import annotations

import contextlib
import gc
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field


@contextlib.contextmanager
def collector_paused() -> Iterator[None]:
    """Python's cyclic garbage collector held off (not an explicit `gc.collect()`) while a
    call is timed. A client is in reference cycles (its probe and its graphs' warm-up timer
    refer back to it), as a candidate's objects may be, and the collector runs their
    finalizers at whatever allocation triggers it: cudaFree (a pool's blocks, a CuPy
    `Memory`) and cudaFreeHost (a client's hold flag) synchronize, so inside a capture
    (thread-local mode) they fail and fail the capture, and the candidate was timed through
    the stream from then on; behind the hold they wait until it gives up. They run after
    the call instead. Process-wide: another thread's collections wait as well, and the
    collector runs again once the last of the threads timing (two clients of two GPUs) is
    done: each restoring what it found, the first to finish turned it back on inside the
    other's capture."""
    with _PAUSED.lock:
        if not _PAUSED.count:
            _PAUSED.was_enabled = gc.isenabled()
            gc.disable()
        _PAUSED.count += 1
    try:
        yield
    finally:
        with _PAUSED.lock:
            _PAUSED.count -= 1
            if not _PAUSED.count and _PAUSED.was_enabled:
                gc.enable()


@dataclass(slots=True)
class _Paused:
    """The calls being timed now on every thread, with the collector held off
    (`collector_paused`), and whether it ran before the first of them."""

    count: int = 0
    was_enabled: bool = False
    lock: threading.Lock = field(default_factory=threading.Lock)


_PAUSED = _Paused()
