"""The caches of a library's `LocalTuner`: what its package ships, under what its user tuned.

A library tunes in CI, commits `<package>/.autotune/<device_id>/<tuner>.json` and ships it as
package data. At run time those files are read through `importlib.resources` and never
written: site-packages may be read-only, and it is shared by every user of an environment.
A key they do not serve is tuned once and written to the user's own cache directory
(`platformdirs`: `~/.cache/pytest-autotune` on Linux), never to the working directory.
"""

from __future__ import annotations

import logging
import os
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pytest_autotune.tune.cache import (
    PROGRAM_LOCK_TIMEOUT_S,
    CacheFileError,
    PersistentCache,
    PersistentCacheKey,
    PersistentCacheValue,
    cache_file_parts,
    tuner_cache,
)
from pytest_autotune.tune.cache_format import FileInPlaceOfFolder, other_tuner
from pytest_autotune.tune.cache_names import legacy_tuner_files
from pytest_autotune.tune.cache_read import CacheContents, parse_cache
from pytest_autotune.tune.device_class import DeviceClass, device_class, nearest
from pytest_autotune.tune.errors import CacheFileWarning, caller_level
from pytest_autotune.tune.journal import journal_path

if TYPE_CHECKING:
    from importlib.resources.abc import Traversable

SHIPPED_FOLDER = ".autotune"
"""The cache root inside a package, as the plugin writes it when the library's tests run
with `autotune_cache_dir = "<package>/.autotune"`."""

APP_NAME = "pytest-autotune"

logger = logging.getLogger("pytest_autotune")

Entries = dict[PersistentCacheKey, PersistentCacheValue]


def user_cache_dir() -> Path:
    """The per-user cache root (`platformdirs`; `$XDG_CACHE_HOME/pytest-autotune` on Linux).

    Imported here: only a library's tuner of no explicit `cache_dir` needs it, and pytest
    runs and programs that name their cache folder start without it. RuntimeError where
    the process has no home directory."""
    import platformdirs

    root = platformdirs.user_cache_path(APP_NAME, appauthor=False)
    if not root.is_absolute():
        # Where it finds no home, platformdirs before 4 (3.0 is our floor) gives the path
        # unexpanded, "~/.cache/pytest-autotune", which tuning made in the working
        # directory; newer ones raise this, which `library_cache` turns into a warning.
        raise RuntimeError(
            f"could not determine the home directory for {str(root)!r},"
            " set an absolute HOME or XDG variable"
        )
    return root


@dataclass(frozen=True, slots=True)
class Shipped:
    """What a package ships for one tuner on one device."""

    exact: Entries = field(default_factory=dict)
    """The entries tuned on this device id."""
    nearby: Entries = field(default_factory=dict)
    """The entries of the nearest device of the same class (`device_class`), if any: they
    serve the keys `exact` lacks."""


def shipped_caches(
    package: str,
    device_id: str,
    tuner_name: str,
    fingerprint: Callable[[], Mapping[str, Any]] | None,
) -> Shipped:
    """The shipped entries of `tuner_name` for `device_id`; with `fingerprint` (this device's,
    called only when another device's file is shipped), also those of the nearest device
    of the same class."""
    root = _shipped_root(package)
    if root is None:
        return Shipped()
    folder, name = cache_file_parts(device_id, tuner_name)
    own = _read_named(root / folder, tuner_name, name)
    exact = own.entries if own is not None else {}
    if fingerprint is None:
        return Shipped(exact)
    others: dict[str, CacheContents] = {}
    for sub in root.iterdir():
        if sub.name != folder and sub.is_dir():
            contents = _read_named(sub, tuner_name, name)
            if contents is not None and contents.device is not None:
                others[str(contents.device.get("id", sub.name))] = contents
    if not others:
        return Shipped(exact)
    mine = device_class(device_id, fingerprint())
    classes = {
        other: device_class(other, contents.device.get("fingerprint") or {})
        for other, contents in others.items()
        if contents.device is not None
    }
    near = nearest(mine, classes) if mine is not None else None
    if mine is None or near is None:
        if own is not None:
            return Shipped(exact)
        # Said as the nearest class's use is: else a library's author could not tell which
        # of its users tune every key the package ships for other devices.
        shipped = ", ".join(
            f"{other} (class {_class_name(c)})" for other, c in sorted(classes.items())
        )
        logger.info(
            "%s: %s ships no winner for %s (class %s) nor its class, only for %s: its keys"
            " are tuned on this machine",
            tuner_name,
            package,
            device_id,
            _class_name(mine),
            shipped,
        )
        return Shipped(exact)
    logger.info(
        "%s: keys %s ships no winner for on %s take those of %s (class %s)",
        tuner_name,
        package,
        device_id,
        near,
        mine.name,
    )
    return Shipped(exact, others[near].entries)


def _class_name(found: DeviceClass | None) -> str:
    # A fingerprint without the fields of a class: a file written before the CPU's carried
    # its `isa`, or a client's of its own.
    return found.name if found is not None else "unknown: its fingerprint does not say"


def _shipped_root(package: str) -> Traversable | None:
    try:
        root = resources.files(package) / SHIPPED_FOLDER
    except ModuleNotFoundError:
        # `local_tuner(package="mylib")` with a typo would never serve a shipped winner,
        # and every user would pay for tuning, with nothing to say why.
        warnings.warn(
            CacheFileWarning(
                f"package {package!r} of a LocalTuner cannot be imported: no shipped cache"
                " is read from it (is the name spelled as the package imports?)"
            ),
            stacklevel=caller_level(),
        )
        return None
    except (TypeError, AttributeError):
        # A module that is no package ships no folder, nor does one of no spec, which
        # importlib.resources fails on with an AttributeError: the module a script run by
        # `runpy.run_path` is while it runs (`<run_path>`), one made with `types.ModuleType`.
        return None
    return root if root.is_dir() else None


def _read_named(folder: Traversable, tuner_name: str, name: str) -> CacheContents | None:
    """The shipped file of `tuner_name` in a device's folder: under its name, else under a
    name pytest-autotune 0.1.0 gave it (`legacy_tuner_files`), if that one does not store
    another tuner's name; one storing another name under its own is a collision, reported
    and ignored."""
    own = _read(folder, name)
    if own is not None:
        if own.tuner in (None, tuner_name):
            return own
        _ignore(f"{folder / name}: {other_tuner(own.tuner, tuner_name)}")
        return None
    for legacy in legacy_tuner_files(tuner_name):
        older = _read(folder, legacy) if legacy != name else None
        if older is not None and older.tuner in (None, tuner_name):
            return older
    return None


def _read(folder: Traversable, name: str) -> CacheContents | None:
    """A shipped file's contents, with its journal's entries if it ships one; None when it
    is missing, or unreadable (with a warning: the library still works, it tunes as if
    nothing were shipped)."""
    resource = folder / name
    if not resource.is_file():
        return None
    journal = folder / journal_path(Path(name)).name
    try:
        return parse_cache(
            resource.read_bytes().decode("utf-8"),
            str(resource),
            journal.read_bytes() if journal.is_file() else None,
        )
    except UnicodeDecodeError as error:
        reason = f"{resource}: is not UTF-8 text: {error}"
    except CacheFileError as error:
        reason = str(error)
    _ignore(reason)
    return None


def _ignore(reason: str) -> None:
    warnings.warn(
        CacheFileWarning(f"{reason}; this shipped cache is ignored"), stacklevel=caller_level()
    )


class LibraryCache(PersistentCache):
    """The user's cache file of one tuner on one device, read over what its package ships.

    Decisions are saved to the user's file only. For a key and candidate list both hold, the
    user's entry wins: it was measured on this very machine. Entries of one key for other
    candidate lists are all kept, and the tuner serves the one of its set's list: after an
    upgrade, a user's entry for the old list must not hide the winner the new version ships
    (it would be tuned again at once), nor a stale shipped entry hide one the user tuned.
    """

    def __init__(self, own: PersistentCache, shipped: Shipped, package: str | None = None) -> None:
        super().__init__(
            own.path,
            own.name,
            legacy=own.legacy,
            journal=own.journal,
            set_aside_damaged=own.set_aside_damaged,
            device_id=own.device_id,
            lock_timeout=own.lock_timeout,
        )
        self.shipped = shipped
        self.package = package
        """The package whose shipped caches `shipped` holds, None where none ships them."""

    def advice(self, error: CacheFileError) -> str:
        if isinstance(error, FileInPlaceOfFolder) and self.package is not None:
            # Not the cache_dir a pytest run is pointed to: a library's user given that
            # advice lost every winner the package ships, which a cache_dir replaces.
            return (
                "the file in the folder's place is no cache file: move it aside (a cache_dir,"
                f" PYTEST_AUTOTUNE_CACHE_DIR, would replace the winners {self.package} ships"
                " as well)"
            )
        return super().advice(error)

    def load(self) -> Entries:
        own = super().load()
        chosen: Entries = {}
        for layer in (self.shipped.nearby, self.shipped.exact, own):
            chosen.update(layer)
        return chosen


def library_cache(
    package: str | None,
    device_id: str,
    tuner_name: str,
    fingerprint: Callable[[], Mapping[str, Any]] | None,
) -> PersistentCache:
    """The cache of a library's tuner: the user's file over `package`'s shipped files."""
    shipped = shipped_caches(package, device_id, tuner_name, fingerprint) if package else Shipped()
    try:
        root = user_cache_dir()
    except RuntimeError as error:
        # platformdirs finds no home: HOME unset under a user id with no passwd entry (a
        # container run as an arbitrary uid). It raised out of the library's first call.
        warnings.warn(
            CacheFileWarning(
                f"no per-user cache folder ({error}): keys the shipped caches lack are tuned"
                " in each process, and kept in memory only"
            ),
            stacklevel=caller_level(),
        )
        return ShippedOnly(shipped, tuner_name)
    # Only tuning writes the user's file: a damaged one is set aside, not kept forever.
    own = tuner_cache(
        root,
        device_id,
        tuner_name,
        journal=True,
        set_aside_damaged=True,
        lock_timeout=PROGRAM_LOCK_TIMEOUT_S,
    )
    return LibraryCache(own, shipped, package)


class ShippedOnly(PersistentCache):
    """What a package ships for one tuner on one device, where the user has no cache folder:
    no file is read but the shipped ones, and none is written."""

    def __init__(self, shipped: Shipped, tuner_name: str) -> None:
        super().__init__(os.devnull, tuner_name)  # a path no method below reads or writes
        self.shipped = shipped

    def load(self) -> Entries:
        return {**self.shipped.nearby, **self.shipped.exact}

    def saved_since(self, key: str) -> Entries:
        return {}

    def save(self, *args: Any, **kwargs: Any) -> None:
        """Nothing: there is nowhere to save to (`library_cache` said so once)."""
