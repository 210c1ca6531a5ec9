"""`Tuner`: runs the tuning of one device and caches its decisions, in memory and on disk."""

from __future__ import annotations

import logging
import os
import threading
import time
import warnings
import weakref
from collections.abc import Callable, Collection
from typing import Any

from pytest_autotune.tune.benchmark import AutotuneResult
from pytest_autotune.tune.cache import PersistentCache
from pytest_autotune.tune.check_result import CheckResult
from pytest_autotune.tune.client import Client, not_a_client
from pytest_autotune.tune.client_calls import refuse_in_error
from pytest_autotune.tune.config import AutotuneConfig, BenchConfig
from pytest_autotune.tune.decision import TuneCacheResult, TuneDecision
from pytest_autotune.tune.errors import (
    AutotuneError,
    AutotuneSkip,
    ConfigWarning,
    caller_level,
    declines,
)
from pytest_autotune.tune.inputs import key_of, refuse_iterators, try_input_generator
from pytest_autotune.tune.key import stable_key
from pytest_autotune.tune.log import AutotuneLogContext, AutotuneLogLevel, ChecksDone, log_decision
from pytest_autotune.tune.measure import (
    fallback_for,
    nothing_succeeded,
    run_plan,
    settled_by_checks,
)
from pytest_autotune.tune.persisted import PersistedEntries
from pytest_autotune.tune.records import Recorder, records_unwritable
from pytest_autotune.tune.tunable import first_planned, tune_plan, unplanned
from pytest_autotune.tune.tunable_set import (
    CloneInputGenerator,
    ReturnT,
    TunableSet,
    TuneInputs,
)
from pytest_autotune.tune.tuning_checks import Reference, run_checks
from pytest_autotune.tune.wording import short_repr

# `Reference`, `TuneCacheResult` and `TuneDecision` re-exported: they were imported from
# here before they had modules.
__all__ = ["Reference", "TuneCacheResult", "TuneDecision", "Tuner", "retunes"]

logger = logging.getLogger("pytest_autotune")


class Tuner:
    """Runs autotune benchmarks for a single device and caches the results.

    The hit path (`execute` on a known key) is a key generation and a dict lookup, with no
    lock: dict reads are atomic, and entries are only ever added. Misses take the lock,
    so two threads meeting the same new key tune it once; the other waits for the winner.
    The lock is never held while the cache file's is awaited: a process stopped holding
    that one held up every thread's new keys behind the first.

    It reads and writes the files it is given, `persistent` and `recorder`, and no others:
    `config.cache_dir` and `config.record` are read by `LocalTuner`, which builds both from
    them (`LocalTuner.tuner` gives its tuner of a device). The plugin builds its tuners with
    a config that names the cache folder, and saves their winners itself.
    """

    def __init__(
        self,
        name: str,
        device_id: str,
        config: AutotuneConfig | None = None,
        *,
        persistent: PersistentCache | None = None,
        persist: bool = True,
        recorder: Recorder | None = None,
        reference: Reference | None = None,
        require_output: bool = False,
        reference_last: Collection[str] = (),
        compare_outputs: bool = True,
        written_inputs: bool = False,
    ) -> None:
        _check_settings(name, device_id, config, persistent, recorder)
        self.name = name
        self.device_id = device_id
        self.config = config or AutotuneConfig()
        self.persistent = persistent
        self.persist = persist and persistent is not None
        self.recorder = recorder
        self.reference = reference
        self.require_output = require_output
        """A reference output of None fails the checks (the plugin's default)."""
        self.written_inputs = written_inputs
        """With `require_output`, a call that returns None having written into its inputs
        is judged by them, as without it (a library's in-place kernels, through the plugin's
        `autotune` fixture); one that wrote nothing still has nothing to compare."""
        self.compare_outputs = compare_outputs
        """The checks compare outputs with the reference's; without (the plugin's
        `check_output=False`) each candidate only has to run."""
        self.reference_last = frozenset(reference_last)
        """The candidates, by name, tried as the default reference (the first that
        succeeds) only after every other: the plugin's whose tests are marked `xfail`."""
        self.hits: dict[Any, int] = {}
        """Key -> index of the winner, for every key decided in this process. Read it, never
        write it: `LocalTuner.execute` reads it directly on its hot path."""
        self._decisions: dict[Any, TuneDecision] = {}
        self._pending: dict[Any, tuple[threading.Event, int]] = {}
        self._failed: dict[Any, AutotuneError] = {}
        """Key -> why no candidate can run it: raised again without tuning again."""
        self._lock = threading.RLock()
        """Reentrant: a signal handler that calls the operation runs in the thread it
        interrupted, which may hold this lock (a miss's lookup of what the tuner holds); it
        waited for that thread, itself, for ever."""
        self._persisted = PersistedEntries(name, device_id, persistent, self.persist)
        """The entries of `persistent`, as read and as decided since, served by the checksum
        of their candidate list."""
        _TUNERS.add(self)

    def __repr__(self) -> str:
        return f"Tuner({self.name!r}, {self.device_id!r}, keys={len(self.hits)})"

    def _forget_other_threads(self) -> None:
        """In a forked child, which has only the thread that forked: a tuning another thread
        had under way never ends there, and a lock it held is never released, so the
        child's first call to meet such a key tunes it instead of waiting forever. The
        forking thread's own tuning stays (a candidate that forks is still being tuned)."""
        me = threading.get_ident()
        self._lock = threading.RLock()
        self._pending = {key: pending for key, pending in self._pending.items() if pending[1] == me}
        if self.recorder is not None:
            # Held by a thread writing a record: the child's first record waited for ever.
            self.recorder.after_fork()

    # -- lookups -------------------------------------------------------------------------

    def fastest(self, key: Any) -> TuneCacheResult:
        """What the cache knows of `key`, without tuning."""
        index = self.hits.get(key)
        if index is not None:
            return TuneCacheResult("hit", index)
        if key in self._pending:
            return TuneCacheResult("pending")
        if stable_key(key) in self._persisted:
            return TuneCacheResult("unchecked")
        return TuneCacheResult("miss")

    def decision(self, key: Any) -> TuneDecision | None:
        """The decision made in this process for `key`, if any."""
        return self._decisions.get(key)

    # -- running -------------------------------------------------------------------------

    def execute(self, tunables: TunableSet[ReturnT], inputs: TuneInputs, client: Client) -> ReturnT:
        """Run the fastest candidate for these inputs, tuning first on a new key."""
        if not isinstance(inputs, (tuple, list)):
            if not isinstance(tunables, TunableSet):
                # `execute(client, tunables, inputs)`, `LocalTuner.execute`'s order without
                # the device id, was told its inputs were a TunableSet, to be passed as (x,).
                # Checked here, where the inputs are already wrong, not on every hit.
                raise TypeError(
                    f"{self.name}: execute(tunables, inputs, client) takes a TunableSet"
                    f" first, got {type(tunables).__name__}"
                )
            # `execute(..., x)` for `execute(..., (x,))` would call `key_gen(*x)`: the rows
            # of an array as arguments, and a message about the key generator's arity.
            raise TypeError(
                f"{self.name}: inputs must be a tuple of the candidates' arguments,"
                f" got {type(inputs).__name__}; pass (x,) for one input"
            )
        key = key_of(self.name, tunables, inputs)
        try:
            index = self.hits.get(key)
        except TypeError as exc:
            raise TypeError(
                f"{self.name}: autotune key {short_repr(key)} is not hashable ({exc}); make it an"
                " AutotuneKey @dataclass(frozen=True), a str, an int or a tuple of them"
            ) from None
        if index is None:
            index = self._resolve(key, tunables, inputs, client)
        fn = self._winner(key, tunables, index)
        try:
            return fn(*inputs)
        except (AutotuneSkip, AutotuneError) as error:
            if not retunes(error, tunables):
                raise
        self.declined(key, tunables, fn)
        return self._winner(key, tunables, self._resolve(key, tunables, inputs, client))(*inputs)

    def _winner(
        self, key: Any, tunables: TunableSet[ReturnT], index: int
    ) -> Callable[..., ReturnT]:
        try:
            return tunables.fns[index]
        except IndexError:
            raise IndexError(
                f"{self.name}: the key {key!r} was decided for a set with a candidate at"
                f" index {index}, and this set has {len(tunables)}: sets that share a tuner"
                " share its keys (as in the seed), so give this set its own LocalTuner or"
                " keys of its own"
            ) from None

    def declined(self, key: Any, tunables: TunableSet, fn: Callable[..., Any]) -> None:
        """Forget the decision of `key` whose winner, `fn`, declined it when called
        (`AutotuneSkip`), so that the next call tunes the key again.

        A winner read from a file was measured elsewhere: a library's CI ships it, where an
        optional dependency of that candidate was installed, and on a user's machine without
        it the candidate declines every key; served as it was, each call of the library
        raised its `AutotuneSkip`. Tuned again here, it declines and another candidate wins,
        saved over the entry. Left as it is where another thread decided the key anew."""
        with self._lock:
            index = self.hits.get(key)
            if index is None or not 0 <= index < len(tunables) or tunables.fns[index] is not fn:
                return
            del self.hits[key]
            self._persisted.declined(stable_key(key), tunables.checksum)

    def _resolve(self, key: Any, tunables: TunableSet, inputs: TuneInputs, client: Client) -> int:
        me = threading.get_ident()
        while True:
            with self._lock:
                index = self.hits.get(key)
                if index is not None:
                    return index
                failed = self._failed.get(key)
                if failed is not None:
                    failed.raise_fresh()
                stable = stable_key(key)  # refuses a key no file can hold, one candidate or not
                lacks = len(tunables) > 1 and self._persisted.lacks(stable, tunables.checksum)
                if lacks:
                    self._persisted.check_key_type(key, stable)
                else:
                    index = self._from_persistent(key, stable, tunables)
                    if index is not None:
                        return index
                pending = self._pending.get(key)
                if pending is None:
                    done = threading.Event()
                    self._pending[key] = (done, me)
                    break
            event, owner = pending
            if owner == me:
                # A candidate calls back into its own tuner while being tuned: waiting
                # would deadlock, so this inner call runs the first planned candidate.
                return first_planned(tune_plan(key, tunables.tunables))
            event.wait()
        try:
            if lacks:
                # The file is read with the key pending, outside the lock: threads of this
                # key wait for what it holds, other keys go on.
                saved = self._persisted.saved_since(stable)
                with self._lock:
                    self._persisted.add(saved)
                    index = self._from_persistent(key, stable, tunables)
                if index is not None:
                    return index
            decision = self.tune(key, tunables, inputs, client)
        finally:
            with self._lock:
                del self._pending[key]
            done.set()
        if decision.error is not None:
            decision.error.raise_fresh()
        return decision.fastest_index

    def _from_persistent(self, key: Any, stable: str, tunables: TunableSet) -> int | None:
        """Promote a persisted entry to a hit when it was tuned for this candidate list."""
        if len(tunables) == 1:
            self.hits[key] = 0
            return 0
        index = self._persisted.fastest_index(key, stable, tunables)
        if index is not None:
            self.hits[key] = index
        return index

    def tune(
        self,
        key: Any,
        tunables: TunableSet,
        inputs: TuneInputs,
        client: Client,
        bench: BenchConfig | None = None,
    ) -> TuneDecision:
        """Benchmark the candidates for `key` (whatever the caches hold) and store the winner."""
        self._refuse_untunable(key, tunables, inputs, client)
        bench = bench or self.config.bench
        ctx = AutotuneLogContext(level=self.config.log_level)
        if ctx.level is AutotuneLogLevel.FULL:
            ctx.about = f"{self.name}: {key}"
        bounds = tunables.bounds(key, inputs, client)
        if bounds is not None:
            ctx.bounds = bounds.to_json()
            ctx.time_limit = bounds.time_limit()
        # Timed from here: the first bounds of a process make the client probe its peaks
        # (seconds on a CPU, once per device), which would read as this key's tuning time.
        started = time.perf_counter()

        results: dict[int, AutotuneResult] = {}
        checks: tuple[CheckResult, ...] = ()
        plan = tune_plan(key, tunables.tunables)
        if self.config.checks and len(tunables) > 1:
            checks = self._check(key, tunables, inputs, client, unplanned(plan, len(tunables)))
            ctx.checks.extend(checks)
            ctx.event(ChecksDone(checks))
            results.update(settled_by_checks(checks))
        winner = run_plan(plan, key, tunables, inputs, client, bench, ctx, results)

        fallback = winner if winner is not None else fallback_for(plan, results)
        error = None
        if winner is None:
            error = nothing_succeeded(key, tunables.names, results, fallback)
            # Raised to the caller (under pytest, the test's failure): logged besides only
            # where the log is asked for, or pytest's captured log said it all again; a
            # fallback, which raises nothing, is always logged.
            if fallback is not None or ctx.level is not AutotuneLogLevel.DISABLED:
                logger.warning("%s: %s", self.name, error)
        fastest = fallback if fallback is not None else first_planned(plan)
        decision = TuneDecision(
            key=key,
            checksum=tunables.checksum,
            fastest_index=fastest,
            fastest_name=tunables.names[fastest],
            results=dict(sorted(results.items())),
            bounds=bounds,
            context=ctx,
            measured=winner is not None,
            source="tuned",
            duration=time.perf_counter() - started,
            checks=checks,
            error=error if fallback is None else None,
        )
        self._store(decision, client)
        return decision

    def _refuse_untunable(
        self, key: Any, tunables: TunableSet, inputs: TuneInputs, client: Client
    ) -> None:
        """Refuse, before anything runs, what no tuning can run on: a client that times
        nothing or whose device a call left unusable, a set without candidates, inputs that
        one call uses up, and a set's own input generator that raises."""
        wrong_client = not_a_client(self.name, client)
        if wrong_client is not None:
            raise wrong_client
        refuse_in_error(client)  # a device an earlier call left in error
        if len(tunables) == 0:
            raise ValueError(
                f"{self.name}: the TunableSet has no candidates (with_() returns a new set,"
                " leaving the one it is called on as it was: tunables = tunables.with_(...))"
            )
        if isinstance(tunables.input_gen, CloneInputGenerator):
            refuse_iterators(self.name, inputs)
        else:
            try_input_generator(self.name, key, tunables, inputs, client)

    def _check(
        self,
        key: Any,
        tunables: TunableSet,
        inputs: TuneInputs,
        client: Client,
        unplanned: Collection[int] = (),
    ) -> tuple[CheckResult, ...]:
        """The checks of this tuning (`tuning_checks.run_checks`), by this tuner's settings."""
        return run_checks(
            self.name,
            key,
            tunables,
            inputs,
            client,
            unplanned,
            reference=self.reference,
            require_output=self.require_output,
            written_inputs=self.written_inputs,
            compare_outputs=self.compare_outputs,
            reference_last=self.reference_last,
            rtol=self.config.rtol,
            atol=self.config.atol,
        )

    def _store(self, decision: TuneDecision, client: Client) -> None:
        with self._lock:
            self._decisions[decision.key] = decision
            if decision.error is None:
                self.hits[decision.key] = decision.fastest_index
            else:
                self._failed[decision.key] = decision.error
        winner = decision.fastest_name if decision.error is None else None
        log_decision(self.name, winner, decision.key, decision.context)
        unwritable: str | None = None
        if self.recorder is not None:
            try:
                self.recorder.record(decision.to_record(self.name, self.device_id))
            except OSError as error:
                # Raised out of the tuning, it lost the winner's save below; so is its
                # warning, where warnings are errors: it is given once the winner is saved.
                unwritable = records_unwritable(self.name, self.recorder.sink, error)
        if decision.measured:
            self._persisted.save(decision, client)
        if unwritable is not None:
            warnings.warn(ConfigWarning(unwritable), stacklevel=caller_level())


_TUNERS: weakref.WeakSet[Tuner] = weakref.WeakSet()
"""Every tuner alive, for `_after_fork_in_child`."""


def _check_settings(
    name: object, device_id: object, config: object, persistent: object, recorder: object
) -> None:
    """Refuse at the constructor what failed later: a client given for the device id
    (`Tuner(name, client)`, as `execute` takes one) named a cache folder after its repr,
    and a path given for the cache or the recorder failed at the first save or record."""
    __tracebackhide__ = True
    for what, value in (("name", name), ("device id", device_id)):
        if not isinstance(value, str) or not value:
            raise TypeError(
                f"Tuner: the {what} must be a non-empty str, got {type(value).__name__}"
                f" {value!r}" + ("; pass client.device_id" if what == "device id" else "")
            )
    for what, value, kind, article in (
        ("config", config, AutotuneConfig, "an"),
        ("persistent", persistent, PersistentCache, "a"),
        ("recorder", recorder, Recorder, "a"),
    ):
        if value is not None and not isinstance(value, kind):
            raise TypeError(
                f"Tuner {name!r}: {what} must be {article} {kind.__name__} or None, got"
                f" {type(value).__name__} {value!r}"
            )


def _after_fork_in_child() -> None:
    for tuner in list(_TUNERS):
        tuner._forget_other_threads()


if hasattr(os, "register_at_fork"):  # POSIX: multiprocessing's fork, os.fork
    os.register_at_fork(after_in_child=_after_fork_in_child)


def retunes(error: BaseException, tunables: TunableSet) -> bool:
    """Whether a served winner's `error`, raised by a call, is its decline of the inputs'
    key, tuned again so that another candidate runs the call (`Tuner.declined`). Not for a
    set's only candidate, which is never tuned: served and called again, it ran the call
    (and its side effects) twice to raise the same."""
    return declines(error) and len(tunables) > 1
