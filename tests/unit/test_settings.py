"""The settings table: every source made from it, one precedence rule, the marker included."""

from __future__ import annotations

import dataclasses
import types
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from pytest_autotune.function_spec import MARKER_OPTIONS
from pytest_autotune.plugin_options import _written_by_others
from pytest_autotune.plugin_settings import PluginSettings, settings_from_sources
from pytest_autotune.tune.config import AutotuneConfig, BenchConfig, ConfigError, load_yaml
from pytest_autotune.tune.key import AutotuneLevel
from pytest_autotune.tune.log import STREAMS
from pytest_autotune.tune.parse import parse_fraction
from pytest_autotune.tune.settings import BY_NAME, MARKER_ONLY, SETTINGS, env_values

# A value for each ini key, as an ini file spells it, unlike the setting's default.
INI_VALUES = {
    "tune": "true",
    "update": "true",
    "prune": "true",
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
    "disable_cache": "true",
    "checks": "true",
    "rtol": "1e-3",
    "atol": "1e-6",
    "log_level": "full",
    "max_regression": "0.1",
    "shipped_match": "exact",
    "adaptive": "false",
    "min_samples": "5",
    "max_samples": "20",
    "short_circuit": "false",
    "short_circuit_samples": "4",
    "speed_factor": "2",
    "hopeless_factor": "6",
    "warmups": "1",
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


def test_a_home_or_a_variable_in_a_path_is_expanded_from_every_source(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # As pytest expands `--junitxml=~/x.xml` and the ini's `cache_dir = $HOME/x`: no shell
    # expands a `~` after `=`, nor anything in an ini file, autotune.yaml or a CI's `env:`.
    home = tmp_path / "home"
    (tmp_path / "project").mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("QA_OUT", str(tmp_path / "out"))
    settings = resolved(
        tmp_path / "project",
        command_line={"autotune_html": "~/r.html"},
        environ={"PYTEST_AUTOTUNE_RECORD": "$QA_OUT/r.jsonl"},
        ini={"autotune_cache_dir": "~/cache"},
        invocation_dir=tmp_path / "project/tests",
        yaml="",
    )
    assert settings.html == home / "r.html"
    assert settings.engine.record == tmp_path / "out/r.jsonl"
    assert settings.cache_dir == home / "cache"
    yaml_set = resolved(tmp_path / "project", yaml="cache_dir: ${QA_OUT}/cache\n")
    assert yaml_set.cache_dir == tmp_path / "out/cache"


def test_the_level_is_carried_in_the_config(tmp_path: Path) -> None:
    settings = resolved(tmp_path, environ={"PYTEST_AUTOTUNE_LEVEL": "minimal"})
    assert settings.engine.level is AutotuneLevel.MINIMAL


def test_a_misspelt_yaml_key_gets_the_nearest_name(tmp_path: Path) -> None:
    with pytest.raises(
        ConfigError, match=r"autotune.yaml: devise: unknown setting; .*did you mean device\?$"
    ):
        resolved(tmp_path, yaml="devise: cpu\n")


@pytest.mark.parametrize("key", ["level", "min_samples", "runner", "cache_dir", "strict"])
def test_a_yaml_value_of_aliases_of_aliases_is_refused_in_one_short_line(
    tmp_path: Path, key: str
) -> None:
    # Six short lines that stand for 9**6 strings: written out whole, the message was 4 MB
    # long, and three lines more hung the run building it.
    lines = ['a0: &a0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    lines += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 9)}]" for i in range(1, 6)]
    yaml = f"{key}:\n" + "".join(f"  {line}\n" for line in lines)
    with pytest.raises(ConfigError, match=rf"^autotune.yaml: {key}: ") as raised:
        resolved(tmp_path, yaml=yaml)
    assert len(str(raised.value)) < 1000 and "\n" not in str(raised.value)


def test_an_ini_spelling_in_autotune_yaml_is_pointed_at_its_yaml_name(tmp_path: Path) -> None:
    path = tmp_path / "autotune.yaml"
    path.write_text("autotune_html: report.html\n", encoding="utf-8")
    with pytest.raises(
        ConfigError, match=r": autotune_html: unknown setting; .*did you mean html\?$"
    ):
        load_yaml(path)


@pytest.mark.parametrize("key", ["config", "autotune_config"])
def test_the_config_key_in_autotune_yaml_is_pointed_at_the_option_that_names_the_file(
    tmp_path: Path, key: str
) -> None:
    # The file cannot name itself; "did you mean config?" named the key just written, and
    # the list of known settings had it too.
    path = tmp_path / "autotune.yaml"
    path.write_text(f"{key}: other.yaml\n", encoding="utf-8")
    with pytest.raises(ConfigError) as info:
        load_yaml(path)
    message = str(info.value)
    assert message.startswith(f"{path}: {key}: unknown setting; known settings: ")
    assert message.endswith("; did you mean --autotune-config?")
    assert "config" not in message.split("known settings: ")[1].split(";")[0].split(", ")


def test_a_bad_value_in_autotune_yaml_names_the_file_from_where_pytest_ran(
    tmp_path: Path,
) -> None:
    # As the README's example reads, and as every other path in a message is shown.
    with pytest.raises(ConfigError, match=r"^autotune.yaml: max_samples: expected an"):
        resolved(tmp_path, yaml="max_samples: 0\n")
    with pytest.raises(ConfigError, match=r"^autotune.yaml: levl: unknown setting; "):
        resolved(tmp_path, yaml="levl: full\n")
    with pytest.raises(ConfigError) as info:  # from below the root dir: whole
        resolved(tmp_path, invocation_dir=tmp_path / "tests", yaml="levl: full\n")
    assert str(info.value).startswith(f"{tmp_path / 'autotune.yaml'}: levl: unknown setting")


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


def test_the_records_help_names_the_streams_it_takes_beside_a_path() -> None:
    # `pytest --help` said "append JSON-lines records to this path" alone: a CI log that
    # wants the records had no way to learn of `--autotune-record=stdout` but the README.
    assert all(stream in BY_NAME["record"].help for stream in STREAMS)


def _fields(value: object) -> dict[str, object]:
    return {f.name: getattr(value, f.name) for f in dataclasses.fields(value)}


@pytest.mark.parametrize("value", ["10", 10, 1.5])
def test_a_max_regression_past_one_is_refused_as_not_a_fraction(value: object) -> None:
    # 10, meant as 10%, read as 1000% and turned the gate off without a word.
    with pytest.raises(ConfigError, match=r"expected a fraction from 0 to 1 \(0.1 for 10%\)"):
        parse_fraction(value, "autotune.yaml: max_regression")
    assert parse_fraction("1", "x") == 1.0
    assert parse_fraction(0.05, "x") == 0.05


def test_a_numpy_scalar_is_a_number_for_every_numeric_setting(tmp_path: Path) -> None:
    # `rtol=np.finfo(np.float32).eps * 8` is an np.float32: it was refused as not a number.
    settings = resolved(tmp_path).for_marker(
        {"rtol": np.float32(0.5), "atol": np.float64(1e-6), "time_limit": np.int64(3)}
    )
    assert settings.engine.rtol == 0.5
    assert type(settings.engine.rtol) is float
    assert settings.engine.atol == 1e-6
    assert settings.engine.time_limit == 3.0
    assert parse_fraction(np.float32(0.25), "x") == 0.25


@pytest.mark.parametrize("value", ["10%", "2.5 %"])
def test_a_max_regression_in_percent_is_asked_for_as_a_fraction(value: str) -> None:
    # "10%" got "expected a number >= 0"; then "10" got the fraction's message: two tries.
    with pytest.raises(ConfigError, match=r"expected a fraction from 0 to 1 \(0.1 for 10%\)"):
        parse_fraction(value, "PYTEST_AUTOTUNE_MAX_REGRESSION")


@pytest.mark.parametrize(
    ("command_line", "ini", "where"),
    [
        ({"autotune_record": "out"}, {}, "command line: autotune_record"),
        ({}, {"autotune_html": "out"}, "ini: autotune_html"),
    ],
)
def test_an_output_file_that_is_a_folder_stops_the_run_at_its_start(
    tmp_path: Path, command_line: dict[str, str], ini: dict[str, str], where: str
) -> None:
    # Written at the end of the run: a folder was found only after all the tuning.
    (tmp_path / "out").mkdir()
    with pytest.raises(ConfigError, match=f"^{where}: out is a folder; give the path of a file"):
        settings_from_sources(command_line, ini, {}, tmp_path, tmp_path)
    settings_from_sources({"autotune_record": "out/r.jsonl"}, {}, {}, tmp_path, tmp_path)


@pytest.mark.parametrize(
    ("command_line", "ini", "where"),
    [
        ({"autotune_html": ".autotune/cpu-x-2t/t.json"}, {}, "command line: autotune_html"),
        ({}, {"autotune_record": "caches/cpu-x-2t/r.jsonl"}, "ini: autotune_record"),
    ],
)
def test_an_output_file_among_the_baselines_stops_the_run_at_its_start(
    tmp_path: Path, command_line: dict[str, str], ini: dict[str, str], where: str
) -> None:
    # Written at the end of the run over a committed cache file: the HTML report replaced
    # a baseline, the records were appended to one, and the next gate had none.
    folder = "caches" if ini else ".autotune"
    ini = {**ini, "autotune_cache_dir": "caches"} if ini else ini
    tuning = {**command_line, "autotune": True}
    with pytest.raises(ConfigError, match=f"^{where}: .* is in a folder of the cache folder"):
        settings_from_sources(tuning, ini, {}, tmp_path, tmp_path)
    # Beside the device folders, or anywhere else, it is written as asked; and a plain run,
    # which writes none of ours, is not stopped.
    settings_from_sources(
        {"autotune": True, "autotune_record": f"{folder}/r.jsonl"}, ini, {}, tmp_path, tmp_path
    )
    settings_from_sources(command_line, ini, {}, tmp_path, tmp_path)


def test_two_outputs_naming_one_file_stop_a_tuning_run_at_its_start(tmp_path: Path) -> None:
    # Written at the end one after the other, the last replaced the first without a word.
    with pytest.raises(
        ConfigError,
        match=r"^ini: autotune_html and command line: autotune_record both name out\.txt: one"
        r" would replace the other",
    ):
        settings_from_sources(
            {"autotune": True, "autotune_record": "out.txt"},
            {"autotune_html": "out.txt"},
            {},
            tmp_path,
            tmp_path,
        )
    with pytest.raises(
        ConfigError,
        match=r"^command line: autotune_benchmark_json and --benchmark-json both name b\.json",
    ):
        settings_from_sources(
            {"autotune": True, "autotune_benchmark_json": "b.json"},
            {},
            {},
            tmp_path,
            tmp_path,
            written_by_others={"--benchmark-json": tmp_path / "b.json"},
        )
    # A plain run writes none of ours: a project's ini may name them for its tuning runs.
    settings_from_sources(
        {"autotune_record": "out.txt"}, {"autotune_html": "out.txt"}, {}, tmp_path, tmp_path
    )


def test_pytest_benchmarks_json_is_read_as_a_path_or_as_the_open_file_of_its_older_releases(
    tmp_path: Path,
) -> None:
    # pytest-benchmark before 5.0 gives `--benchmark-json` as a file it opened (argparse's
    # FileType); dividing a Path by it stopped every run that set the option with an
    # INTERNALERROR. Since 5.0 it is a Path, whose `name` would be its last part only.
    def config(value: object) -> Any:
        return types.SimpleNamespace(
            getoption=lambda name, default=None: value,
            invocation_params=types.SimpleNamespace(dir=tmp_path),
        )

    with (tmp_path / "old.json").open("wb") as opened:
        assert _written_by_others(config(opened)) == {"--benchmark-json": tmp_path / "old.json"}
    nested = Path("out", "new.json")
    assert _written_by_others(config(nested)) == {"--benchmark-json": tmp_path / nested}
    assert _written_by_others(config(None)) == {}


@pytest.mark.parametrize("flag", ["autotune_update", "autotune_prune"])
def test_an_update_with_the_cache_disabled_stops_the_run_at_its_start(
    tmp_path: Path, flag: str
) -> None:
    # Written anyway, the update replaced each entry without reading it (its earlier
    # sessions gone) in a file said to be neither read nor written.
    spelled = "--" + flag.replace("_", "-")
    with pytest.raises(
        ConfigError,
        match=f"^{spelled} writes the cache files, and PYTEST_AUTOTUNE_DISABLE_CACHE says",
    ):
        resolved(
            tmp_path,
            command_line={flag: True},
            environ={"PYTEST_AUTOTUNE_DISABLE_CACHE": "1"},
        )
    assert resolved(tmp_path, environ={"PYTEST_AUTOTUNE_DISABLE_CACHE": "1"}).engine.disable_cache


@pytest.mark.parametrize("option", ["check_output", "key", "groups"])
def test_a_marker_option_in_autotune_yaml_or_a_variable_says_where_it_goes(
    tmp_path: Path, option: str
) -> None:
    # "unknown setting" and the list of settings, none near: `check_output: false`, meant
    # for every test, left the user looking for its spelling among the settings (where
    # `checks` reads as the nearest, and is another thing; `groups` read "did you mean
    # warmups?").
    hint = f"; {option} is an option of @pytest.mark.autotune"
    with pytest.raises(ConfigError) as info:
        resolved(tmp_path, yaml=f"{option}: 1\n")
    assert str(info.value).startswith(f"autotune.yaml: {option}: unknown setting; ")
    assert str(info.value).endswith(f"{hint}, given for each test; not a setting of the run")
    with pytest.raises(ConfigError) as info:
        env_values({f"PYTEST_AUTOTUNE_{option.upper()}": "1"})
    assert str(info.value).endswith(f"{hint}, given for each test; not a setting of the run")


def test_the_marker_options_are_the_marker_only_ones_and_the_settings_a_marker_sets() -> None:
    of_markers = {s.name for s in SETTINGS if "marker" in s.sources}
    # `candidates` is both: the marker's candidates, and --autotune-candidates' setting.
    assert set(MARKER_OPTIONS) == {"candidates", *MARKER_ONLY, *of_markers}
    assert not set(MARKER_ONLY) & set(BY_NAME)
