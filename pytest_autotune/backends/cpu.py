"""The CPU client: times Python callables with a monotonic nanosecond clock, probes the peaks
NumPy and BLAS reach on this machine, and names the hardware class for the cache folder."""

from __future__ import annotations

import functools
import math
import os
import platform
import re
import statistics
import sys
import time as _time
import weakref
from collections.abc import Callable, Hashable
from pathlib import Path
from typing import Any

import numpy as np

from pytest_autotune.backends.cpu_levels import (
    SYSFS_CACHE,
    cache_sizes,
    probe_cache_levels,
    sysctl,
)
from pytest_autotune.backends.cpu_placements import PLACEMENTS, placed_sampler
from pytest_autotune.backends.device_id import device_id
from pytest_autotune.backends.peaks import Peaks, load_or_probe, probe_again
from pytest_autotune.backends.tracing import tracing, untraced
from pytest_autotune.tune.benchmark import NS_PER_S
from pytest_autotune.tune.device_class import isa_level

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

MIB = 1 << 20
FALLBACK_LAST_LEVEL_CACHE = 32 * MIB
MAX_PROBE_BUFFER = 256 << 20
MIN_PROBE_BUFFER = 64 * MIB

MATMUL_SIZES = (128, 256, 512, 1024)
MATMUL_PROBE_S = 0.05
MAX_MATMUL_RUNS = 1000

_THREAD_ENV = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")
_VENDOR_NOISE = re.compile(r"\((?:r|tm)\)|@\s*[\d.]+\s*[gm]hz|\b(?:cpu|processor|\d+-core)\b")


CPUINFO = "/proc/cpuinfo"
CGROUP_ROOT = Path("/sys/fs/cgroup")


@functools.cache
def cpu_model_name() -> str:
    """The CPU's marketing name: /proc/cpuinfo on Linux, `sysctl machdep.cpu.brand_string` on
    macOS, the registry's `ProcessorNameString` on Windows; else what `platform` knows, which
    on macOS is only `arm` or `i386`: every Mac of a kind and thread count shared one device
    id, an M1's baselines judging an M3's times."""
    return (
        _proc_model_name()
        or _macos_model_name()
        or _windows_model_name()
        or platform.processor()
        or platform.machine()
        or "unknown"
    )


def _proc_model_name() -> str | None:
    try:
        with open(CPUINFO, encoding="utf-8", errors="replace") as cpuinfo:
            for line in cpuinfo:
                name, colon, value = line.partition(":")
                if colon and name.strip() == "model name" and value.strip():
                    return value.strip()
    except OSError:
        pass
    return None


def _macos_model_name() -> str | None:
    return sysctl("machdep.cpu.brand_string")


def _windows_model_name() -> str | None:
    if sys.platform != "win32":
        return None
    try:
        import winreg

        path = r"HARDWARE\DESCRIPTION\System\CentralProcessor\0"
        with winreg.OpenKey(winreg.HKEY_LOCAL_MACHINE, path) as key:
            value = winreg.QueryValueEx(key, "ProcessorNameString")[0]
    except (ImportError, OSError):
        return None
    return value.strip() if isinstance(value, str) else None


def cpu_flags() -> frozenset[str]:
    """The CPU's feature flags (`/proc/cpuinfo`: `flags` on x86, `Features` on Arm); empty
    where the system does not list them."""
    try:
        with open(CPUINFO, encoding="utf-8", errors="replace") as cpuinfo:
            for line in cpuinfo:
                name, colon, value = line.partition(":")
                if colon and name.strip() in ("flags", "Features"):
                    return frozenset(value.split())
    except OSError:
        pass
    return frozenset()


def cpu_threads() -> int:
    """The CPUs this process may run on. A container or `taskset` limits them (a cpuset, or
    a CPU quota rounded up: `docker run --cpus=2`, a Kubernetes CPU limit, which leave every
    CPU of the host in the affinity mask), and they are what threaded BLAS and the probes
    can use, so they belong in the hardware class."""
    try:
        allowed = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # macOS, Windows; a sandbox that refuses the call
        allowed = os.cpu_count() or 1
    quota = cpu_quota()
    return allowed if quota is None else min(allowed, max(1, math.ceil(quota)))


def cpu_quota(proc: Path = Path("/proc"), cgroup_root: Path = CGROUP_ROOT) -> float | None:
    """The CPUs' worth of time this process's cgroup may use (its quota over its period),
    the least of its group's and its ancestors' as far as the mount shows them (inside a
    container, its own group is the mount's root); None where none is set or no cgroup
    reads (another OS)."""
    found = [
        quota
        for v2, group in _cgroup_folders("cpu", proc, cgroup_root)
        if (quota := _v2_quota(group) if v2 else _v1_quota(group)) is not None
    ]
    return min(found) if found else None


def memory_limit(proc: Path = Path("/proc"), cgroup_root: Path = CGROUP_ROOT) -> int | None:
    """The bytes of memory this process's cgroup may use (cgroup v2 `memory.max`, v1
    `memory.limit_in_bytes`), the least of its group's and its ancestors'; None where none
    is set or no cgroup reads."""
    found = []
    for v2, group in _cgroup_folders("memory", proc, cgroup_root):
        fields = _read_fields(group / ("memory.max" if v2 else "memory.limit_in_bytes"))
        if len(fields) == 1 and fields[0].isdigit() and int(fields[0]) > 0:
            found.append(int(fields[0]))
    return min(found) if found else None


def _cgroup_folders(controller: str, proc: Path, cgroup_root: Path) -> list[tuple[bool, Path]]:
    """The folders of this process's cgroup and its ancestors that hold `controller`'s
    files, each with whether it is cgroup v2's, from `<proc>/self/cgroup`: v2 mounted at
    the root or, on a hybrid host, at `unified`; v1 at the controller's own mount."""
    try:
        lines = (proc / "self" / "cgroup").read_text().splitlines()
    except (OSError, ValueError):
        return []
    folders = []
    for line in lines:
        _, _, rest = line.partition(":")
        controllers, _, group = rest.partition(":")
        parts = [part for part in group.strip().split("/") if part]
        if controllers == "":
            mounts, v2 = [cgroup_root, cgroup_root / "unified"], True
        elif controller in controllers.split(","):
            mounts, v2 = [cgroup_root / controllers, cgroup_root / controller], False
        else:
            continue
        for mount in mounts:
            folders += [(v2, mount.joinpath(*parts[:depth])) for depth in range(len(parts), -1, -1)]
    return folders


def _v2_quota(group: Path) -> float | None:
    """`cpu.max`: `<quota> <period>`, or `max <period>` for none."""
    fields = _read_fields(group / "cpu.max")
    if len(fields) != 2 or fields[0] == "max":
        return None
    return _ratio(fields[0], fields[1])


def _v1_quota(group: Path) -> float | None:
    """`cpu.cfs_quota_us` (-1 for none) over `cpu.cfs_period_us`."""
    quota, period = (
        _read_fields(group / "cpu.cfs_quota_us"),
        _read_fields(group / "cpu.cfs_period_us"),
    )
    if len(quota) != 1 or len(period) != 1:
        return None
    return _ratio(quota[0], period[0])


def _read_fields(path: Path) -> list[str]:
    try:
        return path.read_text().split()
    except (OSError, ValueError):
        return []


def _ratio(quota: str, period: str) -> float | None:
    if not (quota.isdigit() and period.isdigit()) or int(quota) == 0 or int(period) == 0:
        return None
    return int(quota) / int(period)


def device_id_from(model_name: str, threads: int) -> str:
    """The cache folder name of a CPU, e.g. `cpu-amd-epyc-7b13-2t`.

    Trademark signs, "CPU", "Processor", the core count and the nominal clock are dropped:
    they vary in spelling between otherwise identical parts, and folders must match on
    every machine of one class. The thread count stays: it changes BLAS and memory peaks.
    """
    cleaned = _VENDOR_NOISE.sub(" ", model_name.lower())
    return device_id("cpu", cleaned, f"-{threads}t")


def _thread_env() -> dict[str, str]:
    """The variables that cap BLAS and OpenMP threads, where set: they change timings."""
    return {name: os.environ[name] for name in _THREAD_ENV if name in os.environ}


def _blas_info() -> dict[str, str] | None:
    """NumPy's BLAS (name, version, build configuration), None where NumPy cannot say."""
    try:
        config: Any = np.show_config(mode="dicts")
    except TypeError:  # NumPy < 1.25 only prints its configuration
        return None
    blas = config.get("Build Dependencies", {}).get("blas") if isinstance(config, dict) else None
    if not isinstance(blas, dict):
        return None
    kept = ("name", "version", "openblas configuration")
    return {name: str(blas[name]) for name in kept if name in blas}


def last_level_cache_bytes(cache_root: Path = SYSFS_CACHE) -> int | None:
    """The size of CPU 0's outermost data cache (`cpu_levels.cache_sizes`), None where the
    OS does not say."""
    sizes = cache_sizes(cache_root)
    return sizes[max(sizes)] if sizes else None


def _physical_memory() -> int | None:
    """The machine's memory, or a container's limit where that is less: the host's whole
    memory sized the probe's buffers for a container of 1 GiB as for the host, 512 MiB of
    them, past what its limit left to the tests."""
    try:
        memory: int | None = os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (AttributeError, ValueError, OSError):  # not a POSIX system
        memory = None
    limit = memory_limit()
    return limit if memory is None or (limit is not None and limit < memory) else memory


def probe_buffer_bytes(last_level_cache: int | None, memory: int | None) -> int:
    """Four times the last-level cache (32 MiB where unknown), at least 64 MiB, so the probes
    stream from memory and not from a cache; at most 256 MiB, and 1/16 of the memory.

    A virtual machine often reports the host's whole L3 (480 MiB was seen), which would ask
    for 2 GB buffers: at 256 MiB the probes measured the same bandwidth in 0.5 s instead of
    11 s, and one core's share of a server L3 is far below that anyway.
    """
    size = min(
        max(4 * (last_level_cache or FALLBACK_LAST_LEVEL_CACHE), MIN_PROBE_BUFFER), MAX_PROBE_BUFFER
    )
    return min(size, memory // 16) if memory else size


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


def _best_seconds(run: Callable[[], object], reps: int) -> float:
    """The fastest of `reps` runs after one warm-up: a peak is what the machine can do, and
    every disturbance (page faults, another process, a clock ramp) only adds time."""
    run()
    best = math.inf
    for _ in range(reps):
        start = _time.perf_counter_ns()
        run()
        best = min(best, (_time.perf_counter_ns() - start) / NS_PER_S)
    return best


def probe_cpu_peaks(buffer_bytes: int | None = None, matmul_n: int = 2048, reps: int = 5) -> Peaks:
    """Measure this CPU's memory bandwidth and BLAS throughput with NumPy.

    The memory probes are single NumPy calls on float64 buffers (`copyto` for copy, counted
    as read plus written bytes; `add.reduce` for read; `fill` for write). NumPy streams on
    one thread, so these are the roofs a NumPy candidate can reach, not what every core
    together could. They run over buffers beyond the caches (the DRAM level) and over
    working sets that fit each cache level (`cpu_levels.probe_cache_levels`). The compute
    probes are `matmul` of `matmul_n` squared matrices in fp32 and fp64 (2 n^3
    operations), which BLAS runs on its threads.
    """
    if reps < 1 or matmul_n < 1:
        raise ValueError(f"probe_cpu_peaks: reps and matmul_n must be >= 1, got {reps}, {matmul_n}")
    last_level_cache = last_level_cache_bytes()
    if buffer_bytes is None:
        buffer_bytes = probe_buffer_bytes(last_level_cache, _physical_memory())
    size = max(buffer_bytes // 8, 1) * 8
    return Peaks(
        memory=_memory_rates(size, reps),
        levels=probe_cache_levels(3 * reps),  # short loops: more of them find a quiet moment
        outer_level="DRAM",
        compute={
            "fp32": _matmul_rate(np.float32, matmul_n, reps),
            "fp64": _matmul_rate(np.float64, matmul_n, reps),
        },
        threads=cpu_threads(),
        details={
            "buffer_bytes": size,
            "last_level_cache_bytes": last_level_cache,
            "matmul_n": matmul_n,
            "reps": reps,
            "memory_probe_threads": 1,
            "thread_env": _thread_env(),
        },
    )


def _memory_rates(size: int, reps: int) -> dict[str, float]:
    """Bytes per second of copy (read plus written), read, write, and add (`y += x`: two
    reads and a write, the stream mix of an update in place such as saxpy, which runs
    faster than a copy where reads cost less than writes) over float64 buffers; the buffers
    are touched when made, so no probe times the page faults of a first use."""
    source = np.ones(size // 8, dtype=np.float64)
    target = np.empty_like(source)
    target.fill(0.0)
    nbytes = float(source.nbytes)
    return {
        "copy": 2 * nbytes / _best_seconds(lambda: np.copyto(target, source), reps),
        "read": nbytes / _best_seconds(lambda: np.add.reduce(source), reps),
        "write": nbytes / _best_seconds(lambda: target.fill(1.0), reps),
        "add": 3 * nbytes / _best_seconds(lambda: np.add(source, target, out=target), reps),
    }


def _matmul_rate(dtype: type[np.floating[Any]], n: int, reps: int) -> float:
    """Operations per second of n x n matmuls: 2 n^3 (a multiply and an add per term), the
    best over sizes from `MATMUL_SIZES` up to `n`.

    One size is not enough on a shared machine: a 2048 product lasts about 0.1 s, and on
    two vCPUs shared with other processes each of five runs met a neighbour, so a 256
    product timed in a quiet moment read 130-370% of that "peak". Smaller products are
    repeated until `MATMUL_PROBE_S` has passed, so one of them finds a quiet moment too.
    """
    best = 0.0
    for size in sorted({*(m for m in MATMUL_SIZES if m < n), n}):
        a = np.ones((size, size), dtype=dtype)
        product = functools.partial(np.matmul, a, a, out=np.empty_like(a))
        once = _best_seconds(product, 1)
        runs = max(reps, min(MAX_MATMUL_RUNS, math.ceil(MATMUL_PROBE_S / once)))
        seconds = _best_seconds(product, runs)
        best = max(best, 2.0 * size**3 / seconds)
    return best


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
    key would otherwise loop a thousand times too long.
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
        if not (min_sample_time > 0 and math.isfinite(min_sample_time)):
            raise ValueError(
                f"min_sample_time must be a positive number of seconds, got {min_sample_time!r}"
            )
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
            "blas": _blas_info(),
            "thread_env": _thread_env(),
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
    for _ in range(repeats):
        fn(*inputs)
    return timer() - start


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
