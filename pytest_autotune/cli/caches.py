"""Reading cache files for `show`, `diff` and `changed`, and the plain-text table they print."""

from __future__ import annotations

import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from pytest_autotune.cli.errors import (
    CliError,
    json_kind_of,
    not_ours_to_read,
    require_file,
    warn,
)
from pytest_autotune.report.columns import ljust, width
from pytest_autotune.report.html import key_text
from pytest_autotune.report.names import natural_key
from pytest_autotune.tune.benchmark import AutotuneOutcome
from pytest_autotune.tune.cache import PersistentCache, PersistentCacheKey, PersistentCacheValue
from pytest_autotune.tune.cache_names import cache_files, misplaced
from pytest_autotune.tune.errors import CacheFileWarning, CacheJournalWarning
from pytest_autotune.tune.log import format_duration


@dataclass(frozen=True, slots=True)
class Cache:
    """One cache file as read: its entries by key text, and its device block."""

    path: str
    entries: dict[str, PersistentCacheValue]
    device: Mapping[str, Any] | None
    metadata: Mapping[str, Any]

    @property
    def device_id(self) -> str:
        device_id = self.device.get("id") if self.device else None
        return device_id if isinstance(device_id, str) else "-"

    @property
    def measured_on(self) -> str | None:
        """The device the latest update measured, where the file is filed under a runner
        class (`--autotune-runner`): a hosted runner's CPU model changes between runs."""
        machine = self.device.get("measured_on") if self.device else None
        return machine if isinstance(machine, str) else None


LOAD_REMARK = "; autotune goes on as if there were no cache"
"""What `PersistentCache.load`'s warning adds for a test run, and is not true here."""


def load_cache(path: str) -> Cache:
    """Read a cache file through `PersistentCache` (so `show` accepts exactly what a run
    accepts); a file it cannot use is a `CliError` with its path and reason."""
    require_file(path)
    cache = PersistentCache(Path(path))
    try:
        entries = read_caches(cache.load)
    except CliError:
        if json_kind_of(path) == "records":
            raise CliError(
                f"{path}: records (the JSON lines --autotune-record writes), not a cache file:"
                " report renders them, compare judges two of them"
            ) from None
        other = not_ours_to_read(path, "a cache file")
        if other is not None:
            raise other from None
        raise
    device = cache.device()
    why = misplaced(Path(path), device)
    if why is not None:
        warn(why)  # `show` and `diff` still show it: the file is whole
    return Cache(path, by_key(entries), device, cache.metadata())


T = TypeVar("T")


def read_caches(read: Callable[[], T]) -> T:
    """What `read` returns from the cache files it reads, with their warnings turned into
    what a command says: a file that cannot be read is a `CliError` with its path and
    reason; a journal line ignored is a warning, and what was read stands, as in a run."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = read()
    said = set()
    for warning in caught:
        if issubclass(warning.category, CacheJournalWarning):
            if str(warning.message) not in said:  # a file read twice is said once
                said.add(str(warning.message))
                warn(str(warning.message))
        elif issubclass(warning.category, CacheFileWarning):
            raise CliError(str(warning.message).split(LOAD_REMARK, 1)[0])
    return result


def same_kind_of_folder(before: Path, after: Path) -> None:
    """Refuse two cache folders of different kinds, a cache root (`.autotune`, a folder per
    device) beside one device's folder (`.autotune/<device_id>`), or either beside a folder
    above a cache root (the project's, holding `.autotune`): their files are matched by
    their path below each, so every entry read as removed from one and new in the other,
    and `changed` asked for a pull request of a refresh that changed nothing."""
    folders = (before, after)
    files = [cache_files(folder) for folder in folders]
    depths = [
        {len(p.relative_to(folder).parts) for p in held}
        for folder, held in zip(folders, files, strict=True)
    ]
    if not all(depths) or depths[0] & depths[1]:
        return
    d, s = (0, 1) if max(depths[0]) > max(depths[1]) else (1, 0)
    deep, shallow, level = folders[d], folders[s], max(depths[s])
    # The folder of `shallow`'s kind inside `deep`: its device folder of the same name (or
    # its first), or the cache root a project's folder holds.
    inside = sorted(
        {p.parents[level - 1] for p in files[d] if len(p.relative_to(deep).parts) > level}
    )
    same = [folder for folder in inside if folder.name == shallow.name] or inside[:1]
    pair = (same[0], shallow) if d == 0 else (shallow, same[0])
    raise CliError(
        f"{before}, {after}: {deep} is {_folder_kind(max(depths[d]))} and {shallow}"
        f" {_folder_kind(level)}: give two cache roots, or two device folders"
        f" ({pair[0]} {pair[1]})"
    )


def _folder_kind(level: int) -> str:
    """What a folder whose cache files lie `level` folders down is."""
    if level == 1:
        return "one device's folder"
    if level == 2:
        return "a cache root (a folder per device)"
    # A project's folder: it was called a cache root, and the cache root beside it one
    # device's folder, with a pair to give that did not exist.
    return f"a folder above a cache root (its cache files lie {level} folders down)"


def by_key(
    entries: Mapping[PersistentCacheKey, PersistentCacheValue],
) -> dict[str, PersistentCacheValue]:
    """Entries by the key as people read it, in the summary's order (numbers read as
    numbers: `n8` before `n1024`). A key with several candidate lists (checksums) in one
    file gets the checksum added, so none hides another."""
    counts: dict[str, int] = {}
    for pk in entries:
        counts[pk.key] = counts.get(pk.key, 0) + 1
    named = {}
    for pk, value in entries.items():
        name = key_text(value.key)
        named[f"{name} [{pk.checksum}]" if counts[pk.key] > 1 else name] = value
    return dict(sorted(named.items(), key=lambda item: natural_key(item[0])))


def winner_median(value: PersistentCacheValue) -> float | None:
    winner = value.winner()
    return winner.median if isinstance(winner, AutotuneOutcome) else None


def table(rows: Sequence[Sequence[str]], indent: str = "") -> list[str]:
    """Rows as aligned columns, two spaces apart; the last column is not padded."""
    widths = [max(width(row[i]) for row in rows) for i in range(len(rows[0]))]
    return [(indent + "  ".join(map(ljust, row, widths))).rstrip() for row in rows]


def duration(seconds: float | None) -> str:
    return format_duration(seconds) if seconds is not None else "-"
