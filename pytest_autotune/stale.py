"""Cache entries no test makes now: named after `--autotune-update`, dropped by
`--autotune-prune`.

An update adds and replaces entries and never removes one, so a test renamed or deleted
leaves its file, and a parameter dropped from a test leaves the entry of its old key,
which nothing reads again but a package still ships. Only what the session can tell is
called stale: the file of a test that is gone from a module the session collected (or
whose module is gone), and the keys of a marked test every group of which the session
tuned. A test that `-k`, `-m` or the paths given left out keeps every entry: the session
collected its module, or its groups, without tuning them all.
"""

from __future__ import annotations

import hashlib
import json
import math
import warnings
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_autotune.plugin_settings import PluginSettings
from pytest_autotune.report.extra import RecordExtra
from pytest_autotune.tune.cache import LOCK_TIMEOUT_S, CacheFileError, PersistentCache
from pytest_autotune.tune.cache_format import PROJECT_ROOT_FIELD, TUNER_FIELD
from pytest_autotune.tune.cache_names import (
    cache_file_parts,
    cache_files,
    cache_path,
    legacy_cache_file_parts,
)
from pytest_autotune.tune.files import lock_beside
from pytest_autotune.tune.journal import journal_path
from pytest_autotune.tune.key import serialize_key_json
from pytest_autotune.tune.records import AutotuneRecord


@dataclass(frozen=True)
class Collected:
    """What the session collected: plain data, so that each pytest-xdist worker sends its
    own and the controller joins them."""

    defined: Mapping[str, frozenset[str]] = field(default_factory=dict)
    """The names each collected module defines (`test_sum`, `TestSum::test_sum`), by the
    module's node id (`tests/test_a.py`): read from the module itself, so a test that `-k`,
    a node id or `--lf` left out of the session is still known to exist."""
    groups: Mapping[str, frozenset[str]] = field(default_factory=dict)
    """Every group of each marked test (its node id, which its cache file is named after),
    `-k` and `-m` deselections included; empty where the items were chosen in collection
    (a node id with parameters, `--lf`), which can leave groups out unseen."""
    rooted: bool = True
    """Whether every collected module's node id is its path from the root dir, which alone
    tells that a module is gone: a test outside the root dir (`--rootdir`, `--pyargs` of an
    installed package) is named from the folder it was collected from, and the file an
    update had just written for it was called gone, and pruned."""

    def to_json(self) -> dict[str, Any]:
        return {
            "defined": {module: sorted(names) for module, names in sorted(self.defined.items())},
            "groups": {test: sorted(groups) for test, groups in sorted(self.groups.items())},
            "rooted": self.rooted,
        }

    def joined(self, data: Mapping[str, Any]) -> Collected:
        """These and a worker's (`to_json`)."""
        return Collected(
            _union(self.defined, data["defined"]),
            _union(self.groups, data["groups"]),
            self.rooted and bool(data["rooted"]),
        )


def _union(
    mine: Mapping[str, frozenset[str]], theirs: Mapping[str, Iterable[str]]
) -> dict[str, frozenset[str]]:
    joined = dict(mine)
    for name, values in theirs.items():
        joined[name] = joined.get(name, frozenset()) | frozenset(values)
    return joined


NESTING = 4
"""The deepest class nesting whose tests' names `defined_names` gives (`A::B::C::D::test`):
a test in a deeper class is never called gone."""


def defined_names(module: object) -> frozenset[str]:
    """The names a test module defines, those of its classes as `Class::name`, and of the
    classes in them as `Class::Inner::name` (pytest collects nested classes), up to
    `NESTING` deep: the last part of its tests' node ids. A renamed test of a nested class
    was otherwise never called stale, nor its file offered to the test's new name."""
    names: set[str] = set()

    def add(prefix: str, namespace: object, depth: int) -> None:
        for name in dir(namespace):
            names.add(prefix + name)
            value = getattr(namespace, name, None)
            if isinstance(value, type) and depth < NESTING and not name.startswith("__"):
                add(f"{prefix}{name}::", value, depth + 1)

    add("", module, 0)
    return frozenset(names)


@dataclass(frozen=True)
class Stale:
    """A cache file no test writes now (`keys` None), or the entries of it no test makes."""

    path: Path
    tuner: str
    keys: tuple[str, ...] | None
    """The stable keys of the stale entries; None when the whole file is."""
    reason: str
    held: tuple[str, ...] = ()
    """The stable keys the file held when judged, and `seen`, a digest of its bytes (and
    its journal's) then: a whole stale file is deleted, under its lock, only if no other
    process wrote it since; one that did keeps what it wrote (`_prune`)."""
    seen: str = ""


def find_stale(
    cache_dir: Path,
    device_ids: Iterable[str],
    collected: Collected,
    tuned: Mapping[str, Mapping[str, str]],
    rootpath: Path,
    project_root: str = "..",
    shared: bool = False,
    taken_over: Collection[Path] = (),
) -> list[Stale]:
    """The stale files and entries in the folders of `device_ids`; `tuned`: the groups this
    session tuned, by tuner, each with its stable key. A file that another project updated
    (its `PROJECT_ROOT_FIELD` is not `project_root`, this root dir as seen from the cache
    directory) is never judged: its tests, under paths that are folders here too, were
    called gone, and pruned. In a directory outside the root dir (`shared`), neither is a
    file that names no project (written before the field): whose it is cannot be told.
    Nor is a file `taken_over`, which this session's update took from another project:
    it names this one now, but its entries of keys this project does not make are most
    likely the other's."""
    found = []
    folders = {cache_path(cache_dir, device_id, "-").parent for device_id in device_ids}
    for path in sorted(p for folder in folders if folder.is_dir() for p in cache_files(folder)):
        if path in taken_over:
            continue
        seen = _digest(path)  # before the read: a write after it is seen by the prune
        cache = PersistentCache(path)
        with warnings.catch_warnings():
            # An unreadable file is none of this: the run that reads it says so.
            warnings.simplefilter("ignore")
            keys = sorted({key.key for key in cache.load()})
        tuner = cache.metadata().get(TUNER_FIELD)
        if tuner is None:
            # 0.1.0 stored no name: the file is a test's of this session by its name.
            tuner = _legacy_owner(path, {*tuned, *collected.groups})
        if not isinstance(tuner, str) or not _names_a_test(tuner) or not keys:
            continue  # a library's tuner (`mylib.ops`), or a file of no test named in it
        owner = cache.metadata().get(PROJECT_ROOT_FIELD)
        if owner != project_root and (owner is not None or shared):
            continue  # another project's, or in a shared directory of no project named
        if not _filed_under_its_name(path, tuner):
            # Moved or copied by hand (a renamed test's file, its "tuner" not yet set): the
            # run reading it under its name says how to keep its entries, and never writes
            # it; deleting it as the stale file of the test it names would lose them.
            continue
        stale = _stale(tuner, keys, collected, tuned, rootpath)
        if stale is not None:
            found.append(Stale(path, tuner, *stale, held=tuple(keys), seen=seen))
    return found


def _names_a_test(tuner: str) -> bool:
    """Whether `tuner` is a test's node id (`tests/test_ops.py::test_sum`), whose file and
    keys the session can judge: a library's tuner may hold `::` too (`tuner="mylib::sum"`),
    and was called "gone" because no file `mylib` exists, and pruned."""
    module, colons, _ = tuner.partition("::")
    return bool(colons) and module.endswith(".py")


def _filed_under_its_name(path: Path, tuner: str) -> bool:
    """Whether `path` has the name `tuner`'s cache takes (0.1.0's names stored no tuner)."""
    return (
        path.name == cache_file_parts(path.parent.name, tuner)[1]
        or _legacy_owner(path, (tuner,)) == tuner
    )


def _legacy_owner(path: Path, tuners: Iterable[str]) -> str | None:
    """The tuner among `tuners` whose cache `path` is under the name 0.1.0 gave it, where
    that name is read, its new name having no file (`tune_cache`); None for no such tuner.
    Such a file stores no tuner, so it was never judged: the gate of a test whose ids the
    upgrade changed read "no baseline" with no word of the file's entries of its old keys."""
    folder = path.parent.name
    for tuner in tuners:
        if (
            path.name == legacy_cache_file_parts(folder, tuner)[1]
            and not (path.parent / cache_file_parts(folder, tuner)[1]).exists()
        ):
            return tuner
    return None


def _stale(
    tuner: str,
    keys: list[str],
    collected: Collected,
    tuned: Mapping[str, Mapping[str, str]],
    rootpath: Path,
) -> tuple[tuple[str, ...] | None, str] | None:
    module, _, name = tuner.partition("::")
    path = rootpath / module
    # Gone only from a folder that is still there: a cache directory shared by several
    # projects (`autotune_cache_dir = ../.autotune` in a monorepo) holds the files of
    # tests under other roots, whose folders are no paths here.
    if collected.rooted and not path.exists() and path.parent.is_dir():
        return None, f"{module} is gone"
    defined = collected.defined.get(module)
    if defined is not None and name.count("::") <= NESTING and name not in defined:
        return None, f"{module} defines no test {name} now (renamed or deleted)"
    groups = collected.groups.get(tuner)
    made = tuned.get(tuner, {})
    if not groups or not groups <= made.keys():
        # A group of it was not tuned here (left out by `-k`, skipped): its keys are
        # unknown, so none of the file's entries is called stale.
        return None
    old = tuple(key for key in keys if key not in set(made.values()))
    if not old:
        return None
    return old, f"no group of {tuner} makes {'this key' if len(old) == 1 else 'these keys'} now"


def review(
    records: Iterable[AutotuneRecord],
    collected: Collected,
    settings: PluginSettings,
    taken_over: Collection[Path] = (),
) -> tuple[list[str], bool]:
    """After an update: a line for the summary per stale file, naming the stale entries
    and how to drop them, or, with `--autotune-prune`, per file pruned; and whether every
    prune was written (a file that cannot be is named, and the run fails). `taken_over`:
    the files this update took from another project (`find_stale`)."""
    records = list(records)
    found = _found(settings, records, collected, _tuned(records), taken_over)
    lines, written = [], True
    for item in found:
        path = settings.relative(item.path)
        if not settings.prune:
            lines.append(f"stale: {path}: {_what(item)}; {_how(item)}")
            continue
        try:
            _prune(item)
        except (CacheFileError, OSError) as error:
            lines.append(f"error: {path}: not pruned: {error}")
            written = False
        else:
            lines.append(f"pruned {path}: {_what(item)}{_left(item)}")
    return lines, written


def moved_baselines(
    records: Iterable[AutotuneRecord],
    collected: Collected,
    settings: PluginSettings,
) -> list[str]:
    """A note for each test that had no baseline where a stale file or stale entries hold
    its candidate list: the same test renamed or moved (the whole stale file of a test gone
    holds its keys), or its keys renamed (its own file holds keys none of its groups makes
    now: a fixture's ids, a `key=`). The gate said "no baseline ...; --autotune-update
    records one" and the update "stale: ...", so a user who did both threw the test's
    baselines and their sessions away, where moving the file and setting its "tuner", or
    setting the entries' keys, keeps them (README, "Files"). Under `--autotune-prune` it is
    asked before the prune (`review`) deletes them, and says how to get them back from git:
    a prune after a rename threw the baselines away with no word of the rename."""
    records = list(records)
    tuned = _tuned(records)
    # Only tests without a baseline ask: a gate whose every group has one reads no file.
    records = [
        record
        for record in records
        if _names_a_test(record.tuner) and RecordExtra.from_json(record.extra).baseline is None
    ]
    if not records:
        return []
    stale = _found(settings, records, collected, tuned)
    held = {item.path: _pairs(item.path) for item in stale}
    lines = []
    said: set[str] = set()
    rounding_asked: set[str] = set()  # `_rounded` answers for every record of its test
    # By test, as the summary lists groups, whichever order (or worker) tuned them.
    for record in sorted(records, key=lambda r: r.tuner):
        if record.tuner in said:
            continue
        path = cache_path(settings.cache_dir, record.device_id, record.tuner)
        pair = (serialize_key_json(record.key), record.checksum)
        gone = (i for i in stale if i.keys is None and i.path.parent == path.parent)
        item = next((i for i in gone if pair in held[i.path]), None)
        if item is not None:
            said.add(record.tuner)
            lines.append(_moved(record.tuner, item, path, settings))
            continue
        # Its own file, or the file of the name 0.1.0 gave it, read while that has none.
        renamed = next(
            (
                i
                for i in stale
                if i.keys is not None and i.tuner == record.tuner and i.path.parent == path.parent
            ),
            None,
        )
        if renamed is not None and any(
            key in (renamed.keys or ()) and checksum == record.checksum
            for key, checksum in held[renamed.path]
        ):
            said.add(record.tuner)
            lines.append(_renamed(record.tuner, renamed, records, settings))
            continue
        # No entry of it called stale (`-k` left some of its groups out, so its keys are
        # not all known): a float key's last digits that moved still say why it has none.
        if record.tuner in rounding_asked:
            continue
        rounding_asked.add(record.tuner)
        rounded = _rounded(record.tuner, path, records, tuned, settings)
        if rounded:
            said.add(record.tuner)
            lines.append(rounded)
    return lines


def _found(
    settings: PluginSettings,
    records: Iterable[AutotuneRecord],
    collected: Collected,
    tuned: Mapping[str, Mapping[str, str]],
    taken_over: Collection[Path] = (),
) -> list[Stale]:
    """`find_stale` in the device folders of `records`, under the session's settings."""
    return find_stale(
        settings.cache_dir,
        {record.device_id for record in records},
        collected,
        tuned,
        settings.rootpath,
        settings.project_root,
        settings.shared_cache_dir,
        taken_over,
    )


def _tuned(records: Iterable[AutotuneRecord]) -> dict[str, dict[str, str]]:
    """The groups the session tuned, by tuner, each with its stable key."""
    tuned: dict[str, dict[str, str]] = {}
    for record in records:
        group = record.extra.get("group")
        # A group whose key= callable failed was not tuned at any key the session knows:
        # counted as tuned at its parameters' ids, its test's real keys were called stale.
        if isinstance(group, str) and not record.extra.get("key_unknown"):
            tuned.setdefault(record.tuner, {})[group] = serialize_key_json(record.key)
    return tuned


def _moved(tuner: str, item: Stale, path: Path, settings: PluginSettings) -> str:
    name = tuner.partition("::")[2]
    old = settings.relative(item.path)
    replacing = " (in place of the one this update wrote)" if settings.update else ""
    if settings.prune:
        return (
            f"note: {tuner}: no baseline under its name, and {old}, pruned now, held its keys"
            f" and candidate list for {item.tuner} ({item.reason}): if {name} is that test"
            f" renamed or moved, restore the file from git where it was committed (git checkout"
            f" -- {old}), move it to"
            f' {settings.relative(path)}{replacing} and set its "tuner" to "{tuner}" to keep'
            " its baselines"
        )
    return (
        f"note: {tuner}: no baseline under its name, but {old} holds"
        f" its keys and candidate list for {item.tuner} ({item.reason}): if {name} is that"
        f" test renamed or moved, move the file to {settings.relative(path)}{replacing} and"
        f' set its "tuner" to "{tuner}" to keep its baselines'
    )


def _renamed(
    tuner: str, item: Stale, records: Iterable[AutotuneRecord], settings: PluginSettings
) -> str:
    new = sorted({serialize_key_json(r.key) for r in records if r.tuner == tuner})
    what = "key" if len(new) == 1 else "keys"
    old = ", ".join(item.keys or ())
    entries = " (in place of the entry this update wrote)" if settings.update else ""
    rest = (
        "this update recorded the new ones, and --autotune-prune drops the old"
        if settings.update
        else "--autotune-update records the new ones, and --autotune-prune drops the old"
    )
    if settings.prune:
        # Entries an upgrade's first save carried over from the file of 0.1.0's name are
        # still there; the new file, written by this run, may be in no commit to restore.
        legacy = item.path.with_name(legacy_cache_file_parts(item.path.parent.name, tuner)[1])
        kept = legacy != item.path and set(item.keys or ()) <= {
            key for key, _ in (_pairs(legacy) if legacy.is_file() else ())
        }
        restore = (
            f"copy those entries from {settings.relative(legacy)} (0.1.0's name for the file,"
            " which still holds them) into it, and set each one's"
            if kept
            else "restore the file from git and set each old entry's"
        )
        return (
            f"note: {tuner}: no baseline for its {what} {', '.join(new)}, and"
            f" {settings.relative(item.path)} held baselines of its candidate list at keys no"
            f" group of it makes now ({old}), pruned now: if those are its keys renamed (its"
            f" parameters' ids, its key=), {restore}"
            f' "key" to its new key{entries} to keep their baselines'
            f"{_rounding(new, item.keys or ())}"
        )
    return (
        f"note: {tuner}: no baseline for its {what} {', '.join(new)}, but"
        f" {settings.relative(item.path)} holds baselines of its candidate list at keys no"
        f" group of it makes now ({old}): if those are its keys renamed (its parameters'"
        ' ids, its key=), set each old entry\'s "key" in the file to its new key'
        f"{entries} to keep their baselines; else {rest}{_rounding(new, item.keys or ())}"
    )


def _rounded(
    tuner: str,
    path: Path,
    records: Iterable[AutotuneRecord],
    tuned: Mapping[str, Mapping[str, str]],
    settings: PluginSettings,
) -> str:
    """A note where the test's own file holds a baseline of its candidate list at a key no
    group of this session makes that differs from one of its new keys only in a float's
    last digits; empty where none does, or the file is not there."""
    mine = [record for record in records if record.tuner == tuner]
    new = sorted({serialize_key_json(record.key) for record in mine})
    if not path.is_file():
        return ""
    made = set(tuned.get(tuner, {}).values())
    checksums = {record.checksum for record in mine}
    old = sorted(
        key
        for key, checksum in _pairs(path)
        if checksum in checksums
        and key not in made
        and any(key != new_key and _close(_loaded(key), _loaded(new_key)) for new_key in new)
    )
    if not old:
        return ""
    what = "key" if len(new) == 1 else "keys"
    held = (
        "a baseline of its candidate list at key"
        if len(old) == 1
        else ("baselines of its candidate list at keys")
    )
    return (
        f"note: {tuner}: no baseline for its {what} {', '.join(new)}, but"
        f" {settings.relative(path)} holds {held} {', '.join(old)}{_rounding(new, old)}"
    )


def _rounding(new: Iterable[str], old: Iterable[str]) -> str:
    """Where a new key and an old one differ only in a float's last digits, why: a key
    computed in floating point (`key=lambda x: x.sum()`) reads otherwise from run to run
    (another BLAS, another order of summation), and no run finds the last one's baseline."""
    # Each key read once: the pairs are as many as the two counts' product.
    olds = [(old_key, _loaded(old_key)) for old_key in old]
    for new_key in new:
        new_value = _loaded(new_key)
        for old_key, old_value in olds:
            if new_key != old_key and _close(new_value, old_value):
                return (
                    f" ({new_key} and {old_key} differ only in a float's last digits: a key"
                    " computed in floating point reads otherwise from one run to the next;"
                    " build it of ints and strings, such as sizes, or round() it)"
                )
    return ""


def _loaded(key: str) -> Any:
    try:
        return json.loads(key)
    except ValueError:
        return key


def _close(a: Any, b: Any) -> bool:
    """Whether two keys' JSON values are equal but for floats within rounding of each
    other (one float in each, at least: a whole float reads as an int)."""
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(map(_close, a, b))
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_close(a[k], b[k]) for k in a)
    numbers = (int, float)
    if isinstance(a, bool) or isinstance(b, bool):  # JSON's true is no number
        return a == b and type(a) is type(b)
    if isinstance(a, numbers) and isinstance(b, numbers) and float in (type(a), type(b)):
        return math.isclose(a, b, rel_tol=1e-9)
    return bool(a == b)


def _pairs(path: Path) -> set[tuple[str, str]]:
    """The (stable key, checksum) of every entry of a cache file."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # read already by `find_stale`
        return {(pk.key, pk.checksum) for pk in PersistentCache(path).load()}


def _what(item: Stale) -> str:
    if item.keys is None:
        return item.reason
    keys = ", ".join(item.keys)
    entries = "1 entry" if len(item.keys) == 1 else f"{len(item.keys)} entries"
    return f"{entries} (key {keys}): {item.reason}"


def _left(item: Stale) -> str:
    """What a file pruned of some entries holds now: the update's "updated FILE (1 entry
    written; the file holds 3)", said before the prune, counted the pruned ones."""
    if item.keys is None or not item.path.exists():
        return ""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        held = len(PersistentCache(item.path).load())
    return f"; the file holds {'1 entry' if held == 1 else f'{held} entries'} now"


def _how(item: Stale) -> str:
    if item.keys is None:
        return "delete the file, or run --autotune-prune, which does"
    return "--autotune-prune (an update that drops them) leaves the other entries as they are"


def _prune(item: Stale) -> None:
    if item.keys is None:
        # Under the file's lock, as every save writes it: a save midway (its journal
        # appended, the file not yet replaced) is never cut in two.
        with lock_beside(item.path, LOCK_TIMEOUT_S):
            if _digest(item.path) == item.seen:
                item.path.unlink(missing_ok=True)
                journal_path(item.path).unlink(missing_ok=True)
                return
        # Written since it was judged (a program's tuner, another checkout's update): the
        # entries judged stale go, and what the other process wrote stays; a file that
        # holds nothing then (its keys written again, or the file deleted) goes too, never
        # left, or made, as a file of no entry.
        if not item.path.exists():
            return
        PersistentCache(item.path, item.tuner).save({}, remove=item.held)
        left = _digest(item.path)  # read apart from the lock, which a load may take
        if item.path.exists() and not PersistentCache(item.path).load():
            with lock_beside(item.path, LOCK_TIMEOUT_S):
                if _digest(item.path) == left:
                    item.path.unlink(missing_ok=True)
                    journal_path(item.path).unlink(missing_ok=True)
    else:
        PersistentCache(item.path, item.tuner).save({}, remove=item.keys)


def _digest(path: Path) -> str:
    """A digest of a cache file's bytes and its journal's; empty where neither exists."""
    digest = hashlib.sha256()
    for part in (path, journal_path(path)):
        try:
            digest.update(part.read_bytes())
        except FileNotFoundError:
            digest.update(b"\0")
    return digest.hexdigest()


__all__ = ["Collected", "Stale", "defined_names", "find_stale", "moved_baselines", "review"]
