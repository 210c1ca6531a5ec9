"""The entries `--autotune-update` writes at a session's end, read from the groups' records,
and the cache files it saves them into, each decided again under the file's lock over what
another update wrote since this session read it.

What the session read of those files is `baselines`'; the rule of which earlier sessions an
update keeps is the gate's (`update_policy.history`).
"""

from __future__ import annotations

import functools
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from pytest_autotune.baselines import (
    Entries,
    gate_fields_error,
    left_behind,
    other_project,
    shown_paths,
)
from pytest_autotune.device_block import settled_device
from pytest_autotune.gate import (
    MAX_BASELINE_SESSIONS,
    Baseline,
    BaselineError,
    BaselineSession,
    Verdict,
)
from pytest_autotune.gate.baseline import MEASURED_SESSIONS
from pytest_autotune.gate.rules import device_kind
from pytest_autotune.plugin_settings import PluginSettings
from pytest_autotune.report.extra import RecordExtra
from pytest_autotune.report.figures import counted
from pytest_autotune.tune.benchmark import AutotuneOutcome, result_from_json
from pytest_autotune.tune.cache import (
    CacheFileError,
    PersistentCache,
    PersistentCacheKey,
    PersistentCacheValue,
    cache_path,
    tuner_cache,
)
from pytest_autotune.tune.cache_format import PROJECT_ROOT_FIELD
from pytest_autotune.tune.journal import journal_path
from pytest_autotune.tune.key import serialize_key_json
from pytest_autotune.tune.records import AutotuneRecord


@dataclass(frozen=True, slots=True)
class CacheUpdate:
    """One entry `--autotune-update` writes: a key of one tuner's cache file of one device."""

    device_id: str
    tuner: str
    key: str
    """The stable key (`stable_key`) the entry is filed under."""
    checksum: str
    value: PersistentCacheValue
    joined: BaselineSession | None = None
    """The newest session of the baseline this session joined (the last it keeps), None
    when it started a new one: how the save recognises that baseline in the file."""
    judged: tuple[int, ...] | None = None
    """The samples (ns) of the baseline's winner this session was judged against, None
    when it had none: how the save sees that another update wrote the entry since."""


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
    joined = BaselineSession.from_json(extra.history[-1]) if extra.history else None
    judged = None if extra.baseline is None else extra.baseline.get("samples_ns")
    return CacheUpdate(
        record.device_id,
        record.tuner,
        serialize_key_json(record.key),
        record.checksum,
        value,
        joined,
        None if judged is None else tuple(judged),
    )


class SavingInterrupted(Exception):
    """Ctrl-C (a KeyboardInterrupt) while an update saved its cache files: `unsaved`, by
    device id and tuner, the files left as they were (each named in a line of the notes),
    as `write_caches` returns them; the files saved before it are whole (each write is
    atomic)."""

    def __init__(self, unsaved: dict[tuple[str, str], str]) -> None:
        super().__init__("interrupted while saving the cache files")
        self.unsaved = unsaved


def write_caches(
    updates: Sequence[CacheUpdate],
    devices: Mapping[str, Any],
    settings: PluginSettings,
    notes: list[str],
    kept_few: int = 0,
    taken_over: set[Path] | None = None,
) -> dict[tuple[str, str], str]:
    """Save each cache file; the files that could not be, by device id and tuner, with why
    (each also named in one line of `notes`): `--autotune-update` then fails, since its
    user believes a baseline was saved, and their groups are not "updated". `kept_few`
    counts the CPU baselines of fewer than `MEASURED_SESSIONS` sessions the update kept
    unrecorded (`kept_few_sessions`), for the note on them all. `taken_over` gets the
    files that another project had last updated (`other_project`), which now name this
    one: their other entries may be that project's, which this session must not call
    stale.

    Ctrl-C meanwhile (a save may wait minutes for another process's lock) stops it with
    `SavingInterrupted`, naming the files not saved: escaping the end of the session, it
    was pytest's internal traceback in place of the summary, which never said which
    baselines were saved."""
    failed: dict[tuple[str, str], str] = {}
    few_sessions = kept_few
    files: dict[tuple[str, str], dict[PersistentCacheKey, CacheUpdate]] = {}
    for update in updates:
        by_key = files.setdefault((update.device_id, update.tuner), {})
        by_key[PersistentCacheKey(update.key, update.checksum)] = update
    pending = sorted(files)
    try:
        for (device_id, tuner), by_key in sorted(files.items()):
            path = cache_path(settings.cache_dir, device_id, tuner)
            rejoined: list[str] = []
            try:
                cache = _save(device_id, tuner, by_key, devices, settings, rejoined, taken_over)
            except CacheFileError as exc:
                pending.remove((device_id, tuner))
                failed[device_id, tuner] = shown_paths(str(exc), settings)
                notes.append(f"error: {failed[device_id, tuner]}; this file was not updated")
            else:
                pending.remove((device_id, tuner))
                notes.extend(rejoined)
                # What the file holds besides (keys of other runs, or that no test makes
                # now) is said too: "(2 entries)" beside a diff of a file of three read as
                # the whole.
                after = cache.load()
                written, held = len(by_key), len(after)
                count = counted(written, "entry", "entries")
                if held != written:
                    count += f" written; the file holds {held}"
                notes.append(f"updated {settings.relative(path)} ({count})")
                left = left_behind(cache, after, settings)
                if left is not None and left not in notes:
                    notes.append(left)
                if device_kind(device_id) == "cpu":
                    few_sessions += sum(
                        len(u.value.sessions or ()) + 1 < MEASURED_SESSIONS for u in by_key.values()
                    )
    except KeyboardInterrupt:
        for unsaved in pending:
            where = settings.relative(cache_path(settings.cache_dir, *unsaved))
            failed[unsaved] = f"{where}: interrupted (Ctrl-C) before it was saved"
            notes.append(f"error: {failed[unsaved]}; this file was not updated")
        raise SavingInterrupted(failed) from None
    if few_sessions:
        notes.append(few_sessions_note(few_sessions))
    return failed


def _save(
    device_id: str,
    tuner: str,
    by_key: Mapping[PersistentCacheKey, CacheUpdate],
    devices: Mapping[str, Any],
    settings: PluginSettings,
    rejoined: list[str],
    taken_over: set[Path] | None,
) -> PersistentCache:
    """Save `by_key` into the cache file of `tuner` on `device_id`, each entry decided
    again under the file's lock (`_rebase`, its lines in `rejoined`); the cache saved, or a
    `CacheFileError` where the file could not be. `taken_over`: as `write_caches`'."""
    path = cache_path(settings.cache_dir, device_id, tuner)
    where = settings.relative(path)
    # Read apart: the save reads the file for itself, and says what it finds.
    before = _usable(settings, device_id, tuner)
    if taken_over is not None and other_project(before.metadata(), settings):
        taken_over.add(path)
    cache = tuner_cache(settings.cache_dir, device_id, tuner)
    device = devices.get(device_id)
    # Outside the root dir, the file says whose it is (`stale.find_stale`); the
    # project's own directory (the default) is all its own, and its files unchanged.
    root = {PROJECT_ROOT_FIELD: settings.project_root}
    cache.save(
        {pk: update.value for pk, update in by_key.items()},
        device=None if device is None else functools.partial(settled_device, device),
        metadata=root if settings.shared_cache_dir else None,
        rebase=functools.partial(_rebase, by_key, where=where, rejoined=rejoined),
    )
    return cache


def _usable(settings: PluginSettings, device_id: str, tuner: str) -> PersistentCache:
    """The cache file of `tuner` on `device_id`, loaded, for an update to save into; a
    `CacheFileError` where the gate cannot use it (its own fields, which the library's
    reader of the file does not read): such a file is never overwritten, a person repairs
    it. Its own warnings are said already, by the session's read of it."""
    cache = tuner_cache(settings.cache_dir, device_id, tuner)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        cache.load()
    bad = gate_fields_error(cache.path, cache.metadata())
    if bad is not None:
        raise bad
    return cache


def fold_journals(
    records: Sequence[AutotuneRecord],
    updates: Sequence[CacheUpdate],
    settings: PluginSettings,
    notes: list[str],
) -> dict[tuple[str, str], str]:
    """Fold into its file the journal of each cache file the session's groups read that the
    update wrote nothing to (every group of it kept its baseline: a contended CPU, say),
    as `write_caches`' whole-file saves fold the others': such a journal, which a program's
    `LocalTuner` appended, stayed beside the file, and an update is to leave plain files
    to commit (README, "Journal"). The files that could not be folded, with why."""
    written = {(u.device_id, u.tuner) for u in updates}
    failed: dict[tuple[str, str], str] = {}
    for device_id, tuner in sorted({(r.device_id, r.tuner) for r in records} - written):
        path = cache_path(settings.cache_dir, device_id, tuner)
        if not journal_path(path).is_file():
            continue
        try:
            _usable(settings, device_id, tuner).save({})
        except CacheFileError as exc:
            failed[device_id, tuner] = shown_paths(str(exc), settings)
            notes.append(f"error: {failed[device_id, tuner]}; its journal was not folded in")
        else:
            shown = settings.relative(journal_path(path))
            notes.append(f"folded {shown} into {settings.relative(path)} (no entry changed)")
    return failed


def kept_few_sessions(records: Sequence[AutotuneRecord]) -> int:
    """How many CPU baselines an update kept without recording this session (a contended
    CPU, say) while they rest on fewer than `MEASURED_SESSIONS` sessions."""
    count = 0
    for record in records:
        extra = RecordExtra.from_json(record.extra)
        sessions = (extra.baseline or {}).get("sessions")
        if extra.kept_baseline and device_kind(record.device_id) == "cpu":
            count += isinstance(sessions, int) and sessions < MEASURED_SESSIONS
    return count


def few_sessions_note(entries: int) -> str:
    """The note of an update that leaves CPU baselines of fewer than `MEASURED_SESSIONS`
    sessions. Against one session, a user's 4-10 us NumPy kernels compared raw failed 3 to
    5 groups of every unchanged gate run on a shared 2-core VM (+58% to +275%: a kernel
    this small runs in modes up to 2x apart from one process to the next), and read "too
    noisy" once three more updates measured the spread: the README's advice, said where it
    is needed."""
    which = counted(entries, "CPU baseline rests", "CPU baselines rest")
    return (
        f"note: {which} on fewer than {MEASURED_SESSIONS} update sessions: run"
        " --autotune-update 3 to 5 times in all on this machine, so that the gate measures"
        " how far it moves each kernel between sessions (a small kernel compared raw moved"
        " up to 2x on a shared CPU, and one session cannot show it)"
    )


def _rebase(
    by_key: Mapping[PersistentCacheKey, CacheUpdate],
    disk: Mapping[PersistentCacheKey, PersistentCacheValue],
    *,
    where: str,
    rejoined: list[str],
) -> Entries:
    """The entries to write into a file whose entries are `disk`, read under its lock; a
    line in `rejoined` for each that another update wrote since this session read it.
    Decided here, not on the file read when the session began: another
    `--autotune-update` (a second CI job on the same checkout) may have joined the same
    baseline since, and writing this session's entry as decided then would lose that
    session; this one joins it as well (`_rejoined`). Where it cannot (no baseline was
    joined: whether two new sessions agree is the gate's judgement, which neither made),
    this session's entry stands, and the line says that it replaced the other's."""
    rejoined.clear()
    entries = {pk: update.value for pk, update in by_key.items()}
    for pk, update in by_key.items():
        held = disk.get(pk)
        value = _rejoined(update, held)
        if value is not None and value.sessions is not None:
            entries[pk] = value
            rejoined.append(
                f"{where}: key {update.key}: another update wrote this baseline while this"
                f" one ran; this session joined it as well ({len(value.sessions) + 1} sessions)"
            )
        elif held is not None and _winner_ns(update, held) not in (None, update.judged):
            rejoined.append(
                f"{where}: key {update.key}: another update wrote this entry while this one"
                " ran; this session's entry replaced it"
            )
    return entries


def _winner_ns(update: CacheUpdate, held: PersistentCacheValue) -> tuple[int, ...] | None:
    """The samples (ns) of `held`'s winner, as a record keeps its baseline's
    (`baseline_extra`); None where the entry does not read as a baseline."""
    try:
        baseline = Baseline.from_cache_entry(
            held, update.checksum, device={"id": update.device_id}, metadata={}
        )
    except BaselineError:
        return None
    return tuple(round(s * 1e9) for s in baseline.samples)


def _rejoined(
    update: CacheUpdate, held: PersistentCacheValue | None
) -> PersistentCacheValue | None:
    """`update`'s entry joined to `held`, the file's entry of its key and checksum now,
    where another session joined the baseline this one joined since this one read it;
    None where the file still holds that baseline, or a baseline this one did not join
    (another session found a significant change and started anew: this one's decision,
    taken on the baseline it was judged against, stands)."""
    if update.joined is None or held is None:
        return None
    try:
        sessions = Baseline.from_cache_entry(
            held, update.checksum, device={"id": update.device_id}, metadata={}
        ).sessions()
    except BaselineError:
        return None
    # Compared as the file writes them, in whole nanoseconds: the newest session's median
    # is read from its samples, the others' from their rounded figures.
    joined, held_sessions = update.joined.to_json(), [s.to_json() for s in sessions]
    if held_sessions[-1] == joined or joined not in held_sessions[:-1]:
        return None
    kept = sessions[-(MAX_BASELINE_SESSIONS - 1) :]
    return replace(update.value, sessions=[s.to_json() for s in kept])
