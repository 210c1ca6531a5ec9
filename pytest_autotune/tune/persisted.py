"""What a tuner knows of its cache file: the entries it read and saved, each served only for
the candidate list it was tuned for, and never again once its winner declined the key."""

from __future__ import annotations

import atexit
import logging
import os
import sys
import warnings
import weakref
from collections.abc import Callable
from typing import Any

from pytest_autotune.tune.cache import (
    PROGRAM_LOCK_TIMEOUT_S,
    CacheFileError,
    PersistentCache,
    PersistentCacheKey,
    PersistentCacheValue,
)
from pytest_autotune.tune.cache_format import LockedCacheFile
from pytest_autotune.tune.client import Client
from pytest_autotune.tune.client_calls import client_fingerprint
from pytest_autotune.tune.decision import TuneDecision
from pytest_autotune.tune.errors import CacheFileWarning, caller_level
from pytest_autotune.tune.key import stable_key
from pytest_autotune.tune.tunable_set import TunableSet

logger = logging.getLogger("pytest_autotune")


class PersistedEntries:
    """The entries of a tuner's cache file (`Tuner.persistent`), as the tuner read them and
    as it decided them since; the tuner's lock guards them."""

    def __init__(
        self, name: str, device_id: str, persistent: PersistentCache | None, persist: bool
    ) -> None:
        self.name = name
        self.device_id = device_id
        self.persistent = persistent
        self.persist = persist
        self._said_unsaved = False
        """Whether a save was refused, with a warning, for a file unreadable since its load."""
        self._said_locked = False
        """Whether the file's lock was found held past the wait, with a warning, since the
        last save that got it: said once, not at each new key meanwhile."""
        self._unsaved: dict[PersistentCacheKey, PersistentCacheValue] = {}
        """The decisions not saved while another process held the file's lock: each later
        save sends them again, and the first that gets the lock writes them; the program's
        exit tries once more (`_save_held_back_at_exit`)."""
        self._client: Client | None = None
        """The client of the last decision held back, whose fingerprint a new file's device
        block takes when the exit saves them."""
        self._stored: dict[str, dict[str, tuple[PersistentCacheKey, PersistentCacheValue]]] = {}
        """Stored form -> checksum -> the persisted entry. A library's tuner reads its user's
        cache over the shipped ones, which may hold one key for several candidate lists (the
        user tuned it before an upgrade that ships it): only the entry of the set's own list
        is served, wherever it comes from."""
        self._declined: dict[str, PersistentCacheValue] = {}
        """Stored form -> the entry whose winner declined the key when called here
        (`declined`): never served again, though the file still holds it until the key's new
        decision replaces it."""
        self._first_keys: dict[str, Any] = {}
        """Stored form -> the first key looked up or decided under it in this process: a key
        of another type with the same stored form, unequal to it, is refused
        (`check_key_type`)."""
        if persistent is not None:
            for pk, v in persistent.load().items():
                self._stored.setdefault(pk.key, {})[pk.checksum] = (pk, v)

    def __contains__(self, stable: str) -> bool:
        """Whether an entry of any candidate list is stored under this stored form."""
        return stable in self._stored

    def lacks(self, stable: str, checksum: str) -> bool:
        """Whether the file may hold an entry of this stored form and candidate list that
        this tuner lacks: it has no entry of them as it read and decided the file, and there
        is a file. Another process (a server's other worker) may have tuned and saved it
        since: tuning it again would cost the tuning and overwrite that process's entry."""
        return self.persistent is not None and checksum not in self._stored.get(stable, {})

    def saved_since(self, stable: str) -> dict[PersistentCacheKey, PersistentCacheValue]:
        """The file's entries of this stored form as they are now (`add` them), read under
        the file's lock: called outside the tuner's, so that another thread's key is not
        held up while the file's lock is awaited. Empty, with a warning (once), where
        another process holds that lock past the wait."""
        assert self.persistent is not None
        try:
            return self.persistent.saved_since(stable)
        except LockedCacheFile as error:
            self._say_locked(error)
            return {}

    def add(self, entries: dict[PersistentCacheKey, PersistentCacheValue]) -> None:
        """Keep the entries `saved_since` read (under the tuner's lock)."""
        for pk, value in entries.items():
            self._stored.setdefault(pk.key, {})[pk.checksum] = (pk, value)

    def fastest_index(self, key: Any, stable: str, tunables: TunableSet) -> int | None:
        """The winner of the persisted entry of `key` (stored as `stable`) when it was tuned
        for this candidate list, as this tuner read and decided the file (`lacks` says
        whether to read it again first)."""
        self.check_key_type(key, stable)
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
        return index

    def declined(self, stable: str, checksum: str) -> None:
        """The entry of this stored form and candidate list, if any, is never served again
        (`Tuner.declined`)."""
        entry = self._stored.get(stable, {}).get(checksum)
        if entry is not None:
            self._declined[stable] = entry[1]

    def check_key_type(self, key: Any, stable: str) -> None:
        """Refuse a key whose stored form a key of another type already holds: two key
        dataclasses with the same fields (`SumKey(n=8)`, `MaxKey(n=8)`) differ in Python
        but not in the cache file, whose stored form is the fields alone, as the seed's
        serialized key is; the second set would be served the first one's winner. The seed
        rules it out by giving a tuner one key type; here it is said at the second key. The
        first is taken at its lookup, not at its decision: a key served from the cache file
        is never tuned in this process, and the second set would run its winner.

        A key equal to the first (`1`, `1.0`, `np.int64(1)`) is that key, in memory as in the
        file, and passes: a thread that met it while the first one's tuning was under way
        was refused, where it now waits for that tuning and is served its winner."""
        first = self._first_keys.setdefault(stable, key)
        known = _type_name(first)
        if known != _type_name(key) and first != key:
            raise TypeError(
                f"{self.name}: the key {key!r} has the stored form {stable}, as a {known} key"
                " this tuner looked up before it does: the cache cannot tell them apart, and"
                " one set would run the other's winner. Give each TunableSet its own"
                " LocalTuner (the seed's tuner has one key type), or a key field that differs"
            )

    def save(self, decision: TuneDecision, client: Client) -> None:
        """Keep a measured decision in memory, and in the persistent cache where there is one."""
        pk = PersistentCacheKey(stable_key(decision.key), decision.checksum)
        value = decision.to_cache_value()
        self._stored[pk.key] = {pk.checksum: (pk, value)}
        self._first_keys.setdefault(pk.key, decision.key)
        if self.persist and self.persistent is not None:
            if self.persistent.unreadable() is not None and self._said_unsaved:
                # Its load and the first save after it warned, naming the file: it is not
                # overwritten, the decisions stay in memory. Each later key said it again.
                return
            # A decision not saved earlier goes with this one, unless this one replaces it.
            updates = {k: v for k, v in self._unsaved.items() if k.key != pk.key}
            updates[pk] = value
            try:
                self.persistent.save(updates, device=self._device_block(client))
            except LockedCacheFile as error:
                for replaced in [k for k in self._unsaved if k.key == pk.key]:
                    self._unsaved.pop(replaced, None)
                self._unsaved[pk] = value
                self._client = client
                _HELD_BACK.add(self)
                self._say_locked(error)
            except CacheFileError as exc:
                self._said_unsaved = self.persistent.unreadable() is not None
                warnings.warn(
                    CacheFileWarning(f"{exc}; the decision is kept in memory only"),
                    stacklevel=caller_level(),
                )
            else:
                self._said_locked = False
                for saved, sent in updates.items():
                    # Only what this save sent: another thread's decision not saved
                    # meanwhile is sent by the next save.
                    if self._unsaved.get(saved) is sent:
                        self._unsaved.pop(saved, None)

    def _device_block(self, client: Client) -> Callable[[dict[str, Any] | None], dict[str, Any]]:
        """The file's device block for a save of this client's decisions."""

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
                block["fingerprint"] = client_fingerprint(client)
            return block

        return device

    def save_held_back(self) -> None:
        """Save the decisions held back while another process held the file's lock, waiting
        for it once more, a program's wait (`_save_held_back_at_exit`); where it is still
        held, say which decisions are lost with this process."""
        if not self._unsaved or self.persistent is None or self._client is None:
            return
        updates = dict(self._unsaved)
        # A program's wait at most: a `Tuner` given a cache of the pytest runs' wait (5
        # minutes) would hold the exit that long.
        self.persistent.lock_timeout = min(self.persistent.lock_timeout, PROGRAM_LOCK_TIMEOUT_S)
        self.persistent.wait_for_the_lock_again()
        try:
            self.persistent.save(updates, device=self._device_block(self._client))
        except LockedCacheFile as error:
            keys = ("key " if len(updates) == 1 else "keys ") + ", ".join(
                sorted(pk.key for pk in updates)
            )
            warnings.warn(
                CacheFileWarning(
                    f"{error}; this program ends without saving its decisions for {keys},"
                    " which the next run tunes again"
                ),
                stacklevel=1,
            )
        except CacheFileError as exc:
            warnings.warn(CacheFileWarning(f"{exc}; decisions not saved"), stacklevel=1)
        else:
            for saved, sent in updates.items():
                if self._unsaved.get(saved) is sent:
                    self._unsaved.pop(saved, None)

    def _say_locked(self, error: LockedCacheFile) -> None:
        """Warn, once until a save gets the lock again, that the program goes on without
        the file while another process holds its lock."""
        if self._said_locked:
            return
        self._said_locked = True
        warnings.warn(
            CacheFileWarning(
                f"{error}; this program goes on without waiting for it: new keys are tuned"
                " here and kept in memory, and the first later save that gets the lock"
                " writes them, else this program's exit (a process stopped or hung holding"
                " a lock holds it until it goes on or ends)"
            ),
            stacklevel=caller_level(),
        )


def _type_name(key: Any) -> str:
    kind = type(key)
    return f"{kind.__module__}.{kind.__qualname__}"


_HELD_BACK: weakref.WeakSet[PersistedEntries] = weakref.WeakSet()
"""The entries that held decisions back while another process held their file's lock: a
program that ended before a later save got the lock lost them without a word, though the
lock is often free by then (the other process's update done)."""


@atexit.register
def _save_held_back_at_exit() -> None:
    for entries in list(_HELD_BACK):
        try:
            entries.save_held_back()
        except CacheFileWarning as exc:  # the warning, under -W error
            # An exception here is printed as "Exception ignored in atexit callback" with a
            # traceback; one line says the same, and the next file is still tried. Any
            # other exception is a bug of ours, and keeps its traceback.
            print(f"pytest-autotune: {exc}", file=sys.stderr)


def _forget_held_back_in_child() -> None:
    """A child forked from a program that held decisions back: the parent saves them at its
    own exit; the child's exit, saving them again, waited for the lock once more."""
    _HELD_BACK.clear()


if hasattr(os, "register_at_fork"):  # POSIX
    os.register_at_fork(after_in_child=_forget_held_back_in_child)
