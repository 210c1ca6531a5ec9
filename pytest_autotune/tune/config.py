"""Configuration: `BenchConfig` (how to sample) and `AutotuneConfig` (everything else).

Settings come from several sources (a marker, the command line, `autotune.yaml`, ini keys,
`PYTEST_AUTOTUNE_<KEY>` variables); `resolve` merges them in the order it is given. Every
value goes through one parser per key, wherever it comes from, so a bad value fails with
one line that names its source and key, and a config built in code is checked the same.
"""

from __future__ import annotations

import contextlib
import difflib
import math
import os
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any, Literal

import yaml

from pytest_autotune.tune.key import AutotuneLevel
from pytest_autotune.tune.log import STREAMS, AutotuneLogLevel

ENV_PREFIX = "PYTEST_AUTOTUNE_"
YAML_FILE = "autotune.yaml"
PROJECT_CACHE_DIR = Path(".autotune")
"""The cache root of a project under pytest when `cache_dir` is not set: in its root dir."""

RecordSink = Path | Literal["stdout", "stderr"]
"""Where records go: a JSON-lines file, or a standard stream."""

ShippedMatch = Literal["exact", "class"]
SHIPPED_MATCHES: tuple[ShippedMatch, ...] = ("exact", "class")


class ConfigError(ValueError):
    """A setting a user got wrong; the message names where it came from."""


@dataclass(frozen=True, slots=True)
class BenchConfig:
    """How candidates are sampled; the defaults are the seed's."""

    adaptive: bool = True
    """The adaptive round robin; False runs the fixed pass."""
    min_samples: int = 3
    """Samples a candidate must have before it may be eliminated (counting every sample, as
    the seed does) or declared converged (not counting the warm-up-biased first one the
    adaptive round robin drops)."""
    max_samples: int = 10
    short_circuit: bool = True
    """End a batch early on a candidate under the roofline time limit (the seed's
    `with_short_circuit`); False samples every candidate whatever the limit says."""
    short_circuit_samples: int = 2
    """Samples under the roofline time limit that end a batch early."""
    speed_factor: float = 1.5
    """A candidate whose best time exceeds this times the leader's is eliminated."""
    hopeless_factor: float = 10.0
    """After the first pass, a candidate whose warm-up and first sample both exceed this
    times the leader's best takes no more samples (not in the seed; see BENCHMARKS.md)."""
    warmups: int = 3
    """Warm-up calls per candidate before the fixed pass samples it."""

    def __post_init__(self) -> None:
        _normalize(self)
        _check_sample_range(self.min_samples, self.max_samples)


@dataclass(frozen=True, slots=True)
class AutotuneConfig:
    """Everything the tuner, the recorder and the plugin's gate read from the user."""

    cache_dir: Path | None = None
    """Root of the cache files, `<cache_dir>/<device_id>/<tuner>.json`, read and written.
    None is the default place: `.autotune` in the project root under pytest, and for a
    `LocalTuner` the caches its package ships (read only) over a per-user cache directory
    (written), so a library never writes into site-packages or its user's working
    directory unless told to. A relative path is taken from the working directory (the
    plugin anchors it at the project root first)."""
    disable_cache: bool = False
    """Neither read nor write cache files: every key is tuned in each process."""
    level: AutotuneLevel = AutotuneLevel.BALANCED
    checks: bool = False
    """Run every candidate once and compare its output with the reference before tuning."""
    rtol: float = 1e-5
    atol: float = 1e-8
    record: RecordSink | None = None
    log_level: AutotuneLogLevel = AutotuneLogLevel.DISABLED
    max_regression: float | None = None
    """Slowdown the gate tolerates, as a fraction; None leaves it to the device kind."""
    strict: bool = False
    """A missing baseline, or a comparison too noisy to judge, fails the gate instead of
    being reported."""
    shipped_match: ShippedMatch = "class"
    """Which caches a package ships a `LocalTuner` may serve: `exact`, only those tuned on
    this device id; `class`, else those of the nearest device of the same class (same CPU
    vendor and ISA level, same GPU compute capability). A key nothing serves is tuned."""
    time_limit: float | None = None
    """Seconds one call of a candidate may take under the plugin before it is stopped and
    fails by name; None is the plugin's default (`time_limit.DEFAULT_TIME_LIMIT_S` under
    --autotune, none in a plain run)."""
    runner: str | None = None
    """The runner class whose baselines the gate reads and `--autotune-update` writes, in
    place of the measured device's id: hosted CI runners change CPU model between runs,
    and each model would otherwise have (or lack) baselines of its own. None uses the
    device's id."""
    bench: BenchConfig = field(default_factory=BenchConfig)

    def __post_init__(self) -> None:
        _normalize(self)
        if not isinstance(self.bench, BenchConfig):
            raise ConfigError(f"bench: expected a BenchConfig, got {self.bench!r}")

    @classmethod
    def from_env(
        cls,
        environ: Mapping[str, str] = os.environ,
        yaml_path: str | os.PathLike[str] | None = None,
    ) -> AutotuneConfig:
        """The config of a program outside pytest: `PYTEST_AUTOTUNE_*` variables over a YAML file.

        The file is `yaml_path`, which must exist, else `autotune.yaml` in the working
        directory when there is one. The environment wins because it is the more specific
        decision: the file is committed for the whole project, a variable is set for one
        run, just as pytest's command line overrides its ini file.
        """
        sources: list[tuple[str, Mapping[str, object]]] = [("", env_values(environ))]
        path = Path(yaml_path) if yaml_path is not None else Path(YAML_FILE)
        if yaml_path is not None or path.is_file():
            sources.append((os.fspath(path), load_yaml(path)))
        return resolve(sources)


Parser = Callable[[object, str], Any]
"""`parse(value, where)`: a value from a string or its native type, or a `ConfigError`."""


def _parse_bool(value: object, where: str) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, int) and value in (0, 1):
        return bool(value)
    if isinstance(value, str):
        word = value.strip().lower()
        if word in ("1", "true", "yes", "on"):
            return True
        if word in ("0", "false", "no", "off"):
            return False
    raise ConfigError(
        f"{where}: expected a boolean (1/0, true/false, yes/no, on/off), got {value!r}"
    )


def _int_at_least(minimum: int) -> Parser:
    def parse(value: object, where: str) -> int:
        number: int | None = None
        if isinstance(value, int) and not isinstance(value, bool):
            number = value
        elif isinstance(value, str):
            with contextlib.suppress(ValueError):
                number = int(value.strip())
        if number is None or number < minimum:
            raise ConfigError(f"{where}: expected an integer >= {minimum}, got {value!r}")
        return number

    return parse


def _number(minimum: float, above: bool) -> Parser:
    """A finite float >= `minimum`, or > it when `above`."""
    relation = ">" if above else ">="

    def parse(value: object, where: str) -> float:
        number: float | None = None
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            number = float(value)
        elif isinstance(value, str):
            with contextlib.suppress(ValueError):
                number = float(value.strip())
        if (
            number is None
            or not math.isfinite(number)
            or number < minimum
            or (above and number == minimum)
        ):
            raise ConfigError(f"{where}: expected a number {relation} {minimum:g}, got {value!r}")
        return number

    return parse


def _parse_path(value: object, where: str) -> Path:
    if isinstance(value, (str, os.PathLike)):
        path = os.fspath(value)
        if isinstance(path, str) and path.strip():
            return Path(path)
    raise ConfigError(f"{where}: expected a path, got {value!r}")


def _parse_record(value: object, where: str) -> RecordSink:
    if value == "stdout":
        return "stdout"
    if value == "stderr":
        return "stderr"
    try:
        return _parse_path(value, where)
    except ConfigError:
        raise ConfigError(
            f"{where}: expected a file path, {' or '.join(STREAMS)}, got {value!r}"
        ) from None


def _parse_level(value: object, where: str) -> AutotuneLevel:
    if isinstance(value, AutotuneLevel):
        return value
    try:
        return AutotuneLevel.parse(str(value), where)
    except ValueError as exc:
        raise ConfigError(str(exc)) from None


def _parse_log_level(value: object, where: str) -> AutotuneLogLevel:
    if isinstance(value, AutotuneLogLevel):
        return value
    try:
        return AutotuneLogLevel.parse(str(value), where)
    except ValueError as exc:
        raise ConfigError(str(exc)) from None


def _parse_shipped_match(value: object, where: str) -> ShippedMatch:
    for match in SHIPPED_MATCHES:
        if value == match:
            return match
    raise ConfigError(f"{where}: expected {' or '.join(SHIPPED_MATCHES)}, got {value!r}")


_RUNNER = re.compile(r"^[a-z0-9][a-z0-9._-]*$")


def _parse_runner(value: object, where: str) -> str:
    name = str(value).strip().lower()
    if not _RUNNER.match(name):
        raise ConfigError(
            f"{where}: expected a runner class name of letters, digits, '.', '_' and '-'"
            f" (a cache folder name), got {value!r}"
        )
    return name


def _optional(parse: Parser) -> Parser:
    def parse_optional(value: object, where: str) -> Any:
        return None if value is None else parse(value, where)

    return parse_optional


_PARSERS: dict[str, Parser] = {
    "adaptive": _parse_bool,
    "min_samples": _int_at_least(1),
    "max_samples": _int_at_least(1),
    "short_circuit": _parse_bool,
    "short_circuit_samples": _int_at_least(1),
    "speed_factor": _number(1.0, above=True),
    "hopeless_factor": _number(1.0, above=True),
    "warmups": _int_at_least(0),
    "cache_dir": _optional(_parse_path),
    "disable_cache": _parse_bool,
    "level": _parse_level,
    "checks": _parse_bool,
    "rtol": _number(0.0, above=False),
    "atol": _number(0.0, above=False),
    "record": _optional(_parse_record),
    "log_level": _parse_log_level,
    "max_regression": _optional(_number(0.0, above=False)),
    "strict": _parse_bool,
    "shipped_match": _parse_shipped_match,
    "time_limit": _optional(_number(0.0, above=True)),
    "runner": _optional(_parse_runner),
}
"""One parser per setting. Settings are flat in every source: `min_samples`, not
`bench.min_samples`, so a YAML key, an ini key and a variable name read alike."""

BENCH_KEYS = tuple(f.name for f in fields(BenchConfig))
KEYS = tuple(_PARSERS)


def _normalize(config: BenchConfig | AutotuneConfig) -> None:
    """Parse every setting of a config built in code, naming the field on error."""
    for name in (f.name for f in fields(config)):
        if name in _PARSERS:
            object.__setattr__(config, name, _PARSERS[name](getattr(config, name), name))


def _check_sample_range(
    min_samples: int, max_samples: int, min_origin: str = "", max_origin: str = ""
) -> None:
    """The one rule across settings; the origins say where each side came from."""
    if max_samples < min_samples:
        raise ConfigError(
            f"max_samples ({max_samples}{max_origin}) is below"
            f" min_samples ({min_samples}{min_origin})"
        )


def _setting_name(spelled: str) -> str:
    """The setting a source's key names: `--autotune-max-samples`, `autotune_max_samples`
    (ini) and `PYTEST_AUTOTUNE_MAX_SAMPLES` all name `max_samples`."""
    name = spelled.strip().lstrip("-").replace("-", "_").lower()
    for prefix in ("pytest_autotune_", "autotune_"):
        if name.startswith(prefix):
            return name[len(prefix) :]
    return name


def resolve(sources: Sequence[tuple[str, Mapping[str, object]]]) -> AutotuneConfig:
    """Merge `(source name, values)` pairs into a config; earlier sources win.

    Keys may be spelled as the source spells them (see `_setting_name`); a None value means
    "not set here". Errors read `"<source>: <key>: <why>"`, or `"<key>: <why>"` when the
    source name is empty, as for environment variables, whose names say it all. Every
    value is checked, even one a higher source overrides: a bad line in a file is a bug
    in the file whatever the command line says today.
    """
    chosen: dict[str, tuple[Any, str]] = {}
    for source, settings in sources:
        for spelled, value in settings.items():
            where = f"{source}: {spelled}" if source else spelled
            name = _setting_name(spelled)
            if name not in _PARSERS:
                raise ConfigError(f"{where}: unknown setting; known settings: {', '.join(KEYS)}")
            if value is None:
                continue
            parsed = _PARSERS[name](value, where)
            chosen.setdefault(name, (parsed, where))

    defaults = BenchConfig()

    def setting(name: str) -> tuple[Any, str]:
        if name in chosen:
            value, where = chosen[name]
            return value, f", from {where}"
        return getattr(defaults, name), ", the default"

    min_samples, min_origin = setting("min_samples")
    max_samples, max_origin = setting("max_samples")
    _check_sample_range(min_samples, max_samples, min_origin, max_origin)
    values: dict[str, Any] = {name: value for name, (value, _) in chosen.items()}
    bench = BenchConfig(**{k: v for k, v in values.items() if k in BENCH_KEYS})
    return AutotuneConfig(bench=bench, **{k: v for k, v in values.items() if k not in BENCH_KEYS})


def env_values(environ: Mapping[str, str]) -> dict[str, str]:
    """The `PYTEST_AUTOTUNE_<KEY>` variables of known settings, by variable name.

    An empty variable counts as unset, as `VAR= cmd` means in a shell; other
    `PYTEST_AUTOTUNE_*` names are left alone, since they may belong to other tools.
    """
    names = (ENV_PREFIX + key.upper() for key in KEYS)
    return {name: environ[name] for name in names if environ.get(name, "") != ""}


def misspelt_env_names(environ: Mapping[str, str]) -> list[str]:
    """One line for each `PYTEST_AUTOTUNE_*` variable that names no setting, with the
    nearest known name: a typo would otherwise be ignored without a word."""
    known = [ENV_PREFIX + key.upper() for key in KEYS]
    lines = []
    for name in sorted(environ):
        if name.startswith(ENV_PREFIX) and name not in known:
            near = difflib.get_close_matches(name, known, n=1, cutoff=0.6)
            hint = f"; did you mean {near[0]}?" if near else f"; known: {', '.join(known)}"
            lines.append(f"pytest-autotune: environment variable {name} names no setting{hint}")
    return lines


def load_yaml(path: str | os.PathLike[str]) -> dict[str, object]:
    """The settings of a YAML file (`yaml.safe_load`: reading a config runs no code).

    A file given explicitly must exist; its top level must be a mapping of known settings.
    An empty file is an empty mapping.
    """
    where = os.fspath(path)
    try:
        text = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(f"{where}: no such config file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{where}: cannot read: {exc}") from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise ConfigError(f"{where}: invalid YAML: {exc}") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigError(f"{where}: expected a mapping of settings, got {type(data).__name__}")
    for key in data:
        if not isinstance(key, str) or key not in _PARSERS:
            raise ConfigError(f"{where}: {key}: unknown setting; known settings: {', '.join(KEYS)}")
    return data
