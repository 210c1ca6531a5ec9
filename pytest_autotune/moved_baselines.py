"""Where a test without a baseline may have left it: a note for each test whose candidate
list a stale file or stale entries hold (the test renamed or moved, its keys renamed), or
its own file at a key that differs from a new one only in a float's last digits.

The stale files and entries are `stale`'s, judged by the same rules.
"""

from __future__ import annotations

import json
import math
import warnings
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from pytest_autotune.plugin_settings import PluginSettings
from pytest_autotune.report.extra import RecordExtra
from pytest_autotune.stale import Collected, Stale, names_a_test, session_stale, tuned_groups
from pytest_autotune.tune.cache import PersistentCache
from pytest_autotune.tune.cache_names import cache_path, legacy_cache_file
from pytest_autotune.tune.key import serialize_key_json
from pytest_autotune.tune.records import AutotuneRecord


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
    asked before the prune (`stale.review`) deletes them, and says how to get them back from
    git: a prune after a rename threw the baselines away with no word of the rename."""
    records = list(records)
    tuned = tuned_groups(records)
    # Only tests without a baseline ask: a gate whose every group has one reads no file.
    records = [
        record
        for record in records
        if names_a_test(record.tuner) and RecordExtra.from_json(record.extra).baseline is None
    ]
    if not records:
        return []
    stale = session_stale(settings, records, collected, tuned)
    held = {item.path: _pairs(item.path) for item in stale}
    lines = []
    said: set[str] = set()
    rounding_asked: set[str] = set()  # `_rounded` answers for every record of its test
    # By test, as the summary lists groups, whichever order (or worker) tuned them.
    for record in sorted(records, key=lambda r: r.tuner):
        if record.tuner in said:
            continue
        path = cache_path(settings.cache_dir, record.device_id, record.tuner)
        item = _gone_holding(record, path, stale, held)
        if item is not None:
            said.add(record.tuner)
            lines.append(_moved(record.tuner, item, path, settings))
            continue
        renamed = _renamed_holding(record, path, stale, held)
        if renamed is not None:
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


def _gone_holding(
    record: AutotuneRecord,
    path: Path,
    stale: Iterable[Stale],
    held: Mapping[Path, set[tuple[str, str]]],
) -> Stale | None:
    """The whole stale file of a test gone, beside `path` (the record's own file), that
    holds the record's key and checksum; `held`: the pairs each stale file holds."""
    pair = (serialize_key_json(record.key), record.checksum)
    gone = (i for i in stale if i.keys is None and i.path.parent == path.parent)
    return next((i for i in gone if pair in held[i.path]), None)


def _renamed_holding(
    record: AutotuneRecord,
    path: Path,
    stale: Iterable[Stale],
    held: Mapping[Path, set[tuple[str, str]]],
) -> Stale | None:
    """The stale entries of the record's own test, beside `path`, where one of them holds
    the record's checksum: its keys renamed; `held`: the pairs each stale file holds."""
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
        return renamed
    return None


def _moved(tuner: str, item: Stale, path: Path, settings: PluginSettings) -> str:
    name = tuner.partition("::")[2]
    old = settings.relative(item.path)
    # An update has just written the test's file anew: "no baseline under its name" read
    # as a contradiction of it, and a plain `git mv` onto that file fails.
    start = (
        f"note: {tuner}: this update started its baseline anew"
        if settings.update
        else f"note: {tuner}: no baseline under its name"
    )
    replacing = " (over the one this update wrote: git mv -f)" if settings.update else ""
    if settings.prune and not item.left_out:  # a file kept for a test left out stays
        return (
            f"{start}, and {old}, pruned now, held its keys"
            f" and candidate list for {item.tuner} ({item.reason}): if {name} is that test"
            f" renamed or moved, restore the file from git where it was committed (git checkout"
            f" -- {old}), move it to"
            f' {settings.relative(path)}{replacing} and set its "tuner" to "{tuner}" to keep'
            " its baselines"
        )
    return (
        f"{start}, but {old} holds its keys and candidate list for {item.tuner}"
        f" ({item.reason}): if {name} is that test renamed or moved, move the file to"
        f' {settings.relative(path)}{replacing} and set its "tuner" to "{tuner}" to keep its'
        " baselines"
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
        legacy = legacy_cache_file(item.path.parent, tuner)
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


__all__ = ["moved_baselines"]
