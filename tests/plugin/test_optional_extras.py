"""Optional extras: asked for without being installed, one line at the start of the run."""

from __future__ import annotations

import importlib.util

import pytest

from tests.plugin.harness import PLUGIN_ARGS


def test_benchmark_json_without_pytest_benchmark_stops_at_start_naming_the_extra(
    autotune_pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    find_spec = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util,
        "find_spec",
        lambda name, *a: None if name == "pytest_benchmark" else find_spec(name, *a),
    )
    autotune_pytester.makepyfile("def test_nothing():\n    pass\n")

    result = autotune_pytester.runpytest(
        *PLUGIN_ARGS, "--autotune", "--autotune-benchmark-json=bench.json"
    )

    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        [
            (
                "ERROR: pytest-autotune: command line: autotune_benchmark_json: needs"
                " pytest-benchmark: pip install 'pytest-autotune[benchmark]'"
            )
        ]
    )
    assert "Traceback" not in result.stderr.str()
    assert not (autotune_pytester.path / "bench.json").exists()


def test_benchmark_json_without_pytest_benchmark_is_ignored_by_a_plain_run(
    autotune_pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A project's `autotune.yaml` names the export for its tuning runs; a checkout without
    # the extra stopped every plain `pytest` with exit code 4, where a setting only tuning
    # reads is documented as silent in a plain run.
    find_spec = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util,
        "find_spec",
        lambda name, *a: None if name == "pytest_benchmark" else find_spec(name, *a),
    )
    autotune_pytester.makepyfile("def test_nothing():\n    pass\n")
    (autotune_pytester.path / "autotune.yaml").write_text("benchmark_json: bench.json\n")

    result = autotune_pytester.runpytest(*PLUGIN_ARGS)
    assert result.ret == pytest.ExitCode.OK
    assert "pytest-benchmark" not in result.stdout.str() + result.stderr.str()

    result = autotune_pytester.runpytest(*PLUGIN_ARGS, "--autotune-benchmark-json=bench.json")
    assert result.ret == pytest.ExitCode.OK
    result.stdout.fnmatch_lines(
        ["autotune: --autotune-benchmark-json has no effect without --autotune or *"]
    )
    assert not (autotune_pytester.path / "bench.json").exists()
