"""The settings table: every setting once, with its parser, help, default and sources.

The pytest options and ini keys, the `autotune.yaml` keys and the `PYTEST_AUTOTUNE_<NAME>`
variables are all made from `SETTINGS`, and `choose` is the one rule that merges sources:
the first source that sets a value wins. The plugin gives the sources in the documented
order (README, "Options": marker, command line, environment, `autotune.yaml`, ini; the
defaults last); `AutotuneConfig.from_env` gives the two a program has.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from pytest_autotune.tune.key import AutotuneLevel
from pytest_autotune.tune.log import AutotuneLogLevel
from pytest_autotune.tune.parse import (
    ConfigError,
    Parser,
    int_at_least,
    number,
    optional,
    parse_bool,
    parse_device,
    parse_fraction,
    parse_level,
    parse_log_level,
    parse_path,
    parse_record,
    parse_runner,
    parse_shipped_match,
)

ENV_PREFIX = "PYTEST_AUTOTUNE_"

Source = Literal["marker", "command line", "environment", "yaml", "ini"]

Owner = Literal["plugin", "engine", "bench"]
"""Which value holds the setting: `PluginSettings`, `AutotuneConfig` or `BenchConfig`."""

DEFAULT_TIME_LIMIT_S = 60.0
"""Under --autotune, one call of a candidate taking longer than this is hung: tuning calls
it tens of times, so a candidate this slow would take most of an hour to tune anyway."""

_EVERYWHERE: frozenset[Source] = frozenset({"command line", "environment", "yaml", "ini"})
_NO_OPTION: frozenset[Source] = frozenset({"environment", "yaml", "ini"})
"""The settings a run's command line does not take: a project sets them once, in its ini
file (`autotune_<name>`), `autotune.yaml` or the environment."""


@dataclass(frozen=True, slots=True)
class Setting:
    """One setting: `name` is its YAML key, its field and its variable's suffix."""

    name: str
    parse: Parser
    help: str
    default: object
    sources: frozenset[Source]
    owner: Owner
    option: str | None = None
    """The ini key, where it is not `autotune_<name>` (`autotune` for `tune`)."""
    tuning_only: bool = False
    """Read only when tuning: a plain run (no `--autotune`, `--autotune-update` or
    `--autotune-only`) ignores it, and says so when it was typed on the command line."""

    @property
    def ini(self) -> str:
        return self.option or f"autotune_{self.name}"

    @property
    def flag(self) -> str:
        return "--" + self.ini.replace("_", "-")

    @property
    def env(self) -> str:
        return ENV_PREFIX + self.name.upper()

    numeric: bool = False
    """A number: a native TOML table (pytest 9) may give it unquoted."""
    metavar: str = "VALUE"
    """What its option takes, as `pytest --help` and the README's table name it."""

    @property
    def kind(self) -> Literal["bool", "string"]:
        """The type of its pytest option and ini key."""
        return "bool" if self.parse is parse_bool else "string"


def _plugin(name: str, parse: Parser, help: str, default: object = None, **kw: Any) -> Setting:
    sources = kw.pop("sources", _EVERYWHERE)
    return Setting(name, parse, help, default, sources, "plugin", **kw)


def _engine(name: str, parse: Parser, help: str, default: object, **kw: Any) -> Setting:
    sources = kw.pop("sources", _EVERYWHERE)
    return Setting(name, parse, help, default, sources, kw.pop("owner", "engine"), **kw)


def _bench(name: str, parse: Parser, help: str, default: object) -> Setting:
    numeric = parse is not parse_bool
    return Setting(name, parse, help, default, _NO_OPTION, "bench", numeric=numeric)


_MARKER: frozenset[Source] = frozenset({"marker"})

SETTINGS: tuple[Setting, ...] = (
    _plugin(
        "tune",
        parse_bool,
        "tune every autotune group, validate, and apply the gate",
        False,
        option="autotune",
    ),
    _plugin(
        "update",
        parse_bool,
        "write refreshed cache files (the baselines to commit); regressions do not fail",
        False,
    ),
    _plugin(
        "prune",
        parse_bool,
        (
            "--autotune-update that also drops the cache entries it names as stale: of a"
            " test renamed or deleted, of a key no group of a test makes now"
        ),
        False,
    ),
    _engine(
        "cache_dir",
        optional(parse_path),
        "cache root (default: .autotune in the root dir)",
        None,
        tuning_only=True,
        metavar="DIR",
    ),
    _plugin(
        "html",
        optional(parse_path),
        "write the HTML report to this path",
        tuning_only=True,
        metavar="PATH",
    ),
    _engine(
        "record",
        optional(parse_record),
        "append JSON-lines records to this path (stdout or stderr: to that stream, at the end)",
        None,
        tuning_only=True,
        metavar="PATH",
    ),
    _plugin(
        "config",
        optional(parse_path),
        "YAML settings file (default: autotune.yaml)",
        sources=frozenset({"command line", "ini"}),
        metavar="PATH",
    ),
    _plugin(
        "device",
        parse_device,
        "auto (default), cpu, cuda, cuda:N, or a device a pytest_autotune_client hook provides",
        "auto",
        sources=_EVERYWHERE | _MARKER,
        tuning_only=True,
        metavar="DEVICE",
    ),
    _engine(
        "level",
        parse_level,
        "minimal, balanced (default), extensive, full: how finely anchor groups sizes",
        AutotuneLevel.BALANCED,
        sources=_EVERYWHERE | _MARKER,
        metavar="LEVEL",
    ),
    _engine(
        "strict",
        parse_bool,
        "a group without a baseline, or too noisy to judge, fails the gate",
        False,
        tuning_only=True,
    ),
    _engine(
        "runner",
        optional(parse_runner),
        (
            "the runner class whose baselines to use (e.g. github-ubuntu-x64), in place of"
            " the device's id, which changes with a hosted runner's CPU model"
        ),
        None,
        tuning_only=True,
        metavar="NAME",
    ),
    _engine(
        "time_limit",
        optional(number(0.0, above=True)),
        (
            "seconds one call of a candidate may take before it fails by name"
            f" (default under --autotune: {DEFAULT_TIME_LIMIT_S:g})"
        ),
        None,
        sources=_EVERYWHERE | _MARKER,
        numeric=True,
        metavar="SECONDS",
    ),
    _plugin(
        "benchmark_json",
        optional(parse_path),
        (
            "write every candidate in pytest-benchmark's JSON format to this path (needs the"
            " [benchmark] extra)"
        ),
        tuning_only=True,
        metavar="PATH",
    ),
    _plugin(
        "only",
        parse_bool,
        "run only autotune tests (marker or fixture), and tune them: implies --autotune",
        False,
    ),
    _plugin(
        "candidates",
        parse_bool,
        (
            "show every candidate in the summary: min, median, mean, stddev, rounds,"
            " relative to the fastest"
        ),
        False,
        tuning_only=True,
    ),
    _engine(
        "disable_cache",
        parse_bool,
        "neither read nor write cache files",
        False,
        sources=_NO_OPTION,
    ),
    _engine(
        "checks",
        parse_bool,
        "check every candidate against the reference before tuning",
        False,
        sources=_NO_OPTION,
    ),
    _engine(
        "rtol",
        number(0.0, above=False),
        "relative tolerance of the checks",
        1e-5,
        sources=_NO_OPTION | _MARKER,
        numeric=True,
    ),
    _engine(
        "atol",
        number(0.0, above=False),
        "absolute tolerance of the checks",
        1e-8,
        sources=_NO_OPTION | _MARKER,
        numeric=True,
    ),
    _engine(
        "log_level",
        parse_log_level,
        "disabled, minimal or full",
        AutotuneLogLevel.DISABLED,
        sources=_NO_OPTION,
    ),
    _engine(
        "max_regression",
        optional(parse_fraction),
        "the slowdown the gate tolerates, a fraction (default: the device kind's)",
        None,
        sources=_NO_OPTION | _MARKER,
        numeric=True,
    ),
    _engine(
        "shipped_match",
        parse_shipped_match,
        "which shipped caches a LocalTuner may serve: class or exact",
        "class",
        sources=_NO_OPTION,
    ),
    _bench("adaptive", parse_bool, "the adaptive round robin; off runs the fixed pass", True),
    _bench("min_samples", int_at_least(1), "samples before a candidate may be dropped", 3),
    _bench("max_samples", int_at_least(1), "samples of a candidate at most", 10),
    _bench("short_circuit", parse_bool, "end a batch under the roofline time limit", True),
    _bench("short_circuit_samples", int_at_least(1), "samples under the limit that end it", 2),
    # 1 is allowed, as the seed allows it: after min_samples only the leader and the
    # nearest rival go on. Below 1 the leader itself would be out.
    _bench("speed_factor", number(1.0, above=False), "slower than the leader by this: out", 1.5),
    _bench(
        "hopeless_factor",
        optional(number(1.0, above=True)),
        "far slower after one pass: out (default 10; on CUDA 4 for calls of 2 ms or more)",
        None,
    ),
    _bench("warmups", int_at_least(0), "warm-up calls of the fixed pass", 3),
)

BY_NAME: dict[str, Setting] = {s.name: s for s in SETTINGS}
KNOWN = ", ".join(sorted(BY_NAME))

MARKER_ONLY = ("key", "work", "thresholds", "reference", "groups", "check_output")
"""The marker's options that are no setting of the run: each is given for one test (most
are functions of its fixtures), so `autotune.yaml` and the variables cannot hold them.
(`candidates` is one too, but also the setting of `--autotune-candidates`.)"""
_SPELLINGS: dict[str, Setting] = {
    spelling: s for s in SETTINGS for spelling in (s.name, s.ini, s.env.lower())
}


def setting_named(spelled: str) -> Setting | None:
    """The setting a source's key names: `--autotune-max-samples`, `autotune_max_samples`
    (ini), `PYTEST_AUTOTUNE_MAX_SAMPLES` and `max_samples` all name `max_samples`."""
    return _SPELLINGS.get(spelled.strip().lstrip("-").replace("-", "_").lower())


def unknown(where: str, spelled: str, names: Sequence[str]) -> ConfigError:
    """The error of a key that names none of `names` (the source's own), with the nearest
    name when one is near, and the option where the key names a setting the source does
    not take: `config` in the YAML file it would name points at `--autotune-config`, as
    its variable does, not at itself."""
    other = setting_named(spelled)  # `autotune_html` in a file that spells it `html`
    if other is not None:
        near = [other.name if other.name in names else other.flag]
    else:
        near = difflib.get_close_matches(spelled, names, n=1, cutoff=0.6)
    known = ", ".join(sorted(set(names) & set(BY_NAME)))
    return _unknown(where, near[0] if near else "", known, marker_option=spelled)


def _unknown(where: str, near: str, known: str = KNOWN, marker_option: str = "") -> ConfigError:
    hint = f"; did you mean {near}?" if near else ""
    if marker_option in MARKER_ONLY:
        # `check_output: false` for every test: no setting is near (`checks`, another
        # thing, came closest; `groups` read "did you mean warmups?"), and the list alone
        # sent the user looking for a spelling that is not there.
        hint = (
            f"; {marker_option} is an option of @pytest.mark.autotune, given for each"
            " test; not a setting of the run"
        )
    return ConfigError(f"{where}: unknown setting; known settings: {known}{hint}")


Layer = tuple[str, Mapping[str, object]]
"""`(source name, values)`: the values one source sets, keyed as the source spells them."""

Chosen = dict[str, tuple[Any, str]]
"""Setting name -> (the parsed value, where it came from: `"<source>: <key>"`)."""


def choose(layers: Sequence[Layer]) -> Chosen:
    """The one precedence rule: for each setting, the value of the first layer that sets
    it. A None value means "not set here". Every value is parsed, even one an earlier layer
    overrides: a bad line in a file is a bug in the file whatever the command line says
    today. A source name of "" (environment variables, whose names say it all) leaves
    errors as `"<key>: <why>"`, others read `"<source>: <key>: <why>"`."""
    chosen: Chosen = {}
    for source, values in layers:
        for spelled, value in values.items():
            where = f"{source}: {spelled}" if source else spelled
            setting = setting_named(spelled)
            if setting is None:
                raise unknown(where, spelled, [*BY_NAME, *(s.ini for s in SETTINGS)])
            if value is None:
                continue
            parsed = setting.parse(value, where)
            chosen.setdefault(setting.name, (parsed, where))
    return chosen


_VARIABLES: dict[str, Setting] = {s.env: s for s in SETTINGS if "environment" in s.sources}
KNOWN_VARIABLES = ", ".join(sorted(s.name for s in _VARIABLES.values()))
"""The settings a variable sets, as a refused variable lists them: not `config`, which only
`--autotune-config` names."""


def env_values(environ: Mapping[str, str]) -> dict[str, str]:
    """The `PYTEST_AUTOTUNE_<NAME>` variables, by variable name; an empty one counts as
    unset, as `VAR= cmd` means in a shell.

    Any other variable of the prefix raises `ConfigError` with the nearest name, as a key
    of `autotune.yaml` does: the prefix is this package's, and a typo would otherwise be
    ignored without a word. No other tool of the project reads a variable of the prefix.
    """
    unknown_names = _unknown_variables(environ)
    if unknown_names:
        raise _unknown_variable(unknown_names[0])
    return {name: environ[name] for name in _VARIABLES if environ.get(name, "") != ""}


def _unknown_variables(environ: Mapping[str, str]) -> list[str]:
    return sorted(n for n in environ if n.startswith(ENV_PREFIX) and n not in _VARIABLES)


def _unknown_variable(name: str) -> ConfigError:
    """The error of a `PYTEST_AUTOTUNE_*` variable that names no setting. The nearest name
    is looked for without the prefix, which would make every two names near."""
    other = setting_named(name.removeprefix(ENV_PREFIX))  # `..._AUTOTUNE_HTML`, `..._CONFIG`
    if other is not None:
        near = other.env if other.env in _VARIABLES else other.flag
    else:
        suffixes = {s.name.upper(): env for env, s in _VARIABLES.items()}
        close = difflib.get_close_matches(name.removeprefix(ENV_PREFIX), suffixes, n=1)
        near = suffixes[close[0]] if close else ""
    return _unknown(name, near, KNOWN_VARIABLES, name.removeprefix(ENV_PREFIX).lower())


def yaml_key_error(where: str, key: object) -> ConfigError | None:
    """Why a key of a YAML file is not one (a YAML key is a setting's bare name)."""
    if isinstance(key, str) and key in BY_NAME and "yaml" in BY_NAME[key].sources:
        return None
    names = [s.name for s in SETTINGS if "yaml" in s.sources]
    return unknown(f"{where}: {key}", str(key), names)
