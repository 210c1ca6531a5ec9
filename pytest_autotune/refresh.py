"""Which changes of a refreshed cache folder deserve a pull request.

Every `--autotune-update` rewrites the files it touches: the winner's newest samples always
differ. A scheduled refresh that opened a pull request for that would open one every time.
What is worth committing is what changes a decision or the gate: an entry (key and
candidate list) that is new or gone (a key whose candidates changed, one line saying how),
or a baseline that started again, which the update does only when the gate would call the
change significant (`update_policy.history`): an unchanged kernel's session joins the
earlier ones and keeps them as its history, and an entry the update did not rewrite
changes nothing.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path

from pytest_autotune.gate import BaselineSession
from pytest_autotune.gate.comparable import candidate_change
from pytest_autotune.report.html import key_text
from pytest_autotune.report.names import natural_key
from pytest_autotune.tune.benchmark import AutotuneOutcome, SampleStats
from pytest_autotune.tune.cache import PersistentCache, PersistentCacheKey, PersistentCacheValue
from pytest_autotune.tune.cache_names import cache_files
from pytest_autotune.tune.cache_read import legacy_names

__all__ = ["same_speed_winners", "significant_changes"]


def significant_changes(before: Path, after: Path) -> list[str]:
    """One line per change worth a pull request between two cache folders, by file, then
    by key with numbers read as numbers; empty when the refresh only added a session to
    each baseline."""
    changes = []
    old_files, new_files = _files_of(before, after)
    for name in sorted(old_files.keys() | new_files.keys()):
        old, new = _entries(old_files.get(name)), _entries(new_files.get(name))
        for pk in _in_key_order(old.keys() | new.keys()):
            value = new.get(pk) or old[pk]
            where = f"{name}: key {key_text(value.key)}"
            # A key whose candidates changed is filed under a new checksum, its old entry
            # replaced: one line says so, where "new entry" beside "entry removed" for one
            # key read as though the refresh had lost a baseline.
            if pk not in old:
                earlier = _replaced(pk, old, new)
                if earlier is None:
                    changes.append(f"{where}: new entry (a new key)")
                else:
                    change = candidate_change(_names(earlier), _names(new[pk]))
                    changes.append(f"{where}: new candidate list ({change or 'renamed'})")
            elif pk not in new:
                if _replaced(pk, new, old) is None:
                    changes.append(f"{where}: entry removed")
            elif new[pk] != old[pk] and not _continues(new[pk], old[pk]):
                # A baseline of one session has no `sessions` either way; only a rewritten
                # one started again. One left as it was (kept, as an update does on
                # contended CPUs, or its test not run) is no change.
                old_winner, new_winner = old[pk].fastest_name, new[pk].fastest_name
                winner = f"{old_winner} -> {new_winner}" if old_winner != new_winner else new_winner
                changes.append(f"{where}: new baseline ({winner}): a significant change")
    return changes


def same_speed_winners(before: Path, after: Path) -> list[str]:
    """One line per entry whose winner the refresh changed while its session joined the
    baseline (the gate found the two the same speed): no change worth a pull request, but
    not "kept" either, and the committed file goes on serving the old winner."""
    lines = []
    old_files, new_files = _files_of(before, after)
    for name in sorted(old_files.keys() & new_files.keys()):
        old, new = _entries(old_files[name]), _entries(new_files[name])
        for pk in _in_key_order(old.keys() & new.keys()):
            was, now = old[pk].fastest_name, new[pk].fastest_name
            if was != now and _continues(new[pk], old[pk]):
                lines.append(
                    f"{name}: key {key_text(new[pk].key)}: winner {was} -> {now}, the same"
                    f" speed by the gate (joined the baseline); without a pull request the"
                    f" committed file goes on serving {was}"
                )
    return lines


def _in_key_order(pks: Iterable[PersistentCacheKey]) -> list[PersistentCacheKey]:
    """By key with numbers read as numbers (`n8` before `n1024`), then by checksum."""
    return sorted(pks, key=lambda pk: (natural_key(pk.key), pk.checksum))


def _replaced(
    pk: PersistentCacheKey,
    other: Mapping[PersistentCacheKey, PersistentCacheValue],
    mine: Mapping[PersistentCacheKey, PersistentCacheValue],
) -> PersistentCacheValue | None:
    """The entry of `pk`'s key under another checksum in `other` that `mine` lacks: the
    one a new candidate list replaced (or, read the other way, replaced it); None where
    the key is new, or gone."""
    for held, value in other.items():
        if held.key == pk.key and held.checksum != pk.checksum and held not in mine:
            return value
    return None


def _names(value: PersistentCacheValue) -> tuple[str, ...]:
    return tuple(result.name or "" for result in value.results)


def _continues(new: PersistentCacheValue, old: PersistentCacheValue) -> bool:
    """Whether the rewritten entry `new` kept `old` in its history: its sessions hold the
    session `old`'s samples are. Not only whether it has sessions: a refresh that ran the
    update several times (as a shared CPU machine should) restarted the baseline in one
    run and joined that new one in the next. A history past `MAX_BASELINE_SESSIONS` joins
    has let `old`'s session go, and reads as a restart: a pull request too many."""
    winner = old.results[old.fastest_index] if old.fastest_index < len(old.results) else None
    if not new.sessions or not isinstance(winner, AutotuneOutcome):
        return False
    newest = BaselineSession(SampleStats.of(winner.effective_samples).median).to_json()
    return any(
        isinstance(s, Mapping) and s.get("median_ns") == newest["median_ns"] for s in new.sessions
    )


def _files_of(before: Path, after: Path) -> tuple[dict[str, Path], dict[str, Path]]:
    """The cache files of each folder by their path below it, a file of a 0.1.0 name by its
    current one (`legacy_names`, read from either folder's files that store their tuner)
    where that folder has no file of it, and left out where it has, as the gate reads
    them: an update of a folder committed by 0.1.0 writes the new name beside the old, and
    each entry read as removed from one file and new in another."""
    legacy = {**legacy_names(before), **legacy_names(after)}

    def files(root: Path) -> dict[str, Path]:
        found = {p.relative_to(root).as_posix(): p for p in cache_files(root)}
        for old, current in legacy.items():
            if old in found:
                # The gate reads the current name's file alone where there is one.
                file = found.pop(old)
                found.setdefault(current, file)
        return found

    return files(before), files(after)


def _entries(path: Path | None) -> Mapping[PersistentCacheKey, PersistentCacheValue]:
    return PersistentCache(path).load() if path is not None else {}
