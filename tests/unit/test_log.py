"""Logs and records: events, the log context, the log levels, and the JSON-lines recorder."""

from __future__ import annotations

import json
import logging
import math
import os
import re
import subprocess
import sys
import textwrap
import threading
from datetime import datetime, timezone
from pathlib import Path

import pytest

from pytest_autotune.tune.check_result import CheckResult
from pytest_autotune.tune.config import AutotuneConfig
from pytest_autotune.tune.log import (
    AutotuneLogContext,
    AutotuneLogLevel,
    CandidateSampled,
    ChecksDone,
    Converged,
    Eliminated,
    Held,
    Preferred,
    ShortCircuit,
    TuningStep,
    event_from_json,
    format_duration,
    log_decision,
    log_event,
)
from pytest_autotune.tune.records import (
    RECORD_SCHEMA_VERSION,
    AutotuneRecord,
    Recorder,
    RecordError,
    read_records,
)
from pytest_autotune.tune.run import RunInfo
from tests.fakes import text_mode_opens

EVENTS = [
    TuningStep(0, (0, 2), 0.0125),
    CandidateSampled("tiled", 2, 0.000125),
    Eliminated("naive", 1, "best 3e-3 s > 1.5 x leader 1e-3 s"),
    Held("blocked", 3, 3, "best 2e-3 s > 1.5 x leader 1e-3 s"),
    ShortCircuit("tiled", 2, 2, 0.000125),
    Converged("tiled", 2, 5),
    Preferred("block256", 0, "block1024", 1, "rounds"),
    ChecksDone((CheckResult("tiled", True, "reference"), CheckResult("naive", False, "differs"))),
]


def make_record(**changes: object) -> AutotuneRecord:
    fields: dict[str, object] = {
        "tuner": "kernels-sum",
        "device_id": "cpu-test",
        "key": {"n": 1024, "dtype": "float32"},
        "checksum": "abc123",
        "fastest_index": 1,
        "fastest_name": "blocked",
        "results": (
            {"name": "pairwise", "index": 0, "samples_ns": [2000, 2100], "dropped_first": False},
        ),
        "bounds": {"launch_overhead_ns": 7000},
        "time_limit": 0.000125,
        "events": tuple(e.to_json() for e in EVENTS),
        "checks": (CheckResult("blocked", True).to_json(),),
        "source": "tuned",
        "duration_ns": 1_500_000,
        "extra": {"verdict": "ok"},
    }
    fields.update(changes)
    return AutotuneRecord(**fields)  # type: ignore[arg-type]


def test_every_event_is_tagged_and_reads_back():
    tags = [e.to_json()["event"] for e in EVENTS]
    assert tags == [
        "tuning_step",
        "candidate_sampled",
        "eliminated",
        "held",
        "short_circuit",
        "converged",
        "preferred",
        "checks_done",
    ]
    assert [event_from_json(e.to_json()) for e in EVENTS] == EVENTS


def test_a_preference_logged_before_it_said_by_what_reads_as_the_clients():
    logged = Preferred("block256", 0, "block1024", 1).to_json()
    del logged["by"]
    assert event_from_json(logged) == Preferred("block256", 0, "block1024", 1, "client")


def test_event_durations_are_integer_nanoseconds_in_json():
    assert TuningStep(3, (1,), 0.0125).to_json() == {
        "event": "tuning_step",
        "batch": 3,
        "indices": [1],
        "duration_ns": 12_500_000,
    }
    assert ShortCircuit("a", 0, 2, 1.5e-6).to_json()["time_limit_ns"] == 1500


def test_an_unknown_event_is_refused():
    with pytest.raises(ValueError, match="malformed autotune log event"):
        event_from_json({"event": "teleported"})


def test_logging_into_no_context_does_nothing():
    log_event(None, TuningStep(0, (0,), 1.0))


def test_a_context_keeps_its_events_in_order():
    ctx = AutotuneLogContext()
    log_event(ctx, EVENTS[0])
    ctx.event(EVENTS[2])
    assert ctx.events == [EVENTS[0], EVENTS[2]]


def test_samples_are_kept_only_at_the_full_level():
    quiet, full = AutotuneLogContext(), AutotuneLogContext(level=AutotuneLogLevel.FULL)
    for ctx in (quiet, full):
        log_event(ctx, CandidateSampled("a", 0, 1e-3))
    assert quiet.events == []
    assert full.events == [CandidateSampled("a", 0, 1e-3)]


def test_a_level_given_by_its_name_is_that_level(caplog):
    # `AutotuneLogContext(level="full")`, as the config takes it, logged nothing and kept
    # no sample: the name matched no member.
    caplog.set_level(logging.INFO, logger="pytest_autotune")
    ctx = AutotuneLogContext(level="full")
    log_event(ctx, CandidateSampled("a", 0, 1e-3))
    assert ctx.level is AutotuneLogLevel.FULL
    assert ctx.events == [CandidateSampled("a", 0, 1e-3)]
    assert len(caplog.records) == 1
    with pytest.raises(ValueError, match="AutotuneLogContext: level: log level must be one of"):
        AutotuneLogContext(level="loud")


def test_the_full_level_logs_every_event(caplog):
    caplog.set_level(logging.INFO, logger="pytest_autotune")
    ctx = AutotuneLogContext(level=AutotuneLogLevel.FULL)
    for event in EVENTS:
        ctx.event(event)
    assert caplog.messages == [
        "batch 0: candidates [0, 2] in 12.5 ms",
        "tiled [#2]: sample 125 us",
        "naive [#1] eliminated: best 3e-3 s > 1.5 x leader 1e-3 s",
        "blocked [#3] held as the rival after 3 samples: best 2e-3 s > 1.5 x leader 1e-3 s",
        "tiled [#2] ends the batch: 2 samples under the roofline time limit 125 us",
        "tiled [#2] converged after 5 samples",
        "block256 [#0] wins over block1024 [#1], whose score is lower: faster than it in most"
        " rounds, which met the machine's slow spells alike",
        "checks: 1 of 2 passed; failed: naive",
    ]


def test_a_short_circuit_on_one_sample_reads_in_the_singular():
    # `short_circuit_samples: 1` is a setting the seed allows; its event read "1 samples".
    event = ShortCircuit("tiled", 2, 1, 125e-6)
    assert str(event) == "tiled [#2] ends the batch: 1 sample under the roofline time limit 125 us"


def test_a_candidate_that_declined_is_not_counted_as_a_passed_check():
    # The report's tuning log read "checks: 3 of 3 passed" beside a candidate table whose
    # row for the candidate that declined the key says "skipped".
    done = ChecksDone(
        (
            CheckResult("s_sum", True, "reference"),
            CheckResult("declines", True, "skipped: not for this size", skipped=True),
            CheckResult("s_reduce", True),
            CheckResult("wrong", False, "differs"),
        )
    )
    assert str(done) == "checks: 2 of 4 passed; failed: wrong; skipped: declines"


def full_level_lines(caplog, tuner_name: str, key) -> list[str]:
    """What one tuning at the full level logs: a candidate that raises, one that works."""
    from pytest_autotune.tune.tunable_set import TunableSet
    from pytest_autotune.tune.tuner import Tuner
    from tests.fakes import FakeClient

    caplog.set_level(logging.INFO, logger="pytest_autotune")
    client = FakeClient()

    def broken(x):
        raise ValueError("no such mode")

    def works(x):
        client.clock.advance(1e-3)

    config = AutotuneConfig(log_level="full", disable_cache=True)
    tuner = Tuner(tuner_name, client.device_id, config)
    tuner.tune(key, TunableSet.of(len, {"broken": broken, "works": works}), ([1],), client)
    return caplog.messages


def test_the_full_level_logs_a_candidate_that_fails(caplog):
    # Every sample was logged and a candidate that raised was not: at the full level a
    # failure showed nowhere but in the records.
    failed = [m for m in full_level_lines(caplog, "t", 1) if "broken [#0] failed" in m]
    assert len(failed) == 1 and "ValueError: no such mode" in failed[0]


def test_each_line_of_the_full_level_names_the_tuner_and_key_it_tunes(caplog):
    # A program's threads tune keys of several tuners at once, and their lines interleave:
    # "sum [#0]: sample 2.93 us" said neither which tuner nor which key it was of, where the
    # decision line that follows them names both.
    lines = full_level_lines(caplog, "app-sum", ("sum", 8))
    assert len(lines) > 3
    assert all(m.startswith("app-sum: ('sum', 8)") for m in lines), lines
    assert "app-sum: ('sum', 8): works [#1]: sample 1.00 ms" in caplog.messages
    assert "app-sum: ('sum', 8): broken [#0] failed: ValueError: no such mode" in caplog.messages


def test_the_minimal_level_logs_one_line_per_decision(caplog):
    caplog.set_level(logging.INFO, logger="pytest_autotune")
    ctx = AutotuneLogContext(time_limit=0.000125, level=AutotuneLogLevel.MINIMAL)
    ctx.event(TuningStep(0, (0, 1), 0.002))
    ctx.event(Eliminated("b", 1, "slow"))
    ctx.event(TuningStep(1, (2,), 0.001))
    log_decision("kernels-sum", "blocked", "SumKey(n=1024)", ctx)
    assert caplog.messages == [
        "kernels-sum: SumKey(n=1024) -> blocked (2 batches in 3.00 ms, roofline time limit 125 us)"
    ]


def test_the_decision_line_of_one_batch_says_1_batch(caplog):
    caplog.set_level(logging.INFO, logger="pytest_autotune")
    ctx = AutotuneLogContext(level=AutotuneLogLevel.MINIMAL)
    ctx.event(TuningStep(0, (0, 1), 0.002))
    log_decision("kernels-sum", "blocked", "SumKey(n=1024)", ctx)
    assert caplog.messages == ["kernels-sum: SumKey(n=1024) -> blocked (1 batch in 2.00 ms)"]


def test_the_decision_line_of_a_key_no_candidate_can_run_names_no_winner(caplog):
    # It named the first planned candidate, which never runs, as the key's winner.
    from pytest_autotune.tune.tunable_set import TunableSet
    from pytest_autotune.tune.tuner import Tuner
    from tests.fakes import FakeClient

    caplog.set_level(logging.INFO, logger="pytest_autotune")
    client = FakeClient()

    def broken(x):
        raise ValueError("no such mode")

    tuner = Tuner("t", client.device_id, AutotuneConfig(log_level="minimal", disable_cache=True))
    tuner.tune(1, TunableSet.of(len, {"broken": broken, "also": broken}), ([1],), client)
    decided = [m for m in caplog.messages if m.startswith("t: 1 -> ")]
    assert len(decided) == 1
    assert decided[0].startswith("t: 1 -> no candidate succeeded (")


def test_the_disabled_level_logs_nothing(caplog):
    caplog.set_level(logging.DEBUG, logger="pytest_autotune")
    ctx = AutotuneLogContext()
    ctx.event(TuningStep(0, (0,), 0.001))
    log_decision("t", "a", 1, ctx)
    assert caplog.messages == []
    assert ctx.events == [TuningStep(0, (0,), 0.001)]


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        (2.5, "2.50 s"),
        (0.0125, "12.5 ms"),
        (0.000125, "125 us"),
        (3e-8, "30.0 ns"),
        (0.0, "0.00 ns"),
    ],
)
def test_durations_are_shown_in_a_readable_unit(seconds, text):
    assert format_duration(seconds) == text


def test_a_duration_reads_the_same_after_a_round_trip_through_its_logarithm():
    # The gate's baseline median is exp(mean of ln medians): for one session, 2865 ns
    # back as 2.8649999999999984e-06, which read "2.86 us" beside the record's "2.87 us".
    median = 2865 / 1e9
    assert format_duration(math.exp(math.log(median))) == format_duration(median) == "2.87 us"


def test_a_record_round_trips_through_json():
    record = make_record()
    data = json.loads(json.dumps(record.to_json()))
    assert data["schema_version"] == RECORD_SCHEMA_VERSION == 2
    assert data["time_limit_ns"] == 125_000
    assert AutotuneRecord.from_json(data) == record


def test_a_record_with_a_time_limit_of_a_fraction_of_a_nanosecond_equals_its_file_form():
    # The report of a run, rendered from its records in memory, showed 56.5 ns where the
    # same report rendered from the records file showed 56.0 ns.
    record = make_record(time_limit=56.5e-9)
    assert record.to_json()["time_limit_ns"] == 56
    assert AutotuneRecord.from_json(json.loads(json.dumps(record.to_json()))) == record
    assert record.time_limit == 56e-9


def test_a_records_durations_read_as_seconds_as_every_duration_of_the_api():
    # DESIGN: durations are float seconds in the API, integer nanoseconds in files. The
    # record had its tuning time in nanoseconds alone, beside a time limit in seconds.
    record = AutotuneRecord.from_json(make_record().to_json())
    assert record.duration == 0.0015
    assert record.time_limit == 0.000125


def test_an_undecided_record_has_no_winner_and_no_time_limit():
    record = make_record(fastest_index=None, fastest_name=None, time_limit=None, bounds=None)
    assert AutotuneRecord.from_json(record.to_json()) == record


def test_a_record_of_a_newer_schema_is_refused_clearly():
    data = make_record().to_json() | {"schema_version": RECORD_SCHEMA_VERSION + 1}
    with pytest.raises(RecordError) as info:
        AutotuneRecord.from_json(data)
    assert str(info.value) == (
        "record schema version 3 is newer than this pytest-autotune reads (2);"
        " upgrade pytest-autotune"
    )


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"schema_version": None}, "not an autotune record: schema_version is None"),
        ({"fastest_index": "1"}, "field 'fastest_index' has the wrong type: '1'"),
        ({"duration_ns": True}, "field 'duration_ns' has the wrong type: True"),
        ({"results": [1]}, "field 'results' must be a list of objects"),
        ({"when": "today"}, "unknown fields ['when']"),
    ],
)
def test_a_malformed_record_names_what_is_wrong(change, message):
    with pytest.raises(RecordError) as info:
        AutotuneRecord.from_json(make_record().to_json() | change)
    assert str(info.value) == message


def test_a_record_missing_a_field_names_it():
    data = make_record().to_json()
    del data["checksum"]
    with pytest.raises(RecordError, match=r"^missing field 'checksum'$"):
        AutotuneRecord.from_json(data)


def test_the_recorder_appends_one_line_per_record_and_creates_folders(tmp_path):
    path = tmp_path / "out" / "deep" / "records.jsonl"
    recorder = Recorder(path)
    assert path.read_text() == ""
    recorder.record(make_record(key=1))
    Recorder(path).record(make_record(key=2))
    lines = path.read_text().splitlines()
    assert [json.loads(line)["key"] for line in lines] == [1, 2]
    assert [r.key for r in read_records(path)] == [1, 2]


def test_a_relative_records_file_stays_the_one_created_when_the_program_changes_directory(
    tmp_path, monkeypatch
):
    # `record=records.jsonl`: the file was made where the recorder was created, and after an
    # os.chdir each record was appended to a new file under the new directory.
    (tmp_path / "later").mkdir()
    monkeypatch.chdir(tmp_path)
    recorder = Recorder("records.jsonl")
    recorder.record(make_record(key=1))
    monkeypatch.chdir(tmp_path / "later")
    recorder.record(make_record(key=2))
    assert not (tmp_path / "later" / "records.jsonl").exists()
    assert [r.key for r in read_records(tmp_path / "records.jsonl")] == [1, 2]


def test_a_record_cut_short_by_a_killed_run_is_cut_off_before_the_next_is_appended(tmp_path):
    path = tmp_path / "records.jsonl"
    Recorder(path).record(make_record(key=1))
    whole = path.read_text()
    with path.open("a") as file:
        file.write(json.dumps(make_record(key=2).to_json())[:150])

    Recorder(path).record(make_record(key=3))

    assert [r.key for r in read_records(path)] == [1, 3]
    assert path.read_text().startswith(whole)


def test_a_last_line_without_its_newline_is_kept_and_the_record_starts_a_line_of_its_own(
    tmp_path,
):
    path = tmp_path / "records.jsonl"
    Recorder(path).record(make_record(key=1))
    path.write_text(path.read_text().rstrip("\n"))
    notes = tmp_path / "notes.txt"
    notes.write_text("not a records file")

    Recorder(path).record(make_record(key=2))
    Recorder(notes).record(make_record(key=3))

    assert [r.key for r in read_records(path)] == [1, 2]
    assert notes.read_text().splitlines()[0] == "not a records file"


def test_a_records_file_an_editor_saved_with_a_byte_order_mark_reads(tmp_path):
    path = tmp_path / "records.jsonl"
    Recorder(path).record(make_record(key=1))
    path.write_bytes(b"\xef\xbb\xbf" + path.read_bytes())

    assert [r.key for r in read_records(path)] == [1]


RUN = RunInfo("3f2a9c01bb7e", "2026-11-30T15:00:00+00:00", "a" * 40, "main")


def test_a_record_carries_its_run_id_time_commit_and_branch():
    record = make_record(run=RUN)
    data = json.loads(json.dumps(record.to_json()))
    assert data["run"] == {
        "id": "3f2a9c01bb7e",
        "timestamp": "2026-11-30T15:00:00+00:00",
        "commit": "a" * 40,
        "branch": "main",
    }
    assert AutotuneRecord.from_json(data).run == RUN


def test_a_version_1_record_still_reads_without_a_run():
    data = make_record().to_json()
    del data["run"]
    data["schema_version"] = 1
    assert AutotuneRecord.from_json(data) == make_record(schema_version=1)


def test_a_run_field_of_the_wrong_type_names_it():
    data = make_record().to_json() | {"run": {"id": 7, "timestamp": "t"}}
    with pytest.raises(RecordError, match=r"^run field 'id' has the wrong type: 7$"):
        AutotuneRecord.from_json(data)


def test_the_recorder_stamps_one_run_on_records_that_carry_none(tmp_path):
    path = tmp_path / "r.jsonl"
    recorder = Recorder(path)
    recorder.record(make_record(key=1))
    recorder.record(make_record(key=2, run=RUN))
    recorder.record(make_record(key=3))
    first, given, third = read_records(path)
    assert first.run is not None and first.run == third.run
    assert re.fullmatch(r"[0-9a-f]{12}", first.run.id)
    assert given.run == RUN


def test_every_recorder_of_a_process_stamps_the_one_run_of_that_process(tmp_path):
    # A program's tuners (one per operation and device) each hold a recorder: one run each
    # showed a single execution of the program as that many runs in `report`.
    first, second = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    Recorder(first).record(make_record(key=1))
    Recorder(first).record(make_record(key=2))
    Recorder(second).record(make_record(key=3))
    runs = {record.run for record in read_records(first) + read_records(second)}
    assert len(runs) == 1 and None not in runs


@pytest.mark.skipif(not hasattr(os, "fork"), reason="a POSIX fork")
def test_the_workers_a_program_forks_before_its_first_record_stamp_its_one_run(tmp_path):
    # A pool forked at a program's start, its workers tuning: each worker made a run of its
    # own at its first record, and `report` showed one execution as a run per worker.
    program = textwrap.dedent(
        """
        import os
        from pytest_autotune import Tunable, TunableSet, local_tuner
        from pytest_autotune.backends import cpu

        TUNER = local_tuner()
        CLIENT = cpu()

        def one(n):
            return n

        def make():
            return TunableSet(lambda n: n).with_(Tunable("one", one)).with_(Tunable("two", one))

        for _ in range(2):
            pid = os.fork()
            if pid == 0:
                TUNER.execute(CLIENT.device_id, CLIENT, TUNER.init(make), (os.getpid(),))
                os._exit(0)
            os.waitpid(pid, 0)
        """
    )
    path = tmp_path / "r.jsonl"
    environ = {
        **os.environ,
        "PYTHONPATH": str(Path(__file__).resolve().parents[2]),
        "PYTEST_AUTOTUNE_DISABLE_CACHE": "1",
        "PYTEST_AUTOTUNE_RECORD": str(path),
    }
    done = subprocess.run(
        [sys.executable, "-c", program],
        check=False,
        env=environ,
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    records = read_records(path)
    assert len(records) == 2 and len({record.run for record in records}) == 1


def test_a_run_outside_a_git_checkout_has_no_commit(tmp_path):
    run = RunInfo.current(tmp_path, now=datetime(2026, 1, 2, 3, 4, 5, tzinfo=timezone.utc))
    assert (run.commit, run.branch, run.timestamp) == (None, None, "2026-01-02T03:04:05+00:00")
    assert run.label == f"2026-01-02 03:04:05 {run.id}"


def test_a_run_in_a_git_checkout_names_its_commit_and_branch(tmp_path):
    def git(*args):
        subprocess.run(["git", *args], cwd=tmp_path, check=True, capture_output=True)

    git("init", "-q", "-b", "work")
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "--allow-empty", "-m", "x")
    run = RunInfo.current(tmp_path)
    assert run.branch == "work" and run.commit is not None and len(run.commit) == 40
    assert run.label.endswith(run.commit[:8])


def test_a_pull_requests_detached_merge_commit_is_named_by_its_branch(tmp_path, monkeypatch):
    # GitHub Actions checks a pull request out as a detached merge commit: its records had
    # `branch: null`, and nothing tied them to the pull request's branch.
    def git(*args):
        subprocess.run(["git", *args], cwd=tmp_path, check=True, capture_output=True)

    git("init", "-q", "-b", "work")
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "--allow-empty", "-m", "x")
    git("checkout", "-q", "--detach")
    monkeypatch.delenv("GITHUB_HEAD_REF", raising=False)
    assert RunInfo.current(tmp_path).branch is None
    monkeypatch.setenv("GITHUB_HEAD_REF", "faster-sum")
    assert RunInfo.current(tmp_path).branch == "faster-sum"
    monkeypatch.setenv("GITHUB_HEAD_REF", "")  # a push event's job sets it empty
    assert RunInfo.current(tmp_path).branch is None


def test_the_recorder_can_write_to_stdout(capsys):
    Recorder("stdout").record(make_record(key="k"))
    out = capsys.readouterr().out
    assert out.endswith("\n") and out.count("\n") == 1
    assert json.loads(out)["key"] == "k"


def test_the_recorder_comes_from_the_config(tmp_path):
    assert Recorder.from_config(AutotuneConfig()) is None
    recorder = Recorder.from_config(AutotuneConfig(record=tmp_path / "r.jsonl"))
    assert recorder is not None and recorder.sink == tmp_path / "r.jsonl"


def test_records_from_many_threads_stay_whole_lines(tmp_path):
    path = tmp_path / "records.jsonl"
    recorder = Recorder(path)
    big = {"payload": "x" * 20_000}

    def write(worker: int) -> None:
        for i in range(20):
            recorder.record(make_record(key=[worker, i], extra=big))

    threads = [threading.Thread(target=write, args=(w,)) for w in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    keys = sorted(tuple(r.key) for r in read_records(path))
    assert keys == [(w, i) for w in range(8) for i in range(20)]


@pytest.mark.skipif(not hasattr(os, "fork"), reason="a POSIX fork")
@pytest.mark.filterwarnings("ignore:.*multi-threaded.*fork:DeprecationWarning")
def test_a_process_forked_while_a_record_is_written_holds_no_lock_on_the_file(
    tmp_path, monkeypatch
):
    """The file is locked while a record is written; a process forked meanwhile (a pool
    started by another thread) inherits the descriptor, and closing it in the parent left
    the file locked for as long as the child lived: every later record of the program
    waited for the pool's workers to end."""
    from pytest_autotune.tune import records

    path = tmp_path / "records.jsonl"
    parent, children = os.getpid(), []
    ready, go = os.pipe()
    written = records._after_last_line

    def fork_meanwhile(fd: int) -> bytes:
        if os.getpid() == parent and not children:
            pid = os.fork()
            if pid == 0:  # a pool's worker: alive until the test lets it go
                os.read(ready, 1)
                os._exit(0)
            children.append(pid)
        return written(fd)

    monkeypatch.setattr(records, "_after_last_line", fork_meanwhile)
    Recorder(path).record(make_record(key=[1]))
    later = threading.Thread(target=Recorder(path).record, args=(make_record(key=[2]),))
    later.start()
    later.join(timeout=60)  # a guard against the hang, not a timing
    still_waiting = later.is_alive()
    os.write(go, b"x")
    os.waitpid(children[0], 0)
    later.join()
    assert not still_waiting, "a record waited for the lock a forked child held"
    assert sorted(tuple(r.key) for r in read_records(path)) == [(1,), (2,)]


@pytest.mark.skipif(not hasattr(os, "fork"), reason="a POSIX fork")
@pytest.mark.filterwarnings("ignore:.*multi-threaded.*fork:DeprecationWarning")
def test_records_of_several_processes_and_threads_to_one_piped_stdout_stay_whole_lines():
    """`PYTEST_AUTOTUNE_RECORD=stdout` in a program of several processes (a pool, a
    server's workers) whose stdout is one pipe (a container's log): a pipe writes at most
    4 KiB at once whole, and records of 20 KB (a full level's samples) were cut into each
    other's lines, as were those of one process's recorders (one a tuner) past the
    pipe's 64 KiB."""
    from tests.forking import run_forked

    read_end, write_end = os.pipe()
    big = {"payload": "x" * 200_000}

    def write(child: int, thread: int) -> None:
        for i in range(10):
            Recorder("stdout").record(make_record(key=[child, thread, i], extra=big))

    def writer(child: int) -> bool:
        sys.stdout = open(write_end, "w", encoding="utf-8", closefd=False)  # noqa: SIM115
        threads = [threading.Thread(target=write, args=(child, t)) for t in range(2)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        return True

    chunks: list[bytes] = []

    def read() -> None:
        while chunk := os.read(read_end, 1 << 16):
            chunks.append(chunk)

    outcomes: dict[int, str] = {}

    def run(child: int) -> None:
        outcomes[child] = run_forked(lambda: writer(child))

    reader = threading.Thread(target=read)
    reader.start()
    children = [threading.Thread(target=run, args=(c,)) for c in range(3)]
    for thread in children:
        thread.start()
    for thread in children:
        thread.join()
    os.close(write_end)
    reader.join()
    os.close(read_end)
    assert outcomes == {0: "ok", 1: "ok", 2: "ok"}
    lines = b"".join(chunks).decode().splitlines()
    keys = sorted(tuple(json.loads(line)["key"]) for line in lines)
    assert keys == [(c, t, i) for c in range(3) for t in range(2) for i in range(10)]


@pytest.mark.skipif(not hasattr(os, "fork"), reason="POSIX record locks")
def test_records_to_a_stdout_on_dev_null_take_no_lock_other_programs_would_share(
    tmp_path, monkeypatch
):
    """A lock on /dev/null (a daemon's stdout) or a terminal is one for every process of
    the machine: unrelated programs' records waited on each other's. A pipe and a regular
    file are locked; anything else is written as it is."""
    from pytest_autotune.tune import records

    locked: list[int] = []
    real = records.fcntl.lockf

    def lockf(fd: int, cmd: int) -> None:
        if cmd == records.fcntl.LOCK_EX:
            locked.append(fd)
        real(fd, cmd)

    monkeypatch.setattr(records.fcntl, "lockf", lockf)
    for target in (os.devnull, tmp_path / "out.jsonl"):
        with open(target, "w", encoding="utf-8") as stream:
            monkeypatch.setattr(records.sys, "stdout", stream)
            Recorder("stdout").record(make_record(key=[1]))
    assert len(locked) == 1, locked
    assert (tmp_path / "out.jsonl").read_text(encoding="utf-8").count("\n") == 1


@pytest.mark.parametrize("platform", ["linux", "win32"])
def test_records_of_several_recorders_on_one_file_are_all_kept(tmp_path, monkeypatch, platform):
    """Each `LocalTuner` of a program has its own recorder, and each process of a pool its
    own tuners: a recorder that found another's record half written took it for one cut
    short by a killed run and cut it off (2,186 of 9,000 records lost by 6 processes).
    Windows has no `flock`: there the recorders, `-n 2` workers' among them, took no lock
    at all; they hold filelock's beside the file (its Unix kind here)."""
    from pytest_autotune.tune import records

    monkeypatch.setattr(records.sys, "platform", platform)
    path = tmp_path / "records.jsonl"
    big = {"payload": "x" * 20_000}

    def write(worker: int) -> None:
        recorder = Recorder(path)
        for i in range(50):
            recorder.record(make_record(key=[worker, i], extra=big))

    threads = [threading.Thread(target=write, args=(w,)) for w in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    keys = sorted(tuple(r.key) for r in read_records(path))
    assert keys == [(w, i) for w in range(8) for i in range(50)]


def test_a_bad_line_names_the_file_and_line_number(tmp_path):
    path = tmp_path / "records.jsonl"
    good = json.dumps(make_record().to_json())
    path.write_text(f"{good}\n\n{good[:40]}\n", encoding="utf-8")
    with pytest.raises(RecordError, match=rf"^{re.escape(str(path))}:3: invalid JSON: "):
        read_records(path)
    path.write_text(f"{good}\n[1, 2]\n", encoding="utf-8")
    with pytest.raises(RecordError) as info:
        read_records(path)
    assert str(info.value) == f"{path}:2: expected a JSON object, got a JSON array"
    newer = json.dumps(make_record().to_json() | {"schema_version": 9})
    path.write_text(f"{newer}\n", encoding="utf-8")
    with pytest.raises(
        RecordError, match=rf"^{re.escape(str(path))}:1: record schema version 9 is newer"
    ):
        read_records(path)


def test_a_missing_records_file_is_reported_with_its_path(tmp_path):
    with pytest.raises(
        RecordError, match=rf"^{re.escape(str(tmp_path / 'none.jsonl'))}: cannot read records: "
    ):
        read_records(tmp_path / "none.jsonl")


def test_records_are_appended_where_os_has_no_pread(tmp_path, monkeypatch):
    """Windows has no `os.pread`: every record after a file's first raised AttributeError."""
    path = tmp_path / "records.jsonl"
    Recorder(path).record(make_record(key=1))
    with path.open("a") as file:
        file.write(json.dumps(make_record(key=2).to_json())[:150])
    monkeypatch.delattr(os, "pread")

    Recorder(path).record(make_record(key=3))
    Recorder(path).record(make_record(key=4))

    assert [r.key for r in read_records(path)] == [1, 3, 4]


def test_records_are_written_in_binary_mode(tmp_path, monkeypatch):
    """A descriptor Windows opens in text mode wrote each record's newline as CRLF."""
    path = tmp_path / "records.jsonl"
    opened_as_text = text_mode_opens(monkeypatch)
    Recorder(path).record(make_record(key=1))
    Recorder(path).record(make_record(key=2))
    assert str(path) not in opened_as_text
    assert [r.key for r in read_records(path)] == [1, 2]


def test_a_branch_named_outside_the_locales_encoding_is_read_as_git_wrote_it(tmp_path, monkeypatch):
    """git writes names in UTF-8, and Windows decodes a subprocess's text in the ANSI code
    page: a branch `修复-sum` (bytes cp1252 lacks) raised UnicodeDecodeError out of every
    record of the run, where `benchmark_json` only lost the commit."""
    import locale

    from pytest_autotune.report.benchmark_json import commit_info

    def git(*args):
        subprocess.run(["git", *args], cwd=tmp_path, check=True, capture_output=True)

    git("init", "-q", "-b", "修复-sum")
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "--allow-empty", "-m", "x")
    monkeypatch.setattr(locale, "getencoding", lambda: "cp1252", raising=False)
    monkeypatch.setattr(locale, "getpreferredencoding", lambda do_setlocale=True: "cp1252")
    assert RunInfo.current(tmp_path).branch == "修复-sum"
    assert commit_info(tmp_path)["branch"] == "修复-sum"


def test_the_checks_line_says_which_candidates_raised_not_that_they_failed() -> None:
    # "checks: 1 of 3 passed; failed: boom, wrong" read as two wrong outputs, where the
    # candidate table and the summaries say boom raised.
    done = ChecksDone(
        (
            CheckResult("good", True, "reference"),
            CheckResult("boom", False, "raised ValueError: no such mode"),
            CheckResult("wrong", False, "differs from the reference 'good': ..."),
        )
    )
    assert str(done) == "checks: 1 of 3 passed; failed: wrong; raised: boom"


def test_a_recorder_given_no_file_says_what_it_takes(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="the sink is empty: give a file's path, 'stdout'"):
        Recorder("")
    with pytest.raises(TypeError, match="must be a file's path, 'stdout' or 'stderr', got Non"):
        Recorder(None)  # type: ignore[arg-type]
    with pytest.raises(IsADirectoryError, match=r"is a folder: give a file's path \(.*records"):
        Recorder(tmp_path)
    assert os.listdir(tmp_path) == []
