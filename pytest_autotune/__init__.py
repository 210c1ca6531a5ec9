"""pytest-autotune: pick the fastest of several implementations, check they agree, gate CI.

The engine (this namespace) runs in any Python program; the pytest plugin lives in
`pytest_autotune.plugin` and the device clients in `pytest_autotune.backends`.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pytest_autotune.fixture_type import AutotuneFixture
    from pytest_autotune.tune.benchmark import (
        AutotuneOutcome,
        AutotuneResult,
        SampleStats,
        score,
        tune_benchmark,
    )
    from pytest_autotune.tune.bounds import (
        AutotuneBound,
        Bounds,
        BoundsGenerator,
        Thresholds,
        TimeBound,
        Work,
        calculate_bounds,
        roofline,
    )
    from pytest_autotune.tune.cache import PersistentCache, PersistentCacheKey, PersistentCacheValue
    from pytest_autotune.tune.check_result import CheckResult
    from pytest_autotune.tune.comparison import AutotuneOutput, compare_outputs
    from pytest_autotune.tune.config import AutotuneConfig, BenchConfig, ConfigError
    from pytest_autotune.tune.decision import TuneCacheResult, TuneDecision
    from pytest_autotune.tune.errors import (
        AutotuneError,
        AutotuneErrorKind,
        AutotuneSkip,
        CacheFileWarning,
        ConfigWarning,
        InputGeneratorError,
    )
    from pytest_autotune.tune.key import (
        AutotuneKey,
        AutotuneLevel,
        KeyGenerator,
        anchor,
        autotune_level,
        autotune_level_scope,
        set_autotune_level,
    )
    from pytest_autotune.tune.local import LocalTuner, local_tuner
    from pytest_autotune.tune.log import AutotuneLogContext, AutotuneLogEvent, log_event
    from pytest_autotune.tune.records import AutotuneRecord, Recorder, read_records
    from pytest_autotune.tune.tunable import Tunable, TuneFn, TuneGroup
    from pytest_autotune.tune.tunable_set import (
        CloneInputGenerator,
        InputGenerator,
        TunableSet,
        TuneInputs,
    )
    from pytest_autotune.tune.tuner import Tuner

__all__ = [
    "AutotuneBound",
    "AutotuneConfig",
    "AutotuneError",
    "AutotuneErrorKind",
    "AutotuneFixture",
    "AutotuneKey",
    "AutotuneLevel",
    "AutotuneLogContext",
    "AutotuneLogEvent",
    "AutotuneOutcome",
    "AutotuneOutput",
    "AutotuneRecord",
    "AutotuneResult",
    "AutotuneSkip",
    "BenchConfig",
    "Bounds",
    "BoundsGenerator",
    "CacheFileWarning",
    "CheckResult",
    "CloneInputGenerator",
    "ConfigError",
    "ConfigWarning",
    "InputGenerator",
    "InputGeneratorError",
    "KeyGenerator",
    "LocalTuner",
    "PersistentCache",
    "PersistentCacheKey",
    "PersistentCacheValue",
    "Recorder",
    "SampleStats",
    "Thresholds",
    "TimeBound",
    "Tunable",
    "TunableSet",
    "TuneCacheResult",
    "TuneDecision",
    "TuneFn",
    "TuneGroup",
    "TuneInputs",
    "Tuner",
    "Work",
    "anchor",
    "autotune_level",
    "autotune_level_scope",
    "calculate_bounds",
    "compare_outputs",
    "local_tuner",
    "log_event",
    "read_records",
    "roofline",
    "score",
    "set_autotune_level",
    "tune_benchmark",
]

_HOMES = {
    "fixture_type": ("AutotuneFixture",),
    "tune.benchmark": (
        "AutotuneOutcome",
        "AutotuneResult",
        "SampleStats",
        "score",
        "tune_benchmark",
    ),
    "tune.bounds": (
        "AutotuneBound",
        "Bounds",
        "BoundsGenerator",
        "Thresholds",
        "TimeBound",
        "Work",
        "calculate_bounds",
        "roofline",
    ),
    "tune.cache": ("PersistentCache", "PersistentCacheKey", "PersistentCacheValue"),
    "tune.check_result": ("CheckResult",),
    "tune.comparison": ("AutotuneOutput", "compare_outputs"),
    "tune.config": ("AutotuneConfig", "BenchConfig", "ConfigError"),
    "tune.decision": ("TuneCacheResult", "TuneDecision"),
    "tune.errors": (
        "AutotuneError",
        "AutotuneErrorKind",
        "AutotuneSkip",
        "CacheFileWarning",
        "ConfigWarning",
        "InputGeneratorError",
    ),
    "tune.key": (
        "AutotuneKey",
        "AutotuneLevel",
        "KeyGenerator",
        "anchor",
        "autotune_level",
        "autotune_level_scope",
        "set_autotune_level",
    ),
    "tune.local": ("LocalTuner", "local_tuner"),
    "tune.log": ("AutotuneLogContext", "AutotuneLogEvent", "log_event"),
    "tune.records": ("AutotuneRecord", "Recorder", "read_records"),
    "tune.tunable": ("Tunable", "TuneFn", "TuneGroup"),
    "tune.tunable_set": ("CloneInputGenerator", "InputGenerator", "TunableSet", "TuneInputs"),
    "tune.tuner": ("Tuner",),
}
"""Where each public name lives, by module: each is imported the first time it is asked
for (PEP 562), so that `import pytest_autotune` (which pytest's plugin, importing
`pytest_autotune.plugin`, makes at the start of every run) stays cheap."""


def __getattr__(name: str) -> Any:
    for module, names in _HOMES.items():
        if name in names:
            value = getattr(importlib.import_module(f"{__name__}.{module}"), name)
            globals()[name] = value
            return value
    if name == "tune":
        # `pytest_autotune.tune.key.AutotuneLevel` after `import pytest_autotune`, as when
        # the package imported its names at once, `tune` and its modules among them.
        return importlib.import_module(f"{__name__}.tune")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


_OWN_HELPERS = frozenset({"annotations", "importlib", "Any", "TYPE_CHECKING"})
"""What this module imports for itself, which `dir(pytest_autotune)` listed beside the public
names, as if `pytest_autotune.Any` were one of them."""


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__, "tune"} - _OWN_HELPERS)
