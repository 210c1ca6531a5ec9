"""`pytest-autotune report | show | diff`: output, exit codes, and one-line errors."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from pytest_autotune.backends.peaks import Peaks
from pytest_autotune.cli import EXIT_CHANGED, main
from pytest_autotune.gate import Baseline, Measurement, judge
from pytest_autotune.tune.benchmark import AutotuneOutcome, AutotuneResult
from pytest_autotune.tune.cache import PersistentCache, PersistentCacheKey, PersistentCacheValue
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
) -> Path:
    """A cache file of `entries`: key -> (winner, results)."""
    values = {}
    for key, (winner, results) in entries.items():
        index = next(i for i, r in enumerate(results) if r.name == winner)
        checksum = "-".join(r.name or "" for r in results)
        values[PersistentCacheKey(stable_key(key), checksum)] = PersistentCacheValue(
            key, index, winner, results
        )
    peaks = Peaks(memory={"copy": copy_peak}, compute={"fp32": 63e12})
    device = {"id": GPU, "fingerprint": {"cuda": "12.6"}, "peaks": peaks.to_json()}
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


def test_report_renders_the_html_report_from_records(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    records = tmp_path / "records.jsonl"
    recorder = Recorder(records)
    for record in realistic_records():
        recorder.record(record)
    output = tmp_path / "site" / "report.html"
    code, out, err = run(capsys, "report", str(records), "-o", str(output), "--title", "nightly")
    assert (code, err) == (0, "")
    assert out == f"wrote {output} (3 decisions)\n"
    html = output.read_text(encoding="utf-8")
    assert "<title>nightly</title>" in html
    assert html.count('class="card decision') == 3
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in html


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


def test_compare_of_a_file_and_a_folder_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    a = tmp_path / "a.jsonl"
    Recorder(a).record(sum_run(RUN_1, 5.0))
    code, out, err = run(capsys, "compare", str(a), str(tmp_path))
    assert (code, out) == (1, "")
    assert err == (
        f"pytest-autotune: error: {a}, {tmp_path}: compare two record files or two cache folders\n"
    )


def test_report_of_a_missing_file_is_one_line_naming_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "nope.jsonl"
    code, out, err = run(capsys, "report", str(missing), "-o", str(tmp_path / "r.html"))
    assert (code, out) == (1, "")
    assert err == f"pytest-autotune: error: {missing}: no such file\n"
    assert not (tmp_path / "r.html").exists()


@pytest.mark.parametrize(
    ("line", "reason"),
    [
        ("{not json", "invalid JSON"),
        ("[1, 2]", "expected a JSON object"),
        ('{"schema_version": 99}', "newer than this pytest-autotune reads"),
    ],
)
def test_report_of_bad_records_is_one_line_naming_the_file_and_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], line: str, reason: str
) -> None:
    records = tmp_path / "records.jsonl"
    records.write_text("\n" + line + "\n")
    code, _, err = run(capsys, "report", str(records))
    assert code == 1
    assert err.startswith(f"pytest-autotune: error: {records}:2: ")
    assert reason in err and err.count("\n") == 1


def test_report_of_a_record_whose_extras_do_not_read_names_the_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    records = tmp_path / "records.jsonl"
    data = realistic_records()[0].to_json()
    data["extra"]["verdict"] = 7
    records.write_text(json.dumps(data) + "\n")
    code, _, err = run(capsys, "report", str(records), "-o", str(tmp_path / "r.html"))
    assert code == 1
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
    assert code == 1
    assert err.startswith(f"pytest-autotune: error: {blocker / 'r.html'}: cannot write the report")
    assert err.count("\n") == 1


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
        f"     {SCRIPT_NAME}  -       -        unknown: RuntimeError: boom at line 3",
    ]
    assert out.endswith("\n") and not out.endswith("\n\n")


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
    code, out, err = run(capsys, "show", str(path))
    assert (code, out) == (1, "")
    assert err.startswith(f"pytest-autotune: error: {path}: ")
    assert reason in err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert "goes on" not in err  # the test run's remark does not apply here


def test_show_of_a_missing_file_or_a_folder(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = run(capsys, "show", str(tmp_path / "nope.json"))
    assert code == 1 and err.endswith("nope.json: no such file\n")
    code, _, err = run(capsys, "show", str(tmp_path))
    assert code == 1 and err == f"pytest-autotune: error: {tmp_path}: is a directory, not a file\n"


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
    code, out, err = run(capsys, "diff", str(baseline), str(bad))
    assert (code, out) == (1, "")
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

    code, out, err = run(capsys, "show", str(baseline))

    assert (code, out) == (1, "")
    assert err.startswith(f"pytest-autotune: error: {baseline}: in its journal")
    assert err.count("\n") == 1


# -- usage ---------------------------------------------------------------------------------


@pytest.mark.parametrize("command", [[], ["report"], ["show"], ["diff"]])
def test_every_command_has_help(command: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main([*command, "--help"])
    assert exit_info.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith(f"usage: pytest-autotune {' '.join(command)}".rstrip())


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
        1,
        "pytest-autotune: error: nope.json: no such file\n",
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
    assert "  *" not in out
