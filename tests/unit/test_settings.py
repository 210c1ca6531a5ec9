"""The settings table: every source made from it, one precedence rule, the marker included."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from pytest_autotune.plugin_settings import PluginSettings, settings_from_sources
from pytest_autotune.tune.config import AutotuneConfig, BenchConfig, ConfigError, load_yaml
from pytest_autotune.tune.key import AutotuneLevel
from pytest_autotune.tune.settings import BY_NAME, PRECEDENCE, SETTINGS, env_values

# A value for each ini key, as an ini file spells it, unlike the setting's default.
INI_VALUES = {
    "tune": "true",
    "update": "true",
    "cache_dir": "baselines",
    "html": "out/report.html",
    "record": "out/records.jsonl",
    "device": "cpu",
    "level": "full",
    "strict": "true",
    "runner": "github-ubuntu-x64",
    "time_limit": "2.5",
    "benchmark_json": "out/bench.json",
    "only": "true",
    "candidates": "true",
}


def resolved(
    root: Path,
    *,
    command_line: dict[str, object] | None = None,
    ini: dict[str, object] | None = None,
    environ: dict[str, str] | None = None,
    yaml: str | None = None,
    invocation_dir: Path | None = None,
) -> PluginSettings:
    if yaml is not None:
        (root / "autotune.yaml").write_text(yaml, encoding="utf-8")
    return settings_from_sources(
        command_line or {}, ini or {}, environ or {}, root, invocation_dir or root
    )


def test_the_ini_file_and_autotune_yaml_set_the_same_settings() -> None:
    ini_keys = {s.name for s in SETTINGS if "ini" in s.sources}
    yaml_keys = {s.name for s in SETTINGS if "yaml" in s.sources}
    # A YAML file cannot name the YAML file to read: the one ini key it lacks.
    assert ini_keys - yaml_keys == {"config"}
    assert set(INI_VALUES) == ini_keys - {"config"}


@pytest.mark.parametrize("name", sorted(INI_VALUES))
def test_each_ini_key_in_autotune_yaml_has_the_same_effect(tmp_path: Path, name: str) -> None:
    pytest.importorskip("pytest_benchmark")  # for benchmark_json
    setting = BY_NAME[name]
    unset = resolved(tmp_path)
    from_ini = resolved(tmp_path, ini={setting.ini: INI_VALUES[name]})
    assert from_ini != unset  # the value changes something
    assert resolved(tmp_path, yaml=f"{name}: {INI_VALUES[name]}\n") == from_ini


@pytest.mark.parametrize("name", sorted(INI_VALUES))
def test_each_ini_key_has_an_environment_variable_with_the_same_effect(
    tmp_path: Path, name: str
) -> None:
    pytest.importorskip("pytest_benchmark")
    setting = BY_NAME[name]
    from_ini = resolved(tmp_path, ini={setting.ini: INI_VALUES[name]})
    assert resolved(tmp_path, environ={setting.env: INI_VALUES[name]}) == from_ini


def test_the_sources_follow_the_documented_order(tmp_path: Path) -> None:
    assert PRECEDENCE == ("marker", "command line", "environment", "yaml", "ini")
    everywhere = {
        "command_line": {"autotune_device": "cuda:1"},
        "environ": {"PYTEST_AUTOTUNE_DEVICE": "cuda:2"},
        "yaml": "device: cuda:3\n",
        "ini": {"autotune_device": "cuda:4"},
    }
    assert resolved(tmp_path, **everywhere).device == "cuda:1"
    del everywhere["command_line"]
    assert resolved(tmp_path, **everywhere).device == "cuda:2"
    del everywhere["environ"]
    assert resolved(tmp_path, **everywhere).device == "cuda:3"
    (tmp_path / "autotune.yaml").unlink()
    del everywhere["yaml"]
    settings = resolved(tmp_path, **everywhere)
    assert settings.device == "cuda:4"
    assert settings.for_marker({"device": "cpu"}).device == "cpu"


def test_the_marker_comes_first_for_the_settings_it_names(tmp_path: Path) -> None:
    settings = resolved(
        tmp_path,
        command_line={"autotune_time_limit": "5"},
        yaml="rtol: 0.01\nmax_regression: 0.2\n",
    )
    group = settings.for_marker(
        {"rtol": 0.5, "time_limit": 9, "max_regression": None, "work": object()}
    )
    assert (group.engine.rtol, group.engine.time_limit) == (0.5, 9.0)
    assert group.engine.max_regression == 0.2  # None: the marker does not set it
    assert (settings.engine.rtol, settings.engine.time_limit) == (0.01, 5.0)
    assert settings.for_marker({"key": len}) is settings


def test_a_relative_path_typed_for_the_run_is_from_where_pytest_ran(tmp_path: Path) -> None:
    here = tmp_path / "tests/sub"
    pytest.importorskip("pytest_benchmark")  # for benchmark_json
    settings = resolved(
        tmp_path,
        command_line={"autotune_html": "r.html", "autotune_cache_dir": "mycache"},
        environ={"PYTEST_AUTOTUNE_RECORD": "r.jsonl", "PYTEST_AUTOTUNE_BENCHMARK_JSON": "b.json"},
        invocation_dir=here,
    )
    paths = (settings.html, settings.cache_dir, settings.engine.record, settings.benchmark_json)
    assert paths == (here / "r.html", here / "mycache", here / "r.jsonl", here / "b.json")
    assert settings.for_marker({"rtol": 0.5}).html == here / "r.html"
    assert settings.relative(here / "r.html") == "r.html"
    assert settings.relative(tmp_path / "r.html") == str(tmp_path / "r.html")


def test_a_relative_path_of_the_project_s_files_is_from_the_root_dir(tmp_path: Path) -> None:
    settings = resolved(
        tmp_path,
        ini={"autotune_html": "r.html", "autotune_cache_dir": "mycache"},
        yaml="record: r.jsonl\n",
        invocation_dir=tmp_path / "tests/sub",
    )
    paths = (settings.html, settings.cache_dir, settings.engine.record)
    assert paths == (tmp_path / "r.html", tmp_path / "mycache", tmp_path / "r.jsonl")


def test_the_level_is_carried_in_the_config(tmp_path: Path) -> None:
    settings = resolved(tmp_path, environ={"PYTEST_AUTOTUNE_LEVEL": "minimal"})
    assert settings.engine.level is AutotuneLevel.MINIMAL


def test_a_misspelt_yaml_key_gets_the_nearest_name(tmp_path: Path) -> None:
    with pytest.raises(
        ConfigError, match=r"autotune.yaml: devise: unknown setting; .*did you mean device\?$"
    ):
        resolved(tmp_path, yaml="devise: cpu\n")


def test_an_ini_spelling_in_autotune_yaml_is_pointed_at_its_yaml_name(tmp_path: Path) -> None:
    path = tmp_path / "autotune.yaml"
    path.write_text("autotune_html: report.html\n", encoding="utf-8")
    with pytest.raises(
        ConfigError, match=r": autotune_html: unknown setting; .*did you mean html\?$"
    ):
        load_yaml(path)


def test_a_bad_plugin_value_in_autotune_yaml_names_the_file_and_key(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"autotune.yaml: device: expected auto, cpu, cuda"):
        resolved(tmp_path, yaml="device: 'GPU #1'\n")


def test_the_plugin_settings_in_autotune_yaml_leave_a_programs_config_alone(
    tmp_path: Path,
) -> None:
    path = tmp_path / "autotune.yaml"
    path.write_text("html: report.html\ndevice: cpu\nmax_samples: 4\n", encoding="utf-8")
    assert AutotuneConfig.from_env({}, yaml_path=path).bench.max_samples == 4


def test_the_table_defaults_are_the_configs_defaults() -> None:
    values = {**_fields(AutotuneConfig()), **_fields(BenchConfig()), **_fields(PluginSettings())}
    for setting in SETTINGS:
        if setting.name != "config":
            assert values[setting.name] == setting.default, setting.name


def test_the_environment_names_come_from_the_table() -> None:
    environ = {s.env: "1" for s in SETTINGS if "environment" in s.sources}
    assert set(env_values(environ)) == set(environ)
    assert "PYTEST_AUTOTUNE_CONFIG" not in environ  # --autotune-config names the YAML file


def _fields(value: object) -> dict[str, object]:
    return {f.name: getattr(value, f.name) for f in dataclasses.fields(value)}
