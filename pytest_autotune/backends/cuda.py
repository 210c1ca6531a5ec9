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
   (`FixedCosts.replay_fixed_cost`). Each launch of the call still costs what a graph
   node costs, so a candidate of more launches stays slower by them.

   The capture follows one warm-up call, both on a stream of the client's, with the
   call's allocations in a memory pool of its own that lives as long as the graph: the
   replays write where the captured call's arrays were, what it returned included, and
   from CuPy's pool those blocks would go to other arrays. The warm-up call is timed as a
   sample is, behind a hold of its own that gives up sooner (`WARM_UP_HOLD_S`: a call that
   synchronizes waits on it until then); where it read `LONG_CALL_S` or more, device-bound,
   its figure is the call's first sample and no replay is timed with it: a long call's
   first timing costs one call, not two, and the tuner keeps it as the candidate's first
   sample (`CudaClient.long_call`). A call that cannot be captured
   is timed through the stream as in 2, from then on: cuBLAS under CuPy, a call that
   synchronizes, work sent to the legacy stream (the capture stream is a blocking one
   while the program runs no other thread, so such work fails the capture instead of
   running outside the graph; `GraphReplays._capture_stream`), inputs other than
   CuPy arrays and hashable values (a graph keeps the addresses and scalars it was
   captured with, and other ones are captured again). Such a call pays the stream's cost
   per launch, which matters only against short, captured calls of several launches. A
   graph replays the call as captured: a candidate whose host code would enqueue other
   work on a later call with the same inputs is timed as its second call enqueued it.
4. **What the caller pays.** A replay hides what Python costs to enqueue the call
   (allocation and about 7 us per launch), which a caller calling it eagerly pays: a row
   layernorm of 2048x1024 fp32 replayed in 5.5 us cost 17.3 us per call back to back, and
   a seven-kernel CuPy expression 61 us against 211 us. So with `timing="caller"` (the
   default) a sample also times, after its device sample, the host's part of `EAGER_CALLS`
   eager calls of the candidate back to back (per call, after a lead of `EAGER_LEAD` calls
   from a synchronize, whose cold start is left out), and a sample reads the larger of the
   two: a call cannot finish faster than its launches are issued, and a caller's steady
   loop pays no more (`CallerTiming.eager_loop` says why not the loop's time to its
   synchronize). Where the device time is over `ENQUEUE_MARGIN`
   times the last known enqueue time (on the first sample, the capture's warm-up call's,
   else that of a second of two eager calls, since the warm-up's held its first
   allocations) the host cannot bind the call and the loop is left out. The loop's figure
   leaves its slowest quarter of calls out (`cuda_timing.TRIMMED`: a stall of the host is
   not the candidate's). Host-bound samples are scored by their median, and the tuner
   judges such candidates round by round (`batch.paired_scores`). Where host-bound
   candidates tie, the one of least regret at the host's usual speed wins
   (`CallerTiming.preferred`, the host's slowdown measured then by an empty launch's loop,
   `CallerTiming.host_slowdown`): a tuning in one of the hosts' slow spells otherwise took
   a device-bound candidate that the spell had made level. `timing="device"` reads the
   device time alone. Both figures of the latest sample
   are kept per candidate (`CudaClient.call_costs`) for the report.
5. **Several placements for the gate.** Where a call's arrays land changes some kernels'
   time by itself. On an H200 a 256-bin shared-memory histogram of 2^26 bytes read 4%
   slower with its 1 KiB output (the bins every block updates with global atomics) at a
   multiple of 1 KiB than 512 bytes past one (the issue's variant of it 12%): the L2
   interleaves addresses over its slices, so the bins' atomics were served by one slice
   or by two. CuPy's pool hands out blocks at multiples of 512 bytes, and which one a
   capture's output got depended on the small allocations alive before it, so a
   process's history (timing a reduction, which keeps a 512-byte output alive in its
   graph's pool, moved every later capture; `benchmarks/gpu_capture_history.py`) decided
   the speed: a baseline recorded by one test selection failed or flattered another.
   Tuning ranks candidates on one placement each; the gate's precise measurement samples
   the winner over `PLACEMENTS` placements (`CudaClient.placed_sampler`; for a short call
   each sample is the mean of one call at each, `ROUND_OF_PLACEMENTS_S`), each with copies
   of its array inputs and a graph and pool of its own, and every array of the
   placement, copied or allocated by the call, at an offset of its own modulo
   `PLACEMENT_PERIOD` (0, 256, ..., 1792 bytes: `cuda_graphs.Placement`). The mixture is
   the same in every process, so its median no longer depends on which tests ran; what
   the placements still differ by widens the measurement's error, which the gate carries.
6. **Out of memory.** A candidate that runs out of device memory fails alone: the frames
   of its traceback are cleared (they hold its arrays), CuPy's pool and the captured
   graphs' pools are emptied so the next candidate finds the memory free, and the error
   is raised for the tuner to record; where graphs of earlier calls were kept, the call
   is first timed once more without them, since what they held may be what it needed.
   (A CuPy pool that is let go keeps its blocks, so each graph's is emptied as it goes.)

This module holds `cuda()`; the client and each step's code, with the constants named
above, live beside it: `cuda_client` (the client, `CudaClient`: a sample's steps in turn, and
`placed_sampler` of 5), `cuda_sampler` (1, 2: one sample with events, hold and flush),
`cuda_graphs` (3, 5, 6: the graph replays), `cuda_fixed_cost` (3: what a sample reads beyond
the call), `cuda_timing` (4: what the caller pays), `cuda_collector` (the garbage collector
held off while a call is timed), `cuda_peaks` (the peak probes) and `cuda_device` (importing
CuPy, naming devices).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable

from pytest_autotune.backends.cuda_client import LONG_CALL_S, CudaClient, probe_cuda_peaks
from pytest_autotune.backends.cuda_device import (
    CudaUnavailableError,
    device_count,
    device_id_from,
)
from pytest_autotune.backends.cuda_timing import CallCost
from pytest_autotune.backends.peaks import Peaks

_clients: dict[int, CudaClient] = {}
_clients_lock = threading.Lock()


def cuda(
    device: int = 0,
    *,
    cold_l2: bool = True,
    hold_stream: bool = True,
    graph_replay: bool = True,
    peaks_cache_dir: str | os.PathLike[str] | None = None,
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


# Re-exported: the client and its constants were imported from here before they had a module.
__all__ = [
    "LONG_CALL_S",
    "CallCost",
    "CudaClient",
    "CudaUnavailableError",
    "cuda",
    "device_count",
    "device_id_from",
    "probe_cuda_peaks",
]
