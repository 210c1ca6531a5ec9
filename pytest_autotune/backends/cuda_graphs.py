"""The graph replays of a CUDA client: each candidate's call captured once per inputs into a
CUDA graph with a memory pool of its own, and replayed for every sample. Steps 3, 5 and 6 of
`backends.cuda`'s docstring say why, and what cannot be captured.
"""

from __future__ import annotations

import contextlib
import gc
import threading
import traceback
import weakref
from collections import OrderedDict
from collections.abc import Callable, Collection, Iterator
from dataclasses import dataclass
from typing import Any, cast

from pytest_autotune.backends.cuda_device import is_out_of_memory
from pytest_autotune.time_limit import Watchdog
from pytest_autotune.tune.clone import device_copy
from pytest_autotune.tune.nested import nested_values
from pytest_autotune.tune.torch_tensors import is_tensor

REPLAY_CACHE_SIZE = 16
"""Captured calls a client keeps (the most recently timed): more than the candidates of one
tuning step, which are sampled in turn, so a step captures each once; few enough that the
memory their pools hold stays bounded."""

PLACEMENTS = 8
"""Placements of the winner's inputs and graph pool the gate's measurement samples in turn."""

PLACEMENT_PERIOD = 2048
"""The placements put every array a call allocates, and the copies of its inputs, at each
multiple of `PLACEMENT_STEP` modulo this many bytes (`Placement`). On an H200 a 1 KiB
output that every block updates with global atomics (a 256-bin histogram) ran 4% slower
at an address that is a multiple of 1 KiB than at one 512 bytes past it: the L2 spreads
memory over its slices in lines of about that size, so the bins were served by one slice
or by two. CuPy's pool hands out blocks at multiples of 512 bytes, so which one a call got
depended on the allocations alive before it: the process's history (issue 9, item 4)."""

PLACEMENT_STEP = 256
"""What the placements' offsets step by: the alignment `cudaMalloc` promises, which kernels
and libraries may rely on (vector loads, cuBLAS)."""


CAPTURE_MODE_THREAD_LOCAL = 1
"""cudaStreamCaptureModeThreadLocal: a call that would synchronize or allocate with
cudaMalloc during the capture fails it (and is timed on the stream) rather than running
outside the graph; other threads are left alone."""


def inputs_key(
    inputs: tuple[Any, ...], is_array: Callable[[object], bool]
) -> tuple[Any, ...] | None:
    """What a graph captured from a call on `inputs` holds of them: each array's address,
    shape, strides and dtype, each other input's value, and the arrays a tuple, list or dict
    of arrays holds (`arrays_within`), with its other values. A call on inputs with the same
    key enqueues the same work, so it may replay that graph. None where an input is neither
    an array nor hashable (a host array, a list of numbers), or is a PyTorch tensor: such a
    call is not captured. A tensor hashes by identity, so its call was captured, and torch's
    kernels go to torch's stream, not the capture's: every capture failed, after a warm-up
    call."""
    key: list[Any] = []
    for value in inputs:
        part = _value_key(value, is_array, 0)
        if part is None:
            return None
        key.append(part)
    return tuple(key)


NESTED_DEPTH = 3
"""How deep a container of arrays is looked into (`arrays_within`)."""

NESTED_LENGTH = 64
"""The most values a container of arrays may hold to be looked into: a key is made for every
sample, and a long list of numbers would cost each sample a key as long."""


def arrays_within(value: object, is_array: Callable[[object], bool], depth: int = 0) -> bool:
    """Whether `value` is a tuple, list or dict (of at most `NESTED_LENGTH` values, nested
    `NESTED_DEPTH` deep) that holds an array: a candidate's weights given as one argument,
    `layernorm(x, (gamma, beta))`, whose call was never captured (a tuple of CuPy arrays is
    unhashable) and whose arrays were neither copied to the gate's placements nor checked
    to be on the client's device."""
    if type(value) not in (tuple, list, dict) or depth >= NESTED_DEPTH:
        return False
    items = cast("Collection[Any]", value.values() if isinstance(value, dict) else value)
    if len(items) > NESTED_LENGTH:
        return False
    return any(is_array(v) or arrays_within(v, is_array, depth + 1) for v in items)


def nested_map(value: Any, f: Callable[[Any], Any], is_array: Callable[[object], bool]) -> Any:
    """`value` with `f` applied to each array it is or holds (`arrays_within`), its
    containers rebuilt of the same types; any other value as it is."""
    if is_array(value):
        return f(value)
    if not arrays_within(value, is_array):
        return value
    if isinstance(value, dict):
        return {k: nested_map(v, f, is_array) for k, v in value.items()}
    return type(value)(nested_map(v, f, is_array) for v in value)


def nested_arrays(value: Any, is_array: Callable[[object], bool]) -> Iterator[Any]:
    """The arrays `value` is or holds, as deep as `inputs_key` looks (`nested_values`)."""
    return (v for v in nested_values(value, NESTED_DEPTH, NESTED_LENGTH) if is_array(v))


def _value_key(value: Any, is_array: Callable[[object], bool], depth: int) -> Any:
    """One input's part of `inputs_key`, None where it has none."""
    if is_array(value):
        return ("array", value.data.ptr, value.shape, value.strides, value.dtype.str)
    if is_tensor(value):
        return None
    # A tensor in a tuple hashes by identity, as one given alone does (`inputs_key`).
    if arrays_within(value, lambda v: is_array(v) or is_tensor(v), depth):
        pairs = value.items() if isinstance(value, dict) else enumerate(value)
        parts = []
        for name, item in pairs:
            part = _value_key(item, is_array, depth + 1)
            if part is None:
                return None
            parts.append((name, part))
        return (type(value), tuple(parts))
    try:
        hash(value)
    except TypeError:
        return None
    return (type(value), value)


@dataclass(frozen=True, slots=True)
class Placement:
    """Where a captured call's arrays lie: each allocation of the call, made while it is
    captured (`GraphReplays.of`) or copied for it (`copies`), starts `offset` bytes past a
    multiple of `PLACEMENT_PERIOD`. The gate samples the placements of `placements`, so the
    time it measures mixes every offset in equal parts, whatever the process did before."""

    offset: int

    def allocator(self, malloc: Callable[[int], Any]) -> Callable[[int], Any]:
        """`malloc`, its blocks moved to this placement's offset (a block larger by up to
        two periods holds the moved one, and keeps it alive)."""

        def placed(size: int) -> Any:
            if size == 0:
                return malloc(size)
            block = malloc(size + 2 * PLACEMENT_PERIOD)
            start = -block.ptr % PLACEMENT_PERIOD + self.offset
            return block + start

        return placed

    def copies(self, cp: Any, inputs: tuple[Any, ...]) -> tuple[Any, ...]:
        """`inputs` with each CuPy array, and each one a tuple, list or dict of them holds
        (`nested_map`), copied to this placement's offset (from CuPy's pool: the copies live
        as long as whoever holds them); one array given twice (`op(x, x)`) is copied once
        and given twice, as the caller's call would alias it."""
        copied: dict[int, Any] = {}

        def copy(v: Any) -> Any:
            if id(v) not in copied:
                # A memcpy where it can (`clone.device_copy`: no copy kernel to compile on a
                # fresh host), else in its own layout: a C-ordered copy of a Fortran-ordered
                # input timed a layout the caller never passes (as `clone.clone_value`).
                made = device_copy(cp, v)
                copied[id(v)] = v.copy(order="K") if made is None else made
            return copied[id(v)]

        with cp.cuda.using_allocator(self.allocator(cp.get_default_memory_pool().malloc)):
            return tuple(nested_map(v, copy, lambda a: isinstance(a, cp.ndarray)) for v in inputs)


def placements(count: int) -> list[Placement]:
    """`count` placements whose offsets spread evenly over the period, in steps of
    `PLACEMENT_STEP`: all eight offsets for `PLACEMENTS`, fewer where fewer fit."""
    steps = PLACEMENT_PERIOD // PLACEMENT_STEP
    return [Placement(i * steps // count * PLACEMENT_STEP) for i in range(count)]


WarmUpTimer = Callable[[Callable[..., object], tuple[Any, ...]], tuple[float | None, float]]
"""`time(fn, inputs) -> (seconds, enqueue)`: one call on the current stream, timed as a
sample, and the host seconds of the call; seconds None where the timing holds host time."""


@dataclass(frozen=True, slots=True)
class WarmUp:
    """The call a capture makes first, timed (`WarmUpTimer`): device seconds, None where they
    may hold the host's (the hold gave up, or there is none), and host enqueue seconds."""

    seconds: float | None
    enqueue: float


@dataclass(frozen=True, slots=True)
class Replay:
    """One call of a candidate captured in a CUDA graph, with the memory its replays use."""

    inputs_key: tuple[Any, ...]
    graph: Any
    pool: Any
    """The memory pool the captured call allocated from; no other array gets its blocks."""
    outputs: object
    """What the captured call returned: its arrays stay allocated while the graph lives."""
    enqueue: float
    """Host seconds the warm-up call before the capture took to enqueue (cold, so rather
    more than a caller's loop pays): enough to tell a device-bound call on its first sample."""

    def launch(self) -> None:
        self.graph.launch()


Graphs = OrderedDict[tuple[Callable[..., object], tuple[Any, ...]], Replay]
"""A client's captured calls, by call and inputs key (`GraphReplays`)."""


def _empty(pools: list[Any]) -> None:
    """Give the blocks of pools whose graphs are gone back to the device (`GraphReplays._drop`
    says why); in the current device's context, where a CuPy pool frees."""
    for pool in pools:
        pool.free_all_blocks()


def release_graphs(device: Any, graphs: Graphs) -> None:
    """Let every graph go and give its pool's blocks back on `device`: for a client that is
    collected, whose dropped pools would keep them (`GraphReplays._drop`)."""
    pools = [replay.pool for replay in graphs.values()]
    graphs.clear()
    with device:
        _empty(pools)


class Candidates:
    """A set of candidates, weakly held where they can be (see cpu._RepeatCounts)."""

    def __init__(self) -> None:
        self._weak: weakref.WeakSet[Callable[..., object]] = weakref.WeakSet()
        self._strong: set[Callable[..., object]] = set()

    def add(self, fn: Callable[..., object]) -> None:
        try:
            self._weak.add(fn)
        except TypeError:
            self._strong.add(fn)

    def __contains__(self, fn: Callable[..., object]) -> bool:
        try:
            return fn in self._weak or fn in self._strong
        except TypeError:  # unhashable: never added
            return False


class GraphReplays:
    """The captured calls of one client, the most recently timed kept (`REPLAY_CACHE_SIZE`),
    and the candidates that cannot be captured. `stream` is the client's capture stream,
    None without graph replay (every call then goes through the stream); `time_warm_up`
    times the call before a capture (`WarmUpTimer`)."""

    def __init__(self, cp: Any, stream: Any, time_warm_up: WarmUpTimer) -> None:
        self._cp = cp
        self.stream = stream
        self._beside_threads: Any = None
        """A non-blocking capture stream, made when first needed (`_capture_stream`)."""
        self._time_warm_up = time_warm_up
        self._replays: Graphs = OrderedDict()
        self._uncapturable = Candidates()

    def __len__(self) -> int:
        """The captured calls kept."""
        return len(self._replays)

    @property
    def graphs(self) -> Graphs:
        """The captured calls kept, by call and inputs key, the least recently timed first."""
        return self._replays

    def warmed_uncaptured(self, fn: Callable[..., object]) -> bool:
        """Whether `fn` was called once (before a capture that failed) and is timed through
        the stream: its one-time host work, compilation included, is behind it."""
        return fn in self._uncapturable

    def of(
        self,
        fn: Callable[..., object],
        inputs: tuple[Any, ...],
        placement: Placement | None = None,
    ) -> tuple[Replay | None, WarmUp | None]:
        """The graph of one call of `fn(*inputs)`, captured on first use, None where the call
        is timed through the stream (see `backends.cuda`'s docstring); and the warm-up call
        a capture tried now made, None where none was tried. A candidate keeps the graphs of
        its `PLACEMENTS` most recent inputs; an older one and its memory go before a new
        capture. With a `placement`, the call allocates at its offset (a graph of its own)."""
        if self.stream is None or fn in self._uncapturable:
            return None, None
        key = inputs_key(inputs, lambda value: isinstance(value, self._cp.ndarray))
        if key is None:
            return None, None
        if placement is not None:
            key = (*key, placement)
        try:
            replay = self._replays.pop((fn, key), None)
        except TypeError:  # unhashable: nowhere to keep its graph
            return None, None
        warm_up = None
        if replay is None:
            own = [k for k in self._replays if k[0] is fn]
            self._drop(own[: max(0, len(own) - PLACEMENTS + 1)])
            replay, warm_up = self.capture(fn, inputs, key, placement)
            if replay is None:
                self._uncapturable.add(fn)
                return None, warm_up
        self._replays[fn, key] = replay
        self._drop(list(self._replays)[: max(0, len(self._replays) - REPLAY_CACHE_SIZE)])
        return replay, warm_up

    def _drop(self, keys: list[tuple[Callable[..., object], tuple[Any, ...]]]) -> None:
        """Let these graphs go, and give what their pools hold back to the device: a CuPy
        pool that is let go keeps its blocks for the rest of the process (on an H200, the
        10 GiB of a dropped pool, and the 56 GiB output of a dropped graph, stayed allocated),
        so each is emptied once its graph and the outputs it kept are gone."""
        _empty([self._replays.pop(key).pool for key in keys])

    def capture(
        self,
        fn: Callable[..., object],
        inputs: tuple[Any, ...],
        key: tuple[Any, ...],
        placement: Placement | None = None,
    ) -> tuple[Replay | None, WarmUp]:
        """One warm-up call, timed, then one call captured, both on the capture stream and
        in a pool of their own (at `placement`'s offset). An error of the warm-up is the
        candidate's and is raised; one of the capture means the call cannot be captured,
        and gives no replay."""
        cp = self._cp
        stream = self._capture_stream()
        pool = cp.cuda.MemoryPool()
        malloc = placement.allocator(pool.malloc) if placement else pool.malloc
        # The inputs may still be being written on the caller's stream.
        stream.wait_event(cp.cuda.get_current_stream().record())
        with cp.cuda.using_allocator(malloc), stream:
            try:
                # The client gives the memory of an out-of-memory failure back
                # (`free_after_out_of_memory`); this pool's blocks are left to this frame.
                warm_up = WarmUp(*self._time_warm_up(fn, inputs))
            except BaseException as error:
                if is_out_of_memory(cp, error):
                    traceback.clear_frames(error.__traceback__)
                pool.free_all_blocks()  # else they stay allocated (`_drop`)
                raise
            try:
                stream.begin_capture(CAPTURE_MODE_THREAD_LOCAL)
                try:
                    outputs = fn(*inputs)
                finally:
                    graph = stream.end_capture()
            except Exception:
                outputs = None  # what the call returned goes back to the pool, emptied here
                pool.free_all_blocks()
                return None, warm_up
        return Replay(key, graph, pool, outputs, warm_up.enqueue), warm_up

    def _capture_stream(self) -> Any:
        """The stream a call is captured on: the client's own, a blocking stream, while the
        program runs no other thread, so that work a call sends to the legacy stream fails
        its capture rather than running outside the graph; a non-blocking one of the
        device's beside other threads. While a blocking stream captures, CUDA fails any use
        of the legacy stream, from any thread: a program's other thread doing plain CuPy
        work (`float(y.sum())`) raised cudaErrorStreamCaptureImplicit while a LocalTuner
        tuned a key, 5 times in 492 calls, and the capture failed with it (H100, the
        forty-fourth session's GPU probe). Beside threads, a candidate's own work on the
        legacy stream runs outside its graph, untimed: a program's threads must not fail
        for a tuning. The time limit's watchdog (`time_limit.Watchdog`), which runs beside
        every candidate call under --autotune, is not counted: counted, it put every
        capture of a tuning run on the non-blocking stream."""
        assert self.stream is not None
        if not _other_threads():
            return self.stream
        if self._beside_threads is None:  # in the client's device context, as its own
            self._beside_threads = self._cp.cuda.Stream(non_blocking=True)
        return self._beside_threads

    @contextlib.contextmanager
    def let_go(self) -> Iterator[None]:
        """Around calls timed once and never again (the peak probes): the graphs captured
        inside are dropped at the end, with what they hold. A graph's key holds its call,
        and with it the call's arguments: the probes' buffers of a GiB or more each stayed
        allocated until 16 later captures pushed them out (2 GiB on an H200)."""
        before = set(self._replays)
        try:
            yield
        finally:
            self._drop([k for k in self._replays if k not in before])

    def free_after_out_of_memory(self, error: BaseException, device: Any) -> None:
        """Give the device memory a failed candidate held back to the next one: its frames
        (kept alive by the traceback) hold its arrays, the pool caches their blocks, and the
        captured graphs' pools hold what their calls allocated. The `device` is synchronized
        first: the call's work may still run on the capture stream or the caller's.

        Garbage is collected before the pool is emptied: arrays in reference cycles (a
        closure that refers to itself, an exception kept with its frames by an earlier
        candidate) keep their blocks in use until the collector runs, and a pool frees only
        blocks no array holds. Its cost (milliseconds) is paid only after a failure."""
        traceback.clear_frames(error.__traceback__)
        device.synchronize()
        self._drop(list(self._replays))
        gc.collect()
        self._cp.get_default_memory_pool().free_all_blocks()


def _other_threads() -> bool:
    """Whether a thread other than this one and the time limit's watchdog runs."""
    me = threading.current_thread()
    return any(t is not me and not isinstance(t, Watchdog) for t in threading.enumerate())
