"""The plugin's settings: every source merged by the one rule of `tune/settings.py`.

The sources, first wins (README, "Options"): the marker (per group), the command line, the
`PYTEST_AUTOTUNE_<NAME>` variables, `autotune.yaml`, the ini file, then the defaults. The
plugin's own settings and the engine's come from the same table and the same sources, so
whatever the ini file can set, `autotune.yaml` and a variable can set too.
"""

from __future__ import annotations

import importlib.util
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from pytest_autotune.tune.config import (
    PROJECT_CACHE_DIR,
    YAML_FILE,
    AutotuneConfig,
    ConfigError,
    config_from,
    load_yaml,
)
from pytest_autotune.tune.settings import BY_NAME, SETTINGS, Chosen, Layer, choose, env_values

_BUILTIN_DEVICE = re.compile(r"^(auto|cpu|cuda(:\d+)?)$")

MARKER = "@pytest.mark.autotune"
"""The source name of the marker's settings."""


def is_builtin_device(name: str) -> bool:
    return bool(_BUILTIN_DEVICE.match(name))


@dataclass(frozen=True, slots=True)
class PluginSettings:
    """The plugin's settings, resolved once per session (and per group, with its marker)."""

    tune: bool = False
    update: bool = False
    html: Path | None = None
    benchmark_json: Path | None = None
    device: str = "auto"
    only: bool = False
    """Run only the autotune tests (and tune them)."""
    candidates: bool = False
    """Show every candidate's statistics after the summary."""
    engine: AutotuneConfig = field(default_factory=AutotuneConfig)
    rootpath: Path = Path(".")
    layers: tuple[Layer, ...] = field(default=(), compare=False, repr=False)
    """The sources these settings were resolved from, first wins, for `for_marker`."""

    @property
    def cache_dir(self) -> Path:
        """The root of the cache files: the engine's, else `.autotune`, in the root dir."""
        return self.rootpath / (self.engine.cache_dir or PROJECT_CACHE_DIR)

    def relative(self, path: Path) -> str:
        """A path as the summary shows it: from the root dir, when it is below it."""
        try:
            return str(path.relative_to(self.rootpath))
        except ValueError:
            return str(path)

    def for_marker(self, options: Mapping[str, Any]) -> PluginSettings:
        """These settings under a group's marker (or fixture call), which comes first:
        its `device`, `level`, `rtol`, `atol`, `max_regression` and `time_limit`."""
        given = {
            name: value
            for name, value in options.items()
            if name in BY_NAME and "marker" in BY_NAME[name].sources and value is not None
        }
        if not given:
            return self
        return settings_from_layers(((MARKER, given), *self.layers), self.rootpath)


def settings_from_sources(
    command_line: Mapping[str, object],
    ini: Mapping[str, object],
    environ: Mapping[str, str],
    rootpath: Path,
) -> PluginSettings:
    """Resolve the settings: command line, then environment, then YAML, then ini, then the
    defaults (the marker overrides per group: `PluginSettings.for_marker`). Keys are
    spelled as each source spells them (`autotune_level`, `PYTEST_AUTOTUNE_LEVEL`).

    A bad value raises `ConfigError` naming its source and key.
    """
    layers: list[Layer] = [("command line", command_line), ("", env_values(environ))]
    config_file = choose([("command line", command_line), ("ini", ini)]).get("config")
    yaml_path: Path | None = None
    if config_file is not None:
        yaml_path = rootpath / config_file[0]
    elif (rootpath / YAML_FILE).is_file():
        yaml_path = rootpath / YAML_FILE
    if yaml_path is not None:
        layers.append((os.fspath(yaml_path), load_yaml(yaml_path)))
    layers.append(("ini", ini))
    return settings_from_layers(tuple(layers), rootpath)


def settings_from_layers(layers: tuple[Layer, ...], rootpath: Path) -> PluginSettings:
    """The settings of `layers`, first wins (`choose`), paths taken from `rootpath`."""
    chosen = choose(layers)
    engine = config_from(chosen)
    if isinstance(engine.record, Path) and not engine.record.is_absolute():
        engine = replace(engine, record=rootpath / engine.record)
    if "benchmark_json" in chosen and importlib.util.find_spec("pytest_benchmark") is None:
        # An optional extra, so that its plugin stays out of runs that do not ask for it;
        # said at the start, not after the tuning it would have exported.
        raise ConfigError(
            f"{chosen['benchmark_json'][1]}: needs pytest-benchmark:"
            " pip install 'pytest-autotune[benchmark]'"
        )
    values = _plugin_values(chosen)
    for name in ("html", "benchmark_json"):
        if values[name] is not None:
            values[name] = rootpath / values[name]
    update = bool(values["update"])
    return PluginSettings(
        tune=update or bool(values["tune"]) or bool(values["only"]),
        update=update,
        html=values["html"],
        benchmark_json=values["benchmark_json"],
        device=values["device"],
        only=bool(values["only"]),
        candidates=bool(values["candidates"]),
        engine=engine,
        rootpath=rootpath,
        layers=layers,
    )


def _plugin_values(chosen: Chosen) -> dict[str, Any]:
    """The plugin's own settings: the chosen value, else the table's default."""
    return {
        s.name: chosen[s.name][0] if s.name in chosen else s.default
        for s in SETTINGS
        if s.owner == "plugin"
    }


__all__ = ["PluginSettings", "is_builtin_device", "settings_from_sources"]
