"""Which changes of a refreshed cache folder deserve a pull request.

Every `--autotune-update` rewrites the files it touches: the winner's newest samples always
differ. A scheduled refresh that opened a pull request for that would open one every time.
What is worth committing is what changes a decision or the gate: an entry (key and
candidate list) that is new or gone, or a baseline that started again, which the update
does only when the gate would call the change significant (`gate_policy.history`): an
unchanged kernel's session joins the earlier ones and keeps them as its history.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from pytest_autotune.report.html import key_text
from pytest_autotune.tune.cache import PersistentCache, PersistentCacheKey, PersistentCacheValue

__all__ = ["significant_changes"]


def significant_changes(before: Path, after: Path) -> list[str]:
    """One line per change worth a pull request between two cache folders, in a stable
    order; empty when the refresh only added a session to each baseline."""
    changes = []
    for name in sorted(_files(before) | _files(after)):
        old, new = _entries(before, name), _entries(after, name)
        for pk in sorted(old.keys() | new.keys(), key=lambda pk: (pk.key, pk.checksum)):
            value = new.get(pk) or old[pk]
            where = f"{name}: key {key_text(value.key)}"
            if pk not in old:
                changes.append(f"{where}: new entry (a new key or candidate list)")
            elif pk not in new:
                changes.append(f"{where}: entry removed")
            elif not new[pk].sessions:
                old_winner, new_winner = old[pk].fastest_name, new[pk].fastest_name
                winner = f"{old_winner} -> {new_winner}" if old_winner != new_winner else new_winner
                changes.append(f"{where}: new baseline ({winner}): a significant change")
    return changes


def _files(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*.json")}


def _entries(root: Path, name: str) -> Mapping[PersistentCacheKey, PersistentCacheValue]:
    path = root / name
    return PersistentCache(path).load() if path.is_file() else {}
