"""The committed baselines of a session: read from the cache files (each file once, never
written while tests run), and the entries `--autotune-update` writes at the end.

The rule of which earlier sessions an update keeps is the gate's (`gate_policy.history`);
this module reads, words and writes.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_autotune.gate import (
    UPDATED_MESSAGE,
    Baseline,
    BaselineError,
    BaselineSession,
    GroupVerdict,
    Verdict,
    format_change,
    format_interval,
)
from pytest_autotune.plugin_settings import PluginSettings
from pytest_autotune.report.extra import RecordExtra
from pytest_autotune.tune.benchmark import AutotuneOutcome, result_from_json
from pytest_autotune.tune.cache import (
    CacheFileError,
    PersistentCache,
    PersistentCacheKey,
    PersistentCacheValue,
    cache_path,
    tuner_cache,
)
from pytest_autotune.tune.key import serialize_key_json, stable_key
from pytest_autotune.tune.records import AutotuneRecord

Entries = dict[PersistentCacheKey, PersistentCacheValue]


class Baselines:
    """The baselines the gate compares with, read once per cache file. A file's warnings
    go to `notes`, for the summary: inside a test, a project's `filterwarnings = error`
    would turn them into that test's failure."""

    def __init__(self, settings: PluginSettings, notes: list[str]) -> None:
        self._settings = settings
        self._notes = notes
        self._files: dict[Path, tuple[PersistentCache, Entries]] = {}

    def find(
        self, device_id: str, tuner: str, key: Any, checksum: str
    ) -> tuple[Baseline | None, str | None]:
        """The committed baseline of one key, and a warning when its entry does not read."""
        if self._settings.engine.disable_cache:
            return None, None
        path, cache, entries = self._load(device_id, tuner)
        try:
            return (
                Baseline.find(
                    entries,
                    stable_key(key),
                    checksum,
                    device=cache.device(),
                    metadata=cache.metadata(),
                    source=self._settings.relative(path),
                ),
                None,
            )
        except BaselineError as exc:
            return None, f"warning: {exc}"

    def unreadable(self, device_id: str, tuner: str) -> str | None:
        """Which baseline file of this test could not be read, and why; None when it was
        read, or there is none. An update leaves such a file as it is."""
        if self._settings.engine.disable_cache:
            return None
        error = self._load(device_id, tuner)[1].unreadable()
        if error is None:
            return None
        return f"{self._settings.relative(error.path)} could not be read ({error.reason})"

    def _load(self, device_id: str, tuner: str) -> tuple[Path, PersistentCache, Entries]:
        """A baseline file, read the first time it is asked for."""
        path = cache_path(self._settings.cache_dir, device_id, tuner)
        if path not in self._files:
            cache = tuner_cache(self._settings.cache_dir, device_id, tuner)
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                entries = cache.load()
            self._notes.extend(f"warning: {w.message}" for w in caught)
            self._files[path] = (cache, entries)
        return (path, *self._files[path])

    def devices_with(self, tuner: str) -> list[str]:
        """The devices (cache folders) holding a baseline file of this test."""
        root = self._settings.cache_dir
        if self._settings.engine.disable_cache or not root.is_dir():
            return []
        return sorted(
            folder.name
            for folder in root.iterdir()
            if tuner_cache(root, folder.name, tuner).exists()
        )


def update_message(
    baseline: Baseline | None,
    verdict: GroupVerdict,
    history: Sequence[BaselineSession],
    unreadable: str | None = None,
) -> str:
    """What an update did with the baseline: joined it (and how many sessions it now
    holds), started a new one (and why), or, when its file could not be read (`unreadable`,
    `Baselines.unreadable`), nothing, since that file is never overwritten; then what the
    gate would have said."""
    comparison = verdict.comparison
    if unreadable is not None:
        head = f"not recorded: {unreadable}, and is left as it is"
    elif history:
        head = f"joined the baseline: {len(history) + 1} sessions"
        if comparison is not None:
            head += f" (this one {format_interval(comparison)} against the old)"
    elif comparison is not None:
        head = f"new baseline: {format_change(comparison.delta)} against the old one"
    else:
        head = (
            "new baseline: none before for this key"
            if baseline is None
            else "new baseline: the old one measured another device or candidate list"
        )
    return head + verdict.message.removeprefix(UPDATED_MESSAGE)


@dataclass(frozen=True, slots=True)
class CacheUpdate:
    """One entry `--autotune-update` writes: a key of one tuner's cache file of one device."""

    device_id: str
    tuner: str
    key: str
    """The stable key (`stable_key`) the entry is filed under."""
    checksum: str
    value: PersistentCacheValue


def update_entry(record: AutotuneRecord) -> CacheUpdate | None:
    """The cache entry an update writes for a group, read from the group's record; None
    when nothing was measured or the update keeps the committed baseline. It holds the
    winner's precise measurement, not its tuning samples: the gate compares precise
    medians with precise medians."""
    extra = RecordExtra.from_json(record.extra)
    samples = extra.winner_seconds
    if record.fastest_index is None or record.fastest_name is None or not samples:
        return None
    if extra.verdict == Verdict.ERROR.value or extra.kept_baseline:
        return None
    winner = AutotuneOutcome(record.fastest_name, record.fastest_index, samples)
    results = tuple(
        winner if result["index"] == record.fastest_index else result_from_json(result)
        for result in record.results
    )
    value = PersistentCacheValue(
        key=record.key,
        fastest_index=record.fastest_index,
        fastest_name=record.fastest_name,
        results=results,
        bounds=record.bounds,
        calibration=None if extra.calibration is None else dict(extra.calibration),
        sessions=[dict(s) for s in extra.history] if extra.history else None,
    )
    return CacheUpdate(
        record.device_id, record.tuner, serialize_key_json(record.key), record.checksum, value
    )


def write_caches(
    updates: Sequence[CacheUpdate],
    devices: Mapping[str, Any],
    settings: PluginSettings,
    notes: list[str],
) -> bool:
    """Save each cache file; False when one could not be (each named in one line):
    `--autotune-update` then fails, since its user believes a baseline was saved."""
    written = True
    files: dict[tuple[str, str], Entries] = {}
    for update in updates:
        entries = files.setdefault((update.device_id, update.tuner), {})
        entries[PersistentCacheKey(update.key, update.checksum)] = update.value
    for (device_id, tuner), entries in sorted(files.items()):
        path = cache_path(settings.cache_dir, device_id, tuner)
        try:
            tuner_cache(settings.cache_dir, device_id, tuner).save(
                entries, device=devices.get(device_id)
            )
        except CacheFileError as exc:
            notes.append(f"error: {exc}; this file was not updated")
            written = False
        else:
            notes.append(f"updated {settings.relative(path)} ({len(entries)} entries)")
    return written


def baseline_extra(baseline: Baseline | None) -> dict[str, Any] | None:
    """What a record keeps of the baseline it was judged against, for the report."""
    if baseline is None:
        return None
    return {
        "fastest_name": baseline.fastest_name,
        "device_id": baseline.device_id,
        "source": baseline.source,
        "samples_ns": [round(s * 1e9) for s in baseline.samples],
        "calibration": None if baseline.calibration is None else baseline.calibration.to_json(),
        "sessions": len(baseline.sessions()),
    }
