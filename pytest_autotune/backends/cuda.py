"""The CUDA client: times candidates with CUDA events through CuPy, probes the GPU's peaks,
and names the hardware class for the cache folder.

CuPy is optional (the `cuda12` / `cuda13` extras), so it is imported when a client is made,
never when this module is: `import pytest_autotune` works on a machine without it.

How one sample is taken, and why:

1. **Cold L2.** Unless `cold_l2=False`, a buffer of twice the L2 size is read before the
   sample, outside the timed region. A tuner calls each candidate on the same inputs many
   times; without the flush every call after the first finds them in L2, and a problem
   that fits there would be timed at L2 speed, which no call from a program that touches
   other data in between gets. Read, not written (nvbench writes it): a written buffer
   leaves the L2 full of dirty lines, whose write-back would then land inside the next
   timed region; read lines are clean and leave for free, and the candidate's own dirty
   lines are written back during the flush. Twice the size, not once: Hopper's L2 is two
   partitions that may both hold a line, and its replacement policy is not documented,
   so one pass of L2 size does not reliably evict everything.
2. **A held stream.** Before the start event a one-thread kernel spins on a flag in
   host-mapped memory; the candidate's launches queue up behind it, and the flag is set
   once they are all enqueued. The timed region then holds the candidate's device work
   back to back, not the gaps in which Python issues the next launch (about 7 us each,
   more than many kernels take), which is what nvbench's blocking kernel does and what a
   CUDA graph replay measures. The kernel gives up after `HOLD_TIMEOUT_S`, so a candidate
   that synchronizes inside (`.item()`, `cupy.nonzero`, a host copy) cannot deadlock the
   process: its sample is taken again, and a candidate that outlasts the hold twice is
   timed with plain events from then on (the first time may be a compilation).
3. **A graph replay of the call.** Each kernel launched through a stream costs the device
   about 0.75 us more than the same kernel as a node of a CUDA graph. On an H200, empty
   kernels back to back took 1.43 us each through a stream of any kind (legacy,
   per-thread, blocking, non-blocking) against 0.70 us replayed from a graph, and a held
   sample of a 50 us busy kernel followed by 0, 1 or 2 empty kernels read 0.7, 1.5 and
   2.3 us over the graph replay of the same call. The excess is per launch, not per
   sample: keeping the GPU busy before the hold, or between the hold and the start event,
   changed nothing, and no hold timed out. Through the stream a two-launch sum of 2^26
   floats (62 us) read 3-4% over its graph replay, where a one-launch call of 185 us read
   0.4% over. So a call is captured once into a CUDA graph (per candidate and inputs) and
   a sample times one replay of it. What a replay reads beyond its nodes (the event pair
   and the graph's own launch, which a replay of many calls pays once) is the
   instrument's and is taken away, measured with graphs of empty kernels
   (`_replay_fixed_cost`). Each launch of the call still costs what a graph node costs,
   so a candidate of more launches stays slower by them.

   The capture follows one warm-up call, both on a stream of the client's, with the
   call's allocations in a memory pool of its own that lives as long as the graph: the
   replays write where the captured call's arrays were, what it returned included, and
   from CuPy's pool those blocks would go to other arrays. A call that cannot be captured
   is timed through the stream as in 2, from then on: cuBLAS under CuPy, a call that
   synchronizes, work sent to the legacy stream (the capture stream is a blocking one, so
   such work fails the capture instead of running outside the graph), inputs other than
   CuPy arrays and hashable values (a graph keeps the addresses and scalars it was
   captured with, and other ones are captured again). Such a call pays the stream's cost
   per launch, which matters only against short, captured calls of several launches. A
   graph replays the call as captured: a candidate whose host code would enqueue other
   work on a later call with the same inputs is timed as its second call enqueued it.
4. **What the caller pays.** A replay hides what Python costs to enqueue the call
   (allocation and about 7 us per launch), which a caller calling it eagerly pays: a row
   layernorm of 2048x1024 fp32 replayed in 5.5 us cost 17.3 us per call back to back, and
   a seven-kernel CuPy expression 61 us against 211 us. So with `timing="caller"` (the
   default) a sample also times, after its device sample, `EAGER_CALLS` eager calls of
   the candidate back to back on the host (per call, synchronized at the end: what a
   caller's loop pays), and a sample reads the larger of the two: a call cannot finish
   faster than its launches are issued. Where the device time is over `ENQUEUE_MARGIN`
   times the last known enqueue time (on the first sample, the capture's warm-up call's)
   the host cannot bind the call and the loop is left out. `timing="device"` reads the
   device time alone. Both figures of the latest sample are kept per candidate
   (`call_costs`) for the report.
5. **Several placements for the gate.** Where a call's buffers land changes some kernels'
   time by itself. On an H200 a 256-bin shared-memory histogram of 2^26 bytes read
   43.0-43.3 us when timed first in a fresh process and 38.3 us when a layernorm over
   256 MiB had been timed before it, on the same input, the fixed cost moving 0.2-0.4 us:
   the history of the process decided where the captured call's pool (its output, whose
   256 bins every block updates with global atomics) was placed, and so which of two
   speeds it ran at. A baseline recorded by one test selection then failed or flattered
   another. Tuning ranks candidates on one placement each; the gate's precise measurement
   samples the winner over `PLACEMENTS` placements in turn (`placed_sampler`): fresh
   copies of its array inputs, all alive at once so that none reuses another's memory,
   each with a graph and pool captured for it. The mixture is what any process's
   history draws from, so a median over it no longer depends on which tests ran; what
   the placements still differ by widens the measurement's error, which the gate carries.
6. **Out of memory.** A candidate that runs out of device memory fails alone: the frames
   of its traceback are cleared (they hold its arrays), CuPy's pool and the captured
   graphs' pools are emptied so the next candidate finds the memory free, and the error
   is raised for the tuner to record.
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import importlib
import itertools
import statistics
import threading
import time
import traceback
import weakref
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_autotune.backends.device_id import device_id
from pytest_autotune.backends.peaks import MemoryLevel, Peaks, load_or_probe

EXTRAS_HINT = (
    "install CuPy through the extra matching your CUDA toolkit: "
    "pip install 'pytest-autotune[cuda12]' (CUDA 12) or 'pytest-autotune[cuda13]' (CUDA 13)"
)

HOLD_TIMEOUT_S = 0.2
"""How long the holding kernel waits for the host. Python enqueues a launch in about 7 us,
so 0.2 s covers a candidate of thousands of launches; a candidate that synchronizes inside
its call costs this twice, once per process, before it is timed without the hold."""

REPLAY_CACHE_SIZE = 16
"""Captured calls a client keeps (the most recently timed): more than the candidates of one
tuning step, which are sampled in turn, so a step captures each once; few enough that the
memory their pools hold stays bounded."""

ENQUEUE_MARGIN = 4.0
"""A candidate whose device time exceeds its host enqueue time this many times over is
device-bound: its later samples skip the eager call that measures the enqueue time."""

EAGER_CALLS = 24
"""The eager calls whose per-call cost a caller-timed sample of a short call reads: the
difference between a loop of `EAGER_LEAD + EAGER_CALLS` calls and one of `EAGER_LEAD`
(`_eager_loop`). The host's own jitter is a microsecond or two a call, and averages down
with the difference's length: on a 16-core H200 host 8 calls ranked a 2048x1024
layernorm's candidates, 9% apart, right in 87 of 100 tunings."""

EAGER_LEAD = 8
"""The calls of the shorter of `_eager_loop`'s two loops: what the cold start after a
synchronize costs, the same in both, cancels in their difference."""

TIMINGS = ("caller", "device")
"""`timing="caller"` scores a sample by the larger of device and host enqueue time,
`"device"` by the device time alone (see the module docstring)."""

PLACEMENTS = 8
"""Placements of the winner's inputs and graph pool the gate's measurement samples in turn."""

PLACEMENT_MEMORY_SHARE = 8
"""The copies of the inputs for the placements take at most this share of device memory
(1/8): a call on inputs near the memory's size is measured on fewer placements, or one."""

REPLAY_CALIBRATION_NODES = (1, 32)
"""Graphs of this many empty kernels measure a replay's fixed cost (`_replay_fixed_cost`)."""

CAPTURE_MODE_THREAD_LOCAL = 1
"""cudaStreamCaptureModeThreadLocal: a call that would synchronize or allocate with
cudaMalloc during the capture fails it (and is timed on the stream) rather than running
outside the graph; other threads are left alone."""

L2_FLUSH_FACTOR = 2
"""The cold-L2 buffer is this many times the L2 size (see the module docstring)."""
FLUSH_BLOCK = 256

GIB = 1 << 30
MIN_PROBE_BUFFER = GIB
"""Memory probes stream buffers of at least 1 GiB (and 8 times the L2): far past any cache,
yet a fraction of a millisecond each on a current GPU."""
PROBE_REPS = 5
FMA_BLOCK = 256
L2_PROBE_FRACTION = 0.25
"""The L2 probe's working set: a quarter of the L2, which Hopper's two partitions hold
whichever of them a line lands in."""
L2_PASSES = 9
FMA_UNROLL = 16
"""Each thread runs 8 independent chains of FMA_UNROLL multiply-adds per loop iteration: a
chain's latency (4 cycles on Hopper) is hidden by the other chains and the other warps."""
FMA_CHAINS = 8
MATMUL_N = 8192
"""Tensor-core probes multiply n x n matrices: large enough to reach the library's best
kernels, about a millisecond each in fp16 on a Hopper GPU."""

_HOLD_SOURCE = r"""
extern "C" __global__ void autotune_hold(volatile int* flag, unsigned long long timeout_ns) {
    unsigned long long start, now;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
    while (flag[0] == 0) {
        asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now));
        if (now - start > timeout_ns) {
            flag[1] = 1;
            return;
        }
    }
}

extern "C" __global__ void autotune_nothing() {}

// Reads a zeroed buffer of n4 float4 so its lines replace whatever the L2 held; the store
// never happens, but the compiler cannot know, so every load stays.
extern "C" __global__ void autotune_flush(float4* buffer, long long n4) {
    long long stride = (long long)gridDim.x * blockDim.x;
    float acc = 0.0f;
    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n4; i += stride) {
        float4 v = buffer[i];
        acc += (v.x + v.y) + (v.z + v.w);
    }
    if (acc != 0.0f) buffer[0].x = acc;
}
"""

_PROBE_SOURCE = r"""
// Grid-stride loops unrolled four times: four independent 16-byte loads per thread are in
// flight at once, which with a full SM covers the latency of HBM.
extern "C" __global__ void probe_copy(const float4* __restrict__ src, float4* __restrict__ dst,
                                      long long n4) {
    long long stride = (long long)gridDim.x * blockDim.x;
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    for (; i + 3 * stride < n4; i += 4 * stride) {
        float4 a = src[i], b = src[i + stride], c = src[i + 2 * stride], d = src[i + 3 * stride];
        dst[i] = a;
        dst[i + stride] = b;
        dst[i + 2 * stride] = c;
        dst[i + 3 * stride] = d;
    }
    for (; i < n4; i += stride) dst[i] = src[i];
}

// y += x, as saxpy-like kernels move memory: two streams read, one written back. On an
// H200 this pattern moved 3% more bytes per second than a copy on some machines, so a copy
// roof put saxpy over 100% of it.
extern "C" __global__ void probe_add(const float4* __restrict__ src, float4* __restrict__ dst,
                                     long long n4) {
    long long stride = (long long)gridDim.x * blockDim.x;
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    for (; i + 3 * stride < n4; i += 4 * stride) {
        float4 a = src[i], b = src[i + stride], c = src[i + 2 * stride], d = src[i + 3 * stride];
        float4 e = dst[i], f = dst[i + stride], g = dst[i + 2 * stride], h = dst[i + 3 * stride];
        dst[i] = make_float4(e.x + a.x, e.y + a.y, e.z + a.z, e.w + a.w);
        dst[i + stride] = make_float4(f.x + b.x, f.y + b.y, f.z + b.z, f.w + b.w);
        dst[i + 2 * stride] = make_float4(g.x + c.x, g.y + c.y, g.z + c.z, g.w + c.w);
        dst[i + 3 * stride] = make_float4(h.x + d.x, h.y + d.y, h.z + d.z, h.w + d.w);
    }
    for (; i < n4; i += stride) {
        float4 a = src[i], e = dst[i];
        dst[i] = make_float4(e.x + a.x, e.y + a.y, e.z + a.z, e.w + a.w);
    }
}

extern "C" __global__ void probe_read(const float4* __restrict__ src, float* __restrict__ out,
                                      long long n4) {
    long long stride = (long long)gridDim.x * blockDim.x;
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    float acc = 0.0f;
    for (; i + 3 * stride < n4; i += 4 * stride) {
        float4 a = src[i], b = src[i + stride], c = src[i + 2 * stride], d = src[i + 3 * stride];
        acc += ((a.x + a.y) + (a.z + a.w)) + ((b.x + b.y) + (b.z + b.w))
             + ((c.x + c.y) + (c.z + c.w)) + ((d.x + d.y) + (d.z + d.w));
    }
    for (; i < n4; i += stride) {
        float4 a = src[i];
        acc += (a.x + a.y) + (a.z + a.w);
    }
    // Never true for the probe's data (non-negative), but the compiler cannot know that,
    // so every load stays.
    if (acc == -1.0f) out[0] = acc;
}

extern "C" __global__ void probe_write(float4* __restrict__ dst, long long n4, float value) {
    long long stride = (long long)gridDim.x * blockDim.x;
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    float4 v = make_float4(value, value, value, value);
    for (; i + 3 * stride < n4; i += 4 * stride) {
        dst[i] = v;
        dst[i + stride] = v;
        dst[i + 2 * stride] = v;
        dst[i + 3 * stride] = v;
    }
    for (; i < n4; i += stride) dst[i] = v;
}

__device__ __forceinline__ float fma_of(float a, float b, float c) { return fmaf(a, b, c); }
__device__ __forceinline__ double fma_of(double a, double b, double c) { return fma(a, b, c); }

// Eight independent chains of multiply-adds, unrolled 16 times per iteration.
template <typename T>
__device__ __forceinline__ void fma_loop(T* out, T b, T c, int iters) {
    T a0 = (T)threadIdx.x * (T)1e-3;
    T a1 = a0 + (T)1, a2 = a0 + (T)2, a3 = a0 + (T)3, a4 = a0 + (T)4;
    T a5 = a0 + (T)5, a6 = a0 + (T)6, a7 = a0 + (T)7;
    for (int it = 0; it < iters; ++it) {
#pragma unroll
        for (int k = 0; k < 16; ++k) {
            a0 = fma_of(a0, b, c); a1 = fma_of(a1, b, c); a2 = fma_of(a2, b, c);
            a3 = fma_of(a3, b, c); a4 = fma_of(a4, b, c); a5 = fma_of(a5, b, c);
            a6 = fma_of(a6, b, c); a7 = fma_of(a7, b, c);
        }
    }
    T s = ((a0 + a1) + (a2 + a3)) + ((a4 + a5) + (a6 + a7));
    if (s == (T)-1) out[0] = s;
}

extern "C" __global__ void probe_fma32(float* out, float b, float c, int iters) {
    fma_loop<float>(out, b, c, iters);
}

extern "C" __global__ void probe_fma64(double* out, double b, double c, int iters) {
    fma_loop<double>(out, b, c, iters);
}
"""


MIN_SAMPLE_S = 1e-9
"""The least a sample reads once the empty sample is taken away: a duration must stay
positive, and a call that enqueues nothing is not free for the host either."""


def _enqueue_nothing() -> None:
    """A candidate with no device work: what its sample reads is the instrument's cost."""


def inputs_key(
    inputs: tuple[Any, ...], is_array: Callable[[object], bool]
) -> tuple[Any, ...] | None:
    """What a graph captured from a call on `inputs` holds of them: each array's address,
    shape, strides and dtype, each other input's value. A call on inputs with the same key
    enqueues the same work, so it may replay that graph. None where an input is neither an
    array nor hashable (a host array, a list): such a call is not captured."""
    key: list[Any] = []
    for value in inputs:
        if is_array(value):
            key.append(("array", value.data.ptr, value.shape, value.strides, value.dtype.str))
            continue
        try:
            hash(value)
        except TypeError:
            return None
        key.append((type(value), value))
    return tuple(key)


@dataclass(frozen=True, slots=True)
class _Replay:
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


@dataclass(frozen=True, slots=True)
class CallCost:
    """What one sample of a candidate cost: seconds of device work, and seconds the host
    took to enqueue one eager call of it (None where not measured: `timing="device"`)."""

    device: float
    enqueue: float | None


class CudaUnavailableError(RuntimeError):
    """`cuda()` cannot give a client here: CuPy is missing or broken, or no CUDA device is
    visible. The message says which, and what to install."""


def import_cupy() -> Any:
    """CuPy, or one `CudaUnavailableError` that names the extra to install."""
    try:
        return importlib.import_module("cupy")
    except ImportError as error:
        raise CudaUnavailableError(f"CuPy cannot be imported ({error}); {EXTRAS_HINT}") from error


def device_count() -> int:
    """CUDA devices CuPy sees; 0 where CuPy is missing or finds no driver or device."""
    try:
        return int(import_cupy().cuda.runtime.getDeviceCount())
    except Exception:
        return 0


def device_id_from(name: str) -> str:
    """The cache folder name of a GPU, e.g. `cuda-nvidia-h200` for "NVIDIA H200"."""
    return device_id("cuda", name)


def _version(number: int) -> str:
    """CUDA's integer versions (13000, 12040) as "13.0", "12.4"."""
    return f"{number // 1000}.{number % 1000 // 10}"


def _uuid(raw: object) -> str | None:
    """The device UUID as nvidia-smi prints it (GPU-xxxxxxxx-xxxx-...), None where unknown."""
    if isinstance(raw, (bytes, bytearray)) and len(raw) == 16:
        h = bytes(raw).hex()
        return f"GPU-{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"
    return None


def _is_out_of_memory(cp: Any, error: BaseException) -> bool:
    if isinstance(error, cp.cuda.memory.OutOfMemoryError):
        return True
    # cudaErrorMemoryAllocation, raised by a library that allocates outside the pool.
    return isinstance(error, cp.cuda.runtime.CUDARuntimeError) and error.status == 2


class _Candidates:
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


class CudaClient:
    """Runs candidates on one CUDA device through CuPy and times them with CUDA events on
    the current stream (see the module docstring for how a sample is taken)."""

    def __init__(
        self,
        device: int = 0,
        *,
        cold_l2: bool = True,
        hold_stream: bool = True,
        graph_replay: bool = True,
        peaks_cache_dir: Path | None = None,
        probe: Callable[[], Peaks] | None = None,
        timing: str = "caller",
        host_timer: Callable[[], int] | None = None,
    ) -> None:
        self._init_caller_timing(timing, host_timer)
        cp = import_cupy()
        try:
            count = cp.cuda.runtime.getDeviceCount()
        except cp.cuda.runtime.CUDARuntimeError as error:
            raise CudaUnavailableError(f"no CUDA device found: {error}") from error
        if not 0 <= device < count:
            found = f"{count} device{'s' if count != 1 else ''}"
            raise CudaUnavailableError(f"no CUDA device {device}: CuPy finds {found}")
        self._cp = cp
        self.device = device
        self._device = cp.cuda.Device(device)
        # Reentrant: a candidate that times something itself gets a wrong sample, not a hang.
        self._lock = threading.RLock()
        self._peaks_cache_dir = peaks_cache_dir
        self._probe = probe if probe is not None else functools.partial(probe_cuda_peaks, self)
        self._launch_overhead: float | None = None
        self._empty: dict[tuple[bool, bool], float] = {}
        self._synchronizing = _Candidates()
        self.graph_replay = graph_replay
        self._replays: OrderedDict[tuple[Callable[..., object], tuple[Any, ...]], _Replay] = (
            OrderedDict()
        )
        self._uncapturable = _Candidates()
        props = cp.cuda.runtime.getDeviceProperties(device)
        self._name = props["name"].decode(errors="replace")
        self._uuid = _uuid(props.get("uuid"))
        self._total_memory = int(props["totalGlobalMem"])
        with self._device:
            self._attributes: dict[str, int] = dict(self._device.attributes)
            self._start = cp.cuda.Event()
            self._stop = cp.cuda.Event()
            module = cp.RawModule(code=_HOLD_SOURCE)
            self._hold_kernel = module.get_function("autotune_hold")
            self._nothing_kernel = module.get_function("autotune_nothing")
            self._flush_kernel = module.get_function("autotune_flush")
            # Blocking, unlike the usual capture stream: work a call sends to the legacy
            # stream during the capture then fails it rather than running outside the graph.
            self._capture_stream = cp.cuda.Stream() if graph_replay else None
            self.l2_bytes = int(self._attributes.get("L2CacheSize", 0))
            self.cold_l2 = cold_l2 and self.l2_bytes > 0
            # Outside CuPy's pool: emptying the pool after an out-of-memory failure must
            # not take the flush buffer with it, nor may the buffer count as pool memory.
            flush_bytes = L2_FLUSH_FACTOR * self.l2_bytes // 16 * 16
            self._flush = cp.cuda.Memory(flush_bytes) if self.cold_l2 else None
            if self._flush is not None:
                cp.cuda.runtime.memset(self._flush.ptr, 0, flush_bytes)
            self._flush_args = (
                cp.uint64(self._flush.ptr if self._flush else 0),
                cp.int64(flush_bytes // 16),
            )
            # With unified addressing (every 64-bit platform CUDA supports) a mapped host
            # allocation has the same address on the device.
            self.hold_stream = hold_stream and self._attributes.get("UnifiedAddressing", 1) == 1
            self._flag_ptr = (
                cp.cuda.runtime.hostAlloc(8, cp.cuda.runtime.hostAllocMapped)
                if self.hold_stream
                else 0
            )
        self._flag = (ctypes.c_int32 * 2).from_address(self._flag_ptr) if self._flag_ptr else None
        self._device_id = device_id_from(self._name)

    def _init_caller_timing(self, timing: str, host_timer: Callable[[], int] | None) -> None:
        if timing not in TIMINGS:
            raise ValueError(f"timing must be one of {TIMINGS}, got {timing!r}")
        self.timing = timing
        self._host_timer = host_timer or time.perf_counter_ns
        self._enqueued = 0.0
        """Host seconds of the latest sample's eager call (see `_sample`)."""
        self._costs: weakref.WeakKeyDictionary[Callable[..., object], CallCost] = (
            weakref.WeakKeyDictionary()
        )

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

    def _launch_nothing(self, times: int = 1) -> None:
        for _ in range(times):
            self._nothing_kernel((1,), (1,), ())

    def fingerprint(self) -> dict[str, Any]:
        runtime = self._cp.cuda.runtime
        attributes = self._attributes
        return {
            "name": self._name,
            "uuid": self._uuid,
            "compute_capability": self._device.compute_capability,
            "driver": _version(runtime.driverGetVersion()),
            "runtime": _version(runtime.runtimeGetVersion()),
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

    def sync(self) -> None:
        self._device.synchronize()

    def peaks(self) -> Peaks:
        return load_or_probe(self._device_id, self._probe, self._peaks_cache_dir)

    def time(self, fn: Callable[..., object], inputs: tuple[Any, ...]) -> float:
        """Seconds of device work one call of `fn(*inputs)` enqueues on the current stream.

        One sample at a time per client: the events, the flush buffer and the flag are
        shared, and two samples interleaved on one GPU would time each other anyway.
        """
        return self._time(fn, inputs, caller=self.timing == "caller")

    def _time(self, fn: Callable[..., object], inputs: tuple[Any, ...], caller: bool) -> float:
        """`time`, scored by what the caller pays (`caller`) or by device time alone (the
        probes and the launch overhead, whose host cost is the instrument's)."""
        with self._lock, self._device:
            replay = self._replay_of(fn, inputs)
            call, args = (replay.launch, ()) if replay is not None else (fn, inputs)
            hold = self.hold_stream and fn not in self._synchronizing
            seconds = None
            if hold:
                for _ in range(2):
                    seconds = self._sample(call, args, hold=True)
                    if not self._timed_out():
                        break
                else:
                    self._synchronizing.add(fn)
                    hold, seconds = False, None
            if seconds is None:
                seconds = self._sample(call, args, hold=False)
            # What a sample reads beyond the call (the event pair, about 1.3 us on an H200,
            # and a graph's own launch) is the instrument's, not the candidate's.
            device = max(seconds - self._empty_sample(hold, replay is not None), MIN_SAMPLE_S)
            enqueue: float | None = None
            paid: float | None = None
            if replay is None:  # timed through the stream: its own enqueue time is known
                enqueue = paid = self._enqueued
            elif caller:
                enqueue, paid = self._caller_costs(fn, inputs, device, replay)
            return self._score(fn, device, enqueue, paid, caller)

    def call_costs(self, fn: Callable[..., object]) -> CallCost | None:
        """The device and host enqueue seconds of `fn`'s latest sample, None when it was
        never timed (or cannot be remembered: an unhashable or unreferenceable callable)."""
        try:
            return self._costs.get(fn)
        except TypeError:
            return None

    def _caller_costs(
        self, fn: Callable[..., object], inputs: tuple[Any, ...], device: float, replay: _Replay
    ) -> tuple[float, float | None]:
        """The host enqueue time and what a caller's loop pays per call, for a replayed
        sample of `device` seconds. The eager loop runs only where the host may bind: a
        call whose device time is over `ENQUEUE_MARGIN` times its last known enqueue time
        (the previous sample's, or on the first the capture's warm-up call's) is
        device-bound, and its loop would cost `EAGER_CALLS` calls of device time for a
        figure the device sample already gives: 24 calls of 0.47 s on the first tuning of a
        slow sum candidate, where do_bench pays 8."""
        cost = self.call_costs(fn)
        known = cost.enqueue if cost is not None and cost.enqueue is not None else replay.enqueue
        if device > ENQUEUE_MARGIN * known:
            return known, None

        def eager() -> None:
            fn(*inputs)

        return self._eager_loop(eager)

    def _eager_loop(self, eager: Callable[[], None]) -> tuple[float, float]:
        """Seconds per call of eager calls back to back in a caller's steady loop: the host's
        part alone (launches and allocations, read before the synchronize), then the whole
        (the host's part, or the device's work where that is slower).

        A loop that starts after a synchronize is slow for its first calls (the host path
        and the launch queue are cold): one call read 28-34 us where a long loop pays
        10-13 us for a 2048x1024 layernorm, and a loop of 24 calls still 16-19 us, which
        hid a candidate whose device time (14 us) binds a long loop behind the host time
        of all of them, and ranked the layernorms by noise (94 of 100 tunings agreed with
        a long loop). So two loops are timed, `EAGER_LEAD` calls and `EAGER_LEAD +
        EAGER_CALLS`, each from a synchronize, and the per-call figure is their difference
        over `EAGER_CALLS`: the cold start, the same in both, cancels."""
        stream = self._cp.cuda.get_current_stream()
        eager()
        short = self._timed_loop(eager, EAGER_LEAD, stream)
        long = self._timed_loop(eager, EAGER_LEAD + EAGER_CALLS, stream)
        enqueue = max(long[0] - short[0], 1) / 1e9 / EAGER_CALLS
        paid = max(long[1] - short[1], 1) / 1e9 / EAGER_CALLS
        return enqueue, paid

    def _timed_loop(self, eager: Callable[[], None], calls: int, stream: Any) -> tuple[int, int]:
        """Host nanoseconds of `calls` eager calls from a synchronize: until the last is
        enqueued, and until the stream has finished them."""
        stream.synchronize()
        start = self._host_timer()
        for _ in range(calls):
            eager()
        enqueued = self._host_timer()
        stream.synchronize()
        return enqueued - start, self._host_timer() - start

    def _score(
        self,
        fn: Callable[..., object],
        device: float,
        enqueue: float | None,
        paid: float | None,
        caller: bool,
    ) -> float:
        """Keep both figures of the sample (device and host enqueue time); the device time,
        or for the `caller` the larger of it and what a caller's loop paid per call (`paid`,
        or the last enqueue time measured where this sample took none: a device-bound
        candidate, whose loop would read its device time again)."""
        previous = self.call_costs(fn)
        if enqueue is None and previous is not None:
            enqueue = previous.enqueue
        with contextlib.suppress(TypeError):
            self._costs[fn] = CallCost(device, enqueue)
        paid = paid if paid is not None else enqueue
        if caller and paid is not None:
            return max(device, paid)
        return device

    def _empty_sample(self, hold: bool, replayed: bool) -> float:
        """What a sample reads beyond the call's own work, measured once per mode: the median
        of samples of a call that enqueues nothing or, for a replayed call, the replay's
        fixed cost (`_replay_fixed_cost`)."""
        mode = (hold, replayed)
        if mode not in self._empty:
            if replayed:
                self._empty[mode] = self._replay_fixed_cost(hold)
            else:
                self._empty[mode] = statistics.median(
                    self._sample(_enqueue_nothing, (), hold=hold) for _ in range(9)
                )
        return self._empty[mode]

    def _replay_fixed_cost(self, hold: bool) -> float:
        """What a sample of a replay reads beyond the graph's nodes: the event pair and the
        graph's own launch, which a replay of many calls pays once and a sample pays once
        per call. It is the line through samples of graphs of 1 and 32 empty kernels, taken
        at 0 nodes: its slope is what a node costs in a long graph, as in a replay of many
        calls, and a call of one node reads exactly that. A graph with no nodes cannot show
        it: it reads as the event pair alone, as if it were never launched."""
        counts = REPLAY_CALIBRATION_NODES
        medians = []
        for count in counts:
            replay = self._capture(functools.partial(self._launch_nothing, count), (), ())
            if replay is None:
                raise RuntimeError("a graph of empty kernels could not be captured")
            medians.append(
                statistics.median(self._sample(replay.launch, (), hold=hold) for _ in range(9))
            )
        return statistics.linear_regression(counts, medians).intercept

    def _replay_of(self, fn: Callable[..., object], inputs: tuple[Any, ...]) -> _Replay | None:
        """The graph of one call of `fn(*inputs)`, captured on first use; None where the call
        is timed through the stream (see the module docstring). A candidate keeps the graphs
        of its `PLACEMENTS` most recent inputs; an older one and its memory go before a new
        capture."""
        if self._capture_stream is None or fn in self._uncapturable:
            return None
        key = inputs_key(inputs, lambda value: isinstance(value, self._cp.ndarray))
        if key is None:
            return None
        try:
            replay = self._replays.pop((fn, key), None)
        except TypeError:  # unhashable: nowhere to keep its graph
            return None
        if replay is None:
            own = [k for k in self._replays if k[0] is fn]
            for old in own[: max(0, len(own) - PLACEMENTS + 1)]:
                del self._replays[old]
            replay = self._capture(fn, inputs, key)
            if replay is None:
                self._uncapturable.add(fn)
                return None
        self._replays[fn, key] = replay
        while len(self._replays) > REPLAY_CACHE_SIZE:
            self._replays.popitem(last=False)
        return replay

    def placed_sampler(
        self, fn: Callable[..., object], inputs: tuple[Any, ...], count: int = PLACEMENTS
    ) -> Callable[[], float]:
        """A sampler of `fn` over up to `count` placements of its inputs in turn: `inputs`
        and fresh copies of their CuPy arrays, each replayed from a graph and pool of its
        own (see the module docstring). Each placement is warmed up (and captured) here."""
        arrays = [v for v in inputs if isinstance(v, self._cp.ndarray)]
        size = sum(int(a.nbytes) for a in arrays)
        fits = self._total_memory // PLACEMENT_MEMORY_SHARE // size if size else count
        placements = [inputs]
        with self._device:
            for _ in range(min(count, fits) - 1 if arrays else 0):
                placements.append(
                    tuple(v.copy() if isinstance(v, self._cp.ndarray) else v for v in inputs)
                )
        for placed in placements[1:]:
            self.time(fn, placed)
        turn = itertools.cycle(placements)

        def sample() -> float:
            return self.time(fn, next(turn))

        return sample

    def _capture(
        self, fn: Callable[..., object], inputs: tuple[Any, ...], key: tuple[Any, ...]
    ) -> _Replay | None:
        """One warm-up call, then one call captured, both on the capture stream and in a
        pool of their own. An error of the warm-up is the candidate's and is raised; one of
        the capture means the call cannot be captured, and gives None."""
        cp = self._cp
        stream = self._capture_stream
        assert stream is not None
        pool = cp.cuda.MemoryPool()
        # The inputs may still be being written on the caller's stream.
        stream.wait_event(cp.cuda.get_current_stream().record())
        with cp.cuda.using_allocator(pool.malloc), stream:
            try:
                enqueue = self._host_seconds(fn, inputs)
                stream.synchronize()
            except BaseException as error:
                if _is_out_of_memory(cp, error):
                    traceback.clear_frames(error.__traceback__)
                    pool.free_all_blocks()
                    self._free_after_out_of_memory(error, stream)
                raise
            try:
                stream.begin_capture(CAPTURE_MODE_THREAD_LOCAL)
                try:
                    outputs = fn(*inputs)
                finally:
                    graph = stream.end_capture()
            except Exception:
                return None
        return _Replay(key, graph, pool, outputs, enqueue)

    def _timed_out(self) -> bool:
        return self._flag is not None and self._flag[1] != 0

    def _sample(
        self,
        fn: Callable[..., object],
        inputs: tuple[Any, ...],
        hold: bool,
    ) -> float:
        """Device seconds of one call of `fn(*inputs)`; `_enqueued` is the host time of the
        call itself (what a call timed through the stream costs its caller to enqueue)."""
        cp = self._cp
        stream = cp.cuda.get_current_stream()
        if hold:
            assert self._flag is not None
            self._flag[0] = 0
            self._flag[1] = 0
            timeout_ns = cp.uint64(round(HOLD_TIMEOUT_S * 1e9))
            self._hold_kernel((1,), (1,), (cp.uint64(self._flag_ptr), timeout_ns))
        try:
            if self._flush is not None:
                self._flush_kernel((8 * self.sm_count,), (FLUSH_BLOCK,), self._flush_args)
            self._start.record(stream)
            self._enqueued = self._host_seconds(fn, inputs)
            self._stop.record(stream)
        except BaseException as error:
            if hold:
                self._release()
            if _is_out_of_memory(cp, error):
                self._free_after_out_of_memory(error, stream)
            raise
        if hold:
            self._release()
        self._stop.synchronize()
        return float(cp.cuda.get_elapsed_time(self._start, self._stop)) / 1e3

    def _host_seconds(self, fn: Callable[..., object], inputs: tuple[Any, ...]) -> float:
        start = self._host_timer()
        fn(*inputs)
        return (self._host_timer() - start) / 1e9

    def _release(self) -> None:
        assert self._flag is not None
        self._flag[0] = 1

    def _free_after_out_of_memory(self, error: BaseException, stream: Any) -> None:
        """Give the device memory a failed candidate held back to the next one: its frames
        (kept alive by the traceback) hold its arrays, the pool caches their blocks, and the
        captured graphs' pools hold what their calls allocated."""
        traceback.clear_frames(error.__traceback__)
        stream.synchronize()
        self._replays.clear()
        self._cp.get_default_memory_pool().free_all_blocks()

    def probe_buffer_bytes(self) -> int:
        """Bytes of each memory-probe buffer: 8 times the L2 and at least 1 GiB, so the
        probes stream from HBM; at most an eighth of the memory, for two buffers and room."""
        size = max(8 * self.l2_bytes, MIN_PROBE_BUFFER)
        size = min(size, self._total_memory // 8)
        return size // 64 * 64


def _best_seconds(client: CudaClient, fn: Callable[[], object], reps: int = PROBE_REPS) -> float:
    """The fastest of `reps` samples after one warm-up: a peak is what the device can do,
    and every disturbance (a clock ramp, another process) only adds time."""
    client._time(fn, (), caller=False)
    return min(client._time(fn, (), caller=False) for _ in range(reps))


def probe_cuda_peaks(client: CudaClient) -> Peaks:
    """Measure the device's memory bandwidth and arithmetic throughput.

    Memory: grid-stride kernels over buffers of `probe_buffer_bytes` with 16-byte accesses,
    for copy (bytes read plus written, as `Work.bytes` counts them), add (`y += x`: two
    read, one written), read (a sum that keeps every load) and write. Compute: an unrolled
    FMA loop with eight independent chains per thread and enough blocks to fill every SM,
    for fp32 and fp64 (two operations per FMA); `cupy.matmul` of `MATMUL_N` squared matrices
    on random data for fp16 and tf32 (random because zeros run faster), and cuBLAS `gemmEx`
    for bf16, which has no CuPy dtype. A compute probe that cannot run here is left out, and
    the reason kept in `details`. The device-to-device `memcpy` rate is kept in `details`
    too, as a cross-check of the copy kernel.
    """
    cp = client._cp
    details: dict[str, Any] = {"probe_reps": PROBE_REPS, "sm_count": client.sm_count}
    with client._device:
        module = cp.RawModule(code=_PROBE_SOURCE)
        memory = _probe_memory(client, module, details)
        levels: tuple[MemoryLevel, ...] = ()
        try:
            levels = (_probe_l2(client, module, details),)
        except Exception as error:  # without it, every problem is bound by HBM
            details["l2_probe_error"] = f"{type(error).__name__}: {error}"
        compute = _probe_fma(client, module, details)
        skipped: dict[str, str] = {}
        for dtype, probe in (("fp16", _matmul_fp16), ("tf32", _matmul_tf32), ("bf16", _gemm_bf16)):
            try:
                compute[dtype] = probe(client)
            except Exception as error:
                skipped[dtype] = f"{type(error).__name__}: {error}"
        try:
            details["fp32_matmul_ops_per_s"] = _matmul_rate(client, "float32")
        except Exception as error:
            skipped["fp32_matmul"] = f"{type(error).__name__}: {error}"
        if skipped:
            details["skipped"] = skipped
        details["matmul_n"] = MATMUL_N
        cp.get_default_memory_pool().free_all_blocks()
    return Peaks(
        memory=memory,
        compute=compute,
        threads=None,
        details=details,
        levels=levels,
        outer_level="HBM",
    )


def _launch_config(client: CudaClient) -> tuple[tuple[int], tuple[int]]:
    """Eight 256-thread blocks per SM: a full SM (2048 threads) on every recent GPU."""
    return (client.sm_count * 8,), (FMA_BLOCK,)


def _probe_memory(client: CudaClient, module: Any, details: dict[str, Any]) -> dict[str, float]:
    """Copy, read and write rates, each the best of two launch shapes of one kernel: a full
    SM of blocks striding over the buffer four loads at a time, and one 16-byte access per
    thread over as many blocks as that takes. Which is faster depends on the GPU and the
    access pattern (on an H200 the second copied 7% and wrote 7% faster, the first read 10%
    faster), and a peak is the best the device can do."""
    cp = client._cp
    nbytes = client.probe_buffer_bytes()
    n4 = nbytes // 16
    src = cp.random.random(nbytes // 4, dtype=cp.float32)
    dst = cp.zeros_like(src)
    out = cp.zeros(1, dtype=cp.float32)
    n, one = cp.int64(n4), cp.float32(1.0)
    args = {
        "copy": (src, dst, n),
        "add": (src, dst, n),
        "read": (src, out, n),
        "write": (dst, n, one),
    }
    moved = {"copy": 2 * nbytes, "add": 3 * nbytes, "read": nbytes, "write": nbytes}
    shapes = {
        "grid_stride": _launch_config(client),
        "one_per_thread": ((-(-n4 // FMA_BLOCK),), (FMA_BLOCK,)),
    }
    rates: dict[str, float] = {}
    by_shape: dict[str, dict[str, float]] = {}
    for name, kernel_args in args.items():
        kernel = module.get_function(f"probe_{name}")
        by_shape[name] = {
            shape: moved[name]
            / _best_seconds(client, functools.partial(kernel, grid, block, kernel_args))
            for shape, (grid, block) in shapes.items()
        }
        rates[name] = max(by_shape[name].values())
    kind = cp.cuda.runtime.memcpyDeviceToDevice

    def memcpy() -> None:
        stream_ptr = cp.cuda.get_current_stream().ptr
        cp.cuda.runtime.memcpyAsync(dst.data.ptr, src.data.ptr, nbytes, kind, stream_ptr)

    details["memory_by_launch_shape"] = by_shape
    details["memcpy_bytes_per_s"] = 2 * nbytes / _best_seconds(client, memcpy)
    details["buffer_bytes"] = nbytes
    details["l2_bytes"] = client.l2_bytes
    return rates


def _probe_l2(client: CudaClient, module: Any, details: dict[str, Any]) -> MemoryLevel:
    """Copy, read and write rates of the L2: the memory kernels over a working set of
    `L2_PROBE_FRACTION` of the L2, launched `L2_PASSES` times in one call against once.

    A sample starts with a cold L2 (the client flushes it), so the first pass streams from
    HBM and the others from the L2; the difference of the two calls is the L2's. A problem
    that fits the L2 may run from it even when timed cold: its writes land there, and its
    second touch of an input hits."""
    cp = client._cp
    working_set = int(client.l2_bytes * L2_PROBE_FRACTION) // 64 * 64
    n4 = working_set // 16
    src = cp.ones(working_set // 4, dtype=cp.float32)
    half = cp.ones(working_set // 8, dtype=cp.float32)
    target = cp.empty_like(half)
    out = cp.zeros(1, dtype=cp.float32)
    grid, block = _launch_config(client)
    calls = {
        "copy": ("probe_copy", (half, target, cp.int64(n4 // 2)), working_set),
        "read": ("probe_read", (src, out, cp.int64(n4)), working_set),
        "write": ("probe_write", (src, cp.int64(n4), cp.float32(1.0)), working_set),
    }
    rates: dict[str, float] = {}
    for name, (kernel_name, args, moved) in calls.items():
        kernel = module.get_function(kernel_name)

        def passes(count: int, kernel: Any = kernel, args: Any = args) -> None:
            for _ in range(count):
                kernel(grid, block, args)

        once = _best_seconds(client, functools.partial(passes, 1))
        many = _best_seconds(client, functools.partial(passes, L2_PASSES))
        rates[name] = (L2_PASSES - 1) * moved / max(many - once, MIN_SAMPLE_S)
    details["l2_probe"] = {"working_set_bytes": working_set, "passes": L2_PASSES}
    return MemoryLevel("L2", client.l2_bytes, rates)


def _probe_fma(client: CudaClient, module: Any, details: dict[str, Any]) -> dict[str, float]:
    cp = client._cp
    grid, block = _launch_config(client)
    threads = grid[0] * block[0]
    out32 = cp.zeros(1, dtype=cp.float32)
    out64 = cp.zeros(1, dtype=cp.float64)
    fma32, fma64 = module.get_function("probe_fma32"), module.get_function("probe_fma64")
    iters32, iters64 = 4096, 2048
    per_iter = 2 * FMA_CHAINS * FMA_UNROLL * threads
    b32, c32 = cp.float32(0.999), cp.float32(1e-3)
    b64, c64 = cp.float64(0.999), cp.float64(1e-3)
    details["fma_iters"] = {"fp32": iters32, "fp64": iters64}
    return {
        "fp32": per_iter
        * iters32
        / _best_seconds(client, lambda: fma32(grid, block, (out32, b32, c32, cp.int32(iters32)))),
        "fp64": per_iter
        * iters64
        / _best_seconds(client, lambda: fma64(grid, block, (out64, b64, c64, cp.int32(iters64)))),
    }


def _matmul_rate(client: CudaClient, dtype: str) -> float:
    cp = client._cp
    a = cp.random.random((MATMUL_N, MATMUL_N), dtype=cp.float32).astype(dtype)
    b = cp.random.random((MATMUL_N, MATMUL_N), dtype=cp.float32).astype(dtype)
    c = cp.empty_like(a)
    return 2.0 * MATMUL_N**3 / _best_seconds(client, lambda: cp.matmul(a, b, out=c))


def _matmul_fp16(client: CudaClient) -> float:
    return _matmul_rate(client, "float16")


def _matmul_tf32(client: CudaClient) -> float:
    """fp32 `cupy.matmul` with CuPy's compute type for float32 set to TF32 for the probe.

    CuPy reads `CUPY_TF32` once, at the first float32 product, into a per-dtype compute type
    that `cupy._core._routines_linalg.set_compute_type` changes; the setting in force before
    is restored, so the probe leaves the process's fp32 products as they were.
    """
    cp = client._cp
    linalg = importlib.import_module("cupy._core._routines_linalg")
    before = linalg.get_compute_type(cp.float32)
    linalg.set_compute_type(cp.float32, linalg.COMPUTE_TYPE_TF32)
    try:
        return _matmul_rate(client, "float32")
    finally:
        linalg.set_compute_type(cp.float32, before)


def _gemm_bf16(client: CudaClient) -> float:
    """bf16 x bf16 -> bf16 with fp32 accumulation through cuBLAS `gemmEx` on raw buffers:
    CuPy has no bfloat16 dtype. The operands are the top halves of random fp32 numbers,
    which is how bf16 rounds by truncation."""
    cp = client._cp
    cublas = importlib.import_module("cupy_backends.cuda.libs.cublas")
    runtime = cp.cuda.runtime
    np = importlib.import_module("numpy")
    n = MATMUL_N

    def operand() -> Any:
        bits = cp.random.random((n, n), dtype=cp.float32).view(cp.uint32)
        return (bits >> 16).astype(cp.uint16)

    a, b = operand(), operand()
    c = cp.empty((n, n), dtype=cp.uint16)
    alpha = np.ones(1, dtype=np.float32)
    beta = np.zeros(1, dtype=np.float32)
    bf16 = getattr(runtime, "CUDA_R_16BF", 14)
    compute = getattr(cublas, "CUBLAS_COMPUTE_32F", 68)
    algo = getattr(cublas, "CUBLAS_GEMM_DEFAULT_TENSOR_OP", 99)
    op_n = getattr(cublas, "CUBLAS_OP_N", 0)

    def gemm() -> None:
        handle = cp.cuda.device.get_cublas_handle()
        cublas.setStream(handle, cp.cuda.get_current_stream().ptr)
        cublas.gemmEx(
            handle, op_n, op_n, n, n, n,
            alpha.ctypes.data, a.data.ptr, bf16, n, b.data.ptr, bf16, n,
            beta.ctypes.data, c.data.ptr, bf16, n, compute, algo,
        )  # fmt: skip

    return 2.0 * n**3 / _best_seconds(client, gemm)


_clients: dict[int, CudaClient] = {}
_clients_lock = threading.Lock()


def cuda(
    device: int = 0,
    *,
    cold_l2: bool = True,
    hold_stream: bool = True,
    graph_replay: bool = True,
    peaks_cache_dir: Path | None = None,
    probe: Callable[[], Peaks] | None = None,
    timing: str = "caller",
) -> CudaClient:
    """The client of CUDA device `device`. With the defaults it is one client per device per
    process, so every tuner shares its measured launch overhead and peaks; any other
    argument gets a client of its own. Raises `CudaUnavailableError` (one message naming
    the extra to install, or saying no device was found) where CUDA cannot be used."""
    defaults = cold_l2 and hold_stream and graph_replay and timing == "caller"
    if defaults and peaks_cache_dir is None and probe is None:
        with _clients_lock:
            if device not in _clients:
                _clients[device] = CudaClient(device)
            return _clients[device]
    return CudaClient(
        device,
        cold_l2=cold_l2,
        hold_stream=hold_stream,
        graph_replay=graph_replay,
        peaks_cache_dir=peaks_cache_dir,
        probe=probe,
        timing=timing,
    )


__all__ = [
    "CallCost",
    "CudaClient",
    "CudaUnavailableError",
    "cuda",
    "device_count",
    "device_id_from",
    "probe_cuda_peaks",
]
