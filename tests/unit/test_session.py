"""The session as plain Python: its hooks given at construction, its outputs and baselines
in their own modules, no pytest in between."""

from __future__ import annotations

import contextlib
import gc
import json
import sys
import time
import weakref
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

from pytest_autotune.gate import Comparison, GroupVerdict, Verdict
from pytest_autotune.group_record import group_summary
from pytest_autotune.group_request import GroupRequest
from pytest_autotune.plugin_settings import settings_from_sources
from pytest_autotune.report import GroupSummary
from pytest_autotune.report.extra import RecordExtra
from pytest_autotune.session import AutotuneSession, SessionHooks
from pytest_autotune.tune.benchmark import AutotuneOutcome
from pytest_autotune.tune.bounds import Work
from pytest_autotune.tune.cache import cache_path
from pytest_autotune.tune.config import ConfigError
from pytest_autotune.tune.peaks import Peaks
from pytest_autotune.tune.records import AutotuneRecord
from pytest_autotune.tune.tunable_set import TunableSet
from tests.fakes import FakeClient, FakeClock, candidate, failing


def session(root: Path, hooks: SessionHooks, **ini: object) -> AutotuneSession:
    settings = settings_from_sources({}, {"autotune_device": "fake", **ini}, {}, root)
    return AutotuneSession(settings, hooks=hooks)


def request(clock: FakeClock) -> GroupRequest:
    fast, slow = candidate(clock, 1e-4, "fast", 1), candidate(clock, 3e-4, "slow", 1)
    return GroupRequest(
        group="test_x.py::test_x",
        tuner_name="test_x.py::test_x",
        key="k",
        candidates=(("fast", fast), ("slow", slow)),
        run=lambda fn, *values: fn(*values),
        inputs=(),
        options={},
    )


def test_the_hooks_given_at_construction_pick_the_client_and_may_replace_the_verdict(
    tmp_path: Path,
) -> None:
    clock = FakeClock()
    seen: list[Any] = []

    def verdict(summary: GroupSummary, verdict: GroupVerdict) -> GroupVerdict:
        seen.append((summary.group, verdict.verdict))
        return replace(verdict, message="said by the hook")

    hooks = SessionHooks(
        client=lambda device: FakeClient(clock) if device == "fake" else None,
        fingerprint=lambda fingerprint: fingerprint.update(rack=7),
        verdict=verdict,
        progress=seen.append,
    )
    tuned = session(tmp_path, hooks, autotune="true")
    assert tuned.candidate_outcome(request(clock), "fast") is None
    assert seen[0] == "autotune: tuning test_x.py::test_x on fake-device"
    assert ("test_x.py::test_x", Verdict.NO_BASELINE) in seen
    assert "autotune:   fast: 100 us" in seen
    assert tuned.output.summaries()[0].message == "said by the hook"
    assert tuned.output.devices()["fake-device"]["fingerprint"] == {"fake": True, "rack": 7}
    extra = tuned.to_worker_output()["records"][0]["extra"]
    assert (extra["group"], extra["measured"], extra["baseline"]) == (
        "test_x.py::test_x",
        "fast",
        None,
    )


def test_an_update_writes_the_baseline_that_the_next_session_compares_with(
    tmp_path: Path,
) -> None:
    clock = FakeClock()
    hooks = SessionHooks(client=lambda device: FakeClient(clock))
    updating = session(tmp_path, hooks, autotune_update="true")
    updating.candidate_outcome(request(clock), "fast")
    assert updating.finish() is False
    cache = cache_path(tmp_path / ".autotune", "fake-device", "test_x.py::test_x")
    assert [e["fastest_name"] for e in json.loads(cache.read_text())["entries"]] == ["fast"]
    assert any(
        line.startswith("updated .autotune/fake-device/") for line in updating.summary_lines()
    )

    gated = session(tmp_path, hooks, autotune="true")
    gated.candidate_outcome(request(clock), "fast")
    assert gated.output.summaries()[0].verdict is Verdict.PASS


def test_the_session_keeps_no_inputs_of_a_group_it_tuned(tmp_path: Path) -> None:
    # The session keeps each tuned group's set to its end: holding the inputs too, a run
    # of 20 groups of a 32 MiB array grew by 640 MiB, every group's kept.
    clock = FakeClock()
    tuned = session(
        tmp_path, SessionHooks(client=lambda device: FakeClient(clock)), autotune="true"
    )
    x = np.zeros(1000)
    alive = weakref.ref(x)
    assert tuned.candidate_outcome(replace(request(clock), inputs=(x,)), "fast") is None
    del x
    gc.collect()
    assert alive() is None


def test_a_baseline_updated_on_another_gpu_makes_the_gate_say_too_noisy_naming_both(
    tmp_path: Path,
) -> None:
    clock = FakeClock()

    class Gpu(FakeClient):
        device_id = "cuda-fake"

        def __init__(self, uuid: str) -> None:
            super().__init__(clock)
            self.uuid = uuid

        def fingerprint(self) -> dict[str, Any]:
            return {"uuid": self.uuid}

    def gate(uuid: str, **ini: object) -> AutotuneSession:
        gated = session(tmp_path, SessionHooks(client=lambda device: Gpu(uuid)), **ini)
        gated.candidate_outcome(request(clock), "fast")
        return gated

    gate("GPU-a", autotune_update="true").finish()
    same = gate("GPU-a", autotune="true").output.summaries()[0]
    assert same.verdict is Verdict.PASS
    other = gate("GPU-b", autotune="true").output.summaries()[0]
    assert other.verdict is Verdict.TOO_NOISY
    assert "another GPU (GPU-a, this run on GPU-b)" in other.message


def test_on_a_cpu_a_suspected_regression_is_measured_again_after_pauses_and_a_gpu_at_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A slow episode of a shared machine: every call 30% slower until the gate pauses.
    clock, episode, pauses = FakeClock(), [False], []
    monkeypatch.setattr("pytest_autotune.confirmations.CONFIRM_GAP_S", 2.0)

    real_sleep = time.sleep

    def pause(seconds: float) -> None:
        if seconds != 2.0:  # the windows in which the gate waits for idle threads
            real_sleep(seconds)
            return
        pauses.append(seconds)
        episode[0] = False

    monkeypatch.setattr("pytest_autotune.confirmations.time.sleep", pause)

    def fast(*inputs: Any) -> int:
        clock.advance(1.3e-4 if episode[0] else 1e-4)
        return 1

    def gpu_client(device: str) -> FakeClient:
        client = FakeClient(clock)
        client.device_id = "cuda-fake"
        return client

    for client in (lambda device: FakeClient(clock), gpu_client):
        hooks = SessionHooks(client=client)
        one = replace(request(clock), candidates=(("fast", fast),))
        updating = session(tmp_path, hooks, autotune_update="true")
        updating.candidate_outcome(one, "fast")
        updating.finish()
        episode[0] = True
        gated = session(tmp_path, hooks, autotune="true")
        gated.candidate_outcome(one, "fast")
        summary = gated.output.summaries()[0]
        if client is gpu_client:
            # No pause on a GPU: its one re-measurement follows at once and confirms.
            assert (summary.verdict, pauses) == (Verdict.REGRESSION, [2.0])
        else:
            assert (summary.verdict, pauses) == (Verdict.PASS, [2.0])
        episode[0] = False


def groups(clock: FakeClock) -> list[GroupRequest]:
    """Two groups of one test: one whose candidates both run, one with a key of several
    parts whose second candidate fails."""
    fast = candidate(clock, 1e-4, "fast", 1)
    first = replace(request(clock), group="test_x.py::test_x[a]", key="a")
    second = replace(
        first,
        group="test_x.py::test_x[b]",
        key=("b", 2),
        candidates=(("fast", fast), ("boom", failing("boom"))),
    )
    return [first, second]


def tuned(root: Path, worker: bool = False, **ini: object) -> AutotuneSession:
    clock = FakeClock()
    settings = settings_from_sources({}, {"autotune_device": "fake", **ini}, {}, root)
    tuning = AutotuneSession(
        settings, worker=worker, hooks=SessionHooks(client=lambda device: FakeClient(clock))
    )
    for group in groups(clock):
        tuning.candidate_outcome(group, "fast")
    return tuning


def test_a_worker_sends_one_record_per_group_and_its_notes_and_nothing_else(
    tmp_path: Path,
) -> None:
    # Beside them only which groups' tests failed, as expected or not (xfail): pytest's
    # outcomes, which no record holds, and which decide whether a failed group fails the run.
    payload = tuned(tmp_path, worker=True, autotune_update="true").to_worker_output()
    assert sorted(payload) == ["expected_failures", "failed_tests", "notes", "records"]
    assert payload["expected_failures"] == payload["failed_tests"] == []
    assert [r["extra"]["group"] for r in payload["records"]] == [
        "test_x.py::test_x[a]",
        "test_x.py::test_x[b]",
    ]


def test_the_controller_reads_from_workers_records_what_a_session_without_workers_makes(
    tmp_path: Path,
) -> None:
    alone = tuned(tmp_path / "alone", autotune_update="true")
    worker = tuned(tmp_path / "worker", worker=True, autotune_update="true")
    controller = session(tmp_path / "controller", SessionHooks(), autotune_update="true")
    controller.merge_worker_output(json.loads(json.dumps(worker.to_worker_output())))

    assert controller.output.summaries() == alone.output.summaries()
    assert controller.output.updates() == alone.output.updates()
    assert controller.output.devices() == alone.output.devices()
    assert controller.summary_lines() == alone.summary_lines()
    summary = alone.output.summaries()[1]
    assert (summary.key, summary.winner, [c.name for c in summary.candidates]) == (
        '["b",2]',
        "fast",
        ["fast", "boom"],
    )
    assert summary.candidates[1].error == "raised RuntimeError: boom exploded"
    assert [u.key for u in alone.output.updates()] == ['"a"', '["b",2]']

    assert alone.finish() is controller.finish() is False
    alone_file, controller_file = (
        cache_path(root / ".autotune", "fake-device", "test_x.py::test_x").read_text()
        for root in (tmp_path / "alone", tmp_path / "controller")
    )
    assert controller_file == alone_file
    assert len(json.loads(alone_file)["entries"]) == 2


def test_an_update_writes_the_samples_its_summary_shows(tmp_path: Path) -> None:
    updating = tuned(tmp_path, autotune_update="true")
    summaries, updates = updating.output.summaries(), updating.output.updates()
    for summary, update in zip(summaries, updates, strict=True):
        winner = update.value.winner()
        assert isinstance(winner, AutotuneOutcome)
        assert (winner.name, winner.samples) == (summary.winner, summary.samples)


def test_an_unbounded_interval_reads_back_from_the_record_as_infinity() -> None:
    extra = RecordExtra(
        group="t::f",
        verdict="pass",
        failed=False,
        comparison=Comparison(0.5, -1.0, float("inf"), False).to_json(),
        measured="a",
        winner_samples_ns=[1000],
        candidates=["a"],
    )
    record = AutotuneRecord(
        tuner="t::f",
        device_id="fake-device",
        key="k",
        checksum="c",
        fastest_index=0,
        fastest_name="a",
        results=({"name": "a", "index": 0, "samples_ns": [1000], "dropped_first": False},),
        extra=extra.to_json(),
    )
    line = json.dumps(record.to_json(), allow_nan=False)
    summary = group_summary(AutotuneRecord.from_json(json.loads(line)))
    assert summary.comparison == Comparison(0.5, -1.0, float("inf"), False)
    assert (summary.winner, summary.samples, summary.candidates[0].median) == ("a", (1e-6,), 1e-6)


class _Quiet:
    """A stand-in for `pytest_autotune.quiet.Quiet`: says why the others did not pause (None
    when they did), and records that the group was tuned inside its hold. Its run folder
    holds no crashed test."""

    def __init__(self, pauses: bool, folder: Path) -> None:
        self.pauses, self.holds, self.folder = pauses, [], folder

    @contextlib.contextmanager
    def measuring(self, gpu: bool) -> Iterator[str | None]:
        self.holds.append(("in", gpu))
        yield None if self.pauses else "they did not pause within 300 s"
        self.holds.append(("out", gpu))


@pytest.mark.parametrize("pauses", [True, False])
def test_a_worker_tunes_inside_its_quiet_hold_and_notes_when_the_others_ran_on(
    tmp_path: Path, pauses: bool
) -> None:
    clock = FakeClock()
    tuned = session(
        tmp_path, SessionHooks(client=lambda device: FakeClient(clock)), autotune="true"
    )
    quiet = _Quiet(pauses, tmp_path / "run")
    tuned.quiet = quiet  # type: ignore[assignment]
    tuned.candidate_outcome(request(clock), "fast")
    # The fake device is a CPU: the hold is the CPU's, entered once around the tuning.
    assert quiet.holds == [("in", False), ("out", False)]
    notes = [n for n in tuned.output.notes if "did not pause" in n]
    assert notes == (
        []
        if pauses
        else [
            "test_x.py::test_x: measured while other pytest-xdist workers ran tests (they did"
            " not pause within 300 s)"
        ]
    )


class _LowProbe(FakeClient):
    """A client whose first peak probe read low, as a CPU's beside a busy neighbour: its
    second reads the device's real rates, where `again` gives them."""

    def __init__(self, clock: FakeClock, again: Peaks | None) -> None:
        super().__init__(clock, Peaks(memory={"read": 1e9}, compute={"fp32": 1e9}, threads=1))
        self.again, self.probes = again, 1

    def probe_peaks_again(self) -> Peaks:
        self.probes += 1
        if self.again is not None:
            self._peaks = self._peaks.at_least(self.again)
        return self._peaks


def _bounded(clock: FakeClock) -> GroupRequest:
    # 1e6 bytes in 100 us: 1e10 bytes/s, ten times the low probe's memory roof.
    return replace(request(clock), options={"work": Work(bytes=1e6)})


def test_a_winner_above_its_roof_has_the_peaks_probed_again_and_judged_by_the_new_read(
    tmp_path: Path,
) -> None:
    clock = FakeClock()
    client = _LowProbe(clock, Peaks(memory={"read": 4e10}, compute={"fp32": 1e9}, threads=1))
    gated = session(tmp_path, SessionHooks(client=lambda device: client), autotune="true")
    gated.candidate_outcome(_bounded(clock), "fast")
    summary = gated.output.summaries()[0]
    assert client.probes == 2
    assert summary.fraction_of_roof == pytest.approx(0.25)
    assert not any("roof" in note for note in gated.output.notes)
    # The record's device block carries the peaks the fraction is of.
    record = gated.to_worker_output()["records"][0]
    assert record["extra"]["device"]["peaks"]["memory_bytes_per_s"]["read"] == 4e10


def test_a_winner_still_above_its_roof_after_a_second_probe_is_said_so(tmp_path: Path) -> None:
    clock = FakeClock()
    client = _LowProbe(clock, None)
    gated = session(tmp_path, SessionHooks(client=lambda device: client), autotune="true")
    gated.candidate_outcome(_bounded(clock), "fast")
    assert client.probes == 2
    assert gated.output.summaries()[0].fraction_of_roof == pytest.approx(10.0)
    (note,) = [note for note in gated.output.notes if "roof" in note]
    assert note.startswith("note: test_x.py::test_x: the winner reached 1000.0% of its DRAM roof")
    assert "work= counts more" in note


def test_a_winner_under_its_roof_leaves_the_peaks_as_probed(tmp_path: Path) -> None:
    clock = FakeClock()
    client = _LowProbe(clock, None)
    gated = session(tmp_path, SessionHooks(client=lambda device: client), autotune="true")
    gated.candidate_outcome(replace(request(clock), options={"work": Work(bytes=5e4)}), "fast")
    assert client.probes == 1
    assert gated.output.summaries()[0].fraction_of_roof == pytest.approx(0.5)


@pytest.mark.parametrize("device", ["cuda:0", "cuda:1"])
def test_a_worker_given_one_gpu_refuses_a_device_index_before_touching_cuda(
    tmp_path: Path, device: str
) -> None:
    # Its cuda:0 is the GPU it was given, whichever of the host's that is, and its cuda:1 none.
    settings = settings_from_sources({}, {}, {}, tmp_path)
    worker = AutotuneSession(settings, worker=True, worker_gpu="1")
    with pytest.raises(ConfigError, match=rf"device {device}: .*CUDA_VISIBLE_DEVICES=1\b"):
        worker.client(device)


def test_the_gate_copies_the_winners_inputs_in_the_clients_context(tmp_path: Path) -> None:
    # CuPy copies an array to the current device: under device="cuda:1" the copies the gate
    # measures the winner on must be made on device 1, where the client times it.
    clock = FakeClock()
    entered: list[bool] = []

    class Device:
        def __enter__(self) -> None:
            entered.append(True)

        def __exit__(self, *exc: object) -> None:
            entered.pop()

    client: Any = FakeClient(clock)
    client.context = Device()
    copied: list[bool] = []

    def copies(key: Any, inputs: tuple[Any, ...]) -> tuple[Any, ...]:
        copied.append(bool(entered))
        return tuple(list(x) for x in inputs)

    fast, slow = candidate(clock, 1e-4, "fast", 1), candidate(clock, 3e-4, "slow", 1)
    tunables = replace(TunableSet.of(lambda x: "k", {"fast": fast, "slow": slow}), input_gen=copies)
    hooks = SessionHooks(client=lambda device: client if device == "fake" else None)
    tuned = session(tmp_path, hooks, autotune="true")
    group = replace(request(clock), inputs=([1, 2],), tunables=tunables)
    assert tuned.candidate_outcome(group, "fast") is None
    assert len(copied) > 4 and all(copied)  # the checks', each candidate's, the gate's


class _NoDevice(RuntimeError):
    """CuPy's `CUDARuntimeError`, as `getDeviceCount` raises it where CUDA sees no GPU."""


def _cupy_without_devices() -> Any:
    def no_device() -> int:
        raise _NoDevice("cudaErrorNoDevice: no CUDA-capable device is detected")

    runtime = SimpleNamespace(CUDARuntimeError=_NoDevice, getDeviceCount=no_device)
    return SimpleNamespace(cuda=SimpleNamespace(runtime=runtime))


@pytest.mark.parametrize("visible", ["7", "GPU-bogus", ""])
def test_auto_on_the_cpu_because_cuda_visible_devices_hides_the_gpu_says_so_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, visible: str
) -> None:
    # CUDA hides every GPU behind a CUDA_VISIBLE_DEVICES that names none: `auto` fell back
    # to the CPU without a word, and the baselines went to the CPU's folder.
    monkeypatch.setitem(sys.modules, "cupy", _cupy_without_devices())
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", visible)
    tuning = session(tmp_path, SessionHooks(), autotune_device="auto")
    assert tuning.client(None).device_id.startswith("cpu-")
    tuning.client(None)
    (note,) = tuning.output.notes
    assert note.startswith("warning: device auto: tuned on the CPU, as no CUDA device found:")
    assert f"CUDA_VISIBLE_DEVICES is {visible!r}" in note


def test_auto_on_the_cpu_of_a_machine_without_cupy_says_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "cupy", None)  # import cupy raises ImportError
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    tuning = session(tmp_path, SessionHooks(), autotune_device="auto")
    assert tuning.client(None).device_id.startswith("cpu-")
    assert tuning.output.notes == []


def test_a_note_two_workers_send_is_said_once(tmp_path: Path) -> None:
    controller = session(tmp_path, SessionHooks())
    for _ in range(2):
        controller.merge_worker_output({"records": [], "notes": ["warning: device auto: ..."]})
    assert controller.output.notes == ["warning: device auto: ..."]


def test_a_stop_in_pytests_own_sentence_is_given_without_its_full_stop() -> None:
    # `--sw`'s reason is a sentence: "stopped early (Test failed, continuing from this test
    # next run.): ..." read with the full stop inside the brackets.
    from types import SimpleNamespace

    from pytest_autotune.session_end import _stopped_early

    session = SimpleNamespace(
        shouldstop="Test failed, continuing from this test next run.", shouldfail=False
    )
    said = _stopped_early(session, pytest.ExitCode.TESTS_FAILED)  # type: ignore[arg-type]
    assert said == "Test failed, continuing from this test next run"
    session.shouldstop = "stopping after 1 failures"
    assert _stopped_early(session, pytest.ExitCode.TESTS_FAILED) == "stopping after 1 failures"  # type: ignore[arg-type]


def test_an_interrupt_while_waiting_for_the_device_says_what_it_waited_for(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Ctrl-C on a run that hung on another process's timing said "stopped early
    # (interrupted): no group was tuned", and nothing of the lock it waited for.
    from pytest_autotune import devices

    class Held:
        lock_file = str(tmp_path / "pytest-autotune-fake.lock")

        def acquire(self, timeout: float) -> None:
            raise KeyboardInterrupt

    monkeypatch.setattr(devices, "_device_lock", lambda device_id, uuid=None: Held())
    clock = FakeClock()
    hooks = SessionHooks(client=lambda device: FakeClient(clock) if device == "fake" else None)
    tuned = session(tmp_path, hooks, autotune="true")
    with pytest.raises(KeyboardInterrupt):
        tuned.candidate_outcome(request(clock), "fast")
    assert any(
        note.startswith("interrupted while waiting for another process's timing of")
        and Held.lock_file in note
        for note in tuned.output.notes
    ), tuned.output.notes
