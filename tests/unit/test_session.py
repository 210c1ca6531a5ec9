"""The session as plain Python: its hooks given at construction, its outputs and baselines
in their own modules, no pytest in between."""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from pytest_autotune.gate import Comparison, GroupVerdict, Verdict
from pytest_autotune.group_record import group_summary
from pytest_autotune.plugin_settings import settings_from_sources
from pytest_autotune.report import GroupSummary
from pytest_autotune.report.extra import RecordExtra
from pytest_autotune.session import AutotuneSession, GroupRequest, SessionHooks
from pytest_autotune.tune.benchmark import AutotuneOutcome
from pytest_autotune.tune.cache import cache_path
from pytest_autotune.tune.records import AutotuneRecord
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
    monkeypatch.setattr("pytest_autotune.gate_policy.CONFIRM_GAP_S", 2.0)

    def pause(seconds: float) -> None:
        pauses.append(seconds)
        episode[0] = False

    monkeypatch.setattr("pytest_autotune.gate_policy.time.sleep", pause)

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
    payload = tuned(tmp_path, worker=True, autotune_update="true").to_worker_output()
    assert sorted(payload) == ["notes", "records"]
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
    assert summary.candidates[1].error == "failed its check: RuntimeError: boom exploded"
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
    when they did), and records that the group was tuned inside its hold."""

    def __init__(self, pauses: bool) -> None:
        self.pauses, self.holds = pauses, []

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
    quiet = _Quiet(pauses)
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
