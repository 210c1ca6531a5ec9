"""The committed baselines of a session: read from the cache files (each file once, never
written while tests run), and what an update says it did with them. The entries
`--autotune-update` writes at the end are `cache_updates`'.

The rule of which earlier sessions an update keeps is the gate's (`update_policy.history`);
this module reads and words, `cache_updates` writes.
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_autotune.gate import (
    UPDATED_MESSAGE,
    Baseline,
    BaselineError,
    BaselineSession,
    GroupVerdict,
    format_change,
    format_interval,
)
from pytest_autotune.gate.baseline import sigma_between_of
from pytest_autotune.gate.comparable import candidate_change
from pytest_autotune.plugin_settings import PluginSettings
from pytest_autotune.report.figures import counted
from pytest_autotune.tune.cache import (
    CacheFileError,
    PersistentCache,
    PersistentCacheKey,
    PersistentCacheValue,
    cache_path,
    tuner_cache,
)
from pytest_autotune.tune.cache_format import PROJECT_ROOT_FIELD, TUNER_FIELD, advice
from pytest_autotune.tune.config import PROJECT_CACHE_DIR
from pytest_autotune.tune.key import stable_key

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
        elsewhere = self._nested_project(device_id, tuner) or self._cache_above()
        if elsewhere is None:
            return shown
        # An update's line says only "new baseline: none before for this key": the file it
        # writes would be a second copy of the test's baselines, to commit.
        note = f"note: {shown}: written anew by this update, while {elsewhere}"
        if self._settings.update and note not in self._notes:
            self._notes.append(note)
        return f"{shown}; {elsewhere}"

    def _cache_above(self) -> str | None:
        """Why a run of no configuration file may have named and filed its tests otherwise
        than the runs that recorded their baselines (`PluginSettings.cache_above`); None
        where no folder above the root dir holds caches."""
        above = self._settings.cache_above
        if above is None:
            return None
        return (
            "pytest found no configuration file, so its root dir, which tests are"
            f" named and filed from, is the folder it was run in, {self._settings.rootpath},"
            f" while {self._settings.relative(above)}, above it, holds caches: a pytest.ini (or a"
            " pyproject.toml's [tool.pytest.ini_options]) at the project's top makes that"
            " the root dir of every run"
        )

    def _nested_project(self, device_id: str, tuner: str) -> str | None:
        """Where a folder between the root dir and a test's file holds that test's baseline
        file under the name a run rooted there gives it: a monorepo's package of its own
        pytest.ini, whose update ran in its folder, gated from the repository's top under a
        configuration there. Every group read "no baseline" there, passing, while the
        package's committed cache held them all. None where no such file is there (a tuner
        that is no test's node id included)."""
        path, sep, rest = tuner.partition("::")
        if not sep:
            return None
        parts = Path(path).parts
        rootpath = self._settings.rootpath
        names = [PROJECT_CACHE_DIR]
        if self._settings.cache_dir.is_relative_to(rootpath):
            names.insert(0, self._settings.cache_dir.relative_to(rootpath))
        for depth in range(1, len(parts)):
            folder = rootpath.joinpath(*parts[:depth])
            inner = Path(*parts[depth:]).as_posix() + sep + rest
            for name in dict.fromkeys(names):
                if folder / name == self._settings.cache_dir:
                    continue  # this run's own folder: a file there is a test of this root's
                cache = tuner_cache(folder / name, device_id, inner)
                found = next((f for f in (cache.path, cache.legacy) if f and f.is_file()), None)
                if found is not None:
                    return (
                        f"{self._settings.relative(found)} holds this test's baselines"
                        f" as {inner}, the name a run whose root dir is"
                        f" {self._settings.relative(folder)} gives it: run its tests from"
                        " there, as the update that recorded them was"
                    )
        return None

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
    other_caps: str | None = None,
) -> str:
    """What an update did with the baseline: joined it (and how many sessions it now
    holds), started a new one (and why: with this run's `candidates`, what changed in the
    list, as the gate says it; `replaced`, the baseline's winner skipped here, which this
    run's winner takes the place of; `other_work`, how the work the old one measured
    differs from this run's, for the same candidates: `Baseline.other_work`; `other_caps`,
    how the thread caps it was measured under differ: `gate.comparable.other_thread_caps`;
    `unusable`,
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
            else f"new baseline: the old one was measured under other thread caps ({other_caps})"
            if other_caps is not None
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


def shown_paths(message: str, settings: PluginSettings) -> str:
    """`message` with the paths of cache files in it (all under the cache root) as the
    summary shows paths: from the directory pytest was run in when below it. The cache root
    itself too, which a reason names (a file in its place, a link to nothing, a folder in
    it that cannot be made): else one line named one folder in two ways."""
    root = settings.cache_dir
    shown = settings.relative(root)
    if shown == str(root):
        return message
    # Not where the root's name goes on (`.autotune2`, `.autotune.bak`), but where a
    # sentence ends after it (`... in /home/me/proj/.autotune.`).
    return re.sub(re.escape(str(root)) + r"(?![\w-]|\.[\w-])", lambda _: shown, message)


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
