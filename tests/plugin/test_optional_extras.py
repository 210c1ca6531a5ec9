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
