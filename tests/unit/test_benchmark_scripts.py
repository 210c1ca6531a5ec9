"""The scripts under benchmarks/ that BENCHMARKS.md cites, run as a user runs them, on inputs
small enough for a unit test: they must run against the package as it is now, and say what
is wrong with their input in one line."""

from __future__ import annotations

import importlib
import json
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from pytest_autotune.backends import cuda_timing

REPO = Path(__file__).resolve().parents[2]


def script(monkeypatch: pytest.MonkeyPatch, name: str) -> ModuleType:
    """The benchmark script `name`, imported as `PYTHONPATH=.` imports it."""
    monkeypatch.syspath_prepend(str(REPO))
    return importlib.import_module(f"benchmarks.{name}")


def short_calls_run(path: Path, *, keep_all: bool = True) -> Path:
    """A `gpu_short_calls.py --keep-all` run of the layernorm family, two candidates and two
    tunings (kept or, without `keep_all`, not), each tuning with a measured host slowdown."""
    kept = {"dropped_first": True, "statistic": "median"}
    tuning = {
        "results": {
            "fast": {"samples_us": [10.0, 10.1, 10.0, 10.2], **kept},
            "slow": {"samples_us": [20.0, 20.1, 20.2, 20.0], **kept},
        },
        "winner": "fast",
        "slowdown": 1.3,
    }
    family: dict[str, Any] = {
        "eager_rounds_s": {"fast": [10e-6, 11e-6, 10e-6], "slow": [20e-6, 21e-6, 20e-6]},
        "caller": {
            "call_costs": {
                "fast": {"device_s": 9e-6, "enqueue_s": 10e-6},
                "slow": {"device_s": 19e-6, "enqueue_s": 10e-6},
            },
            "winners": {"fast": 2},
            "disagreeing": [tuning, tuning] if keep_all else [],
        },
        "host_speedup": None,
    }
    path.write_text(json.dumps({"layernorm 2048x1024": family}))
    return path


def test_replay_races_runs_at_the_products_default_host_speedup(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # The product's HOST_SPEEDUP default is None (measured at the tie); the script took it
    # as its own default and ended in a TypeError formatting it after the whole replay.
    replay_races = script(monkeypatch, "replay_races")
    assert replay_races.main([str(short_calls_run(tmp_path / "short_calls.json"))]) == 0
    out = capsys.readouterr().out
    assert out.startswith("race, HOST_SPEEDUP measured: 2/2 agree,")
    assert "the recorded winner in 2" in out
    assert cuda_timing.HOST_SPEEDUP is None  # put back as it was


def test_rejudge_short_calls_refuses_a_run_that_kept_not_every_tuning(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    # It printed "score 0/0 ..." (or the disagreeing tunings' counts as if they were all).
    rejudge_short_calls = script(monkeypatch, "rejudge_short_calls")
    run = short_calls_run(tmp_path / "short_calls.json", keep_all=False)
    with pytest.raises(SystemExit, match=r"not every tuning was kept \(run it with --keep-all\)"):
        rejudge_short_calls.main([str(run)])


def test_rejudge_short_calls_counts_every_kept_tuning(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rejudge_short_calls = script(monkeypatch, "rejudge_short_calls")
    assert rejudge_short_calls.main([str(short_calls_run(tmp_path / "short_calls.json"))]) == 0
    last = capsys.readouterr().out.splitlines()[-1]
    assert last == "all score 2/2  median 2/2  mean 2/2  best 2/2"


def test_records_instrument_help_and_a_missing_file(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # `--help` was read as a records file, and a missing file ended in RecordError's traceback.
    records_instrument = script(monkeypatch, "records_instrument")
    with pytest.raises(SystemExit) as exited:
        records_instrument.main(["--help"])
    assert exited.value.code == 0
    assert "records files" in capsys.readouterr().out
    missing = tmp_path / "run-1.jsonl"
    with pytest.raises(SystemExit, match=rf"^{missing}: cannot read records: "):
        records_instrument.main([str(missing)])


def test_gpu_scripts_without_cupy_say_so_in_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    # On a CPU machine every GPU script ended in a ModuleNotFoundError traceback.
    gpu_common = script(monkeypatch, "gpu_common")
    monkeypatch.setitem(sys.modules, "cupy", None)  # as if not installed
    monkeypatch.setattr(sys, "argv", ["gpu_roofs.py"])
    with pytest.raises(SystemExit, match=r"^gpu_roofs.py needs cupy and a CUDA GPU \("):
        gpu_common.cupy()
