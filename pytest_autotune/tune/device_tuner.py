"""What a `LocalTuner` makes its device tuners with: the environment's config, the device's
cache file (a `cache_dir`'s, else the shipped and the user's) and the records' recorder."""

from __future__ import annotations

import functools
import os
import warnings
from pathlib import Path

from pytest_autotune.tune.cache import PROGRAM_LOCK_TIMEOUT_S, PersistentCache, tuner_cache
from pytest_autotune.tune.client import Client
from pytest_autotune.tune.client_calls import client_fingerprint
from pytest_autotune.tune.config import AutotuneConfig
from pytest_autotune.tune.errors import ConfigWarning, caller_level
from pytest_autotune.tune.parse import ConfigError
from pytest_autotune.tune.records import Recorder, records_unwritable
from pytest_autotune.tune.settings import BY_NAME, ENV_PREFIX, choose, env_values
from pytest_autotune.tune.shipped import library_cache
from pytest_autotune.tune.tuner import Tuner


def device_tuner(
    tuner: str, package: str | None, device_id: str, client: Client | None, config: AutotuneConfig
) -> Tuner:
    """The tuner of one device for the local tuner named `tuner`, with its persistent cache
    (`LocalTuner.tuner`)."""
    persistent: PersistentCache | None = None
    if config.cache_dir is not None and not config.disable_cache:
        # A program saves each key as it tunes it: appended to the file's journal. A
        # relative folder is taken from where the program is now, once: after an
        # os.chdir its later keys would be saved under another folder.
        folder = Path(config.cache_dir).absolute()
        persistent = tuner_cache(
            folder, device_id, tuner, journal=True, lock_timeout=PROGRAM_LOCK_TIMEOUT_S
        )
    elif not config.disable_cache:
        fingerprint = None
        if client is not None and config.shipped_match == "class":
            # Checked, as every other reading of it is: a client's None or a raise came out of
            # the library's first call as an AttributeError of the device class's lookup.
            fingerprint = functools.partial(client_fingerprint, client)
        persistent = library_cache(package, device_id, tuner, fingerprint)
    return Tuner(
        tuner,
        device_id,
        config,
        persistent=persistent,
        recorder=recorder(tuner, config),
    )


def recorder(tuner: str, config: AutotuneConfig) -> Recorder | None:
    """The config's recorder; None, with a warning, where its file cannot be made: the
    records are a diagnosis, and the program calling a tuned function must not fail
    on them (the OSError came out of its first call)."""
    try:
        return Recorder.from_config(config)
    except OSError as error:
        warnings.warn(
            ConfigWarning(records_unwritable(tuner, config.record, error)),
            stacklevel=caller_level(),
        )
        return None


_SAMPLE_BOUNDS = {BY_NAME["min_samples"].env, BY_NAME["max_samples"].env}
"""The variables of the one rule across settings (`config._check_sample_range`)."""


def environment_config(tuner: str) -> AutotuneConfig:
    """The config of the `PYTEST_AUTOTUNE_*` variables, without those that do not read,
    each left out with a `ConfigWarning` (`LocalTuner.config`)."""
    try:
        return AutotuneConfig.from_env(project_file=False)
    except ConfigError:
        pass
    kept: dict[str, str] = {}
    refused: list[str] = []
    for name, value in sorted(os.environ.items()):
        if name.startswith(ENV_PREFIX) and value != "":  # an empty one is unset
            try:
                # Parsed alone, but not judged against the sample range alone: against
                # the defaults, MAX_SAMPLES=15 beside MIN_SAMPLES=20 read as "max_samples
                # (10, the default)", a bound the user had replaced.
                choose([("", env_values({name: value}))])
            except ConfigError as error:
                refused.append(str(error))
            else:
                kept[name] = value
    try:
        config = AutotuneConfig.from_env(kept, project_file=False)
    except ConfigError as error:  # the one rule across settings: min_samples > max_samples
        # Only the sample bounds are left out: dropping every variable with them ignored
        # the user's DISABLE_CACHE or CACHE_DIR, and the library wrote where it was told not to.
        refused.append(str(error))
        kept = {name: value for name, value in kept.items() if name not in _SAMPLE_BOUNDS}
        config = AutotuneConfig.from_env(kept, project_file=False)
    used = f"the others ({', '.join(kept)})" if kept else "its defaults"
    warnings.warn(
        ConfigWarning(
            f"LocalTuner {tuner!r}: {'; '.join(refused)}; left out, the tuner runs with {used}"
        ),
        stacklevel=caller_level(),
    )
    return config
