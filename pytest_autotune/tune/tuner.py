"""`Tuner`: runs the tuning of one device and caches its decisions, in memory and on disk."""

from __future__ import annotations

import functools
import inspect
import io
import logging
import operator
import os
import threading
import time
import traceback
import warnings
import weakref
from collections.abc import Callable, Collection, Iterable, Iterator
from dataclasses import dataclass, field, replace
from typing import Any, Literal

import numpy as np

from pytest_autotune.tune.benchmark import (
    NS_PER_S,
    STATISTICS,
    AutotuneOutcome,
    AutotuneResult,
    result_to_json,
)
from pytest_autotune.tune.bounds import Bounds
from pytest_autotune.tune.cache import (
    CacheFileError,
    PersistentCache,
    PersistentCacheKey,
    PersistentCacheValue,
)
from pytest_autotune.tune.call_scope import SCOPE_ATTRIBUTE, call_scope
from pytest_autotune.tune.check_result import SKIPPED, CheckResult
from pytest_autotune.tune.checks import check_candidates, in_place_output
from pytest_autotune.tune.client import Client, client_context, out_of_memory, release_memory
from pytest_autotune.tune.clone import clone_value, mock_types
from pytest_autotune.tune.config import AutotuneConfig, BenchConfig
from pytest_autotune.tune.errors import (
    NOT_REACHED,
    UNPLANNED,
    AutotuneError,
    AutotuneErrorKind,
    AutotuneSkip,
    CacheFileWarning,
    ConfigWarning,
    InputGeneratorError,
    caller_level,
    declines,
)
from pytest_autotune.tune.key import key_to_json, stable_key
from pytest_autotune.tune.log import (
    AutotuneLogContext,
    AutotuneLogLevel,
    ChecksDone,
    TuningStep,
    log_decision,
)
from pytest_autotune.tune.records import AutotuneRecord, Recorder, records_unwritable
from pytest_autotune.tune.schedule import (
    BatchResult,
    LongCalls,
    Preference,
    Statistic,
    adaptive_round_robin,
    fixed_pass,
)
from pytest_autotune.tune.tunable import tune_plan, unplanned
from pytest_autotune.tune.tunable_set import (
    CloneInputGenerator,
    NotATuple,
    TunableSet,
    TuneInputs,
)

logger = logging.getLogger("pytest_autotune")

Reference = Callable[..., Any] | str
"""What the checks compare the candidates' outputs with: a function of the inputs, or the
name of a candidate."""
Strategy = Callable[..., BatchResult]
"""`fixed_pass` or `adaptive_round_robin`, with the client's options bound."""


@dataclass(frozen=True, slots=True)
class TuneCacheResult:
    """Result of a cache lookup (the seed's enum): hit with the fastest index, a persisted
    entry not yet checked against the candidate list, a tuning under way, or a miss."""

    kind: Literal["hit", "unchecked", "pending", "miss"]
    fastest_index: int | None = None


MEASURED_FAILURES = ("failed while measured: ", "declined while measured: ")
"""How the result of a candidate that raised while the gate measured it begins
(`TuneDecision.without_winner`)."""


@dataclass(frozen=True, slots=True)
class TuneDecision:
    """One tuning decision: which candidate won for a key, and everything measured for it."""

    key: Any
    checksum: str
    fastest_index: int
    fastest_name: str
    results: dict[int, AutotuneResult]
    bounds: Bounds | None
    context: AutotuneLogContext
    measured: bool
    """False when every candidate failed: such a decision stays in memory, never on disk."""
    source: Literal["tuned", "cache", "single"]
    duration: float = 0.0
    checks: tuple[CheckResult, ...] = field(default=())
    error: AutotuneError | None = None
    """The seed's NoValidKernelFound when no candidate can run for the key: every one
    failed, declined or was never reached; `execute` raises it instead of calling one."""

    def result_list(self) -> list[dict[str, Any]]:
        return [result_to_json(self.results[i], i) for i in sorted(self.results)]

    def unreached(self) -> bool:
        """Whether its plan never reached some of its candidates (a batch of a `groups=`
        plan found a winner first)."""
        return any(
            isinstance(r, AutotuneError) and r.message.startswith(NOT_REACHED)
            for r in self.results.values()
        )

    def without_winner(self, error: AutotuneError) -> TuneDecision:
        """This decision with the candidate `error` names (its winner where it names none)
        failed by it, raised after tuning, while measured again; where that was the
        winner, the next fastest measured candidate, by its samples' score, wins (the
        client's `preferred` is not asked again), and the decision is not measured where
        none is left."""
        index = next(
            (i for i, r in self.results.items() if error.name and r.name == error.name),
            self.fastest_index,
        )
        declined = error.kind is AutotuneErrorKind.SKIP  # `AutotuneSkip` raised then
        how = MEASURED_FAILURES[1] if declined else MEASURED_FAILURES[0]
        failed = AutotuneError(error.kind, f"{how}{error.message}", self.results[index].name)
        results = {**self.results, index: failed}
        if index != self.fastest_index:
            return replace(self, results=results)
        measured = {i: r for i, r in results.items() if isinstance(r, AutotuneOutcome)}
        if not measured:
            return replace(self, results=results, measured=False)
        index = min(measured, key=lambda i: measured[i].score)
        winner = measured[index].name
        return replace(self, results=results, fastest_index=index, fastest_name=winner)

    def to_cache_value(self) -> PersistentCacheValue:
        return PersistentCacheValue(
            key=key_to_json(self.key),
            fastest_index=self.fastest_index,
            fastest_name=self.fastest_name,
            results=tuple(self.results[i] for i in sorted(self.results)),
            bounds=self.bounds.to_json() if self.bounds is not None else None,
        )

    def to_record(self, tuner: str, device_id: str) -> AutotuneRecord:
        return AutotuneRecord(
            tuner=tuner,
            device_id=device_id,
            key=key_to_json(self.key),
            checksum=self.checksum,
            fastest_index=self.fastest_index if self.measured else None,
            fastest_name=self.fastest_name if self.measured else None,
            results=tuple(self.result_list()),
            bounds=self.bounds.to_json() if self.bounds is not None else None,
            time_limit=self.context.time_limit,
            events=tuple(e.to_json() for e in self.context.events),
            checks=tuple(c.to_json() for c in self.checks),
            source=self.source,
            duration_ns=round(self.duration * 1e9),
        )


class Tuner:
    """Runs autotune benchmarks for a single device and caches the results.

    The hit path (`execute` on a known key) is a key generation and a dict lookup, with no
    lock: dict reads are atomic, and entries are only ever added. Misses take the lock,
    so two threads meeting the same new key tune it once; the other waits for the winner.

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
        self._lock = threading.Lock()
        self._said_unsaved = False
        """Whether a save was refused, with a warning, for a file unreadable since its load."""
        self._stored: dict[str, dict[str, tuple[PersistentCacheKey, PersistentCacheValue]]] = {}
        """Stored form -> checksum -> the persisted entry. A library's tuner reads its user's
        cache over the shipped ones, which may hold one key for several candidate lists (the
        user tuned it before an upgrade that ships it): only the entry of the set's own list
        is served, wherever it comes from."""
        self._declined: dict[str, PersistentCacheValue] = {}
        """Stored form -> the entry whose winner declined the key when called here
        (`declined`): never served again, though the file still holds it until the key's new
        decision replaces it."""
        self._key_types: dict[str, str] = {}
        """Stored form -> the type of the first key looked up or decided under it in this
        process: a key of another type with the same stored form is refused
        (`_check_key_type`)."""
        if persistent is not None:
            for pk, v in persistent.load().items():
                self._stored.setdefault(pk.key, {})[pk.checksum] = (pk, v)
        _TUNERS.add(self)

    def __repr__(self) -> str:
        return f"Tuner({self.name!r}, {self.device_id!r}, keys={len(self.hits)})"

    def _forget_other_threads(self) -> None:
        """In a forked child, which has only the thread that forked: a tuning another thread
        had under way never ends there, and a lock it held is never released, so the
        child's first call to meet such a key tunes it instead of waiting forever. The
        forking thread's own tuning stays (a candidate that forks is still being tuned)."""
        me = threading.get_ident()
        self._lock = threading.Lock()
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
        if stable_key(key) in self._stored:
            return TuneCacheResult("unchecked")
        return TuneCacheResult("miss")

    def decision(self, key: Any) -> TuneDecision | None:
        """The decision made in this process for `key`, if any."""
        return self._decisions.get(key)

    # -- running -------------------------------------------------------------------------

    def execute(self, tunables: TunableSet, inputs: TuneInputs, client: Client) -> Any:
        """Run the fastest candidate for these inputs, tuning first on a new key."""
        if not isinstance(tunables, TunableSet):
            # `execute(client, tunables, inputs)`, `LocalTuner.execute`'s order without the
            # device id, was told its inputs were a TunableSet, to be passed as (x,).
            raise TypeError(
                f"{self.name}: execute(tunables, inputs, client) takes a TunableSet first,"
                f" got {type(tunables).__name__}"
            )
        if not isinstance(inputs, (tuple, list)):
            # `execute(..., x)` for `execute(..., (x,))` would call `key_gen(*x)`: the rows
            # of an array as arguments, and a message about the key generator's arity.
            raise TypeError(
                f"{self.name}: inputs must be a tuple of the candidates' arguments,"
                f" got {type(inputs).__name__}; pass (x,) for one input"
            )
        key = _key_of(self.name, tunables, inputs)
        try:
            index = self.hits.get(key)
        except TypeError as exc:
            raise TypeError(
                f"{self.name}: autotune key {key!r} is not hashable ({exc}); make it an"
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

    def _winner(self, key: Any, tunables: TunableSet, index: int) -> Callable[..., Any]:
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
            stable = stable_key(key)
            entry = self._stored.get(stable, {}).get(tunables.checksum)
            if entry is not None:
                self._declined[stable] = entry[1]

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
                index = self._from_persistent(key, tunables)
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
                return _first_planned(tune_plan(key, tunables.tunables))
            event.wait()
        try:
            decision = self.tune(key, tunables, inputs, client)
        finally:
            with self._lock:
                del self._pending[key]
            done.set()
        if decision.error is not None:
            decision.error.raise_fresh()
        return decision.fastest_index

    def _from_persistent(self, key: Any, tunables: TunableSet) -> int | None:
        """Promote a persisted entry to a hit when it was tuned for this candidate list."""
        stable = stable_key(key)  # refuses a key no file can hold, one candidate or not
        if len(tunables) == 1:
            self.hits[key] = 0
            return 0
        self._check_key_type(key, stable)
        stored = self._stored.get(stable)
        if (stored is None or tunables.checksum not in stored) and self.persistent is not None:
            # Not in the file as this tuner read it: another process (a server's other
            # worker) may have tuned and saved it since. Tuning it again would cost the
            # tuning and overwrite that process's entry.
            for pk, value in self.persistent.saved_since(stable).items():
                self._stored.setdefault(pk.key, {})[pk.checksum] = (pk, value)
            stored = self._stored.get(stable)
        if stored is None:
            return None
        entry = stored.get(tunables.checksum)
        if entry is None:
            logger.info(
                "%s: cached entry for %s was tuned for other candidates; re-tuning", self.name, key
            )
            return None
        if self._declined.get(stable) == entry[1]:
            return None
        index = entry[1].fastest_index
        if not 0 <= index < len(tunables):
            # The same candidate list, yet a winner past its end: a hand edit, or a merge.
            warnings.warn(
                CacheFileWarning(
                    f"{self.name}: the cached entry of key {key} names candidate {index}"
                    f" as the winner, of {len(tunables)} candidates ({', '.join(tunables.names)});"
                    " the entry is not used, and the key is tuned again"
                ),
                stacklevel=caller_level(),
            )
            return None
        self.hits[key] = index
        return index

    def _check_key_type(self, key: Any, stable: str) -> None:
        """Refuse a key whose stored form a key of another type already holds: two key
        dataclasses with the same fields (`SumKey(n=8)`, `MaxKey(n=8)`) differ in Python
        but not in the cache file, whose stored form is the fields alone, as the seed's
        serialized key is; the second set would be served the first one's winner. The seed
        rules it out by giving a tuner one key type; here it is said at the second key. The
        first is taken at its lookup, not at its decision: a key served from the cache file
        is never tuned in this process, and the second set would run its winner."""
        known = self._key_types.setdefault(stable, _type_name(key))
        if known != _type_name(key):
            raise TypeError(
                f"{self.name}: the key {key!r} has the stored form {stable}, as a {known} key"
                " this tuner looked up before it does: the cache cannot tell them apart, and"
                " one set would run the other's winner. Give each TunableSet its own"
                " LocalTuner (the seed's tuner has one key type), or a key field that differs"
            )

    def tune(
        self,
        key: Any,
        tunables: TunableSet,
        inputs: TuneInputs,
        client: Client,
        bench: BenchConfig | None = None,
    ) -> TuneDecision:
        """Benchmark the candidates for `key` (whatever the caches hold) and store the winner."""
        if not callable(getattr(client, "time", None)):
            # Else every candidate fails on `client.time`, and the key is remembered as one
            # no candidate can run: the caller's mistake blamed on the candidates.
            raise TypeError(
                f"{self.name}: the client must be a Client that times calls"
                " (pytest_autotune.backends.cpu() or cuda()), got"
                f" {type(client).__name__} {client!r}"
            )
        if len(tunables) == 0:
            raise ValueError(
                f"{self.name}: the TunableSet has no candidates (with_() returns a new set,"
                " leaving the one it is called on as it was: tunables = tunables.with_(...))"
            )
        if isinstance(tunables.input_gen, CloneInputGenerator):
            _refuse_iterators(self.name, inputs)
        else:
            _try_input_generator(self.name, key, tunables, inputs, client)
        bench = bench or self.config.bench
        ctx = AutotuneLogContext(level=self.config.log_level)
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
            results.update(_settled_by_checks(checks))
        winner = _run_plan(plan, key, tunables, inputs, client, bench, ctx, results)

        fallback = winner if winner is not None else _fallback(plan, results)
        error = None
        if winner is None:
            error = _nothing_succeeded(key, tunables.names, results, fallback)
            # Raised to the caller (under pytest, the test's failure): logged besides only
            # where the log is asked for, or pytest's captured log said it all again; a
            # fallback, which raises nothing, is always logged.
            if fallback is not None or ctx.level is not AutotuneLogLevel.DISABLED:
                logger.warning("%s: %s", self.name, error)
        fastest = fallback if fallback is not None else _first_planned(plan)
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

    def _check(
        self,
        key: Any,
        tunables: TunableSet,
        inputs: TuneInputs,
        client: Client,
        unplanned: Collection[int] = (),
    ) -> tuple[CheckResult, ...]:
        """Every candidate run once and compared with the reference, but those the plan
        never tries for `key` (`unplanned`), which decline it unrun: a negative priority
        says a kernel is not for such keys (sizes it computes something else for), and run
        as the default reference, the first that succeeds, it failed every right candidate
        against its answer, leaving no winner, where the seed tunes the planned ones and
        runs the fastest."""

        # What a call that returned None wrote is found against the inputs as they were
        # before any candidate ran: a generation of the default generator, which copies,
        # else a copy taken now. A generator handing every call the caller's arrays gave
        # them written by the candidates before, and a right kernel writing what the
        # reference wrote there "wrote nothing".
        before: list[TuneInputs] = []
        judged_written = self.written_inputs and self.require_output

        def called(fn: Callable[..., Any]) -> object:
            args = tunables.generate_inputs(key, inputs)
            out = fn(*args)
            client.sync()
            if out is None and not self.require_output:
                # An in-place kernel (a CuPy kernel launched into an output buffer) returns
                # None, and None equals None: every candidate passed, a wrong one included,
                # and could win. What it wrote into its own copies of the inputs is its
                # output. (The plugin requires an output and says so instead.)
                return args
            if out is None and judged_written:
                if not before:
                    before.append(tunables.generate_inputs(key, inputs))
                return in_place_output(args, before[0])
            return out

        def run(index: int) -> object:
            if index in unplanned:
                raise AutotuneSkip(UNPLANNED)
            return called(tunables.fns[index])

        reference: int | Callable[[], object] | None = None
        if isinstance(self.reference, str):
            # A candidate named as the reference is its own check's reference, named in
            # every message as plain pytest names it ("the reference 'exact'"); a name of
            # none is refused rather than checked against the first that succeeds.
            if self.reference not in tunables.names:
                raise ValueError(
                    f"{self.name}: reference {self.reference!r} names no candidate:"
                    f" {sorted(tunables.names)}"
                )
            reference = tunables.names.index(self.reference)
        elif self.reference is not None:
            ref = self.reference

            def reference_output() -> object:
                return called(ref)

            reference = reference_output
        with client_context(client):  # the copies, the calls and the comparisons
            if judged_written and not isinstance(tunables.input_gen, CloneInputGenerator):
                before.append(clone_value(tunables.generate_inputs(key, inputs)))
            return tuple(
                check_candidates(
                    tunables.names,
                    run,
                    reference,
                    rtol=self.config.rtol,
                    atol=self.config.atol,
                    require_output=self.require_output,
                    compare=self.compare_outputs,
                    last=[i for i, n in enumerate(tunables.names) if n in self.reference_last],
                )
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
            self._save(decision, client)
        if unwritable is not None:
            warnings.warn(ConfigWarning(unwritable), stacklevel=caller_level())

    def _save(self, decision: TuneDecision, client: Client) -> None:
        """Keep a measured decision in memory, and in the persistent cache where there is one."""
        pk = PersistentCacheKey(stable_key(decision.key), decision.checksum)
        value = decision.to_cache_value()
        self._stored[pk.key] = {pk.checksum: (pk, value)}
        self._key_types.setdefault(pk.key, _type_name(decision.key))
        if self.persist and self.persistent is not None:
            if self.persistent.unreadable() is not None and self._said_unsaved:
                # Its load and the first save after it warned, naming the file: it is not
                # overwritten, the decisions stay in memory. Each later key said it again.
                return

            def device(held: dict[str, Any] | None) -> dict[str, Any]:
                # The file's block as it is under the lock, not as this tuner read it: an
                # update may have written its peaks and fingerprint since, which a block
                # decided on the earlier read would have overwritten.
                block = {**(held or {}), "id": self.device_id}
                if "fingerprint" not in block:
                    # What a file's device is, as the plugin's files say: a shipped file
                    # serves users of the same class only where its fingerprint names it
                    # (`tune.device_class`). One already there is kept, though a driver
                    # may have changed since: it may be an update's, with what plugins
                    # added to it (`pytest_autotune_fingerprint`), which an update renews.
                    block["fingerprint"] = dict(client.fingerprint())
                return block

            try:
                self.persistent.save({pk: value}, device=device)
            except CacheFileError as exc:
                self._said_unsaved = self.persistent.unreadable() is not None
                warnings.warn(
                    CacheFileWarning(f"{exc}; the decision is kept in memory only"),
                    stacklevel=caller_level(),
                )


_TUNERS: weakref.WeakSet[Tuner] = weakref.WeakSet()
"""Every tuner alive, for `_after_fork_in_child`."""


def _after_fork_in_child() -> None:
    for tuner in list(_TUNERS):
        tuner._forget_other_threads()


if hasattr(os, "register_at_fork"):  # POSIX: multiprocessing's fork, os.fork
    os.register_at_fork(after_in_child=_after_fork_in_child)


def _schedule_for(bench: BenchConfig, client: Client) -> Strategy:
    """The sampling strategy for `client`. A client may say its first timing of a call is
    already warm (`warm_first_sample`, optional: a client without it is assumed cold); then
    a warm-up can judge a hopeless candidate, and where it names its long calls
    (`long_call`), a long warm-up is kept as the first sample and a long candidate is
    judged hopeless by the client's `hopeless_factor`, unless the config sets one."""
    if not bench.adaptive:
        return fixed_pass
    if not getattr(client, "warm_first_sample", False):
        return adaptive_round_robin
    seconds = getattr(client, "long_call", None)
    factor = getattr(client, "hopeless_factor", None) if bench.hopeless_factor is None else None
    long_calls = LongCalls(seconds, factor) if seconds is not None else None
    return functools.partial(adaptive_round_robin, warm_up_judges=True, long_calls=long_calls)


def _key_of(name: str, tunables: TunableSet, inputs: TuneInputs) -> Any:
    """`key_gen(*inputs)`; where the key generator cannot take these inputs at all, a
    TypeError that says so by the tuner's name, not only Python's "<lambda>() takes 1
    positional argument but 2 were given"."""
    try:
        return tunables.key_gen(*inputs)
    except TypeError as exc:
        try:
            inspect.signature(tunables.key_gen).bind(*inputs)
        except TypeError:
            raise TypeError(
                f"{name}: the key generator cannot take the {len(inputs)} inputs given"
                f" ({exc}): it is called as key_gen(*inputs), with the candidates' arguments"
            ) from exc
        except ValueError:  # no signature to read (a builtin): Python's error says it
            pass
        raise


def used_up_by_a_call(value: object) -> bool:
    """Whether one call may use `value` up: an iterator (a generator, `iter(...)`, a `map`),
    which no copy of the inputs can copy. A file or stream is not (a call may rewind it,
    `seek(0)`), nor a database cursor (DB-API's, `sqlite3.Cursor`: a call runs its query
    with `execute`; refused, a plain run of a test given one failed), nor a `MagicMock`,
    which has `__iter__` and `__next__` but is a fake (a logger, a client) that no call
    uses up: refused, the group of a test given one failed."""
    if not isinstance(value, Iterator) or isinstance(value, (io.IOBase, *mock_types())):
        return False
    return not (callable(getattr(value, "execute", None)) and hasattr(value, "fetchone"))


def used_up_within(value: object) -> str | None:
    """How `value` is, or holds, what one call uses up (`used_up_by_a_call`): "is an
    iterator (generator)", or "holds an iterator (generator) at ['rows']" inside the
    tuples, lists and dicts the input copy recurses into (`clone_value`), which copies
    them and shares the iterator: `{"rows": (i for i in ...)}` was tuned with the first
    candidate emptying it, and the call returned the sum of nothing. None where neither."""
    found = _used_up_at(value, set())
    if found is None:
        return None
    where, iterator = found
    what = f"an iterator ({type(iterator).__name__})"
    if not where:
        return f"is {what}"
    return f"holds {what} at {''.join(f'[{k!r}]' for k in reversed(where))}"


def used_up_input(inputs: Iterable[object]) -> tuple[int, str] | None:
    """The first of `inputs` that is or holds what one call uses up, by its index, and how
    (`used_up_within`); None where none does."""
    for index, value in enumerate(inputs):
        used_up = used_up_within(value)
        if used_up is not None:
            return index, used_up
    return None


_PLAIN_VALUES = (int, float, complex, bool, str, bytes, type(None))


def _used_up_at(value: object, seen: set[int]) -> tuple[list[Any], object] | None:
    """The keys, innermost first, of what in `value` one call uses up, and that value."""
    if used_up_by_a_call(value):
        return [], value
    if isinstance(value, (tuple, list)):
        items: Iterator[tuple[Any, Any]] = iter(enumerate(value))
    elif isinstance(value, dict):
        items = iter(value.items())
    else:
        return None
    if id(value) in seen:
        return None
    seen.add(id(value))
    for key, item in items:
        if type(item) in _PLAIN_VALUES:
            continue
        found = _used_up_at(item, seen)
        if found is not None:
            found[0].append(key)
            return found
    return None


def _refuse_iterators(name: str, inputs: TuneInputs) -> None:
    """Refuse an input that one call uses up (a generator, `iter(...)`, a `map`): the
    default input generator cannot copy it, so the first candidate tuned emptied it for
    the others and for the call whose result is returned, a wrong answer with no word.
    Refused before anything runs on it; a key already decided calls the winner once, so
    an iterator is fine there."""
    found = used_up_input(inputs)
    if found is not None:
        index, used_up = found
        raise TypeError(
            f"{name}: input {index} {used_up}, which tuning"
            " would use up: every candidate is called on it, and the first would leave"
            " it empty for the others and for the call that returns; pass a list or a"
            " tuple (list(it))"
        )


def _try_input_generator(
    name: str, key: Any, tunables: TunableSet, inputs: TuneInputs, client: Client
) -> None:
    """Call a set's own input generator once before anything runs, and raise what it raises
    as `InputGeneratorError`. Raised inside the checks and the timing, its error was
    recorded as each candidate's ("no candidate succeeded ... a: ValueError ..."), though
    none had run, its traceback was dropped, and the key was remembered as one no
    candidate can run."""
    try:
        with client_context(client):  # on the client's device, as the candidates' copies
            tunables.generate_inputs(key, inputs)
    except Exception as error:
        # `generate_inputs`' own refusal of a return that is no tuple says what it returned.
        what = (
            str(error)
            if isinstance(error, NotATuple)
            else f"the input generator raised {type(error).__name__}: {error}"
        )
        raise InputGeneratorError(
            f"{name}: for key {key!r}, {what}; no candidate was run"
        ) from error


def _type_name(key: Any) -> str:
    kind = type(key)
    return f"{kind.__module__}.{kind.__qualname__}"


def _statistic_for(client: Client, tunables: TunableSet) -> Statistic | None:
    """How each candidate's samples are scored, where the client says (its optional
    `sample_statistic(fn)`: "median" for samples whose noise runs both ways, such as a host's
    time to enqueue eager calls); None, the seed's score for all, where it does not."""
    rule = getattr(client, "sample_statistic", None)
    if rule is None:
        return None

    def statistic(index: int) -> str:
        name = rule(tunables.fns[index])
        # Said here, by the client's name: the outcome that would refuse it later says
        # only "statistic is ...", from deep inside the round robin.
        if name not in STATISTICS:
            raise ValueError(
                f"{type(client).__name__}.sample_statistic returned {name!r}: expected one"
                f" of {', '.join(STATISTICS)}"
            )
        return str(name)

    return statistic


def _preference_for(client: Client, tunables: TunableSet) -> Preference | None:
    """Which live candidate wins a batch, where the client says (its optional
    `preferred(scored)`, given each candidate's function and score in seconds, returns the
    position of the one to take: `CudaClient` breaks a tie of host-bound calls by what a
    faster host would pay); None, the lowest score, where it does not."""
    rule = getattr(client, "preferred", None)
    if rule is None:
        return None

    def prefer(scores: dict[int, float]) -> int:
        order = list(scores)
        # Scores are in nanoseconds (`benchmark.score`); a client's own figures in seconds.
        chosen = rule([(tunables.fns[i], scores[i] / NS_PER_S) for i in order])
        try:
            position = operator.index(chosen)
        except TypeError:
            position = -1
        if not 0 <= position < len(order):
            raise TypeError(
                f"{type(client).__name__}.preferred returned {chosen!r}: expected the"
                f" position of one of the {len(order)} candidates it was given"
            )
        return order[position]

    return prefer


def _settled_by_checks(checks: tuple[CheckResult, ...]) -> dict[int, AutotuneResult]:
    """The result of each candidate its check settled, which is never timed: one that
    failed its check, and one that declined the key there. A decliner would only decline
    again when timed, and where the plan never reached it, its result said "not reached":
    the plugin then passed its test under --autotune while plain pytest skipped it."""
    return {
        index: AutotuneError(
            AutotuneErrorKind.SKIP, check.message.removeprefix(SKIPPED), check.name
        )
        if check.skipped
        else AutotuneError(
            AutotuneErrorKind.UNKNOWN,
            check.failure(),
            check.name,
            check.trace,
        )
        for index, check in enumerate(checks)
        if check.skipped or not check.passed
    }


def retunes(error: BaseException, tunables: TunableSet) -> bool:
    """Whether a served winner's `error`, raised by a call, is its decline of the inputs'
    key, tuned again so that another candidate runs the call (`Tuner.declined`). Not for a
    set's only candidate, which is never tuned: served and called again, it ran the call
    (and its side effects) twice to raise the same."""
    return declines(error) and len(tunables) > 1


def _first_planned(plan: list[tuple[int, ...]]) -> int:
    """The first candidate the plan tries (the first of the set when the plan skips them
    all): what a candidate calling back into its own tuner while tuned runs."""
    return plan[0][0] if plan else 0


FLOATING_POINT_ERRORS = (FloatingPointError, RuntimeWarning)
"""What NumPy's floating-point errors raise: `np.seterr(all="raise")`'s, and the warnings
of its default under warnings as errors (`filterwarnings = error`)."""


class _Samples:
    """Samples of a batch's candidates, each timed on its own copy of the inputs, kept for
    the batch (an in-place candidate meets its own output again, as in a caller's loop).

    Where a candidate runs out of memory, in its call or its copy, while other candidates'
    copies are held, those are dropped, their memory given back, and it is tried once more:
    a plain run of one candidate never holds them (ten candidates over a 2 GiB input held
    20 GiB), and a candidate that fits beside its own inputs failed for the others' copies.
    A dropped copy is made again, from the caller's inputs, at its candidate's next sample.

    Meeting its own output again, an in-place candidate whose values grow (`x *= 2`,
    `np.exp(x, out=x)`) overflows after some calls, which no call of its caller does: where
    NumPy's floating-point error of that raises (a `RuntimeWarning` under warnings as
    errors, a program's `filterwarnings = error`, or `np.seterr(all="raise")`) and one call
    on a fresh copy does not, its samples are timed with those errors ignored. It failed
    there, and where every candidate was such, the call of a program's `LocalTuner` raised
    `AutotuneError` though the winner's one call on its inputs was fine.
    """

    def __init__(self, tunables: TunableSet, key: Any, inputs: TuneInputs, client: Client):
        self._tunables, self._key, self._inputs, self._client = tunables, key, inputs, client
        self._copies: dict[int, TuneInputs] = {}
        self._quiet: set[int] = set()
        """The candidates whose repeated calls raised a floating-point error (above)."""

    def __call__(self, index: int) -> float:
        if index in self._quiet:
            return self._timed_quietly(index)
        try:
            return self._timed(index)
        except BaseException as error:
            if self._drop_others(index, error):
                retry = self._timed
            elif self._raised_of_repeats(index, error):
                retry = self._timed_quietly
            else:
                raise
        return retry(index)

    def clear(self) -> None:
        self._copies.clear()

    def _timed(self, index: int) -> float:
        fn = self._tunables.fns[index]
        if hasattr(fn, SCOPE_ATTRIBUTE):  # its scope outside the timed call (`call_scope`)
            with call_scope(fn):
                return self._client.time(fn, self._copy(index))
        return self._client.time(fn, self._copy(index))

    def _timed_quietly(self, index: int) -> float:
        with np.errstate(all="ignore"):
            return self._timed(index)

    def _raised_of_repeats(self, index: int, error: BaseException) -> bool:
        """Whether `error`, a floating-point error of candidate `index`'s samples, is its
        output met again (above): one call on a fresh copy of the inputs, in the
        candidate's scope, raises nothing. The candidate is then sampled quietly."""
        if not isinstance(error, FLOATING_POINT_ERRORS):
            return False
        fn = self._tunables.fns[index]
        try:
            fresh = self._new_copy()
            with call_scope(fn):
                fn(*fresh)
        except Exception:
            return False
        self._quiet.add(index)
        return True

    def _copy(self, index: int) -> TuneInputs:
        if index not in self._copies:
            try:
                self._copies[index] = self._new_copy()
            except BaseException as error:
                if not self._drop_others(index, error):
                    raise
            if index not in self._copies:
                self._copies[index] = self._new_copy()
        return self._copies[index]

    def _new_copy(self) -> TuneInputs:
        with client_context(self._client):  # on the client's device
            return self._tunables.generate_inputs(self._key, self._inputs)

    def _drop_others(self, index: int, error: BaseException) -> bool:
        """Drop the other candidates' copies where `error` is the device out of memory:
        True when there were some, and the caller should try once more."""
        others = [i for i in self._copies if i != index]
        if not others or not out_of_memory(self._client, error):
            return False
        for i in others:
            del self._copies[i]
        traceback.clear_frames(error.__traceback__)  # the failed call's frames hold arrays
        release_memory(self._client)
        return True


def _run_plan(
    plan: list[tuple[int, ...]],
    key: Any,
    tunables: TunableSet,
    inputs: TuneInputs,
    client: Client,
    bench: BenchConfig,
    ctx: AutotuneLogContext,
    results: dict[int, AutotuneResult],
) -> int | None:
    """Time the plan's batches in order until one finds a winner (the seed's loop over
    priority groups), adding every candidate's result to `results`; those already there
    (settled by the checks) are left out, those never reached are skipped with the reason. The
    winner's index, None when no batch found one."""
    sample = _Samples(tunables, key, inputs, client)
    excluded = set(results)
    strategy = _schedule_for(bench, client)
    statistic = _statistic_for(client, tunables)
    prefer = _preference_for(client, tunables)
    short_circuit = tunables.short_circuit_for(bench)
    winner: int | None = None
    for number, batch in enumerate(plan):
        indices = [i for i in batch if i not in excluded]
        if not indices:
            continue
        step_started = time.perf_counter()
        measured = strategy(
            indices,
            tunables.names,
            sample,
            bench,
            ctx.time_limit,
            short_circuit,
            ctx,
            statistic=statistic,
            prefer=prefer,
        )
        sample.clear()
        results.update(measured.results)
        ctx.event(TuningStep(number, tuple(indices), time.perf_counter() - step_started))
        if measured.winner is not None:
            winner = measured.winner
            why = f"{NOT_REACHED}: batch {number} found a winner first"
            break
    else:
        why = UNPLANNED
    _skip_unreached(results, tunables.names, why, unplanned(plan, len(tunables)))
    return winner


def _skip_unreached(
    results: dict[int, AutotuneResult],
    names: tuple[str, ...],
    why: str,
    unplanned: Collection[int],
) -> None:
    """Give every candidate without a result a Skip one, so results line up with indices:
    `why` for those a batch after the last one run would have tried, `UNPLANNED` for those
    no batch holds. A candidate whose groups skip the key read "batch 0 found a winner
    first" in the records of a tuning that found one, as though a later batch held it."""
    for index, name in enumerate(names):
        if index not in results:
            reason = UNPLANNED if index in unplanned else why
            results[index] = AutotuneError(AutotuneErrorKind.SKIP, reason, name)


def _fallback(plan: list[tuple[int, ...]], results: dict[int, AutotuneResult]) -> int | None:
    """The candidate run when none was measured: the first the plan tries that ran (only
    its timing failed: it returned but the timer gave no valid duration), never one that
    declined or failed; None when there is none."""
    ran = [
        i
        for batch in plan
        for i in batch
        if isinstance(results.get(i), AutotuneError)
        and results[i].kind is AutotuneErrorKind.INVALID_SAMPLES  # type: ignore[union-attr]
    ]
    return ran[0] if ran else None


def _nothing_succeeded(
    key: Any, names: tuple[str, ...], results: dict[int, AutotuneResult], fallback: int | None
) -> AutotuneError:
    """The seed's NoValidKernelFound, naming each candidate's error."""
    errors = "; ".join(str(results[i]) for i in sorted(results))
    then = f"; falling back to {names[fallback]}" if fallback is not None else ""
    traces = [
        f"candidate {names[i]!r}:\n{result.trace}"
        for i, result in sorted(results.items())
        if isinstance(result, AutotuneError) and result.trace
    ]
    return AutotuneError(
        AutotuneErrorKind.NO_VALID_KERNEL_FOUND,
        f"no candidate succeeded for key {key!r}: {errors}{then}",
        trace="\n".join(traces),
    )
