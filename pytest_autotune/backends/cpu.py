"""The CPU client: times Python callables with a monotonic nanosecond clock, probes the peaks
NumPy and BLAS reach on this machine, and names the hardware class for the cache folder."""

from __future__ import annotations

import functools
import math
import os
import platform
import statistics
import sys
import time as _time
import weakref
from collections.abc import Callable, Hashable
from concurrent.futures import Future
from typing import Any, cast

import numpy as np

from pytest_autotune.backends.cpu_device import (
    blas_info,
    cpu_flags,
    cpu_model_name,
    cpu_threads,
    device_id_from,
    thread_env,
)
from pytest_autotune.backends.cpu_peaks import MIB, probe_cpu_peaks
from pytest_autotune.backends.cpu_placements import PLACEMENTS, placed_sampler
from pytest_autotune.backends.peaks import Peaks, load_or_probe, probe_again
from pytest_autotune.backends.tracing import tracing, untraced
from pytest_autotune.tune.benchmark import NS_PER_S
from pytest_autotune.tune.device_class import isa_level
from pytest_autotune.tune.device_compare import is_cupy_array
from pytest_autotune.tune.nested import nested_values
from pytest_autotune.tune.plain_numbers import real_number
from pytest_autotune.tune.torch_tensors import is_tensor

# Re-exported: the CPU's name and its peaks' probe were read from here before they had modules.
__all__ = [
    "CpuClient",
    "cpu",
    "cpu_model_name",
    "cpu_threads",
    "device_id_from",
    "probe_cpu_peaks",
    "settle_allocator",
]

DEFAULT_MIN_SAMPLE_TIME = 100e-6
"""Seconds one sample must last at least: `perf_counter_ns` reads in tens of nanoseconds
at worst, so a 100 us sample carries under 0.1% of timer error, while a call that short
still costs little to repeat."""

MAX_REPEATS = 1 << 16
"""The most calls one sample loops over. No Python call takes under 1.5 ns, so with the
default sample time the cap binds only for a clock that does not move (a fake one, or a call
the timer cannot see), and it keeps that loop finite."""

PREEMPTED_RETAKES = 2
"""How many times a sample the scheduler preempted is taken again (`CpuClient.time`)."""

RETAKE_BELOW_NS = 20_000_000
"""A preempted sample is taken again only under this (20 ms): beside other jobs nearly every
longer one is preempted at least once, and its retakes would only cost time."""


SETTLE_BYTES = 31 * MIB
"""An array just under glibc's largest dynamic mmap threshold (32 MiB on 64 bits): freeing
it raises the threshold to its size, and the heap's trim threshold to twice that."""


def settle_allocator() -> None:
    """Put glibc's malloc where a long-lived process has it, in every process that times.

    glibc serves a block over its mmap threshold (128 KiB in a new process) with pages of
    its own, returned on free, and raises the threshold to the size of each such block
    freed, up to 32 MiB. A kernel of large temporaries is then timed by the process's
    history: a softmax of 1 MiB faulted ~470 pages in again at every call and ran in 950
    us in a new process, 170 us in one that had freed a large array (a pytest process,
    after a fixture or another candidate: not always). The gate's re-measurement in a
    fresh process read an unchanged kernel 4-6x slower than its baseline, and baselines
    moved 4x between updates. An array allocated and freed at once, never touched, costs
    one mmap and munmap and leaves every process at the threshold's ceiling."""
    np.empty(SETTLE_BYTES, dtype=np.uint8)


def _input_shape(inputs: tuple[Any, ...]) -> tuple[Hashable, ...]:
    """What decides how long a call takes, as far as a timer can know beforehand: the type,
    shape and dtype of array inputs, the value of scalar ones, the length of containers."""
    return tuple(_shape_of(value) for value in inputs)


def _shape_of(value: Any) -> Hashable:
    shape = getattr(value, "shape", None)
    if isinstance(shape, tuple):
        return (type(value).__qualname__, shape, str(getattr(value, "dtype", "")))
    if value is None or isinstance(value, (bool, int, float, complex, str)):
        return value
    if hasattr(value, "__len__"):
        return (type(value).__qualname__, len(value))
    return type(value).__qualname__


class _RepeatCounts:
    """Calibrated repeat counts by candidate, then by input shape.

    A candidate is keyed by itself, weakly where it can be, so a garbage-collected candidate
    neither stays alive nor lends its count to a new one that reuses its id. NumPy functions
    and ufuncs cannot be weakly referenced, but they live as long as their module, so holding
    them costs nothing. A callable that cannot be a key at all is calibrated on every call.
    """

    def __init__(self) -> None:
        self._weak: weakref.WeakKeyDictionary[Callable[..., object], dict[Hashable, int]] = (
            weakref.WeakKeyDictionary()
        )
        self._strong: dict[Callable[..., object], dict[Hashable, int]] = {}

    def of(self, fn: Callable[..., object]) -> dict[Hashable, int] | None:
        try:
            return self._weak.setdefault(fn, {})
        except TypeError:  # cannot be weakly referenced
            pass
        try:
            return self._strong.setdefault(fn, {})
        except TypeError:  # unhashable
            return None


class CpuClient:
    """Runs candidates in this process and times them with `timer` (integer nanoseconds).

    A call far shorter than the timer can resolve well is repeated in a loop and the loop's
    time divided by the count. The count is calibrated once per candidate and input shape
    and then kept, so every sample of a tuning is the same loop and samples compare; it is
    not kept per candidate alone, because the same candidate timed on a thousand-times larger
    key would otherwise loop a thousand times too long. A count of one that a slow first call
    set (a JIT compile) is calibrated again once a call reads far under the sample time.
    """

    def __init__(
        self,
        timer: Callable[[], int] = _time.perf_counter_ns,
        *,
        min_sample_time: float = DEFAULT_MIN_SAMPLE_TIME,
        peaks_cache_dir: str | os.PathLike[str] | None = None,
        probe: Callable[[], Peaks] = probe_cpu_peaks,
        retake_preempted: bool | None = None,
    ) -> None:
        _check_settings(timer, min_sample_time, peaks_cache_dir, probe)
        self._timer = timer
        self._min_sample_ns = min_sample_time * NS_PER_S
        self._peaks_cache_dir = peaks_cache_dir
        self._probe = probe
        self._device_id = device_id_from(cpu_model_name(), cpu_threads())
        self._repeats = _RepeatCounts()
        self._launch_overhead: float | None = None
        # With the real clock only: a test's scripted timer must be read as scripted.
        if retake_preempted is None:
            retake_preempted = timer is _time.perf_counter_ns
        self._retake_preempted = retake_preempted and _THREAD_USAGE is not None

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickled as its settings (a pool sends a client to its workers): the shared client
        loads as the loading process's own (`cpu()`), which calibrates its own repeat
        counts, as their weak keys, the candidates, do not pickle."""
        min_sample_time = self._min_sample_ns / NS_PER_S
        return (_cpu_again, (self._timer, min_sample_time, self._peaks_cache_dir, self._probe))

    def __repr__(self) -> str:
        return f"CpuClient({self._device_id!r})"

    @property
    def device_id(self) -> str:
        return self._device_id

    @property
    def launch_overhead(self) -> float:
        """The median time of an empty Python call through `time`, measured once: what any
        candidate pays before it does work, so roofline limits of tiny problems stay reachable."""
        if self._launch_overhead is None:
            self._launch_overhead = statistics.median(self.time(_nothing, ()) for _ in range(5))
        return self._launch_overhead

    def fingerprint(self) -> dict[str, Any]:
        return {
            "model": cpu_model_name(),
            "isa": isa_level(platform.machine(), cpu_flags()),
            "threads": cpu_threads(),
            "python": platform.python_version(),
            "numpy": np.__version__,
            "blas": blas_info(),
            "thread_env": thread_env(),
            "platform": platform.platform(),
        }

    def sync(self) -> None:
        """Nothing to wait for: NumPy returns when its work is done."""

    def placed_sampler(
        self, fn: Callable[..., object], inputs: tuple[Any, ...], count: int = PLACEMENTS
    ) -> Callable[[], float]:
        """A sampler of `fn` over `count` placements of its NumPy array inputs, for the
        gate's measurement (`cpu_placements`)."""
        return placed_sampler(self.time, fn, inputs, count)

    def time(self, fn: Callable[..., object], inputs: tuple[Any, ...]) -> float:
        """Seconds one call of `fn(*inputs)` takes: one call, or a calibrated loop's average."""
        counts = self._repeats.of(fn)
        shape = _input_shape(inputs)
        repeats = counts.get(shape) if counts is not None else None
        if repeats is None:
            if tracing():
                # The timed loops run untraced (`_loop`): one call here, untimed, is what
                # coverage.py sees of a candidate that is only ever timed (a losing one of
                # a `LocalTuner` tuned inside a test), as it saw every timed call before.
                fn(*inputs)
            repeats, elapsed_ns = self._calibrate(fn, inputs)
            if counts is not None:
                counts[shape] = repeats
        else:
            elapsed_ns = self._sample(fn, inputs, repeats)
            if repeats == 1 and elapsed_ns < self._min_sample_ns / 2:
                # A count of one from a first call far slower than the calls now: a JIT
                # compile (Numba's `@njit`, at each new dtype), a lazy import. Timed one
                # call at a time, a 1 us call read 20% slower, by the timer's own cost,
                # than its rivals' loops, and lost to one it beat.
                repeats, elapsed_ns = self._calibrate(fn, inputs)
                if counts is not None:
                    counts[shape] = repeats
        return elapsed_ns / (repeats * NS_PER_S)

    def _sample(self, fn: Callable[..., object], inputs: tuple[Any, ...], repeats: int) -> int:
        """One sample's loop, taken again (at most `PREEMPTED_RETAKES` times, the least
        kept) where the scheduler switched this thread out during it. Beside other jobs a
        time slice lost to another process lands inside about one short sample in 15 (an
        88 us NumPy sum read 1.4 ms, beside three spinning processes on the 2-core VM):
        the median of many samples stays, but a tuning decides on three or four, and two
        such samples of the fastest candidate left a 3x slower one the winner."""
        if not self._retake_preempted:
            return self._loop(fn, inputs, repeats)
        least: int | None = None
        for _ in range(PREEMPTED_RETAKES + 1):
            switches = _involuntary_switches()
            elapsed = self._loop(fn, inputs, repeats)
            if _involuntary_switches() == switches or elapsed >= RETAKE_BELOW_NS:
                return elapsed if least is None else min(least, elapsed)
            least = elapsed if least is None else min(least, elapsed)
        assert least is not None
        return least

    def peaks(self) -> Peaks:
        return load_or_probe(self._device_id, self._probe, self._peaks_cache_dir)

    def probe_peaks_again(self) -> Peaks:
        """The peaks probed once more, each rate the larger read (`peaks.probe_again`), for
        a kernel that measured above its roof; peaks read from a file stay as they are."""
        if self._peaks_cache_dir is not None:
            return self.peaks()
        return probe_again(self._device_id, self._probe)

    def _loop(self, fn: Callable[..., object], inputs: tuple[Any, ...], repeats: int) -> int:
        # A tracer (`pytest --cov`, a debugger) slows Python code several times: put aside.
        return untraced(_timed_loop, self._timer, fn, inputs, repeats)

    def _calibrate(self, fn: Callable[..., object], inputs: tuple[Any, ...]) -> tuple[int, int]:
        """The repeat count that makes a sample last `min_sample_time`, and that sample.

        Each try is a real sample, so the last one is returned rather than wasted. The next
        count aims at the target from the last measurement and at least doubles, so a first
        call slowed by a cold cache costs one more try, not a loop of creeping estimates.
        """
        repeats = 1
        while True:
            elapsed = self._loop(fn, inputs, repeats)
            if elapsed >= self._min_sample_ns or repeats >= MAX_REPEATS:
                return repeats, elapsed
            aimed = math.ceil(repeats * self._min_sample_ns / elapsed) if elapsed > 0 else 0
            repeats = min(MAX_REPEATS, max(2 * repeats, aimed))


try:
    import resource

    _THREAD_USAGE: int | None = resource.RUSAGE_THREAD
except (ImportError, AttributeError):  # Windows, macOS: no per-thread usage to read
    _THREAD_USAGE = None


def _check_settings(
    timer: object, min_sample_time: object, peaks_cache_dir: object, probe: object
) -> None:
    """Refuse a setting the client would only fail on when it first times a candidate:
    `cpu(0)`, written as `cuda(0)` is, took 0 for the timer, and every candidate of the
    first tuning failed with "'int' object is not callable"."""
    __tracebackhide__ = True
    if not callable(timer):
        raise TypeError(
            f"cpu: timer must be a clock returning integer nanoseconds (time.perf_counter_ns),"
            f" got {type(timer).__name__} {timer!r}; the CPU client takes no device number"
        )
    seconds = real_number(min_sample_time)
    if seconds is None or not (seconds > 0 and math.isfinite(seconds)):
        raise ValueError(
            f"min_sample_time must be a positive number of seconds, got {min_sample_time!r}"
        )
    if peaks_cache_dir is not None and not isinstance(peaks_cache_dir, (str, os.PathLike)):
        raise TypeError(f"cpu: peaks_cache_dir must be a folder's path, got {peaks_cache_dir!r}")
    if not callable(probe):
        raise TypeError(
            f"cpu: probe must be a function measuring the peaks, got {type(probe).__name__}"
        )


def _involuntary_switches() -> int:
    """How many times the scheduler has switched this thread out against its will (Linux's
    `getrusage(RUSAGE_THREAD).ru_nivcsw`): a time slice given to another runnable thread.
    A thread waiting on a lock or on I/O switches of its own will, which does not count."""
    assert _THREAD_USAGE is not None
    return int(resource.getrusage(_THREAD_USAGE).ru_nivcsw)


def _timed_loop(
    timer: Callable[[], int], fn: Callable[..., object], inputs: tuple[Any, ...], repeats: int
) -> int:
    start = timer()
    output = fn(*inputs)
    wait = _result_waiter(output)
    if wait is None:
        del output
        for _ in range(repeats - 1):
            fn(*inputs)
    else:
        wait(output)
        del output
        for _ in range(repeats - 1):
            wait(fn(*inputs))
    return timer() - start


_HOST_OUTPUTS = (np.ndarray, np.generic, int, float, complex, type(None))
"""Outputs whose values exist when the call returns: nothing to wait for."""


def _result_waiter(output: object) -> Callable[[object], object] | None:
    """What waits for a call's output to be computed, where it holds values that come
    later: JAX's arrays (`_jax_waiter`), Dask's lazy collections (`_dask_waiter`), futures
    (`_futures_waiter`), or a GPU's arrays (host code that hands its work to CuPy or torch,
    which device `auto` tunes on the CPU where its inputs are host arrays), whose call
    returns once the work is enqueued. None for an output of values, as a NumPy
    candidate's: waited for all the same, its 1 us call read 2.3 us."""
    if isinstance(output, _HOST_OUTPUTS):
        return None
    jax = sys.modules.get("jax")
    wait = None if jax is None else _jax_waiter(jax, output)
    return wait or _dask_waiter(output) or _futures_waiter(output) or _gpu_waiter(output)


_LOOKED_AT = 64
"""How many items of a tuple, list or dict output `_gpu_waiter` looks at: a list of a
million floats is no GPU array, and is looked at once per timed loop."""


def _dask_waiter(output: object) -> Callable[[object], object] | None:
    """`dask.compute` where `output` (or an item of it) is a Dask collection: its
    operations build a graph and return at once, so a candidate returning a lazy array was
    timed by the making of its graph (3.3 ms, against 19 ms of NumPy for the same work, and
    it won). Computed, as its check computes it; what `.compute()` inside a candidate
    costs, a caller pays too. Only where the program imported Dask."""
    dask = sys.modules.get("dask")
    is_collection = getattr(dask, "is_dask_collection", None)
    compute = getattr(dask, "compute", None)
    if not callable(is_collection) or not callable(compute):
        return None
    values = nested_values(output, depth=1, most=_LOOKED_AT)
    return cast(Callable[[object], object], compute) if any(map(is_collection, values)) else None


def _futures_waiter(output: object) -> Callable[[object], object] | None:
    """The results of the futures `output` is or holds (`concurrent.futures`, an
    executor's `submit`): a candidate returning them was timed by the submit (10 us, against
    19 ms of the same work called directly, and it won). A result that raises fails the
    candidate, as its call raising would."""
    values = nested_values(output, depth=1, most=_LOOKED_AT)
    if not any(isinstance(value, Future) for value in values):
        return None
    return _results


def _results(output: object) -> object:
    return [
        value.result()
        for value in nested_values(output, depth=1, most=_LOOKED_AT)
        if isinstance(value, Future)
    ]


def _gpu_waiter(output: object) -> Callable[[object], object] | None:
    """A wait for the GPU where `output` (or an item of it, a tuple, list or dict of
    arrays) is a CuPy array or a CUDA tensor: the device's work is done when it returns.
    Looked for inside the timed loop (after its first call), so only where the program
    imported CuPy or torch: a NumPy candidate's tuple output costs it nothing more."""
    if "cupy" not in sys.modules and "torch" not in sys.modules:
        return None
    for value in nested_values(output, depth=1, most=_LOOKED_AT):
        if is_cupy_array(value):
            device = sys.modules["cupy"].cuda.Device
            return lambda _: device().synchronize()
        if is_tensor(value) and value.device.type == "cuda":
            return lambda _: sys.modules["torch"].cuda.synchronize()
    return None


def _jax_waiter(jax: Any, output: object) -> Callable[[object], object] | None:
    """`jax.block_until_ready` where `output` holds a JAX array: JAX returns its arrays
    before their values exist, so a 1500x1500 matmul read 21 ms for 68 ms of work, and a
    candidate's time was its dispatch. It takes any output (a tuple or dict of arrays)
    and waits for the JAX arrays among it."""
    wait = getattr(jax, "block_until_ready", None)
    if not callable(wait):
        return None
    array = getattr(jax, "Array", None)
    leaves = getattr(getattr(jax, "tree_util", None), "tree_leaves", None)
    if not isinstance(array, type) or not callable(leaves):
        return cast(Callable[[object], object], wait)
    # As `block_until_ready` does, a leaf with a `block_until_ready` of its own is waited for.
    waits = any(
        isinstance(leaf, array) or hasattr(leaf, "block_until_ready") for leaf in leaves(output)
    )
    return cast(Callable[[object], object], wait) if waits else None


def _nothing() -> None:
    """An empty call: what timing a candidate costs when the candidate does nothing."""


def _cpu_again(
    timer: Callable[[], int],
    min_sample_time: float,
    peaks_cache_dir: str | os.PathLike[str] | None,
    probe: Callable[[], Peaks],
) -> CpuClient:
    """A pickled client loaded (`CpuClient.__reduce__`)."""
    return cpu(timer, min_sample_time=min_sample_time, peaks_cache_dir=peaks_cache_dir, probe=probe)


@functools.cache
def _shared_client() -> CpuClient:
    return CpuClient()


def cpu(
    timer: Callable[[], int] = _time.perf_counter_ns,
    *,
    min_sample_time: float = DEFAULT_MIN_SAMPLE_TIME,
    peaks_cache_dir: str | os.PathLike[str] | None = None,
    probe: Callable[[], Peaks] = probe_cpu_peaks,
) -> CpuClient:
    """The CPU client. With the defaults it is one client per process, so every tuner in it
    shares the calibrated repeat counts and the measured launch overhead; any other
    argument (a fake timer in a test) gets a client of its own."""
    if (
        timer is _time.perf_counter_ns
        and min_sample_time == DEFAULT_MIN_SAMPLE_TIME
        and peaks_cache_dir is None
        and probe is probe_cpu_peaks
    ):
        return _shared_client()
    return CpuClient(
        timer, min_sample_time=min_sample_time, peaks_cache_dir=peaks_cache_dir, probe=probe
    )
