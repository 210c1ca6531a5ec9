"""What a comparison's conditions add to its noise: oversubscribed or contended CPUs,
another GPU."""

from __future__ import annotations

import threading
import time

import pytest

from pytest_autotune.candidate_measure import measure_candidate
from pytest_autotune.gate import Baseline, Measurement, Verdict, judge
from pytest_autotune.gate.conditions import (
    contended,
    load_factor,
    pressure_factor,
)
from pytest_autotune.gate.contention import HelperClock, load_per_cpu
from pytest_autotune.tune.benchmark import AutotuneOutcome
from pytest_autotune.tune.bounds import Thresholds, Work
from pytest_autotune.tune.cache import PersistentCacheValue
from pytest_autotune.tune.peaks import Peaks
from tests.fakes import FakeClient, FakeClock, candidate

GPU = "cuda-nvidia-h200"
CPU = "cpu-intel-xeon-2t"
CHECKSUM = "0123456789abcdef"
T = 1e-3


def measured(
    seconds: float,
    load: float | None = None,
    pressure: float | None = None,
    helpers: float | None = None,
    neighbours: float | None = None,
) -> Measurement:
    return Measurement(
        (seconds,) * 10, load=load, pressure=pressure, helpers=helpers, neighbours=neighbours
    )


def base(device_id: str, machine: str | None = None) -> Baseline:
    return Baseline(
        device_id=device_id,
        checksum=CHECKSUM,
        fastest_name="winner",
        samples=(T,) * 10,
        source="cache.json",
        machine=machine,
    )


def test_up_to_one_runnable_thread_per_cpu_the_load_adds_nothing() -> None:
    assert load_factor(None) == 1.0
    assert load_factor(0.5) == 1.0
    assert load_factor(1.0) == 1.0


def test_a_quarter_thread_too_many_doubles_the_noise_and_more_grows_it_in_proportion() -> None:
    assert load_factor(1.1) == pytest.approx(1.4)
    assert load_factor(1.25) == 2.0
    assert load_factor(1.75) == 2.0
    assert load_factor(3.5) == 3.5


def test_a_neighbour_on_one_of_two_cpus_makes_a_25_percent_cpu_slowdown_too_noisy() -> None:
    # One core kept busy beside a 2-CPU gate: 1.25 runnable threads per CPU. There the
    # sessions moved by an sd of 5.5% and most 25% slowdowns read under +22%.
    verdict = judge(measured(T * 1.20, load=1.25), base(CPU), device_id=CPU, checksum=CHECKSUM)
    assert verdict.verdict is Verdict.TOO_NOISY


def test_the_load_per_cpu_is_the_load_average_over_the_cpus_of_this_process(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr("os.getloadavg", lambda: (6.0, 5.0, 4.0))
    monkeypatch.setattr("os.sched_getaffinity", lambda pid: {0, 1}, raising=False)
    # The name imported above is the real reader; the suite's conftest patches the module's.
    assert load_per_cpu() == 3.0


def test_a_cpu_slowdown_caught_on_a_quiet_machine_is_too_noisy_on_an_oversubscribed_one() -> None:
    quiet = judge(measured(T * 1.25), base(CPU), device_id=CPU, checksum=CHECKSUM)
    assert quiet.verdict is Verdict.REGRESSION
    loaded = judge(measured(T * 1.25, load=3.0), base(CPU), device_id=CPU, checksum=CHECKSUM)
    assert loaded.verdict is Verdict.TOO_NOISY and not loaded.failed
    assert "oversubscribed (3.0 runnable threads per CPU" in loaded.message
    assert "a runner with free CPUs" in loaded.message


def test_a_load_under_one_thread_per_cpu_changes_no_verdict() -> None:
    verdict = judge(measured(T * 1.25, load=0.9), base(CPU), device_id=CPU, checksum=CHECKSUM)
    assert verdict.verdict is Verdict.REGRESSION


def test_a_huge_slowdown_still_fails_on_an_oversubscribed_cpu() -> None:
    verdict = judge(measured(T * 3, load=4.0), base(CPU), device_id=CPU, checksum=CHECKSUM)
    assert verdict.verdict is Verdict.REGRESSION
    # Saying what it counted in its noise: a record held the load, the message nothing.
    assert verdict.message.endswith(
        "; counted in its noise: the CPUs were oversubscribed (4.0 runnable threads per CPU),"
        " so the between-session noise counts 4.0 times"
    )
    quiet = judge(measured(T * 3, load=0.9), base(CPU), device_id=CPU, checksum=CHECKSUM)
    assert "counted in its noise" not in quiet.message


def test_a_stall_share_up_to_what_was_measured_adds_nothing_and_beyond_it_doubles_the_noise() -> (
    None
):
    # Beside bursts on two CPUs, measurements stalled 30-60% moved no more than others.
    assert pressure_factor(None) == 1.0
    assert pressure_factor(float("nan")) == 1.0
    assert pressure_factor(0.0) == 1.0
    assert pressure_factor(0.6) == 1.0
    assert pressure_factor(0.61) == 2.0
    assert pressure_factor(1.0) == 2.0


def test_a_cpu_slowdown_whose_samples_mostly_waited_for_a_cpu_is_too_noisy_naming_the_stalls() -> (
    None
):
    half = judge(measured(T * 1.25, pressure=0.5), base(CPU), device_id=CPU, checksum=CHECKSUM)
    assert half.verdict is Verdict.REGRESSION
    most = judge(measured(T * 1.25, pressure=0.9), base(CPU), device_id=CPU, checksum=CHECKSUM)
    assert most.verdict is Verdict.TOO_NOISY and not most.failed
    assert (
        "the CPUs were contended (runnable threads waited for a CPU 90% of the measurement),"
        " so the between-session noise counts 2.0 times" in most.message
    )
    assert "what would help: a runner with free CPUs" in most.message


def test_the_larger_of_the_load_and_stall_factors_widens_the_noise_and_both_are_named() -> None:
    verdict = judge(
        measured(T * 1.25, load=3.0, pressure=0.9), base(CPU), device_id=CPU, checksum=CHECKSUM
    )
    assert verdict.verdict is Verdict.TOO_NOISY
    assert (
        "waited for a CPU 90% of the measurement) and the CPUs were oversubscribed"
        " (3.0 runnable threads per CPU), so the between-session noise counts 3.0 times"
    ) in verdict.message


def test_a_neighbour_is_recorded_but_counted_in_no_verdict() -> None:
    # Doubling the noise from half of the other CPUs' time (tried, 774cbd8) made every
    # comparison beside a process spinning on the other CPU "too noisy": 0 of 6 25%
    # slowdowns caught, against 6 of 6 without it (benchmarks/gate_reliability.py
    # --condition neighbour), and it cleared no false failure.
    beside = judge(
        measured(T * 1.25, load=1.0, pressure=0.0, neighbours=0.97),
        base(CPU),
        device_id=CPU,
        checksum=CHECKSUM,
    )
    assert beside.verdict is Verdict.REGRESSION
    assert "other processes" not in beside.message
    assert contended(measured(T, load=1.0, pressure=0.0, neighbours=1.0)) == ()


def test_a_baseline_from_another_gpu_makes_a_machine_difference_too_noisy_not_a_regression() -> (
    None
):
    # Unchanged kernels read up to +11.9% on another H200 than the one that recorded them.
    same = judge(
        measured(T * 1.10), base(GPU, "GPU-a"), device_id=GPU, checksum=CHECKSUM, machine="GPU-a"
    )
    assert same.verdict is Verdict.REGRESSION
    other = judge(
        measured(T * 1.10), base(GPU, "GPU-a"), device_id=GPU, checksum=CHECKSUM, machine="GPU-b"
    )
    assert other.verdict is Verdict.TOO_NOISY and not other.failed
    assert "another GPU (GPU-a, this run on GPU-b)" in other.message
    assert "a baseline recorded on this machine" in other.message


def test_a_gpu_slowdown_far_beyond_machine_differences_fails_on_another_gpu() -> None:
    verdict = judge(
        measured(T * 1.6), base(GPU, "GPU-a"), device_id=GPU, checksum=CHECKSUM, machine="GPU-b"
    )
    assert verdict.verdict is Verdict.REGRESSION


@pytest.mark.parametrize(("baseline_machine", "machine"), [(None, "GPU-b"), ("GPU-a", None)])
def test_an_unknown_machine_on_either_side_adds_nothing(
    baseline_machine: str | None, machine: str | None
) -> None:
    verdict = judge(
        measured(T * 1.10),
        base(GPU, baseline_machine),
        device_id=GPU,
        checksum=CHECKSUM,
        machine=machine,
    )
    assert verdict.verdict is Verdict.REGRESSION


def test_a_baseline_knows_the_gpu_its_file_was_updated_on() -> None:
    value = PersistentCacheValue(
        key=1,
        fastest_index=0,
        fastest_name="winner",
        results=[AutotuneOutcome("winner", 0, (1e-6,) * 5)],
    )
    device = {"id": GPU, "fingerprint": {"uuid": "GPU-52c81167"}}
    found = Baseline.from_cache_entry(value, CHECKSUM, device=device, metadata={})
    assert found.machine == "GPU-52c81167"
    # A CPU has no uuid: its block names the device it was measured on, its own id or,
    # under a runner class, `measured_on`, which a run on another machine is told apart by.
    cpu = Baseline.from_cache_entry(value, CHECKSUM, device={"id": CPU}, metadata={})
    assert cpu.machine == CPU
    runner = {"id": "cpu-github-x64", "measured_on": CPU}
    in_class = Baseline.from_cache_entry(value, CHECKSUM, device=runner, metadata={})
    assert in_class.machine == CPU
    no_uuid = Baseline.from_cache_entry(value, CHECKSUM, device={"id": GPU}, metadata={})
    assert no_uuid.machine is None


def test_a_multithreaded_winner_tenfold_slower_on_contended_cpus_is_too_noisy_not_a_failure() -> (
    None
):
    # A 256x256 matmul on two BLAS threads read +891% beside a test suite on the 2-core
    # VM, with a third of its samples' time stalled for a CPU: no factor of the quiet
    # noise covers that, and the gate must not cry wolf.
    threaded = measured(T * 9.91, pressure=0.3, helpers=0.6)
    verdict = judge(threaded, base(CPU), device_id=CPU, checksum=CHECKSUM)
    assert verdict.verdict is Verdict.TOO_NOISY and not verdict.failed
    assert (
        "the winner runs on several threads (its process's other threads were busy 60% of"
        " its samples' time) on contended CPUs (runnable threads waited for a CPU 30% of"
        " the measurement)"
    ) in verdict.message
    assert "OMP_NUM_THREADS, threadpoolctl" in verdict.message


def test_a_multithreaded_winners_advice_names_numbas_thread_count_too() -> None:
    # A Numba `parallel=True` winner runs as many threads as NUMBA_NUM_THREADS says, which
    # OMP_NUM_THREADS and threadpoolctl leave alone: the advice alone would not fix it.
    threaded = measured(T * 9.91, pressure=0.3, helpers=0.6)
    verdict = judge(threaded, base(CPU), device_id=CPU, checksum=CHECKSUM)
    assert "NUMBA_NUM_THREADS" in verdict.message


def test_the_same_change_fails_on_one_thread_or_on_free_cpus() -> None:
    one_thread = measured(T * 9.91, pressure=0.3, helpers=0.0)
    free_cpus = measured(T * 9.91, pressure=0.01, helpers=0.6)
    for current in (one_thread, free_cpus):
        verdict = judge(current, base(CPU), device_id=CPU, checksum=CHECKSUM)
        assert verdict.verdict is Verdict.REGRESSION


def test_without_stall_counters_the_load_says_whether_a_multithreaded_winner_was_contended() -> (
    None
):
    loaded = judge(
        measured(T * 9.91, load=1.3, helpers=0.6), base(CPU), device_id=CPU, checksum=CHECKSUM
    )
    assert loaded.verdict is Verdict.TOO_NOISY
    assert "on contended CPUs (1.3 runnable threads per CPU)" in loaded.message
    light = judge(
        measured(T * 9.91, load=0.9, helpers=0.6), base(CPU), device_id=CPU, checksum=CHECKSUM
    )
    assert light.verdict is Verdict.REGRESSION


def test_a_multithreaded_winner_a_hundred_and_fifty_times_slower_still_fails() -> None:
    verdict = judge(
        measured(T * 150, pressure=0.3, helpers=0.6), base(CPU), device_id=CPU, checksum=CHECKSUM
    )
    assert verdict.verdict is Verdict.REGRESSION


def test_a_one_thread_pick_beside_a_multithreaded_baseline_winner_crippled_here_is_too_noisy() -> (
    None
):
    # A 256x256 matmul on the loaded 2-core VM: the baseline's BLAS winner (215 us then)
    # measured 15.6 ms here on two contended threads, tuning picked a one-thread einsum at
    # 1.9 ms, and the gate failed unchanged code at "+1107%". The comparison stands for
    # the baseline's winner, whose time here is the neighbour's, not the code's.
    pick = measured(T * 12.07, pressure=0.3, helpers=0.0)
    crippled = measured(T * 72.6, pressure=0.3, helpers=0.6)
    verdict = judge(pick, base(CPU), device_id=CPU, checksum=CHECKSUM, baseline_winner=crippled)
    assert verdict.verdict is Verdict.TOO_NOISY and not verdict.failed
    assert (
        "the baseline's winner, which measured slower in this run than the candidate"
        " compared, runs on several threads (its process's other threads were busy 60%"
    ) in verdict.message
    # The same pick beside a baseline's winner slowed on one thread, or on free CPUs, is
    # judged as it stands: the code of the group did get slower.
    for other in (
        measured(T * 72.6, pressure=0.3, helpers=0.0),
        measured(T * 72.6, pressure=0.01, helpers=0.6),
    ):
        judged = judge(pick, base(CPU), device_id=CPU, checksum=CHECKSUM, baseline_winner=other)
        assert judged.verdict is Verdict.REGRESSION


def test_a_multithreaded_pick_names_its_own_threads_once() -> None:
    threaded = measured(T * 9.91, pressure=0.3, helpers=0.6)
    verdict = judge(threaded, base(CPU), device_id=CPU, checksum=CHECKSUM, baseline_winner=threaded)
    assert verdict.verdict is Verdict.TOO_NOISY
    assert verdict.message.count("runs on several threads") == 1
    assert "the winner runs on several threads" in verdict.message


def test_contended_names_every_state_of_the_cpus_that_widens_any_comparison() -> None:
    assert contended(measured(T)) == ()
    assert contended(measured(T, load=0.9, pressure=0.3, helpers=0.0)) == ()
    reasons = [c.reason for c in contended(measured(T, load=3.0, pressure=0.3, helpers=0.6))]
    assert len(reasons) == 2
    assert reasons[0].startswith("the CPUs were oversubscribed (3.0 runnable threads per CPU)")
    assert reasons[1].startswith("the winner runs on several threads")


def _spin_thread_cpu(seconds: float) -> None:
    start = time.thread_time()
    while time.thread_time() - start < seconds:
        pass


def test_the_helper_clock_counts_other_threads_cpu_time_and_not_the_callers() -> None:
    # CPU time, not speed: the helper thread burns 20 ms of its own CPU time however
    # long the machine makes that take, and the caller's own spin counts for nothing.
    def handed_off() -> float:
        helper = threading.Thread(target=_spin_thread_cpu, args=(0.02,))
        helper.start()
        helper.join()
        return 0.0

    def own_thread() -> float:
        _spin_thread_cpu(0.02)
        return 0.0

    threaded, alone = HelperClock(), HelperClock()
    assert threaded.share() is None
    threaded.wrap(handed_off)()
    alone.wrap(own_thread)()
    assert threaded.busy >= 0.019  # its 20 ms, less the clocks' rounding
    assert alone.busy < 0.002
    share = threaded.share()
    assert share is not None and share > 0.0
    assert alone.share() == pytest.approx(0.0, abs=0.1)


class _SpinningPool:
    """The time module as `gate.contention` reads it, in a process whose thread pool an
    earlier call left spinning: its threads burn a whole CPU for `seconds` from now, then
    sleep. Their CPU time follows the wall clock, so the test does not depend on how the
    machine schedules a real pool."""

    def __init__(self, seconds: float) -> None:
        self.start = time.perf_counter()
        self.until = self.start + seconds

    def __getattr__(self, name: str) -> object:
        return getattr(time, name)

    def process_time(self) -> float:
        return time.thread_time() + min(time.perf_counter(), self.until) - self.start


def test_a_thread_pool_an_earlier_call_left_spinning_is_not_the_winners_helpers(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # OpenBLAS's threads wait for work busily for about 0.1 s after a matmul (the peak
    # probe's, or a losing candidate's): a one-thread winner measured right after read
    # them as its own helpers, and on contended CPUs its comparison "too noisy" at
    # [-99%, +6771%].
    monkeypatch.setattr("pytest_autotune.gate.contention.time", _SpinningPool(0.1))
    clock = FakeClock()
    client = FakeClient(clock)
    client.device_id = CPU
    measurement = measure_candidate(client, candidate(clock, T, "one_thread"), "one_thread", ())
    assert measurement.helpers == pytest.approx(0.0, abs=0.01)


def test_a_load_just_past_one_thread_per_cpu_is_not_written_as_one() -> None:
    # "oversubscribed (1.0 runnable threads per CPU), so the noise counts 1.0 times" said
    # nothing had happened, of a session an update then refused to record.
    reasons = [c.reason for c in contended(measured(T, load=1.01))]
    assert reasons == [
        "the CPUs were oversubscribed (1.01 runnable threads per CPU), so the between-session"
        " noise counts 1.04 times"
    ]
    assert "(1.3 runnable threads per CPU), so the between-session noise counts 2.0 times" in (
        contended(measured(T, load=1.3))[0].reason
    )


FLOOR = {
    "work": Work(bytes=1e9),
    "peaks": Peaks(memory={"read": 1e12, "copy": 0.9e12}, compute={"fp32": 1e13}),
    "thresholds": Thresholds(memory=0.45),
}
"""1 GB at 1 TB/s: 1 ms at the roof, so 2 ms reaches 50%, over a floor of 45%."""


def test_a_floor_missed_on_busy_cpus_by_what_the_load_explains_is_too_noisy_not_a_failure() -> None:
    # Unchanged code (2 ms, 50% of the roof on free CPUs) read 20% slower beside a busy
    # neighbour: 41.7% against a floor of 45%, and the floor failed, saying nothing of it.
    free = judge(measured(2.4e-3), None, device_id=CPU, checksum=CHECKSUM, **FLOOR)  # type: ignore[arg-type]
    assert (free.verdict, free.failed) == (Verdict.FLOOR, True)
    busy = judge(measured(2.4e-3, load=3.0), None, device_id=CPU, checksum=CHECKSUM, **FLOOR)  # type: ignore[arg-type]
    assert (busy.verdict, busy.failed) == (Verdict.TOO_NOISY, False)
    assert busy.message.startswith(
        "too noisy to judge the floor: below the floor: 41.7% of the DRAM memory roof"
    )
    assert "+8.0% from it, within what the CPUs' state explains" in busy.message
    assert "the CPUs were oversubscribed (3.0 runnable threads per CPU)" in busy.message
    assert "what would help: a runner with free CPUs" in busy.message
    assert "no baseline for this key" in busy.message
    strict = judge(
        measured(2.4e-3, load=3.0),
        None,
        device_id=CPU,
        checksum=CHECKSUM,
        strict=True,
        **FLOOR,  # type: ignore[arg-type]
    )
    assert (strict.verdict, strict.failed) == (Verdict.TOO_NOISY, True)


def test_a_floor_missed_by_more_than_the_load_explains_fails_on_busy_cpus_too() -> None:
    verdict = judge(measured(6e-3, pressure=0.9), None, device_id=CPU, checksum=CHECKSUM, **FLOOR)  # type: ignore[arg-type]
    assert (verdict.verdict, verdict.failed) == (Verdict.FLOOR, True)
    assert verdict.message.startswith("below the floor: 16.7% of the DRAM memory roof")


@pytest.mark.parametrize("worker", [None, "gw1"])
def test_the_advice_for_contended_cpus_names_workers_only_under_xdist(
    monkeypatch: pytest.MonkeyPatch, worker: str | None
) -> None:
    # A serial run was told "fewer -n workers", of workers it had none of.
    if worker is None:
        monkeypatch.delenv("PYTEST_XDIST_WORKER", raising=False)
    else:
        monkeypatch.setenv("PYTEST_XDIST_WORKER", worker)
    loaded = judge(measured(T * 1.25, load=3.0), base(CPU), device_id=CPU, checksum=CHECKSUM)
    assert "a runner with free CPUs: fewer jobs beside the gate" in loaded.message
    assert ("fewer -n workers" in loaded.message) is (worker is not None)
