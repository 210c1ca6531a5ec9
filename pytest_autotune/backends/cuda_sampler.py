"""One sample of a call on a GPU: CUDA events around it, behind a held stream, after the L2
is flushed. Steps 1 and 2 of `backends.cuda`'s docstring say why.
"""

from __future__ import annotations

import ctypes
import weakref
from collections.abc import Callable, Mapping
from typing import Any

from pytest_autotune.backends.cuda_device import EXTRAS_HINT, CudaUnavailableError
from pytest_autotune.backends.tracing import untraced

HOLD_TIMEOUT_S = 0.2
"""How long the holding kernel waits for the host. Python enqueues a launch in about 7 us,
so 0.2 s covers a candidate of thousands of launches; a candidate that synchronizes inside
its call costs this once per process (twice where no capture warmed it up first) before it
is timed without the hold."""

WARM_UP_HOLD_S = 10e-3
"""How long the holding kernel waits for the host in a capture's warm-up call, the first
call of a candidate on its inputs, timed so that a long call's first timing can stand as its
first sample (`CudaClient._long_first_call`). Short, because a candidate that synchronizes
waits on the hold until it gives up, and it is the warm-up that tells: 10 ms per such
candidate per process. Longer host work before the launches (a compilation, a first cuBLAS
call) outlasts it, and the call is then timed by a replay as any other."""

RETRY_HOLD_S = 2e-3
"""How long the hold waits in the timed call after a capture's warm-up whose hold gave up and
whose capture then failed: that call either synchronizes or spent its first call on host
work (a compilation, a first cuBLAS handle) that a second call does not repeat. What a
second call still enqueues in 2 ms is some 280 launches from Python (about 7 us each); a call
that takes longer is bound by its host, and is timed without the hold from then on, which is
what its caller pays anyway. A synchronizing candidate such as `cupy.bincount` then costs
12 ms of holds per process, the warm-up's and this one's (20 ms when this one was 10 ms, 210
ms with the sampler's own hold). On an H200 the 256-bin histogram family's first tuning read
0.40 s with the sampler's hold, 0.155 s at 10 ms and 0.135-0.151 s at 2 ms, against 0.127 s
for a later tuning (issue 14, BENCHMARKS.md)."""

L2_FLUSH_FACTOR = 2
"""The cold-L2 buffer is this many times the L2 size (see the module docstring)."""
FLUSH_BLOCK = 256


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


class EventSampler:
    """The events, kernels, cold-L2 buffer and host flag one client's samples share; made
    in the device's context."""

    def __init__(
        self,
        cp: Any,
        attributes: Mapping[str, int],
        *,
        cold_l2: bool,
        hold_stream: bool,
        host_timer: Callable[[], int],
    ) -> None:
        self._cp = cp
        self._host_timer = host_timer
        self.enqueued = 0.0
        """Host seconds of the latest sample's call (see `sample`)."""
        self._start = cp.cuda.Event()
        self._stop = cp.cuda.Event()
        try:  # compiled here (NVRTC), the first kernels of the process most likely
            module = cp.RawModule(code=_HOLD_SOURCE)
            self._hold_kernel = module.get_function("autotune_hold")
            self.nothing_kernel = module.get_function("autotune_nothing")
            self._flush_kernel = module.get_function("autotune_flush")
        except Exception as error:
            # CuPy imported and found the device, but cannot build a kernel: NVRTC missing
            # or of another CUDA than CuPy's, or a driver older than the toolkit. No kernel
            # of the user's would run either; `auto` then falls back to the CPU.
            raise CudaUnavailableError(
                f"CuPy cannot compile CUDA kernels here ({type(error).__name__}: {error});"
                f" {EXTRAS_HINT}, with a driver as recent as that CUDA"
            ) from error
        self._flush_blocks = 8 * int(attributes.get("MultiProcessorCount", 1))
        self.l2_bytes = int(attributes.get("L2CacheSize", 0))
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
        self.hold_stream = hold_stream and attributes.get("UnifiedAddressing", 1) == 1
        self._flag_ptr = (
            cp.cuda.runtime.hostAlloc(8, cp.cuda.runtime.hostAllocMapped) if self.hold_stream else 0
        )
        self._flag = (ctypes.c_int32 * 2).from_address(self._flag_ptr) if self._flag_ptr else None
        if self._flag_ptr:
            # A page of pinned host memory per client: a client made with other arguments
            # than `cuda()`'s own (a test's, a script's) gives it back when collected, and
            # not at exit, when CUDA may be gone (the process's end frees it anyway).
            weakref.finalize(self, cp.cuda.runtime.freeHost, self._flag_ptr).atexit = False

    def timed_out(self) -> bool:
        return self._flag is not None and self._flag[1] != 0

    def sample(
        self,
        fn: Callable[..., object],
        inputs: tuple[Any, ...],
        hold: bool,
        timeout: float = HOLD_TIMEOUT_S,
    ) -> float:
        """Device seconds of one call of `fn(*inputs)`, held for at most `timeout` seconds;
        `enqueued` is the host time of the call itself (what a call timed through the stream
        costs its caller to enqueue)."""
        cp = self._cp
        stream = cp.cuda.get_current_stream()
        if hold:
            assert self._flag is not None
            self._flag[0] = 0
            self._flag[1] = 0
            timeout_ns = cp.uint64(round(timeout * 1e9))
            self._hold_kernel((1,), (1,), (cp.uint64(self._flag_ptr), timeout_ns))
        try:
            if self._flush is not None:
                self._flush_kernel((self._flush_blocks,), (FLUSH_BLOCK,), self._flush_args)
            self._start.record(stream)
            self.enqueued = self._host_seconds(fn, inputs)
            self._stop.record(stream)
        except BaseException:
            if hold:
                self._release()
            raise
        if hold:
            self._release()
        self._stop.synchronize()
        return float(cp.cuda.get_elapsed_time(self._start, self._stop)) / 1e3

    def _host_seconds(self, fn: Callable[..., object], inputs: tuple[Any, ...]) -> float:
        # Untraced: under a tracer (`pytest --cov`) the Python that enqueues the call ran
        # several times slower, which a caller's loop does not pay.
        return untraced(_host_seconds, self._host_timer, fn, inputs)

    def _release(self) -> None:
        assert self._flag is not None
        self._flag[0] = 1


def _host_seconds(
    host_timer: Callable[[], int], fn: Callable[..., object], inputs: tuple[Any, ...]
) -> float:
    start = host_timer()
    fn(*inputs)
    return (host_timer() - start) / 1e9
