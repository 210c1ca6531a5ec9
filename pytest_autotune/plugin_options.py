"""The plugin's command-line options and ini keys: registered with pytest, and read, with
every other source (`plugin_settings`), into the run's settings."""

from __future__ import annotations

import contextlib
import os
from dataclasses import replace
from pathlib import Path

import pytest

from pytest_autotune.plugin_settings import (
    OVERRIDES,
    PluginSettings,
    settings_from_sources,
    shown_from,
)
from pytest_autotune.tune.config import ConfigError
from pytest_autotune.tune.settings import SETTINGS, Setting

_OPTIONS = tuple(s for s in SETTINGS if "command line" in s.sources)
_INI_KEYS = tuple(s for s in SETTINGS if "ini" in s.sources)


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("autotune", "autotune: tune, check and gate several implementations")
    for setting in _OPTIONS:
        if setting.kind == "bool":
            group.addoption(setting.flag, action="store_true", default=None, help=setting.help)
        else:
            group.addoption(setting.flag, default=None, metavar=setting.metavar, help=setting.help)
    for setting in _INI_KEYS:
        _add_ini(parser, setting)


def _add_ini(parser: pytest.Parser, setting: Setting) -> None:
    """Register an ini key. A number is `str | float` where pytest takes a union (9.2):
    a native `[tool.pytest]` table's `autotune_time_limit = 5` is an int, which a string
    key refuses, and `"5"`, as older pytest needed it, stays a string; our parser reads
    both. Older pytest takes strings only (quote numbers in a native table there). The
    string comes first, so that an ini file's text reaches the parser as written: as
    `float | str`, `autotune_max_samples = 0` was refused as "got 0.0"."""
    if setting.numeric and pytest.version_tuple >= (9, 2):
        with contextlib.suppress(AssertionError, TypeError, ValueError):
            parser.addini(setting.ini, help=setting.help, type=str | float, default=None)
            return
    # An unset bool is None, not False: `autotune_adaptive = false` must read as set, since
    # its default is True (pytest 7 gives [] for it, read as unset too).
    default = None if setting.kind == "bool" else ""
    parser.addini(setting.ini, help=setting.help, type=setting.kind, default=default)


def command_line(config: pytest.Config, *, typed_only: bool = False) -> dict[str, object]:
    """The options of the command line, by ini key; None where not given. `typed_only`:
    those typed for this run, without the ini file's `addopts` and `PYTEST_ADDOPTS`, which
    a project sets for every run, plain ones included."""
    typed = [str(arg) for arg in config.invocation_params.args]

    def given(flag: str) -> bool:
        return not typed_only or any(a == flag or a.startswith(f"{flag}=") for a in typed)

    return {s.ini: config.getoption(s.flag) for s in _OPTIONS if given(s.flag)}


def _written_by_others(config: pytest.Config) -> dict[str, Path]:
    """The files other plugins write at the end of the run: pytest-benchmark's JSON, a
    path taken from the directory pytest was run in."""
    benchmark_json = config.getoption("benchmark_json", None)
    if benchmark_json is None:
        return {}
    # pytest-benchmark before 5.0 opens the file as it parses the option (argparse's
    # FileType): an open file, whose `name` is the path as given. (A Path's `name` is
    # only its last part: a path is taken as it is.)
    if not isinstance(benchmark_json, (str, os.PathLike)):
        benchmark_json = benchmark_json.name
    return {"--benchmark-json": config.invocation_params.dir / benchmark_json}


def settings_of(config: pytest.Config) -> PluginSettings:
    """The session's settings from every source (`pytest_autotune.plugin_settings`)."""
    try:
        ini = {s.ini: _ini_value(config, s.ini) for s in _INI_KEYS}
        overridden = _overridden(config)
        settings = settings_from_sources(
            command_line=command_line(config),
            ini={name: value for name, value in ini.items() if name not in overridden},
            environ=os.environ,
            rootpath=config.rootpath,
            invocation_dir=config.invocation_params.dir,
            written_by_others=_written_by_others(config),
            ini_source=_ini_source(config),
            overrides={name: value for name, value in ini.items() if name in overridden},
        )
    except ConfigError as exc:
        raise pytest.UsageError(f"pytest-autotune: {exc}") from None
    unconfigured = (
        config.inipath is None
        and not config.getoption("rootdir", None)
        and not (config.rootpath / "setup.py").is_file()
    )
    above = (
        (folder / settings.cache_dir.name for folder in config.rootpath.parents)
        if unconfigured and settings.cache_dir.parent == config.rootpath
        else ()
    )
    return replace(settings, cache_above=next((p for p in above if p.is_dir()), None))


def _overridden(config: pytest.Config) -> frozenset[str]:
    """The ini keys given with pytest's `-o NAME=VALUE` (`--override-ini`), whose values
    `getini` returns in place of the file's."""
    given = getattr(config.option, "override_ini", None) or ()
    return frozenset(item.split("=", 1)[0] for item in given if "=" in item)


def _ini_source(config: pytest.Config) -> str:
    """How messages name the ini file pytest read (`pyproject.toml`, `tox.ini`), as seen
    from where pytest was run; "ini" where it read none."""
    path = config.inipath
    return "ini" if path is None else shown_from(path, config.invocation_params.dir)


def _ini_value(config: pytest.Config, name: str) -> object:
    try:
        value = config.getini(name)
    except (ValueError, pytest.UsageError) as exc:
        # pytest parses a bool key itself and says only "invalid truth value 'maybe'"
        # (pytest 7 with a traceback through this plugin): name the key and the file, and
        # the words it takes. A native TOML table's type errors name the key already.
        if name in str(exc):
            raise
        words = " (true or false: yes/no, on/off, 1/0)" if "truth value" in str(exc) else ""
        source = OVERRIDES if name in _overridden(config) else _ini_source(config)
        raise ConfigError(f"{source}: {name}: {exc}{words}") from None
    except TypeError as exc:
        # pytest 9.0 and 9.1 refuse a native `[tool.pytest]` value of another type
        # (`autotune_strict = "true"`) with a TypeError, which reached the user as a
        # traceback through this plugin; 9.2 raises a usage error of the same words.
        raise pytest.UsageError(str(exc)) from None
    # An unset string ini is "", an unset bool or number None (pytest 7: an unset bool
    # []): each means "not set here". False and 0 are values (0 one the parser may refuse
    # by name).
    return None if value is None or value in ("", []) else value
