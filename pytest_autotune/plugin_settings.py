"""The plugin's settings: every source merged by the one rule of `tune/settings.py`.

The sources, first wins (README, "Options"): the marker (per group), the command line, the
`PYTEST_AUTOTUNE_<NAME>` variables, `autotune.yaml`, the ini file, then the defaults. The
plugin's own settings and the engine's come from the same table and the same sources, so
whatever the ini file can set, `autotune.yaml` and a variable can set too.

A relative path is taken as pytest takes its own: one typed for this run (the command line,
a variable) from the directory pytest was run in, as `--junitxml` is; one committed with
the project (the ini file, `autotune.yaml`) from the root dir, as the ini's `cache_dir` is.
"""

from __future__ import annotations

import importlib.util
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
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
from pytest_autotune.tune.settings import (
    BY_NAME,
    SETTINGS,
    Chosen,
    Layer,
    choose,
    env_values,
    setting_named,
)

_BUILTIN_DEVICE = re.compile(r"^(auto|cpu|cuda(:\d+)?)$")

MARKER = "@pytest.mark.autotune"
"""The source name of the marker's settings."""

OVERRIDES = "command line -o"
"""The source name of the ini keys given with pytest's `-o NAME=VALUE` (`--override-ini`)."""


def is_builtin_device(name: str) -> bool:
    return bool(_BUILTIN_DEVICE.match(name))


def unserved_device(name: str) -> str:
    """What is said of a device name that is not built in and that no
    `pytest_autotune_client` hook serves, in a plain run and in a tuning alike."""
    return (
        f"device {name!r}: no pytest_autotune_client hook provides it, and it is not"
        " auto, cpu, cuda or cuda:N"
    )


@dataclass(frozen=True, slots=True)
class PluginSettings:
    """The plugin's settings, resolved once per session (and per group, with its marker)."""

    tune: bool = False
    update: bool = False
    prune: bool = False
    """Drop the stale cache entries an update names (`pytest_autotune.stale`)."""
    html: Path | None = None
    benchmark_json: Path | None = None
    device: str = "auto"
    only: bool = False
    """Run only the autotune tests (and tune them)."""
    candidates: bool = False
    """Show every candidate's statistics after the summary."""
    engine: AutotuneConfig = field(default_factory=AutotuneConfig)
    rootpath: Path = Path(".")
    invocation_dir: Path = Path(".")
    """The directory pytest was run in, which the paths of messages are shown from."""
    cache_above: Path | None = None
    """Where pytest found no configuration file (nor `--rootdir`, nor `setup.py`), so that
    its root dir is the folder it was run in, a cache directory of the same name in a folder
    above it: a run there (`cd tests` undone) names tests, and files their baselines,
    otherwise, which a missing baseline says. None where there is none: the first run of a
    project of no configuration file has nothing elsewhere to point at."""
    layers: tuple[Layer, ...] = field(default=(), compare=False, repr=False)
    """The sources these settings were resolved from, first wins, for `for_marker`."""
    _under_markers: dict[tuple[tuple[str, type, Any], ...], PluginSettings] = field(
        default_factory=dict, init=False, compare=False, repr=False
    )
    """`for_marker`'s settings by the marker's values. Every test of a group asks for them,
    a plain run three times a test: resolved anew each time (every setting parsed again),
    they cost a suite of 1,068 marked tests a tenth of a second, the largest part of what
    the plugin adds to a plain run's call of a candidate."""

    @property
    def cache_dir(self) -> Path:
        """The root of the cache files: the engine's, else `.autotune`, in the root dir."""
        return self.rootpath / (self.engine.cache_dir or PROJECT_CACHE_DIR)

    @property
    def project_root(self) -> str:
        """The root dir as seen from the cache directory (`..` for the default `.autotune`,
        `../pkg_a` for a directory several projects share), which a file written to a
        directory outside the root dir records (`PROJECT_ROOT_FIELD`), so that an update
        judges only its own project's files stale there. An absolute path where there is
        no relative one (another drive)."""
        cache, root = self.cache_dir.resolve(), self.rootpath.resolve()
        try:
            return Path(os.path.relpath(root, cache)).as_posix()
        except ValueError:
            return root.as_posix()

    @property
    def shared_cache_dir(self) -> bool:
        """Whether the cache directory is outside the root dir: other projects' files may
        be there, under the same test paths."""
        return not self.cache_dir.resolve().is_relative_to(self.rootpath.resolve())

    def relative(self, path: Path) -> str:
        """A path as the summary shows it (`shown_from`)."""
        return shown_from(path, self.invocation_dir)

    def origin(self, name: str) -> str:
        """Where a setting's value came from, as a bad value's message names it
        (`"autotune.yaml: device"`, `"PYTEST_AUTOTUNE_DEVICE"`), or "the default"."""
        chosen = choose(self.layers).get(name)
        return chosen[1] if chosen is not None else "the default"

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
        layers = ((MARKER, given), *self.layers)
        # The type too: 1 and True are one key of a dict, but only one is a bad value.
        key = tuple((name, type(value), value) for name, value in sorted(given.items()))
        try:
            known = key in self._under_markers
        except TypeError:  # a value no dict holds (a list), which the parser refuses by name
            return settings_from_layers(layers, self.rootpath, self.invocation_dir)
        if not known:
            self._under_markers[key] = settings_from_layers(
                layers, self.rootpath, self.invocation_dir
            )
        return self._under_markers[key]


def settings_from_sources(
    command_line: Mapping[str, object],
    ini: Mapping[str, object],
    environ: Mapping[str, str],
    rootpath: Path,
    invocation_dir: Path | None = None,
    written_by_others: Mapping[str, Path] | None = None,
    ini_source: str = "ini",
    overrides: Mapping[str, object] | None = None,
) -> PluginSettings:
    """Resolve the settings: command line, then environment, then YAML, then ini, then the
    defaults (the marker overrides per group: `PluginSettings.for_marker`). Keys are
    spelled as each source spells them (`autotune_level`, `PYTEST_AUTOTUNE_LEVEL`).
    Relative paths of the command line and the environment are taken from
    `invocation_dir` (None: `rootpath`, as for a run started there), the others from
    `rootpath`. `written_by_others`: the files other plugins write at the end of the run,
    by the option that names them (pytest-benchmark's `--benchmark-json`), which no output
    of ours may share. `overrides`: the ini keys given with pytest's `-o` for this run,
    which rank with the command line, after its options: a value typed for the run is not
    to lose to a variable or a file, without a word. Their relative paths are from
    `rootpath`, as pytest takes `-o cache_dir=...`.

    A bad value raises `ConfigError` naming its source and key.
    """
    if invocation_dir is None:
        invocation_dir = rootpath
    given = _from_dir(("command line", command_line), invocation_dir)
    typed: list[Layer] = [given, (OVERRIDES, overrides or {})]
    layers: list[Layer] = [*typed, _from_dir(("", env_values(environ)), invocation_dir)]
    # The ini's values are named by their file (`ini_source`: "pyproject.toml",
    # "tox.ini"), as the YAML's are: "ini: autotune_strict" did not say which file to fix.
    config_file = choose([*typed, (ini_source, ini)]).get("config")
    yaml_path: Path | None = None
    if config_file is not None:
        yaml_path = rootpath / config_file[0]
        if not yaml_path.is_file():
            # "nope.yaml: no such config file" named neither the option nor its source.
            why = "is a folder; give the path of a file" if yaml_path.is_dir() else "no such file"
            shown = shown_from(yaml_path, invocation_dir)
            raise ConfigError(f"{config_file[1]}: {shown}: {why}")
    elif (rootpath / YAML_FILE).is_file():
        yaml_path = rootpath / YAML_FILE
    if yaml_path is not None:
        where = shown_from(yaml_path, invocation_dir)
        layers.append((where, load_yaml(yaml_path, where)))
    layers.append((ini_source, ini))
    settings = settings_from_layers(tuple(layers), rootpath, invocation_dir)
    # Said at the start, once (a marker sets none of them): each is written at the end.
    written = {where: path.resolve() for where, path in (written_by_others or {}).items()}
    for name, (value, where) in choose(tuple(layers)).items():
        if name not in (*OUTPUT_FILES, "cache_dir") or not isinstance(value, Path):
            continue
        try:
            is_dir = (rootpath / value).is_dir()
            path = (rootpath / value).resolve()
        except OSError as error:
            # A name past the file system's limit (`File name too long`) would fail at the
            # end of the run, after every group was tuned, or in each tuned test (the cache
            # folder) with a traceback; said now, in one line.
            shown = shown_from(rootpath / value, invocation_dir)
            raise ConfigError(f"{where}: {error.strerror}: {shown}") from None
        if name == "cache_dir":
            if settings.tune:  # a folder, read and written all along the run
                _check_cache_dir(where, rootpath / value, invocation_dir)
            continue
        if is_dir:
            shown = shown_from(rootpath / value, invocation_dir)
            raise ConfigError(f"{where}: {shown} is a folder; give the path of a file")
        _check_output(where, path, settings, written, invocation_dir)
        written[where] = path
    return settings


def _check_cache_dir(where: str, path: Path, invocation_dir: Path) -> None:
    """Refuse a cache folder that is a file, or lies below one: every group's read said so
    in a warning of its own, and an update failed at the end, after every group was tuned."""
    if path.is_file():
        shown = shown_from(path, invocation_dir)
        raise ConfigError(f"{where}: {shown} is a file; give the path of a folder")
    _check_folders(where, path, invocation_dir)


def _check_folders(where: str, path: Path, invocation_dir: Path) -> None:
    """Refuse a path below a file (`notes.txt/r.jsonl`), where no folder of it can be made."""
    for folder in path.parents:
        if folder.exists():
            if folder.is_dir():
                return
            shown, whole = shown_from(folder, invocation_dir), shown_from(path, invocation_dir)
            raise ConfigError(f"{where}: {shown} is a file, where a folder of {whole} belongs")


def _check_output(
    where: str,
    path: Path,
    settings: PluginSettings,
    written: Mapping[str, Path],
    invocation_dir: Path,
) -> None:
    """Refuse an output file (resolved `path`, named by `where`) that the end of the run
    would write over something it must not (a baseline, or another output), or could not
    write at all, below a file: said at the end, after every group was tuned, that cost a
    whole tuning run. What the start cannot tell (a folder without permission, a full
    disk) is still said at the end, where the write fails."""
    if settings.tune:
        _check_folders(where, path, invocation_dir)
    cache = settings.cache_dir.resolve()
    if settings.tune and path.parent != cache and path.is_relative_to(cache):
        # Written at the end of the run, over a committed baseline (an HTML page where a
        # cache file was, records appended to one), or beside them where every reader of
        # the folder meets it. A plain run writes none of ours.
        raise ConfigError(
            f"{where}: {shown_from(path, invocation_dir)} is in a folder of the cache"
            f" folder {shown_from(cache, invocation_dir)}, where the baselines are kept;"
            " give a path outside it"
        )
    for other, other_path in written.items():
        if other_path == path and settings.tune:
            # Written at the end one after the other, the last silently replaced the
            # first: the plain benchmarks of a CI's `--benchmark-json` went missing. A
            # plain run writes none of ours.
            raise ConfigError(
                f"{where} and {other} both name {shown_from(path, invocation_dir)}: one"
                " would replace the other at the end of the run; give each its own file"
            )


def ignored_options(command_line: Mapping[str, object], settings: PluginSettings) -> str | None:
    """The line that ends a plain run whose command line gave options only tuning reads
    (`--autotune-html` without `--autotune`), which would otherwise do nothing without a
    word; None when there are none. Not a warning: a project's `filterwarnings = error`
    would fail the run on it. The same settings from the ini file, `autotune.yaml` or the
    environment stay silent: a project sets them once for the runs that tune."""
    if settings.tune:
        return None
    flags = [s.flag for s in SETTINGS if s.tuning_only and command_line.get(s.ini) is not None]
    if not flags:
        return None
    named = flags[0] if len(flags) == 1 else f"{', '.join(flags[:-1])} and {flags[-1]}"
    verb = "has" if len(flags) == 1 else "have"
    return f"autotune: {named} {verb} no effect without --autotune or --autotune-update"


def shown_from(path: Path, invocation_dir: Path) -> str:
    """A path as messages show it, so that it opens from where pytest was run: from that
    directory when it is below it, else whole."""
    try:
        return str(path.relative_to(invocation_dir))
    except ValueError:
        return str(path)


def _from_dir(layer: Layer, base: Path) -> Layer:
    """`layer` with each of its relative paths taken from `base`, keyed as it was."""
    source, values = layer
    paths = {name: value for name, (value, _) in choose([layer]).items() if isinstance(value, Path)}
    anchored = dict(values)
    for key in values:
        setting = setting_named(key)
        if setting is not None and setting.name in paths:
            anchored[key] = base / paths[setting.name]
    return source, anchored


OUTPUT_FILES = ("html", "record", "benchmark_json")
"""The settings that name a file the run writes at its end."""


def settings_from_layers(
    layers: tuple[Layer, ...], rootpath: Path, invocation_dir: Path
) -> PluginSettings:
    """The settings of `layers`, first wins (`choose`), relative paths taken from
    `rootpath` (`settings_from_sources` has made those of this run's own sources whole)."""
    chosen = {
        name: (rootpath / value if isinstance(value, Path) else value, where)
        for name, (value, where) in choose(layers).items()
    }
    engine = config_from(chosen)
    values = _plugin_values(chosen)
    update = bool(values["update"]) or bool(values["prune"])
    tune = update or bool(values["tune"]) or bool(values["only"])
    if tune and "benchmark_json" in chosen and importlib.util.find_spec("pytest_benchmark") is None:
        # An optional extra, so that its plugin stays out of runs that do not ask for it;
        # said at the start, not after the tuning it would have exported. A plain run
        # ignores the setting, so a checkout without the extra still runs its tests.
        raise ConfigError(
            f"{chosen['benchmark_json'][1]}: needs pytest-benchmark:"
            " pip install 'pytest-autotune[benchmark]'"
        )
    if update and engine.disable_cache:
        # Written anyway, the update replaced each entry without reading it: the baseline's
        # earlier sessions went, and a file said to be neither read nor written changed.
        asked = "--autotune-prune" if values["prune"] else "--autotune-update"
        raise ConfigError(
            f"{asked} writes the cache files, and {chosen['disable_cache'][1]} says to"
            " read and write none: drop one of the two"
        )
    return PluginSettings(
        tune=tune,
        update=update,
        prune=bool(values["prune"]),
        html=values["html"],
        benchmark_json=values["benchmark_json"],
        device=values["device"],
        only=bool(values["only"]),
        candidates=bool(values["candidates"]),
        engine=engine,
        rootpath=rootpath,
        invocation_dir=invocation_dir,
        layers=layers,
    )


def _plugin_values(chosen: Chosen) -> dict[str, Any]:
    """The plugin's own settings: the chosen value, else the table's default."""
    return {
        s.name: chosen[s.name][0] if s.name in chosen else s.default
        for s in SETTINGS
        if s.owner == "plugin"
    }


__all__ = ["PluginSettings", "ignored_options", "is_builtin_device", "settings_from_sources"]
