"""The CUDA client on a real GPU: identity, peaks, and how faithfully it times."""

from __future__ import annotations

import gc
import importlib
import itertools
import math
import re
import statistics
import subprocess
import threading
import time
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

from benchmarks.gpu_common import SPIN_SOURCE, graph_replay_seconds
from pytest_autotune import AutotuneConfig, AutotuneError, TunableSet, Tuner
from pytest_autotune.backends import CudaClient, cuda, cuda_fixed_cost
from pytest_autotune.backends.cuda import LONG_CALL_S, device_id_from, probe_cuda_peaks
from pytest_autotune.backends.cuda_graphs import (
    PLACEMENT_PERIOD,
    PLACEMENT_STEP,
    REPLAY_CACHE_SIZE,
)
from pytest_autotune.tune.clone import _strided_copy_across, clone_value, device_copy

COUNTED_SOURCE = r"""
extern "C" __global__ void spin_counted(float* out, int iters, unsigned int* runs) {
    if (blockIdx.x == 0 && threadIdx.x == 0) atomicAdd(runs, 1u);
    float a = threadIdx.x * 1e-3f;
    for (int i = 0; i < iters; ++i) a = fmaf(a, 0.999f, 1e-3f);
    if (a == -1.0f) out[0] = a;
}
"""

LONG_SPIN = 2_500_000
"""Iterations of a spin of about 5 ms on an H200 (25,000 take about 50 us)."""


@pytest.fixture(scope="module")
def spin(cp: Any) -> Callable[[int], Callable[[], None]]:
    """`spin(iters)`: a launch of one block per SM whose threads run `iters` dependent FMAs,
    a kernel that touches no memory, so its time depends on neither the L2 nor the inputs."""
    kernel = cp.RawKernel(SPIN_SOURCE, "spin")
    out = cp.zeros(1, dtype=cp.float32)
    sms = cp.cuda.Device().attributes["MultiProcessorCount"]

    def make(iters: int) -> Callable[[], None]:
        def launch() -> None:
            kernel((sms,), (128,), (out, np.int32(iters)))

        return launch

    return make


def _median_time(client: CudaClient, fn: Callable[..., object], samples: int = 15) -> float:
    client.time(fn, ())
    return statistics.median(client.time(fn, ()) for _ in range(samples))


def test_device_id_names_the_gpu_model(client: CudaClient) -> None:
    assert re.fullmatch(r"cuda-[a-z0-9]+(-[a-z0-9]+)*", client.device_id)
    assert client.device_id == device_id_from(client.fingerprint()["name"])


def test_cuda_gives_one_client_per_device(client: CudaClient) -> None:
    assert cuda() is client
    assert cuda(0) is client
    assert cuda(cold_l2=False) is not client


def test_fingerprint_holds_what_changes_timings(client: CudaClient) -> None:
    fp = client.fingerprint()
    for key in (
        "name",
        "uuid",
        "driver",
        "runtime",
        "cupy",
        "sm_clock_khz",
        "compute_capability",
        "graph_replay",
    ):
        assert key in fp, key
    assert fp["sm_count"] > 0 and fp["l2_bytes"] > 0 and fp["memory_bytes"] > 0
    assert re.fullmatch(r"\d+\.\d+", fp["driver"]) and re.fullmatch(r"\d+\.\d+", fp["runtime"])
    # The driver always knows it: CuPy 14's runtime property, cut at its first zero byte,
    # made every GPU's uuid None, and a test of one GPU per worker compared {None}.
    assert re.fullmatch(r"GPU-[0-9a-f]{8}(-[0-9a-f]{4}){3}-[0-9a-f]{12}", fp["uuid"]), fp["uuid"]
    listed = _nvidia_smi_uuids()
    if listed is not None:
        assert fp["uuid"] in listed


def _nvidia_smi_uuids() -> list[str] | None:
    """The uuids nvidia-smi lists, None where it cannot be run."""
    try:
        out = subprocess.run(
            ["nvidia-smi", "--query-gpu=uuid", "--format=csv,noheader"],
            capture_output=True,
            text=True,
            timeout=30,
            check=True,
        ).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    return [line.strip() for line in out.splitlines() if line.strip()]


def test_peaks_are_measured_on_the_device(client: CudaClient) -> None:
    peaks = client.peaks()
    for name in ("copy", "read", "write"):
        assert peaks.memory[name] > 0, name
    for name in ("fp32", "fp64"):
        assert peaks.compute[name] > 0, name
    assert peaks.compute_peak("fp32") > peaks.compute_peak("fp64")
    if "fp16" in peaks.compute:
        assert peaks.compute["fp16"] > peaks.compute["fp32"]
    assert peaks.details["buffer_bytes"] >= 4 * client.l2_bytes
    assert client.peaks() is peaks


def test_probing_the_peaks_leaves_none_of_the_probes_memory_held(cp: Any) -> None:
    # The probes' graphs held their buffers (2 GiB on an H200) for the rest of the process.
    client = CudaClient(cold_l2=False)
    pool = cp.get_default_memory_pool()
    gc.collect()
    used = pool.used_bytes()
    probe_cuda_peaks(client)
    gc.collect()
    assert pool.used_bytes() - used < client.probe_buffer_bytes()
    pool.free_all_blocks()  # the probes' freed buffers, cached: not for the next tests to see


def test_inputs_on_another_gpu_than_the_clients_are_refused_by_name(cp: Any) -> None:
    if cp.cuda.runtime.getDeviceCount() < 2:
        pytest.skip("needs two GPUs")
    with cp.cuda.Device(0):
        x = cp.ones(1 << 20, dtype=cp.float32)
    with pytest.raises(ValueError, match=r"input 0 is a CuPy array on device 0, .* device 1"):
        cuda(device=1).time(lambda x: x * 2, (x,))


def test_a_client_of_another_gpu_tunes_and_checks_on_copies_on_its_own_gpu(cp: Any) -> None:
    # CuPy copies an array to the current device: the tuner's copies of inputs made on
    # device 0 landed there, and cuda(device=1) then timed them from device 1.
    if cp.cuda.runtime.getDeviceCount() < 2:
        pytest.skip("needs two GPUs")
    with cp.cuda.Device(0):
        x = cp.ones(1 << 20, dtype=cp.float32)
    seen: set[int] = set()

    def twice(x: Any) -> Any:
        seen.add(x.device.id)
        return x * 2

    def doubled(x: Any) -> Any:
        seen.add(x.device.id)
        return x + x

    tunables = TunableSet.of(lambda x: x.size, {"twice": twice, "doubled": doubled})
    tuner = Tuner("gpu-other-device", "d", AutotuneConfig(disable_cache=True, checks=True))
    decision = tuner.tune(x.size, tunables, (x,), cuda(device=1))
    assert decision.measured and all(check.passed for check in decision.checks)
    assert seen == {1}


def test_a_strided_view_of_another_gpu_is_copied_onto_the_clients_with_its_strides(
    cp: Any,
) -> None:
    # CuPy's `copy` refuses a strided view across devices (NotImplementedError): every
    # tuning of cuda(device=1) on such a view of GPU 0 failed as its input generator's.
    if cp.cuda.runtime.getDeviceCount() < 2:
        pytest.skip("needs two GPUs")
    with cp.cuda.Device(0):
        matrix = cp.arange(64 * 256, dtype=cp.float32).reshape(64, 256)
        column = cp.zeros((1 << 14, 1 << 10), dtype=cp.float32)[:, 3]  # spread wide
    for view in (matrix[:, ::2], matrix[::-1, ::-3], column):
        with cp.cuda.Device(1):
            copied = clone_value(view)
            assert copied.device.id == 1
            assert bool((copied == cp.asarray(view.get())).all())
        assert (copied.strides == view.strides) is (view is not column)
    seen: set[tuple[int, int]] = set()

    def total(x: Any) -> Any:
        seen.add((x.device.id, *x.strides))
        return x.sum()

    view = matrix[:, ::2]
    tunables = TunableSet.of(lambda x: x.size, {"sum": total, "other": cp.sum})
    tuner = Tuner("gpu-strided-other", "d", AutotuneConfig(disable_cache=True, checks=True))
    decision = tuner.tune(view.size, tunables, (view,), cuda(device=1))
    assert decision.measured and seen == {(1, *view.strides)}


def test_the_copy_of_a_strided_view_across_devices_is_its_span_by_one_memcpy(cp: Any) -> None:
    # What a client of GPU 1 makes of a strided view of GPU 0 (bb303b7), run here on one
    # GPU: the span's memcpy from the view's first byte (`data - offset`, rows reversed
    # included), its strides over the new buffer, and the wide view copied contiguous on
    # its own device first. A fake cannot show CuPy's pointer arithmetic or the memcpy.
    matrix = cp.arange(64 * 256, dtype=cp.float32).reshape(64, 256)
    cube = cp.arange(4 * 6 * 8, dtype=cp.float64).reshape(4, 6, 8)
    row = cp.arange(256, dtype=cp.int32)
    column = cp.zeros((1 << 14, 1 << 10), dtype=cp.float32)[:, 3]  # spread wide
    column[::7] = 5.0
    views = {
        "every other column": matrix[:, ::2],
        "reversed": matrix[::-1, ::-3],
        "broadcast": cp.broadcast_to(row, (64, 256)),
        "permuted": cube.transpose(2, 0, 1)[:, ::-2],
        "column": column,
    }
    for name, view in views.items():
        copied = _strided_copy_across(cp, view)
        assert copied.device.id == view.device.id, name
        assert copied.data.ptr != view.data.ptr, name
        assert (copied.strides == view.strides) is (name != "column"), name
        assert copied.shape == view.shape and copied.dtype == view.dtype, name
        np.testing.assert_array_equal(copied.get(), view.get(), err_msg=name)


def test_a_strided_view_is_tuned_and_placed_with_its_own_strides(cp: Any) -> None:
    # CuPy's `copy` makes a strided view contiguous: a kernel reading every other column,
    # or rows reversed, was timed on loads the caller's view never gives it.
    matrix = cp.arange(64 * 256, dtype=cp.float32).reshape(64, 256)
    for view in (matrix[:, ::2], matrix[::-1, ::-3], matrix.T[::2]):
        for copied in (clone_value(view), device_copy(cp, view)):
            assert copied.strides == view.strides
            assert copied.data.ptr != view.data.ptr
            assert bool((copied == view).all())
    seen: set[tuple[int, ...]] = set()

    def total(x: Any) -> Any:
        seen.add(x.strides)
        return x.sum()

    view = matrix[:, ::2]
    tunables = TunableSet.of(lambda x: x.size, {"sum": total, "other": cp.sum})
    tuner = Tuner("gpu-strided", "d", AutotuneConfig(disable_cache=True, checks=True))
    decision = tuner.tune(view.size, tunables, (view,), cuda())
    assert decision.measured and seen == {view.strides}


def test_a_view_past_the_arrays_looked_at_is_copied_apart_on_the_gpu_too(cp: Any) -> None:
    # The look for views passes over arrays past its first 256: one of them lay past the
    # copy of the span made for those it looked at, and CuPy, which checks no pointer
    # against its allocation, read (and a candidate wrote) another allocation's bytes.
    pool = cp.arange(1024, dtype=cp.float32)
    views = clone_value([pool[i : i + 2] for i in range(300)])
    views[0][1] = -1
    assert float(views[1][0]) == -1 and float(pool[1]) == 1
    assert [views[i].tolist() for i in (256, 299)] == [[256, 257], [299, 300]]


def test_launch_overhead_is_microseconds(client: CudaClient) -> None:
    assert 0 < client.launch_overhead < 1e-3


def test_the_instrument_says_the_fixed_cost_it_takes_off_each_sample(spin: Any) -> None:
    """A fresh client has taken nothing off yet; once it timed a call by a held replay it
    says the replay's fixed cost, microseconds (1.9-2.1 us on an H200), not tens."""
    fresh = CudaClient(cold_l2=False, timing="device")
    assert fresh.instrument() == {}
    fresh.time(spin(50), ())
    said = fresh.instrument()
    assert 0 < said["held_replay_ns"] <= said["held_replay_highest_ns"] < 20_000, said
    assert said["held_replay_measurements"] == 1, said


def test_a_fixed_cost_measured_high_once_is_not_taken_off_for_ever(
    monkeypatch: pytest.MonkeyPatch, spin: Any
) -> None:
    """A first measurement 7 us high (another process's work beside it) serves only until
    the next one: the least is taken off from then on."""
    fresh = CudaClient(cold_l2=False, timing="device")
    call = spin(25_000)  # about 50 us
    fresh.time(call, ())
    true = fresh.instrument()["held_replay_ns"] / 1e9
    readings = itertools.chain([true + 7e-6], itertools.repeat(true))
    monkeypatch.setattr(fresh._fixed_costs, "by_mode", {})
    monkeypatch.setattr(fresh._fixed_costs, "replay_fixed_cost", lambda hold: next(readings))
    monkeypatch.setattr(cuda_fixed_cost, "FIXED_COST_REFRESH_S", 0.0)
    too_fast = fresh.time(call, ())  # 7 us too much taken off
    right = fresh.time(call, ())
    said = fresh.instrument()
    assert said["held_replay_ns"] == round(true * 1e9), said
    assert said["held_replay_highest_ns"] == round((true + 7e-6) * 1e9), said
    assert 4e-6 < right - too_fast < 10e-6, (too_fast, right)


@pytest.mark.parametrize("launches", [1, 2], ids=["one_launch", "two_launches"])
def test_timing_agrees_with_cuda_graph_replay(
    cp: Any, client: CudaClient, spin: Any, launches: int
) -> None:
    """A ~50 us call, alone or followed by a short second launch as a two-pass reduction
    does: the event-timed median within 3% of a graph replay (through the stream, each
    launch would cost about 0.75 us more than a graph node, 3% of this call)."""
    long, short = spin(25_000), spin(50)

    def call() -> None:
        long()
        for _ in range(launches - 1):
            short()

    hot = CudaClient(cold_l2=False, timing="device")
    ours = _median_time(hot, call)
    replay = graph_replay_seconds(call, (), ours)
    assert 20e-6 < replay < 500e-6, f"the call took {replay * 1e6:.1f} us"
    assert abs(ours / replay - 1) < 0.03, f"ours {ours * 1e6:.2f} us, graph {replay * 1e6:.2f} us"


def test_a_call_that_cannot_be_captured_is_timed_through_the_stream(
    cp: Any, client: CudaClient, spin: Any
) -> None:
    """A launch sent to the legacy stream by name fails the capture (the capture stream is
    a blocking one) instead of running outside the graph and reading as nothing."""
    kernel = cp.RawKernel(SPIN_SOURCE, "spin")
    out = cp.zeros(1, dtype=cp.float32)
    sms = cp.cuda.Device().attributes["MultiProcessorCount"]

    def on_the_legacy_stream() -> None:
        kernel((sms,), (128,), (out, np.int32(50_000)), stream=cp.cuda.Stream.null)

    hot = CudaClient(cold_l2=False, timing="device")
    ours = _median_time(hot, on_the_legacy_stream)
    replay = graph_replay_seconds(spin(50_000), (), ours)
    assert abs(ours / replay - 1) < 0.05, f"ours {ours * 1e6:.2f} us, graph {replay * 1e6:.2f} us"


def test_replays_never_write_into_memory_the_program_holds(cp: Any) -> None:
    """A candidate with a temporary and a new result: the blocks its captured call
    allocated stay the graph's, so emptying CuPy's pool and allocating again (which may
    reuse any address the pool gave back) never puts an array where a replay writes."""
    x = cp.ones(1 << 22, dtype=cp.float32)

    def twice_plus_one() -> Any:
        twice = x * 2
        return twice + 1

    hot = CudaClient(cold_l2=False)
    hot.time(twice_plus_one, ())
    cp.get_default_memory_pool().free_all_blocks()
    kept = [cp.full(1 << 22, 7.0, dtype=cp.float32) for _ in range(4)]
    for _ in range(5):
        hot.time(twice_plus_one, ())
    assert all(bool((k == 7.0).all()) for k in kept)


def test_a_call_on_other_inputs_is_captured_again(cp: Any) -> None:
    """A graph holds the arrays it was captured with: a call on other arrays (here four
    times larger) is captured anew, not timed on the old ones."""

    def total(x: Any) -> Any:
        return x.sum()

    hot = CudaClient(cold_l2=False, timing="device")
    small = cp.ones(1 << 24, dtype=cp.float32)
    large = cp.ones(1 << 26, dtype=cp.float32)
    small_time = statistics.median(hot.time(total, (small,)) for _ in range(9))
    large_time = statistics.median(hot.time(total, (large,)) for _ in range(9))
    assert large_time > 2.5 * small_time, (small_time, large_time)


def test_a_call_given_its_arrays_in_a_tuple_is_captured_and_replayed_on_them(cp: Any) -> None:
    """`affine(x, (w, b))`: a tuple of CuPy arrays is captured as the arrays alone are (it was
    timed through the stream), and each replay computes on the very arrays given."""

    def affine(x: Any, wb: tuple[Any, Any]) -> Any:
        out = x * wb[0]
        out += wb[1]
        return out

    hot = CudaClient(cold_l2=False, timing="device")
    x, w, b = (cp.full(1 << 20, v, dtype=cp.float32) for v in (2.0, 3.0, 1.0))
    hot.time(affine, (x, (w, b)))
    replays = [r for (fn, _), r in hot._replays.graphs.items() if fn is affine]
    assert len(replays) == 1 and not hot._replays.warmed_uncaptured(affine)
    b.fill(5.0)  # the graph reads the tuple's arrays where they lie
    replays[0].launch()
    cp.cuda.Device().synchronize()
    assert bool((replays[0].outputs == 11.0).all())


def test_launch_gaps_stay_out_of_the_timed_region(spin: Any) -> None:
    """Twenty short launches through the stream: with the stream held, the host's ~7 us per
    launch is not timed, so the sample is close to twenty times one launch; without it,
    far more."""
    short = spin(500)

    def twenty() -> None:
        for _ in range(20):
            short()

    held = CudaClient(cold_l2=False, graph_replay=False, timing="device")
    unheld = CudaClient(cold_l2=False, hold_stream=False, graph_replay=False, timing="device")
    held_time = _median_time(held, twenty)
    unheld_time = _median_time(unheld, twenty)
    assert held_time < 0.8 * unheld_time, (held_time, unheld_time)


def test_a_candidate_that_synchronizes_is_timed_without_a_deadlock(cp: Any, spin: Any) -> None:
    client = CudaClient()
    launch = spin(5_000)

    def synchronizing() -> None:
        launch()
        cp.cuda.get_current_stream().synchronize()

    started = time.perf_counter()
    first = client.time(synchronizing, ())
    later = client.time(synchronizing, ())
    assert time.perf_counter() - started < 5.0
    assert math.isfinite(first) and first > 0 and math.isfinite(later) and later > 0


def test_a_cold_l2_makes_a_cached_read_slower(cp: Any, client: CudaClient) -> None:  # device time
    """A sum over a quarter of the L2: cold it streams from HBM, hot it reads the L2."""
    x = cp.ones(client.l2_bytes // 4 // 4, dtype=cp.float32)

    def read() -> None:
        x.sum()

    cold = CudaClient(timing="device")
    hot = CudaClient(cold_l2=False, timing="device")
    cold_time = _median_time(cold, read, 31)
    hot_time = _median_time(hot, read, 31)
    assert cold_time > 1.1 * hot_time, (cold_time, hot_time)


def test_a_candidate_out_of_memory_fails_alone_and_frees_the_pool(
    cp: Any, client: CudaClient
) -> None:
    total = client.fingerprint()["memory_bytes"]
    pool = cp.get_default_memory_pool()
    gc.collect()  # what earlier tests let go is not this candidate's to free
    pool.free_all_blocks()

    def hog(x: Any) -> Any:
        held = cp.empty(1 << 30, dtype=cp.uint8)  # alive in this frame when the next fails
        too_much = cp.empty(2 * total, dtype=cp.uint8)
        return held, too_much

    def double(x: Any) -> Any:
        return x * 2

    tunables = TunableSet.of(lambda x: x.size, {"hog": hog, "double": double})
    tuner = Tuner("gpu-oom", client.device_id, AutotuneConfig(disable_cache=True))
    x = cp.ones(1 << 20, dtype=cp.float32)
    decision = tuner.tune(x.size, tunables, (x,), client)
    assert decision.fastest_name == "double"
    failure = decision.results[0]
    assert isinstance(failure, AutotuneError) and "OutOfMemoryError" in failure.message
    assert pool.total_bytes() < 1 << 30


@pytest.mark.parametrize(
    ("module", "name", "status", "other"),
    [  # each library's allocation failure, and another of its errors (an invalid value)
        ("cupy_backends.cuda.api.driver", "CUDADriverError", 2, 1),
        ("cupy_backends.cuda.libs.cublas", "CUBLASError", 3, 7),
        ("cupy_backends.cuda.libs.cusolver", "CUSOLVERError", 2, 3),
        ("cupy_backends.cuda.libs.cusparse", "CuSparseError", 2, 3),
        ("cupy_backends.cuda.libs.curand", "CURANDError", 102, 104),
        ("cupy.cuda.cufft", "CuFFTError", 2, 4),
    ],
)
def test_the_libraries_allocation_failures_of_this_cupy_are_out_of_memory(
    cp: Any, client: CudaClient, module: str, name: str, status: int, other: int
) -> None:
    # The library errors read as out of memory (1eaa560 added cuSPARSE's and cuRAND's) are
    # looked up by module, class and attribute name: checked here against the CuPy
    # installed, with its own error classes, not stand-ins of them.
    kind = getattr(importlib.import_module(module), name)
    assert client.out_of_memory(kind(status))
    assert not client.out_of_memory(kind(other))


def test_the_collector_stays_off_until_the_last_of_two_threads_timing_is_done(
    cp: Any,
) -> None:
    # Two clients timing on two threads (2f07baa): the first to start and the first to
    # finish turned the collector back on while the other was still timing, where a
    # finalizer's cudaFree fails a capture. Ordered by events, not by time.
    b_in, a_in, b_done = threading.Event(), threading.Event(), threading.Event()
    seen: list[bool] = []

    def first_b() -> None:
        if not b_in.is_set():
            b_in.set()
            assert a_in.wait(30)

    def then_a() -> None:
        if not a_in.is_set():
            a_in.set()
            assert b_done.wait(30)
            seen.append(gc.isenabled())

    def time_b() -> None:
        try:
            CudaClient(cold_l2=False, timing="device").time(first_b, ())
        finally:
            b_done.set()

    assert gc.isenabled()
    other = threading.Thread(target=time_b)
    other.start()
    try:
        assert b_in.wait(30)
        CudaClient(cold_l2=False, timing="device").time(then_a, ())
    finally:
        a_in.set()
        other.join(30)
    assert seen == [False]
    assert gc.isenabled()


def test_a_call_that_needs_the_memory_of_graphs_kept_before_it_is_timed(cp: Any) -> None:
    # The graphs kept for earlier calls hold what those calls returned: a call that needs
    # that memory failed as out of memory, as if it could not fit on the device.
    free = cp.cuda.runtime.memGetInfo()[0]
    client = CudaClient(cold_l2=False, timing="device")

    def earlier() -> Any:
        return cp.empty(int(0.4 * free), dtype=cp.uint8)

    def big() -> Any:
        return cp.empty(int(0.7 * free), dtype=cp.uint8)

    try:
        client.time(earlier, ())
        assert client.time(big, ()) > 0
    finally:
        del client
        gc.collect()
        cp.get_default_memory_pool().free_all_blocks()


def test_a_graph_pushed_out_of_the_cache_gives_its_memory_back_to_the_device(cp: Any) -> None:
    # A dropped CuPy pool keeps its blocks: each graph let go leaked what its call returned.
    client = CudaClient(cold_l2=False, timing="device")
    size = 4 << 30
    free = cp.cuda.runtime.memGetInfo()[0]
    client.time(lambda: cp.empty(size, dtype=cp.uint8), ())
    assert cp.cuda.runtime.memGetInfo()[0] < free - size // 2  # kept with its graph
    x = cp.zeros(1, dtype=cp.float32)
    for _ in range(REPLAY_CACHE_SIZE):
        client.time(lambda: x.fill(1.0), ())
    assert cp.cuda.runtime.memGetInfo()[0] > free - size // 2


def test_a_client_let_go_gives_its_graphs_memory_back_to_the_device(cp: Any) -> None:
    free = cp.cuda.runtime.memGetInfo()[0]
    client = CudaClient(cold_l2=False, timing="device")
    client.time(lambda: cp.empty(4 << 30, dtype=cp.uint8), ())
    assert cp.cuda.runtime.memGetInfo()[0] < free - (2 << 30)  # kept with its graph
    del client
    gc.collect()
    assert cp.cuda.runtime.memGetInfo()[0] > free - (2 << 30)


def test_caller_timing_reads_what_a_back_to_back_eager_loop_pays(cp: Any) -> None:
    """A row layernorm of 2048x1024 fp32 as seven CuPy kernels: its device work takes far
    less than Python takes to enqueue it, so a caller calling it back to back pays the
    enqueue time. The default timing reads that; device timing reads the device work."""
    x = cp.random.random((2048, 1024), dtype=cp.float32)

    def layernorm() -> Any:
        mean = x.mean(axis=1, keepdims=True)
        centred = x - mean
        var = (centred * centred).mean(axis=1, keepdims=True)
        return centred * cp.reciprocal(cp.sqrt(var + 1e-5))

    def eager_loop() -> float:
        layernorm()
        cp.cuda.Device().synchronize()
        loops = 200
        started = time.perf_counter()
        for _ in range(loops):
            layernorm()
        cp.cuda.Device().synchronize()
        return (time.perf_counter() - started) / loops

    # The H200 hosts have slow spells (every launch loop 1.4-1.7x slower for tens of
    # milliseconds to seconds): the caller's samples are judged against loops timed just
    # before and just after them, one of which shares their host's speed.
    before = eager_loop()
    caller = _median_time(CudaClient(), layernorm, 15)
    after = eager_loop()
    device = _median_time(CudaClient(timing="device"), layernorm, 15)
    eager = (before, after)
    assert device < 0.8 * min(eager), (device, eager)
    assert 0.7 * min(eager) < caller < 1.3 * max(eager), (caller, eager)


@pytest.mark.xfail(
    strict=False,
    reason="the L2 probe is not yet reliable: on one H200 of three (2026-11-30) it read"
    " 4.57 TB/s against HBM's 4.63; a problem's roof is never below HBM's all the same",
)
def test_the_peaks_hold_an_l2_level_faster_than_hbm(client: CudaClient) -> None:
    peaks = client.peaks()
    assert [level.name for level in peaks.levels] == ["L2"]
    assert peaks.levels[0].capacity == client.l2_bytes
    assert peaks.levels[0].peak > peaks.memory_peak
    assert peaks.memory_roof(client.l2_bytes // 2).level == "L2"
    assert peaks.memory_roof(4 * client.l2_bytes).level == "HBM"


def counted_spin(cp: Any, iters: int, allocates: bool) -> tuple[Callable[[], Any], Any]:
    """A spin of `iters` that counts its runs on the device in the array it returns beside
    it; one that `allocates` makes a new 64 MiB output each call. Compiled and run once
    here, its count then reset."""
    kernel = cp.RawKernel(COUNTED_SOURCE, "spin_counted")
    runs = cp.zeros(1, dtype=cp.uint32)
    kept = cp.zeros(1, dtype=cp.float32)
    sms = cp.cuda.Device().attributes["MultiProcessorCount"]

    def call() -> Any:
        out = cp.empty(1 << 24, dtype=cp.float32) if allocates else kept
        kernel((sms,), (128,), (out, np.int32(iters), runs))
        return out

    call()
    cp.cuda.Device().synchronize()
    runs.fill(0)
    return call, runs


@pytest.mark.parametrize("allocates", [False, True], ids=["in-place", "allocating"])
def test_a_long_calls_first_timing_is_one_run_as_fast_as_its_replays(
    cp: Any, allocates: bool
) -> None:
    """A ~5 ms call: its first timing is the capture's warm-up itself, held, so the device
    ran it once, and it reads as its replays do. One that allocates its output in the
    capture's fresh pool (a cudaMalloc while the warm-up's hold spins) is no different."""
    call, runs = counted_spin(cp, LONG_SPIN, allocates)
    hot = CudaClient(cold_l2=False, timing="device")
    first = hot.time(call, ())
    assert int(runs.get()[0]) == 1
    later = statistics.median(hot.time(call, ()) for _ in range(5))
    assert later >= LONG_CALL_S, f"the call took {later * 1e3:.2f} ms"
    assert abs(first / later - 1) < 0.05, f"first {first * 1e3:.3f} ms, later {later * 1e3:.3f} ms"


def test_a_hopeless_long_candidate_tuned_first_runs_once(cp: Any, spin: Any) -> None:
    """The sum family's shape: a ~5 ms candidate first, with no leader yet, then two of
    50-60 us. It runs once (its held warm-up is its sample) and is cut after the first pass."""
    slow, runs = counted_spin(cp, LONG_SPIN, allocates=False)
    fast, close = spin(25_000), spin(30_000)
    for fn in (fast, close):
        fn()
    cp.cuda.Device().synchronize()
    tunables = TunableSet.of(lambda: "k", {"slow": slow, "fast": fast, "close": close})
    client = CudaClient(cold_l2=False)
    tuner = Tuner("gpu-hopeless", client.device_id, AutotuneConfig(disable_cache=True))
    decision = tuner.tune("k", tunables, (), client)
    assert decision.fastest_name == "fast"
    assert int(runs.get()[0]) == 1


def test_the_gates_placements_put_the_inputs_and_the_calls_outputs_at_every_offset(
    cp: Any,
) -> None:
    """On real CuPy memory: each placement's input copy and every array its call allocates
    lie at the placement's offset modulo `PLACEMENT_PERIOD`, the eight offsets once each,
    whatever the pool's blocks were (a 512-byte block kept alive shifts them)."""
    keep = cp.empty(128, dtype=cp.float32)  # a history: the pool's next block moves by 512 B
    x = cp.arange(1000, dtype=cp.float32)
    seen: list[tuple[int, int]] = []

    def call(v: Any) -> Any:
        out = v * 2
        seen.append((v.data.ptr % PLACEMENT_PERIOD, out.data.ptr % PLACEMENT_PERIOD))
        return out

    client = CudaClient(timing="device")
    sample = client.placed_sampler(call, (x,))
    offsets = list(range(0, PLACEMENT_PERIOD, PLACEMENT_STEP))
    # Each placement's warm-up, then its capture (what the replays write to).
    assert seen[::2] == [(o, o) for o in offsets]
    assert seen[1::2] == [(o, o) for o in offsets]
    assert math.isfinite(sample()) and keep.size == 128


def test_the_gates_placements_leave_views_of_one_allocation_where_the_caller_has_them(
    cp: Any,
) -> None:
    # `op(cache, cache[:, :2])` copied apart to each placement no longer read what it wrote.
    cache = cp.zeros((64, 256), dtype=cp.float32)
    slot = cache[:, :32]
    seen: set[tuple[int, int]] = set()

    def call(whole: Any, part: Any) -> None:
        seen.add((whole.data.ptr, part.data.ptr))
        part += 1

    client = CudaClient(timing="device")
    sample = client.placed_sampler(call, (cache, slot))
    assert math.isfinite(sample()) and seen == {(cache.data.ptr, slot.data.ptr)}
