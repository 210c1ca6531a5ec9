"""The plugin's own settings from autotune.yaml and the environment, as from the ini file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.plugin.harness import run
from tests.plugin.test_tune_mode import CACHE, SCALE_TESTS


def test_autotune_yaml_turns_on_tuning_and_writes_the_report_it_names(
    autotune_pytester: pytest.Pytester,
) -> None:
    autotune_pytester.makepyfile(test_scale=SCALE_TESTS)
    (autotune_pytester.path / "autotune.yaml").write_text(
        "update: true\ndevice: fake\nhtml: out/report.html\ncandidates: true\n"
    )
    result = run(autotune_pytester)
    assert result.ret == pytest.ExitCode.OK
    assert (autotune_pytester.path / "out/report.html").is_file()
    cache = autotune_pytester.path / CACHE
    assert json.loads(cache.read_text())["device"]["id"] == "cpu-fake-1t"
    result.stdout.fnmatch_lines(["*report: out*report.html*"])


def test_an_environment_variable_sets_a_plugin_option(
    autotune_pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    autotune_pytester.makepyfile(test_scale=SCALE_TESTS)
    monkeypatch.setenv("PYTEST_AUTOTUNE_UPDATE", "1")
    monkeypatch.setenv("PYTEST_AUTOTUNE_BENCHMARK_JSON", "bench.json")
    assert run(autotune_pytester).ret == pytest.ExitCode.OK
    assert (autotune_pytester.path / "bench.json").is_file()


def test_a_misspelt_plugin_key_in_autotune_yaml_stops_the_run_with_the_nearest_name(
    autotune_pytester: pytest.Pytester,
) -> None:
    autotune_pytester.makepyfile(test_scale=SCALE_TESTS)
    (autotune_pytester.path / "autotune.yaml").write_text("autotune_html: report.html\n")
    result = run(autotune_pytester)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        ["*autotune.yaml: autotune_html: unknown setting; known settings: *did you mean html?"]
    )


def test_a_misspelt_variable_stops_the_run_with_the_nearest_name(
    autotune_pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    autotune_pytester.makepyfile(test_scale=SCALE_TESTS)
    monkeypatch.setenv("PYTEST_AUTOTUNE_LEVL", "full")
    result = run(autotune_pytester, "-q")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        [
            "*pytest-autotune: PYTEST_AUTOTUNE_LEVL: unknown setting; known settings: *"
            "did you mean PYTEST_AUTOTUNE_LEVEL?"
        ]
    )


# Every path setting, as the command line and the environment spell it.
PATHS = {
    "html": "r.html",
    "record": "r.jsonl",
    "benchmark_json": "b.json",
    "cache_dir": "mycache",
}


@pytest.fixture
def below(autotune_pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A project whose tests are in tests/sub, run from tests/sub (`cd tests/sub; pytest`)."""
    sub = autotune_pytester.mkdir("tests") / "sub"
    sub.mkdir()
    (sub / "test_scale.py").write_text(SCALE_TESTS)
    monkeypatch.chdir(sub)
    return sub


@pytest.mark.parametrize("source", ["command line", "environment"])
def test_a_relative_path_from_the_command_line_or_the_environment_is_from_where_pytest_ran(
    autotune_pytester: pytest.Pytester,
    below: Path,
    monkeypatch: pytest.MonkeyPatch,
    source: str,
) -> None:
    pytest.importorskip("pytest_benchmark")  # for benchmark_json
    args = ["--autotune-update"]
    for name, path in PATHS.items():
        if source == "command line":
            args.append(f"--autotune-{name.replace('_', '-')}={path}")
        else:
            monkeypatch.setenv(f"PYTEST_AUTOTUNE_{name.upper()}", path)
    result = run(autotune_pytester, *args, "--junitxml=j.xml")
    assert result.ret == pytest.ExitCode.OK
    assert sorted(p.name for p in below.iterdir() if p.name != "__pycache__") == sorted(
        ["b.json", "j.xml", "mycache", "r.html", "r.jsonl", "test_scale.py"]
    )
    assert list((below / "mycache").glob("*/*.json"))
    result.stdout.fnmatch_lines(["updated mycache*test_scale*.json*", "report: r.html"])


def test_a_relative_path_from_the_ini_file_or_autotune_yaml_is_from_the_root_dir(
    autotune_pytester: pytest.Pytester, below: Path
) -> None:
    root = autotune_pytester.path
    autotune_pytester.makeini(
        "[pytest]\nfilterwarnings = error\nautotune_html = out/r.html\n"
        "autotune_config = conf/settings.yaml\n"
    )
    (root / "conf").mkdir()
    (root / "conf/settings.yaml").write_text("update: true\nrecord: out/r.jsonl\n")
    result = run(autotune_pytester)
    assert result.ret == pytest.ExitCode.OK
    assert (root / "out/r.html").is_file()
    assert (root / "out/r.jsonl").is_file()
    assert list((root / ".autotune").glob("*/*.json"))
    # From tests/sub, the report is not below: shown whole, so that it opens from there.
    result.stdout.fnmatch_lines([f"report: {root / 'out/r.html'}"])


def test_the_config_file_named_on_the_command_line_is_from_where_pytest_ran(
    autotune_pytester: pytest.Pytester, below: Path
) -> None:
    (below / "here.yaml").write_text("update: true\n")
    result = run(autotune_pytester, "--autotune-config=here.yaml")
    assert result.ret == pytest.ExitCode.OK
    assert list((autotune_pytester.path / ".autotune").glob("*/*.json"))
