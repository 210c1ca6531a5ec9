"""`LocalTuner`: a named tuner per device, for use inside a library at run time."""

from __future__ import annotations

import inspect
import os
import sys
import threading
import types
import warnings
import weakref
from collections.abc import Callable, Hashable
from dataclasses import replace
from pathlib import Path
from typing import Any

from pytest_autotune.tune.client import Client, not_a_client
from pytest_autotune.tune.config import AutotuneConfig
from pytest_autotune.tune.device_tuner import device_tuner, environment_config
from pytest_autotune.tune.errors import AutotuneError, AutotuneSkip, ConfigWarning, caller_level
from pytest_autotune.tune.init_site import init_site
from pytest_autotune.tune.key import AutotuneLevel, autotune_level
from pytest_autotune.tune.local_package import a_package, top_level_package
from pytest_autotune.tune.tunable_set import ReturnT, TunableSet, TuneInputs
from pytest_autotune.tune.tuner import Tuner, retunes


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
        if not isinstance(name, str) or not name:
            # Refused here, not at the first `execute` that reads the cache it names, which
            # may run far from this line (or never in the tests).
            raise ValueError(
                f"LocalTuner: the name names its cache file, so it must be a non-empty"
                f" string, got {name!r}"
            )
        if config is not None and not isinstance(config, AutotuneConfig):
            # A dict of settings or the path of a YAML file failed at the first `execute`,
            # deep in the tuner ("'dict' object has no attribute 'cache_dir'").
            raise TypeError(
                f"LocalTuner {name!r}: config must be an AutotuneConfig or None, got"
                f" {type(config).__name__} {config!r}; build one, AutotuneConfig(checks=True),"
                " or read a file with AutotuneConfig.from_env(yaml_path=...)"
            )
        if package is not None and (not isinstance(package, str) or not package):
            raise TypeError(
                f"LocalTuner {name!r}: package must be the name of the package that ships"
                f" its caches (a str, as `import` spells it) or None, got {package!r}"
            )
        self.name = name
        self.package = package
        """The package whose `.autotune` folder (package data) holds the shipped caches."""
        self._config = config
        self._given = config
        """The config given, None for the environment's: what a pickled tuner carries."""
        self._tuners: dict[str, Tuner] = {}
        self._winners: dict[str, dict[Any, int]] = {}
        """Device id -> key -> the index of the winner, read by `execute`'s hit path: filled
        from the tuner's hits after a call that went through it. An index, resolved in the
        set the call passes, as the seed's `fastest(index)`: a callable would be the set's
        that was tuned, and a second set of this tuner meeting the same key would run the
        first set's function on its inputs (the sum for a max)."""
        self._bound: weakref.WeakSet[Callable[..., Any]] = weakref.WeakSet()
        """The bound operations (`bind`) alive, for `clear`: each holds its own winning
        callables by key (`winners`), of its own set, so its hit costs one lookup, as
        `_winners` cannot (its indices serve any set of this tuner)."""
        self._sets: dict[Hashable, TunableSet] = {}
        """Init function -> its set; one defined in a function under its site (`init_site`)."""
        self._codes: dict[int, types.CodeType] = {}
        """The code of each site in `_sets` (and of the functions it captures), by id, kept
        alive so that its id stays its own."""
        self._defined: dict[tuple[str, str], Callable[[], TunableSet]] = {}
        """(module, qualified name) -> the module-level init function of that name built last,
        for `_redefines`."""
        self._lock = threading.RLock()
        """Reentrant: a set's init function may init another set of this tuner (a set
        composed of another), in the thread that holds it."""
        _LOCAL_TUNERS.add(self)

    def __repr__(self) -> str:
        package = f", package={self.package!r}" if self.package is not None else ""
        return f"LocalTuner({self.name!r}{package})"

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickled as its name, config and package, never its lock, sets and decisions: a
        pool sends an object holding a tuner (or a `partial` of `execute`) to its workers,
        which load it as their own tuner of that name (`_tuner_named`)."""
        return (_tuner_named, (self.name, self._given, self.package))

    @property
    def config(self) -> AutotuneConfig:
        """The explicit config, else the environment's (`PYTEST_AUTOTUNE_*`), read once.

        Not the working directory's `autotune.yaml`: that is the pytest configuration of
        whichever project the program runs in, and an installed library's tuner must not
        write into that project's cache folder, nor fail on a setting meant for its tests.
        A program that wants the file passes `AutotuneConfig.from_env()`.

        A variable that does not read (a typo of a name, a value out of range) is left out,
        with a `ConfigWarning` naming it: the environment is the user's of a library, who
        may not know this package, and every call of the library failed on it."""
        if self._config is None:
            self._config = environment_config(self.name)
        return self._config

    def init(self, factory: Callable[[], TunableSet[ReturnT]]) -> TunableSet[ReturnT]:
        """The tunable set of `factory`, built on its first call only (thread-safe).

        One set per init function, as in the seed: `init(make_b)` after `init(make_a)`
        builds and returns B's set, never A's. A lambda written in the tuned function, as
        the seed writes its closure (`TUNER.init(lambda: TunableSet(...))`), is a new
        function at each call, and one set still serves them all (`init_site`) where what it
        captures can be hashed; one capturing an array builds a set per call (kept while
        its lambda lives, as is the set of any function no module names: `_init_unnamed`),
        so such a lambda is better made once, at module level. The sets share
        the tuner of each device, as in the seed, so their keys must differ (a key tuned
        for A is a hit for B), also in their fields: two key dataclasses with the same
        fields are one key to the cache file, and the tuner refuses the second
        (`PersistedEntries.check_key_type`). Each set carries this tuner's name
        (`TunableSet.tuner`), so the `autotune` fixture given it writes the cache file this
        tuner reads. A module-level init function defined again (a notebook cell run again)
        builds its new set, and the tuner forgets its decisions in memory (`_redefines`).
        """
        tunables = self._sets.get(factory)
        if tunables is None:
            if isinstance(factory, TunableSet) or not callable(factory):
                raise TypeError(
                    f"LocalTuner {self.name!r}: init takes the function that builds the set,"
                    f" init(make_set), got {type(factory).__name__}"
                )
            site = init_site(factory)
            tunables = self._sets.get(site)
            if tunables is not None:
                return tunables
            if site is factory:
                # Its own sets first: a copy's every call asked each module of its name
                # (`_named_by_no_module`, microseconds), where the tuner's table answered.
                sets = getattr(factory, "__dict__", {}).get(_SETS_OF_AN_UNNAMED_FUNCTION, {})
                kept: TunableSet[ReturnT] | None = sets.get(self)
                if kept is not None:
                    return kept
                if _named_by_no_module(factory):
                    return self._init_unnamed(factory)
            with self._lock:
                tunables = self._sets.get(site)
                if tunables is None:
                    tunables = self._sets[site] = self._build(factory)
                    codes: list[types.CodeType] = []
                    init_site(factory, codes)  # the codes its site goes by, kept once built
                    self._codes.update((id(code), code) for code in codes)
                    if self._redefines(factory):
                        self.clear()
        return tunables

    def _init_unnamed(self, factory: Callable[[], TunableSet[ReturnT]]) -> TunableSet[ReturnT]:
        """The set of an init function no module names (`_named_by_no_module`), kept on the
        function itself, so that it goes when the function goes: the set's candidates
        share a copy's globals, which hold the copy, so a table of the tuner's, even one
        weakly keyed, kept both for ever."""
        with self._lock:
            sets: dict[LocalTuner, TunableSet[ReturnT]]
            sets = factory.__dict__.setdefault(_SETS_OF_AN_UNNAMED_FUNCTION, {})
            tunables = sets.get(self)
            if tunables is None:
                tunables = sets[self] = self._build(factory)
        return tunables

    def _redefines(self, factory: Callable[[], TunableSet]) -> bool:
        """Whether `factory` defines again an init function this tuner built a set of: the
        same `def` of a module run again, which the module now names, as a notebook cell
        run again defines it in `__main__` (or a module reloaded without its tuner; never
        cloudpickle's copies, which no module names: `_init_unnamed`). Its set replaces
        the earlier one, whose decisions in
        memory are no longer this code's: served by index, a candidate added to the list
        was never measured, and one removed made the old index fail as another set's; a key
        every earlier candidate failed raised that failure again, without trying the fixed
        ones. Forgotten (`clear`), each key is served from the files again for this
        candidate list, or tuned. A lambda, and a function of a function, are left out:
        each of one name may be a set of its own (`init_site`)."""
        if not isinstance(factory, types.FunctionType) or "<" in factory.__qualname__:
            return False
        name = (factory.__module__, factory.__qualname__)
        earlier = self._defined.get(name)
        self._defined[name] = factory
        return earlier is not None and earlier is not factory

    def _build(self, factory: Callable[[], TunableSet[ReturnT]]) -> TunableSet[ReturnT]:
        """`factory`'s set, carrying this tuner's name."""
        try:
            # Bound first, so that a mistake of the call is told from a TypeError raised
            # inside a make_set that runs.
            inspect.signature(factory).bind()
        except TypeError:
            # `init(lambda key: ...)`, as if the set were built per key, raised "missing 1
            # required positional argument" from this line, far from the user's.
            name = getattr(factory, "__name__", repr(factory))
            raise TypeError(
                f"LocalTuner {self.name!r}: init({name}): init takes a function of no"
                f" arguments that builds the set, got one of {inspect.signature(factory)};"
                " the key is the set's key generator's, TunableSet.of(key_gen, candidates)"
            ) from None
        except ValueError:
            pass  # no signature to read (a builtin): the call tells
        tunables = factory()
        if not isinstance(tunables, TunableSet):
            # A make_set that builds its set and forgets to return it is the usual one;
            # `replace` would only say it wants a dataclass.
            name = getattr(factory, "__name__", repr(factory))
            got = "None" if tunables is None else type(tunables).__name__
            raise TypeError(
                f"LocalTuner {self.name!r}: init({name}): {name}() must return a TunableSet,"
                f" got {got}"
            )
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
        if not isinstance(device_id, str):
            # The client and its id swapped: the id would name a cache folder, and the
            # client's fingerprint would be asked of a str.
            raise TypeError(
                f"LocalTuner {self.name!r}: the device id must be a str, got a"
                f" {type(device_id).__name__}; call"
                " execute(client.device_id, client, tunables, inputs)"
            )
        if client is not None:
            # Refused before the shipped caches read its fingerprint (an AttributeError there).
            wrong_client = not_a_client(f"LocalTuner {self.name!r}", client)
            if wrong_client is not None:
                raise wrong_client
        _warn_of_an_unused_level(self.name, self._given)
        return device_tuner(self.name, self.package, device_id, client, self.config)

    def execute(
        self, device_id: str, client: Client, tunables: TunableSet[ReturnT], inputs: TuneInputs
    ) -> ReturnT:
        """Run the fastest candidate of `tunables` on `inputs`, tuning on a new key.

        The hit path is `Tuner.execute`'s, inlined, in one expression over the device's
        winners (`_winners`): against a dispatch that costs about 90 ns (an
        `lru_cache` lookup), each Python call and lookup saved counts
        (`benchmarks/dispatch.py`). A set whose key generator takes one input
        (`TunableSet.unary`, read from its signature once) calls the key generator and the
        winner with it directly: unpacking `*inputs` costs CPython 3.11 about 30 ns a call,
        twice per hit, and testing `len(inputs)` instead of the set's flag cost 15-25 ns on
        3.12. A wrong number of inputs, inputs that are not a tuple, a key that cannot be
        hashed and a key error go through the tuner, which says what is wrong or raises
        what the key generator raises. It takes no lock, as the tuner's own does
        not. The tuner raises `AutotuneError` (NoValidKernelFound) when no candidate can
        run for the key.
        """
        try:
            unary = tunables.unary
        except AttributeError:
            raise self._not_a_set(tunables) from None
        # Unpacking takes any iterable: inputs given bare (`x` for `(x,)`, an array of one
        # row) unpacked into its rows and, where a row's key was decided, the winner ran on
        # the first row. Tested once, before the lookup; a tuple (the usual inputs) costs
        # one comparison. The tuner says what is wrong with anything else.
        if inputs.__class__ is not tuple and not isinstance(inputs, (tuple, list)):
            return self._through_tuner(device_id, client, tunables, inputs)
        # The tuner is called outside the `except` blocks: an error of its own (a setting,
        # every candidate failing) would otherwise show the miss's KeyError as its cause.
        # `fn` is the winner served where the lookup found one: past these blocks, one that
        # declined the key when called (`_redecided`).
        fn: Callable[..., ReturnT] | None = None
        try:
            if unary:
                try:
                    (x,) = inputs
                    fn = tunables.fns[self._winners[device_id][tunables.key_gen(x)]]
                except (KeyError, ValueError, TypeError, IndexError):
                    pass
                else:
                    return fn(x)
            else:
                try:
                    fn = tunables.fns[self._winners[device_id][tunables.key_gen(*inputs)]]
                except (KeyError, TypeError, IndexError):
                    pass
                else:
                    return fn(*inputs)
        except (AutotuneSkip, AutotuneError) as error:
            if fn is None or not retunes(error, tunables):
                raise
        if fn is not None:
            return self._redecided(device_id, client, tunables, inputs, fn)
        return self._through_tuner(device_id, client, tunables, inputs)

    def _not_a_set(self, tunables: object, method: str = "execute") -> TypeError:
        # `execute(client.device_id, client, make_set, inputs)` read `make_set.unary`.
        return TypeError(
            f"LocalTuner {self.name!r}: {method} takes a TunableSet, got a"
            f" {type(tunables).__name__}; pass the set, tunables = TUNER.init(make_set)"
        )

    def _refuse_anothers_set(self, tunables: TunableSet, method: str = "execute") -> None:
        """Refuse a set another tuner's init built (a miss's check, never a hit's): it was
        tuned and served under this tuner's name, while the `autotune` fixture given it
        writes its winners under the set's, so the winners a library's tests shipped were
        never read, and each user's machine tuned every key again, without a word."""
        if tunables.tuner is not None and tunables.tuner != self.name:
            raise ValueError(
                f"LocalTuner {self.name!r}: {method} got the set of LocalTuner"
                f" {tunables.tuner!r} (built by its init), whose cache file its tests write"
                " and this tuner never reads; pass this tuner's own,"
                " tunables = TUNER.init(make_set)"
            )

    def _through_tuner(
        self,
        device_id: str,
        client: Client,
        tunables: TunableSet[ReturnT],
        inputs: TuneInputs,
        bound: dict[Any, Callable[..., ReturnT]] | None = None,
    ) -> ReturnT:
        """Anything but a hit: the tuner runs (and tunes) the call; a key it now holds a hit
        for serves the next calls from `_winners`, and from `bound`'s callables (a bound
        operation's, of this set) when given."""
        self._refuse_anothers_set(tunables)
        tuner = self.tuner(device_id, client)
        out = tuner.execute(tunables, inputs, client)
        key = tunables.key_gen(*inputs)
        index = tuner.hits.get(key)
        if index is not None:
            self._winners.setdefault(device_id, {})[key] = index
            if bound is not None:
                bound[key] = tunables.fns[index]
        return out

    def _redecided(
        self,
        device_id: str,
        client: Client,
        tunables: TunableSet[ReturnT],
        inputs: TuneInputs,
        fn: Callable[..., ReturnT],
        bound: dict[Any, Callable[..., ReturnT]] | None = None,
    ) -> ReturnT:
        """`fn`, the winner served for the inputs' key, declined it when called: the key is
        tuned again, and its new winner runs the call (`Tuner.declined` says why)."""
        key = tunables.key_gen(*inputs)
        self._winners.get(device_id, {}).pop(key, None)
        if bound is not None:
            bound.pop(key, None)
        self.tuner(device_id, client).declined(key, tunables, fn)
        return self._through_tuner(device_id, client, tunables, inputs, bound)

    def bind(
        self, device_id: str, client: Client, tunables: TunableSet[ReturnT]
    ) -> Callable[..., ReturnT]:
        """`execute` for one device, client and set, as a function of the inputs alone.

        `op = TUNER.bind(client.device_id, client, TUNER.init(make_set))`, then `op(x)` is
        `TUNER.execute(client.device_id, client, tunables, (x,))`. A library calling a tuned
        operation in its hot path binds it once: the call then builds no inputs tuple and
        looks up nothing but the key's winner, about 1.1x an `lru_cache` dispatch where
        `execute` costs 1.8x (`benchmarks/dispatch.py`), and a wrapper function around
        `execute`, the way a library would expose it, costs one Python call more again.
        A set whose key generator takes one input (`TunableSet.unary`) gives a function of
        one argument; otherwise it takes the inputs positionally.
        """
        # This operation's own winners, callables of its set: a hit is one lookup.
        winners: dict[Any, Callable[..., ReturnT]] = {}
        if not isinstance(tunables, TunableSet):
            raise self._not_a_set(tunables, "bind")
        self._refuse_anothers_set(tunables, "bind")
        if not isinstance(device_id, str) or not callable(getattr(client, "time", None)):
            # Swapped, `bind(client, client.device_id, set)` was taken, and failed at the
            # operation's first call, far from this line.
            raise TypeError(
                f"LocalTuner {self.name!r}: bind takes a device id (a str) and a client, got"
                f" {type(device_id).__name__} and {type(client).__name__}; call"
                " bind(client.device_id, client, tunables)"
            )
        key_gen, through, redecided = tunables.key_gen, self._through_tuner, self._redecided
        if tunables.unary:

            def call_one(x: Any) -> ReturnT:
                try:
                    fn = winners[key_gen(x)]
                except (KeyError, TypeError):
                    return through(device_id, client, tunables, (x,), winners)
                try:
                    return fn(x)
                except (AutotuneSkip, AutotuneError) as error:
                    if not retunes(error, tunables):
                        raise
                return redecided(device_id, client, tunables, (x,), fn, winners)

            return self._bind(call_one, winners)

        def call(*inputs: Any) -> ReturnT:
            try:
                fn = winners[key_gen(*inputs)]
            except (KeyError, TypeError):
                return through(device_id, client, tunables, inputs, winners)
            try:
                return fn(*inputs)
            except (AutotuneSkip, AutotuneError) as error:
                if not retunes(error, tunables):
                    raise
            return redecided(device_id, client, tunables, inputs, fn, winners)

        return self._bind(call, winners)

    def _bind(
        self, operation: Callable[..., ReturnT], winners: dict[Any, Callable[..., ReturnT]]
    ) -> Callable[..., ReturnT]:
        operation.winners = winners  # type: ignore[attr-defined]  # for `clear`
        # Python's message for a call with too many inputs names the function: it read
        # "LocalTuner.bind.<locals>.call_one()", our internals, for a mistake in the call.
        operation.__name__ = operation.__qualname__ = f"LocalTuner {self.name!r}: bound operation"
        with self._lock:
            self._bound.add(operation)
        return operation

    def clear(self) -> None:
        """Forget every in-memory decision (the files stay), bound operations' (`bind`)
        included: their tables are emptied in place."""
        with self._lock:
            for winners in self._winners.values():
                winners.clear()
            for operation in self._bound:
                operation.winners.clear()  # type: ignore[attr-defined]
            self._tuners.clear()


def _warn_of_an_unused_level(name: str, config: AutotuneConfig | None) -> None:
    """Warn where the config given to a tuner sets a level its keys are not made at.
    `anchor` in a key generator reads the process's level (or its caller's scope): the
    tuner opens no scope, which would cost its hot path, so `AutotuneConfig(level="full")`
    was dropped without a word and every size anchored at balanced. The default level
    says nothing of the user's wish, and is not taken as set."""
    if config is None or config.level is AutotuneLevel.BALANCED:
        return
    used = autotune_level()
    if config.level is not used:
        wanted = AutotuneLevel(config.level).value
        warnings.warn(
            ConfigWarning(
                f"LocalTuner {name!r}: its config's level ({wanted}) does not reach anchor"
                f" in its key generator, which anchors at the process's level ({used.value}):"
                f" set that with set_autotune_level({wanted!r}) or PYTEST_AUTOTUNE_LEVEL"
            ),
            stacklevel=caller_level(),
        )


_SETS_OF_AN_UNNAMED_FUNCTION = "_pytest_autotune_sets"
"""The attribute of an init function no module names that holds its sets (`_init_unnamed`)."""


def _named_by_no_module(factory: Callable[..., Any]) -> bool:
    """Whether `factory` is a function that no module names, whose set is kept only while it
    lives (`_init_unnamed`): such as the copy of a `make_set` of `__main__` that cloudpickle
    makes for each batch of tasks it sends (joblib's loky workers, Dask, Ray: a notebook's
    or a script's functions go by value). Kept by the tuner, as a module's own, a set was
    built and kept for each batch: a worker of 20,000 tasks held 10,000 sets, and grew by
    55 MB. A module's function is kept by the tuner, for `init`'s one lookup a call."""
    if type(factory) is not types.FunctionType:
        return False
    owner: object = sys.modules.get(factory.__module__)
    for name in factory.__qualname__.split("."):
        owner = getattr(owner, name, None)
    return owner is not factory


_LOCAL_TUNERS: weakref.WeakSet[LocalTuner] = weakref.WeakSet()
"""Every local tuner alive, for `_after_fork_in_child` and `_tuner_named`."""

_UNPICKLED: dict[tuple[str, AutotuneConfig | None, str | None], LocalTuner] = {}
"""The tuners `_tuner_named` made, kept: a pool loads one with each task, and a tuner made
again for each would read its caches again (tune again, with the cache disabled)."""


def _tuner_named(name: str, config: AutotuneConfig | None, package: str | None) -> LocalTuner:
    """A pickled tuner loaded: this process's tuner of that name, config and package (the
    module global of a forked worker, or of a spawned one that imported its module), else
    one made once for it."""
    for local in list(_LOCAL_TUNERS):
        if (local.name, local._given, local.package) == (name, config, package):
            return local
    made = _UNPICKLED.get((name, config, package))
    if made is None:
        # Two threads of a pool may load it at once: the first one kept serves both (a
        # lock here could be held by a thread a fork leaves behind).
        made = _UNPICKLED.setdefault(
            (name, config, package), LocalTuner(name, config, package=package)
        )
    return made


def _after_fork_in_child() -> None:
    """A process forked while another thread held a tuner's lock (building a set in `init`,
    loading a cache file in a first call) has no thread to release it: its first call
    would wait for ever. The child's lock is a new one (the tuners' own: `tuner.py`)."""
    for local in list(_LOCAL_TUNERS):
        local._lock = threading.RLock()


if hasattr(os, "register_at_fork"):  # POSIX: multiprocessing's fork, os.fork
    os.register_at_fork(after_in_child=_after_fork_in_child)


def local_tuner(
    name: str | None = None, config: AutotuneConfig | None = None, *, package: str | None = None
) -> LocalTuner:
    """A local tuner named after the calling module; `local_tuner("x")` -> `"<module>-x"`.

    Its shipped caches are read from `package`, by default the calling module's top-level
    package (`sigkit` for `sigkit.ops`): the one `.autotune` folder its tests write.
    """
    if name is not None and not isinstance(name, str):
        # `local_tuner(1)` was named "<module>-1" without a word.
        raise TypeError(f"local_tuner: name must be a str or None, got {name!r}")
    frame = inspect.currentframe()
    caller = frame.f_back if frame is not None else None
    names = caller.f_globals if caller is not None else {}
    module = names.get("__name__", "__main__")
    in_package = True
    if module in ("__main__", "__mp_main__"):
        # The program's main module, or the same run again in a worker multiprocessing
        # spawned (its default on macOS and Windows): one tuner, whose file both share.
        # Run with `python -m mylib.ops`, it is the module its spec names, whose package
        # ships caches and whose tests wrote them under that name. A script is named as
        # `import` would name it, after its file (`train.py` -> `train`), so two scripts
        # keep two files rather than replacing each other's entries in one `__main__`;
        # only an interactive session, with no file, is `__main__`, as is a program read
        # from no file (`python - < prog.py`, whose `__file__` is "<stdin>"). Neither a
        # script nor a top-level module run with -m has a package (importlib cannot read
        # one from a script, and would import, and so run, such a module a second time).
        spec = names.get("__spec__")
        script = names.get("__file__")
        in_package = spec is not None and bool(spec.parent)
        if spec is not None:
            module = spec.name
        elif isinstance(script, str) and script and not script.startswith("<"):
            module = Path(script).stem
        else:
            module = "__main__"
    if package is None and in_package:
        derived = top_level_package(module)
        # A module under a name that imports nothing (a test file pytest imported with
        # --import-mode=importlib) ships nothing: no package, rather than the warning an
        # explicit `package=` that does not import gets (`shipped._shipped_root`).
        package = derived if a_package(derived) else None
    return LocalTuner(f"{module}-{name}" if name else module, config, package=package)
