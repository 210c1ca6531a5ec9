"""The session as plain Python: its hooks given at construction, its outputs and baselines
in their own modules, no pytest in between."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

from pytest_autotune.gate import GroupVerdict, Verdict
from pytest_autotune.plugin_settings import settings_from_sources
from pytest_autotune.report import GroupSummary
from pytest_autotune.session import AutotuneSession, GroupRequest, SessionHooks
from pytest_autotune.tune.cache import cache_path
from tests.fakes import FakeClient, FakeClock, candidate


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
    output = tuned.to_worker_output()
    assert output["summaries"][0]["message"] == "said by the hook"
    assert output["devices"]["fake-device"]["fingerprint"] == {"fake": True, "rack": 7}
    extra = output["records"][0]["extra"]
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
    assert gated.to_worker_output()["summaries"][0]["verdict"] == Verdict.PASS.value


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
    same = gate("GPU-a", autotune="true").to_worker_output()["summaries"][0]
    assert same["verdict"] == Verdict.PASS.value
    other = gate("GPU-b", autotune="true").to_worker_output()["summaries"][0]
    assert other["verdict"] == Verdict.TOO_NOISY.value
    assert "another GPU (GPU-a, this run on GPU-b)" in other["message"]
