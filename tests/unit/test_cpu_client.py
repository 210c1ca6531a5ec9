"""The CPU client: exact timing logic under a fake clock, its identity, and a quick real probe."""

from __future__ import annotations

import concurrent.futures
import functools
import gc
import importlib
import json
import math
import os
import pickle
import re
import sys
import threading
import weakref
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from pytest_autotune import AutotuneConfig, TunableSet, local_tuner
from pytest_autotune.backends import Client, CpuClient, cpu
from pytest_autotune.backends.peaks import Peaks, peaks_path
from tests.fakes import FakeClock, candidate, failing

# `pytest_autotune.backends.cpu` the attribute is the `cpu()` function, as the design's
# `from pytest_autotune.backends import cpu` wants; the module is reached by its name.
cpu_module = importlib.import_module("pytest_autotune.backends.cpu")
cpu_levels = importlib.import_module("pytest_autotune.backends.cpu_levels")
cpu_device = importlib.import_module("pytest_autotune.backends.cpu_device")
cpu_peaks = importlib.import_module("pytest_autotune.backends.cpu_peaks")
cgroups = importlib.import_module("pytest_autotune.backends.cgroups")

MAX_REPEATS = cpu_module.MAX_REPEATS


def calls(fn: Any) -> int:
    return int(fn.calls)


@pytest.fixture(autouse=True)
def _untraced() -> Iterator[None]:
    """The call counts here are a process's without a tracer: under one (this suite run with
    `--cov`) the client makes one more call, traced, before each calibration. Put aside and
    back in this one generator frame, which keeps coverage.py's stack of frames whole
    (`backends.tracing.untraced`)."""
    hooks = ((sys.settrace, sys.gettrace()), (sys.setprofile, sys.getprofile()))
    put_aside = [(put, hook) for put, hook in hooks if callable(hook)]  # as the client does
    for put, _ in put_aside:
        put(None)
    try:
        yield
    finally:
        for put, hook in put_aside:
            put(hook)


def test_a_short_call_is_repeated_until_a_sample_is_well_above_the_timer_resolution() -> None:
    clock = FakeClock()
    fn = candidate(clock, 1e-6)
    # One call of 1 us is under the 100 us minimum, so the loop is sized to 100 calls.
    assert cpu(timer=clock).time(fn, ()) == 1e-6
    assert calls(fn) == 1 + 100


def test_the_repeat_count_is_calibrated_once_so_every_later_sample_is_the_same_loop() -> None:
    clock = FakeClock()
    fn = candidate(clock, 1e-6)
    client = cpu(timer=clock)
    client.time(fn, ())
    assert [client.time(fn, ()) for _ in range(3)] == [1e-6] * 3
    assert calls(fn) == 101 + 3 * 100


def test_a_call_longer_than_the_minimum_sample_is_timed_once() -> None:
    clock = FakeClock()
    fn = candidate(clock, 1e-3)
    client = cpu(timer=clock)
    assert [client.time(fn, ()), client.time(fn, ())] == [1e-3, 1e-3]
    assert calls(fn) == 2


def test_a_sample_the_scheduler_preempted_is_taken_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Beside other jobs a lost time slice lands inside one short sample in 15: a tuning
    # decides on three or four samples, and two such samples of the fastest candidate left
    # a 3x slower one the winner. Here the second sample is preempted once: taken again.
    clock = FakeClock()
    fn = candidate(clock, 1e-3)
    switches = iter([0, 0, 0, 1, 1, 1, 1, 1])  # (before, after) of each loop of `_sample`
    monkeypatch.setattr(cpu_module, "_involuntary_switches", lambda: next(switches))
    client = CpuClient(clock, retake_preempted=True)
    assert client.time(fn, ()) == 1e-3  # the first, calibrating sample is never retaken
    assert client.time(fn, ()) == 1e-3  # (0, 0): clean
    assert client.time(fn, ()) == 1e-3  # (0, 1): preempted, then (1, 1): clean
    assert calls(fn) == 4
    # Preempted at every try: the least of three.
    monkeypatch.setattr(cpu_module, "_involuntary_switches", iter(range(100)).__next__)
    assert client.time(fn, ()) == 1e-3
    assert calls(fn) == 4 + 1 + cpu_module.PREEMPTED_RETAKES
    # A scripted clock is read as scripted: no retake unless asked for.
    assert not cpu(timer=FakeClock())._retake_preempted


def test_a_slow_first_call_costs_one_more_try_not_a_creeping_loop() -> None:
    clock = FakeClock()
    fn = candidate(clock, [50e-6, 10e-6])
    # 1 call of 50 us aims at 2 calls; they take 20 us, which aims at 10 calls: 100 us.
    assert cpu(timer=clock).time(fn, ()) == 10e-6
    assert calls(fn) == 1 + 2 + 10


class _CostlyClock(FakeClock):
    """A fake clock whose every read costs 200 ns, as a real timer's call does."""

    def __call__(self) -> int:
        self.now_ns += 200
        return self.now_ns


def test_a_first_call_that_compiles_leaves_later_samples_looped_as_any_short_calls_are() -> None:
    # Numba's `@njit` compiles on its first call (seconds), at each new dtype too: the call
    # that calibrates. Sampled one call at a time after it, a 1 us kernel read 1.2 us, the
    # timer's own cost, where a loop of 100 calls reads it within 0.2%.
    clock = _CostlyClock()
    jitted = candidate(clock, [2.0, 1e-6])
    client = cpu(timer=clock)
    assert client.time(jitted, ()) == pytest.approx(2.0)  # the warm-up: the compile
    assert [client.time(jitted, ()) for _ in range(3)] == [pytest.approx(1e-6, rel=3e-3)] * 3


def test_a_faster_candidate_that_compiles_on_its_first_call_wins() -> None:
    clock = _CostlyClock()
    jitted = candidate(clock, [2.0, 1.0e-6], name="njit_loop", result="njit_loop")
    plain = candidate(clock, 1.1e-6, name="numpy_expr", result="numpy_expr")
    tunables = TunableSet.of(lambda x: "key", {"numpy_expr": plain, "njit_loop": jitted})
    tuner = local_tuner("jit", AutotuneConfig(disable_cache=True))
    client = cpu(timer=clock)
    assert tuner.execute(client.device_id, client, tunables, (0,)) == "njit_loop"


def test_the_minimum_sample_time_sets_how_long_a_loop_lasts() -> None:
    clock = FakeClock()
    fn = candidate(clock, 1e-6)
    assert cpu(timer=clock, min_sample_time=1e-3).time(fn, ()) == 1e-6
    assert calls(fn) == 1 + 1000


def test_each_input_shape_is_calibrated_for_itself() -> None:
    clock = FakeClock()
    seen: list[int] = []

    def by_size(x: np.ndarray[Any, Any]) -> None:
        seen.append(x.size)
        clock.advance(x.size * 1e-9)

    client = cpu(timer=clock)
    small, large = np.zeros(1_000), np.zeros(1_000_000)
    assert client.time(by_size, (small,)) == 1e-6
    assert client.time(by_size, (large,)) == 1e-3
    assert client.time(by_size, (np.ones(1_000),)) == 1e-6
    assert client.time(by_size, (large,)) == 1e-3
    # A large input is never looped as long as the small one's count would have it.
    assert seen.count(1_000_000) == 2
    assert seen.count(1_000) == 101 + 100


def test_a_call_the_timer_cannot_see_stops_at_the_repeat_cap() -> None:
    clock = FakeClock()
    fn = candidate(clock, 0.0)
    assert cpu(timer=clock).time(fn, ()) == 0.0
    assert calls(fn) == 2 * MAX_REPEATS - 1  # 1 + 2 + 4 + ... + MAX_REPEATS


def test_what_a_candidate_raises_comes_through_time() -> None:
    def broken() -> None:
        raise ValueError("bad shape")

    with pytest.raises(ValueError, match="bad shape"):
        cpu(timer=FakeClock()).time(broken, ())


def test_timing_a_candidate_does_not_keep_it_alive() -> None:
    clock = FakeClock()
    fn = candidate(clock, 1e-6)
    client = cpu(timer=clock)
    client.time(fn, ())
    ref = weakref.ref(fn)
    del fn
    gc.collect()
    assert ref() is None


class Slotted:
    """A callable that cannot be weakly referenced, like `np.sum` or a ufunc."""

    __slots__ = ("calls", "clock")

    def __init__(self, clock: FakeClock) -> None:
        self.clock = clock
        self.calls = 0

    def __call__(self) -> None:
        self.calls += 1
        self.clock.advance(1e-6)


class Unhashable(Slotted):
    __slots__ = ()

    def __eq__(self, other: object) -> bool:
        return self is other

    __hash__ = None  # type: ignore[assignment]


def test_a_candidate_that_cannot_be_weakly_referenced_keeps_its_repeat_count() -> None:
    clock = FakeClock()
    fn = Slotted(clock)
    client = cpu(timer=clock)
    assert [client.time(fn, ()), client.time(fn, ())] == [1e-6, 1e-6]
    assert fn.calls == 101 + 100


def test_a_candidate_that_cannot_be_a_key_is_calibrated_on_every_call_and_still_exact() -> None:
    clock = FakeClock()
    fn = Unhashable(clock)
    client = cpu(timer=clock)
    assert [client.time(fn, ()), client.time(fn, ())] == [1e-6, 1e-6]
    assert fn.calls == 2 * 101


def test_the_launch_overhead_is_an_empty_call_timed_the_same_way_and_measured_once() -> None:
    client = cpu(timer=FakeClock())
    assert client.launch_overhead == 0.0  # the fake clock only moves when a candidate says so
    real = cpu()
    assert real.launch_overhead > 0 and math.isfinite(real.launch_overhead)
    assert real.launch_overhead == real.launch_overhead


@pytest.mark.parametrize("value", [0.0, -1e-6, math.nan, math.inf])
def test_a_minimum_sample_time_that_is_not_a_positive_duration_is_refused(value: float) -> None:
    with pytest.raises(ValueError, match="min_sample_time"):
        cpu(min_sample_time=value)


def test_cpu_with_the_defaults_is_one_client_per_process() -> None:
    assert cpu() is cpu()
    assert cpu(timer=FakeClock()) is not cpu()
    assert isinstance(cpu(), Client)


def test_a_pickled_cpu_client_loads_as_a_client_with_the_same_settings() -> None:
    """A pool pickles what it sends to its workers; the client's calibrated repeat counts,
    weakly keyed, refused ("Can't pickle local object 'WeakKeyDictionary...'"). The shared
    client loads as the loading process's own, another as a client of its settings."""
    assert pickle.loads(pickle.dumps(cpu())) is cpu()
    own = cpu(min_sample_time=2e-3)
    again = pickle.loads(pickle.dumps(own))
    assert again is not cpu()
    assert again.device_id == own.device_id
    assert again._min_sample_ns == own._min_sample_ns


@pytest.mark.parametrize(
    ("model", "threads", "device_id"),
    [
        ("AMD EPYC 7B13 64-Core Processor", 2, "cpu-amd-epyc-7b13-2t"),
        ("Intel(R) Xeon(R) CPU @ 2.20GHz", 8, "cpu-intel-xeon-8t"),
        ("Intel(R) Xeon(R) Processor", 2, "cpu-intel-xeon-2t"),
        ("Intel(R) Core(TM) i7-8700K CPU @ 3.70GHz", 12, "cpu-intel-core-i7-8700k-12t"),
        ("AMD Ryzen 9 5950X 16-Core Processor", 32, "cpu-amd-ryzen-9-5950x-32t"),
        ("Apple M2 Pro", 10, "cpu-apple-m2-pro-10t"),
        ("(R)", 1, "cpu-unknown-1t"),
    ],
)
def test_a_device_id_keeps_the_part_and_threads_and_drops_vendor_noise(
    model: str, threads: int, device_id: str
) -> None:
    assert cpu_device.device_id_from(model, threads) == device_id


def test_this_machines_device_id_is_a_folder_name_ending_in_its_thread_count() -> None:
    device_id = cpu().device_id
    assert re.fullmatch(r"cpu-[a-z0-9-]+-\d+t", device_id)
    assert device_id.endswith(f"-{cpu_device.cpu_threads()}t")


def test_the_fingerprint_names_what_changes_timings_and_is_plain_json() -> None:
    fingerprint = cpu().fingerprint()
    assert {"model", "threads", "python", "numpy", "blas", "thread_env", "platform"} <= set(
        fingerprint
    )
    assert fingerprint["numpy"] == np.__version__
    assert json.loads(json.dumps(fingerprint)) == fingerprint


def test_the_fingerprint_keeps_numbas_thread_count_where_it_is_set(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A `parallel=True` kernel runs NUMBA_NUM_THREADS threads: a baseline recorded with 2
    # and a gate run with 1 differ by it, and the cache file's device block should say so.
    monkeypatch.setenv("NUMBA_NUM_THREADS", "1")
    assert cpu().fingerprint()["thread_env"]["NUMBA_NUM_THREADS"] == "1"


def fake_cache(root: Path, levels: list[tuple[str, str, str]]) -> Path:
    for i, (level, kind, size) in enumerate(levels):
        index = root / f"index{i}"
        index.mkdir(parents=True)
        (index / "level").write_text(f"{level}\n")
        (index / "type").write_text(f"{kind}\n")
        (index / "size").write_text(f"{size}\n")
    return root


def test_the_last_level_cache_is_the_outermost_data_cache_in_sysfs(tmp_path: Path) -> None:
    root = fake_cache(
        tmp_path,
        [
            ("1", "Data", "48K"),
            ("1", "Instruction", "64K"),
            ("2", "Unified", "2048K"),
            ("3", "Unified", "32M"),
        ],
    )
    assert cpu_peaks.last_level_cache_bytes(root) == 32 << 20
    assert cpu_peaks.last_level_cache_bytes(tmp_path / "missing") is None


@pytest.mark.parametrize(
    ("last_level_cache", "memory", "expected"),
    [
        (32 << 20, 64 << 30, 128 << 20),  # four times the cache
        (None, 64 << 30, 128 << 20),  # an unknown cache counts as 32 MiB
        (4 << 20, 64 << 30, 64 << 20),  # never under 64 MiB
        (480 << 20, 24 << 30, 256 << 20),  # a VM reporting the host's L3: capped at 256 MiB
        (32 << 20, 1 << 30, 64 << 20),  # never over 1/16 of the memory
        (32 << 20, None, 128 << 20),
    ],
)
def test_the_probe_buffer_is_several_times_the_last_level_cache(
    last_level_cache: int | None, memory: int | None, expected: int
) -> None:
    assert cpu_peaks.probe_buffer_bytes(last_level_cache, memory) == expected


def test_a_quick_real_probe_measures_positive_finite_peaks() -> None:
    peaks = cpu_peaks.probe_cpu_peaks(buffer_bytes=1 << 20, matmul_n=32, reps=2)
    assert set(peaks.memory) == {"copy", "read", "write", "add", "update"}
    assert set(peaks.compute) == {"fp32", "fp64"}
    for rate in [*peaks.memory.values(), *peaks.compute.values()]:
        assert rate > 0 and math.isfinite(rate)
    assert peaks.threads == cpu_device.cpu_threads()
    assert peaks.details["buffer_bytes"] == 1 << 20
    assert peaks.details["matmul_n"] == 32
    assert Peaks.from_json(json.loads(json.dumps(peaks.to_json(), allow_nan=False))) == peaks


def test_the_clients_peaks_come_from_its_cache_folder_when_one_is_given(tmp_path: Path) -> None:
    cached = Peaks(memory={"read": 1e10, "add": 2e10}, compute={"fp32": 1e11}, threads=2)

    def no_probe() -> Peaks:
        raise AssertionError("the peaks should have come from the cache file")

    client = CpuClient(peaks_cache_dir=tmp_path, probe=no_probe)
    path = peaks_path(tmp_path, client.device_id)
    path.parent.mkdir()
    document = {"schema_version": 1, "device_id": client.device_id, "peaks": cached.to_json()}
    path.write_text(json.dumps(document))
    assert client.peaks() == cached


def test_cache_sizes_come_from_sysfs_by_level_without_instruction_caches(tmp_path: Path) -> None:
    root = fake_cache(
        tmp_path,
        [("1", "Data", "48K"), ("1", "Instruction", "64K"), ("2", "Unified", "2048K")],
    )
    assert cpu_levels.cache_sizes(root) == {1: 48 << 10, 2: 2 << 20}


def test_cache_sizes_are_unknown_where_os_has_neither_sysfs_nor_sysconf(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Windows has no `os.sysconf` nor `os.sysconf_names`: the peak probe raised
    AttributeError there, where the probe buffer's fallback size was meant."""
    import os

    monkeypatch.delattr(os, "sysconf_names")
    monkeypatch.delattr(os, "sysconf")
    assert cpu_levels.cache_sizes(tmp_path / "no-sysfs") == {}
    assert cpu_peaks.last_level_cache_bytes(tmp_path / "no-sysfs") is None


def test_each_cache_level_is_probed_just_past_the_level_inside_it() -> None:
    sets = cpu_levels.probe_working_sets({1: 48 << 10, 2: 2 << 20, 3: 32 << 20})
    assert sets == {1: [12 << 10, 24 << 10], 2: [96 << 10, 384 << 10], 3: [4 << 20, 16 << 20]}


def test_a_quick_real_probe_measures_every_cache_level_it_is_given() -> None:
    levels = cpu_levels.probe_cache_levels(reps=1, sizes={1: 32 << 10, 2: 1 << 20})
    assert [(level.name, level.capacity) for level in levels] == [("L1", 32 << 10), ("L2", 1 << 20)]
    for level in levels:
        assert set(level.rates) == {"copy", "read", "write", "add", "update"}
        assert all(rate > 0 and math.isfinite(rate) for rate in level.rates.values())


class CallTracer:
    """A trace or profile function, as coverage.py, a debugger or `profile` installs: it
    counts the calls of `code` it sees."""

    def __init__(self, code: Any) -> None:
        self.code = code
        self.calls = 0

    def __call__(self, frame: Any, event: str, arg: Any) -> CallTracer:
        if event == "call" and frame.f_code is self.code:
            self.calls += 1
        return self


@pytest.mark.parametrize("hook", ["trace", "profile"])
def test_a_tracer_sees_a_candidate_once_and_none_of_its_timed_calls(hook: str) -> None:
    # Under `pytest --cov` coverage's tracer slowed a 3 us pure-Python candidate 2-4 times,
    # so the gate read a false +78% regression and tuning picked another winner. The timed
    # loops run with the tracer put aside; one untimed call, traced, keeps its lines covered.
    clock = FakeClock()
    fn = candidate(clock, 1e-6)
    tracer = CallTracer(fn.__code__)
    get, put = (sys.gettrace, sys.settrace) if hook == "trace" else (sys.getprofile, sys.setprofile)
    outer = get()  # this suite's own tracer, where it runs under coverage
    client = cpu(timer=clock)
    put(tracer)
    try:
        assert [client.time(fn, ()) for _ in range(3)] == [1e-6] * 3
        restored = get()
    finally:
        put(outer)
    assert restored is tracer
    assert calls(fn) == 1 + 101 + 2 * 100  # the traced call, the calibration, two samples
    assert tracer.calls == 1


def test_a_tracer_is_put_back_when_a_timed_call_raises() -> None:
    tracer = CallTracer(None)
    outer = sys.gettrace()
    sys.settrace(tracer)
    try:
        with pytest.raises(RuntimeError, match="boom exploded"):
            cpu(timer=FakeClock()).time(failing(), ())
        restored = sys.gettrace()
    finally:
        sys.settrace(outer)
    assert restored is tracer


def test_a_thread_a_timed_call_starts_is_not_traced() -> None:
    # coverage.py traces new threads through `threading.settrace`.
    seen: list[object] = []
    clock = FakeClock()

    def starts_a_thread() -> None:
        clock.advance(1e-3)  # one call a sample
        thread = threading.Thread(target=lambda: seen.append(sys.gettrace()))
        thread.start()
        thread.join()

    outer, hook = sys.gettrace(), threading.gettrace()
    tracer = CallTracer(None)
    sys.settrace(tracer)
    threading.settrace(tracer)
    try:
        cpu(timer=clock).time(starts_a_thread, ())
        restored = threading.gettrace()
    finally:
        sys.settrace(outer)
        threading.settrace(hook)
    assert seen == [tracer, None]  # the traced call's thread, the timed call's
    assert restored is tracer


@pytest.fixture
def no_proc_cpuinfo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A machine without `/proc/cpuinfo` (macOS, Windows), whose `platform` names only the
    architecture, as macOS's does (`arm` on every Apple silicon Mac)."""
    monkeypatch.setattr(cpu_device, "CPUINFO", str(tmp_path / "no-cpuinfo"))
    monkeypatch.setattr(cpu_device.platform, "processor", lambda: "arm")
    cpu_device.cpu_model_name.cache_clear()
    yield
    cpu_device.cpu_model_name.cache_clear()


@pytest.mark.usefixtures("no_proc_cpuinfo")
def test_a_mac_is_named_by_its_cpu_model_not_its_architecture(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """macOS's `platform.processor()` is `arm` (or `i386`): every Apple silicon Mac of a
    thread count shared one device folder, an M1's baseline judging an M3's times."""
    import subprocess

    def sysctl(argv: list[str], **kwargs: Any) -> subprocess.CompletedProcess[str]:
        assert argv[-1] == "machdep.cpu.brand_string"
        return subprocess.CompletedProcess(argv, 0, "Apple M2 Pro\n", "")

    monkeypatch.setattr(cpu_device.sys, "platform", "darwin")
    monkeypatch.setattr(cpu_levels.subprocess, "run", sysctl)
    assert cpu_device.cpu_model_name() == "Apple M2 Pro"
    assert cpu_device.device_id_from(cpu_device.cpu_model_name(), 12) == "cpu-apple-m2-pro-12t"


@pytest.mark.usefixtures("no_proc_cpuinfo")
def test_a_windows_machine_is_named_by_its_cpu_model_from_the_registry(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import contextlib
    import types

    def open_key(root: object, path: str) -> contextlib.nullcontext[str]:
        assert path == r"HARDWARE\DESCRIPTION\System\CentralProcessor\0"
        return contextlib.nullcontext(path)

    registry = types.SimpleNamespace(
        HKEY_LOCAL_MACHINE=object(),
        OpenKey=open_key,
        QueryValueEx=lambda key, name: ("Intel(R) Core(TM) i7-1165G7 @ 2.80GHz  ", 1),
    )
    monkeypatch.setitem(sys.modules, "winreg", registry)
    monkeypatch.setattr(cpu_device.sys, "platform", "win32")
    assert cpu_device.cpu_model_name() == "Intel(R) Core(TM) i7-1165G7 @ 2.80GHz"


@pytest.mark.usefixtures("no_proc_cpuinfo")
def test_where_the_os_does_not_say_the_cpu_model_platform_names_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import subprocess

    def no_sysctl(argv: list[str], **kwargs: Any) -> subprocess.CompletedProcess[str]:
        raise FileNotFoundError(argv[0])

    monkeypatch.setattr(cpu_device.sys, "platform", "darwin")
    monkeypatch.setattr(cpu_levels.subprocess, "run", no_sysctl)
    assert cpu_device.cpu_model_name() == "arm"
    monkeypatch.setattr(cpu_device.sys, "platform", "win32")
    monkeypatch.delitem(sys.modules, "winreg", raising=False)
    cpu_device.cpu_model_name.cache_clear()
    assert cpu_device.cpu_model_name() == "arm"


def fake_cgroups(tmp_path: Path, lines: str, files: dict[str, str]) -> tuple[Path, Path]:
    """A `/proc` whose `self/cgroup` holds `lines`, and a cgroup mount holding `files`."""
    proc, root = tmp_path / "proc", tmp_path / "cgroup"
    (proc / "self").mkdir(parents=True)
    (proc / "self" / "cgroup").write_text(lines)
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return proc, root


@pytest.mark.parametrize(
    ("lines", "files", "quota"),
    [
        # cgroup v2 in a container's own namespace (`docker run --cpus=2`): "0::/".
        ("0::/\n", {"cpu.max": "200000 100000\n"}, 2.0),
        # v2 on a host, a limit on the parent slice (a Kubernetes pod's) and none below it.
        (
            "0::/kubepods/pod1/ctr\n",
            {
                "kubepods/pod1/cpu.max": "150000 100000\n",
                "kubepods/pod1/ctr/cpu.max": "max 100000\n",
            },
            1.5,
        ),
        # v1: the container sees its own group at the mount's root.
        (
            "4:cpu,cpuacct:/docker/abc\n0::/\n",
            {
                "cpu,cpuacct/cpu.cfs_quota_us": "400000\n",
                "cpu,cpuacct/cpu.cfs_period_us": "100000\n",
            },
            4.0,
        ),
        (
            "4:cpu,cpuacct:/\n",
            {"cpu,cpuacct/cpu.cfs_quota_us": "-1\n", "cpu,cpuacct/cpu.cfs_period_us": "100000\n"},
            None,
        ),
        ("0::/\n", {"cpu.max": "max 100000\n"}, None),
        ("0::/\n", {}, None),
    ],
)
def test_a_cgroups_cpu_quota_is_read_from_its_own_group_or_an_ancestor(
    tmp_path: Path, lines: str, files: dict[str, str], quota: float | None
) -> None:
    proc, root = fake_cgroups(tmp_path, lines, files)
    assert cgroups.cpu_quota(proc, root) == quota


def test_a_container_of_a_cpu_quota_counts_the_cpus_the_quota_allows(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """`docker run --cpus=2` (a Kubernetes CPU limit) on a 64-CPU host leaves all 64 in the
    affinity mask: the device id said `-64t`, the host's, and pods of 2 and 8 CPUs shared
    one folder of baselines, BLAS kernels 4 times apart."""
    monkeypatch.setattr(cpu_device.os, "sched_getaffinity", lambda pid: set(range(64)))
    monkeypatch.setattr(cpu_device, "cpu_quota", lambda: 1.5)
    assert cpu_device.cpu_threads() == 2
    monkeypatch.setattr(cpu_device, "cpu_quota", lambda: None)
    assert cpu_device.cpu_threads() == 64


def test_the_cpus_are_counted_where_the_affinity_mask_cannot_be_read(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def refused(pid: int) -> set[int]:
        raise PermissionError(1, "Operation not permitted")

    monkeypatch.setattr(cpu_device.os, "sched_getaffinity", refused)
    monkeypatch.setattr(cpu_device, "cpu_quota", lambda: None)
    assert cpu_device.cpu_threads() == (os.cpu_count() or 1)
    monkeypatch.delattr(cpu_device.os, "sched_getaffinity")
    assert cpu_device.cpu_threads() == (os.cpu_count() or 1)


def test_a_macs_cache_sizes_come_from_sysctl_its_performance_cores_first(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """macOS has neither sysfs nor glibc's cache `sysconf`: every problem was bounded by the
    DRAM roof, which one in a cache beats, and the first candidate under it ended tuning
    (a 2x slower sum of 512 KiB won so)."""
    import subprocess

    said = {
        "hw.perflevel0.l1dcachesize": "131072",
        "hw.perflevel0.l2cachesize": "16777216",
        "hw.l1dcachesize": "65536",
        "hw.l2cachesize": "4194304",
    }

    def sysctl(argv: list[str], **kwargs: Any) -> subprocess.CompletedProcess[str]:
        value = said.get(argv[-1])
        if value is None:
            return subprocess.CompletedProcess(argv, 1, "", f"unknown oid '{argv[-1]}'")
        return subprocess.CompletedProcess(argv, 0, value + "\n", "")

    monkeypatch.setattr(cpu_levels.sys, "platform", "darwin")
    monkeypatch.setattr(cpu_levels, "_sysconf_sizes", dict)
    monkeypatch.setattr(cpu_levels.subprocess, "run", sysctl)
    assert cpu_levels.cache_sizes(tmp_path / "no-sysfs") == {1: 128 << 10, 2: 16 << 20}
    del said["hw.perflevel0.l1dcachesize"], said["hw.perflevel0.l2cachesize"]
    said["hw.l3cachesize"] = "12582912"  # an Intel Mac
    assert cpu_levels.cache_sizes(tmp_path / "no-sysfs") == {1: 64 << 10, 2: 4 << 20, 3: 12 << 20}


def test_a_windows_machines_cache_sizes_come_from_its_logical_processor_information() -> None:
    """Windows has neither sysfs nor `sysconf`: every problem was bounded by the DRAM roof,
    and the first candidate under it ended tuning, however slow."""
    import ctypes

    info = cpu_levels._ProcessorInformation
    caches = [
        (1, 2, 48 << 10),
        (1, 1, 32 << 10),
        (2, 0, 1280 << 10),
        (2, 0, 2 << 20),
        (3, 0, 24 << 20),
    ]

    def information(buffer: Any, length_ref: Any) -> int:
        length, needed = length_ref._obj, (len(caches) + 1) * ctypes.sizeof(info)
        if buffer is None or length.value < needed:
            length.value = needed
            return 0
        entries = ctypes.cast(buffer, ctypes.POINTER(info))
        entries[0].relationship = 0  # a processor core, no cache
        for entry, (level, kind, size) in zip(entries[1 : len(caches) + 1], caches, strict=True):
            entry.relationship = 2
            entry.info.cache.level, entry.info.cache.type, entry.info.cache.size = level, kind, size
        return 1

    assert cpu_levels._windows_sizes(information) == {1: 48 << 10, 2: 2 << 20, 3: 24 << 20}
    assert cpu_levels._windows_sizes(lambda buffer, length: 0) == {}


@pytest.mark.parametrize(
    ("lines", "files", "limit"),
    [
        ("0::/\n", {"memory.max": "1073741824\n"}, 1 << 30),
        ("0::/\n", {"memory.max": "max\n"}, None),
        (
            "0::/pod/ctr\n",
            {"pod/memory.max": "536870912\n", "pod/ctr/memory.max": "max\n"},
            1 << 29,
        ),
        ("5:memory:/docker/abc\n", {"memory/memory.limit_in_bytes": "2147483648\n"}, 2 << 30),
        ("5:cpu:/\n", {"memory/memory.limit_in_bytes": "2147483648\n"}, None),
    ],
)
def test_a_cgroups_memory_limit_is_read_from_its_own_group_or_an_ancestor(
    tmp_path: Path, lines: str, files: dict[str, str], limit: int | None
) -> None:
    proc, root = fake_cgroups(tmp_path, lines, files)
    assert cgroups.memory_limit(proc, root) == limit


def test_the_probe_buffers_of_a_container_fit_its_memory_limit_not_the_hosts(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A container of 1 GiB on a host of 64 GiB got the host's 256 MiB buffers, two of
    them: half its memory, past what the tests left of it."""
    monkeypatch.setattr(cpu_peaks, "memory_limit", lambda: 1 << 30)
    memory = cpu_peaks._physical_memory()
    assert memory is not None and memory <= 1 << 30
    assert cpu_peaks.probe_buffer_bytes(32 << 20, memory) == 64 << 20
    monkeypatch.setattr(cpu_peaks, "memory_limit", lambda: 1 << 62)  # v1's "no limit"
    assert cpu_peaks._physical_memory() == os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")


@pytest.mark.parametrize("value", ["1", True, None])
def test_a_minimum_sample_time_that_is_no_number_is_refused(value: object) -> None:
    with pytest.raises(ValueError, match="min_sample_time must be a positive number"):
        cpu(min_sample_time=value)  # type: ignore[arg-type]


def test_a_device_number_given_to_cpu_is_refused_where_the_client_is_made() -> None:
    # `cpu(0)`, as `cuda(0)` is written, took 0 for the timer: every candidate of the first
    # tuning failed with "'int' object is not callable".
    with pytest.raises(TypeError, match=r"timer must be a clock .* got int 0; the CPU client"):
        cpu(0)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("argument", "message"),
    [
        ({"peaks_cache_dir": 1}, "peaks_cache_dir must be a folder's path"),
        ({"probe": 1}, "probe must be a function"),
    ],
)
def test_other_settings_of_the_wrong_type_are_refused_where_the_client_is_made(
    argument: dict[str, object], message: str
) -> None:
    with pytest.raises(TypeError, match=message):
        cpu(**argument)  # type: ignore[arg-type]


def test_a_cpu_client_reads_as_its_device_id() -> None:
    assert repr(cpu()) == f"CpuClient({cpu().device_id!r})"


def test_a_call_whose_output_an_asynchronous_library_computes_later_is_timed_until_it_is_ready(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # JAX returns its arrays before their values exist: timed by the call alone, a
    # 1500x1500 matmul read 21 ms for 68 ms of work. A fake of its `block_until_ready` on a
    # fake clock: the call takes 1 us to dispatch, its value 1 ms more to exist.
    clock = FakeClock()
    waited: list[object] = []

    def block_until_ready(value: object) -> object:
        waited.append(value)
        clock.advance(1e-3)
        return value

    def dispatch() -> str:
        clock.advance(1e-6)
        return "a future array"

    monkeypatch.setitem(sys.modules, "jax", type(sys)("jax"))
    monkeypatch.setattr(sys.modules["jax"], "block_until_ready", block_until_ready, raising=False)
    client = cpu(clock, min_sample_time=0.005)

    seconds = client.time(dispatch, ())

    assert seconds == pytest.approx(1.001e-3)
    assert waited and set(waited) == {"a future array"}

    monkeypatch.delitem(sys.modules, "jax")
    assert cpu(clock, min_sample_time=0.005).time(dispatch, ()) == pytest.approx(1e-6)


def returning(clock: FakeClock, output: object) -> Callable[[], object]:
    """A call of 1 us on `clock` that returns `output`."""

    def fn() -> object:
        clock.advance(1e-6)
        return output

    return fn


def test_a_numpy_call_is_timed_alone_where_the_program_also_imported_jax(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Waited for by `jax.block_until_ready` wherever any module of the run imported JAX, a
    # NumPy candidate's 1 us call read 2.3 us, against a baseline recorded without JAX. A
    # fake JAX whose wait costs 1 ms: a NumPy output is not waited for, a JAX array is.
    clock = FakeClock()

    class Array:
        pass

    def block_until_ready(value: object) -> object:
        clock.advance(1e-3)
        return value

    def tree_leaves(value: object) -> list[object]:
        return list(value) if isinstance(value, tuple) else [value]

    jax = type(sys)("jax")
    jax.Array = Array  # type: ignore[attr-defined]
    jax.block_until_ready = block_until_ready  # type: ignore[attr-defined]
    jax.tree_util = type(sys)("jax.tree_util")  # type: ignore[attr-defined]
    jax.tree_util.tree_leaves = tree_leaves  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "jax", jax)

    call = functools.partial(returning, clock)
    client = cpu(clock, min_sample_time=0.005)
    assert client.time(call(np.float64(1.0)), ()) == pytest.approx(1e-6)
    assert client.time(call((np.ones(3), np.ones(3))), ()) == pytest.approx(1e-6)
    assert client.time(call((np.ones(3), Array())), ()) == pytest.approx(1.001e-3)


def test_a_call_that_hands_its_work_to_the_gpu_is_timed_until_the_gpu_is_done(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Device `auto` tunes a group of NumPy inputs on the CPU, where a candidate may move its
    # work to CuPy: its call returns once the kernels are enqueued. A fake CuPy whose
    # device synchronize costs 1 ms on the fake clock, the call 1 us.
    clock = FakeClock()
    synchronized: list[int] = []

    class Device:
        def synchronize(self) -> None:
            synchronized.append(1)
            clock.advance(1e-3)

    cupy = type(sys)("cupy")
    cupy.ndarray = type("ndarray", (), {})  # type: ignore[attr-defined]
    cupy.cuda = type(sys)("cupy.cuda")  # type: ignore[attr-defined]
    cupy.cuda.Device = Device  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "cupy", cupy)

    call = functools.partial(returning, clock)
    client = cpu(clock, min_sample_time=0.005)
    assert client.time(call(np.ones(3)), ()) == pytest.approx(1e-6)
    assert not synchronized
    assert client.time(call(cupy.ndarray()), ()) == pytest.approx(1.001e-3)
    assert client.time(call((np.ones(3), cupy.ndarray())), ()) == pytest.approx(1.001e-3)
    assert client.time(call({"y": cupy.ndarray()}), ()) == pytest.approx(1.001e-3)
    assert len(synchronized) >= 3


def test_a_call_that_returns_a_lazy_dask_collection_is_timed_until_it_is_computed(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A Dask array's operations build a graph and return at once: a candidate returning one
    # was timed by its graph's making (3.3 ms, against 19 ms of NumPy for the same work, and
    # won). A fake Dask whose compute costs 1 ms on the fake clock, the call 1 us.
    clock = FakeClock()
    computed: list[object] = []

    class Array:
        pass

    def compute(*values: object) -> tuple[object, ...]:
        computed.append(values)
        clock.advance(1e-3)
        return values

    dask = type(sys)("dask")
    dask.compute = compute  # type: ignore[attr-defined]
    dask.is_dask_collection = lambda value: isinstance(value, Array)  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "dask", dask)

    call = functools.partial(returning, clock)
    client = cpu(clock, min_sample_time=0.005)
    assert client.time(call(np.ones(3)), ()) == pytest.approx(1e-6)
    assert not computed
    assert client.time(call(Array()), ()) == pytest.approx(1.001e-3)
    assert client.time(call((np.ones(3), Array())), ()) == pytest.approx(1.001e-3)
    assert client.time(call({"y": Array()}), ()) == pytest.approx(1.001e-3)
    assert len(computed) >= 3


def test_a_call_that_returns_futures_is_timed_until_their_results_are_ready() -> None:
    # `executor.submit` returns at once: a candidate returning its future was timed by the
    # submit (10 us against 19 ms of the same work called directly, and won). A future
    # whose result takes 1 ms on the fake clock, the call 1 us.
    clock = FakeClock()

    class Pending(concurrent.futures.Future[float]):
        def result(self, timeout: float | None = None) -> float:
            clock.advance(1e-3)
            return 1.0

    call = functools.partial(returning, clock)
    client = cpu(clock, min_sample_time=0.005)
    assert client.time(call(Pending()), ()) == pytest.approx(1.001e-3)
    assert client.time(call([Pending(), Pending()]), ()) == pytest.approx(2.001e-3)
