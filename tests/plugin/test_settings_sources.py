"""The plugin's own settings from autotune.yaml and the environment, as from the ini file."""

from __future__ import annotations

import json

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
