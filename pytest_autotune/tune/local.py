"""`LocalTuner`: a named tuner per device, for use inside a library at run time."""

from __future__ import annotations

import inspect
import threading
from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from pytest_autotune.tune.cache import PersistentCache, tuner_cache
from pytest_autotune.tune.config import AutotuneConfig
from pytest_autotune.tune.records import Recorder
from pytest_autotune.tune.shipped import library_cache
from pytest_autotune.tune.tunable_set import TunableSet, TuneInputs
from pytest_autotune.tune.tuner import Tuner

if TYPE_CHECKING:
    from pytest_autotune.tune.client import Client


class LocalTuner:
    """A tuner named for one operation, holding one `Tuner` per device.

    It is meant to live in a module global: the set is built once per process (`init`),
    and the winner for each key comes from `<package>/.autotune/<device_id>/<name>.json`
    when `package` ships one (what its tests tuned under the same name), so users do not
    pay for tuning. Keys nothing ships are tuned once and kept in the user's cache
    directory. An explicit `cache_dir` (config or `PYTEST_AUTOTUNE_CACHE_DIR`) replaces
    both: that folder alone is read and written.
    """

    def __init__(
        self, name: str, config: AutotuneConfig | None = None, *, package: str | None = None
    ) -> None:
        self.name = name
        self.package = package
        """The package whose `.autotune` folder (package data) holds the shipped caches."""
        self._config = config
        self._tuners: dict[str, Tuner] = {}
        self._winners: dict[str, dict[Any, Callable[..., Any]]] = {}
        """Device id -> key -> the winning callable, read by `execute`'s hit path: filled
        from the tuner's hits after a call that went through it. A hit then costs one
        lookup of the callable, not of an index and then of the set's callable there."""
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
        in the seed, so their keys must differ (a key tuned for A is a hit for B). Each set
        carries this tuner's name (`TunableSet.tuner`), so the `autotune` fixture given it
        writes the cache file this tuner reads.
        """
        tunables = self._sets.get(factory)
        if tunables is None:
            with self._lock:
                tunables = self._sets.get(factory)
                if tunables is None:
                    tunables = self._sets[factory] = self._named(factory())
        return tunables

    def _named(self, tunables: TunableSet) -> TunableSet:
        return replace(tunables, tuner=self.name)

    def tuner(self, device_id: str, client: Client | None = None) -> Tuner:
        """The tuner of one device, created with its persistent cache on first use; the
        client's fingerprint finds the nearest shipped device class, when it is needed."""
        tuner = self._tuners.get(device_id)
        if tuner is None:
            with self._lock:
                tuner = self._tuners.get(device_id)
                if tuner is None:
                    tuner = self._new_tuner(device_id, client)
                    self._tuners[device_id] = tuner
        return tuner

    def _new_tuner(self, device_id: str, client: Client | None) -> Tuner:
        config = self.config
        persistent: PersistentCache | None = None
        if config.cache_dir is not None and not config.disable_cache:
            # A program saves each key as it tunes it: appended to the file's journal.
            persistent = tuner_cache(config.cache_dir, device_id, self.name, journal=True)
        elif not config.disable_cache:
            fingerprint = None
            if client is not None and config.shipped_match == "class":
                fingerprint = client.fingerprint
            persistent = library_cache(self.package, device_id, self.name, fingerprint)
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
        winning callables (`_winners`): against a dispatch that costs about 90 ns (an
        `lru_cache` lookup), each Python call and lookup saved counts
        (`benchmarks/dispatch.py`). A set whose key generator takes one input
        (`TunableSet.unary`, read from its signature once) calls the key generator and the
        winner with it directly: unpacking `*inputs` costs CPython 3.11 about 30 ns a call,
        twice per hit, and testing `len(inputs)` instead of the set's flag cost 15-25 ns on
        3.12. A wrong number of inputs, like a key error, goes through the tuner, which
        raises what the key generator raises. It takes no lock, as the tuner's own does
        not. The tuner raises `AutotuneError` (NoValidKernelFound) when no candidate can
        run for the key.
        """
        if tunables.unary:
            try:
                (x,) = inputs
                fn = self._winners[device_id][tunables.key_gen(x)]
            except (KeyError, ValueError):
                return self._through_tuner(device_id, client, tunables, inputs)
            return fn(x)
        try:
            fn = self._winners[device_id][tunables.key_gen(*inputs)]
        except KeyError:
            return self._through_tuner(device_id, client, tunables, inputs)
        return fn(*inputs)

    def _through_tuner(
        self, device_id: str, client: Client, tunables: TunableSet, inputs: TuneInputs
    ) -> Any:
        """Anything but a hit: the tuner runs (and tunes) the call; a key it now holds a hit
        for serves the next calls from `_winners`."""
        tuner = self.tuner(device_id, client)
        out = tuner.execute(tunables, inputs, client)
        key = tunables.key_gen(*inputs)
        index = tuner.hits.get(key)
        if index is not None:
            self._winners.setdefault(device_id, {})[key] = tunables.fns[index]
        return out

    def bind(self, device_id: str, client: Client, tunables: TunableSet) -> Callable[..., Any]:
        """`execute` for one device, client and set, as a function of the inputs alone.

        `op = TUNER.bind(client.device_id, client, TUNER.init(make_set))`, then `op(x)` is
        `TUNER.execute(client.device_id, client, tunables, (x,))`. A library calling a tuned
        operation in its hot path binds it once: the call then builds no inputs tuple and
        looks up nothing but the key's winner, about 1.1x an `lru_cache` dispatch where
        `execute` costs 1.5x (`benchmarks/dispatch.py`), and a wrapper function around
        `execute`, the way a library would expose it, costs one Python call more again.
        A set whose key generator takes one input (`TunableSet.unary`) gives a function of
        one argument; otherwise it takes the inputs positionally.
        """
        winners = self._winners.setdefault(device_id, {})
        key_gen, through = tunables.key_gen, self._through_tuner
        if tunables.unary:

            def call_one(x: Any) -> Any:
                try:
                    fn = winners[key_gen(x)]
                except KeyError:
                    return through(device_id, client, tunables, (x,))
                return fn(x)

            return call_one

        def call(*inputs: Any) -> Any:
            try:
                fn = winners[key_gen(*inputs)]
            except KeyError:
                return through(device_id, client, tunables, inputs)
            return fn(*inputs)

        return call

    def clear(self) -> None:
        """Forget every in-memory decision (the files stay). Bound operations (`bind`)
        share the per-device tables, so they are emptied in place."""
        with self._lock:
            for winners in self._winners.values():
                winners.clear()
            self._tuners.clear()


def local_tuner(
    name: str | None = None, config: AutotuneConfig | None = None, *, package: str | None = None
) -> LocalTuner:
    """A local tuner named after the calling module; `local_tuner("x")` -> `"<module>-x"`.

    Its shipped caches are read from `package`, by default the calling module's top-level
    package (`sigkit` for `sigkit.ops`): the one `.autotune` folder its tests write.
    """
    frame = inspect.currentframe()
    caller = frame.f_back if frame is not None else None
    module = caller.f_globals.get("__name__", "__main__") if caller is not None else "__main__"
    if package is None and module != "__main__":
        package = module.partition(".")[0]
    return LocalTuner(f"{module}-{name}" if name else module, config, package=package)
