"""The committed baselines of a session: read from the cache files (each file once, never
written while tests run), and the entries `--autotune-update` writes at the end.

The rule of which earlier sessions an update keeps is the gate's (`gate_policy.history`);
this module reads, words and writes.
"""

from __future__ import annotations

import functools
import os
import warnings
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from pytest_autotune.gate import (
    MAX_BASELINE_SESSIONS,
    UPDATED_MESSAGE,
    Baseline,
    BaselineError,
    BaselineSession,
    GroupVerdict,
    Verdict,
    format_change,
    format_interval,
)
from pytest_autotune.gate.baseline import MEASURED_SESSIONS, sigma_between_of
from pytest_autotune.gate.judge import candidate_change
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
from pytest_autotune.tune.cache_format import PROJECT_ROOT_FIELD, TUNER_FIELD, advice
from pytest_autotune.tune.journal import journal_path
from pytest_autotune.tune.key import serialize_key_json, stable_key
from pytest_autotune.tune.records import AutotuneRecord

Entries = dict[PersistentCacheKey, PersistentCacheValue]


@dataclass(frozen=True, slots=True)
class UnreadableFile:
    """A baseline file of a test that could not be read (`Baselines.unreadable`)."""

    what: str
    """`<path> could not be read (<why>)`."""
    error: CacheFileError

    def advice(self, remove: str) -> str:
        """What to do with it: repair it, or `remove` it; a newer version's file is kept."""
        return advice(self.error, remove)


class Baselines:
    """The baselines the gate compares with, read once per cache file. A file's warnings
    go to `notes`, for the summary: inside a test, a project's `filterwarnings = error`
    would turn them into that test's failure."""

    def __init__(self, settings: PluginSettings, notes: list[str]) -> None:
        self._settings = settings
        self._notes = notes
        self._files: dict[Path, tuple[PersistentCache, Entries]] = {}

    def find(
        self,
        device_id: str,
        tuner: str,
        key: Any,
        checksum: str,
        filed_before: str | None = None,
    ) -> tuple[Baseline | None, str | None]:
        """The committed baseline of one key, and a warning when its entry does not read.
        Where `tuner`'s file holds no entry of the key, the file of `filed_before`, the
        tuner an earlier version filed the group under (`GroupRequest.filed_before`), is
        read in its place, with a note: an update then carries its baseline over."""
        if self._settings.engine.disable_cache:
            return None, None
        found = self._find(device_id, tuner, key, checksum)
        if found != (None, None) or filed_before is None:
            return found
        earlier = self._find(device_id, filed_before, key, checksum)
        if earlier[0] is None:
            return found
        old = self._settings.relative(self._load(device_id, filed_before)[1].source())
        note = (
            f"note: {filed_before}: the baselines of its autotune fixture's set are read from"
            f" {old}, where pytest-autotune 0.1.0 filed them under the test's name, while"
            f" {self._settings.relative(cache_path(self._settings.cache_dir, device_id, tuner))},"
            f" the file of the set's tuner {tuner!r}, holds none of their keys:"
            f" --autotune-update carries each over as it records its key; then delete {old}"
        )
        if note not in self._notes:
            self._notes.append(note)
        return earlier

    def _find(
        self, device_id: str, tuner: str, key: Any, checksum: str
    ) -> tuple[Baseline | None, str | None]:
        path, cache, entries = self._load(device_id, tuner)
        bad = gate_fields_error(path, cache.metadata())
        if bad is not None:
            return None, f"warning: {shown_paths(str(bad), self._settings)}"
        try:
            return (
                Baseline.find(
                    entries,
                    stable_key(key),
                    checksum,
                    device=cache.device(),
                    metadata=cache.metadata(),
                    source=self._settings.relative(cache.source()),
                ),
                None,
            )
        except BaselineError as exc:
            return None, f"warning: {exc}"

    def unreadable(self, device_id: str, tuner: str) -> UnreadableFile | None:
        """Which baseline file of this test could not be read, and why; None when it was
        read, or there is none. An update leaves such a file as it is."""
        if self._settings.engine.disable_cache:
            return None
        path, cache, _ = self._load(device_id, tuner)
        error = cache.unreadable() or gate_fields_error(path, cache.metadata())
        if error is None:
            return None
        # The reason may name a path too (a folder that is a file): shown as the rest.
        what = shown_paths(
            f"{self._settings.relative(error.path)} could not be read ({error.reason})",
            self._settings,
        )
        return UnreadableFile(what, error)

    def missing(self, device_id: str, tuner: str) -> str | None:
        """The baseline file of this test on this device, as messages show it, where there
        is none: what a missing baseline names, so that a test named or filed otherwise
        than at its update (another root dir, cache dir or runner) shows where it looked."""
        if self._settings.engine.disable_cache:
            return None
        if tuner_cache(self._settings.cache_dir, device_id, tuner).exists():
            return None
        shown = self._settings.relative(cache_path(self._settings.cache_dir, device_id, tuner))
        above = self._settings.cache_above
        if above is None:
            return shown
        return (
            f"{shown}; pytest found no configuration file, so its root dir, which tests are"
            f" named and filed from, is the folder it was run in, {self._settings.rootpath},"
            f" while {self._settings.relative(above)}, above it, holds caches: a pytest.ini (or a"
            " pyproject.toml's [tool.pytest.ini_options]) at the project's top makes that"
            " the root dir of every run"
        )

    def _load(self, device_id: str, tuner: str) -> tuple[Path, PersistentCache, Entries]:
        """A baseline file, read the first time it is asked for."""
        path = cache_path(self._settings.cache_dir, device_id, tuner)
        if path not in self._files:
            cache = tuner_cache(self._settings.cache_dir, device_id, tuner)
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                entries = cache.load()
            # The engine's message names the file whole; the summary shows it from where
            # pytest was run, as every path it shows.
            self._notes.extend(
                f"warning: {shown_paths(str(w.message), self._settings)}" for w in caught
            )
            theirs = other_project(cache.metadata(), self._settings)
            if theirs is not None:
                self._notes.append(other_project_warning(self._settings.relative(path), theirs))
            left = left_behind(cache, entries, self._settings)
            if left is not None:
                self._notes.append(left)
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
    unreadable: UnreadableFile | None = None,
    device_id: str | None = None,
    candidates: Sequence[str] = (),
    replaced: str | None = None,
    other_work: str | None = None,
    unusable: str | None = None,
) -> str:
    """What an update did with the baseline: joined it (and how many sessions it now
    holds), started a new one (and why: with this run's `candidates`, what changed in the
    list, as the gate says it; `replaced`, the baseline's winner skipped here, which this
    run's winner takes the place of; `other_work`, how the work the old one measured
    differs from this run's, for the same candidates: `Baseline.other_work`; `unusable`,
    why the key's entry could not serve as one: `Baselines.find`), or, when its
    file could not be read (`unreadable`, `Baselines.unreadable`), nothing, since that file
    is never overwritten; then what the gate would have said."""
    comparison = verdict.comparison
    if unreadable is not None:
        head = (
            f"not recorded: {unreadable.what}, and is left as it is:"
            f" {unreadable.advice('remove it and update again')}"
        )
    elif replaced is not None:
        head = f"new baseline: {replaced}"
        if comparison is not None:
            head += f" ({format_change(comparison.delta)} against its time)"
    elif history:
        head = f"joined the baseline: {len(history) + 1} sessions"
        if comparison is not None:
            head += f" (this one {format_interval(comparison)} against the old)"
    elif comparison is not None:
        head = f"new baseline: {format_change(comparison.delta)} against the old one"
    else:
        head = (
            f"new baseline: the old entry could not serve as one ({unusable})"
            if baseline is None and unusable is not None
            else "new baseline: none before for this key"
            if baseline is None
            else f"new baseline: the old one was measured on {baseline.device_id}"
            if device_id is not None and baseline.device_id != device_id
            else "new baseline: the old one was out of line with its candidates"
            if baseline.mismatch is not None
            else f"new baseline: the old one was measured for other work ({other_work})"
            if other_work is not None
            else "new baseline: the old one was tuned over another candidate list"
            + _changed(baseline.candidates, candidates)
            if device_id is not None
            else "new baseline: the old one measured another device or candidate list"
        )
    return head + verdict.message.removeprefix(UPDATED_MESSAGE)


def _changed(before: Sequence[str], now: Sequence[str]) -> str:
    """What changed between two candidate lists, in brackets; nothing where unknown."""
    change = candidate_change(before, now)
    return f" ({change})" if change else ""


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


def gate_fields_error(path: Path, metadata: Mapping[str, Any]) -> CacheFileError | None:
    """Why a cache file's top-level fields that only the gate reads do not read: its
    `sigma_between` (README: set by hand, a fraction). The whole file then serves the gate
    as an unreadable one, named, and an update never overwrites it: read per key, a typo
    ("3%") made every entry "no baseline", the gate passed them all, and each update
    replaced them, losing their sessions. A library's runtime reader of the same file (a
    shipped cache) does not read the field, and keeps its winners."""
    try:
        sigma_between_of(metadata)
    except ValueError as error:
        return CacheFileError(path, str(error))
    return None


def other_project(metadata: Mapping[str, Any], settings: PluginSettings) -> str | None:
    """The root dir (as seen from the cache directory) of the other project that last
    updated a cache file, by its `PROJECT_ROOT_FIELD`; None where it is this project's, or
    names none. Files are named after the test's node id alone, so two projects of one
    cache directory whose tests share a node id share a file: each project's gate compared
    its test with the other's baseline, and its update called the other's keys stale.
    Only said, never refused: one project in two checkouts (`--autotune-cache-dir` of one
    folder from main/ and feature/) is the same case, seen from the directory, and fine."""
    theirs = metadata.get(PROJECT_ROOT_FIELD)
    return theirs if isinstance(theirs, str) and theirs != settings.project_root else None


def left_behind(
    cache: PersistentCache, entries: Collection[PersistentCacheKey], settings: PluginSettings
) -> str | None:
    """A note on the file of `cache`'s 0.1.0 name (`cache_names.legacy_cache_file_parts`)
    where it lies beside the file of its own name, whose `entries` are read in its place:
    the first save under the new name carries the old file's entries over and leaves it,
    which nothing reads from then on. It stayed committed with no word that it could go.
    One whose keys the new file lacks (a branch still on 0.1.0 updated it, and was merged;
    or a prune dropped them there) is not called disposable without saying both. None
    where there is no such file, or it stores another tuner's name (not this cache's)."""
    old = cache.legacy
    if old is None or cache.source() == old or not old.is_file() or not cache.path.is_file():
        return None
    earlier = PersistentCache(old)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # an unreadable old file is not this note's to judge
        held = earlier.load()
    if earlier.metadata().get(TUNER_FIELD) not in (None, cache.name):
        return None
    head = (
        f"note: {settings.relative(old)}: pytest-autotune 0.1.0's name for"
        f" {settings.relative(cache.path)}, which is read in its place"
    )
    lacking = sorted({pk.key for pk in held} - {pk.key for pk in entries})
    if not lacking:
        return (
            f"{head} (the first save under the new name carried its entries over): nothing"
            " reads it now; delete it"
        )
    # A key that file lacks is also one our own advice dropped there (`--autotune-prune`,
    # a stale key renamed to its new one): told to copy it back, the user revived it.
    them = "it" if len(lacking) == 1 else "them"
    return (
        f"{head}: nothing reads it now, and it holds"
        f" {counted(len(lacking), 'entry', 'entries')} that file lacks (key"
        f" {', '.join(lacking)}): where a branch still on 0.1.0 recorded {them}, copy {them}"
        f' into that file\'s "entries" to keep {them}, then delete it; where --autotune-prune'
        f" (or a key renamed there) dropped {them} from that file, just delete it"
    )


def other_project_warning(shown: str, theirs: str) -> str:
    return (
        f"warning: {shown} was last updated by the project at {theirs} (as seen from the"
        " cache directory), not by this one: where that is another project whose test has"
        " this node id, the two share this file, each compared with the other's baselines;"
        " give the tests distinct paths, or each project its own cache directory (where it"
        " is this project in another checkout, nothing is wrong)"
    )


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
    stale."""
    failed: dict[tuple[str, str], str] = {}
    few_sessions = kept_few
    files: dict[tuple[str, str], dict[PersistentCacheKey, CacheUpdate]] = {}
    for update in updates:
        by_key = files.setdefault((update.device_id, update.tuner), {})
        by_key[PersistentCacheKey(update.key, update.checksum)] = update
    for (device_id, tuner), by_key in sorted(files.items()):
        path = cache_path(settings.cache_dir, device_id, tuner)
        where = settings.relative(path)
        rejoined: list[str] = []
        try:
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
        except CacheFileError as exc:
            failed[device_id, tuner] = shown_paths(str(exc), settings)
            notes.append(f"error: {failed[device_id, tuner]}; this file was not updated")
        else:
            notes.extend(rejoined)
            # What the file holds besides (keys of other runs, or that no test makes now)
            # is said too: "(2 entries)" beside a diff of a file of three read as the whole.
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
    if few_sessions:
        notes.append(few_sessions_note(few_sessions))
    return failed


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


PEAKS_KEPT_WITHIN = 0.02
"""How far each figure of a device's peaks may move (relative) before an update writes the
new ones into a cache file: a GPU's probes repeat to about 1%, and peaks rewritten to their
last digit by every update made two branches that each refreshed another key of one test
conflict in git on the device block alone (their entries merged cleanly)."""


def settled_device(device: Any, held: Any) -> Any:
    """The device block to write over `held`, the file's own (read under its lock by
    `PersistentCache.save`, so another update's peaks, written since this session read the
    file, are the ones compared): `device`, with the file's peaks where the file holds this
    device's and none of their figures moved past `PEAKS_KEPT_WITHIN`."""
    if (
        isinstance(device, Mapping)
        and "peaks" in device
        and isinstance(held, Mapping)
        and held.get("id") == device.get("id")
        and held.get("fingerprint") == device.get("fingerprint")
        and _agree(held.get("peaks"), device["peaks"])
    ):
        return {**device, "peaks": held["peaks"]}
    return device


def _agree(held: Any, new: Any) -> bool:
    """Whether two JSON values have one shape, equal strings and numbers within
    `PEAKS_KEPT_WITHIN` of each other."""
    if isinstance(new, Mapping):
        return (
            isinstance(held, Mapping)
            and held.keys() == new.keys()
            and all(_agree(held[k], new[k]) for k in new)
        )
    if isinstance(new, list):
        return (
            isinstance(held, list)
            and len(held) == len(new)
            and all(_agree(a, b) for a, b in zip(held, new, strict=True))
        )
    numbers = (int, float)
    if isinstance(new, numbers) and isinstance(held, numbers):
        if isinstance(new, bool) or isinstance(held, bool):
            return held == new
        return abs(new - held) <= PEAKS_KEPT_WITHIN * max(abs(new), abs(held))
    return bool(held == new)


def shown_paths(message: str, settings: PluginSettings) -> str:
    """`message` with the paths of cache files in it (all under the cache root) as the
    summary shows paths: from the directory pytest was run in when below it."""
    root = settings.cache_dir
    shown = settings.relative(root)
    if shown == str(root):
        return message
    return message.replace(f"{root}{os.sep}", f"{shown}{os.sep}")


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
