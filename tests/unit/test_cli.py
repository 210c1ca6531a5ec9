"""`pytest-autotune report | show | diff`: output, exit codes, and one-line errors."""

from __future__ import annotations

import importlib.metadata
import json
import os
import shlex
import shutil
import subprocess
import sys
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import pytest

from pytest_autotune.backends.peaks import Peaks, load_or_probe, peaks_path
from pytest_autotune.cli import EXIT_CHANGED, main
from pytest_autotune.cli.compare import CACHES_TOLERANCE
from pytest_autotune.cli.errors import EXIT_PIPE_CLOSED
from pytest_autotune.gate import Baseline, Measurement, judge
from pytest_autotune.tune.benchmark import AutotuneOutcome, AutotuneResult
from pytest_autotune.tune.cache import (
    PersistentCache,
    PersistentCacheKey,
    PersistentCacheValue,
    cache_path,
)
from pytest_autotune.tune.errors import AutotuneError, AutotuneErrorKind
from pytest_autotune.tune.journal import journal_path
from pytest_autotune.tune.key import stable_key
from pytest_autotune.tune.records import AutotuneRecord, Recorder
from pytest_autotune.tune.run import RunInfo
from tests.unit.test_html import SCRIPT_NAME, realistic_records, sum_record

GPU = "cuda-nvidia-h200"


def outcome(name: str, index: int, us: float, n: int = 5) -> AutotuneOutcome:
    return AutotuneOutcome(name, index, tuple(us * 1e-6 for _ in range(n)))


def write_cache(
    path: Path,
    entries: dict[str, tuple[str, tuple[AutotuneResult, ...]]],
    *,
    copy_peak: float = 4.28e12,
    device_id: str = GPU,
) -> Path:
    """A cache file of `entries`: key -> (winner, results), of the device `device_id`."""
    values = {}
    for key, (winner, results) in entries.items():
        index = next(i for i, r in enumerate(results) if r.name == winner)
        checksum = "-".join(r.name or "" for r in results)
        values[PersistentCacheKey(stable_key(key), checksum)] = PersistentCacheValue(
            key, index, winner, results
        )
    peaks = Peaks(memory={"copy": copy_peak}, compute={"fp32": 63e12})
    device = {"id": device_id, "fingerprint": {"cuda": "12.6"}, "peaks": peaks.to_json()}
    PersistentCache(path).save(values, device=device, metadata={"sigma_between": 0.01})
    return path


BROKEN = AutotuneError(AutotuneErrorKind.UNKNOWN, "RuntimeError: boom\n  at line 3", SCRIPT_NAME)


@pytest.fixture
def baseline(tmp_path: Path) -> Path:
    return write_cache(
        tmp_path / "old.json",
        {
            "n1024": ("block256", (outcome("block32", 0, 10), outcome("block256", 1, 4))),
            "n4096": ("block256", (outcome("block32", 0, 40), outcome("block256", 1, 16))),
            "n8": ("block32", (outcome("block32", 0, 1), outcome("block256", 1, 2))),
        },
    )


@pytest.fixture
def refreshed(tmp_path: Path) -> Path:
    return write_cache(
        tmp_path / "new.json",
        {
            "n1024": ("block256", (outcome("block32", 0, 10), outcome("block256", 1, 5))),
            "n4096": (
                "float4",
                (outcome("block32", 0, 40), outcome("block256", 1, 16), outcome("float4", 2, 12)),
            ),
            "n65536": ("block256", (outcome("block256", 0, 100), BROKEN)),
        },
        copy_peak=4.1e12,
    )


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


# -- report --------------------------------------------------------------------------------


def refused(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    """What the command says on stderr, having asserted that it refused (exit code 2) and
    wrote nothing on stdout."""
    code, out, err = run(capsys, *argv)
    assert (code, out) == (2, ""), err
    return err


def refused_as_records(capsys: pytest.CaptureFixture[str], path: Path) -> list[str]:
    """What `report` and `compare`, the readers of records, each say refusing `path`."""
    return [refused(capsys, "report", str(path)), refused(capsys, "compare", str(path), str(path))]


def refused_as_a_cache_file(
    capsys: pytest.CaptureFixture[str], path: Path, other: Path
) -> list[str]:
    """What `show` and `diff`, the readers of cache files, each say refusing `path` (diffed
    against the cache file `other`)."""
    return [refused(capsys, "show", str(path)), refused(capsys, "diff", str(path), str(other))]


def realistic_records_file(path: Path) -> Path:
    recorder = Recorder(path)
    for record in realistic_records():
        recorder.record(record)
    return path


def test_report_renders_the_html_report_from_records(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    records = realistic_records_file(tmp_path / "records.jsonl")
    output = tmp_path / "site" / "report.html"
    code, out, err = run(capsys, "report", str(records), "-o", str(output), "--title", "nightly")
    assert (code, err) == (0, "")
    assert out == f"wrote {output} (3 decisions)\n"
    html = output.read_text(encoding="utf-8")
    assert "<title>nightly</title>" in html
    assert html.count('class="card decision') == 3
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html


def test_a_records_files_torn_last_line_is_a_warning_and_the_report_is_still_written(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # A CI job killed while its run wrote its records: the whole records before the cut
    # still make a report; a bad line with its newline (not a cut) stays an error.
    records = realistic_records_file(tmp_path / "records.jsonl")
    with records.open("a", encoding="utf-8") as file:
        file.write('{"schema_version": 2, "tuner": "cut')
    output = tmp_path / "report.html"
    code, out, err = run(capsys, "report", str(records), "-o", str(output))
    assert (code, out) == (0, f"wrote {output} (3 decisions)\n")
    assert err == (
        f"pytest-autotune: warning: {records}:4: the last record was cut short while it was"
        " written (invalid JSON: Unterminated string starting at) and is ignored; the 3"
        " records before it are read\n"
    )
    with records.open("a", encoding="utf-8") as file:
        file.write("\n")
    code, out, err = run(capsys, "report", str(records), "-o", str(output))
    assert code == 2 and f"{records}:4: invalid JSON" in err


def test_report_joins_several_records_files(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    first, second = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    one, two, three = realistic_records()
    Recorder(first).record(one)
    Recorder(second).record(two)
    Recorder(second).record(three)
    output = tmp_path / "r.html"
    code, out, _ = run(capsys, "report", str(first), str(second), "-o", str(output))
    assert code == 0 and "(3 decisions)" in out


def sum_run(run: RunInfo | None, us: float) -> AutotuneRecord:
    """The passing sum group of one run, its winner measured at about `us` microseconds."""
    record = sum_record()
    samples = [round(us * 1000) + k for k in range(40)]
    return replace(record, run=run, extra={**record.extra, "winner_samples_ns": samples})


RUN_1 = RunInfo("aaaaaaaaaaaa", "2026-11-01T10:00:00+00:00", "1" * 40, "main")
RUN_2 = RunInfo("bbbbbbbbbbbb", "2026-11-02T10:00:00+00:00", "2" * 40, "main")


def test_report_over_several_runs_labels_them_and_draws_each_groups_trend(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    first, second = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    Recorder(first).record(sum_run(RUN_1, 5.0))
    Recorder(second).record(sum_run(RUN_2, 6.0))
    output = tmp_path / "r.html"
    code, _, _ = run(capsys, "report", str(first), str(second), "-o", str(output))
    html = output.read_text(encoding="utf-8")
    assert code == 0
    assert html.count('class="card decision') == 1  # one group, not one row per file
    assert "2026-11-01 10:00:00 11111111" in html and "2026-11-02 10:00:00 22222222" in html
    assert html.count('<svg class="chart trend"') == 1


def two_runs_of_one_group(records: Path) -> Path:
    """`records` holding a run of test_sum's group and a later, slower run of it."""
    Recorder(records).record(sum_run(RUN_1, 5.0))
    Recorder(records).record(sum_run(RUN_2, 6.0))
    return records


def test_report_counts_the_decisions_the_page_shows_of_several_runs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Two runs of one group are one card (its latest decision): the line that says what
    # was written counts what the page's tally counts, not the records read.
    records = two_runs_of_one_group(tmp_path / "r.jsonl")
    output = tmp_path / "r.html"
    code, out, _ = run(capsys, "report", str(records), "-o", str(output))
    assert code == 0
    assert output.read_text(encoding="utf-8").count('class="card decision') == 1
    assert out == f"wrote {output} (1 decision) from 2 records of 2 runs\n"


def test_report_counts_records_given_twice_once(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # One file given twice (or a run's records appended twice) listed each run with twice
    # its groups and drew every point of the group's trend twice.
    records = two_runs_of_one_group(tmp_path / "r.jsonl")
    output = tmp_path / "r.html"
    code, out, _ = run(capsys, "report", str(records), str(records), "-o", str(output))
    assert code == 0
    assert out == (
        f"wrote {output} (1 decision) from 2 records of 2 runs; 2 records left out, copies of"
        " others (a file given twice, a run appended twice)\n"
    )
    html = output.read_text(encoding="utf-8")
    assert html.count('<g class="trend-point">') == 2
    assert html.count('<td class="num">1</td>') == 2  # each run: 1 group
    assert html.count('<td class="num">2</td>') == 0


def test_records_without_a_run_are_labelled_by_their_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    first, second = tmp_path / "monday.jsonl", tmp_path / "tuesday.jsonl"
    for path, us in ((first, 5.0), (second, 6.0)):
        data = sum_run(None, us).to_json()
        del data["run"]
        path.write_text(json.dumps(data | {"schema_version": 1}) + "\n")
    output = tmp_path / "r.html"
    assert run(capsys, "report", str(first), str(second), "-o", str(output))[0] == 0
    html = output.read_text(encoding="utf-8")
    assert "monday.jsonl" in html and "tuesday.jsonl" in html
    assert html.count('class="card decision') == 1


# -- compare -------------------------------------------------------------------------------


def test_compare_judges_run_b_against_run_a_with_the_gates_rule(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    Recorder(a).record(sum_run(RUN_1, 5.0))
    Recorder(b).record(sum_run(RUN_2, 6.0))
    code, out, err = run(capsys, "compare", str(a), str(b))
    expected = judge(
        Measurement(tuple((6000 + k) / 1e9 for k in range(40))),
        Baseline(GPU, "c2", "pairwise", tuple((5000 + k) / 1e9 for k in range(40)), source=str(a)),
        device_id=GPU,
        checksum="c2",
    )
    assert expected.failed and (code, err) == (1, "")
    lines = out.splitlines()
    assert lines[2].split()[:2] == ["example_kernels/test_sum.py::test_sum", "[n4194304]"]
    assert "pairwise 5.02 us" in lines[2] and "pairwise 6.02 us" in lines[2]
    assert lines[2].endswith("REGRESSION")
    assert expected.message in out  # the gate's own words
    assert lines[-1] == "1 of 1 compared groups fail the gate"


def test_compare_names_the_device_of_a_group_measured_on_several(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Records of two machines in one file: one group's rows must say which is which.
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    Recorder(a).record(sum_run(RUN_1, 5.0))
    Recorder(b).record(sum_run(RUN_2, 5.0))
    Recorder(b).record(replace(sum_run(RUN_2, 9.0), device_id="cuda-nvidia-h100"))
    code, out, _ = run(capsys, "compare", str(a), str(b))
    rows = out.splitlines()[2:4]
    assert code == 0
    assert rows[0].startswith(
        "example_kernels/test_sum.py::test_sum [n4194304] on cuda-nvidia-h100"
    )
    assert rows[0].endswith("only in B")
    assert rows[1].startswith(f"example_kernels/test_sum.py::test_sum [n4194304] on {GPU}")
    assert rows[1].endswith("pass")


def no_group_in_both(a: Path, b: Path, device_a: str, device_b: str) -> str:
    """What compare says refusing `a` and `b`, whose groups were measured on two devices."""
    return (
        f"pytest-autotune: error: {a}, {b}: no group is in both on one device: A's groups"
        f" were measured on {device_a}, B's on {device_b}, and a run is judged only against a"
        " baseline of its own device (or of the runner class --autotune-runner names)\n"
    )


def test_compare_of_runs_on_two_devices_says_the_groups_are_there_on_other_devices(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # A run under --autotune-runner beside one without it, or two machines: the same
    # groups, filed under two device ids. "no group is in both" alone read as if the
    # files held different tests.
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    Recorder(a).record(replace(sum_run(RUN_1, 5.0), device_id="cpu-amd-epyc-2t"))
    Recorder(b).record(replace(sum_run(RUN_2, 5.0), device_id="cpu-github-ubuntu-x64"))
    err = refused(capsys, "compare", str(a), str(b))
    assert err == no_group_in_both(a, b, "cpu-amd-epyc-2t", "cpu-github-ubuntu-x64")


def test_compare_of_cache_roots_of_two_devices_says_the_groups_are_there_on_other_devices(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # `compare old/.autotune new/.autotune` of a GPU runner's caches and a laptop's: each
    # file is named by its path below the root, its device's folder first, so the same
    # file of two devices read as two groups, and "no group is in both" said nothing more.
    before, after = tmp_path / "before", tmp_path / "after"
    for root, device in ((before, GPU), (after, "cpu-amd-epyc-2t")):
        (root / device).mkdir(parents=True)
        write_cache(root / device / "t.json", N8, device_id=device)
    err = refused(capsys, "compare", str(before), str(after))
    assert err == no_group_in_both(before, after, GPU, "cpu-amd-epyc-2t")


def test_compare_says_a_group_whose_every_candidate_failed_in_a_was_there(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Run A tuned the group and nothing could be measured (its verdict: error): the group
    # is not new in B, as "only in B" said.
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    error = sum_run(RUN_1, 5.0)
    extra = {**error.extra, "verdict": "error", "failed": True, "winner_samples_ns": []}
    failed = ({"name": "pairwise", "index": 0, "error": {"kind": "unknown", "message": "x"}},)
    Recorder(a).record(
        replace(error, fastest_index=None, fastest_name=None, results=failed, extra=extra)
    )
    Recorder(b).record(sum_run(RUN_2, 5.0))
    code, out, err = run(capsys, "compare", str(a), str(b))
    assert code == 2 and "no group is in both" in err  # nothing to judge
    Recorder(a).record(replace(sum_run(RUN_1, 5.0), key="n8"))
    Recorder(b).record(replace(sum_run(RUN_2, 5.0), key="n8"))
    code, out, _ = run(capsys, "compare", str(a), str(b))
    row = next(line for line in out.splitlines() if "[n4194304]" in line)
    assert code == 0
    assert row.split()[2:4] == ["no", "winner"] and row.endswith("nothing measured in A")


def test_compare_passes_an_unchanged_run_and_honours_max_regression(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    Recorder(a).record(sum_run(RUN_1, 5.0))
    Recorder(b).record(sum_run(RUN_2, 5.0))
    code, out, _ = run(capsys, "compare", str(a), str(b))
    assert code == 0 and out.splitlines()[2].endswith("pass")
    Recorder(b).record(sum_run(RUN_2, 6.0))  # the file's latest run is the one compared
    assert run(capsys, "compare", str(a), str(b), "--max-regression", "0.5")[0] == 0


def test_compare_of_a_file_with_itself_says_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Named twice, a records file's latest run was compared with itself: +0.0% for every
    # group, read as a run that changed nothing.
    a = tmp_path / "a.jsonl"
    Recorder(a).record(sum_run(RUN_1, 5.0))
    code, out, _ = run(capsys, "compare", str(a), str(tmp_path / "." / "a.jsonl"))
    assert code == 0
    assert "A and B are one file: each group is compared with itself" in out.splitlines()
    Recorder(tmp_path / "b.jsonl").record(sum_run(RUN_2, 5.0))
    assert "one file" not in run(capsys, "compare", str(a), str(tmp_path / "b.jsonl"))[1]


def test_compare_of_a_history_that_ends_with_bs_run_says_each_group_is_compared_with_itself(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # CI appends each run's records to a history (`cat run.jsonl >> history.jsonl`), and
    # `compare history.jsonl run.jsonl` judged the run against itself: +0.0% for every group,
    # read as a run that changed nothing since the one before.
    history, today = tmp_path / "history.jsonl", tmp_path / "today.jsonl"
    Recorder(history).record(sum_run(RUN_1, 5.0))
    Recorder(history).record(sum_run(RUN_2, 9.0))
    Recorder(today).record(sum_run(RUN_2, 9.0))
    code, out, _ = run(capsys, "compare", str(history), str(today))
    assert code == 0
    assert (
        f"A's latest run is B's ({RUN_2.label}): each group is compared with itself"
        in out.splitlines()
    )
    yesterday = tmp_path / "yesterday.jsonl"
    Recorder(yesterday).record(sum_run(RUN_1, 5.0))
    assert "compared with itself" not in run(capsys, "compare", str(yesterday), str(today))[1]


def test_compare_says_when_a_run_stopped_early(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Run B was cancelled after the first group: its other groups read "only in A", as if
    # the change had removed them.
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    Recorder(a).record(sum_run(RUN_1, 5.0))
    Recorder(b).record(sum_run(replace(RUN_2, stopped="interrupted"), 5.0))
    code, out, _ = run(capsys, "compare", str(a), str(b))
    assert code == 0
    said = "stopped early (interrupted): the groups tuned before it are shown, no others"
    assert f"B's run {said}" in out.splitlines()
    assert "A's run" not in out


@pytest.mark.parametrize("value", ["10", "10%", "1.5"])
def test_compare_refuses_a_max_regression_the_marker_refuses(
    value: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # `--max-regression 10`, meant as 10%, read as a 1000% tolerance passed every group;
    # the marker and the settings refuse it as no fraction from 0 to 1.
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    Recorder(a).record(sum_run(RUN_1, 5.0))
    Recorder(b).record(sum_run(RUN_2, 5.0))
    with pytest.raises(SystemExit) as exited:
        main(["compare", str(a), str(b), "--max-regression", value])
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert f"expected a fraction from 0 to 1 (0.1 for 10%), got '{value}'" in err


def test_compare_help_says_max_regression_is_a_fraction_from_0_to_1(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # The help gave an example (0.05 for 5%) but not the range the parser holds it to.
    with pytest.raises(SystemExit) as exited:
        main(["compare", "--help"])
    assert exited.value.code == 0
    help_text = " ".join(capsys.readouterr().out.split())
    assert "the tolerated slowdown, a fraction from 0 to 1: 0.05 for 5%" in help_text


def records_of_a_slowdown_under_load(tmp_path: Path, cpu: str) -> tuple[Path, Path]:
    """Records of run A, test_sum at 5 us on `cpu`, and of run B, at 7 us on its CPUs
    loaded 8 deep (its record's contention)."""
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    Recorder(a).record(replace(sum_run(RUN_1, 5.0), device_id=cpu))
    slower = replace(sum_run(RUN_2, 7.0), device_id=cpu)
    contention = {"load": 8.0, "pressure": 0.9, "helpers": 0.0}
    Recorder(b).record(replace(slower, extra={**slower.extra, "contention": contention}))
    return a, b


def test_compare_counts_the_contention_run_b_was_measured_under_as_the_gate_did(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # The gate widened B's noise for the loaded CPUs its record names, and called it too
    # noisy; compare judges the same samples, so it must not call them a regression.
    cpu = "cpu-amd-epyc-2t"
    a, b = records_of_a_slowdown_under_load(tmp_path, cpu)
    samples = tuple((7000 + k) / 1e9 for k in range(40))
    baseline = Baseline(cpu, "c2", "pairwise", tuple((5000 + k) / 1e9 for k in range(40)))
    quiet = judge(Measurement(samples), baseline, device_id=cpu, checksum="c2")
    loaded = judge(
        Measurement(samples, load=8.0, pressure=0.9, helpers=0.0),
        baseline,
        device_id=cpu,
        checksum="c2",
    )
    assert quiet.failed and not loaded.failed

    code, out, err = run(capsys, "compare", str(a), str(b))

    assert (code, err) == (0, "")
    assert out.splitlines()[2].endswith("too noisy")


def test_compare_reads_a_records_neighbour_and_counts_it_as_the_gate_does_not_at_all(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # The records keep the neighbours' share (`contention.neighbours`), which no verdict
    # counts: compare judges run B beside a busy neighbour as the gate did, a regression.
    cpu = "cpu-amd-epyc-2t"
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    Recorder(a).record(replace(sum_run(RUN_1, 5.0), device_id=cpu))
    slower = replace(sum_run(RUN_2, 6.25), device_id=cpu)
    contention = {"load": 1.0, "pressure": 0.0, "helpers": 0.0, "neighbours": 1.0}
    Recorder(b).record(replace(slower, extra={**slower.extra, "contention": contention}))

    code, out, err = run(capsys, "compare", str(a), str(b))

    assert (code, err) == (1, "")
    assert out.splitlines()[2].endswith("REGRESSION")


@pytest.mark.parametrize("load", [1e308, -1.0])
def test_compare_refuses_a_contention_no_machine_measures_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], load: float
) -> None:
    # A hand-edited load of 1e308 widened the noise past the largest float: compare ended in
    # an OverflowError traceback from the gate's arithmetic.
    cpu = "cpu-amd-epyc-2t"
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    Recorder(a).record(replace(sum_run(RUN_1, 5.0), device_id=cpu))
    slower = replace(sum_run(RUN_2, 7.0), device_id=cpu)
    contention = {"load": load, "pressure": 0.9, "helpers": 0.0}
    Recorder(b).record(replace(slower, extra={**slower.extra, "contention": contention}))

    code, out, err = run(capsys, "compare", str(a), str(b))

    assert code == 2 and out == ""
    assert f"contention: load is {load!r}, expected a number from 0 to 1000 or null" in err
    assert "Traceback" not in err


def test_compare_says_why_a_group_it_reports_without_failing_has_no_pass(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # The gate's summary gives the message of each group "reported, not failing" (its
    # interval, what would help; the candidate that changed); compare printed "too noisy"
    # and "not comparable" in the table with no word of why.
    cpu = "cpu-amd-epyc-2t"
    a, b = records_of_a_slowdown_under_load(tmp_path, cpu)
    Recorder(a).record(replace(sum_run(RUN_1, 5.0), key="n8"))
    Recorder(b).record(replace(sum_run(RUN_2, 5.0), key="n8", checksum="c3"))
    noisy = judge(
        Measurement(tuple((7000 + k) / 1e9 for k in range(40)), load=8.0, pressure=0.9),
        Baseline(cpu, "c2", "pairwise", tuple((5000 + k) / 1e9 for k in range(40)), source=str(a)),
        device_id=cpu,
        checksum="c2",
    )

    code, out, err = run(capsys, "compare", str(a), str(b))

    assert (code, err) == (0, "")
    assert noisy.message.startswith("too noisy to judge")
    reported = out.split("\nreported, not failing:\n", 1)[1]
    assert f"test_sum [n4194304] (winner pairwise): too noisy\n    {noisy.message}" in reported
    assert "test_sum [n8] (winner pairwise): not comparable\n" in reported
    assert "was tuned over another candidate list" in reported


def on_gpu(record: AutotuneRecord, uuid: str) -> AutotuneRecord:
    """`record` as measured on the GPU of `uuid` (its device block's fingerprint)."""
    device = {**record.extra["device"]}
    device["fingerprint"] = {**device["fingerprint"], "uuid": uuid}
    return replace(record, extra={**record.extra, "device": device})


def test_compare_counts_the_noise_between_two_gpus_of_one_model_as_the_gate_did(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Two runs on two H200s (the records' device blocks name each GPU): the gate adds the
    # between-machine noise and says "too noisy"; compare judges the same samples, so it
    # must not call them a regression.
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    Recorder(a).record(on_gpu(sum_run(RUN_1, 5.0), "GPU-aaaa"))
    Recorder(b).record(on_gpu(sum_run(RUN_2, 5.5), "GPU-bbbb"))
    samples = tuple((5500 + k) / 1e9 for k in range(40))
    base = tuple((5000 + k) / 1e9 for k in range(40))
    one_gpu = judge(
        Measurement(samples), Baseline(GPU, "c2", "pairwise", base), device_id=GPU, checksum="c2"
    )
    two_gpus = judge(
        Measurement(samples),
        Baseline(GPU, "c2", "pairwise", base, machine="GPU-aaaa"),
        device_id=GPU,
        checksum="c2",
        machine="GPU-bbbb",
    )
    assert one_gpu.failed and not two_gpus.failed

    code, out, err = run(capsys, "compare", str(a), str(b))

    assert (code, err) == (0, "")
    assert out.splitlines()[2].endswith(two_gpus.verdict.value)


def under_caps(record: AutotuneRecord, caps: dict[str, str]) -> AutotuneRecord:
    """`record` as measured under the thread caps `caps` (its device block's fingerprint)."""
    device = {**record.extra["device"]}
    device["fingerprint"] = {**device["fingerprint"], "thread_env": caps}
    return replace(record, extra={**record.extra, "device": device})


def test_compare_of_runs_under_other_thread_caps_finds_them_not_comparable_as_the_gate_does(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # B ran under OMP_NUM_THREADS=1, A under no cap: the gate finds the two not comparable,
    # naming the caps; compare called B's slower time a regression and exited 1.
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    Recorder(a).record(under_caps(sum_run(RUN_1, 5.0), {}))
    Recorder(b).record(under_caps(sum_run(RUN_2, 6.0), {"OMP_NUM_THREADS": "1"}))

    code, out, err = run(capsys, "compare", str(a), str(b))

    assert (code, err) == (0, "")
    assert out.splitlines()[2].endswith("not comparable")
    assert "other thread caps (OMP_NUM_THREADS unset there, 1 here)" in out


def test_compare_of_gpu_records_scales_by_the_peak_probes_as_the_gate_did(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # On a GPU the gate scales this run's time by its peak probe over the baseline's, so a
    # device running 10% slower (clocks, heat) does not read as a 10% slower kernel. The
    # records carry both probes and the binding roof; compare judged the raw times.
    bounds = {
        "bounds": [{"resource": "memory", "amount": 4 << 22, "threshold": 1.0, "peak": 4.28e12}],
        "launch_overhead_ns": 0,
    }
    slow = Peaks(memory={"copy": 4.28e12 / 1.1}, compute={"fp32": 63e12})
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    Recorder(a).record(replace(sum_run(RUN_1, 5.0), bounds=bounds))
    later = replace(sum_run(RUN_2, 5.5), bounds=bounds)
    device = {**later.extra["device"], "peaks": slow.to_json()}
    Recorder(b).record(replace(later, extra={**later.extra, "device": device}))
    samples = tuple((5500 + k) / 1e9 for k in range(40))
    base = tuple((5000 + k) / 1e9 for k in range(40))
    raw = judge(
        Measurement(samples), Baseline(GPU, "c2", "pairwise", base), device_id=GPU, checksum="c2"
    )
    scaled = judge(
        Measurement(samples),
        Baseline(GPU, "c2", "pairwise", base, peak=4.28e12, peak_resource="memory"),
        device_id=GPU,
        checksum="c2",
        peaks=slow,
    )
    assert raw.failed and not scaled.failed

    code, out, err = run(capsys, "compare", str(a), str(b))

    assert (code, err) == (0, "")
    assert out.splitlines()[2].endswith(scaled.verdict.value)


@pytest.mark.parametrize(
    ("extra", "said"),
    [
        pytest.param(
            {"contention": {"load": "high"}},
            'test_sum [n4194304]: contention: load is "high", expected a number from 0 to 1000'
            " or null",
            id="contention",
        ),
        pytest.param(
            {"device": "gpu"},
            "test_sum, key n4194304: extra 'device' has the wrong type: 'gpu'",
            id="device",
        ),
    ],
)
def test_compare_of_a_record_whose_extras_do_not_read_names_the_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], extra: dict[str, object], said: str
) -> None:
    # `report` of the same file names it; compare said only the group and the field.
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    Recorder(a).record(sum_run(RUN_1, 5.0))
    record = sum_run(RUN_2, 6.0)
    Recorder(b).record(replace(record, extra={**record.extra, **extra}))

    err = refused(capsys, "compare", str(a), str(b))
    assert err == f"pytest-autotune: error: {b}: example_kernels/test_sum.py::{said}\n"


def cache_roots_of_a_slower_winner(tmp_path: Path, key: str) -> tuple[Path, Path]:
    """Cache roots before and after a refresh, each holding the GPU's t.json of one entry at
    `key` whose winner, block256, took 4 us before and 5 us after."""
    before, after = tmp_path / "before", tmp_path / "after"
    for folder, us in ((before, 4), (after, 5)):
        (folder / GPU).mkdir(parents=True)
        write_cache(
            folder / GPU / "t.json",
            {key: ("block256", (outcome("block32", 0, 10), outcome("block256", 1, us)))},
        )
    return before, after


def test_compare_judges_two_cache_folders(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    before, after = tmp_path / "before", tmp_path / "after"
    for folder, us in ((before, 4), (after, 5)):
        (folder / GPU).mkdir(parents=True)
        write_cache(
            folder / GPU / "t.json",
            {
                "n1024": ("block256", (outcome("block32", 0, 10), outcome("block256", 1, us))),
                "n8": ("block32", (outcome("block32", 0, 1), outcome("block256", 1, 2))),
            },
        )
    code, out, _ = run(capsys, "compare", str(before), str(after))
    assert code == 1
    rows = [line.split() for line in out.splitlines()[2:4]]
    assert [(row[1], row[-1]) for row in rows] == [("[n8]", "pass"), ("[n1024]", "REGRESSION")]
    assert "block256 4.00 us" in out and "block256 5.00 us" in out
    assert (
        "regression of +25.0% [+21.2%, +28.9%]: median 5.00 us against the baseline median"
        f" 4.00 us (block256 on {GPU}, {before / GPU / 't.json'})" in out
    )


N8 = {"n8": ("block32", (outcome("block32", 0, 1), outcome("block256", 1, 2)))}


def cache_roots(
    tmp_path: Path,
    entries: tuple[dict[str, tuple[str, tuple[AutotuneResult, ...]]], ...] = (N8, N8),
    folders: tuple[str, str] = (GPU, GPU),
) -> tuple[Path, Path]:
    """Two cache roots, `before` and `after`, each with one file `t.json` of its `entries`,
    in the device folder of its `folders` (the file's device block is the GPU's)."""
    roots = tmp_path / "before", tmp_path / "after"
    for root, held, folder in zip(roots, entries, folders, strict=True):
        (root / folder).mkdir(parents=True)
        write_cache(root / folder / "t.json", held)
    return roots


def misplaced_folders(tmp_path: Path) -> tuple[Path, Path]:
    """Two cache roots whose second holds a GPU's file in a CPU's folder (moved by hand)."""
    return cache_roots(tmp_path, folders=(GPU, "cpu-amd-epyc-2t"))


def test_a_file_in_another_devices_folder_is_one_error_to_compare_and_changed_a_warning_to_show(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # A run refuses it ("holds the cache of device ..., not of ..."); the commands read it as
    # the folder's: compare listed it as another device's, changed said "no significant
    # change", show said nothing.
    before, after = misplaced_folders(tmp_path)
    moved = after / "cpu-amd-epyc-2t" / "t.json"
    said = (
        f"{moved}: holds the cache of device {GPU!r}, in the folder 'cpu-amd-epyc-2t' of"
        f" another, where a run does not read it (a file copied or moved by hand?): move it"
        f" to the folder {GPU!r}"
    )
    for command in ("compare", "changed"):
        code, out, err = run(capsys, command, str(before), str(after))
        assert (code, out, err.strip()) == (2, "", f"pytest-autotune: error: {said}")
    code, out, err = run(capsys, "show", str(moved))
    assert code == 0 and "n8" in out
    assert err.strip() == f"pytest-autotune: warning: {said}"
    # A file anywhere else (a copy in /tmp, a folder of no device's name) is only shown.
    elsewhere = tmp_path / "copies" / "t.json"
    elsewhere.parent.mkdir()
    shutil.copy(moved, elsewhere)
    assert run(capsys, "show", str(elsewhere))[2] == ""


def test_compare_of_a_winner_index_past_the_results_is_the_gates_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # The gate says "fastest_index 42 is past the 2 results"; compare dropped the key as
    # "only in A".
    before, after = cache_roots(tmp_path)
    damaged = after / GPU / "t.json"
    data = json.loads(damaged.read_text())
    data["entries"][0]["fastest_index"] = 42
    damaged.write_text(json.dumps(data))
    code, out, err = run(capsys, "compare", str(before), str(after))
    assert code == 2 and out == ""
    assert "fastest_index 42 is past the 2 results" in err


def test_cache_folders_of_a_runner_named_like_a_json_file_are_read(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # `--autotune-runner=gh.json` files its caches under `cpu-gh.json/`, which compare and
    # changed took for a cache file: "cannot be read: Is a directory".
    before, after = tmp_path / "before", tmp_path / "after"
    for folder in (before, after):
        (folder / "cpu-gh.json").mkdir(parents=True)
        write_cache(
            folder / "cpu-gh.json" / "t.json",
            {"n8": ("block32", (outcome("block32", 0, 1), outcome("block256", 1, 2)))},
            device_id="cpu-gh.json",
        )
    code, out, err = run(capsys, "compare", str(before), str(after))
    assert (code, err) == (0, "")
    assert "cpu-gh.json/t.json [n8]" in out
    assert run(capsys, "changed", str(before), str(after))[0] == 0


def test_compare_of_cache_folders_scales_an_entry_by_the_peaks_it_was_measured_with(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # The gate scales a GPU run's time by that run's peak probe, which the entry's bounds
    # hold. The file's device block holds the peaks of its latest update, which may not
    # have refreshed this entry (`-k`), and keeps older figures within 2% on purpose: an
    # entry alike in A and B read +10.0% REGRESSION, scaled by the block's newer probe.
    bounds = {
        "bounds": [{"resource": "memory", "amount": 4 << 22, "threshold": 1.0, "peak": 4.28e12}],
        "launch_overhead_ns": 0,
    }
    before, after = tmp_path / "before", tmp_path / "after"
    for folder, copy_peak in ((before, 4.28e12), (after, 4.28e12 * 1.1)):
        (folder / GPU).mkdir(parents=True)
        path = write_cache(
            folder / GPU / "t.json",
            {"n1024": ("block256", (outcome("block32", 0, 10), outcome("block256", 1, 4)))},
            copy_peak=copy_peak,
        )
        data = json.loads(path.read_text())
        data["entries"][0]["bounds"] = bounds
        path.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")

    code, out, err = run(capsys, "compare", str(before), str(after))

    row = out.splitlines()[2]
    assert (code, err) == (0, "")
    assert " +0.0% [" in row and row.endswith("pass")


def test_compare_judges_a_baseline_filed_under_its_0_1_0_name_as_the_gate_reads_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # A project that committed its baselines with pytest-autotune 0.1.0 (no hash in the
    # name, no "tuner" field): the gate reads that file while the new name has none, and an
    # update writes the new name beside it. compare said "no group is in both" of the
    # committed folder and the refreshed one, or judged the old file against itself.
    tuner = "tests/test_a.py::test_sum"
    before, after = tmp_path / "before", tmp_path / "after"
    for folder, us in ((before, 4), (after, 5)):
        values = {
            PersistentCacheKey(stable_key("n1024"), "c"): PersistentCacheValue(
                "n1024", 1, "block256", (outcome("block32", 0, 10), outcome("block256", 1, us))
            )
        }
        device = {"id": GPU, "fingerprint": {}, "peaks": None}
        for name in (tuner, "mylib"):  # mylib.json: a name that is its own file name
            PersistentCache(cache_path(folder, GPU, name), name).save(values, device=device)
    legacy = before / GPU / "tests_test_a.py__test_sum.json"
    data = json.loads(cache_path(before, GPU, tuner).read_text())
    del data["tuner"]
    legacy.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")
    shutil.copy(legacy, after / GPU / legacy.name)  # the update leaves it, as it is
    cache_path(before, GPU, tuner).unlink()

    code, out, err = run(capsys, "compare", str(before), str(after))

    rows = out.splitlines()[2:]
    assert (code, err) == (1, "")
    assert rows[0].startswith(f"{GPU}/mylib.json [n1024]")
    assert rows[1].startswith(f"{GPU}/tests_test_a.py__test_sum-3a7a8f8d50.json [n1024]")
    assert rows[0].endswith("REGRESSION") and rows[1].endswith("REGRESSION")
    assert rows[2] == ""


@pytest.mark.parametrize(
    ("tuner", "old_name"),
    [
        ("tests/test_a.py::test_sum", "tests_test_a.py__test_sum.json"),
        # 0.1.0's first releases hashed no name for a replaced space; its later ones did.
        ("tests/unit tests/a.py::t", "tests_unit_tests_a.py__t.json"),
    ],
)
def test_changed_reads_a_file_of_its_0_1_0_name_as_the_gate_does(
    tuner: str, old_name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # The committed folder of pytest-autotune 0.1.0 (no hash in the name, no "tuner"
    # field) refreshed: the update writes the new name beside the old file, and every
    # entry read as removed from one and new in the other, a pull request of no change.
    before, after = tmp_path / "before", tmp_path / "after"
    values = {
        PersistentCacheKey(stable_key("n1024"), "c"): PersistentCacheValue(
            "n1024", 1, "block256", (outcome("block32", 0, 10), outcome("block256", 1, 4))
        )
    }
    device = {"id": GPU, "fingerprint": {}, "peaks": None}
    PersistentCache(cache_path(after, GPU, tuner), tuner).save(values, device=device)
    data = json.loads(cache_path(after, GPU, tuner).read_text())
    del data["tuner"]
    (before / GPU).mkdir(parents=True)
    legacy = before / GPU / old_name
    legacy.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")

    assert run(capsys, "changed", str(before), str(after))[:2] == (
        0,
        "no significant change: every baseline kept its history\n",
    )
    shutil.copy(legacy, after / GPU / legacy.name)  # left beside the new name: not read
    assert run(capsys, "changed", str(before), str(after))[0] == 0


def test_compare_of_cache_folders_says_a_markers_max_regression_is_not_in_them(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # A group whose marker tolerates 50% read REGRESSION at +25% here, while CI passed it,
    # and nothing said that the tolerance was the device kind's default.
    before, after = cache_roots_of_a_slower_winner(tmp_path, "n8")
    code, out, _ = run(capsys, "compare", str(before), str(after))
    assert code == 1
    assert out.splitlines()[-2:] == [CACHES_TOLERANCE, "1 of 1 compared groups fail the gate"]
    code, out, _ = run(capsys, "compare", str(before), str(after), "--max-regression", "0.5")
    assert code == 0
    assert CACHES_TOLERANCE not in out
    with pytest.raises(SystemExit):
        main(["compare", "--help"])
    assert "cache files do not store it" in " ".join(capsys.readouterr().out.split())


def test_compare_judges_two_device_folders_as_changed_reads_them(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # `changed` takes a device's folder (`.autotune/<device_id>`) as well as the root;
    # `compare` said "no group is in both" of two such folders holding the same entries.
    before, after = cache_roots_of_a_slower_winner(tmp_path, "n1024")
    code, out, err = run(capsys, "compare", str(before / GPU), str(after / GPU))
    assert (code, err) == (1, "")
    assert out.splitlines()[2].split()[:2] == ["t.json", "[n1024]"]
    assert out.splitlines()[2].endswith("REGRESSION")


@pytest.mark.parametrize("command", ["compare", "changed"])
def test_a_cache_root_beside_a_device_folder_is_one_error_naming_the_folders_to_give(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], command: str
) -> None:
    # Files are matched by their path below each folder: `changed .autotune
    # .autotune/<device>` read every entry as removed and new (exit 3, a pull request
    # for a refresh that changed nothing), `compare` said "no group is in both".
    before, after = cache_roots(tmp_path)
    pair = f"give two cache roots, or two device folders ({before / GPU} {after / GPU})"
    for a, b, root, device in (
        (before, after / GPU, before, after / GPU),
        (before / GPU, after, after, before / GPU),
    ):
        err = refused(capsys, command, str(a), str(b))
        assert err == (
            f"pytest-autotune: error: {a}, {b}: {root} is a cache root (a folder per device)"
            f" and {device} one device's folder: {pair}\n"
        )
    assert run(capsys, command, str(before / GPU), str(after / GPU))[0] == 0


@pytest.mark.parametrize("command", ["compare", "changed"])
def test_a_projects_folder_beside_a_cache_root_is_named_as_such_with_the_root_to_give(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], command: str
) -> None:
    # `compare old-checkout .autotune` called the checkout a cache root and .autotune one
    # device's folder, and offered "old-checkout/.autotune" as a device folder to give.
    before, after = cache_roots(tmp_path)
    project = tmp_path / "project"
    shutil.copytree(before, project / ".autotune")
    err = refused(capsys, command, str(project), str(after))
    assert err == (
        f"pytest-autotune: error: {project}, {after}: {project} is a folder above a cache root"
        f" (its cache files lie 3 folders down) and {after} a cache root (a folder per"
        f" device): give two cache roots, or two device folders ({project / '.autotune'}"
        f" {after})\n"
    )
    err = refused(capsys, command, str(after / GPU), str(project))
    assert err.endswith(f"({after / GPU} {project / '.autotune' / GPU})\n")
    assert run(capsys, command, str(project / ".autotune"), str(after))[0] == 0


def test_changed_refuses_the_folders_of_two_devices_as_compare_does(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Their files, matched by name, were judged as one device's before and after: the
    # H100's baselines against the H200's read "no significant change", exit 0.
    other = "cuda-nvidia-h100"
    before, after = tmp_path / "before" / other, tmp_path / "after" / GPU
    before.mkdir(parents=True)
    after.mkdir(parents=True)
    write_cache(before / "t.json", N8, device_id=other)
    write_cache(after / "t.json", N8)
    err = refused(capsys, "changed", str(before), str(after))
    assert err == (
        f"pytest-autotune: error: {before / 't.json'}, {after / 't.json'}: hold the caches of"
        f" two devices, {other!r} and {GPU!r}: changed compares one device's caches before"
        " and after a refresh; give the two cache roots, or two folders of one device\n"
    )
    assert run(capsys, "compare", str(before), str(after))[0] == 2
    # Their cache roots hold each device's folder apart: one removed, one new.
    code, out, _ = run(capsys, "changed", str(before.parent), str(after.parent))
    assert code == EXIT_CHANGED
    assert f"{other}/t.json: key n8: entry removed" in out
    assert f"{GPU}/t.json: key n8: new entry (a new key)" in out


def test_compare_and_changed_pass_over_the_peaks_file_beside_the_caches(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # A client given the cache folder keeps its probed peaks in <device>/peaks.json, beside
    # the tuner caches: not a cache file, and no reason for either command to stop.
    before, after = tmp_path / "before", tmp_path / "after"
    for folder in (before, after):
        (folder / GPU).mkdir(parents=True)
        write_cache(
            folder / GPU / "t.json",
            {"n1024": ("block256", (outcome("block32", 0, 10), outcome("block256", 1, 4)))},
        )
        peaks = Peaks(memory={"copy": 4.28e12}, compute={"fp32": 63e12})
        (folder / GPU / "peaks.json").write_text(
            json.dumps({"device_id": GPU, "peaks": peaks.to_json(), "schema_version": 1})
        )
    code, out, err = run(capsys, "compare", str(before), str(after))
    assert (code, err) == (0, "")
    assert out.splitlines()[-1] == "0 of 1 compared groups fail the gate"
    assert main(["changed", str(before), str(after)]) == 0


def test_compare_shows_a_baseline_of_several_sessions_as_the_time_it_judges_against(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # The gate compares with the mean of the baseline's sessions; a column showing the
    # newest session alone read "4.00 us -> 5.00 us: -21.3%".
    before, after = cache_roots_of_a_slower_winner(tmp_path, "n1024")
    path = before / GPU / "t.json"
    data = json.loads(path.read_text())
    data["entries"][0]["sessions"] = [{"median_ns": 8000, "read_ns": None}] * 2
    path.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")
    # B's sessions are not what is judged: its newest session is this run's measurement.
    path = after / GPU / "t.json"
    data = json.loads(path.read_text())
    data["entries"][0]["sessions"] = [{"median_ns": 9000, "read_ns": None}]
    path.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")
    code, out, _ = run(capsys, "compare", str(before), str(after))
    row = out.splitlines()[2]
    assert code == 0
    assert "block256 6.35 us (mean of 3 sessions)" in row and "block256 5.00 us" in row
    assert "-21.3%" in row


def test_compare_of_calibrated_times_shows_the_mean_of_the_sessions_with_a_read(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # An update keeps the sessions from before the read changed kind (or from a file of
    # schema 1) without their reads, and a calibrated comparison is against the sessions
    # that have one: the column read "5.77 us (mean of 3 sessions)" and the gate's message
    # "the baseline median 4.90 us (mean of 3 sessions)", beside a change of +2.1%.
    cpu = "cpu-amd-epyc-2t"
    before, after = tmp_path / "before", tmp_path / "after"
    for folder, us in ((before, 4), (after, 5)):
        (folder / cpu).mkdir(parents=True)
        path = write_cache(
            folder / cpu / "t.json",
            {"n1024": ("sum", (outcome("sum", 0, us, n=50),))},
            device_id=cpu,
        )
        data = json.loads(path.read_text())
        read = {"kind": "read-inputs/1x32", "samples_ns": [500_000] * 9}
        data["entries"][0]["calibration"] = read
        if folder is before:
            data["entries"][0]["sessions"] = [
                {"median_ns": 8000, "read_ns": None},
                {"median_ns": 6000, "read_ns": 500_000},
            ]
        path.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")
    code, out, _ = run(capsys, "compare", str(before), str(after))
    assert code == 0
    row = out.splitlines()[2]
    assert "sum 4.90 us (mean of 2 sessions)" in row and "sum 5.00 us" in row
    assert "+2.1%" in row
    assert "against the baseline median 4.90 us (mean of 2 sessions)" in out


def test_compare_of_a_file_and_a_folder_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    a = tmp_path / "a.jsonl"
    Recorder(a).record(sum_run(RUN_1, 5.0))
    err = refused(capsys, "compare", str(a), str(tmp_path))
    assert err == (
        f"pytest-autotune: error: {a}, {tmp_path}: compare two record files or two cache folders\n"
    )


@pytest.mark.parametrize("empty_side", ["before", "after"])
def test_compare_of_a_folder_that_holds_no_cache_file_names_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], empty_side: str
) -> None:
    # A folder of no cache file (the wrong cache_dir, a folder not yet fetched) was
    # "no group is in both", as if the two runs had tuned different tests.
    full, empty = tmp_path / "full", tmp_path / "empty"
    (full / GPU).mkdir(parents=True)
    write_cache(full / GPU / "t.json", {"n8": ("a", (outcome("a", 0, 1),))})
    (empty / "notes").mkdir(parents=True)
    (empty / "notes" / "readme.txt").write_text("no caches here\n")
    sides = (empty, full) if empty_side == "before" else (full, empty)
    err = refused(capsys, "compare", *map(str, sides))
    assert err.startswith(f"pytest-autotune: error: {empty}: holds no cache file: ")
    assert err.count("\n") == 1


def test_report_of_a_missing_file_is_one_line_naming_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "nope.jsonl"
    err = refused(capsys, "report", str(missing), "-o", str(tmp_path / "r.html"))
    assert err == f"pytest-autotune: error: {missing}: no such file\n"
    assert not (tmp_path / "r.html").exists()


def test_report_of_a_file_without_records_says_so_and_where_records_come_from(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    full = realistic_records_file(tmp_path / "full.jsonl")
    code, out, err = run(capsys, "report", str(empty), str(full), "-o", str(tmp_path / "r.html"))
    assert code == 0
    assert out.startswith(f"wrote {tmp_path / 'r.html'} (")
    assert err == (
        f"pytest-autotune: warning: {empty}: holds no records (pytest --autotune"
        f" --autotune-record={empty} writes one per tuned group)\n"
    )
    code, out, err = run(capsys, "report", str(full), "-o", str(tmp_path / "r.html"))
    assert (code, err) == (0, "")


@pytest.mark.parametrize(
    ("line", "reason"),
    [
        ("{not json", "invalid JSON"),
        ("[1, 2]", "expected a JSON object"),
        ('{"schema_version": 99}', "newer than this pytest-autotune reads"),
        ("[" * 100_000 + "]" * 100_000, "nested deeper than 64 levels"),
    ],
    ids=["invalid", "array", "newer", "deep"],
)
def test_report_of_bad_records_is_one_line_naming_the_file_and_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], line: str, reason: str
) -> None:
    records = tmp_path / "records.jsonl"
    records.write_text("\n" + line + "\n")
    code, _, err = run(capsys, "report", str(records))
    assert code == 2
    assert err.startswith(f"pytest-autotune: error: {records}:2: ")
    assert reason in err and err.count("\n") == 1


@pytest.mark.parametrize("command", ["show", "diff", "compare"])
def test_a_cache_file_nested_too_deep_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], command: str
) -> None:
    deep = tmp_path / "deep.json"
    deep.write_text("[" * 100_000 + "]" * 100_000)
    code, _, err = run(capsys, command, *[str(deep)] * (1 if command == "show" else 2))
    assert code == 2
    assert err.startswith(f"pytest-autotune: error: {deep}") and err.count("\n") == 1
    assert "nested deeper" in err


@pytest.mark.parametrize("command", ["report", "compare"])
@pytest.mark.parametrize("value", ["Infinity", "-Infinity", "NaN", "1e400"])
def test_a_hand_edited_record_holding_no_json_number_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], command: str, value: str
) -> None:
    # A recorder never writes these; Python's json reads them as floats, and an infinite
    # launch overhead or candidate index ended in an OverflowError's traceback.
    records = tmp_path / "records.jsonl"
    data = realistic_records()[0].to_json()
    data["bounds"]["launch_overhead_ns"] = "VALUE"
    records.write_text(json.dumps(data).replace('"VALUE"', value) + "\n")
    good = realistic_records_file(tmp_path / "good.jsonl")
    argv = (
        [str(records), "-o", str(tmp_path / "r.html")]
        if command == "report"
        else [
            str(good),
            str(records),
        ]
    )
    err = refused(capsys, command, *argv)
    assert err.startswith(f"pytest-autotune: error: {records}:1: ") and err.count("\n") == 1
    assert not (tmp_path / "r.html").exists()


def test_report_of_a_record_whose_extras_do_not_read_names_the_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    records = tmp_path / "records.jsonl"
    data = realistic_records()[0].to_json()
    data["extra"]["verdict"] = 7
    records.write_text(json.dumps(data) + "\n")
    code, _, err = run(capsys, "report", str(records), "-o", str(tmp_path / "r.html"))
    assert code == 2
    assert err.startswith(f"pytest-autotune: error: {records}: record 1 (")
    assert "extra 'verdict' has the wrong type" in err and err.count("\n") == 1


def test_report_that_cannot_be_written_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    records = tmp_path / "records.jsonl"
    Recorder(records).record(realistic_records()[0])
    blocker = tmp_path / "file"
    blocker.write_text("")
    code, _, err = run(capsys, "report", str(records), "-o", str(blocker / "r.html"))
    assert code == 2
    assert err.startswith(f"pytest-autotune: error: {blocker / 'r.html'}: cannot write the report")
    assert err.count("\n") == 1


@pytest.mark.parametrize("output", ["", " "])
def test_report_to_an_empty_output_path_says_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], output: str
) -> None:
    # Path("") is the current folder: the line read ": cannot write the report: Is a
    # directory", naming nothing.
    records = tmp_path / "records.jsonl"
    Recorder(records).record(realistic_records()[0])
    err = refused(capsys, "report", str(records), "-o", output)
    assert err == (
        "pytest-autotune: error: -o/--output is empty; give the path of the HTML file to write\n"
    )


def test_report_never_writes_over_the_records_it_renders(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # `report mon.jsonl tue.jsonl -o tue.jsonl`: the page replaced a day of records.
    records = realistic_records_file(tmp_path / "records.jsonl")
    before = records.read_bytes()
    err = refused(capsys, "report", str(records), "-o", str(tmp_path / "." / "records.jsonl"))
    assert err == (
        f"pytest-autotune: error: {tmp_path / '.' / 'records.jsonl'}: is one of the records"
        " files to render; give the report another path (-o)\n"
    )
    assert records.read_bytes() == before


# -- show ----------------------------------------------------------------------------------


def test_show_prints_the_device_and_each_entry_with_its_candidates(
    refreshed: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run(capsys, "show", str(refreshed))
    assert (code, err) == (0, "")
    lines = out.splitlines()
    assert lines[:6] == [
        f"cache   {refreshed}",
        f"device  {GPU}",
        "peaks   memory copy 4.10 TB/s; compute fp32 63.0 Top/s",
        "fingerprint  cuda=12.6",
        "sigma_between  0.01",
        "3 entries",
    ]
    assert "key n4096: winner float4, median 12.0 us" in lines
    start = lines.index("key n65536: winner block256, median 100 us")
    assert lines[start + 1 : start + 4] == [
        "     candidate                  median  samples  error",
        "  *  block256                   100 us  5",
        f"     {SCRIPT_NAME}  -       -        raised RuntimeError: boom at line 3",
    ]
    assert out.endswith("\n") and not out.endswith("\n\n")


def test_show_says_why_a_candidate_reads_faster_than_the_winner(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # The winner's median is its precise measurement, a loser's its tuning samples: "add
    # 7.14 us" starred beside "mul 4.16 us" read as a wrong pick.
    path = write_cache(
        tmp_path / "c.json",
        {
            "n1": ("add", (outcome("add", 0, 7.14, 60), outcome("mul", 1, 4.16, 3))),
            "n2": ("add", (outcome("add", 0, 3.0, 60), outcome("mul", 1, 4.16, 3))),
        },
    )
    out = run(capsys, "show", str(path))[1]
    note = (
        "  (the winner's median is its precise measurement, the others' their tuning samples:"
        " it won the tuning, measured beside them)"
    )
    assert out.count(note) == 1
    assert out.index(note) < out.index("key n2")


def test_show_diff_and_changed_list_keys_with_numbers_read_as_numbers(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # As the summary, the Markdown and the HTML list them: n8 before n1024 before n65536.
    entries = {
        key: ("block32", (outcome("block32", 0, us),))
        for key, us in (("n65536", 9), ("n8", 1), ("n1024", 3))
    }
    path = write_cache(tmp_path / "t.json", entries)
    folder = cache_folder(tmp_path / "after", path)
    (tmp_path / "empty").mkdir()

    def order(out: str) -> list[str]:
        return [word for word in out.split() if word.strip(":") in entries]

    shown = run(capsys, "show", str(path))[1]
    diffed = run(capsys, "diff", str(path), str(path))[1]
    listed = run(capsys, "changed", str(tmp_path / "empty"), str(folder))[1]
    assert order(shown) == ["n8:", "n1024:", "n65536:"]
    assert order(diffed) == ["n8", "n1024", "n65536"]
    assert order(listed) == ["n8:", "n1024:", "n65536:"]


def test_show_gives_the_mean_of_a_baseline_of_several_sessions(
    refreshed: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # The gate compares with the mean of an entry's update sessions: a reviewer reading
    # only the newest session's median would not recognise the gate's baseline median.
    data = json.loads(refreshed.read_text())
    entry = next(e for e in data["entries"] if e["key"] == "n4096")
    entry["sessions"] = [{"median_ns": 24000, "read_ns": None}] * 2
    refreshed.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")
    code, out, _ = run(capsys, "show", str(refreshed))
    assert code == 0
    assert (
        "key n4096: winner float4, median 12.0 us; baseline 19.0 us, the mean of 3 sessions"
        in out.splitlines()
    )
    assert "key n65536: winner block256, median 100 us" in out.splitlines()


@pytest.mark.parametrize("median_ns", [0, -5])
def test_show_of_an_entry_whose_sessions_do_not_read_shows_the_entry_as_it_stands(
    refreshed: Path, capsys: pytest.CaptureFixture[str], median_ns: int
) -> None:
    # A session of no time (a hand edit, a damaged file) is the gate's "does not read",
    # named there; `show` is how a reviewer looks into such a file, and must not crash.
    data = json.loads(refreshed.read_text())
    entry = next(e for e in data["entries"] if e["key"] == "n4096")
    entry["sessions"] = [{"median_ns": median_ns, "read_ns": None}]
    refreshed.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")
    code, out, err = run(capsys, "show", str(refreshed))
    assert (code, err) == (0, "")
    assert "key n4096: winner float4, median 12.0 us" in out.splitlines()


def measured_on(path: Path, device_id: str, machine: str) -> Path:
    """`path` made a runner class's file (`--autotune-runner`): filed under `device_id`, its
    latest update measured on `machine`."""
    data = json.loads(path.read_text())
    data["device"].update(id=device_id, measured_on=machine)
    path.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")
    return path


def test_show_and_diff_name_the_machine_a_runner_classs_baseline_was_measured_on(
    baseline: Path, refreshed: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # A hosted runner's CPU model changes between runs; its class's file keeps the one each
    # update measured, which explains a refresh's changed times.
    runner = "cpu-github-ubuntu-x64"
    measured_on(baseline, runner, "cpu-amd-epyc-7b13-2t")
    measured_on(refreshed, runner, "cpu-intel-xeon-8370c-2t")
    code, out, _ = run(capsys, "show", str(baseline))
    assert code == 0
    assert out.splitlines()[1] == f"device  {runner} (measured on cpu-amd-epyc-7b13-2t)"
    code, out, _ = run(capsys, "diff", str(baseline), str(refreshed))
    assert code == 0
    assert out.splitlines()[2] == (
        "measured on changed: cpu-amd-epyc-7b13-2t -> cpu-intel-xeon-8370c-2t"
    )


def test_a_cache_file_given_for_records_and_records_for_a_cache_file_say_which_they_are(
    baseline: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Both are JSON; read as the other kind, each was "invalid JSON" at a line and column
    # of a file that any JSON tool reads.
    records = realistic_records_file(tmp_path / "records.jsonl")
    assert refused_as_records(capsys, baseline) == 2 * [
        f"pytest-autotune: error: {baseline}: a cache file, not records (the JSON lines"
        " --autotune-record writes): show and diff read cache files, compare their folders\n"
    ]
    assert refused_as_a_cache_file(capsys, records, baseline) == 2 * [
        f"pytest-autotune: error: {records}: records (the JSON lines --autotune-record"
        " writes), not a cache file: report renders them, compare judges two of them\n"
    ]


def test_pytest_benchmarks_json_given_for_records_or_a_cache_file_says_what_it_is(
    baseline: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # What --autotune-benchmark-json writes, given to `report`, read as "invalid JSON" at
    # line 1, column 2 of a file that pytest-benchmark's own tools read.
    bench = tmp_path / "bench.json"
    document = {"machine_info": {}, "commit_info": {}, "benchmarks": [], "version": "5.1.0"}
    bench.write_text(json.dumps(document, indent=4) + "\n")
    said = (
        f"pytest-autotune: error: {bench}: pytest-benchmark's JSON (--autotune-benchmark-json"
        " writes it for pytest-benchmark compare), not "
    )
    assert refused_as_records(capsys, bench) == 2 * [
        said + "records (the JSON lines --autotune-record writes)\n"
    ]
    assert refused_as_a_cache_file(capsys, bench, baseline) == 2 * [said + "a cache file\n"]


def test_a_peaks_file_given_for_a_cache_file_or_records_says_what_it_is(
    baseline: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # The peaks file a client given peaks_cache_dir keeps in a device's folder, beside its
    # cache files, read as "missing field 'entries'" (show, diff) or "invalid JSON" (report).
    peaks = Peaks(memory={"read": 1e11}, compute={"fp32": 1e12}, threads=2)
    load_or_probe("cpu-test", lambda: peaks, cache_dir=tmp_path)
    path = peaks_path(tmp_path, "cpu-test")
    said = (
        f"pytest-autotune: error: {path}: a device's measured peaks (the file a client given"
        " peaks_cache_dir keeps), not "
    )
    for err in refused_as_a_cache_file(capsys, path, baseline):
        assert err.startswith(said + "a cache file: ") and err.count("\n") == 1
    err = refused(capsys, "report", str(path))
    assert err.startswith(said + "records (the JSON lines --autotune-record writes)")


def test_show_of_an_empty_cache(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "empty.json"
    path.write_text('{"schema_version": 1, "entries": []}\n')
    code, out, _ = run(capsys, "show", str(path))
    assert code == 0
    assert out.splitlines() == [f"cache   {path}", "device  -", "0 entries"]


@pytest.mark.parametrize(
    ("content", "reason"),
    [
        ("{bad", "is not valid JSON"),
        ("[]", "holds a JSON array, not a JSON object"),
        ("null", "holds null, not a JSON object"),
        ('{"schema_version": 99, "entries": []}', "written by a newer pytest-autotune"),
        ('{"schema_version": 1, "entries": [{"key": "a"}]}', 'entry 0 (key "a")'),
        (b"\xff\xfe", "is not UTF-8 text"),
    ],
)
def test_show_of_a_bad_cache_is_one_line_naming_the_file_and_the_reason(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: str | bytes, reason: str
) -> None:
    path = tmp_path / "bad.json"
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content)
    err = refused(capsys, "show", str(path))
    assert err.startswith(f"pytest-autotune: error: {path}: ")
    assert reason in err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert "goes on" not in err  # the test run's remark does not apply here


def test_show_writes_a_cache_files_terminal_escapes_as_text(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # A file of a pull request, shown by its reviewer: its escapes must not reach the
    # terminal, where they recolour, clear the screen or rub out what was printed.
    hostile = AutotuneError(AutotuneErrorKind.UNKNOWN, "boom\x1b[2J\x08", "block32")
    path = write_cache(
        tmp_path / "c.json", {"n8": ("block256", (hostile, outcome("block256", 1, 2)))}
    )
    code, out, err = run(capsys, "show", str(path))
    assert (code, err) == (0, "")
    assert "boom\\x1b[2J\\x08" in out
    assert "\x1b" not in out and "\x08" not in out


def test_show_of_a_missing_file_or_a_folder(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = run(capsys, "show", str(tmp_path / "nope.json"))
    assert code == 2 and err.endswith("nope.json: no such file\n")
    code, _, err = run(capsys, "show", str(tmp_path))
    assert code == 2
    assert err == (
        f"pytest-autotune: error: {tmp_path}: a folder that holds no cache file"
        " (<device>/<tuner>.json)\n"
    )


def test_show_of_a_folder_prints_every_cache_file_under_it(
    baseline: Path, refreshed: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # `show .autotune`, the folder a project commits, failed as "is a directory, not a file".
    root = baseline.parent / ".autotune"
    (root / GPU).mkdir(parents=True)
    old = baseline.rename(root / GPU / "a.json")
    new = refreshed.rename(root / GPU / "b.json")
    code, out, err = run(capsys, "show", str(root))
    assert (code, err) == (0, "")
    each = [run(capsys, "show", str(path))[1] for path in (old, new)]
    assert out == "\n".join(each)
    assert [line for line in out.splitlines() if line.startswith("cache ")] == [
        f"cache   {old}",
        f"cache   {new}",
    ]
    # Several files, a folder among them; one that cannot be read prints nothing at all.
    code, out, _ = run(capsys, "show", str(new), str(root / GPU))
    assert (code, out) == (0, "\n".join([each[1], *each]))
    (root / GPU / "c.json").write_text("{bad")
    err = refused(capsys, "show", str(root))
    assert err.startswith(f"pytest-autotune: error: {root / GPU / 'c.json'}: ")


# -- diff ----------------------------------------------------------------------------------


def test_diff_says_what_a_refreshed_cache_changes(
    baseline: Path, refreshed: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run(capsys, "diff", str(baseline), str(refreshed))
    assert (code, err) == (0, "")
    assert out.splitlines() == [
        f"old  {baseline} ({GPU}, 3 entries)",
        f"new  {refreshed} ({GPU}, 3 entries)",
        "peak memory copy: 4.28 TB/s -> 4.10 TB/s (-4.2%)",
        "",
        "key    winner              winner median       change",
        "n1024  block256            4.00 us -> 5.00 us  +25.0%",
        "n4096  block256 -> float4  16.0 us -> 12.0 us  -25.0%",
        "    candidates added: float4",
        "",
        "added:",
        "  n65536  winner block256  median 100 us",
        "",
        "removed:",
        "  n8  winner block32  median 1.00 us",
        "",
        "1 added, 1 removed, 1 winner changed, 2 compared",
    ]


def test_diff_of_two_tuners_files_says_so(
    baseline: Path, refreshed: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Keys match by their text alone: two tests' files (both key "n1024") read as a
    # refresh that changed one test's winner, with nothing to say they are two tests'.
    for path, tuner in ((baseline, "tests/test_a.py::test_sum"), (refreshed, "mylib.ops")):
        data = json.loads(path.read_text())
        data["tuner"] = tuner
        path.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")
    code, out, err = run(capsys, "diff", str(baseline), str(refreshed))
    assert (code, err) == (0, "")
    assert out.splitlines()[2] == "tuner changed: tests/test_a.py::test_sum -> mylib.ops"
    code, out, _ = run(capsys, "diff", str(baseline), str(baseline))
    assert not any(line.startswith("tuner changed") for line in out.splitlines())


def test_diff_of_a_file_with_itself_changes_nothing(
    baseline: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = run(capsys, "diff", str(baseline), str(baseline))
    assert code == 0
    assert "+0.0%" in out
    assert out.splitlines()[-1] == "0 added, 0 removed, 0 winners changed, 3 compared"


def test_diff_names_the_file_that_does_not_read(
    baseline: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text("nope")
    err = refused(capsys, "diff", str(baseline), str(bad))
    assert err.startswith(f"pytest-autotune: error: {bad}: is not valid JSON")
    assert err.count("\n") == 1


# -- a journal beside a cache file ---------------------------------------------------------


def with_torn_journal(path: Path) -> Path:
    """`path` with an entry saved to its journal and, after it, a line cut short: what a
    writer killed midway leaves."""
    cache = PersistentCache(path, journal=True)
    cache.load()
    value = PersistentCacheValue("journaled", 0, "block32", (outcome("block32", 0, 3),))
    cache.save({PersistentCacheKey(stable_key("journaled"), "block32"): value}, cache.device())
    with open(journal_path(path), "a", encoding="ascii") as file:
        file.write('{"key":"torn","chec')
    return path


def test_a_journal_given_for_a_cache_file_or_records_names_its_cache_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # `show mylib.json.journal`, a file a LocalTuner writes beside its cache, read as
    # "is not valid JSON: Extra data: line 2" (show) or "not an autotune record" (report).
    cache = write_cache(tmp_path / "mylib.json", {})
    journal = journal_path(with_torn_journal(cache))
    journal.write_text(journal.read_text().rsplit("\n", 1)[0] + "\n")  # whole lines only
    said = (
        f"pytest-autotune: error: {journal}: the journal of the cache file {cache} (the"
        " entries a LocalTuner saved since that file was written), not "
    )
    for argv in (["show", str(journal)], ["diff", str(cache), str(journal)]):
        err = refused(capsys, *argv)
        assert err.startswith(said + "a cache file: show, diff and compare read it with")
        assert err.count("\n") == 1
    for err in refused_as_records(capsys, journal):
        assert err.startswith(said + "records (the JSON lines --autotune-record writes)")
        assert err.count("\n") == 1


def cache_folder(root: Path, cache: Path) -> Path:
    """A cache folder (`<device>/<tuner>.json`) holding `cache` and its journal."""
    (root / GPU).mkdir(parents=True)
    for source in (cache, journal_path(cache)):
        if source.exists():
            shutil.copy(source, root / GPU / source.name)
    return root


@pytest.mark.parametrize("command", ["show", "diff", "changed"])
def test_a_journals_torn_last_line_is_a_warning_and_its_whole_entries_are_read(
    command: str,
    baseline: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    torn = with_torn_journal(write_cache(tmp_path / "torn" / "old.json", {}))
    argv = {
        "show": [str(torn)],
        "diff": [str(baseline), str(torn)],
        "changed": [
            str(cache_folder(tmp_path / "before", baseline)),
            str(cache_folder(tmp_path / "after", torn)),
        ],
    }[command]

    code, out, err = run(capsys, command, *argv)

    assert code == {"show": 0, "diff": 0, "changed": EXIT_CHANGED}[command]
    assert err.startswith("pytest-autotune: warning: ") and err.count("\n") == 1
    assert f"{journal_path(torn).name}: its last line is cut short" in err
    assert "journaled" in out  # the whole entry before the torn line


def test_compare_reads_cache_folders_whose_journals_end_in_a_torn_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    torn = with_torn_journal(write_cache(tmp_path / "torn" / "old.json", {}))
    before, after = cache_folder(tmp_path / "a", torn), cache_folder(tmp_path / "b", torn)

    code, out, err = run(capsys, "compare", str(before), str(after))

    assert code == 0
    lines = err.splitlines()
    assert len(lines) == 2 and all(line.startswith("pytest-autotune: warning: ") for line in lines)
    assert "journaled" in out


def test_a_damaged_journal_line_before_the_last_is_still_an_error(
    baseline: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with open(journal_path(with_torn_journal(baseline)), "a", encoding="ascii") as file:
        file.write("\n")  # the torn line is now a whole one, and not JSON

    err = refused(capsys, "show", str(baseline))
    assert err.startswith(f"pytest-autotune: error: {baseline}: in its journal")
    assert err.count("\n") == 1


# -- usage ---------------------------------------------------------------------------------


def test_changed_of_a_folder_the_refresh_did_not_rewrite_is_no_pull_request(
    baseline: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # A baseline of one session, left as it was: the refresh kept it (measured on
    # contended CPUs) or did not run its test. Nothing started again.
    before = cache_folder(tmp_path / "before", baseline)
    after = cache_folder(tmp_path / "after", baseline)

    code, out, err = run(capsys, "changed", str(before), str(after))

    assert (code, out, err) == (0, "no significant change: every baseline kept its history\n", "")


def test_changed_sees_a_baseline_that_started_again_and_was_then_joined(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # The README has a shared CPU machine run the update three to five times: the first
    # run restarted the baseline (+30%, a significant change), the next joined it, so the
    # refreshed entry has sessions again, and "no significant change" dropped the restart
    # with the refreshed folder.
    before, after = tmp_path / "before", tmp_path / "after"
    for folder, us in ((before, 4), (after, 5.2)):
        (folder / GPU).mkdir(parents=True)
        write_cache(
            folder / GPU / "t.json",
            {"n1024": ("block256", (outcome("block32", 0, 10), outcome("block256", 1, us)))},
        )

    def refreshed_after(sessions_ns: list[int]) -> None:
        path = after / GPU / "t.json"
        data = json.loads(path.read_text())
        data["entries"][0]["sessions"] = [{"median_ns": s, "read_ns": None} for s in sessions_ns]
        path.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")

    refreshed_after([5200])  # restarted at 5.2 us, then joined by a second 5.2 us session
    code, out, _ = run(capsys, "changed", str(before), str(after))
    assert code == EXIT_CHANGED
    assert out == f"{GPU}/t.json: key n1024: new baseline (block256): a significant change\n"

    refreshed_after([4000, 5200])  # joined the committed 4 us session twice: no restart
    assert run(capsys, "changed", str(before), str(after))[0] == 0


def test_changed_notes_a_winner_that_changed_while_joining_its_baseline(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # The gate found the two winners the same speed, so the session joined the baseline:
    # no pull request, but "every baseline kept its history" alone hid that the committed
    # file goes on serving the old winner.
    twins = (outcome("pairwise", 0, 4), outcome("add_reduce", 1, 4))
    before, after = cache_roots(
        tmp_path, ({"n8": ("pairwise", twins)}, {"n8": ("add_reduce", twins)})
    )
    path = after / GPU / "t.json"
    data = json.loads(path.read_text())
    data["entries"][0]["sessions"] = [{"median_ns": 4000, "read_ns": None}]  # joined
    path.write_text(json.dumps(data))

    code, out, _ = run(capsys, "changed", str(before), str(after))

    assert code == 0
    assert out == (
        "no significant change: every baseline kept its history\n"
        f"note: {GPU}/t.json: key n8: winner pairwise -> add_reduce, the same speed by the gate"
        " (joined the baseline); without a pull request the committed file goes on serving"
        " pairwise\n"
    )


def test_changed_of_a_refreshed_folder_with_no_cache_file_is_an_error_not_no_change(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # A project whose autotune_cache_dir is not the folder its refresh job compares: the
    # update wrote elsewhere, both folders are empty, and "no significant change" would
    # let every weekly refresh end green without ever opening a pull request.
    before, after = tmp_path / "before", tmp_path / "after"
    before.mkdir()
    after.mkdir()

    err = refused(capsys, "changed", str(before), str(after))
    assert err == (
        f"pytest-autotune: error: {before}, {after}: hold no cache file: give the folder"
        " --autotune-update writes (the cache_dir setting, .autotune by default)\n"
    )


def test_changed_of_a_folder_a_prune_emptied_lists_every_entry_removed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # The project's last autotune test was removed and `--autotune-prune` deleted its file,
    # the folder's last: "holds no cache file" failed the refresh job, where the committed
    # entries are gone, a change for a pull request.
    before, after = tmp_path / "before", tmp_path / "after"
    (before / GPU).mkdir(parents=True)
    after.mkdir()
    write_cache(before / GPU / "t.json", {"n1024": ("block256", (outcome("block256", 0, 4),))})

    code, out, err = run(capsys, "changed", str(before), str(after))

    assert (code, out, err) == (EXIT_CHANGED, f"{GPU}/t.json: key n1024: entry removed\n", "")


@pytest.mark.parametrize("command", [[], ["report"], ["show"], ["diff"]])
def test_every_command_has_help(command: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main([*command, "--help"])
    assert exit_info.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith(f"usage: pytest-autotune {' '.join(command)}".rstrip())


def test_the_help_of_changed_gives_the_status_it_exits_with_on_an_unreadable_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # A CI step is written from the help: it must test for the status `changed` gives.
    for folder in ("before", "after"):
        (tmp_path / folder / GPU).mkdir(parents=True)
    (tmp_path / "after" / GPU / "t.json").write_text("not json")
    code, _, err = run(capsys, "changed", str(tmp_path / "before"), str(tmp_path / "after"))
    assert code == 2 and "t.json" in err

    with pytest.raises(SystemExit):
        main(["changed", "--help"])
    assert f"{code} when a file cannot be read" in " ".join(capsys.readouterr().out.split())


def test_version_prints_the_installed_version_without_a_command(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["--version"])
    assert exit_info.value.code == 0
    assert (
        capsys.readouterr().out
        == f"pytest-autotune {importlib.metadata.version('pytest-autotune')}\n"
    )


@pytest.mark.parametrize(
    "argv", [[], ["render"], ["show"], ["diff", "one.json"], ["report", "r.jsonl", "-x"]]
)
def test_usage_errors_exit_with_2(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(argv)
    assert exit_info.value.code == 2
    assert "usage: pytest-autotune" in capsys.readouterr().err


def test_python_dash_m_runs_the_same_command_line(baseline: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "pytest_autotune", "show", str(baseline)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith(f"cache   {baseline}\n")
    missing = subprocess.run(
        [sys.executable, "-m", "pytest_autotune", "show", "nope.json"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert (missing.returncode, missing.stderr) == (
        2,
        "pytest-autotune: error: nope.json: no such file\n",
    )


@pytest.mark.parametrize("unbuffered", [False, True], ids=["buffered", "PYTHONUNBUFFERED"])
def test_output_whose_reader_left_ends_quietly_with_the_status_of_sigpipe(
    tmp_path: Path, unbuffered: bool
) -> None:
    # `pytest-autotune show F | head` ended in a BrokenPipeError traceback with status 1,
    # which is compare's "the gate would fail". Under PYTHONUNBUFFERED=1 (set in many
    # containers and CI images), a short write of the whole output to the pipe was the
    # last, the rest dropped without an error: status 0, or compare's own 1.
    path = write_cache(tmp_path / "t.json", {f"n{i}": N8["n8"] for i in range(2000)})
    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}
    if unbuffered:
        env["PYTHONUNBUFFERED"] = "1"
    process = subprocess.Popen(
        [sys.executable, "-m", "pytest_autotune", "show", str(path)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
    )
    assert process.stdout is not None and process.stderr is not None
    assert process.stdout.readline() == f"cache   {path}\n".encode()
    process.stdout.close()  # output past the pipe's buffer is still to write
    with process.stderr:
        stderr = process.stderr.read()
    assert (process.wait(), stderr) == (EXIT_PIPE_CLOSED, b"")


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full")
def test_output_that_cannot_be_written_is_one_line_with_status_2_not_a_regression(
    tmp_path: Path,
) -> None:
    # `pytest-autotune compare A B > out.txt` on a full disk ended in an OSError traceback
    # with status 1, which a CI step reads as "the gate would fail", of two runs that pass.
    before, after = tmp_path / "before", tmp_path / "after"
    for folder in (before, after):
        (folder / GPU).mkdir(parents=True)
        write_cache(folder / GPU / "t.json", N8)
    with open("/dev/full", "w") as full:
        done = subprocess.run(
            [sys.executable, "-m", "pytest_autotune", "compare", str(before), str(after)],
            stdout=full,
            stderr=subprocess.PIPE,
            text=True,
            check=False,
        )
    assert (done.returncode, done.stderr) == (
        2,
        "pytest-autotune: error: cannot write the output: No space left on device\n",
    )


def test_show_never_gives_another_candidates_median_as_the_winners(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # An entry whose results are out of line with its candidates (fastest_index 0 holds
    # "block32", the winner is "block256"): no median and no mark rather than a wrong one.
    path = tmp_path / "old.json"
    value = PersistentCacheValue("n8", 0, "block256", (outcome("block32", 0, 10),))
    PersistentCache(path).save(
        {PersistentCacheKey(stable_key("n8"), "c"): value}, device={"id": GPU}
    )
    code, out, _ = run(capsys, "show", str(path))
    assert code == 0
    assert "key n8: winner block256, median -" in out.splitlines()
    assert (
        "  (fastest_index 0 does not hold 'block256': the winner's samples are not in this"
        " entry)" in out.splitlines()
    )
    assert "  *" not in out


def test_a_torn_records_file_counts_one_whole_record_in_the_singular(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    records = realistic_records_file(tmp_path / "records.jsonl")
    first = records.read_text(encoding="utf-8").splitlines()[0]
    records.write_text(first + '\n{"schema_version": 2, "tuner": "cut', encoding="utf-8")
    code, _, err = run(capsys, "report", str(records), "-o", str(tmp_path / "report.html"))
    assert code == 0
    assert err.endswith("is ignored; the 1 record before it is read\n")


def shown_in_a_process(path: Path, env: dict[str, str]) -> bytes:
    """What `pytest-autotune show path` writes on stdout, run in a process of its own with the
    environment `env`, having asserted that it succeeded and wrote nothing on stderr."""
    result = subprocess.run(
        [sys.executable, "-m", "pytest_autotune", "show", str(path)],
        capture_output=True,
        env=env,
        check=False,
    )
    assert (result.returncode, result.stderr) == (0, b"")
    return result.stdout


def test_show_of_names_the_output_encoding_lacks_writes_them_escaped(tmp_path: Path) -> None:
    """Windows' Python writes a redirected stdout (a file, a CI log's pipe) in the ANSI code
    page: a key or candidate name outside it raised UnicodeEncodeError, a traceback with
    status 1, which is compare's "the gate would fail"."""
    results = (outcome("累加", 0, 1), outcome("Δ-sum", 1, 2))
    path = write_cache(tmp_path / "t.json", {"naïve→": ("累加", results)})
    out = shown_in_a_process(path, {**os.environ, "PYTHONIOENCODING": "cp1252"}).decode("cp1252")
    assert "\\u7d2f\\u52a0" in out and "\\u0394-sum" in out


def test_show_under_the_c_locale_without_utf8_mode_writes_names_escaped(tmp_path: Path) -> None:
    """A bare container's shell (`LC_ALL=C`) with UTF-8 mode off gives stdout ASCII with
    `surrogateescape`, not `strict`: the cache of a test file `test_café.py` ended `show` in
    a UnicodeEncodeError traceback with status 1."""
    results = (outcome("累加", 0, 1), outcome("b", 1, 2))
    path = write_cache(tmp_path / "t.json", {"café": ("累加", results)})
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LC_", "PYTHONIO"))}
    env |= {"LC_ALL": "C", "LANG": "C", "PYTHONUTF8": "0", "PYTHONCOERCECLOCALE": "0"}
    out = shown_in_a_process(path, env)
    assert b"caf\\xe9" in out and b"\\u7d2f\\u52a0" in out


# -- merge -----------------------------------------------------------------------------------


def git(folder: Path, *argv: str) -> str:
    env = {**os.environ, "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}
    done = subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@t", *argv],
        cwd=folder,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    return done.stdout + done.stderr


def driven_repo(tmp_path: Path) -> tuple[Path, str]:
    """A git repository whose cache files merge through `pytest-autotune merge` (this
    tree's, set up as README says), and the path of its one cache file, whose folder is
    made."""
    repo = tmp_path / "repo"
    name = f".autotune/{GPU}/test_sum.json"
    (repo / name).parent.mkdir(parents=True)
    git(repo, "init", "-q", "-b", "main")
    root = Path(__file__).resolve().parents[2]
    driver = f"PYTHONPATH={root} {sys.executable} -m pytest_autotune merge %O %A %B --name %P"
    git(repo, "config", "merge.autotune.driver", driver)
    (repo / ".gitattributes").write_text(".autotune/**/*.json merge=autotune\n")
    return repo, name


def sum_entries(*sizes: int) -> dict[str, tuple[str, tuple[AutotuneResult, ...]]]:
    return {
        f"n{n}": ("block256", (outcome("block32", 0, n / 100), outcome("block256", 1, n / 400)))
        for n in sizes
    }


def driven_repo_of_sizes(tmp_path: Path, *sizes: int) -> tuple[Path, str]:
    """`driven_repo`, its cache file of `sum_entries(*sizes)` committed on main."""
    repo, name = driven_repo(tmp_path)
    write_cache(repo / name, sum_entries(*sizes))
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "base")
    return repo, name


def diverge(
    repo: Path, branch: str, theirs: Callable[[], object], ours: Callable[[], object]
) -> None:
    """Commits what `theirs` writes on a new branch `branch`, and what `ours` writes on main,
    both from main's last commit; main is left checked out."""
    git(repo, "checkout", "-qb", branch)
    theirs()
    git(repo, "commit", "-qam", f"{branch}'s change")
    git(repo, "checkout", "-q", "main")
    ours()
    git(repo, "commit", "-qam", "main's change")


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_two_branches_that_added_keys_at_one_place_merge_with_both_kept_by_the_merge_driver(
    tmp_path: Path,
) -> None:
    # Two branches each added a size to one test and updated it: git's line merge wove the
    # two new entries into one another (they share every line but the key and samples),
    # and the advice "keep one side of each conflict" dropped one of them. As git's merge
    # driver, `pytest-autotune merge` merges entry by entry.
    repo, name = driven_repo_of_sizes(tmp_path, 1024, 8192)
    cache = repo / name
    diverge(
        repo,
        "other",
        lambda: write_cache(cache, sum_entries(1024, 3000, 8192), copy_peak=4.1e12),
        lambda: write_cache(cache, sum_entries(1024, 2048, 8192), copy_peak=4.3e12),
    )

    output = git(repo, "merge", "other")

    assert "CONFLICT" not in output
    merged = json.loads(cache.read_text())
    assert [e["key"] for e in merged["entries"]] == ["n1024", "n2048", "n3000", "n8192"]
    assert merged["device"]["peaks"]["memory_bytes_per_s"]["copy"] == 4.3e12  # this branch's


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_a_file_merged_without_the_driver_is_told_the_command_that_merges_it_entry_by_entry(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Merged before the driver was set up, the file held git's conflict markers, and the
    # message said to "merge it again with `pytest-autotune merge` as git's merge driver":
    # set up, the driver runs only in a merge, and the one that made the markers was done.
    repo, name = driven_repo_of_sizes(tmp_path, 1024, 8192)
    driver = git(repo, "config", "merge.autotune.driver").strip()
    git(repo, "config", "--unset", "merge.autotune.driver")
    cache = repo / name
    diverge(
        repo,
        "other",
        lambda: write_cache(cache, sum_entries(1024, 3000, 8192)),
        lambda: write_cache(cache, sum_entries(1024, 2048, 8192)),
    )
    assert "CONFLICT" in git(repo, "merge", "other")

    code, _, err = run(capsys, "show", str(cache))

    assert code == 2
    advised = [shlex.split(c) for c in err.split("`")[1::2] if c.startswith("git ")]
    assert advised == [["git", "checkout", "-m", "--", "<file>"]]
    git(repo, "config", "merge.autotune.driver", driver)
    git(repo, *advised[0][1:-1], name)
    merged = json.loads(cache.read_text())
    assert [e["key"] for e in merged["entries"]] == ["n1024", "n2048", "n3000", "n8192"]


def with_sessions(path: Path, medians: list[int]) -> None:
    data = json.loads(path.read_text())
    for entry in data["entries"]:
        entry["sessions"] = [{"median_ns": m, "read_ns": None} for m in medians]
    path.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")


def test_merge_keeps_the_new_baseline_over_a_session_added_and_names_an_entry_both_changed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    base = write_cache(tmp_path / "base.json", sum_entries(1024))
    with_sessions(base, [2560, 2570])
    joined = write_cache(tmp_path / "joined.json", sum_entries(1024), copy_peak=4.1e12)
    with_sessions(joined, [2560, 2570, 2580])
    slower = {"n1024": ("block256", (outcome("block32", 0, 10), outcome("block256", 1, 9)))}
    restarted = write_cache(tmp_path / "restarted.json", slower)

    code, _, err = run(capsys, "merge", str(base), str(restarted), str(joined))
    assert (code, err) == (0, "")
    assert (
        json.loads(restarted.read_text())["entries"]
        == json.loads(write_cache(tmp_path / "expected.json", slower).read_text())["entries"]
    )

    ours = write_cache(tmp_path / "ours.json", slower)
    faster = {"n1024": ("block256", (outcome("block32", 0, 10), outcome("block256", 1, 1)))}
    theirs = write_cache(tmp_path / "theirs.json", faster)
    code, _, err = run(capsys, "merge", str(base), str(ours), str(theirs), "--name", "f.json")
    assert code == 1
    assert 'f.json: both branches changed the entry of key "n1024"' in err
    assert json.loads(ours.read_text())["entries"][0]["results"][1]["samples_ns"][0] == 9000


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_merge_of_a_peaks_file_among_the_cache_files_is_gits_line_merge(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """README's `.autotune/**/*.json` names a device's peaks.json too (a program's
    LocalTuner keeps one among its cache files): it has no entries, and the driver read it
    as a malformed cache file; it is merged line by line, as git would without the driver."""
    device = tmp_path / GPU
    device.mkdir()
    lines = [f'  "{name}": {value},' for name, value in (("a", 1), ("b", 2), ("c", 3))]
    base, ours, theirs = (device / f"{side}.json" for side in ("base", "ours", "theirs"))
    base.write_text("{\n" + "\n".join(lines) + "\n}\n")
    ours.write_text("{\n" + "\n".join([lines[0].replace("1", "10"), *lines[1:]]) + "\n}\n")
    theirs.write_text("{\n" + "\n".join([*lines[:2], lines[2].replace("3", "30")]) + "\n}\n")
    name = f".autotune/{GPU}/peaks.json"

    code, _, err = run(capsys, "merge", str(base), str(ours), str(theirs), "--name", name)

    assert (code, err) == (0, "")
    assert ours.read_text() == '{\n  "a": 10,\n  "b": 2,\n  "c": 30,\n}\n'
    theirs.write_text("{\n" + "\n".join([lines[0].replace("1", "11"), *lines[1:]]) + "\n}\n")
    code, _, _ = run(capsys, "merge", str(base), str(ours), str(theirs), "--name", name)
    assert code == 1
    assert "<<<<<<< ours" in ours.read_text()


def test_merge_of_two_branches_that_each_joined_a_baseline_of_one_session_is_no_conflict(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # A baseline recorded once stores no sessions; an update that joins it keeps that one
    # session, the ancestor's median, as the entry's only earlier session. Two branches
    # that each ran `--autotune-update` once after the first recording conflicted on every
    # entry ("other than by adding a session"), as if each had started a new baseline.
    base = write_cache(tmp_path / "base.json", sum_entries(1024))  # median 2.56 us
    ours = write_cache(tmp_path / "ours.json", sum_entries(1040), copy_peak=4.1e12)
    theirs = write_cache(tmp_path / "theirs.json", sum_entries(1010), copy_peak=4.3e12)
    for side in (ours, theirs):
        data = json.loads(side.read_text())
        data["entries"][0]["key"] = "n1024"
        data["entries"][0]["sessions"] = [{"median_ns": 2560, "read_ns": None}]
        side.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")
    expected = json.loads(ours.read_text())["entries"]

    code, _, err = run(capsys, "merge", str(base), str(ours), str(theirs), "--name", "f.json")

    assert (code, err) == (0, "")
    assert json.loads(ours.read_text())["entries"] == expected


def test_merge_of_a_file_both_branches_added_in_two_schema_versions_takes_the_newer(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # A version 1 file (an older pytest-autotune) met a version 2 file that the other branch
    # added: the merge kept this branch's version 1, with entries of version 2's fields,
    # and called it a conflict on the field 'schema_version'.
    base = tmp_path / "base.json"
    base.write_text("")
    ours = write_cache(tmp_path / "ours.json", sum_entries(1024))
    data = json.loads(ours.read_text())
    data["schema_version"] = 1
    ours.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")
    theirs = write_cache(tmp_path / "theirs.json", sum_entries(2048))
    with_sessions(theirs, [5120])

    code, _, err = run(capsys, "merge", str(base), str(ours), str(theirs), "--name", "f.json")

    assert (code, err) == (0, "")
    merged = json.loads(ours.read_text())
    assert merged["schema_version"] == 2
    assert [e["key"] for e in merged["entries"]] == ["n1024", "n2048"]


def test_merge_of_a_key_both_branches_recorded_first_keeps_this_branchs_and_says_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Two branches that both added one size recorded two first baselines of one key, of
    # equal standing: a conflict there stopped a rebase at every commit of the branch.
    base = write_cache(tmp_path / "base.json", sum_entries(1024))
    ours = write_cache(tmp_path / "ours.json", sum_entries(1024, 4096))
    other = {
        **sum_entries(1024),
        "n4096": ("block32", (outcome("block32", 0, 30), outcome("block256", 1, 50))),
    }
    theirs = write_cache(tmp_path / "theirs.json", other)

    code, _, err = run(capsys, "merge", str(base), str(ours), str(theirs), "--name", "f.json")

    assert code == 0
    assert err == (
        'f.json: both branches recorded the new key "n4096": kept this branch\'s baseline'
        " (winner 'block256'; the other's was 'block32')\n"
    )
    merged = json.loads(ours.read_text())
    assert [e["fastest_name"] for e in merged["entries"]] == ["block256", "block256"]


def test_merge_keeps_an_entry_one_branch_pruned_and_the_other_updated_and_says_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # One branch dropped a size and ran `--autotune-update --autotune-prune`; the other ran
    # an update that added a session to that size's baseline. The merge dropped the entry,
    # and the other branch's measurement with it, without a word.
    base = write_cache(tmp_path / "base.json", sum_entries(1024, 2048))
    pruned = write_cache(tmp_path / "pruned.json", sum_entries(1024))
    joined = write_cache(tmp_path / "joined.json", sum_entries(1024, 2050), copy_peak=4.1e12)
    data = json.loads(joined.read_text())
    data["entries"][1]["key"] = "n2048"
    data["entries"][1]["sessions"] = [{"median_ns": 5120, "read_ns": None}]
    joined.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")
    updated = data["entries"][1]

    for ours, theirs, dropped, kept in [
        (pruned, joined, "this", "the other"),
        (joined, pruned, "the other", "this"),
    ]:
        merged = tmp_path / "merged.json"
        shutil.copyfile(ours, merged)
        code, _, err = run(capsys, "merge", str(base), str(merged), str(theirs), "--name", "f.json")

        assert code == 0
        assert err == (
            f'f.json: {dropped} branch pruned the key "n2048", which {kept} branch updated:'
            f" kept {kept} branch's entry (an update with --autotune-prune drops it again"
            " where no test makes the key)\n"
        )
        entries = json.loads(merged.read_text())["entries"]
        assert [e["key"] for e in entries] == ["n1024", "n2048"]
        assert entries[1] == updated


def test_merge_drops_an_entry_one_branch_replaced_with_another_candidate_lists(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # An update replaces the entry of another candidate list under one key: that is no
    # prune, and the other branch's session on the old list goes with it, as before.
    base = write_cache(tmp_path / "base.json", sum_entries(1024))
    three = (outcome("block32", 0, 9), outcome("block64", 1, 5), outcome("block256", 2, 3))
    replaced = write_cache(tmp_path / "replaced.json", {"n1024": ("block256", three)})
    joined = write_cache(tmp_path / "joined.json", sum_entries(1024), copy_peak=4.1e12)
    with_sessions(joined, [2560])

    code, _, err = run(capsys, "merge", str(base), str(replaced), str(joined), "--name", "f")

    assert (code, err) == (0, "")
    entries = json.loads(replaced.read_text())["entries"]
    assert [len(e["results"]) for e in entries] == [3]


def test_merge_help_names_gits_placeholders_as_git_takes_them(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit):
        main(["merge", "--help"])
    help_text = " ".join(capsys.readouterr().out.split())
    assert "git's merge driver %O %A %B gives" in help_text
    assert "%%" not in help_text


def test_merge_help_names_the_entries_kept_with_a_note_rather_than_a_conflict(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # README's "a key both branches recorded first keeps this branch's baseline, saying
    # so" was missing from --help, whose exit status 1 "when both changed one entry
    # otherwise" read as though it covered that case.
    with pytest.raises(SystemExit):
        main(["merge", "--help"])
    help_text = " ".join(capsys.readouterr().out.split())
    assert "a key both recorded first keeps this branch's baseline" in help_text
    assert "an entry one branch pruned and the other updated is kept" in help_text


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_a_rebase_that_meets_an_entry_both_branches_changed_is_told_a_command_that_works(
    tmp_path: Path,
) -> None:
    # The advice named `git show MERGE_HEAD:<file>`, which a rebase, a cherry-pick or
    # `git stash pop` has no MERGE_HEAD for ("fatal: invalid object name").
    repo, name = driven_repo_of_sizes(tmp_path, 1024)
    cache = repo / name

    def block32_at(us: float) -> Callable[[], object]:
        results = (outcome("block32", 0, us), outcome("block256", 1, 9))
        return lambda: write_cache(cache, {"n1024": ("block32", results)})

    diverge(repo, "topic", block32_at(1), block32_at(2))
    theirs = git(repo, "show", f"topic:{name}")
    git(repo, "checkout", "-q", "topic")

    output = git(repo, "rebase", "main")

    assert 'both branches changed the entry of key "n1024"' in output
    assert f"`git show :3:{name}`" in output
    assert git(repo, "show", f":3:{name}") == theirs


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_a_merge_that_meets_a_version_it_cannot_read_says_what_the_file_holds_and_how_to_redo(
    tmp_path: Path,
) -> None:
    # The other branch's file was written by a newer pytest-autotune: the driver failed,
    # git left this branch's version in place (it reads, no conflict markers), and the
    # message said only that the other version did not read.
    repo, name = driven_repo_of_sizes(tmp_path, 1024)
    cache = repo / name

    def by_a_newer_pytest_autotune() -> None:
        newer = json.loads(write_cache(cache, sum_entries(1024, 2048)).read_text())
        cache.write_text(json.dumps({**newer, "schema_version": 99}, indent=2) + "\n")

    diverge(
        repo,
        "other",
        by_a_newer_pytest_autotune,
        lambda: write_cache(cache, sum_entries(1024, 4096)),
    )

    output = git(repo, "merge", "other")

    assert "CONFLICT" in output
    assert "upgrade pytest-autotune" in output
    assert "the file is left unmerged, as this branch's version alone" in output
    assert f"`git checkout -m -- {name}` merges it again" in output
    # The command runs the driver again on the three versions git holds in the index.
    assert "upgrade pytest-autotune" in git(repo, "checkout", "-m", "--", name)


def test_merge_advice_names_a_path_with_a_space_as_a_shell_reads_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # A package folder with a space (`my pkg/.autotune/...`, git's %P): the advice
    # `git show :3:my pkg/...`, pasted, showed the path `pkg` ("fatal: path 'pkg' does not
    # exist"), and `git checkout -m -- my pkg/...` two paths.
    name = "my pkg/.autotune/cpu-x/test_sum.json"
    base = write_cache(tmp_path / "base.json", sum_entries(1024))
    slower = {"n1024": ("block256", (outcome("block32", 0, 10), outcome("block256", 1, 9)))}
    faster = {"n1024": ("block256", (outcome("block32", 0, 10), outcome("block256", 1, 1)))}
    ours = write_cache(tmp_path / "ours.json", slower)
    theirs = write_cache(tmp_path / "theirs.json", faster)
    code, _, err = run(capsys, "merge", str(base), str(ours), str(theirs), "--name", name)
    assert code == 1
    assert ["git", "show", f":3:{name}"] in [shlex.split(c) for c in err.split("`")[1::2]]

    (tmp_path / "theirs.json").write_text("{")
    code, _, err = run(capsys, "merge", str(base), str(ours), str(theirs), "--name", name)
    assert code == 2
    assert ["git", "checkout", "-m", "--", name] in [shlex.split(c) for c in err.split("`")[1::2]]


def test_merge_of_a_file_committed_with_crlf_line_endings_keeps_them(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # An update writes such a file back with CRLF (`files.in_line_endings_of`); the merge
    # driver wrote it with LF, every line of it a change in git's diff.
    sides = [
        write_cache(tmp_path / f"{name}.json", sum_entries(*sizes))
        for name, sizes in [("base", (1024,)), ("ours", (1024, 2048)), ("theirs", (1024, 4096))]
    ]
    for side in sides:
        side.write_bytes(side.read_bytes().replace(b"\n", b"\r\n"))
    code, _, err = run(capsys, "merge", *map(str, sides))
    assert (code, err) == (0, "")
    merged = sides[1].read_bytes()
    assert merged.count(b"\r\n") == merged.count(b"\n") > 0
    assert [e["key"] for e in json.loads(merged)["entries"]] == ["n1024", "n2048", "n4096"]


def test_merge_into_a_file_it_cannot_write_says_so_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # Run by hand on a read-only checkout, the merge's write raised a traceback.
    from pytest_autotune.cli import merge

    base = write_cache(tmp_path / "base.json", sum_entries(1024))
    ours = write_cache(tmp_path / "ours.json", sum_entries(1024, 2048))
    theirs = write_cache(tmp_path / "theirs.json", sum_entries(1024, 4096))

    def refused(path: Path, text: str) -> None:
        raise PermissionError(13, "Permission denied", str(path))

    monkeypatch.setattr(merge, "write_atomically", refused)
    code, _, err = run(capsys, "merge", str(base), str(ours), str(theirs), "--name", "f.json")
    assert code == 2
    assert err == (
        f"pytest-autotune: error: f.json: the merged file cannot be written to {ours}:"
        " Permission denied\n"
    )


def test_show_lists_each_cache_levels_roof_beside_the_outer_memory(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # The report's device table and `show` say the same peaks: `show` gave the outer
    # memory's rates alone, where a group's roof may name L2.
    from pytest_autotune.tune.peaks import MemoryLevel

    path = write_cache(tmp_path / "c.json", {"n8": ("a", (outcome("a", 0, 1),))})
    data = json.loads(path.read_text())
    data["device"]["peaks"] = Peaks(
        memory={"copy": 4.1e12},
        compute={"fp32": 63e12},
        levels=(MemoryLevel("L2", 50 << 20, {"copy": 10e12}),),
        outer_level="HBM",
    ).to_json()
    path.write_text(json.dumps(data))
    code, out, err = run(capsys, "show", str(path))
    assert (code, err) == (0, "")
    assert (
        "peaks   memory copy 4.10 TB/s; cache levels L2 (52.4 MB) 10.0 TB/s;"
        " compute fp32 63.0 Top/s"
    ) in out.splitlines()
