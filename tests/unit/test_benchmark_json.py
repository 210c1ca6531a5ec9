"""The winners in pytest-benchmark's JSON format, read back by pytest-benchmark itself."""

from __future__ import annotations

import functools
import importlib.metadata
import json
import re
import shutil
import subprocess
import sys
from datetime import datetime, timezone
from pathlib import Path

import pytest
from pytest_benchmark.stats import Stats

from pytest_autotune.gate import Comparison, Verdict
from pytest_autotune.report import CandidateRow, GroupSummary
from pytest_autotune.report.benchmark_json import (
    benchmark_document,
    benchmark_stats,
    commit_info,
    machine_info,
    write_benchmark_json,
)
from tests.fakes import texts_read_while_written

NOW = datetime(2026, 1, 2, 3, 4, 5, tzinfo=timezone.utc)
COMMIT = {
    "id": "unversioned",
    "time": None,
    "author_time": None,
    "dirty": False,
    "project": "kernels",
    "branch": "(unknown)",
}
MACHINE = {"node": "ci", "system": "Linux", "cpu": {}}

SAXPY = GroupSummary(
    group="tests/test_saxpy.py::test_saxpy",
    key="n67108864",
    winner="float4",
    verdict=Verdict.PASS,
    failed=False,
    samples=(190e-6, 189e-6, 191e-6, 189e-6),
    fraction_of_roof=0.99,
    comparison=Comparison(0.01, -0.03, 0.05, False),
    candidates=(
        CandidateRow("float4", 189e-6, samples=(189e-6, 200e-6)),
        CandidateRow("block32", None, "boom"),
        CandidateRow("block256", 300e-6, samples=(300e-6, 310e-6, 290e-6)),
    ),
    device_id="cuda-nvidia-h200",
)
SUM = GroupSummary(
    group="tests/test_sum.py::test_sum",
    key="n65536",
    winner="pairwise",
    verdict=Verdict.NO_BASELINE,
    failed=False,
    samples=(12e-6, 11e-6, 13e-6),
    device_id="cpu-amd-epyc-7b13-2t",
)
BROKEN = GroupSummary(
    group="tests/test_sum.py::test_sum",
    key="n1024",
    winner=None,
    verdict=Verdict.ERROR,
    failed=True,
    message="every candidate failed",
)

SAMPLE_SETS = [
    [3e-6],
    [3e-6, 1e-6],
    [5e-6, 1e-6, 3e-6],
    [4e-6, 1e-6, 3e-6, 2e-6],
    [1e-6, 2e-6, 3e-6, 4e-6, 50e-6],
    [1e-6, 1.1e-6, 1.2e-6, 0.9e-6, 1e-6, 9e-6],
    [1e-6, 1.1e-6, 1.2e-6, 0.9e-6, 1e-6, 9e-6, 0.1e-6],
    [189e-6 * (1 + 0.01 * ((i * 7) % 11)) for i in range(101)],
]


@pytest.mark.parametrize("samples", SAMPLE_SETS, ids=lambda s: f"n{len(s)}")
def test_the_stats_are_the_ones_pytest_benchmark_computes(samples: list[float]) -> None:
    theirs = Stats()  # type: ignore[no-untyped-call]
    for sample in samples:
        theirs.update(sample)  # type: ignore[no-untyped-call]
    expected = {**theirs.as_dict(), "data": samples, "iterations": 1}  # type: ignore[no-untyped-call]
    assert benchmark_stats(samples) == expected
    assert list(benchmark_stats(samples)) == list(expected)


def test_a_set_without_samples_has_no_stats() -> None:
    with pytest.raises(ValueError, match="no samples"):
        benchmark_stats([])


def test_each_candidate_is_one_benchmark_in_its_autotune_groups_group() -> None:
    document = benchmark_document([SUM, SAXPY], machine=MACHINE, commit=COMMIT, now=NOW)
    assert list(document) == ["machine_info", "commit_info", "benchmarks", "datetime", "version"]
    assert (document["datetime"], document["version"]) == (
        "2026-01-02T03:04:05+00:00",
        importlib.metadata.version("pytest-benchmark"),
    )
    float4, block256, pairwise = document["benchmarks"]
    assert {k: v for k, v in float4.items() if k != "stats"} == {
        "group": "tests/test_saxpy.py::test_saxpy [n67108864]",
        "name": "test_saxpy[float4-n67108864]",
        "fullname": "tests/test_saxpy.py::test_saxpy[float4-n67108864]",
        "params": {"candidate": "float4", "key": "n67108864"},
        "param": "float4-n67108864",
        "extra_info": {
            "autotune_group": "tests/test_saxpy.py::test_saxpy",
            "key": "n67108864",
            "candidate": "float4",
            "winner": True,
            "samples": "precise measurement",
            "device_id": "cuda-nvidia-h200",
            "verdict": "pass",
            "fraction_of_roof": 0.99,
            "delta_vs_baseline": 0.01,
        },
        "options": {},
    }
    # The winner's numbers are the gate's (its precise measurement), the others' their tuning.
    assert float4["stats"]["median"] == 189.5e-6
    assert block256["stats"]["data"] == [300e-6, 310e-6, 290e-6]
    assert block256["extra_info"]["winner"] is False
    assert block256["extra_info"]["fraction_of_roof"] is None
    assert pairwise["fullname"] == "tests/test_sum.py::test_sum[pairwise-n65536]"


def test_a_name_carries_the_groups_parameters_once() -> None:
    group = GroupSummary(
        "k/test_conv.py::test_conv1d[n131072]",
        "n131072",
        "fft",
        Verdict.PASS,
        False,
        samples=(1e-3,),
        candidates=(CandidateRow("fft", samples=(1e-3,)), CandidateRow("direct", samples=(2e-3,))),
    )
    document = benchmark_document([group], machine=MACHINE, commit=COMMIT, now=NOW)
    assert [(b["group"], b["name"]) for b in document["benchmarks"]] == [
        ("k/test_conv.py::test_conv1d[n131072]", "test_conv1d[fft-n131072]"),
        ("k/test_conv.py::test_conv1d[n131072]", "test_conv1d[direct-n131072]"),
    ]


def test_a_fixture_calls_name_keeps_its_tests_parameters_and_its_calls_number() -> None:
    # The `autotune` fixture's second call in `test_sizes[float32]` is the group
    # `...::test_sizes[float32] (call 2)`: its benchmarks were named `test_sizes[fft-n4096]`,
    # the test's parameters and the call lost, as if from another test.
    def call(group: str, key: str) -> GroupSummary:
        fft = CandidateRow("fft", samples=(1e-3,))
        return GroupSummary(
            group, key, "fft", Verdict.PASS, False, samples=(1e-3,), candidates=(fft,)
        )

    document = benchmark_document(
        [
            call("k/t.py::test_sizes[float32]", "n1024"),
            call("k/t.py::test_sizes[float32] (call 2)", "n4096"),
            call("k/t.py::test_plain (call 2)", "n4096"),
        ],
        machine=MACHINE,
        commit=COMMIT,
        now=NOW,
    )
    assert [(b["fullname"], b["param"]) for b in document["benchmarks"]] == [
        ("k/t.py::test_plain[fft-n4096] (call 2)", "fft-n4096"),
        ("k/t.py::test_sizes[fft-float32]", "fft-float32"),
        ("k/t.py::test_sizes[fft-float32] (call 2)", "fft-float32"),
    ]


def test_pytest_benchmark_is_imported_only_when_its_file_is_asked_for() -> None:
    code = (
        "import sys; sys.modules['pytest_benchmark'] = None\n"
        "import pytest_autotune, pytest_autotune.plugin\n"
        "import pytest_autotune.report.benchmark_json as b\n"
        "try:\n    b.require_pytest_benchmark()\nexcept ImportError as e:\n    print(e)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert out == "it needs pytest-benchmark: pip install 'pytest-autotune[benchmark]'\n"


def test_a_group_that_measured_nothing_is_left_out_as_pytest_benchmark_leaves_out_errors() -> None:
    document = benchmark_document([BROKEN, SUM], machine=MACHINE, commit=COMMIT, now=NOW)
    assert [b["param"] for b in document["benchmarks"]] == ["pairwise-n65536"]


def test_the_file_is_indented_ascii_with_a_final_newline_in_a_new_folder(tmp_path: Path) -> None:
    path = tmp_path / "out" / "bench.json"
    odd = GroupSummary("t.py::test_durée", "k", "a", Verdict.PASS, False, samples=(1e-3,))
    write_benchmark_json(path, [odd], machine=MACHINE, commit=COMMIT, now=NOW)
    text = path.read_text(encoding="utf-8")
    assert text.endswith("}\n")
    assert text.startswith('{\n    "machine_info": {\n        "node": "ci",')
    assert "test_dur\\u00e9e[a-k]" in text
    assert json.loads(text)["benchmarks"][0]["name"] == "test_durée[a-k]"


def test_the_machine_info_has_pytest_benchmarks_platform_fields() -> None:
    assert list(machine_info()) == [
        "node",
        "processor",
        "machine",
        "python_compiler",
        "python_implementation",
        "python_implementation_version",
        "python_version",
        "python_build",
        "release",
        "system",
        "cpu",
    ]


def test_outside_a_git_checkout_the_commit_is_unversioned(tmp_path: Path) -> None:
    (tmp_path / "kernels").mkdir()
    assert commit_info(tmp_path / "kernels") == COMMIT


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_in_a_git_checkout_the_commit_branch_and_dirty_state_are_recorded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", "/dev/null")
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    repo = tmp_path / "kernels"
    repo.mkdir()
    (repo / "k.py").write_text("x = 1\n")

    def git(*args: str) -> None:
        subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True)

    git("init", "-q", "-b", "tuning")
    git("add", "k.py")
    git("-c", "user.name=t", "-c", "user.email=t@example.com", "commit", "-q", "-m", "k")
    clean = commit_info(repo)
    assert re.fullmatch(r"[0-9a-f]{40}", clean["id"])
    assert (clean["branch"], clean["dirty"], clean["project"]) == ("tuning", False, "kernels")
    assert clean["time"] is not None and clean["author_time"] is not None
    (repo / "k.py").write_text("x = 2\n")
    assert commit_info(repo)["dirty"] is True


@pytest.mark.skipif(shutil.which("git") is None, reason="needs git")
def test_a_pull_requests_detached_merge_commit_is_named_by_its_branch_as_the_records_name_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", "/dev/null")
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")

    def git(*args: str) -> None:
        subprocess.run(["git", *args], cwd=tmp_path, check=True, capture_output=True)

    git("init", "-q", "-b", "work")
    git("-c", "user.name=t", "-c", "user.email=t@", "commit", "-q", "--allow-empty", "-m", "x")
    git("checkout", "-q", "--detach")
    monkeypatch.delenv("GITHUB_HEAD_REF", raising=False)
    assert commit_info(tmp_path)["branch"] == "(detached head)"
    monkeypatch.setenv("GITHUB_HEAD_REF", "faster-sum")  # GitHub Actions, a pull request
    assert commit_info(tmp_path)["branch"] == "faster-sum"
    monkeypatch.setenv("GITHUB_HEAD_REF", "")  # a push event's job sets it empty
    assert commit_info(tmp_path)["branch"] == "(detached head)"


def compare(tmp_path: Path, *files: Path) -> subprocess.CompletedProcess[str]:
    """`pytest-benchmark compare FILE...`: the console script runs `pytest_benchmark.cli:main`,
    which `python -m pytest_benchmark` runs too, without depending on PATH. It runs in an
    empty folder, where it looks for a conftest.py and makes its `.benchmarks` storage."""
    return subprocess.run(
        [sys.executable, "-m", "pytest_benchmark", "compare", *map(str, files)],
        cwd=tmp_path,
        check=False,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_pytest_benchmark_compare_reads_the_file_and_shows_every_candidate(tmp_path: Path) -> None:
    path = tmp_path / "autotune.json"
    write_benchmark_json(path, [SAXPY, SUM, BROKEN], machine=MACHINE, commit=COMMIT, now=NOW)
    shown = compare(tmp_path, path)
    assert shown.returncode == 0, shown.stderr
    assert "Failed to load" not in shown.stdout + shown.stderr
    assert "benchmark 'tests/test_saxpy.py::test_saxpy [n67108864]': 2 tests" in shown.stdout
    assert "test_saxpy[float4-n67108864]" in shown.stdout
    assert "test_saxpy[block256-n67108864]" in shown.stdout
    assert "test_sum[pairwise-n65536]" in shown.stdout
    assert "n1024" not in shown.stdout


def test_pytest_benchmark_compare_sets_two_of_our_runs_side_by_side(tmp_path: Path) -> None:
    before, after = tmp_path / "0001_before.json", tmp_path / "0002_after.json"
    write_benchmark_json(before, [SAXPY], machine=MACHINE, commit=COMMIT, now=NOW)
    slower = GroupSummary(
        SAXPY.group, SAXPY.key, "float4", Verdict.PASS, False, samples=(250e-6,) * 4
    )
    write_benchmark_json(after, [slower], machine=MACHINE, commit=COMMIT, now=NOW)
    shown = compare(tmp_path, before, after)
    assert shown.returncode == 0, shown.stderr
    # pytest-benchmark names each row's source by a shortened path of its file.
    assert re.search(r"test_saxpy\[float4-n67108864\] \(\S*0001_before\) +189\.0000", shown.stdout)
    assert re.search(r"test_saxpy\[float4-n67108864\] \(\S*0002_after\) +250\.0000", shown.stdout)


def test_a_reader_of_the_file_while_a_run_replaces_it_finds_one_whole_file(
    tmp_path: Path,
) -> None:
    # Written in place, the file was empty or cut short to a reader meanwhile (a
    # `pytest-benchmark compare` of the folder, an artifact upload): not JSON at all.
    target = tmp_path / "autotune.json"
    runs = ([SAXPY], [SAXPY, SUM, BROKEN])
    whole = set()
    for summaries in runs:
        write_benchmark_json(target, summaries, machine=MACHINE, commit=COMMIT, now=NOW)
        whole.add(target.read_text(encoding="utf-8"))
    writes = [
        functools.partial(
            write_benchmark_json, target, runs[i % 2], machine=MACHINE, commit=COMMIT, now=NOW
        )
        for i in range(100)
    ]
    cut = [text[-40:] for text in texts_read_while_written(target, writes) - whole]
    assert cut == []
