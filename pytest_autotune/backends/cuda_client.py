"""The CUDA client (`CudaClient`): one sample of a call taken in the steps that
`pytest_autotune.backends.cuda`'s docstring tells, with what the instrument reads taken off
(`cuda_fixed_cost.FixedCosts`) and the gate's placements (`CudaClient.placed_sampler`); and
its probe of the device's peaks (`probe_cuda_peaks`)."""

from __future__ import annotations

import functools
import os
import statistics
import threading
import time
import weakref
from collections.abc import Callable, Sequence
from typing import Any

from pytest_autotune.backends.cuda_collector import collector_paused
from pytest_autotune.backends.cuda_device import (
    CudaUnavailableError,
    cuda_version,
    device_id_from,
    device_uuid,
    import_cupy,
    is_out_of_memory,
    visible_devices_hint,
)
from pytest_autotune.backends.cuda_fixed_cost import FixedCosts, launch_empty
from pytest_autotune.backends.cuda_graphs import (
    PLACEMENTS,
    Candidates,
    GraphReplays,
    Placement,
    WarmUp,
    nested_arrays,
    placements,
    release_graphs,
)
from pytest_autotune.backends.cuda_peaks import MIN_PROBE_BUFFER, ProbeTarget, probe_peaks
from pytest_autotune.backends.cuda_sampler import (
    HOLD_TIMEOUT_S,
    RETRY_HOLD_S,
    WARM_UP_HOLD_S,
    EventSampler,
)
from pytest_autotune.backends.cuda_timing import (
    ENQUEUE_MARGIN,
    MIN_SAMPLE_S,
    CallCost,
    CallerTiming,
)
from pytest_autotune.backends.peaks import Peaks, load_or_probe
from pytest_autotune.backends.placements import over_placements
from pytest_autotune.tune.shared_memory import overlapping
from pytest_autotune.tune.torch_tensors import is_tensor, tensor_device, torch_stream

PLACEMENT_MEMORY_SHARE = 8
"""The copies of the inputs for the placements take at most this share of device memory
(1/8): a call on inputs near the memory's size is measured on fewer placements, or one."""

ROUND_OF_PLACEMENTS_S = 20e-3
"""A sample of the gate's measurement (`placed_sampler`) is one call at each placement, their
mean, where such a round takes at most this long; a longer call's samples visit one
placement each, in turn. An output's placement moves a call by a few microseconds (4 us
of a 100 us histogram on an H200): within one long call's noise, but as a sample's spread
it widens a short call's interval by more than the change the gate must catch."""

LONG_CALL_S = 2e-3
"""A call whose first timing reads at least this long is sampled no more in the tuner's first
pass (`long_call`, `CudaClient._long_first_call`): against 2 ms, what a warm-up absorbs and
what a graph replay saves are below the GPU's noise; and it is judged hopeless by
`HOPELESS_FACTOR`."""

HOPELESS_FACTOR = 4.0
"""The hopeless cut's margin for a call of `LONG_CALL_S` or more on a GPU, where a first
sample is warm (`warm_first_sample`); a shorter call keeps the default of 10, since its
figure may be what a caller's eager loop paid, timed on the host, whose stalls are a CPU's
noise. On a CPU preemptions inflated one sample up to 77x; a long call's figures on a GPU
are device times that repeat within 1-2%, and its first one follows a warm call of the
candidate (a capture's warm-up), or is that call itself, held until all of it was
enqueued. A candidate cut at 4 times the leader could only have won if its first sample
read it over 4 times slower than it is: 300% of inflation against 1-2% of noise. One
spared between 1.5 and 4 times the leader is still eliminated after `min_samples`
samples (`speed_factor`). At 10, matmul's naive and tiled
candidates (6-9x the leader, 25 and 17 ms a call) took three samples each plus warm-ups;
`benchmarks/gpu_family_costs.py` prints the largest first-sample inflation of every family."""


class CudaClient:
    """Runs candidates on one CUDA device through CuPy and times them with CUDA events on
    the current stream (see `pytest_autotune.backends.cuda` for how a sample is taken)."""

    def __init__(
        self,
        device: int = 0,
        *,
        cold_l2: bool = True,
        hold_stream: bool = True,
        graph_replay: bool = True,
        peaks_cache_dir: str | os.PathLike[str] | None = None,
        probe: Callable[[], Peaks] | None = None,
        timing: str = "caller",
        host_timer: Callable[[], int] | None = None,
    ) -> None:
        self._caller = CallerTiming(timing, host_timer or time.perf_counter_ns)
        cp = import_cupy()
        try:
            count = cp.cuda.runtime.getDeviceCount()
        except cp.cuda.runtime.CUDARuntimeError as error:
            hint = visible_devices_hint()
            raise CudaUnavailableError(f"no CUDA device found: {error}{hint}") from error
        if not 0 <= device < count:
            found = f"{count} device{'s' if count != 1 else ''}"
            hint = visible_devices_hint()
            raise CudaUnavailableError(f"no CUDA device {device}: CuPy finds {found}{hint}")
        self._cp = cp
        self.device = device
        self._device = cp.cuda.Device(device)
        # Reentrant: a candidate that times something itself gets a wrong sample, not a hang.
        self._lock = threading.RLock()
        self._peaks_cache_dir = peaks_cache_dir
        self._probe = probe if probe is not None else functools.partial(probe_cuda_peaks, self)
        self._launch_overhead: float | None = None
        self._synchronizing = Candidates()
        self.graph_replay = graph_replay
        props = cp.cuda.runtime.getDeviceProperties(device)
        self._name = props["name"].decode(errors="replace")
        self._uuid = device_uuid(props.get("uuid"), device)
        self._total_memory = int(props["totalGlobalMem"])
        with self._device:
            self._attributes: dict[str, int] = dict(self._device.attributes)
            self._sampler = EventSampler(
                cp,
                self._attributes,
                cold_l2=cold_l2,
                hold_stream=hold_stream,
                host_timer=self._caller.host_timer,
            )
            # Blocking, unlike the usual capture stream: work a call sends to the legacy
            # stream during the capture then fails it rather than running outside the graph.
            self._replays = GraphReplays(
                cp, cp.cuda.Stream() if graph_replay else None, self._time_warm_up
            )
        self._fixed_costs = FixedCosts(self._sampler, self._replays)
        self._launch_nothing = functools.partial(launch_empty, self._sampler.nothing_kernel, 1)
        self._caller.reference = self._launch_nothing
        # A pool that is let go keeps its blocks (`GraphReplays._drop`): the graphs of a
        # client that is collected (one made with other arguments than `cuda()`'s own, or
        # a test's) give theirs back then, and not at exit, when CUDA may be gone.
        weakref.finalize(self, release_graphs, self._device, self._replays.graphs).atexit = False
        self._device_id = device_id_from(self._name)

    @property
    def timing(self) -> str:
        return self._caller.timing

    @property
    def l2_bytes(self) -> int:
        return self._sampler.l2_bytes

    @property
    def cold_l2(self) -> bool:
        """Whether samples start with a cold L2 (asked for, and the device has an L2)."""
        return self._sampler.cold_l2

    @property
    def hold_stream(self) -> bool:
        """Whether samples are taken behind a held stream (asked for, and supported)."""
        return self._sampler.hold_stream

    @property
    def device_id(self) -> str:
        return self._device_id

    @property
    def sm_count(self) -> int:
        return int(self._attributes.get("MultiProcessorCount", 1))

    @property
    def launch_overhead(self) -> float:
        """The median time of an empty kernel through `time`, measured once: the device-side
        cost of one launch as `time` counts it (a graph node, where calls are replayed),
        which every candidate pays at least once."""
        if self._launch_overhead is None:
            self._launch_overhead = statistics.median(
                self._time(self._launch_nothing, (), caller=False) for _ in range(7)
            )
        return self._launch_overhead

    @property
    def context(self) -> Any:
        """The device, entered where the tuner copies inputs and makes calls of its own
        (`tune.client.client_context`): CuPy copies an array to the current device, and a
        candidate timed here on copies of another device's would read them over the
        interconnect, or be refused (`_on_device`)."""
        return self._device

    def fingerprint(self) -> dict[str, Any]:
        runtime = self._cp.cuda.runtime
        attributes = self._attributes
        return {
            "name": self._name,
            "uuid": self._uuid,
            "compute_capability": self._device.compute_capability,
            "driver": cuda_version(runtime.driverGetVersion()),
            "runtime": cuda_version(runtime.runtimeGetVersion()),
            "cupy": self._cp.__version__,
            "sm_count": self.sm_count,
            "sm_clock_khz": attributes.get("ClockRate"),
            "memory_clock_khz": attributes.get("MemoryClockRate"),
            "memory_bus_width": attributes.get("GlobalMemoryBusWidth"),
            "l2_bytes": self.l2_bytes,
            "memory_bytes": self._total_memory,
            "cold_l2": self.cold_l2,
            "hold_stream": self.hold_stream,
            "graph_replay": self.graph_replay,
            "timing": self.timing,
        }

    @property
    def warm_first_sample(self) -> bool:
        """Whether a first timing of a call is already warm (read by the tuner, whose warm-up
        then judges a hopeless candidate): a capture calls the candidate once, untimed,
        before the graph is timed, and a held stream keeps the host's work (compilation,
        allocation) out of the device time."""
        return self.graph_replay or self.hold_stream

    hopeless_factor = HOPELESS_FACTOR
    """The hopeless cut's margin for a call of `long_call` or more (read where the first
    sample is warm; a `hopeless_factor` in the config wins): see `HOPELESS_FACTOR`."""

    @property
    def long_call(self) -> float:
        """Seconds from which a call's first timing is kept as its first sample and judged by
        `hopeless_factor` (read by the tuner where its first sample is warm): `LONG_CALL_S`."""
        return LONG_CALL_S

    def sync(self) -> None:
        """Wait for the device, under the client's lock: a device-wide synchronize while
        another thread's call of this client is captured in a CUDA graph is invalid
        (CUDA's graph capture rules), and the tuner syncs before each tuning and after each
        candidate's checked call, which threads of a program's LocalTuners do at once."""
        with self._lock:
            self._device.synchronize()

    def out_of_memory(self, error: BaseException) -> bool:
        """Whether `error` is this device running out of memory, in any of the kinds CuPy
        and its libraries raise, or the host's (`MemoryError`, as the CPU client reads it:
        a group's NumPy input is copied for each candidate too); read by the tuner
        (`tune.client.out_of_memory`)."""
        return isinstance(error, MemoryError) or is_out_of_memory(self._cp, error)

    def release_memory(self) -> None:
        """Give CuPy's pool's cached blocks back to the device (called by the tuner after it
        dropped copies of inputs, `tune.client.release_memory`): a library that allocates
        outside the pool (cuBLAS's workspace) finds none of what the pool keeps."""
        with self._lock, self._device:
            self._device.synchronize()
            self._cp.get_default_memory_pool().free_all_blocks()

    def peaks(self) -> Peaks:
        return load_or_probe(self._device_id, self._probe, self._peaks_cache_dir)

    def time(self, fn: Callable[..., object], inputs: tuple[Any, ...]) -> float:
        """Seconds of device work one call of `fn(*inputs)` enqueues on the current stream.

        One sample at a time per client: the events, the flush buffer and the flag are
        shared, and two samples interleaved on one GPU would time each other anyway.

        Raises `ValueError` where an input is a CuPy array of another device (`_on_device`).
        """
        self._on_device(inputs)
        return self._time(fn, inputs, caller=self.timing == "caller")

    def _on_device(self, inputs: tuple[Any, ...]) -> None:
        """Refuse CuPy array inputs of another device than the client's: the call would run
        on this device and read them over the interconnect (CuPy enables peer access where
        it can), and its time would be neither device's; where it cannot, CuPy's error does
        not say that the client's device is not the inputs' (`cuda(device=1)` on arrays
        made on the current device, 0)."""
        for i, value in enumerate(inputs):
            for array in nested_arrays(value, lambda v: isinstance(v, self._cp.ndarray)):
                if array.device.id != self.device:
                    raise ValueError(
                        f"input {i} {'is' if array is value else 'holds'} a CuPy array on"
                        f" device {array.device.id}, and this client times on device"
                        f" {self.device}: make the inputs there (with"
                        f" cupy.cuda.Device({self.device}): ...) or time them with"
                        f" cuda(device={array.device.id})"
                    )
            if is_tensor(value) and tensor_device(value) not in (None, self.device):
                # Its kernels run on its own GPU, which this client's events do not time.
                raise ValueError(
                    f"input {i} is a PyTorch tensor on cuda:{tensor_device(value)}, and this"
                    f" client times on device {self.device}: make the inputs there"
                    f" (.to('cuda:{self.device}')) or time them with"
                    f" cuda(device={tensor_device(value)})"
                )

    def _time(
        self,
        fn: Callable[..., object],
        inputs: tuple[Any, ...],
        caller: bool,
        placement: Placement | None = None,
    ) -> float:
        """`time`, scored by what the caller pays (`caller`) or by device time alone (the
        probes and the launch overhead, whose host cost is the instrument's); at
        `placement`, where one is given (`placed_sampler`).

        A call that runs out of memory while graphs of earlier calls are kept is timed once
        more, after they are let go (step 6): what they held (their calls' allocations and
        outputs, up to `REPLAY_CACHE_SIZE` of them, from earlier groups too) may be what it
        needed, and it would otherwise fail for the memory of the calls timed before it."""
        with self._lock, self._device, torch_stream(self._cp, self.device), collector_paused():
            kept = len(self._replays)
            try:
                return self._sample_or_free(fn, inputs, caller, placement)
            except BaseException as error:
                if not kept or not is_out_of_memory(self._cp, error):
                    raise
            return self._sample_or_free(fn, inputs, caller, placement)

    def _sample_or_free(
        self,
        fn: Callable[..., object],
        inputs: tuple[Any, ...],
        caller: bool,
        placement: Placement | None,
    ) -> float:
        """One sample (`_sample`); where the call ran out of device memory, in its warm-up,
        its sample or its eager calls, the memory it held back is given back first
        (`GraphReplays.free_after_out_of_memory`)."""
        try:
            return self._sample(fn, inputs, caller, placement)
        except BaseException as error:
            if is_out_of_memory(self._cp, error):
                self._replays.free_after_out_of_memory(error, self._device)
            raise

    def _sample(
        self,
        fn: Callable[..., object],
        inputs: tuple[Any, ...],
        caller: bool,
        placement: Placement | None,
    ) -> float:
        """One sample of `_time`, in the device's context and under the client's lock."""
        replay, warm_up = self._replays.of(fn, inputs, placement)
        first = self._long_first_call(warm_up) if warm_up is not None else None
        if warm_up is not None and first is not None:
            # Device-bound: what a caller's loop pays per call is its device time.
            return self._caller.score(fn, first, warm_up.enqueue, caller)
        call, args = (replay.launch, ()) if replay is not None else (fn, inputs)
        hold = self.hold_stream and fn not in self._synchronizing
        seconds = None
        if hold:
            # A first call may outlast the hold by its compilation alone, so it gets a
            # second try; one called already, before a capture that failed, has nothing
            # left to compile, and a second timeout would only cost HOLD_TIMEOUT_S again
            # (a synchronizing candidate such as cupy.bincount: 0.4 s a process). Where
            # that warm-up's own hold gave up too, the call most likely synchronizes,
            # and it is held no longer than `RETRY_HOLD_S`.
            tries = 1 if self._replays.warmed_uncaptured(fn) else 2
            gave_up = warm_up is not None and warm_up.seconds is None
            timeout = RETRY_HOLD_S if gave_up and replay is None else HOLD_TIMEOUT_S
            for _ in range(tries):
                seconds = self._sampler.sample(call, args, hold=True, timeout=timeout)
                if not self._sampler.timed_out():
                    break
            else:
                self._synchronizing.add(fn)
                hold, seconds = False, None
        if seconds is None:
            seconds = self._sampler.sample(call, args, hold=False)
        # What a sample reads beyond the call (the event pair, about 1.3 us on an H200,
        # and a graph's own launch) is the instrument's, not the candidate's.
        # Read before the fixed cost, whose measuring samples other calls.
        enqueued = self._sampler.enqueued
        device = max(seconds - self._fixed_costs.taken(hold, replay is not None), MIN_SAMPLE_S)
        enqueue: float | None = None
        if replay is None:
            # Timed through the stream: its one held call's enqueue time is known, but cold
            # (after the sample's synchronize), so where it may bind, a caller's loop says
            # what a call pays: a Triton kernel on torch tensors (never captured) read 55-72
            # us to enqueue on an H100, and a caller's loop paid 27 us a call. A call that
            # synchronizes (its hold ran out) enqueues its device work: nothing to loop.
            enqueue = enqueued
            if caller and hold:
                stream = self._cp.cuda.get_current_stream()
                enqueue = self._caller.caller_costs(fn, inputs, device, enqueued, stream)
        elif caller:
            stream = self._cp.cuda.get_current_stream()
            enqueue = self._caller.caller_costs(fn, inputs, device, replay.enqueue, stream)
        return self._caller.score(fn, device, enqueue, caller)

    def _time_warm_up(
        self, fn: Callable[..., object], inputs: tuple[Any, ...]
    ) -> tuple[float | None, float]:
        """The capture's warm-up call, timed on the capture stream behind a short hold
        (`WARM_UP_HOLD_S`), as a `WarmUpTimer`."""
        seconds = self._sampler.sample(fn, inputs, hold=self.hold_stream, timeout=WARM_UP_HOLD_S)
        held = self.hold_stream and not self._sampler.timed_out()
        return seconds if held else None, self._sampler.enqueued

    def _long_first_call(self, warm_up: WarmUp) -> float | None:
        """The device seconds of a capture's warm-up call where they stand as the call's
        first sample, None where they do not. They do for a call held until it was all
        enqueued, of at least `LONG_CALL_S`, and device-bound (over `ENQUEUE_MARGIN` times
        its enqueue time, so that a caller's loop would pay its device time): a graph replay
        would save it less than the GPU's noise (0.75 us per launch), and what a warm-up
        absorbs (a compilation, first allocations) is host work, which the hold kept out.
        A slow candidate then costs one call for its warm-up and its first sample, not three
        (its warm-up, a timed replay the tuner discards, and the sample): 1.4 s for the
        0.47 s candidate of the sum family, against do_bench's 4.1 s for the whole family."""
        if warm_up.seconds is None:
            return None
        device = warm_up.seconds - self._fixed_costs.taken(True, False)
        if device >= LONG_CALL_S and device > ENQUEUE_MARGIN * warm_up.enqueue:
            return device
        return None

    def call_costs(self, fn: Callable[..., object]) -> CallCost | None:
        """The device and host enqueue seconds of `fn`'s latest sample, None when it was
        never timed (or cannot be remembered: an unhashable or unreferenceable callable)."""
        return self._caller.call_costs(fn)

    def sample_statistic(self, fn: Callable[..., object]) -> str:
        """The rule that scores `fn`'s samples, read by the tuner once a batch is over:
        "median" for a host-bound call's caller-timed samples (`CallerTiming`)."""
        return self._caller.sample_statistic(fn)

    def preferred(self, scored: Sequence[tuple[Callable[..., object], float]]) -> int:
        """Which of a batch's live candidates wins, read by the tuner once a batch is over:
        the lowest score, or a tied one that a faster host would speed up
        (`CallerTiming.preferred`), which may time a loop of empty launches on this device."""
        with self._lock, self._device:
            return self._caller.preferred(scored)

    def instrument(self) -> dict[str, int]:
        """What this client takes off its samples as the instrument's own, by mode, as
        measured in this process so far (`FixedCosts.said`). A record keeps it, so that a
        time read too fast or too slow by a constant can be traced."""
        with self._lock:  # a sample on another thread measures them together
            return self._fixed_costs.said()

    def placed_sampler(
        self, fn: Callable[..., object], inputs: tuple[Any, ...], count: int = PLACEMENTS
    ) -> Callable[[], float]:
        """A sampler of `fn` over `count` placements (`cuda_graphs.Placement`), a round of them
        per sample or one in turn (`ROUND_OF_PLACEMENTS_S`): each placement a copy of the
        call's CuPy array inputs and a graph and pool of its own, every array at the
        placement's offset. Inputs too large to copy `count` times (over
        `PLACEMENT_MEMORY_SHARE` of the memory) are copied fewer times, and the placements
        beyond share the caller's; the call's own allocations are placed all the same.
        Each placement is warmed up (and captured) here."""
        cp = self._cp
        self._on_device(inputs)
        # Those a tuple, list or dict holds too, which `Placement.copies` copies as well,
        # each once (`op(x, x)` is copied once and given twice).
        found = (a for v in inputs for a in nested_arrays(v, lambda a: isinstance(a, cp.ndarray)))
        arrays = list({id(a): a for a in found}.values())
        size = sum(int(a.nbytes) for a in arrays)
        fits = self._total_memory // PLACEMENT_MEMORY_SHARE // size if size else count
        if overlapping(arrays) is not None:
            # Views of one allocation that overlap (`op(cache, cache[:, :2])`): copied apart,
            # the call no longer reads what it writes, as `cpu_placements.placeable` says.
            fits = 0
        with self._device:
            placed = [
                (placement, placement.copies(cp, inputs) if i < fits else inputs)
                for i, placement in enumerate(placements(count))
            ]
        caller = self.timing == "caller"
        timings = [functools.partial(self._time, fn, a, caller, p) for p, a in placed]
        return over_placements(timings, ROUND_OF_PLACEMENTS_S)

    def probe_buffer_bytes(self) -> int:
        """Bytes of each memory-probe buffer: 8 times the L2 and at least 1 GiB, so the
        probes stream from HBM; at most an eighth of the memory, for two buffers and room."""
        size = max(8 * self.l2_bytes, MIN_PROBE_BUFFER)
        size = min(size, self._total_memory // 8)
        return size // 64 * 64


def probe_cuda_peaks(client: CudaClient) -> Peaks:
    """Measure the device's memory bandwidth and arithmetic throughput
    (`cuda_peaks.probe_peaks`, which says how). The probes' graphs go when they are done:
    each holds its probe's buffers (`GraphReplays.let_go`)."""
    # Under the client's lock (reentrant: each probe's `_time` takes it again): another
    # thread timing on the same client would change the graphs `let_go` drops.
    with client._lock, client._device, client._replays.let_go():
        return probe_peaks(
            ProbeTarget(
                cp=client._cp,
                context=client._device,
                sm_count=client.sm_count,
                l2_bytes=client.l2_bytes,
                buffer_bytes=client.probe_buffer_bytes(),
                seconds=lambda fn: client._time(fn, (), caller=False),
            )
        )
