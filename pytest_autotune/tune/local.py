"""`LocalTuner`: a named tuner per device, for use inside a library at run time."""

from __future__ import annotations

import inspect
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from pytest_autotune.tune.cache import PersistentCache, cache_path
from pytest_autotune.tune.config import AutotuneConfig
from pytest_autotune.tune.log import Recorder
from pytest_autotune.tune.tunable_set import TunableSet, TuneInputs
from pytest_autotune.tune.tuner import Tuner

if TYPE_CHECKING:
    from pytest_autotune.backends.client import Client


class LocalTuner:
    """A tuner named for one operation, holding one `Tuner` per device.

    It is meant to live in a module global: the set is built once per process (`init`),
    and the winner for each key comes from `<cache_dir>/<device_id>/<name>.json` when the
    package ships one, so users do not pay for tuning at every start.
    """

    def __init__(self, name: str, config: AutotuneConfig | None = None) -> None:
        self.name = name
        self._config = config
        self._tuners: dict[str, Tuner] = {}
        self._hits: dict[str, dict[Any, int]] = {}
        """Device id -> its tuner's `hits`, read by `execute`'s hit path."""
        self._sets: dict[Callable[[], TunableSet], TunableSet] = {}
        self._lock = threading.Lock()

    @property
    def config(self) -> AutotuneConfig:
        """The explicit config, else the environment's (`PYTEST_AUTOTUNE_*`), read once."""
        if self._config is None:
            self._config = AutotuneConfig.from_env()
        return self._config

    def init(self, factory: Callable[[], TunableSet]) -> TunableSet:
        """The tunable set of `factory`, built on its first call only (thread-safe).

        One set per init function, as in the seed: `init(make_b)` after `init(make_a)`
        builds and returns B's set, never A's. The sets share the tuner of each device, as
        in the seed, so their keys must differ (a key tuned for A is a hit for B).
        """
        tunables = self._sets.get(factory)
        if tunables is None:
            with self._lock:
                tunables = self._sets.get(factory)
                if tunables is None:
                    tunables = self._sets[factory] = factory()
        return tunables

    def tuner(self, device_id: str) -> Tuner:
        """The tuner of one device, created with its persistent cache on first use."""
        tuner = self._tuners.get(device_id)
        if tuner is None:
            with self._lock:
                tuner = self._tuners.get(device_id)
                if tuner is None:
                    tuner = self._new_tuner(device_id)
                    self._tuners[device_id] = tuner
                    self._hits[device_id] = tuner.hits
        return tuner

    def _new_tuner(self, device_id: str) -> Tuner:
        config = self.config
        persistent = None
        if not config.disable_cache:
            persistent = PersistentCache(cache_path(config.cache_dir, device_id, self.name))
        return Tuner(
            self.name,
            device_id,
            config,
            persistent=persistent,
            recorder=Recorder.from_config(config),
        )

    def execute(
        self, device_id: str, client: Client, tunables: TunableSet, inputs: TuneInputs
    ) -> Any:
        """Run the fastest candidate of `tunables` on `inputs`, tuning on a new key.

        The hit path is `Tuner.execute`'s, inlined, in one expression over the device's
        hits: against a dispatch that costs about 90 ns (an `lru_cache` lookup), each
        Python call and lookup saved counts (`benchmarks/dispatch.py`). A call of one input
        calls the key generator and the winner with it directly: unpacking `*inputs` costs
        CPython 3.11 about 30 ns a call, twice per hit, and calling `tunables.key_gen(...)`
        as a method of the set about 10 ns more than through a local. It takes no lock, as
        the tuner's own does not. Anything but a hit, a key error included, goes through
        the tuner, which raises `AutotuneError` (NoValidKernelFound) when no candidate can
        run for the key.
        """
        key_gen = tunables.key_gen
        if len(inputs) == 1:
            (x,) = inputs
            try:
                fn = tunables.fns[self._hits[device_id][key_gen(x)]]
            except KeyError:
                return self.tuner(device_id).execute(tunables, inputs, client)
            return fn(x)
        try:
            fn = tunables.fns[self._hits[device_id][key_gen(*inputs)]]
        except KeyError:
            return self.tuner(device_id).execute(tunables, inputs, client)
        return fn(*inputs)

    def clear(self) -> None:
        """Forget every in-memory decision (the files stay)."""
        with self._lock:
            self._hits.clear()
            self._tuners.clear()


def local_tuner(name: str | None = None, config: AutotuneConfig | None = None) -> LocalTuner:
    """A local tuner named after the calling module; `local_tuner("x")` -> `"<module>-x"`."""
    frame = inspect.currentframe()
    caller = frame.f_back if frame is not None else None
    module = caller.f_globals.get("__name__", "__main__") if caller is not None else "__main__"
    return LocalTuner(f"{module}-{name}" if name else module, config)
