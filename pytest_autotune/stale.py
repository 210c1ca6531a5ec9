"""Cache entries no test makes now: named after `--autotune-update`, dropped by
`--autotune-prune`.

An update adds and replaces entries and never removes one, so a test renamed or deleted
leaves its file, and a parameter dropped from a test leaves the entry of its old key,
which nothing reads again but a package still ships. Only what the session can tell is
called stale: the file of a test that is gone from a module the session collected (or
whose module is gone), and the keys of a marked test every group of which the session
tuned. A test that `-k`, `-m` or the paths given left out keeps every entry: the session
collected its module, or its groups, without tuning them all. So does the file of a test gone
that holds the candidate list of a test left out with no file of its own: the same test
moved or renamed, whose baselines a prune of `-k other` deleted without a word.
"""

from __future__ import annotations

import hashlib
import os
import warnings
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_autotune.plugin_settings import PluginSettings
from pytest_autotune.tune.cache import LOCK_TIMEOUT_S, CacheFileError, PersistentCache
from pytest_autotune.tune.cache_format import PROJECT_ROOT_FIELD, TUNER_FIELD
from pytest_autotune.tune.cache_names import (
    cache_file_parts,
    cache_files,
    cache_path,
    legacy_tuner_files,
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
    checksums: Mapping[str, str] = field(default_factory=dict)
    """The checksum of each collected marked test's candidate list (`checksum_of` its
    names), by test, those that `-k`, a node id or `--lf` left out included: a test gone
    whose file holds one of them may be that test moved or renamed."""

    def to_json(self) -> dict[str, Any]:
        return {
            "defined": {module: sorted(names) for module, names in sorted(self.defined.items())},
            "groups": {test: sorted(groups) for test, groups in sorted(self.groups.items())},
            "rooted": self.rooted,
            "checksums": dict(sorted(self.checksums.items())),
        }

    def joined(self, data: Mapping[str, Any]) -> Collected:
        """These and a worker's (`to_json`)."""
        return Collected(
            _union(self.defined, data["defined"]),
            _union(self.groups, data["groups"]),
            self.rooted and bool(data["rooted"]),
            {**self.checksums, **data["checksums"]},
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
    left_out: tuple[str, ...] = ()
    """Of a whole stale file, the tests the session collected and did not tune, with no
    file of their own, whose candidate list it holds (`_left_out_owners`): the test gone
    may be one of them moved or renamed, so the file is kept and they are named."""


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
            entries = cache.load()
        keys = sorted({key.key for key in entries})
        tuner = cache.metadata().get(TUNER_FIELD)
        if tuner is None:
            # 0.1.0 stored no name: the file is a test's of this session by its name.
            tuner = _legacy_owner(path, {*tuned, *collected.groups})
        if not isinstance(tuner, str) or not names_a_test(tuner) or not keys:
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
            checksums = {key.checksum for key in entries}
            owners = _left_out_owners(path, tuner, checksums, collected, tuned)
            left_out = owners if stale[0] is None else ()
            found.append(Stale(path, tuner, *stale, held=tuple(keys), seen=seen, left_out=left_out))
    return found


def _file_name(module: str) -> str:
    """`module` (a tuner's, its undecoded bytes read as UTF-8: `collection.tuner_of_test`)
    as the file system names it; one of a lone surrogate no bytes make, as it is."""
    try:
        return os.fsdecode(module.encode("utf-8", "surrogateescape"))
    except UnicodeEncodeError:
        return module


def _left_out_owners(
    path: Path,
    tuner: str,
    checksums: Collection[str],
    collected: Collected,
    tuned: Mapping[str, Mapping[str, str]],
) -> tuple[str, ...]:
    """The collected tests that this session did not tune (`-k`, a node id, `--lf` left
    them out) and that have no file in `path`'s folder, whose candidate list one of
    `checksums` is: where the file is `tuner`'s, a test gone, one of them may be that test
    moved or renamed. Those of its name (`test_sum`, moved to another file) where any is."""
    folder = path.parent
    owners = sorted(
        test
        for test, checksum in collected.checksums.items()
        if checksum in checksums
        and test not in tuned
        and not (folder / cache_file_parts(folder.name, test)[1]).exists()
        and not any((folder / name).exists() for name in legacy_tuner_files(test))
    )
    name = tuner.partition("::")[2]
    named = [test for test in owners if test.partition("::")[2] == name]
    return tuple(named or owners)


def names_a_test(tuner: str) -> bool:
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
    # In order: 0.1.0 gave `a b/t.py::t` and `a_b/t.py::t` one name; which owns it must
    # not change from run to run with a set's order.
    for tuner in sorted(tuners):
        if (
            path.name in legacy_tuner_files(tuner)
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
    # The module's file as the file system's encoding names it: `test_café.py`, where
    # that is ASCII (`LC_ALL=C PYTHONUTF8=0`), could not be looked up, and read as gone.
    path = rootpath / _file_name(module)
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
    found = session_stale(settings, records, collected, tuned_groups(records), taken_over)
    lines, written = [], True
    for item in found:
        path = settings.relative(item.path)
        if item.left_out:
            lines.append(_kept(item, settings))
            continue
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


def session_stale(
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


def tuned_groups(records: Iterable[AutotuneRecord]) -> dict[str, dict[str, str]]:
    """The groups the session tuned, by tuner, each with its stable key."""
    tuned: dict[str, dict[str, str]] = {}
    for record in records:
        group = record.extra.get("group")
        # A group whose key= callable failed was not tuned at any key the session knows:
        # counted as tuned at its parameters' ids, its test's real keys were called stale.
        if isinstance(group, str) and not record.extra.get("key_unknown"):
            tuned.setdefault(record.tuner, {})[group] = serialize_key_json(record.key)
    return tuned


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


def _kept(item: Stale, settings: PluginSettings) -> str:
    """The line of a whole stale file kept for the tests the session left out that may be
    its test moved or renamed: how to carry its baselines over to each."""
    folder = item.path.parent
    moves = "; ".join(
        f"if {test} is {item.tuner} moved or renamed, move the file to"
        f" {settings.relative(folder / cache_file_parts(folder.name, test)[1])} and set its"
        f' "tuner" to "{test}"'
        for test in item.left_out
    )
    tests = ", ".join(item.left_out)
    held = (
        f"{tests}, which this session did not tune and which has no baseline under its name"
        if len(item.left_out) == 1
        else f"tests this session did not tune that have no baseline under their names ({tests})"
    )
    return (
        f"kept {settings.relative(item.path)}: {item.reason}, but it holds the candidate list"
        f" of {held}: {moves} to keep its baselines (a session that tunes it judges the file"
        " again)"
    )


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
        except OSError:
            # A journal made a folder, or a file of another user's: the run that reads it
            # names it; here it ended the run in a traceback once the tests had passed.
            digest.update(b"\1")
    return digest.hexdigest()


__all__ = [
    "Collected",
    "Stale",
    "defined_names",
    "find_stale",
    "names_a_test",
    "review",
    "session_stale",
    "tuned_groups",
]
