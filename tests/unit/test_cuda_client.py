"""The CUDA client where there is no CUDA: the package imports, `cuda()` says why not, and
against a fake CuPy, how a sample is taken (graph replay, its fallbacks, out of memory)."""

from __future__ import annotations

import contextlib
import ctypes
import functools
import gc
import importlib
import itertools
import subprocess
import sys
import threading
import weakref
from collections.abc import Callable, Iterator
from types import SimpleNamespace
from typing import Any

import pytest

from pytest_autotune import AutotuneOutcome, TunableSet, Tuner
from pytest_autotune.backends import (
    CudaClient,
    CudaUnavailableError,
    cuda,
    cuda_graphs,
    cuda_timing,
)
from pytest_autotune.backends.cuda import device_id_from, probe_cuda_peaks
from pytest_autotune.backends.cuda_collector import collector_paused
from pytest_autotune.backends.cuda_device import device_uuid
from pytest_autotune.backends.cuda_fixed_cost import REPLAY_CALIBRATION_NODES
from pytest_autotune.backends.cuda_graphs import (
    PLACEMENT_PERIOD,
    PLACEMENT_STEP,
    PLACEMENTS,
    REPLAY_CACHE_SIZE,
)
from pytest_autotune.backends.cuda_sampler import HOLD_TIMEOUT_S, RETRY_HOLD_S, WARM_UP_HOLD_S
from pytest_autotune.backends.cuda_timing import (
    EAGER_BUDGET_S,
    EAGER_CALLS,
    EAGER_LEAD,
    EAGER_MIN_CALLS,
    TIE,
    loop_seconds,
)
from pytest_autotune.backends.peaks import Peaks
from pytest_autotune.time_limit import TimeLimit
from pytest_autotune.tune.decision import TuneDecision
from pytest_autotune.tune.log import Eliminated

cuda_module = importlib.import_module("pytest_autotune.backends.cuda_client")
fixed_cost_module = importlib.import_module("pytest_autotune.backends.cuda_fixed_cost")


def test_importing_the_package_and_the_examples_imports_no_cupy() -> None:
    code = (
        "import sys, pytest_autotune, pytest_autotune.backends\n"
        "import example_kernels.saxpy, example_kernels.sum, example_kernels.transpose\n"
        "import example_kernels.softmax, example_kernels.matmul\n"
        "assert 'cupy' not in sys.modules, 'cupy was imported'\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_cuda_without_cupy_names_the_extra_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "cupy", None)  # makes `import cupy` raise ImportError
    with pytest.raises(CudaUnavailableError, match=r"pytest-autotune\[cuda12\].*\[cuda13\]"):
        cuda(cold_l2=False)


def test_cupy_that_cannot_compile_a_kernel_is_cuda_unavailable(gpu: FakeGpu) -> None:
    # CuPy imported and found the GPU, but NVRTC was missing (or the driver older than the
    # toolkit): the client's own kernels failed with a traceback of CuPy's compiler, where
    # `auto` falls back to the CPU on CudaUnavailableError and the user is told why.
    def no_nvrtc(name: str) -> None:
        raise RuntimeError("CuPy failed to load libnvrtc.so.13")

    gpu.module.RawModule = lambda code: SimpleNamespace(get_function=no_nvrtc)
    with pytest.raises(CudaUnavailableError, match=r"cannot compile.*libnvrtc.*cuda13"):
        CudaClient(cold_l2=False)


@pytest.mark.parametrize(
    ("name", "device_id"),
    [
        ("NVIDIA H200", "cuda-nvidia-h200"),
        ("NVIDIA H100 80GB HBM3", "cuda-nvidia-h100-80gb-hbm3"),
        ("Tesla V100-SXM2-16GB", "cuda-tesla-v100-sxm2-16gb"),
        ("", "cuda-unknown"),
    ],
)
def test_device_id_is_the_lowercased_model_name(name: str, device_id: str) -> None:
    assert device_id_from(name) == device_id


UUID = bytes.fromhex("7b00cec7be48c44ae7180e21354efbe7")


class FakeDriver:
    """libcuda's three calls `_driver_uuid` makes, for device 0 only."""

    def cuInit(self, flags: int) -> int:
        return 0

    def cuDeviceGet(self, handle: Any, ordinal: int) -> int:
        return 0 if ordinal == 0 else 101  # CUDA_ERROR_INVALID_DEVICE

    def cuDeviceGetUuid_v2(self, raw: Any, handle: Any) -> int:
        ctypes.memmove(raw, UUID, 16)
        return 0


def test_a_uuid_the_runtime_cut_short_is_read_from_the_driver(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # CuPy 14 gave the runtime's 16 bytes as a C string, b"{" (cut at the first zero byte):
    # every GPU's uuid read None, in the records and in the two-GPU test's comparison.
    assert device_uuid(UUID) == "GPU-7b00cec7-be48-c44a-e718-0e21354efbe7"
    monkeypatch.setattr(ctypes, "CDLL", lambda name: FakeDriver())
    assert device_uuid(b"{", 0) == "GPU-7b00cec7-be48-c44a-e718-0e21354efbe7"
    assert device_uuid(b"{", 1) is None
    assert device_uuid(b"{") is None

    def missing(name: str) -> None:
        raise OSError(f"{name}: cannot open shared object file")

    monkeypatch.setattr(ctypes, "CDLL", missing)
    assert device_uuid(b"{", 0) is None


# A stand-in for CuPy, enough for a `CudaClient` to time calls on: one device clock that
# only device work moves, so every sample is exact. An event record costs EVENT; a kernel
# launched through a stream costs STREAM_LAUNCH more than its own time, one replayed from a
# graph NODE more, and a graph's launch GRAPH_LAUNCH once.

EVENT, STREAM_LAUNCH, NODE, GRAPH_LAUNCH = 1.25e-6, 1.5e-6, 0.75e-6, 0.5e-6
CAPTURE_UNSUPPORTED, CAPTURE_INVALIDATED, CAPTURE_IMPLICIT = 900, 901, 906  # cudaError_t


class FakeRuntimeError(RuntimeError):
    def __init__(self, status: int) -> None:
        super().__init__(f"cudaError {status}")
        self.status = status


class FakeOutOfMemoryError(MemoryError):
    pass


class FakeBlock:
    """Device memory from a pool: its address, and the pool it came from."""

    def __init__(self, pool: FakePool, ptr: int) -> None:
        self.pool, self.ptr = pool, ptr

    def __add__(self, offset: int) -> FakeBlock:
        return FakeBlock(self.pool, self.ptr + offset)


class FakePool:
    def __init__(self, gpu: FakeGpu) -> None:
        self.gpu = gpu
        self.emptied = 0
        self.blocks: dict[int, FakeBlock] = {}  # one block per size, reused as CuPy's pool does

    def malloc(self, nbytes: int) -> FakeBlock:
        if nbytes > self.gpu.free_bytes:
            raise FakeOutOfMemoryError(f"out of memory allocating {nbytes} bytes")
        if nbytes not in self.blocks:
            # Blocks at multiples of 512 bytes, as CuPy's pool hands them out, not of 2 KiB.
            self.blocks[nbytes] = FakeBlock(self, (1 << 20) * next(_COPIES) + 512)
        return self.blocks[nbytes]

    def free_all_blocks(self) -> None:
        self.emptied += 1


class FakeArray:
    def __init__(
        self,
        ptr: int,
        shape: tuple[int, ...] = (4,),
        gpu: FakeGpu | None = None,
        device: int = 0,
        contiguous: bool = True,
    ) -> None:
        self.data = FakeMemory(self, ptr)
        self.device = SimpleNamespace(id=device)
        self.shape, self.strides, self.dtype = shape, (4,), SimpleNamespace(str="<f4")
        self.itemsize = 4
        self.flags = SimpleNamespace(c_contiguous=contiguous, f_contiguous=False)
        self.nbytes = 4 * shape[0]
        self.size = shape[0]
        self.gpu = gpu
        self.orders: list[str] = []  # the order of each copy made of it, by either way
        self.copied_by: list[str] = []  # "kernel" (CuPy's copy) or "memcpy", per copy made
        self.copied_from: FakeArray | None = None

    def copy(self, order: str = "C") -> FakeArray:
        """A copy by CuPy's copy kernel, from the current allocator where the array knows
        its GPU, else at an address no other array of the test has; `orders` keeps each
        copy's `order`, as CuPy's `ndarray.copy(order="C")` takes it."""
        self.orders.append(order)
        self.copied_by.append("kernel")
        return self._like()

    def _like(self) -> FakeArray:
        if self.gpu is not None:
            return FakeArray(self.gpu.allocate(self.nbytes).ptr, self.shape, self.gpu)
        return FakeArray(self.data.ptr + (1 << 20) * next(_COPIES), self.shape)


class FakeMemory:
    """An array's `data`: its address, and the memcpy CuPy's `MemoryPointer` makes."""

    def __init__(self, owner: FakeArray, ptr: int) -> None:
        self.owner, self.ptr = owner, ptr
        self.mem = SimpleNamespace(ptr=ptr)  # the allocation: its own, unless a test shares one

    def copy_from_device_async(self, source: FakeMemory, nbytes: int) -> None:
        assert nbytes == source.owner.nbytes
        self.owner.copied_from = source.owner
        source.owner.copied_by.append("memcpy")


def empty_like(value: FakeArray, order: str = "K") -> FakeArray:
    """`cupy.empty_like`, from the current allocator as `FakeArray.copy`."""
    value.orders.append(order)
    return value._like()


_COPIES = itertools.count(1)


class FakeEvent:
    def __init__(self, gpu: FakeGpu) -> None:
        self.gpu, self.at = gpu, 0.0

    def record(self, stream: object = None) -> None:
        self.gpu.clock += EVENT
        self.at = self.gpu.clock

    def synchronize(self) -> None:
        pass


class FakeGraph:
    def __init__(self, gpu: FakeGpu, nodes: list[float]) -> None:
        self.gpu, self.nodes = gpu, nodes

    def launch(self, stream: object = None) -> None:
        self.gpu.replays += 1
        self.gpu.ran.extend(self.nodes)
        self.gpu.clock += GRAPH_LAUNCH + sum(NODE + seconds for seconds in self.nodes)


class FakeStream:
    def __init__(self, gpu: FakeGpu, non_blocking: bool = False) -> None:
        self.gpu = gpu
        self.non_blocking = non_blocking
        self.nodes: list[float] | None = None  # a list while capturing
        self.invalidated = False
        self.ptr = id(self)

    def __enter__(self) -> None:
        self.gpu.current.append(self)

    def __exit__(self, *exc: object) -> None:
        self.gpu.current.pop()

    def begin_capture(self, mode: int | None = None) -> None:
        self.nodes, self.invalidated = [], False
        self.gpu.captures += 1

    def end_capture(self) -> FakeGraph:
        nodes, self.nodes = self.nodes, None
        if self.invalidated or nodes is None:
            raise FakeRuntimeError(CAPTURE_INVALIDATED)
        return FakeGraph(self.gpu, nodes)

    def synchronize(self) -> None:
        self.gpu.synchronize(self)

    def wait_event(self, event: FakeEvent) -> None:
        pass

    def record(self) -> FakeEvent:
        event = FakeEvent(self.gpu)
        event.record(self)
        return event


class FakeGpu:
    """The device behind the fake CuPy module (`module`)."""

    def __init__(self) -> None:
        self.clock = 0.0
        self.captures = 0
        self.replays = 0
        self.ran: list[float] = []  # the seconds of each kernel run, eagerly or replayed
        self.holds = 0
        self.hold_timeouts: list[float] = []  # the seconds each hold waits at most
        self.free_bytes = 1 << 30
        self.legacy = FakeStream(self)
        self.current = [self.legacy]
        self.default_pool = FakePool(self)
        self.allocators: list[Callable[[int], FakeBlock]] = []
        self.flag_memory = (ctypes.c_int32 * 2)()
        self.held_flag: Any = None
        self.freed_host: list[int] = []  # the pinned host allocations given back
        runtime = SimpleNamespace(
            CUDARuntimeError=FakeRuntimeError,
            getDeviceCount=lambda: 1,
            getDevice=lambda: 0,
            getDeviceProperties=lambda device: {"name": b"Fake GPU", "totalGlobalMem": 1 << 34},
            hostAlloc=lambda nbytes, flags: ctypes.addressof(self.flag_memory),
            freeHost=self.free_host,
            hostAllocMapped=2,
        )
        self.module = SimpleNamespace(
            ndarray=FakeArray,
            empty_like=empty_like,
            uint64=int,
            int64=int,
            RawModule=lambda code: SimpleNamespace(get_function=self.kernel),
            get_default_memory_pool=lambda: self.default_pool,
            cuda=SimpleNamespace(
                runtime=runtime,
                memory=SimpleNamespace(OutOfMemoryError=FakeOutOfMemoryError),
                Device=lambda index=0: FakeDevice(self),
                Event=lambda: FakeEvent(self),
                Stream=lambda non_blocking=False: FakeStream(self, non_blocking),
                MemoryPool=lambda: FakePool(self),
                using_allocator=self.using_allocator,
                get_current_stream=self.stream,
                get_elapsed_time=lambda start, stop: (stop.at - start.at) * 1e3,
            ),
        )

    def stream(self) -> FakeStream:
        return self.current[-1]

    def kernel(self, name: str) -> Callable[..., None]:
        def launch(grid: object, block: object, args: tuple[Any, ...]) -> None:
            if name == "autotune_hold":
                self.holds += 1
                self.hold_timeouts.append(args[1] / 1e9)
                self.held_flag = (ctypes.c_int32 * 2).from_address(args[0])
            else:
                self.launch(0.0)

        return launch

    def launch(self, seconds: float, stream: FakeStream | None = None) -> None:
        """A kernel of `seconds`, on `stream` or the current one."""
        stream = stream or self.stream()
        capturing = self.stream()
        if capturing.nodes is not None and stream is not capturing and not capturing.non_blocking:
            # Work sent to the legacy stream while a blocking stream captures, from any
            # thread; beside a non-blocking one it runs as usual, outside the graph.
            capturing.invalidated = True
            raise FakeRuntimeError(CAPTURE_IMPLICIT)
        if stream.nodes is not None:
            stream.nodes.append(seconds)
        else:
            self.ran.append(seconds)
            self.clock += STREAM_LAUNCH + seconds

    def synchronize(self, stream: FakeStream) -> None:
        if stream.nodes is not None:
            stream.invalidated = True
            raise FakeRuntimeError(CAPTURE_UNSUPPORTED)
        if self.held_flag is not None and self.held_flag[0] == 0:
            self.held_flag[1] = 1  # the host waited on the held stream until the hold gave up

    def free_host(self, ptr: int) -> None:
        """cudaFreeHost, which synchronizes the device: in a capture of this thread it
        fails, and fails the capture (cudaErrorStreamCaptureUnsupported); behind a hold it
        waits until the hold gives up."""
        self.synchronize(self.stream())
        self.freed_host.append(ptr)

    def allocate(self, nbytes: int) -> FakeBlock:
        """An allocation of a candidate, from the current allocator."""
        malloc = self.allocators[-1] if self.allocators else self.default_pool.malloc
        return malloc(nbytes)

    @contextlib.contextmanager
    def using_allocator(self, malloc: Callable[[int], FakeBlock]) -> Iterator[None]:
        self.allocators.append(malloc)
        try:
            yield
        finally:
            self.allocators.pop()


class FakeDevice:
    def __init__(self, gpu: FakeGpu) -> None:
        self.gpu = gpu
        self.attributes = {"L2CacheSize": 0, "UnifiedAddressing": 1, "MultiProcessorCount": 4}

    def synchronize(self) -> None:
        self.gpu.synchronize(self.gpu.stream())

    def __enter__(self) -> None:
        pass

    def __exit__(self, *exc: object) -> None:
        pass


@pytest.fixture
def gpu(monkeypatch: pytest.MonkeyPatch) -> FakeGpu:
    fake = FakeGpu()
    monkeypatch.setitem(sys.modules, "cupy", fake.module)
    # The host takes no time to enqueue unless a test's clock says so: samples stay exact.
    # Nor does the monotonic clock move: the fixed cost is measured once, unless a test's
    # clock moves it (`FIXED_COST_REFRESH_S`).
    monkeypatch.setattr(cuda_module, "time", SimpleNamespace(perf_counter_ns=lambda: 0))
    monkeypatch.setattr(fixed_cost_module, "time", SimpleNamespace(monotonic=lambda: 0.0))
    return fake


def kernels(gpu: FakeGpu, *seconds: float) -> Callable[[], None]:
    def call() -> None:
        for s in seconds:
            gpu.launch(s)

    return call


def test_a_call_that_can_be_captured_is_timed_by_one_replay_of_its_graph(gpu: FakeGpu) -> None:
    calls = []

    def two_kernels() -> None:
        calls.append(1)
        kernels(gpu, 10e-6, 2e-6)()

    client = CudaClient(cold_l2=False, timing="device")
    times = [client.time(two_kernels, ()) for _ in range(5)]
    # The event pair and the graph's launch are the instrument's; each node is the call's.
    assert times == pytest.approx([2 * NODE + 12e-6] * 5)
    assert len(calls) == 2  # one warm-up, one captured; the samples replay the graph
    assert gpu.captures == 1 + len(REPLAY_CALIBRATION_NODES)


def test_the_fixed_cost_is_measured_again_once_stale_and_the_least_is_taken_off(
    gpu: FakeGpu, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every `FIXED_COST_REFRESH_S` a sample measures the fixed cost again, on the empty
    graphs captured the first time; a measurement read high (here: the event pair 5 us
    slower while it was taken) is replaced by a lower one and never taken off again."""
    now = [0.0]
    monkeypatch.setattr(fixed_cost_module, "time", SimpleNamespace(monotonic=lambda: now[0]))
    client = CudaClient(cold_l2=False, timing="device")
    call = kernels(gpu, 10e-6)
    client.time(call, ())
    right = client.instrument()
    assert right["held_replay_measurements"] == 1
    captures = gpu.captures

    real_sample = client._sampler.sample

    def slow_events(*args: Any, **kwargs: Any) -> float:
        return real_sample(*args, **kwargs) + 5e-6

    monkeypatch.setattr(client._sampler, "sample", slow_events)
    now[0] = fixed_cost_module.FIXED_COST_REFRESH_S
    client.time(call, ())  # measured again, 5 us high: the earlier, lower one stays
    monkeypatch.setattr(client._sampler, "sample", real_sample)
    now[0] += 1.0
    assert client.time(call, ()) == pytest.approx(NODE + 10e-6)  # not stale yet: no measuring
    said = client.instrument()
    assert said["held_replay_ns"] == right["held_replay_ns"]
    assert said["held_replay_highest_ns"] == pytest.approx(right["held_replay_ns"] + 5000, abs=1)
    assert said["held_replay_measurements"] == 2
    assert gpu.captures == captures  # the empty graphs were captured once


def test_the_fixed_cost_taken_off_moves_only_for_a_reading_clearly_lower(
    gpu: FakeGpu, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A first reading 5 us high is replaced by the next; after it, readings 0.1 us lower
    (noise: the least of many would drift down with a session's length) are not."""
    now = [0.0]
    monkeypatch.setattr(fixed_cost_module, "time", SimpleNamespace(monotonic=lambda: now[0]))
    client = CudaClient(cold_l2=False, timing="device")
    readings = iter([7e-6, 2e-6, 1.9e-6, 1.8e-6, 1.9e-6])
    monkeypatch.setattr(client._fixed_costs, "replay_fixed_cost", lambda hold: next(readings))
    call = kernels(gpu, 50e-6)
    taken_off = []
    for _ in range(5):
        client.time(call, ())
        taken_off.append(client.instrument()["held_replay_ns"])
        now[0] += fixed_cost_module.FIXED_COST_REFRESH_S
    assert taken_off == [7000, 2000, 2000, 2000, 2000]


def test_measuring_the_fixed_cost_again_keeps_a_stream_timed_calls_enqueue_time(
    gpu: FakeGpu, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A call timed through the stream is scored by its own host enqueue time where that is
    longer than its device time, also on the samples that measure the fixed cost again
    (whose empty calls are sampled after it, and enqueue in no time)."""
    now = [0.0]
    monkeypatch.setattr(fixed_cost_module, "time", SimpleNamespace(monotonic=lambda: now[0]))
    clock = HostClock()

    def launch_bound() -> None:  # 2 us on the device, 20 us for Python to enqueue
        clock.ns += 20_000
        gpu.launch(2e-6)

    client = CudaClient(cold_l2=False, graph_replay=False, host_timer=clock)
    times = []
    for _ in range(6):
        times.append(client.time(launch_bound, ()))
        now[0] += fixed_cost_module.FIXED_COST_REFRESH_S  # every sample measures it again
    assert times == pytest.approx([20e-6] * 6)
    cost = client.call_costs(launch_bound)
    assert cost is not None and cost.enqueue == pytest.approx(20e-6)


def test_a_failed_capture_of_the_empty_graphs_is_tried_again_whole(
    gpu: FakeGpu, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Where the second empty graph could not be captured, the next measurement captures
    both again, rather than sampling the first alone."""
    client = CudaClient(cold_l2=False, timing="device")
    real_capture = client._replays.capture
    fail = [True]

    def capture(fn: Any, *args: Any, **kwargs: Any) -> Any:
        if fail[0] and getattr(fn, "args", (None, 0))[1:] == (32,):
            return None, None
        return real_capture(fn, *args, **kwargs)

    monkeypatch.setattr(client._replays, "capture", capture)
    with pytest.raises(RuntimeError, match="graph of empty kernels could not be captured"):
        client._fixed_costs.replay_fixed_cost(True)
    fail[0] = False
    assert client._fixed_costs.replay_fixed_cost(True) == pytest.approx(
        CudaClient(cold_l2=False, timing="device")._fixed_costs.replay_fixed_cost(True)
    )


def test_without_graph_replay_each_launch_costs_what_a_stream_launch_costs(gpu: FakeGpu) -> None:
    client = CudaClient(cold_l2=False, graph_replay=False)
    assert client.time(kernels(gpu, 10e-6, 2e-6), ()) == pytest.approx(2 * STREAM_LAUNCH + 12e-6)
    assert gpu.captures == 0


def test_a_call_that_fails_its_capture_is_timed_through_the_stream_from_then_on(
    gpu: FakeGpu,
) -> None:
    def on_the_legacy_stream() -> None:
        gpu.launch(10e-6, stream=gpu.legacy)

    client = CudaClient(cold_l2=False)
    times = [client.time(on_the_legacy_stream, ()) for _ in range(3)]
    assert times == pytest.approx([STREAM_LAUNCH + 10e-6] * 3)
    assert gpu.captures == 1  # tried once, then remembered


def test_beside_another_thread_a_call_is_captured_on_a_non_blocking_stream(gpu: FakeGpu) -> None:
    # While a blocking stream captures, CUDA fails every use of the legacy stream from any
    # thread: a program's other thread doing plain CuPy work raised
    # cudaErrorStreamCaptureImplicit while a LocalTuner tuned (and failed the capture).
    # Here the call's own launch on the legacy stream stands for that thread's.
    def beside() -> None:
        gpu.launch(10e-6)
        gpu.launch(3e-6, stream=gpu.legacy)

    client = CudaClient(cold_l2=False, timing="device")
    other = threading.Event()
    thread = threading.Thread(target=other.wait)
    thread.start()
    try:
        times = [client.time(beside, ()) for _ in range(3)]
    finally:
        other.set()
        thread.join()
    assert client._replays.graphs, "captured, not timed through the stream"
    assert times == pytest.approx([NODE + 10e-6] * 3)  # the legacy work ran outside the graph

    # Alone, the program's capture stream is the client's blocking one again: the call's
    # legacy work fails its capture, and it is timed through the stream.
    def alone() -> None:
        beside()

    assert client.time(alone, ()) == pytest.approx(2 * STREAM_LAUNCH + 13e-6)
    assert alone not in [fn for fn, _ in client._replays.graphs]


def test_the_time_limits_own_thread_leaves_the_capture_on_the_blocking_stream(
    gpu: FakeGpu,
) -> None:
    # Under --autotune every candidate call runs inside `TimeLimit.armed()`, whose watchdog
    # thread touches no device: counted as the program's, it put every capture of a tuning
    # run on the non-blocking stream, where a call's legacy work ran outside its graph,
    # untimed, and the call read as faster than it is.
    def legacy() -> None:
        gpu.launch(10e-6)
        gpu.launch(3e-6, stream=gpu.legacy)

    client = CudaClient(cold_l2=False, timing="device")
    with TimeLimit(60).armed():
        assert threading.active_count() > 1  # the watchdog runs
        timed = client.time(legacy, ())
    assert timed == pytest.approx(2 * STREAM_LAUNCH + 13e-6)
    assert legacy not in [fn for fn, _ in client._replays.graphs]


def test_an_error_of_the_candidate_is_raised_not_taken_for_a_capture_failure(
    gpu: FakeGpu,
) -> None:
    def broken() -> None:
        raise ValueError("wrong shape")

    client = CudaClient(cold_l2=False)
    for _ in range(2):
        with pytest.raises(ValueError, match="wrong shape"):
            client.time(broken, ())
    assert gpu.captures == 0


def test_a_call_on_other_arrays_is_captured_again_and_on_the_same_arrays_is_not(
    gpu: FakeGpu,
) -> None:
    def one_kernel(x: FakeArray, scale: float) -> None:
        gpu.launch(5e-6)

    client = CudaClient(cold_l2=False)
    client.time(one_kernel, (FakeArray(ptr=4096), 2.0))
    first = gpu.captures
    client.time(one_kernel, (FakeArray(ptr=4096), 2.0))  # another object, same array
    assert gpu.captures == first
    client.time(one_kernel, (FakeArray(ptr=8192), 2.0))
    client.time(one_kernel, (FakeArray(ptr=8192, shape=(8,)), 2.0))
    client.time(one_kernel, (FakeArray(ptr=8192, shape=(8,)), 3.0))
    assert gpu.captures == first + 3


def test_inputs_a_graph_cannot_hold_are_timed_through_the_stream(gpu: FakeGpu) -> None:
    def one_kernel(values: list[float]) -> None:
        gpu.launch(5e-6)

    client = CudaClient(cold_l2=False)
    assert client.time(one_kernel, ([1.0, 2.0],)) == pytest.approx(STREAM_LAUNCH + 5e-6)
    assert gpu.captures == 0


def test_a_call_given_its_arrays_in_a_tuple_list_or_dict_is_captured_as_one_given_them_alone(
    gpu: FakeGpu,
) -> None:
    # `layernorm(x, (gamma, beta))`: a tuple of CuPy arrays is unhashable, and such a call
    # was never captured, its short calls timed through the stream.
    def one_kernel(x: FakeArray, weights: object) -> None:
        gpu.launch(5e-6)

    client = CudaClient(cold_l2=False, timing="device")
    x, w, b = (FakeArray(ptr=p) for p in (4096, 8192, 12288))
    assert client.time(one_kernel, (x, (w, b))) == pytest.approx(5e-6 + NODE)
    first = gpu.captures
    client.time(one_kernel, (x, (FakeArray(ptr=8192), FakeArray(ptr=12288))))  # same arrays
    assert gpu.captures == first
    client.time(one_kernel, (x, (w, FakeArray(ptr=16384))))  # another array: another graph
    client.time(one_kernel, (x, [w, b]))  # a list of them, and a dict with a number
    client.time(one_kernel, (x, {"w": w, "eps": 1e-5}))
    client.time(one_kernel, (x, {"w": w, "eps": 1e-6}))
    assert gpu.captures == first + 4
    assert client.time(one_kernel, (x, {"w": w, "eps": 1e-6})) == pytest.approx(5e-6 + NODE)
    assert gpu.captures == first + 4
    # A container of a host value the graph cannot hold is timed through the stream.
    client.time(one_kernel, (x, (w, [1.0, 2.0])))
    assert gpu.captures == first + 4


def test_a_call_given_a_tensor_in_a_tuple_is_timed_through_the_stream_as_one_given_alone(
    gpu: FakeGpu, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A tensor hashes by identity, so a tuple of them had a key, and every capture failed
    # after a warm-up call (torch's kernels go to torch's stream, not the capture's).
    class Tensor:
        pass

    monkeypatch.setattr(cuda_graphs, "is_tensor", lambda v: isinstance(v, Tensor))
    client = CudaClient(cold_l2=False, timing="device")
    first = gpu.captures
    for inputs in [(Tensor(),), ((Tensor(), 2.0),), ([FakeArray(ptr=4096), Tensor()],)]:
        assert client.time(lambda t: gpu.launch(5e-6), inputs) == pytest.approx(
            STREAM_LAUNCH + 5e-6
        )
    assert gpu.captures == first


def test_the_gates_placements_copy_the_arrays_a_tuple_holds_aliases_kept(gpu: FakeGpu) -> None:
    seen: list[tuple[int, int, int]] = []

    def one_kernel(x: FakeArray, pair: tuple[FakeArray, FakeArray]) -> None:
        seen.append((x.data.ptr, pair[0].data.ptr, pair[1].data.ptr))
        gpu.launch(5e-6)

    client = CudaClient(cold_l2=False, timing="device")
    x, w = FakeArray(ptr=4096, gpu=gpu), FakeArray(ptr=8192, gpu=gpu)
    client.time(one_kernel, (x, (w, x)))
    client.placed_sampler(one_kernel, (x, (w, x)))
    copies = seen[2:]
    assert len(copies) == 2 * PLACEMENTS
    assert all(a == c and a != x.data.ptr and b != w.data.ptr for a, b, c in copies)
    assert len({b for _, b, _ in copies}) == PLACEMENTS


def test_the_arrays_a_tuple_holds_count_toward_the_placements_memory(gpu: FakeGpu) -> None:
    # Copied to each placement, they were left out of the memory the copies take: a pair of
    # arrays near the device's size was copied to every placement, out of memory on a GPU.
    seen: list[int] = []

    def one_kernel(pair: tuple[FakeArray, FakeArray]) -> None:
        seen.append(pair[0].data.ptr)
        gpu.launch(5e-6)

    client = CudaClient(cold_l2=False, timing="device")
    big = FakeArray(ptr=4096, shape=(1 << 32,), gpu=gpu)  # 16 GiB, the whole device
    client.placed_sampler(one_kernel, ((big, FakeArray(ptr=8192, gpu=gpu)),))
    assert seen and set(seen) == {4096}  # too large to copy: every placement has the caller's


def test_inputs_on_another_device_than_the_clients_are_refused_by_name(gpu: FakeGpu) -> None:
    # cuda(device=1) on arrays made on device 0: the call ran on device 1 and read them over
    # the interconnect, a time of neither device, or failed with CuPy's peer-access error.
    gpu.module.cuda.runtime.getDeviceCount = lambda: 2
    client = CudaClient(device=1, cold_l2=False)
    x = FakeArray(ptr=4096, device=0)
    with pytest.raises(ValueError, match=r"input 1 is a CuPy array on device 0, .* device 1"):
        client.time(lambda s, x: gpu.launch(5e-6), (2.0, x))
    with pytest.raises(ValueError, match="on device 0"):
        client.placed_sampler(lambda x: gpu.launch(5e-6), (x,))
    with pytest.raises(ValueError, match=r"input 0 holds a CuPy array on device 0, .* device 1"):
        client.time(lambda pair: gpu.launch(5e-6), ((FakeArray(ptr=8192, device=1), x),))
    assert gpu.captures == 0
    assert client.time(lambda x: gpu.launch(5e-6), (FakeArray(ptr=4096, device=1),)) > 0


def test_a_captured_call_allocates_from_a_pool_of_its_own(gpu: FakeGpu) -> None:
    pools: list[FakePool] = []

    def allocating() -> FakePool:
        pools.append(gpu.allocate(1024).pool)
        gpu.launch(5e-6)
        return pools[-1]

    client = CudaClient(cold_l2=False, timing="device")
    client.time(allocating, ())
    client.time(allocating, ())
    assert len(pools) == 2 and pools[0] is pools[1]  # the warm-up's blocks serve the capture
    assert pools[0] is not gpu.default_pool and pools[0].emptied == 0


def test_out_of_memory_in_the_warm_up_is_raised_and_empties_every_pool(gpu: FakeGpu) -> None:
    def small() -> None:
        gpu.allocate(1024)
        gpu.launch(5e-6)

    def hog() -> None:
        gpu.allocate(2 * gpu.free_bytes)

    client = CudaClient(cold_l2=False)
    client.time(small, ())
    captures = gpu.captures
    with pytest.raises(FakeOutOfMemoryError):
        client.time(hog, ())
    # Once per try: the first let the kept graphs go, whose memory it might have needed.
    assert gpu.default_pool.emptied == 2
    client.time(small, ())
    assert gpu.captures == captures + 1  # its graph and pool were let go: captured again


def test_a_call_out_of_memory_for_the_graphs_kept_before_it_is_timed_again_without_them(
    gpu: FakeGpu,
) -> None:
    # The graphs of the calls timed before (16 of them, earlier groups' too) keep what
    # their calls allocated; a call that needs that memory failed, as if it could not fit.
    kept: list[weakref.ref[FakePool]] = []

    def earlier() -> None:
        kept.append(weakref.ref(gpu.allocate(1024).pool))
        gpu.launch(5e-6)

    def big() -> None:
        gc.collect()
        if any(pool() is not None for pool in kept):
            raise FakeOutOfMemoryError("out of memory while the earlier graph holds its pool")
        gpu.launch(50e-6)

    client = CudaClient(cold_l2=False, timing="device")
    client.time(earlier, ())
    assert client.time(big, ()) == pytest.approx(50e-6 + NODE)


class FakeCublasError(RuntimeError):
    """CuPy's `cupy_backends.cuda.libs.cublas.CUBLASError`: the cuBLAS status in `status`."""

    def __init__(self, status: int) -> None:
        super().__init__(f"CUBLAS_STATUS {status}")
        self.status = status


def test_a_cublas_call_out_of_memory_for_the_graphs_kept_before_it_is_timed_again_without_them(
    gpu: FakeGpu, monkeypatch: pytest.MonkeyPatch
) -> None:
    # cuBLAS takes its workspace with cudaMalloc, outside CuPy's pool: where the earlier
    # graphs' pools hold the memory, `cupy.matmul` fails with CUBLAS_STATUS_ALLOC_FAILED (3),
    # not with CuPy's OutOfMemoryError.
    cublas = SimpleNamespace(CUBLASError=FakeCublasError)
    monkeypatch.setitem(sys.modules, "cupy_backends.cuda.libs.cublas", cublas)
    kept: list[weakref.ref[FakePool]] = []

    def earlier() -> None:
        kept.append(weakref.ref(gpu.allocate(1024).pool))
        gpu.launch(5e-6)

    def matmul() -> None:
        gc.collect()
        if any(pool() is not None for pool in kept):
            raise FakeCublasError(3)
        gpu.launch(50e-6)

    client = CudaClient(cold_l2=False, timing="device")
    client.time(earlier, ())
    assert client.time(matmul, ()) == pytest.approx(50e-6 + NODE)

    def invalid_value() -> None:
        raise FakeCublasError(7)  # CUBLAS_STATUS_INVALID_VALUE: the candidate's, not memory

    emptied = gpu.default_pool.emptied
    with pytest.raises(FakeCublasError):
        client.time(invalid_value, ())
    assert gpu.default_pool.emptied == emptied


def test_out_of_memory_in_a_callers_eager_calls_gives_the_memory_back(gpu: FakeGpu) -> None:
    # Its warm-up and capture fit; the eager calls that time what a caller pays do not.
    clock = HostClock()
    calls = []

    def host_bound() -> None:
        calls.append(1)
        clock.ns += 20_000
        if len(calls) > 2:
            raise FakeOutOfMemoryError("out of memory")
        gpu.launch(2e-6)

    client = CudaClient(cold_l2=False, host_timer=clock)
    with pytest.raises(FakeOutOfMemoryError):
        client.time(host_bound, ())
    # Given back once: no graph was kept before this first call, so it has no second try.
    assert gpu.default_pool.emptied == 1
    assert len(client._replays) == 0  # its graph, and the calibration's, let go


def test_a_candidate_that_synchronizes_is_timed_without_the_hold_after_one_timeout(
    gpu: FakeGpu,
) -> None:
    # Its capture called it once already (and failed on the synchronize): nothing is left
    # to compile, so one timed-out hold tells, where a second would cost 0.2 s more.
    def synchronizing() -> None:
        gpu.launch(5e-6)
        gpu.stream().synchronize()

    client = CudaClient(cold_l2=False)
    first = client.time(synchronizing, ())
    # The capture's warm-up is held briefly and gives up; the timed call, after a capture
    # that failed, more briefly still: together 12 ms of holds, not 210.
    assert gpu.hold_timeouts == [WARM_UP_HOLD_S, RETRY_HOLD_S]
    holds = gpu.holds
    second = client.time(synchronizing, ())
    assert gpu.holds == holds  # no hold any more
    assert gpu.captures == 1  # the capture failed once, and was not tried again
    assert first == pytest.approx(STREAM_LAUNCH + 5e-6)
    assert second == pytest.approx(STREAM_LAUNCH + 5e-6)


def test_a_call_whose_first_call_outlasted_the_warm_up_hold_is_held_again(
    gpu: FakeGpu,
) -> None:
    # It cannot be captured (it launches on the legacy stream), and its first call's host
    # work (a compilation) outlasted the warm-up's hold; its second call enqueues at once,
    # so it is not taken for a synchronizing call and stays held.
    calls = []

    def compiles_once() -> None:
        if not calls:
            gpu.held_flag[1] = 1  # the hold gave up while the host compiled
        calls.append(1)
        gpu.launch(5e-6, gpu.legacy)

    client = CudaClient(cold_l2=False)
    client.time(compiles_once, ())
    # (Then the held samples of nothing that measure the fixed cost.)
    assert gpu.hold_timeouts[:2] == [WARM_UP_HOLD_S, RETRY_HOLD_S]
    holds = gpu.holds
    client.time(compiles_once, ())
    assert gpu.holds == holds + 1
    assert gpu.hold_timeouts[-1] == HOLD_TIMEOUT_S


def test_without_graph_replay_a_synchronizing_candidate_gets_a_second_hold(
    gpu: FakeGpu,
) -> None:
    # Its first timed call is its first call: a compilation may have outlasted the hold.
    def synchronizing() -> None:
        gpu.launch(5e-6)
        gpu.stream().synchronize()

    client = CudaClient(cold_l2=False, graph_replay=False)
    client.time(synchronizing, ())
    assert gpu.holds == 2


def test_the_least_recently_timed_graph_goes_beyond_the_cache_size(gpu: FakeGpu) -> None:
    calls = [kernels(gpu, 1e-6) for _ in range(REPLAY_CACHE_SIZE + 1)]
    client = CudaClient(cold_l2=False)
    for call in calls:
        client.time(call, ())
    captures = gpu.captures
    client.time(calls[-1], ())
    assert gpu.captures == captures
    client.time(calls[0], ())
    assert gpu.captures == captures + 1


def test_every_graph_let_go_gives_its_pools_memory_back_to_the_device(gpu: FakeGpu) -> None:
    # A CuPy pool that is let go keeps its blocks for the rest of the process: each graph
    # pushed out of the cache, and each call whose capture failed, leaked what it allocated.
    pools: list[FakePool] = []

    def allocating() -> None:
        pools.append(gpu.allocate(1024).pool)
        gpu.launch(5e-6)

    def uncapturable() -> None:
        pools.append(gpu.allocate(1024).pool)
        gpu.launch(5e-6, stream=gpu.legacy)

    client = CudaClient(cold_l2=False, timing="device")
    client.time(uncapturable, ())
    assert pools[0].emptied == 1  # its capture failed: its warm-up's pool is let go
    client.time(allocating, ())
    assert pools[-1].emptied == 0  # kept with its graph
    for call in [kernels(gpu, 1e-6) for _ in range(REPLAY_CACHE_SIZE)]:
        client.time(call, ())
    assert pools[-1].emptied == 1  # pushed out of the cache


def test_the_graphs_of_a_client_let_go_give_their_pools_memory_back(gpu: FakeGpu) -> None:
    # A client of its own (`cuda()` with other arguments, a test's) is collected with its
    # graphs, whose dropped pools kept their blocks for the rest of the process.
    pools: list[FakePool] = []

    def allocating() -> None:
        pools.append(gpu.allocate(1024).pool)
        gpu.launch(5e-6)

    client = CudaClient(cold_l2=False)
    client.time(allocating, ())
    assert client.launch_overhead > 0
    collected = weakref.ref(client)
    del client
    gc.collect()
    assert collected() is None
    assert pools[-1].emptied == 1
    # And the pinned page its hold flag lives in (`cuda_sampler.EventSampler`).
    assert gpu.freed_host == [ctypes.addressof(gpu.flag_memory)]


def test_the_collector_stays_off_until_the_last_of_two_threads_timing_is_done() -> None:
    # Two clients of two GPUs timing on two threads: the first to finish turned the
    # collector back on inside the other's capture, where a finalizer's cudaFree fails it.
    assert gc.isenabled()
    first, second = collector_paused(), collector_paused()
    first.__enter__()
    second.__enter__()
    first.__exit__(None, None, None)
    assert not gc.isenabled()
    second.__exit__(None, None, None)
    assert gc.isenabled()


def test_garbage_collected_while_a_call_is_captured_frees_its_cuda_memory_after_the_capture(
    gpu: FakeGpu,
) -> None:
    # A client is in reference cycles (its probe and its graphs' warm-up timer refer back
    # to it), as a candidate's own objects may be, so the cyclic collector alone runs their
    # finalizers, at whatever allocation triggers a collection: inside a capture too, where
    # cudaFreeHost (a client's hold flag) or cudaFree (its pools, its flush buffer) fails
    # and fails the capture. Here pinned memory in a cycle, dropped in the capture.
    class Pinned:
        def __init__(self) -> None:
            self.cycle = self
            weakref.finalize(self, gpu.module.cuda.runtime.freeHost, 1)

    calls = []

    def allocating() -> None:
        calls.append(1)
        if len(calls) == 2:  # the capture, after its warm-up
            Pinned()
            for _ in range(10 * gc.get_threshold()[0]):  # enough for the collector to run
                cycle: list[Any] = []
                cycle.append(cycle)
        gpu.launch(5e-6)

    client = CudaClient(cold_l2=False, timing="device")
    seconds = client.time(allocating, ())
    assert seconds == pytest.approx(5e-6 + NODE)  # captured, and timed by its replay
    gc.collect()
    assert gpu.freed_host == [1]  # given back once the capture was over


def test_the_peak_probes_leave_no_graph_holding_their_buffers(
    gpu: FakeGpu, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A graph's key holds its call, and the call its arguments: the probes' graphs kept
    # their GiB buffers allocated (2 GiB on an H200) until later captures pushed them out.
    buffers: list[weakref.ref[FakeArray]] = []

    def probe_peaks(target: Any) -> Peaks:
        buffer = FakeArray(ptr=1 << 30, shape=(1 << 28,))
        buffers.append(weakref.ref(buffer))
        target.seconds(functools.partial(lambda x: gpu.launch(100e-6), buffer))
        return Peaks(memory={"copy": 1e12}, compute={"fp32": 1e12})

    monkeypatch.setattr(cuda_module, "probe_peaks", probe_peaks)
    client = CudaClient(cold_l2=False)
    candidate = kernels(gpu, 5e-6)
    client.time(candidate, ())
    captures = gpu.captures
    probe_cuda_peaks(client)
    assert gpu.captures == captures + 1
    gc.collect()
    assert buffers[0]() is None
    client.time(candidate, ())
    assert gpu.captures == captures + 1  # a candidate's graph stays


class HostClock:
    """A host clock that moves only when a candidate's host code says so."""

    def __init__(self) -> None:
        self.ns = 0

    def __call__(self) -> int:
        return self.ns


def test_a_call_is_scored_by_its_host_enqueue_time_where_that_exceeds_its_device_time(
    gpu: FakeGpu,
) -> None:
    clock = HostClock()
    calls = []

    def launch_bound() -> None:  # 2 us on the device, 20 us for Python to enqueue
        calls.append(1)
        clock.ns += 20_000
        gpu.launch(2e-6)

    client = CudaClient(cold_l2=False, host_timer=clock)
    assert [client.time(launch_bound, ()) for _ in range(3)] == pytest.approx([20e-6] * 3)
    cost = client.call_costs(launch_bound)
    assert cost is not None
    assert cost.device == pytest.approx(NODE + 2e-6) and cost.enqueue == pytest.approx(20e-6)
    # Each sample replays the graph, then makes a lead of eager calls and a loop of them
    # timed on the host (what a caller's loop pays per call); the first also times two
    # eager calls (its warm-up's enqueue time was cold).
    assert len(calls) == 2 + 2 + 3 * (EAGER_LEAD + EAGER_CALLS)


def test_a_host_bound_calls_caller_timed_samples_are_scored_by_their_median(
    gpu: FakeGpu,
) -> None:
    # A host loop's time has fast spells as well as slow ones: its best sample says less
    # than a device time's does. A device-bound call, and any call under device timing,
    # keeps the seed's score.
    clock = HostClock()

    def launch_bound() -> None:
        clock.ns += 20_000
        gpu.launch(2e-6)

    def device_bound() -> None:  # 200 us on the device, 10 us to enqueue
        clock.ns += 10_000
        gpu.launch(200e-6)

    caller = CudaClient(cold_l2=False, host_timer=clock)
    device = CudaClient(cold_l2=False, host_timer=clock, timing="device")
    assert caller.sample_statistic(launch_bound) == "score"  # never timed: nothing known
    for client in (caller, device):
        client.time(launch_bound, ())
        client.time(device_bound, ())
    assert caller.sample_statistic(launch_bound) == "median"
    assert caller.sample_statistic(device_bound) == "score"
    assert device.sample_statistic(launch_bound) == "score"


def calls_since_synchronize(
    monkeypatch: pytest.MonkeyPatch, on_synchronize: Callable[[int], None] = lambda calls: None
) -> list[int]:
    """A counter of the calls since the fake device's last synchronize: a candidate adds its
    calls to `counter[0]`; each synchronize shows the count to `on_synchronize`, then resets
    it."""
    counter = [0]
    synchronize = FakeGpu.synchronize

    def counting(self: FakeGpu, stream: FakeStream) -> None:
        on_synchronize(counter[0])
        counter[0] = 0
        synchronize(self, stream)

    monkeypatch.setattr(FakeGpu, "synchronize", counting)
    return counter


def test_the_cold_start_of_an_eager_loop_after_a_synchronize_is_not_what_a_caller_pays(
    gpu: FakeGpu, monkeypatch: pytest.MonkeyPatch
) -> None:
    # 50 us for each of the first four calls after a synchronize, 10 us after: a long loop
    # pays 10 us a call, and so must the sample, not an average over the cold start.
    clock = HostClock()
    since_sync = calls_since_synchronize(monkeypatch)

    def cold_then_warm() -> None:
        clock.ns += 50_000 if since_sync[0] < 4 else 10_000
        since_sync[0] += 1
        gpu.launch(2e-6)

    client = CudaClient(cold_l2=False, host_timer=clock)
    assert client.time(cold_then_warm, ()) == pytest.approx(10e-6)


def test_a_host_bound_call_that_is_not_captured_is_scored_by_a_callers_loop_too(
    gpu: FakeGpu, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A call timed through the stream (not captured: here an unhashable input; a PyTorch
    # tensor's, cuBLAS under CuPy) was scored by its one held call's enqueue time, cold
    # after the sample's synchronize: a Triton kernel on an H100 read 55-72 us to enqueue
    # where a caller's loop pays 27 us a call, and its 42 us of device work read 60 us.
    clock = HostClock()
    since_sync = calls_since_synchronize(monkeypatch)

    def cold_then_warm(rows: list[int]) -> None:
        clock.ns += 50_000 if since_sync[0] < 4 else 10_000
        since_sync[0] += 1
        gpu.launch(2e-6)

    client = CudaClient(cold_l2=False, host_timer=clock)
    assert client.time(cold_then_warm, ([1, 2],)) == pytest.approx(10e-6)
    assert gpu.captures == 0


def test_a_long_host_bound_call_makes_fewer_eager_calls_but_keeps_the_lead(gpu: FakeGpu) -> None:
    # 100 us for Python to enqueue, 20 us on the device: host-bound, and far from a short
    # call; its loops' difference holds about EAGER_BUDGET_S of calls, its lead all of them.
    clock = HostClock()
    calls = []

    def slow_host() -> None:
        calls.append(1)
        clock.ns += 100_000
        gpu.launch(20e-6)

    client = CudaClient(cold_l2=False, host_timer=clock)
    assert client.time(slow_host, ()) == pytest.approx(100e-6)
    difference = max(EAGER_MIN_CALLS, int(EAGER_BUDGET_S / 100e-6))
    assert difference < EAGER_CALLS
    assert len(calls) == 2 + 2 + EAGER_LEAD + difference


def test_one_stalled_call_in_the_eager_loop_does_not_make_a_host_bound_call_device_bound(
    gpu: FakeGpu,
) -> None:
    # 10 us to enqueue, 2 us on the device; the first counted call of the first sample's
    # eager loop (after the warm-up, the capture, two warm eager calls and the lead) stalls
    # for 1 ms. The second sample must still pay the host's 10 us.
    clock = HostClock()
    calls = []

    def host_bound() -> None:
        calls.append(1)
        clock.ns += 1_000_000 if len(calls) == 2 + 2 + EAGER_LEAD + 1 else 10_000
        gpu.launch(2e-6)

    client = CudaClient(cold_l2=False, host_timer=clock)
    client.time(host_bound, ())
    cost = client.call_costs(host_bound)
    assert cost is not None and cost.enqueue is not None and cost.enqueue >= 10e-6
    assert client.time(host_bound, ()) == pytest.approx(10e-6)


def test_an_eager_loop_reads_what_every_call_pays_and_leaves_a_quarter_of_stalls_out() -> None:
    steady = [10_000] * 24
    assert loop_seconds(steady) == pytest.approx(10e-6)
    # Six of 24 calls hit by the host's stalls: the figure is the calls' own cost.
    assert loop_seconds([1_000_000] * 6 + [10_000] * 18) == pytest.approx(10e-6)
    # A cost on every other call is the candidate's: half of it stays in.
    assert loop_seconds([10_000, 30_000] * 12) == pytest.approx((12 * 10e-6 + 6 * 30e-6) / 18)
    assert loop_seconds([5]) == pytest.approx(5e-9)


def test_a_stall_on_a_few_calls_of_the_eager_loop_does_not_move_a_samples_figure(
    gpu: FakeGpu,
) -> None:
    clock = HostClock()
    calls = []

    def host_bound() -> None:  # 10 us to enqueue, 2 us on the device; every 8th call stalls
        calls.append(1)
        clock.ns += 500_000 if len(calls) % 8 == 0 else 10_000
        gpu.launch(2e-6)

    client = CudaClient(cold_l2=False, host_timer=clock)
    client.time(host_bound, ())
    assert [client.time(host_bound, ()) for _ in range(3)] == pytest.approx([10e-6] * 3)


def test_the_eager_loop_takes_its_own_clock_reads_off_each_call(gpu: FakeGpu) -> None:
    # Each read of this clock costs 150 ns of host time, as a read and the loop's
    # bookkeeping do on a real host: timing each call alone would add them to every call
    # of a candidate that a caller's loop pays 10 us for.
    class CostlyClock(HostClock):
        def __call__(self) -> int:
            self.ns += 150
            return self.ns

    clock = CostlyClock()

    def host_bound() -> None:
        clock.ns += 10_000
        gpu.launch(2e-6)

    client = CudaClient(cold_l2=False, host_timer=clock)
    client.time(host_bound, ())
    assert client.time(host_bound, ()) == pytest.approx(10e-6)


def spell_candidates(gpu: FakeGpu, clock: HostClock, launch_us: float) -> dict[str, Any]:
    """A 2048x1024 layernorm's candidates on a host that takes `launch_us` to launch one
    (10-11 us at its usual speed on an H200 host, about 15.5 in a slow spell): three
    host-bound ones of 5.5-8 us on the device, and one of 13.9 us."""

    def of(device_us: float, launch: float) -> Callable[[Any], None]:
        def call(x: Any) -> None:
            clock.ns += int(launch * 1000)
            gpu.launch(device_us * 1e-6 - NODE)

        return call

    return {
        "block256": of(8.0, launch_us),
        "block1024": of(13.9, launch_us * 0.985),  # level with block256, or just ahead
        "warp_row": of(5.5, launch_us * 1.06),  # its host part is 5-8% over block256's
    }


def timed_spell(gpu: FakeGpu, launch_us: float) -> tuple[CudaClient, dict[str, Any]]:
    """A caller-timed client that has timed each of `spell_candidates(gpu, ..., launch_us)`
    once (so it knows their device times), and the candidates."""
    clock = HostClock()
    fns = spell_candidates(gpu, clock, launch_us)
    client = CudaClient(cold_l2=False, host_timer=clock)
    for fn in fns.values():
        client.time(fn, (None,))
    return client, fns


def preferred_name(client: CudaClient, fns: dict[str, Any], scores: dict[str, float]) -> str:
    names = list(scores)
    return names[client.preferred([(fns[n], scores[n]) for n in names])]


def test_fixed_speedup_a_spells_tie_goes_to_one_a_faster_host_speeds_up(
    gpu: FakeGpu,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(cuda_timing, "HOST_SPEEDUP", 1.5)
    # In a slow spell block1024 (13.9 us of device time) scores level with block256 (8 us
    # on the device, 15.5 us to launch): block256 is no slower now and faster once the
    # host launches faster, so it wins the tie; warp_row, 6% behind, is no tie.
    client, fns = timed_spell(gpu, 15.5)
    scores = {"block1024": 15.3e-6, "block256": 15.5e-6, "warp_row": 16.4e-6}
    assert preferred_name(client, fns, scores) == "block256"
    # On a host HOST_SPEEDUP times faster block1024 (13.9 us) would be device-bound.
    # Past the tie the lowest score wins, whatever a faster host would do.
    scores["block1024"] = 15.5e-6 / TIE * 0.99
    assert preferred_name(client, fns, scores) == "block1024"


def test_fixed_speedup_at_usual_speed_a_tie_goes_to_less_device_work(
    gpu: FakeGpu,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(cuda_timing, "HOST_SPEEDUP", 1.5)
    # 10.5 us a launch: block256 (8 us on the device) and warp_row (5.5 us) tie. On a host
    # HOST_SPEEDUP (1.5) times faster warp_row launches in 7.1 us, under block256's device
    # time, so the tie goes to warp_row whichever scored lower: the price of telling a
    # spell's ties apart (`cuda_timing.HOST_SPEEDUP`).
    client, fns = timed_spell(gpu, 10.5)
    assert preferred_name(client, fns, {"block256": 10.5e-6, "warp_row": 10.6e-6}) == "warp_row"
    assert preferred_name(client, fns, {"block256": 10.6e-6, "warp_row": 10.5e-6}) == "warp_row"
    # Past the tie the lowest score wins.
    assert preferred_name(client, fns, {"block256": 10.5e-6, "warp_row": 10.9e-6}) == "block256"
    # A candidate this client never timed (no device time known): nothing tells the tied
    # apart, and the lowest score wins, whichever it is.
    fns["other"] = spell_candidates(gpu, HostClock(), 15.5)["block256"]
    assert preferred_name(client, fns, {"block1024": 15.3e-6, "other": 15.4e-6}) == "block1024"
    assert preferred_name(client, fns, {"block1024": 15.4e-6, "other": 15.3e-6}) == "other"


def test_fixed_speedup_tells_a_slower_spells_device_bound_candidate_apart(
    gpu: FakeGpu, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(cuda_timing, "HOST_SPEEDUP", 1.5)
    # A spell of 1.7x: every one-kernel candidate launches in about 18.5 us, block1024
    # (13.9 us on the device) just ahead. At 1.25 its device time hid under the others'
    # launches sped up (14.8 us); at HOST_SPEEDUP (1.5) they launch in 12.3 us.
    client, fns = timed_spell(gpu, 18.5)
    scores = {"block1024": 18.3e-6, "block256": 18.5e-6}
    assert preferred_name(client, fns, scores) == "block256"


class EmptyLaunch:
    """The client's reference (one empty launch) on a `HostClock`: `us` of host time each."""

    def __init__(self, clock: HostClock, us: float) -> None:
        self.clock, self.us, self.calls = clock, us, 0

    def __call__(self) -> None:
        self.calls += 1
        self.clock.ns += int(self.us * 1000)


def measuring_spell(
    gpu: FakeGpu, monkeypatch: pytest.MonkeyPatch, launch_us: float
) -> tuple[CudaClient, dict[str, Any], EmptyLaunch]:
    """`timed_spell`'s client with the host's speed measured at a tie (HOST_SPEEDUP None),
    an empty launch taking 4.5 us at the host's usual speed, read once at that speed."""
    monkeypatch.setattr(cuda_timing, "HOST_SPEEDUP", None)
    client, fns = timed_spell(gpu, launch_us)
    reference = EmptyLaunch(HostClock(), 4.5)
    client._caller.host_timer = reference.clock
    client._caller.reference = reference
    assert client._caller.host_slowdown() == 1.0
    return client, fns, reference


def test_measured_at_the_hosts_usual_speed_a_tie_goes_to_the_lowest_score(
    gpu: FakeGpu, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The tie of block256 and warp_row at 10.5 us a launch that a fixed HOST_SPEEDUP gives
    # warp_row whichever scored lower: measured, the host launches at its usual speed, a
    # faster one is not in sight, and the lower score wins.
    client, fns, _ = measuring_spell(gpu, monkeypatch, 10.5)
    assert preferred_name(client, fns, {"block256": 10.5e-6, "warp_row": 10.6e-6}) == "block256"
    assert preferred_name(client, fns, {"block256": 10.6e-6, "warp_row": 10.5e-6}) == "warp_row"
    assert client._caller.last_slowdown == 1.0


def test_measured_in_a_slow_spell_a_tie_goes_to_one_the_usual_host_speeds_up(
    gpu: FakeGpu, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The empty launch now takes 1.4 times its usual 4.5 us: block256 (8 us on the device)
    # launches in 15.5 / 1.4 = 11.1 us at the usual speed, block1024 stays at its 13.9.
    client, fns, reference = measuring_spell(gpu, monkeypatch, 15.5)
    reference.us = 4.5 * 1.4
    scores = {"block1024": 15.3e-6, "block256": 15.5e-6}
    assert preferred_name(client, fns, scores) == "block256"
    assert client._caller.last_slowdown == pytest.approx(1.4, rel=1e-3)
    # A stall of the reference loop itself is read as the slowest spell taken, no more.
    reference.us = 4.5 * 5
    assert client._caller.host_slowdown() == cuda_timing.SLOWDOWN_MAX


def test_a_tie_of_device_bound_calls_times_no_reference(
    gpu: FakeGpu, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Launched in 2 us, each call is bound by its device time: the host's speed changes
    # nothing, and no reference loop is timed for it.
    client, fns, reference = measuring_spell(gpu, monkeypatch, 2.0)
    calls = reference.calls
    assert preferred_name(client, fns, {"block256": 8.0e-6, "warp_row": 7.9e-6}) == "warp_row"
    assert reference.calls == calls


def test_device_timing_and_a_turned_off_tie_break_take_the_lowest_score(
    gpu: FakeGpu, monkeypatch: pytest.MonkeyPatch
) -> None:
    clock = HostClock()
    fns = spell_candidates(gpu, clock, 15.5)
    device = CudaClient(cold_l2=False, host_timer=clock, timing="device")
    caller = CudaClient(cold_l2=False, host_timer=clock)
    for fn in fns.values():
        device.time(fn, (None,))
        caller.time(fn, (None,))
    scores = {"block1024": 15.3e-6, "block256": 15.5e-6}
    assert preferred_name(device, fns, scores) == "block1024"
    monkeypatch.setattr(cuda_timing, "TIE_BREAK", False)
    assert preferred_name(caller, fns, scores) == "block1024"


def test_a_tuning_in_a_slow_spell_of_the_host_picks_the_candidate_that_is_never_slower(
    gpu: FakeGpu,
) -> None:
    # The whole tuning inside a spell: every candidate launches in about 15.5 us, block1024
    # a little faster; block1024 is device-bound outside it (13.9 us), the others
    # host-bound everywhere.
    clock = HostClock()
    fns = spell_candidates(gpu, clock, 15.5)
    tunables = TunableSet.of(lambda x: "layernorm", fns)
    client = CudaClient(cold_l2=False, host_timer=clock)
    decision = Tuner("t", client.device_id).tune("layernorm", tunables, (None,), client)
    assert decision.fastest_name == "block256"


def test_a_loop_slow_to_finish_short_bursts_reads_its_steady_cost_not_its_burst_cost(
    gpu: FakeGpu, monkeypatch: pytest.MonkeyPatch
) -> None:
    # On one H200 host, loops of tens of eager calls took 15-17 us a call to their
    # synchronize for every layernorm candidate alike, where a long loop paid the larger of
    # the host's enqueue time (about 10 us) and the device time: here each call enqueued
    # since the last synchronize costs 6 us more by the time it is waited on. Two
    # candidates, enqueued in 10 us: one of 8 us on the device, one of 14 us (which binds a
    # long loop). The sample must read their steady costs, 10 and 14 us, not 16 and 16.
    clock = HostClock()

    def slow_finish(pending: int) -> None:
        clock.ns += 6_000 * pending

    pending = calls_since_synchronize(monkeypatch, slow_finish)

    def kernel_of(seconds: float) -> Callable[[], None]:
        def call() -> None:
            clock.ns += 10_000
            pending[0] += 1
            gpu.launch(seconds)

        return call

    client = CudaClient(cold_l2=False, host_timer=clock)
    short, long = kernel_of(8e-6 - NODE), kernel_of(14e-6 - NODE)
    assert client.time(short, ()) == pytest.approx(10e-6)
    assert client.time(long, ()) == pytest.approx(14e-6)


def test_device_timing_reads_the_device_time_and_still_keeps_both_figures(gpu: FakeGpu) -> None:
    clock = HostClock()

    def launch_bound() -> None:
        clock.ns += 20_000
        gpu.launch(2e-6)

    client = CudaClient(cold_l2=False, host_timer=clock, timing="device")
    assert client.time(launch_bound, ()) == pytest.approx(NODE + 2e-6)


def test_a_device_bound_call_never_pays_for_the_eager_loop_not_even_on_its_first_sample(
    gpu: FakeGpu,
) -> None:
    clock = HostClock()
    calls = []

    def device_bound() -> None:  # 100 us on the device, 5 us to enqueue
        calls.append(1)
        clock.ns += 5_000
        gpu.launch(100e-6)

    client = CudaClient(cold_l2=False, host_timer=clock)
    times = [client.time(device_bound, ()) for _ in range(4)]
    assert times == pytest.approx([NODE + 100e-6] * 4)
    # Warm-up and capture only: the warm-up's enqueue time already shows the device binds,
    # so no sample runs the loop (on a 0.47 s candidate, 24 calls of it for nothing).
    assert len(calls) == 2
    cost = client.call_costs(device_bound)
    assert cost is not None and cost.enqueue == pytest.approx(5e-6)


def test_a_device_bound_call_whose_warm_up_allocated_pays_no_loop_on_its_first_sample(
    gpu: FakeGpu,
) -> None:
    # 300 us on the device, 10 us to enqueue, but 1 ms for the first call of all (its
    # allocations in the capture's fresh pool): two warm eager calls show it device-bound.
    clock = HostClock()
    calls = []

    def first_allocates() -> None:
        clock.ns += 1_000_000 if not calls else 10_000
        calls.append(1)
        gpu.launch(300e-6)

    client = CudaClient(cold_l2=False, host_timer=clock)
    assert client.time(first_allocates, ()) == pytest.approx(NODE + 300e-6)
    assert len(calls) == 2 + 2  # warm-up, capture, two eager calls: no loop
    cost = client.call_costs(first_allocates)
    assert cost is not None and cost.enqueue == pytest.approx(10e-6)


def test_an_unknown_timing_is_refused() -> None:
    with pytest.raises(ValueError, match="timing"):
        CudaClient(timing="wall")


def test_the_gates_sampler_visits_each_placement_of_the_inputs_in_turn_each_with_its_graph(
    gpu: FakeGpu,
) -> None:
    seen: list[int] = []

    def one_kernel(x: FakeArray, scale: float) -> None:
        seen.append(x.data.ptr)
        gpu.launch(5e-6)

    client = CudaClient(cold_l2=False, timing="device")
    x = FakeArray(ptr=4096, gpu=gpu)
    client.time(one_kernel, (x, 2.0))
    captures = gpu.captures
    sample = client.placed_sampler(one_kernel, (x, 2.0))
    # With device timing the call runs in Python only when warmed up and captured: once
    # per placement, each on a copy of its own (the tuning's graph is not one of them).
    copies = seen[2:]
    assert len(set(copies)) == PLACEMENTS and x.data.ptr not in copies
    assert gpu.captures == captures + PLACEMENTS
    samples = [sample() for _ in range(2 * PLACEMENTS)]
    assert gpu.captures == captures + PLACEMENTS  # every placement keeps its graph
    assert samples == pytest.approx([5e-6 + NODE] * len(samples))


def test_each_placement_puts_the_copies_and_the_calls_arrays_at_its_own_offset(
    gpu: FakeGpu,
) -> None:
    # Every offset in steps of 256 bytes modulo 2 KiB, once each, whatever the addresses
    # the pools hand out (multiples of 512 bytes here): the measurement then mixes the
    # offsets in equal parts, wherever this process's history left free memory.
    inputs: list[int] = []
    outputs: list[int] = []

    def allocating(x: FakeArray) -> FakeBlock:
        inputs.append(x.data.ptr % PLACEMENT_PERIOD)
        outputs.append(gpu.allocate(1024).ptr % PLACEMENT_PERIOD)
        gpu.launch(5e-6)
        return FakeBlock(gpu.default_pool, outputs[-1])

    client = CudaClient(cold_l2=False, timing="device")
    x = FakeArray(ptr=4096 + 512, gpu=gpu)
    client.time(allocating, (x,))
    del inputs[:], outputs[:]
    client.placed_sampler(allocating, (x,))
    offsets = list(range(0, PLACEMENT_PERIOD, PLACEMENT_STEP))
    assert len(offsets) == PLACEMENTS
    # Each placement's warm-up and capture, in turn.
    assert inputs[::2] == offsets and outputs[::2] == offsets
    assert inputs[1::2] == offsets and outputs[1::2] == offsets


def test_a_placement_copies_an_array_given_twice_once(gpu: FakeGpu) -> None:
    # `op(x, x)`: the placement's copies alias as the caller's arguments do (one copy, given
    # twice), so an in-place call reads what it writes, and the copies cost one array.
    pairs: list[tuple[FakeArray, FakeArray]] = []

    def call(a: FakeArray, b: FakeArray) -> None:
        pairs.append((a, b))
        gpu.launch(5e-6)

    client = CudaClient(cold_l2=False, timing="device")
    x = FakeArray(ptr=4096, gpu=gpu)
    client.time(call, (x, x))
    del pairs[:]
    client.placed_sampler(call, (x, x))
    assert pairs and all(a is b and a is not x for a, b in pairs)


def test_arrays_of_one_allocation_that_overlap_are_timed_where_the_caller_has_them(
    gpu: FakeGpu,
) -> None:
    # A cache and its view (`op(cache, cache[:, :2])`): copied apart to each placement, the
    # call no longer read what it wrote, and its time was another call's, as the CPU's
    # placements (`cpu_placements.placeable`) already knew.
    pairs: list[tuple[int, int]] = []

    def call(a: FakeArray, b: FakeArray) -> None:
        pairs.append((a.data.ptr, b.data.ptr))
        gpu.launch(5e-6)

    client = CudaClient(cold_l2=False, timing="device")
    cache = FakeArray(ptr=4096, shape=(64,), gpu=gpu)
    slot = FakeArray(ptr=4096 + 16, shape=(8,), gpu=gpu)
    slot.data.mem = cache.data.mem
    client.time(call, (cache, slot))
    client.placed_sampler(call, (cache, slot))
    assert len(pairs) > 1 and set(pairs) == {(4096, 4096 + 16)}
    apart = FakeArray(ptr=4096 + 256, shape=(8,), gpu=gpu)  # past the cache's end: no overlap
    apart.data.mem = cache.data.mem
    del pairs[:]
    client.placed_sampler(call, (cache, apart))
    assert len({a for a, _ in pairs}) == PLACEMENTS


def test_a_placement_copies_an_array_in_its_own_memory_order(gpu: FakeGpu) -> None:
    # `copy()` is C order: a Fortran-ordered or transposed input was timed in a layout the
    # caller never passes, as the CPU's inputs were (`clone.clone_value`).
    client = CudaClient(cold_l2=False, timing="device")
    x = FakeArray(ptr=4096, gpu=gpu)
    client.time(lambda a: gpu.launch(5e-6), (x,))
    client.placed_sampler(lambda a: gpu.launch(5e-6), (x,))
    assert x.orders and set(x.orders) == {"K"}


def test_a_placement_copies_a_contiguous_array_by_memcpy_and_a_strided_one_by_kernel(
    gpu: FakeGpu,
) -> None:
    # CuPy's copy kernel is compiled per dtype on its first use (80-160 ms on a fresh H200
    # host), which the gate's placements paid where the tuner's copies no longer did; a
    # strided view cannot be copied byte for byte, and an array of another GPU is copied
    # onto the client's by CuPy. (A strided view spanning little more than its elements
    # keeps its strides, `clone._strided_device_copy`, on the GPU in tests/gpu; this one is
    # spread wide, and CuPy's copy makes it contiguous.)
    client = CudaClient(cold_l2=False, timing="device")
    x = FakeArray(ptr=4096, gpu=gpu)
    strided = FakeArray(ptr=1 << 16, gpu=gpu, contiguous=False)
    strided.strides = (8 << 20,)
    seen: list[tuple[FakeArray, ...]] = []

    def call(*arrays: FakeArray) -> None:
        seen.append(arrays)
        gpu.launch(5e-6)

    client.time(call, (x, strided))
    client.placed_sampler(call, (x, strided))
    assert x.copied_by == ["memcpy"] * PLACEMENTS
    assert strided.copied_by == ["kernel"] * PLACEMENTS
    assert all(s[0].copied_from is x for s in seen[2:])  # each placement's call, on its copy


def test_a_short_calls_gate_sample_is_a_round_of_every_placement(gpu: FakeGpu) -> None:
    client = CudaClient(cold_l2=False, timing="device")
    x = FakeArray(ptr=4096, gpu=gpu)
    sample = client.placed_sampler(lambda x: kernels(gpu, 5e-6)(), (x,))
    ran = gpu.ran.count(5e-6)
    assert sample() == pytest.approx(5e-6 + NODE)
    assert gpu.ran.count(5e-6) == ran + PLACEMENTS  # one replay at each placement


def test_a_long_calls_gate_sample_visits_one_placement(gpu: FakeGpu) -> None:
    # Eight calls of 5 ms would outlast ROUND_OF_PLACEMENTS_S: one placement per sample.
    client = CudaClient(cold_l2=False, timing="device")
    x = FakeArray(ptr=4096, gpu=gpu)
    sample = client.placed_sampler(lambda x: kernels(gpu, 5e-3)(), (x,))
    ran = gpu.ran.count(5e-3)
    sample()
    assert gpu.ran.count(5e-3) == ran + 1


def test_inputs_too_large_to_copy_are_copied_fewer_times(gpu: FakeGpu) -> None:
    seen: set[int] = set()

    def one_kernel(x: FakeArray) -> None:
        seen.add(x.data.ptr)
        gpu.launch(5e-6)

    client = CudaClient(cold_l2=False)
    big = FakeArray(ptr=4096, shape=((1 << 34) // 8 // 4 // 3,))  # a third of the share
    sample = client.placed_sampler(one_kernel, (big,))
    for _ in range(PLACEMENTS):
        sample()
    # Three copies fit in the share; the other placements place only the call's own arrays.
    assert len(seen) == 4 and big.data.ptr in seen


def test_a_long_calls_first_timing_is_its_captures_warm_up_one_run_on_the_device(
    gpu: FakeGpu,
) -> None:
    long_call = kernels(gpu, 5e-3)
    client = CudaClient(cold_l2=False)
    assert client.time(long_call, ()) == pytest.approx(STREAM_LAUNCH + 5e-3)
    assert gpu.ran.count(5e-3) == 1 and gpu.captures == 1  # captured, not replayed
    assert client.time(long_call, ()) == pytest.approx(NODE + 5e-3)  # replays from then on
    assert gpu.ran.count(5e-3) == 2
    cost = client.call_costs(long_call)
    assert cost is not None and cost.device == pytest.approx(NODE + 5e-3)


def test_a_short_calls_first_timing_is_a_replay_after_its_warm_up(gpu: FakeGpu) -> None:
    client = CudaClient(cold_l2=False)
    assert client.time(kernels(gpu, 1e-3), ()) == pytest.approx(NODE + 1e-3)
    assert gpu.ran.count(1e-3) == 2


def test_a_long_call_the_host_may_bind_gets_a_replay_on_its_first_timing(gpu: FakeGpu) -> None:
    # 5 ms on the device, 2 ms for the host to enqueue: not device-bound by ENQUEUE_MARGIN.
    clock = HostClock()

    def host_heavy() -> None:
        clock.ns += 2_000_000
        gpu.launch(5e-3)

    client = CudaClient(cold_l2=False, host_timer=clock)
    assert client.time(host_heavy, ()) == pytest.approx(NODE + 5e-3)
    assert gpu.replays > 0


def test_a_long_call_whose_warm_up_outlasted_its_hold_gets_a_replay(gpu: FakeGpu) -> None:
    # Its first call compiled for longer than the warm-up's hold: the device went on
    # without waiting, so its events read the host's time too.
    def compiling_first() -> None:
        if gpu.ran.count(5e-3) == 0:
            gpu.held_flag[1] = 1
        gpu.launch(5e-3)

    client = CudaClient(cold_l2=False)
    assert client.time(compiling_first, ()) == pytest.approx(NODE + 5e-3)
    assert gpu.ran.count(5e-3) == 2


def test_a_long_call_that_cannot_be_captured_also_keeps_its_timed_warm_up(gpu: FakeGpu) -> None:
    def on_the_legacy_stream() -> None:
        gpu.launch(5e-3, stream=gpu.legacy)

    client = CudaClient(cold_l2=False)
    assert client.time(on_the_legacy_stream, ()) == pytest.approx(STREAM_LAUNCH + 5e-3)
    assert gpu.ran.count(5e-3) == 1 and gpu.captures == 1  # its warm-up ran; its capture failed
    assert client.time(on_the_legacy_stream, ()) == pytest.approx(STREAM_LAUNCH + 5e-3)


def tune(client: CudaClient, gpu: FakeGpu, seconds: dict[str, float]) -> TuneDecision:
    """One tuning of candidates of one kernel each, of the given seconds."""
    fns = {name: kernels(gpu, s) for name, s in seconds.items()}
    return Tuner("t", client.device_id).tune("k", TunableSet.of(lambda: "k", fns), (), client)


def test_a_hopeless_long_candidate_tuned_first_runs_once_on_the_device(gpu: FakeGpu) -> None:
    # The sum family: atomic_naive (0.47 s a call) before faster candidates. It has no
    # leader to be judged against until the first pass is over; then it is cut, one run.
    client = CudaClient(cold_l2=False)
    decision = tune(client, gpu, {"atomic_naive": 0.47, "tree": 0.32e-3, "float4": 0.25e-3})
    assert decision.fastest_name == "float4"
    assert gpu.ran.count(0.47) == 1
    outcome = decision.results[0]
    assert isinstance(outcome, AutotuneOutcome)
    assert outcome.samples == pytest.approx((STREAM_LAUNCH + 0.47,))
    assert any(
        isinstance(e, Eliminated) and e.name == "atomic_naive" and e.reason.startswith("hopeless")
        for e in decision.context.events
    )


@pytest.mark.parametrize(
    ("warm", "samples", "runs"),
    [(True, 1, 1), (False, 3, 4)],
    ids=["warm-first-sample", "cold-first-sample"],
)
def test_the_cuda_clients_hopeless_margin_is_its_own_only_where_its_first_sample_is_warm(
    gpu: FakeGpu, warm: bool, samples: int, runs: int
) -> None:
    # 6x the leader, 15 ms a call: cut by the GPU's margin of 4 on its warm-up, the held
    # capture's warm-up call; a client whose first sample is not warm (no hold, no graph)
    # keeps the margin of 10 and samples it until elimination (a warm-up, three samples).
    client = CudaClient(cold_l2=False, hold_stream=warm, graph_replay=warm)
    assert client.warm_first_sample is warm
    decision = tune(client, gpu, {"fast": 2.5e-3, "close": 2.6e-3, "slow": 15e-3})
    assert decision.fastest_name == "fast"
    slow = decision.results[2]
    assert isinstance(slow, AutotuneOutcome) and len(slow.samples) == samples
    assert gpu.ran.count(15e-3) == runs


def test_a_short_call_keeps_the_default_hopeless_margin_on_the_cuda_client(gpu: FakeGpu) -> None:
    # 6x the leader at 600 us: its figure could be a caller's loop timed on the host, so
    # the margin of 4 does not judge it; it is eliminated after min_samples instead.
    client = CudaClient(cold_l2=False)
    decision = tune(client, gpu, {"fast": 100e-6, "close": 105e-6, "slow": 600e-6})
    assert decision.fastest_name == "fast"
    slow = decision.results[2]
    assert isinstance(slow, AutotuneOutcome) and len(slow.samples) == 3


def test_out_of_memory_collects_the_garbage_cycles_that_hold_device_memory_first(
    gpu: FakeGpu, monkeypatch: pytest.MonkeyPatch
) -> None:
    # An array in a reference cycle (here a self-referring holder an earlier call left)
    # keeps its block in use until the collector runs; the pool frees only unused blocks.
    class Holder:
        pass

    holder = Holder()
    holder.self = holder  # type: ignore[attr-defined]
    alive = weakref.ref(holder)
    del holder
    seen: list[bool] = []
    empty = FakePool.free_all_blocks

    def free_all_blocks(pool: FakePool) -> None:
        seen.append(alive() is None)
        empty(pool)

    monkeypatch.setattr(FakePool, "free_all_blocks", free_all_blocks)

    def hog() -> None:
        gpu.allocate(2 * gpu.free_bytes)

    gc.disable()  # the cycle stays until someone collects it
    try:
        with pytest.raises(FakeOutOfMemoryError):
            CudaClient(cold_l2=False).time(hog, ())
    finally:
        gc.enable()
    assert seen and seen[-1], seen


def test_no_device_behind_cuda_visible_devices_names_the_variable(
    gpu: FakeGpu, monkeypatch: pytest.MonkeyPatch
) -> None:
    def no_device() -> int:
        raise FakeRuntimeError(100)

    gpu.module.cuda.runtime.getDeviceCount = no_device
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "7")
    with pytest.raises(CudaUnavailableError, match="CUDA_VISIBLE_DEVICES is '7', and CUDA sees"):
        CudaClient(cold_l2=False)
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES")
    with pytest.raises(CudaUnavailableError) as error:
        CudaClient(cold_l2=False)
    assert "CUDA_VISIBLE_DEVICES" not in str(error.value)


def test_a_tracer_slows_no_host_time_the_caller_timing_reads(gpu: FakeGpu) -> None:
    # Under `pytest --cov`, coverage's tracer made the Python that enqueues a kernel several
    # times slower: a host-bound call read its traced enqueue time, so caller timing could
    # rank a one-launch candidate behind one of more device work, and a gate under --cov
    # read a regression against baselines recorded without it. Here a traced call costs
    # the host 30 us, an untraced one 10 us (2 us on the device): the sample reads 10 us.
    clock = HostClock()

    def host_bound() -> None:
        clock.ns += 10_000 if sys.gettrace() is None else 30_000
        gpu.launch(2e-6)

    def tracer(*_: object) -> Any:
        return tracer

    client = CudaClient(cold_l2=False, host_timer=clock)
    outer = sys.gettrace()  # the suite's own tracer, where it runs under coverage
    sys.settrace(tracer)
    try:
        seconds = [client.time(host_bound, ()) for _ in range(2)]
        restored = sys.gettrace()
    finally:
        sys.settrace(outer)
    assert restored is tracer
    assert seconds == [pytest.approx(10e-6)] * 2


def test_the_tuner_reads_the_devices_out_of_memory_and_empties_the_pool_after_dropping_copies(
    gpu: FakeGpu,
) -> None:
    # The tuner drops other candidates' copies of the inputs where one ran out of memory:
    # it must know CuPy's kinds of out-of-memory error, and the freed copies' blocks must
    # leave CuPy's pool, where cuBLAS (which allocates outside it) could not use them.
    client = CudaClient(cold_l2=False)
    assert client.out_of_memory(FakeOutOfMemoryError("out of memory allocating 2 GiB"))
    assert client.out_of_memory(FakeRuntimeError(2))  # cudaErrorMemoryAllocation
    assert not client.out_of_memory(FakeRuntimeError(700))  # an illegal address is no such
    assert not client.out_of_memory(ValueError("bad shape"))
    # The host's, as the CPU client reads it: a group's NumPy input (a host buffer a
    # candidate copies to the device) is copied for each candidate too.
    assert client.out_of_memory(MemoryError("Unable to allocate 2.00 GiB"))
    emptied = gpu.default_pool.emptied
    client.release_memory()
    assert gpu.default_pool.emptied == emptied + 1


@pytest.mark.parametrize(
    ("module", "name", "status"),
    [
        ("cupy_backends.cuda.libs.cusparse", "CuSparseError", 2),  # ..._ALLOC_FAILED
        ("cupy_backends.cuda.libs.curand", "CURANDError", 102),  # ..._ALLOCATION_FAILED
    ],
)
def test_a_sparse_or_random_librarys_allocation_failure_is_out_of_memory(
    gpu: FakeGpu, monkeypatch: pytest.MonkeyPatch, module: str, name: str, status: int
) -> None:
    # cuSPARSE and cuRAND allocate outside CuPy's pool too: a candidate of `cupyx.scipy.sparse`
    # or `cupy.random` that found the memory held by earlier graphs failed for good, where a
    # cuBLAS one was timed again without them and the tuner dropped the other copies first.
    kind = type(name, (FakeCublasError,), {})  # a status of its own library
    monkeypatch.setitem(sys.modules, module, SimpleNamespace(**{name: kind}))
    client = CudaClient(cold_l2=False)
    assert client.out_of_memory(kind(status))
    assert not client.out_of_memory(kind(status + 1))
