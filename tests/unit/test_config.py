"""Configuration: defaults, validation, YAML, environment variables and precedence."""

from __future__ import annotations

import inspect
import re
from pathlib import Path

import pytest

from pytest_autotune.tune.config import (
    AutotuneConfig,
    BenchConfig,
    ConfigError,
    load_yaml,
    resolve,
)
from pytest_autotune.tune.key import AutotuneLevel
from pytest_autotune.tune.log import AutotuneLogLevel
from pytest_autotune.tune.settings import KNOWN_VARIABLES, env_values


def test_the_defaults_are_the_seeds():
    bench = BenchConfig()
    assert (bench.adaptive, bench.min_samples, bench.max_samples) == (True, 3, 10)
    assert (bench.short_circuit_samples, bench.speed_factor, bench.warmups) == (2, 1.5, 3)
    config = AutotuneConfig()
    assert config.cache_dir is None  # the default place: see test_shipped.py
    assert config.shipped_match == "class"
    assert config.level is AutotuneLevel.BALANCED
    assert config.log_level is AutotuneLogLevel.DISABLED
    assert (config.disable_cache, config.checks, config.strict) == (False, False, False)
    assert (config.rtol, config.atol, config.record, config.max_regression) == (
        1e-5,
        1e-8,
        None,
        None,
    )
    assert config.bench == bench


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"min_samples": 0}, "min_samples: expected an integer >= 1, got 0"),
        ({"max_samples": 2}, "max_samples (2) is below min_samples (3)"),
        ({"speed_factor": 0.99}, "speed_factor: expected a number >= 1, got 0.99"),
        ({"warmups": -1}, "warmups: expected an integer >= 0, got -1"),
        ({"min_samples": 4.5}, "min_samples: expected an integer >= 1, got 4.5"),
        (
            {"short_circuit_samples": True},
            "short_circuit_samples: expected an integer >= 1, got True",
        ),
    ],
)
def test_a_bench_config_built_in_code_is_validated(settings, message):
    with pytest.raises(ConfigError) as info:
        BenchConfig(**settings)
    assert str(info.value) == message


def test_a_whole_float_is_an_integer_as_pytest_9_2_reads_an_ini_files_number():
    assert BenchConfig(min_samples=4.0).min_samples == 4  # type: ignore[arg-type]


def test_an_autotune_config_built_in_code_is_validated_and_normalised():
    config = AutotuneConfig(cache_dir="cache", level="full", record="stdout")  # type: ignore[arg-type]
    assert config.cache_dir == Path("cache")
    assert config.level is AutotuneLevel.FULL
    assert config.record == "stdout"
    with pytest.raises(ConfigError, match=r"^rtol: expected a number >= 0, got -1$"):
        AutotuneConfig(rtol=-1)


def test_earlier_sources_win():
    config = resolve(
        [
            ("command line", {"max_samples": 20}),
            ("autotune.yaml", {"max_samples": 5, "min_samples": 4, "checks": True}),
        ]
    )
    assert config.bench.max_samples == 20
    assert config.bench.min_samples == 4
    assert config.checks is True


def test_a_none_value_means_the_source_does_not_set_it():
    config = resolve([("command line", {"level": None}), ("ini", {"level": "minimal"})])
    assert config.level is AutotuneLevel.MINIMAL


def test_keys_may_be_spelled_as_their_source_spells_them():
    config = resolve(
        [
            ("", {"PYTEST_AUTOTUNE_MIN_SAMPLES": "4"}),
            ("command line", {"--autotune-max-samples": "12"}),
            ("ini", {"autotune_cache_dir": "baselines"}),
        ]
    )
    assert (config.bench.min_samples, config.bench.max_samples) == (4, 12)
    assert config.cache_dir == Path("baselines")


def test_a_bad_environment_value_names_the_variable():
    with pytest.raises(ConfigError) as info:
        resolve([("", env_values({"PYTEST_AUTOTUNE_MAX_SAMPLES": "abc"}))])
    assert str(info.value) == "PYTEST_AUTOTUNE_MAX_SAMPLES: expected an integer >= 1, got 'abc'"


def test_a_bad_file_value_names_the_file_and_key():
    with pytest.raises(ConfigError) as info:
        resolve([("autotune.yaml", {"min_samples": 0})])
    assert str(info.value) == "autotune.yaml: min_samples: expected an integer >= 1, got 0"


@pytest.mark.parametrize(("key", "value"), [("runner", True), ("runner", 1.1), ("device", False)])
def test_a_name_yaml_read_as_a_boolean_or_a_float_is_refused_not_filed_under_its_repr(key, value):
    # `runner: yes` ran under the runner "true", `runner: 1.10` under "1.1": the baselines
    # went to another folder without a word. `device: no` was refused as 'false'.
    with pytest.raises(ConfigError) as info:
        resolve([("autotune.yaml", {key: value})])
    assert str(info.value).startswith(f"autotune.yaml: {key}: expected ")
    assert str(info.value).endswith(f", got {value!r}")


def test_a_bad_value_fails_even_when_a_higher_source_overrides_it():
    with pytest.raises(ConfigError, match=r"^autotune.yaml: rtol: expected a number >= 0"):
        resolve([("command line", {"rtol": 0.1}), ("autotune.yaml", {"rtol": "loose"})])


def test_an_unknown_key_is_an_error_listing_the_known_ones():
    with pytest.raises(
        ConfigError, match=r"^ini: autotune_samples: unknown setting; known settings: adaptive, "
    ):
        resolve([("ini", {"autotune_samples": 3})])


def test_the_sample_range_names_where_each_bound_came_from():
    with pytest.raises(ConfigError) as info:
        resolve([("", {"PYTEST_AUTOTUNE_MAX_SAMPLES": "4"}), ("autotune.yaml", {"min_samples": 5})])
    assert str(info.value) == (
        "max_samples (4, from PYTEST_AUTOTUNE_MAX_SAMPLES) is below "
        "min_samples (5, from autotune.yaml: min_samples)"
    )
    with pytest.raises(ConfigError) as info:
        resolve([("autotune.yaml", {"min_samples": 11})])
    assert str(info.value) == (
        "max_samples (10, the default) is below min_samples (11, from autotune.yaml: min_samples)"
    )


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("1", True),
        ("true", True),
        ("Yes", True),
        (" on ", True),
        ("0", False),
        ("FALSE", False),
        ("no", False),
        ("off", False),
    ],
)
def test_booleans_accept_the_usual_words(text, expected):
    assert resolve([("", {"PYTEST_AUTOTUNE_DISABLE_CACHE": text})]).disable_cache is expected


def test_a_word_that_is_not_a_boolean_is_refused():
    with pytest.raises(ConfigError) as info:
        resolve([("", {"PYTEST_AUTOTUNE_CHECKS": "maybe"})])
    assert str(info.value) == (
        "PYTEST_AUTOTUNE_CHECKS: expected a boolean (1/0, true/false, yes/no, on/off), got 'maybe'"
    )


def test_levels_are_parsed_and_a_bad_one_lists_the_choices():
    config = resolve(
        [("", {"PYTEST_AUTOTUNE_LEVEL": "Extensive", "PYTEST_AUTOTUNE_LOG_LEVEL": "full"})]
    )
    assert config.level is AutotuneLevel.EXTENSIVE
    assert config.log_level is AutotuneLogLevel.FULL
    with pytest.raises(ConfigError) as info:
        resolve([("", {"PYTEST_AUTOTUNE_LOG_LEVEL": "loud"})])
    assert str(info.value) == (
        "PYTEST_AUTOTUNE_LOG_LEVEL: log level must be one of disabled, minimal, full, got 'loud'"
    )


def test_the_shipped_match_is_read_in_any_case_as_the_levels_are():
    # `PYTEST_AUTOTUNE_LEVEL=Full` was read, `PYTEST_AUTOTUNE_SHIPPED_MATCH=Exact` refused.
    config = resolve([("", {"PYTEST_AUTOTUNE_SHIPPED_MATCH": "Exact"})])
    assert config.shipped_match == "exact"
    assert resolve([("autotune.yaml", {"shipped_match": " CLASS "})]).shipped_match == "class"
    with pytest.raises(ConfigError) as info:
        resolve([("", {"PYTEST_AUTOTUNE_SHIPPED_MATCH": "nearest"})])
    assert str(info.value) == (
        "PYTEST_AUTOTUNE_SHIPPED_MATCH: expected exact or class, got 'nearest'"
    )


def test_the_record_sink_is_a_path_or_a_standard_stream():
    assert resolve([("", {"PYTEST_AUTOTUNE_RECORD": "stderr"})]).record == "stderr"
    assert resolve([("", {"PYTEST_AUTOTUNE_RECORD": "out/records.jsonl"})]).record == Path(
        "out/records.jsonl"
    )


def test_a_path_starting_with_a_tilde_is_in_the_home_directory(monkeypatch, tmp_path):
    """`~` comes unexpanded from a Dockerfile's ENV, a systemd unit or a YAML file: taken
    literally it made a folder named `~` in the working directory of the user's program."""
    monkeypatch.setenv("HOME", str(tmp_path))
    config = resolve(
        [("", {"PYTEST_AUTOTUNE_CACHE_DIR": "~/tuned", "PYTEST_AUTOTUNE_RECORD": "~/r.jsonl"})]
    )
    assert (config.cache_dir, config.record) == (tmp_path / "tuned", tmp_path / "r.jsonl")


def test_max_regression_is_a_non_negative_fraction():
    assert resolve([("ini", {"autotune_max_regression": "0.05"})]).max_regression == 0.05
    # One message for every bad value, which says what is asked (a fraction, not a percent).
    for bad in (-0.1, "abc", 5, "nan"):
        with pytest.raises(
            ConfigError,
            match=rf"^ini: max_regression: expected a fraction from 0 to 1 \(0.1 for 10%\),"
            rf" got {bad!r}$",
        ):
            resolve([("ini", {"max_regression": bad})])


def test_a_non_finite_number_is_refused():
    with pytest.raises(ConfigError, match=r"^speed_factor: expected a number >= 1, got 'inf'$"):
        resolve([("", {"speed_factor": "inf"})])


def test_the_environment_reads_only_non_empty_variables_of_its_prefix():
    environ = {
        "PYTEST_AUTOTUNE_CACHE_DIR": "/tmp/cache",
        "PYTEST_AUTOTUNE_RECORD": "",
        "HOME": "/root",
    }
    assert env_values(environ) == {"PYTEST_AUTOTUNE_CACHE_DIR": "/tmp/cache"}


@pytest.mark.parametrize(
    ("name", "hint"),
    [
        ("PYTEST_AUTOTUNE_LEVL", "; did you mean PYTEST_AUTOTUNE_LEVEL?"),
        ("PYTEST_AUTOTUNE_AUTOTUNE_HTML", "; did you mean PYTEST_AUTOTUNE_HTML?"),
        ("PYTEST_AUTOTUNE_CONFIG", "; did you mean --autotune-config?"),
        # The prefix alone would make every name near: nothing is near this one.
        ("PYTEST_AUTOTUNE_SOMETHING_ELSE", ""),
    ],
)
def test_a_variable_of_the_prefix_that_names_no_setting_is_refused(name, hint):
    with pytest.raises(ConfigError) as info:
        env_values({name: "full", "PYTEST_AUTOTUNE_LEVEL": "full"})
    assert str(info.value) == f"{name}: unknown setting; known settings: {KNOWN_VARIABLES}{hint}"


def test_yaml_settings_are_loaded_with_their_native_types(tmp_path):
    path = tmp_path / "autotune.yaml"
    path.write_text("min_samples: 4\nchecks: yes\nlevel: minimal\n", encoding="utf-8")
    assert load_yaml(path) == {"min_samples": 4, "checks": True, "level": "minimal"}


def test_an_empty_yaml_file_sets_nothing(tmp_path):
    path = tmp_path / "autotune.yaml"
    path.write_text("# nothing yet\n", encoding="utf-8")
    assert load_yaml(path) == {}


def test_a_missing_yaml_file_given_explicitly_is_an_error(tmp_path):
    path = tmp_path / "nope.yaml"
    with pytest.raises(ConfigError) as info:
        load_yaml(path)
    assert str(info.value) == f"{path}: no such config file"


def test_bad_yaml_names_the_file(tmp_path):
    path = tmp_path / "autotune.yaml"
    path.write_text("min_samples: [1,\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=rf"^{re.escape(str(path))}: invalid YAML: "):
        load_yaml(path)


def test_bad_yaml_is_one_line_with_the_line_and_column_in_the_file(tmp_path):
    # PyYAML's own text ran over six lines and named the place `in "<unicode string>"`.
    path = tmp_path / "autotune.yaml"
    path.write_text("level: full\nmin_samples: [1,\n", encoding="utf-8")
    with pytest.raises(ConfigError) as info:
        load_yaml(path)
    assert str(info.value) == (
        f"{path}: invalid YAML: line 3, column 1: expected the node content, but found"
        " '<stream end>' (while parsing a flow node)"
    )


def test_a_yaml_key_given_twice_is_refused_with_both_lines(tmp_path):
    # PyYAML kept the last value silently: a setting written twice took the one below.
    path = tmp_path / "autotune.yaml"
    path.write_text("time_limit: 5\nlevel: full\ntime_limit: 60\n", encoding="utf-8")
    with pytest.raises(ConfigError) as info:
        load_yaml(path)
    assert str(info.value) == (
        f"{path}: invalid YAML: line 3, column 1: 'time_limit' is given twice (lines 1 and 3)"
    )
    path.write_text("time_limit: 5\nlevel: full\n", encoding="utf-8")
    assert load_yaml(path) == {"time_limit": 5, "level": "full"}


def test_yaml_that_is_not_a_mapping_is_refused(tmp_path):
    path = tmp_path / "autotune.yaml"
    path.write_text("- min_samples\n", encoding="utf-8")
    with pytest.raises(ConfigError) as info:
        load_yaml(path)
    assert str(info.value) == f"{path}: expected a mapping of settings, got list"


def test_an_unknown_yaml_key_names_the_file_and_key(tmp_path):
    path = tmp_path / "autotune.yaml"
    path.write_text("min_sample: 4\n", encoding="utf-8")
    with pytest.raises(
        ConfigError,
        match=rf"^{re.escape(str(path))}: min_sample: unknown setting; known settings: ",
    ):
        load_yaml(path)


def test_yaml_runs_no_code(tmp_path):
    path = tmp_path / "autotune.yaml"
    path.write_text("cache_dir: !!python/object/apply:os.getcwd []\n", encoding="utf-8")
    with pytest.raises(ConfigError, match=rf"^{re.escape(str(path))}: invalid YAML: "):
        load_yaml(path)


def test_the_environment_wins_over_the_yaml_file_in_the_working_directory(tmp_path, monkeypatch):
    (tmp_path / "autotune.yaml").write_text(
        "cache_dir: from-yaml\nchecks: true\n", encoding="utf-8"
    )
    monkeypatch.chdir(tmp_path)
    config = AutotuneConfig.from_env({"PYTEST_AUTOTUNE_CACHE_DIR": "from-env"})
    assert config.cache_dir == Path("from-env")
    assert config.checks is True


def test_without_a_yaml_file_the_environment_alone_decides(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert AutotuneConfig.from_env({"PYTEST_AUTOTUNE_DISABLE_CACHE": "1"}).disable_cache is True


def test_from_env_reads_the_process_environment_at_the_call_and_shows_none_of_it(
    tmp_path, monkeypatch
):
    # A default of `os.environ` itself printed every variable, secrets too, in help().
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PYTEST_AUTOTUNE_CACHE_DIR", "set-after-import")
    monkeypatch.setenv("MY_SECRET_TOKEN", "hunter2")
    assert AutotuneConfig.from_env().cache_dir == Path("set-after-import")
    assert "hunter2" not in str(inspect.signature(AutotuneConfig.from_env))


def test_an_explicit_yaml_path_must_exist(tmp_path):
    with pytest.raises(ConfigError, match="no such config file"):
        AutotuneConfig.from_env({}, yaml_path=tmp_path / "missing.yaml")


def test_a_nested_bench_block_in_yaml_says_the_settings_go_at_the_top_level(tmp_path):
    # `AutotuneConfig(bench=BenchConfig(min_samples=4))` in code suggests the block; the
    # file said only "bench: unknown setting".
    path = tmp_path / "autotune.yaml"
    path.write_text("bench:\n  min_samples: 4\n", encoding="utf-8")
    with pytest.raises(ConfigError) as info:
        AutotuneConfig.from_env({}, yaml_path=path)
    assert str(info.value) == (
        f"{path}: bench: the sampling settings go at the top level of the file, as every"
        " setting does ('min_samples: ...', not 'bench:' with 'min_samples' under it)"
    )


def test_a_bad_yaml_value_read_through_from_env_names_the_file(tmp_path):
    path = tmp_path / "autotune.yaml"
    path.write_text("speed_factor: 0.5\n", encoding="utf-8")
    with pytest.raises(ConfigError) as info:
        AutotuneConfig.from_env({}, yaml_path=path)
    assert str(info.value) == f"{path}: speed_factor: expected a number >= 1, got 0.5"


def test_a_refused_variable_lists_only_the_settings_a_variable_sets() -> None:
    # The list named `config`, so PYTEST_AUTOTUNE_CONFIG read "unknown setting; known
    # settings: ..., config, ...": only --autotune-config names the YAML file.
    with pytest.raises(ConfigError) as info:
        env_values({"PYTEST_AUTOTUNE_CONFIG": "other.yaml"})
    known = str(info.value).split("known settings: ", 1)[1].split(";")[0].split(", ")
    assert "config" not in known
    assert "level" in known and "tune" in known


def test_a_misspelt_variable_is_named_with_the_nearest_setting() -> None:
    environ = {"PYTEST_AUTOTUNE_MAX_SAMPLE": "3", "PYTEST_AUTOTUNE_RTOL": "1e-3", "HOME": "/root"}
    with pytest.raises(ConfigError) as info:
        env_values(environ)
    assert str(info.value) == (
        f"PYTEST_AUTOTUNE_MAX_SAMPLE: unknown setting; known settings:"
        f" {KNOWN_VARIABLES}; did you mean PYTEST_AUTOTUNE_MAX_SAMPLES?"
    )


def test_a_time_limit_must_be_a_positive_number() -> None:
    assert resolve([("", {"PYTEST_AUTOTUNE_TIME_LIMIT": "2.5"})]).time_limit == 2.5
    with pytest.raises(ConfigError, match="PYTEST_AUTOTUNE_TIME_LIMIT: expected a number > 0"):
        resolve([("", {"PYTEST_AUTOTUNE_TIME_LIMIT": "0"})])
