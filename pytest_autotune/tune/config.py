"""Configuration: `BenchConfig` (how to sample) and `AutotuneConfig` (everything else).

Settings come from several sources (a marker, the command line, `autotune.yaml`, ini keys,
`PYTEST_AUTOTUNE_<KEY>` variables); `resolve` merges them in the order it is given, by the
rule and the table of `tune/settings.py`. Every value goes through one parser per key,
wherever it comes from, so a bad value fails with one line that names its source and key,
and a config built in code is checked the same.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pytest_autotune.tune.key import AutotuneLevel
from pytest_autotune.tune.log import AutotuneLogLevel
from pytest_autotune.tune.parse import ConfigError, RecordSink, ShippedMatch
from pytest_autotune.tune.plain_numbers import RealNumber
from pytest_autotune.tune.settings import (
    BY_NAME,
    Chosen,
    Layer,
    choose,
    env_values,
    yaml_key_error,
)

YAML_FILE = "autotune.yaml"
PROJECT_CACHE_DIR = Path(".autotune")
"""The cache root of a project under pytest when `cache_dir` is not set: in its root dir."""

HOPELESS_FACTOR = 10.0
"""The hopeless factor where neither the config nor the client sets one: a figure may be
inflated by the host (a CPU's first sample was preempted up to 77x on a loaded 2-core VM,
BENCHMARKS.md; a GPU's short call may be timed by an eager loop on the host)."""


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
    hopeless_factor: float | None = None
    """After the first pass, a candidate whose warm-up and first sample both exceed this
    times the leader's best takes no more samples (not in the seed; see BENCHMARKS.md).
    None (not set) is `HOPELESS_FACTOR`, and for a long call on a client that says its
    figures of long calls are warm device times, the client's `hopeless_factor` (4 on
    CUDA, for calls of 2 ms or more: `batch.LongCalls`)."""
    warmups: int = 3
    """Warm-up calls per candidate before the fixed pass samples it."""

    def __post_init__(self) -> None:
        _normalize(self)
        _check_sample_range(self.min_samples, self.max_samples)

    @property
    def hopeless(self) -> float:
        """The hopeless factor in force: the one set, else `HOPELESS_FACTOR`."""
        return HOPELESS_FACTOR if self.hopeless_factor is None else self.hopeless_factor


@dataclass(frozen=True, slots=True)
class AutotuneConfig:
    """Everything the tuner, the recorder and the plugin's gate read from the user."""

    cache_dir: str | os.PathLike[str] | None = None
    """Root of the cache files, `<cache_dir>/<device_id>/<tuner>.json`, read and written.
    Given as a str or a path (`AutotuneConfig(cache_dir="mylib/.autotune")` type-checks in
    a user's code), it is held as a `Path`, `~` and `$VARIABLE`s expanded.
    None is the default place: `.autotune` in the project root under pytest, and for a
    `LocalTuner` the caches its package ships (read only) over a per-user cache directory
    (written), so a library never writes into site-packages or its user's working
    directory unless told to. A relative path is taken from the working directory (the
    plugin makes it whole first: from the root dir, or from where pytest was run when it
    was typed for the run)."""
    disable_cache: bool = False
    """Neither read nor write cache files: every key is tuned in each process."""
    level: AutotuneLevel | str = AutotuneLevel.BALANCED
    """The level the plugin makes and tunes a group's keys under (`autotune_level_scope`).
    A `LocalTuner` makes its keys under its caller's level (`autotune_level`). Given as an
    `AutotuneLevel` or its name ("full"), as `set_autotune_level` takes it; held as the
    `AutotuneLevel`."""
    checks: bool = False
    """Run every candidate once and compare its output with the reference before tuning."""
    rtol: float = 1e-5
    atol: float = 1e-8
    record: str | os.PathLike[str] | None = None
    """Where the records go: "stdout", "stderr", or a JSON-lines file, given as a str or a
    path (held as a `Path`, as `cache_dir` is)."""
    log_level: AutotuneLogLevel | str = AutotuneLogLevel.DISABLED
    """How much of each tuning goes to the `logging` logger: an `AutotuneLogLevel` or its
    name ("disabled", "minimal", "full"), held as the `AutotuneLogLevel`."""
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
    fails by name; None is the plugin's default (`tune.settings.DEFAULT_TIME_LIMIT_S` under
    --autotune, none in a plain run)."""
    runner: str | None = None
    """The runner class whose baselines the gate reads and `--autotune-update` writes, in
    place of the measured device's id: hosted CI runners change CPU model between runs,
    and each model would otherwise have (or lack) baselines of its own. None uses the
    device's id."""
    bench: BenchConfig = field(default_factory=BenchConfig)

    if TYPE_CHECKING:
        # What it is built from, wider than what it holds: a number may be a NumPy scalar
        # (`rtol=np.finfo(np.float32).eps`, no `float` to a type checker), which
        # `_normalize` holds as the Python float it is, as the `autotune` fixture takes it.

        def __init__(
            self,
            cache_dir: str | os.PathLike[str] | None = None,
            disable_cache: bool = False,
            level: AutotuneLevel | str = AutotuneLevel.BALANCED,
            checks: bool = False,
            rtol: RealNumber = 1e-5,
            atol: RealNumber = 1e-8,
            record: str | os.PathLike[str] | None = None,
            log_level: AutotuneLogLevel | str = AutotuneLogLevel.DISABLED,
            max_regression: RealNumber | None = None,
            strict: bool = False,
            shipped_match: ShippedMatch = "class",
            time_limit: RealNumber | None = None,
            runner: str | None = None,
            bench: BenchConfig = ...,
        ) -> None: ...

    def __post_init__(self) -> None:
        _normalize(self)
        if not isinstance(self.bench, BenchConfig):
            raise ConfigError(f"bench: expected a BenchConfig, got {self.bench!r}")

    @classmethod
    def from_env(
        cls,
        environ: Mapping[str, str] | None = None,
        yaml_path: str | os.PathLike[str] | None = None,
        *,
        project_file: bool = True,
    ) -> AutotuneConfig:
        """The config of a program outside pytest: `PYTEST_AUTOTUNE_*` variables over a YAML file.

        The file is `yaml_path`, which must exist, else `autotune.yaml` in the working
        directory when there is one and `project_file` is true. The environment wins
        because it is the more specific decision: the file is committed for the whole
        project, a variable is set for one run, just as pytest's command line overrides its
        ini file. `environ` is the process's environment where None: read at the call, and
        a default of `os.environ` itself printed every variable of it, secrets too, in
        `help()` and the documentation built from the signature.
        """
        sources: list[Layer] = [("", env_values(os.environ if environ is None else environ))]
        path = Path(yaml_path) if yaml_path is not None else Path(YAML_FILE)
        if yaml_path is not None or (project_file and path.is_file()):
            sources.append((os.fspath(path), load_yaml(path)))
        return resolve(sources)


def _normalize(config: BenchConfig | AutotuneConfig) -> None:
    """Parse every setting of a config built in code, naming the field on error."""
    for name in (f.name for f in fields(config)):
        if name in BY_NAME:
            object.__setattr__(config, name, BY_NAME[name].parse(getattr(config, name), name))


def _check_sample_range(
    min_samples: int, max_samples: int, min_origin: str = "", max_origin: str = ""
) -> None:
    """The one rule across settings; the origins say where each side came from."""
    if max_samples < min_samples:
        raise ConfigError(
            f"max_samples ({max_samples}{max_origin}) is below"
            f" min_samples ({min_samples}{min_origin})"
        )


def resolve(sources: Sequence[Layer]) -> AutotuneConfig:
    """Merge `(source name, values)` pairs into a config; earlier sources win (`choose`).

    Keys may be spelled as the source spells them (`setting_named`); a None value means
    "not set here"; the settings of the plugin alone are checked and left out.
    """
    return config_from(choose(sources))


def config_from(chosen: Chosen) -> AutotuneConfig:
    """The config of the chosen values, the defaults for the rest, and the one rule across
    settings checked with where each side came from."""
    defaults = BenchConfig()

    def setting(name: str) -> tuple[Any, str]:
        if name in chosen:
            value, where = chosen[name]
            return value, f", from {where}"
        return getattr(defaults, name), ", the default"

    min_samples, min_origin = setting("min_samples")
    max_samples, max_origin = setting("max_samples")
    _check_sample_range(min_samples, max_samples, min_origin, max_origin)
    values = {name: value for name, (value, _) in chosen.items()}
    owner = {name: BY_NAME[name].owner for name in values}
    bench = BenchConfig(**{k: v for k, v in values.items() if owner[k] == "bench"})
    return AutotuneConfig(bench=bench, **{k: v for k, v in values.items() if owner[k] == "engine"})


def load_yaml(path: str | os.PathLike[str], where: str | None = None) -> dict[str, object]:
    """The settings of a YAML file (a `yaml.SafeLoader`: reading a config runs no code).

    A file given explicitly must exist; its top level must be a mapping of known settings.
    An empty file is an empty mapping. Errors name the file as `where` (default: `path`).
    """
    where = os.fspath(path) if where is None else where
    try:
        text = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(f"{where}: no such config file") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{where}: cannot read: {exc}") from None
    # PyYAML is imported when a file is read: a program's LocalTuner reads none unless
    # told, and its import cost 10 ms of the package's.
    from pytest_autotune.tune.yaml_text import YamlTextError, parse_yaml

    try:
        data = parse_yaml(text)
    except YamlTextError as exc:
        raise ConfigError(f"{where}: invalid YAML: {exc}") from None
    if data is None:
        return {}
    if not isinstance(data, dict):
        raise ConfigError(f"{where}: expected a mapping of settings, got {type(data).__name__}")
    bench = data.get("bench")
    if isinstance(bench, dict):
        # `AutotuneConfig(bench=BenchConfig(...))` in code suggests a nested block here.
        first = next((str(k) for k in bench), "min_samples")
        raise ConfigError(
            f"{where}: bench: the sampling settings go at the top level of the file, as"
            f" every setting does ('{first}: ...', not 'bench:' with '{first}' under it)"
        )
    for key in data:
        error = yaml_key_error(where, key)
        if error is not None:
            raise error
    return data


__all__ = [
    "PROJECT_CACHE_DIR",
    "YAML_FILE",
    "AutotuneConfig",
    "BenchConfig",
    "ConfigError",
    "RecordSink",
    "ShippedMatch",
    "config_from",
    "load_yaml",
    "resolve",
]
