from __future__ import annotations

import errno
import io
import json
import os
import re
import signal
import subprocess
import sys
import textwrap
import warnings
from pathlib import Path
from typing import Any

import pytest
from filelock import Timeout

from pytest_autotune.tune import cache as cache_module
from pytest_autotune.tune import cache_write
from pytest_autotune.tune.benchmark import NS_PER_S, AutotuneOutcome
from pytest_autotune.tune.cache import (
    SCHEMA_VERSION,
    CacheFileError,
    PersistentCache,
    PersistentCacheKey,
    PersistentCacheValue,
    cache_path,
    tuner_cache,
)
from pytest_autotune.tune.cache_format import LockedCacheFile
from pytest_autotune.tune.errors import AutotuneError, AutotuneErrorKind, CacheFileWarning
from pytest_autotune.tune.files import lock_beside
from pytest_autotune.tune.key import key_to_json, stable_key
from tests.fakes import released_lock

REPO = Path(__file__).resolve().parents[2]


def outcome(name: str, index: int, *samples_ns: int) -> AutotuneOutcome:
    return AutotuneOutcome(name, index, tuple(ns / NS_PER_S for ns in samples_ns))


def entry(
    key: Any, checksum: str = "c1", fastest: int = 0
) -> tuple[PersistentCacheKey, PersistentCacheValue]:
    results = (
        outcome("tiled", 0, 1_500_000, 1_200_000, 1_250_000),
        AutotuneError(AutotuneErrorKind.UNKNOWN, "RuntimeError: out of shared memory", "wide"),
        AutotuneError(AutotuneErrorKind.SKIP, "declined the key", "naive"),
    )
    value = PersistentCacheValue(
        key=key_to_json(key),
        fastest_index=fastest,
        fastest_name=results[fastest].name or "",
        results=results,
        bounds={"time_limit_ns": 3_000_000, "binding_resource": "memory"},
    )
    return PersistentCacheKey(stable_key(key), checksum), value


def test_a_gate_only_field_that_does_not_read_leaves_the_entries_to_the_library(
    tmp_path: Path,
) -> None:
    # `sigma_between` is the gate's (set by hand, README): a typo in it must not make a
    # library's runtime reader of the same file (a shipped cache) drop every winner. The
    # plugin refuses the file for the gate (`baselines.gate_fields_error`).
    path = tmp_path / "dev" / "tuner.json"
    PersistentCache(path).save(dict([entry((64, "f32"))]), metadata={"sigma_between": "3%"})
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        reread = PersistentCache(path)
        assert len(reread.load()) == 1 and reread.unreadable() is None
    assert reread.metadata()["sigma_between"] == "3%"


def test_entries_with_outcomes_and_errors_survive_a_round_trip(tmp_path: Path) -> None:
    updates = dict([entry((64, "f32")), entry((128, "f16"), checksum="c2")])
    path = tmp_path / "dev" / "tuner.json"
    device = {"id": "cpu-test", "fingerprint": {"threads": 2}, "peaks": {"flops": 1e12}}

    PersistentCache(path).save(updates, device=device, metadata={"sigma_between": 0.02})

    cache = PersistentCache(path)
    assert cache.load() == updates
    assert cache.device() == device
    assert cache.metadata() == {"sigma_between": 0.02}


def test_a_cache_made_with_a_str_path_saves_and_loads(tmp_path: Path) -> None:
    # `PersistentCache("cache.json")`, as a program names a file: it failed at the first
    # load with "'str' object has no attribute 'with_name'".
    updates = dict([entry((64, "f32"))])
    path = str(tmp_path / "tuner.json")
    assert PersistentCache(path).load() == {}
    PersistentCache(path).save(updates)
    cache = PersistentCache(path)
    assert cache.load() == updates
    assert cache.path == Path(path)


def test_the_file_is_sorted_indented_in_nanoseconds_and_ends_with_a_newline(
    tmp_path: Path,
) -> None:
    path = tmp_path / "tuner.json"
    PersistentCache(path).save(dict([entry("b", "c9"), entry("a", "c2"), entry("b", "c1")]))

    text = path.read_text()
    document = json.loads(text)
    assert text == json.dumps(document, indent=2, sort_keys=True) + "\n"
    assert document["schema_version"] == SCHEMA_VERSION
    assert "device" not in document
    assert [(e["key"], e["checksum"]) for e in document["entries"]] == [
        ("a", "c2"),
        ("b", "c1"),
        ("b", "c9"),
    ]
    first = document["entries"][0]
    assert first["results"][0]["samples_ns"] == [1_500_000, 1_200_000, 1_250_000]
    assert first["results"][1] == {
        "name": "wide",
        "index": 1,
        "error": {"kind": "unknown", "message": "RuntimeError: out of shared memory"},
    }


def test_saving_the_same_entries_twice_gives_identical_bytes(tmp_path: Path) -> None:
    path = tmp_path / "tuner.json"
    updates = dict([entry((1, 2)), entry((3,))])
    PersistentCache(path).save(updates, device={"id": "d"})
    first = path.read_bytes()

    cache = PersistentCache(path)
    cache.save(cache.load(), device=cache.device())

    assert path.read_bytes() == first


def test_a_missing_file_loads_as_empty_without_a_warning(tmp_path: Path) -> None:
    cache = PersistentCache(tmp_path / "absent" / "tuner.json")

    assert cache.load() == {}
    assert cache.device() is None
    assert cache.metadata() == {}


def test_two_caches_on_one_path_keep_each_others_entries(tmp_path: Path) -> None:
    path = tmp_path / "tuner.json"
    first, second = PersistentCache(path), PersistentCache(path)
    first.load()
    second.load()

    first.save(dict([entry("a")]), device={"id": "d"}, metadata={"sigma_between": 0.1})
    second.save(dict([entry("b")]), metadata={"runs": 2})

    assert set(PersistentCache(path).load()) == {entry("a")[0], entry("b")[0]}
    assert second.device() == {"id": "d"}
    assert second.metadata() == {"sigma_between": 0.1, "runs": 2}


def test_a_new_checksum_for_a_key_replaces_every_old_entry_of_that_key(tmp_path: Path) -> None:
    path = tmp_path / "tuner.json"
    PersistentCache(path).save(dict([entry("a", "old"), entry("a", "older"), entry("b", "old")]))

    PersistentCache(path).save(dict([entry("a", "new", fastest=0)]))

    assert set(PersistentCache(path).load()) == {
        PersistentCacheKey(stable_key("a"), "new"),
        PersistentCacheKey(stable_key("b"), "old"),
    }


def test_a_file_holding_one_key_written_as_1_and_as_1_0_reads_with_the_later_entry(tmp_path):
    # Versions whose stored forms of 1 and 1.0 differed filed such a key twice; both are
    # now one key, and the file must still read, not be refused for repeating it.
    first, second = entry(1.0, fastest=0)[1], entry(1, fastest=1)[1]
    path = tmp_path / "t.json"
    path.write_text(
        json.dumps(
            {
                "schema_version": 1,
                "entries": [
                    {**first.to_json(), "checksum": "c1"},
                    {**second.to_json(), "checksum": "c1"},
                ],
            }
        )
    )
    loaded = PersistentCache(path).load()
    assert [value.fastest_index for value in loaded.values()] == [1]
    assert list(loaded) == [PersistentCacheKey("1", "c1")]


def nested(depth: int) -> Any:
    key: Any = 1
    for _ in range(depth):
        key = (key,)
    return key


def test_a_key_nested_deeper_than_a_cache_file_reads_is_refused_before_it_is_written(
    tmp_path: Path,
) -> None:
    # A key of tuples nested 61 deep was saved, and every later load read the whole file
    # as "nested deeper than 64 levels": each of its entries lost, and no save ever again.
    path = tmp_path / "tuner.json"
    PersistentCache(path).save(dict([entry(nested(60)), entry("other")]))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert len(PersistentCache(path).load()) == 2

    with pytest.raises(ValueError, match=r"^autotune key \(+1,\),.* nests deeper than 61 levels"):
        stable_key(nested(61))


def valid_document() -> dict[str, Any]:
    key, value = entry("a")
    return {
        "schema_version": 1,
        "entries": [{**value.to_json(), "checksum": key.checksum}],
    }


def with_result(**fields: Any) -> dict[str, Any]:
    """The valid document with `fields` set in its first result."""
    document = valid_document()
    document["entries"][0]["results"][0].update(fields)
    return document


def with_error(error: Any) -> dict[str, Any]:
    """The valid document with its first result failed with `error`."""
    document = valid_document()
    document["entries"][0]["results"][0] = {"name": "tiled", "index": 0, "error": error}
    return document


def without(name: str) -> dict[str, Any]:
    document = valid_document()
    del document["entries"][0][name]
    return document


UNREADABLE = {
    "invalid JSON": (b'{"schema_version": 1, "entries": [', "is not valid JSON"),
    "merge conflict": (b"<<<<<<< HEAD\n{}\n", "merge conflict markers (line 1: <<<<<<< HEAD)"),
    "pickle": (b"\x80\x04\x95\x05\x00\x00\x00\x00\x00\x00\x00K\x01.", "is not UTF-8"),
    "NaN": (b'{"schema_version": 1, "entries": [], "x": NaN}', "NaN is not a JSON number"),
    "a list": (b"[]", "holds a JSON array, not a JSON object"),
    "null": (b"null", "holds null, not a JSON object"),
    "a string": (b'"{}"', "holds a JSON string, not a JSON object"),
    "a number": (b"2", "holds the number 2, not a JSON object"),
    "a boolean": (b"true", "holds true, not a JSON object"),
    "a null entry": (b'{"schema_version": 1, "entries": [null]}', "entry 0: is null, not a JSON"),
    "no version": (b'{"entries": []}', "missing field 'schema_version'"),
    "newer version": (
        json.dumps({**valid_document(), "schema_version": SCHEMA_VERSION + 1}).encode(),
        "newer pytest-autotune",
    ),
    "entries not a list": (b'{"schema_version": 1, "entries": {}}', "field 'entries' is {}"),
    "device not an object": (
        b'{"schema_version": 1, "entries": [], "device": "gpu"}',
        "field 'device' is \"gpu\", expected an object",
    ),
    "entry without checksum": (
        json.dumps(without("checksum")).encode(),
        "entry 0 (key \"a\"): missing field 'checksum'",
    ),
    "entry without bounds": (json.dumps(without("bounds")).encode(), "missing field 'bounds'"),
    "entry with a bad result": (
        json.dumps(
            {**valid_document(), "entries": [{**valid_document()["entries"][0], "results": [{}]}]}
        ).encode(),
        "entry 0 (key \"a\"): results[0]: missing field 'name'",
    ),
    "entry with a boolean index": (
        json.dumps(
            {
                **valid_document(),
                "entries": [{**valid_document()["entries"][0], "fastest_index": True}],
            }
        ).encode(),
        "field 'fastest_index' is true, expected an integer",
    ),
    "entry with an unknown field": (
        json.dumps(
            {**valid_document(), "entries": [{**valid_document()["entries"][0], "notes": "x"}]}
        ).encode(),
        "unknown fields ['notes']",
    ),
    "a sample of 1e400": (
        json.dumps(valid_document())
        .replace('"samples_ns": [', '"samples_ns": [1e400, ', 1)
        .encode(),
        "1e400, too large for a float",
    ),
    "a sample of 10**400": (
        json.dumps(valid_document())
        .replace('"samples_ns": [', '"samples_ns": [1' + "0" * 400 + ", ", 1)
        .encode(),
        "401 digits",
    ),
    "nesting 100,000 deep": (b"[" * 100_000 + b"]" * 100_000, "nested deeper than 64 levels"),
    "a sample of 0": (
        json.dumps(valid_document()).replace('"samples_ns": [', '"samples_ns": [0, ', 1).encode(),
        "samples_ns[0] is 0, expected a positive integer",
    ),
    "one bad sample among hundreds": (
        json.dumps(valid_document())
        .replace('"samples_ns": [', '"samples_ns": [' + "1000, " * 300 + "-1, ", 1)
        .encode(),
        "results[0]: samples_ns[300] is -1, expected a positive integer (nanoseconds)",
    ),
    "samples as a string": (
        json.dumps(
            {
                **valid_document(),
                "entries": [
                    {
                        **valid_document()["entries"][0],
                        "results": [{"name": "tiled", "index": 0, "samples_ns": "999"}],
                    }
                ],
            }
        ).encode(),
        'samples_ns is "999", expected a list of positive integers',
    ),
    "a field twice": (
        json.dumps(valid_document()).replace('"key": "a"', '"key": "a", "key": "b"', 1).encode(),
        'holds the field "key" twice in one object ("a", then "b")',
    ),
    "repeated entry": (
        json.dumps({**valid_document(), "entries": valid_document()["entries"] * 2}).encode(),
        "entries 0 and 1 both hold key",
    ),
    # A rewrite writes back what was read: read loosely, these came back changed.
    "a result with an unknown field": (
        json.dumps(with_result(note="tuned by hand")).encode(),
        "results[0]: unknown fields ['note']",
    ),
    'dropped_first "false"': (
        json.dumps(with_result(dropped_first="false")).encode(),
        'results[0]: dropped_first is "false", expected true or false',
    ),
    "a null name": (
        json.dumps(with_result(name=None)).encode(),
        "results[0]: name is null, expected a string",
    ),
    "an index as a string": (
        json.dumps(with_result(index="0")).encode(),
        'results[0]: index is "0", expected a non-negative integer',
    ),
    "an error as a string": (
        json.dumps(with_error("boom")).encode(),
        'results[0]: error is "boom", expected an object',
    ),
    "an error of an unknown kind": (
        json.dumps(with_error({"kind": "oom"})).encode(),
        'results[0]: error: kind is "oom", expected one of unknown,',
    ),
}


@pytest.mark.parametrize(("content", "reason"), UNREADABLE.values(), ids=UNREADABLE.keys())
def test_an_unreadable_file_is_reported_by_path_and_never_overwritten(
    tmp_path: Path, content: bytes, reason: str
) -> None:
    path = tmp_path / "tuner.json"
    path.write_bytes(content)
    cache = PersistentCache(path)

    with pytest.warns(CacheFileWarning) as warned:
        assert cache.load() == {}
    with pytest.raises(CacheFileError) as raised:
        cache.save(dict([entry("b")]))

    (warning,) = warned
    assert str(path) in str(warning.message) and reason in str(warning.message)
    assert str(raised.value).startswith(f"{path}: ") and reason in str(raised.value)
    assert path.read_bytes() == content


def test_a_folder_that_cannot_be_written_is_named_as_the_reason(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A save writes beside the file first: a read-only folder failed naming its
    # `.gitignore` ("Permission denied: '.../.gitignore'"), a file the user never made.
    # (Faked: the tests may run as root, whom no permission stops.)
    folder = tmp_path / "cpu"
    folder.mkdir()

    def denied(where: Path) -> None:
        raise PermissionError(13, "Permission denied", str(where / ".gitignore"))

    monkeypatch.setattr(cache_module, "ignore_lock_files", denied)
    with pytest.raises(CacheFileError) as raised:
        PersistentCache(folder / "tuner.json").save(dict([entry("a")]))
    assert str(raised.value) == (
        f"{folder / 'tuner.json'}: cannot be written: its folder {folder} is not writable"
        " (Permission denied)"
    )

    # A file beside it that exists and cannot be written (another user's lock file) is
    # that file, not the folder.
    (folder / ".gitignore").write_text("")
    with pytest.raises(CacheFileError) as raised:
        PersistentCache(folder / "tuner.json").save(dict([entry("a")]))
    assert str(raised.value).endswith(
        "cannot be written: .gitignore beside it is not writable (Permission denied)"
    )

    (tmp_path / "file").write_text("")
    with pytest.raises(CacheFileError) as raised:
        PersistentCache(tmp_path / "file" / "tuner.json").save(dict([entry("a")]))
    assert str(raised.value).endswith(
        f"cannot be written: {tmp_path / 'file'} is a file, not a folder"
    )


def test_a_folder_that_cannot_be_made_names_the_folder_that_is_not_writable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A new device's folder in a cache folder the user may not write to failed with
    # mkdir's own "[Errno 13] Permission denied: '.../cpu'", where a folder that exists
    # says it is not writable. (Faked: the tests may run as root.)
    folder = tmp_path / "cache" / "cpu"

    def denied(self: Path, *args: object, **kwargs: object) -> None:
        raise PermissionError(13, "Permission denied", str(folder))

    monkeypatch.setattr(Path, "mkdir", denied)
    with pytest.raises(CacheFileError) as raised:
        PersistentCache(folder / "tuner.json").save(dict([entry("a")]))
    assert str(raised.value) == (
        f"{folder / 'tuner.json'}: cannot be written: its folder {folder} cannot be made:"
        f" {tmp_path / 'cache'} is not writable (Permission denied)"
    )


def test_a_cache_folder_linked_to_a_missing_folder_is_named_as_the_reason(tmp_path: Path) -> None:
    # `.autotune` linked to a shared cache that is not there (a mount not mounted, a CI
    # cache not restored): the save's mkdir said "File exists", which read as the cache
    # file existing, and nothing named the link.
    cache_dir = tmp_path / ".autotune"
    cache_dir.symlink_to(tmp_path / "shared" / "cache")
    with pytest.raises(CacheFileError) as raised:
        PersistentCache(cache_dir / "cpu" / "tuner.json").save(dict([entry("a")]))
    assert str(raised.value).endswith(
        f"cannot be written: {cache_dir} is a symbolic link to"
        f" {tmp_path / 'shared' / 'cache'}, which does not exist"
    )


def test_a_folder_on_a_read_only_file_system_is_named_as_the_reason(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The save's first write is the folder's `.gitignore`: on a read-only mount the error
    # named that file ("Read-only file system: '.../.gitignore'"), one the user never made.
    # (Faked: mounting one needs root.)
    folder = tmp_path / "cpu"
    folder.mkdir()

    def read_only(where: Path) -> None:
        raise OSError(errno.EROFS, "Read-only file system", str(where / ".gitignore"))

    monkeypatch.setattr(cache_module, "ignore_lock_files", read_only)
    with pytest.raises(CacheFileError) as raised:
        PersistentCache(folder / "tuner.json").save(dict([entry("a")]))
    assert str(raised.value) == (
        f"{folder / 'tuner.json'}: cannot be written: its folder {folder} is on a read-only"
        " file system"
    )


def test_a_gitignore_a_full_disk_left_empty_is_written_by_the_next_save(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A full disk creates the `.gitignore` and fails its write; the empty file stayed, since
    # it is written once and never replaced, and the lock files went into commits.
    folder = tmp_path / "cpu"
    real_open = open

    class NoSpace(io.StringIO):
        def write(self, text: str) -> int:
            raise OSError(errno.ENOSPC, "No space left on device")

    def full(path: Path, mode: str, **kw: Any) -> io.StringIO:
        real_open(path, mode, **kw).close()
        return NoSpace()

    with monkeypatch.context() as patched:
        patched.setattr(cache_write, "open", full, raising=False)
        with pytest.raises(CacheFileError, match="No space left on device"):
            PersistentCache(folder / "tuner.json").save(dict([entry("a")]))
    assert not (folder / ".gitignore").exists()

    PersistentCache(folder / "tuner.json").save(dict([entry("a")]))
    assert ".*.lock" in (folder / ".gitignore").read_text().splitlines()


def test_a_gitignore_this_save_could_not_make_is_left_to_whoever_made_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The open fails (here: another process's file appears as this one is refused): the
    # clean-up of a file half-written by a full disk deleted that other process's file.
    folder = tmp_path / "cpu"
    folder.mkdir()

    def refused(path: Path, mode: str, **kw: Any) -> io.StringIO:
        Path(path).write_text("# the project's own\n")
        raise OSError(errno.EIO, "Input/output error")

    with monkeypatch.context() as patched:
        patched.setattr(cache_write, "open", refused, raising=False)
        with pytest.raises(CacheFileError, match="Input/output error"):
            PersistentCache(folder / "tuner.json").save(dict([entry("a")]))
    assert (folder / ".gitignore").read_text() == "# the project's own\n"


def test_a_file_that_turns_unreadable_after_loading_is_not_overwritten(tmp_path: Path) -> None:
    path = tmp_path / "tuner.json"
    PersistentCache(path).save(dict([entry("a")]))
    cache = PersistentCache(path)
    cache.load()
    path.write_text("{")

    with pytest.raises(CacheFileError, match="is not valid JSON"):
        cache.save(dict([entry("b")]))

    assert path.read_text() == "{"


def test_a_file_that_cannot_be_read_is_reported_with_the_system_reason(tmp_path: Path) -> None:
    path = tmp_path / "tuner.json"
    path.mkdir()

    with pytest.warns(CacheFileWarning, match="cannot be read: Is a directory"):
        assert PersistentCache(path).load() == {}


WRITER = textwrap.dedent(
    """
    import sys
    from pathlib import Path
    from pytest_autotune.tune.benchmark import AutotuneOutcome
    from pytest_autotune.tune.cache import PersistentCache, PersistentCacheKey, PersistentCacheValue
    from pytest_autotune.tune.key import stable_key

    path, worker, saves = Path(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
    for i in range(saves):
        key = (worker, i)
        value = PersistentCacheValue([worker, i], 0, "a", (AutotuneOutcome("a", 0, (1e-3,)),))
        PersistentCache(path).save({PersistentCacheKey(stable_key(key), "c"): value})
    """
)


def python(*args: str, **kwargs: Any) -> subprocess.Popen[str]:
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]),
    }
    return subprocess.Popen([sys.executable, "-c", *args], env=env, text=True, **kwargs)


def test_eight_processes_saving_at_once_lose_no_entry(tmp_path: Path) -> None:
    path = tmp_path / "dev" / "tuner.json"
    workers = [python(WRITER, str(path), str(w), "20") for w in range(8)]

    assert [w.wait(timeout=120) for w in workers] == [0] * 8

    keys = {tuple(json.loads(k.key)) for k in PersistentCache(path).load()}
    assert keys == {(w, i) for w in range(8) for i in range(20)}


KILLED_WRITER = textwrap.dedent(
    """
    import os, sys, time
    from pathlib import Path
    from pytest_autotune.tune.benchmark import AutotuneOutcome
    from pytest_autotune.tune.cache import PersistentCache, PersistentCacheKey, PersistentCacheValue

    def half_written_then_stuck(fd):
        # The temporary file holds half its text when the process dies.
        os.ftruncate(fd, os.fstat(fd).st_size // 2)
        print("stuck", flush=True)
        time.sleep(600)

    os.fsync = half_written_then_stuck
    value = PersistentCacheValue("late", 0, "a", (AutotuneOutcome("a", 0, (1e-3,)),))
    PersistentCache(Path(sys.argv[1])).save({PersistentCacheKey('"late"', "c"): value})
    """
)


LOCK_HOLDER = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path
    from pytest_autotune.tune.files import lock_beside

    with lock_beside(Path(sys.argv[1]), timeout=-1):
        print("holding", flush=True)
        time.sleep(600)
    """
)


def test_a_save_past_the_lock_wait_names_the_holder_and_the_next_tries_without_waiting(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Another process stopped (SIGSTOP, a debugger) or hung holding a cache file's lock:
    # "still locked" named no process, and each later save of a program waited it out
    # again, its call stalled each time.
    path = tmp_path / "tuner.json"
    PersistentCache(path).save(dict([entry("a")]))
    waits: list[float] = []

    def watched(path: Path, timeout: float) -> Any:
        waits.append(timeout)
        return lock_beside(path, timeout)

    monkeypatch.setattr(cache_module, "lock_beside", watched)
    cache = PersistentCache(path, lock_timeout=0.01)
    holder = python(LOCK_HOLDER, str(path), stdout=subprocess.PIPE)
    assert holder.stdout is not None
    try:
        assert holder.stdout.readline() == "holding\n"
        for _ in range(2):
            with pytest.raises(LockedCacheFile) as raised:
                cache.save(dict([entry("b")]))
    finally:
        holder.kill()
        holder.wait(timeout=30)
        holder.stdout.close()
    by = f" by process {holder.pid} (" if os.path.exists("/proc/locks") else " after"
    assert f"{path}: {path.parent / '.tuner.json.lock'} still locked{by}" in str(raised.value)
    # The try that did not wait says so, not "after 0.01 s".
    assert str(raised.value).endswith(") again" if "(" in by else "locked again")
    assert waits == [0.01, 0]

    cache.save(dict([entry("b")]))
    cache.save(dict([entry("c")]))
    assert waits == [0.01, 0, 0, 0.01]
    assert set(PersistentCache(path).load()) == {entry(k)[0] for k in "abc"}


@pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs SIGKILL")
def test_a_write_killed_midway_leaves_the_previous_file_and_no_lock_behind(
    tmp_path: Path,
) -> None:
    path = tmp_path / "tuner.json"
    before = dict([entry("a"), entry("b")])
    PersistentCache(path).save(before)
    previous = path.read_bytes()

    writer = python(KILLED_WRITER, str(path), stdout=subprocess.PIPE)
    assert writer.stdout is not None
    assert writer.stdout.readline() == "stuck\n"
    with pytest.raises(Timeout):
        lock_beside(path, timeout=0).acquire()
    writer.send_signal(signal.SIGKILL)
    writer.wait(timeout=30)
    writer.stdout.close()

    assert path.read_bytes() == previous
    assert PersistentCache(path).load() == before
    PersistentCache(path).save(dict([entry("c")]))
    assert set(PersistentCache(path).load()) == {entry(k)[0] for k in "abc"}
    assert sorted(os.listdir(tmp_path)) == [
        ".gitignore",
        *released_lock(".tuner.json.lock"),
        "tuner.json",
    ]


def test_a_save_through_a_linked_cache_file_keeps_the_link_and_writes_its_target(
    tmp_path: Path,
) -> None:
    # A cache file linked to a shared one (baselines kept once for several checkouts or
    # packages): the save's rename replaced the link with a file of its own, and the
    # shared file, which the other links still name, never saw the new entries.
    shared = tmp_path / "shared" / "tuner.json"
    PersistentCache(shared).save(dict([entry("a")]))
    link = tmp_path / "dev" / "tuner.json"
    link.parent.mkdir()
    link.symlink_to(shared)

    PersistentCache(link).save(dict([entry("b")]))

    assert link.is_symlink() and link.resolve() == shared.resolve()
    assert set(PersistentCache(shared).load()) == {entry("a")[0], entry("b")[0]}


def test_a_cache_file_linked_into_a_missing_folder_is_not_written_there(tmp_path: Path) -> None:
    # A cache file linked to a shared one on a mount not mounted: the save's lock made
    # the missing folders (filelock makes a lock file's folders), the entries went into
    # them, where the mount, once mounted, hid them, and the update said "updated".
    shared = tmp_path / "mount" / "cache" / "tuner.json"
    link = tmp_path / "dev" / "tuner.json"
    link.parent.mkdir()
    link.symlink_to(shared)

    with pytest.raises(CacheFileError) as raised:
        PersistentCache(link).save(dict([entry("a")]))

    assert str(raised.value) == (
        f"{link}: cannot be written: it is a symbolic link to {shared},"
        f" in {shared.parent}, which does not exist"
    )
    assert not (tmp_path / "mount").exists()
    assert link.is_symlink()


def test_links_to_one_shared_cache_file_share_its_lock_and_journal(tmp_path: Path) -> None:
    # Locked and journalled beside the link, two checkouts' links to one shared file took two
    # locks, and the entries one appended to its journal never reached the other's process.
    shared = tmp_path / "shared" / "tuner.json"
    PersistentCache(shared).save(dict([entry(str(n)) for n in range(40)]))
    links = [tmp_path / name / "tuner.json" for name in ("dev1", "dev2")]
    for link in links:
        link.parent.mkdir()
        link.symlink_to(shared)

    PersistentCache(links[0], journal=True).save(dict([entry("new")]))

    assert entry("new")[0] in PersistentCache(links[1], journal=True).load()
    beside_links = {name for link in links for name in os.listdir(link.parent)}
    assert beside_links <= {"tuner.json", ".gitignore"}  # no lock, no journal of their own
    assert (shared.parent / "tuner.json.journal").exists()
    assert lock_beside(links[0], 1).lock_file == lock_beside(links[1], 1).lock_file


def test_a_successful_save_leaves_no_temporary_file(tmp_path: Path) -> None:
    path = cache_path(tmp_path, "cpu-test", "pkg.mod-x")
    PersistentCache(path).save(dict([entry("a")]))
    PersistentCache(path).save(dict([entry("b")]))

    assert sorted(os.listdir(path.parent)) == [
        ".gitignore",
        *released_lock(".pkg.mod-x.json.lock"),
        "pkg.mod-x.json",
    ]


@pytest.mark.parametrize(
    ("tuner_name", "file_name"),
    [
        ("pkg.mod-x", "pkg.mod-x.json"),
        ("tests/test_a.py::test_sum", "tests_test_a.py__test_sum-3a7a8f8d50.json"),
        ("test_sum[64-float32]", "test_sum_64-float32_-963b6d5d8a.json"),
        ("..", "_.-5ec1f7e700.json"),
        (".hidden", "_hidden-1692419006.json"),
        ("Test_Sum", "Test_Sum-d5d37aa06b.json"),
    ],
)
def test_a_tuner_name_becomes_a_readable_file_inside_the_device_folder(
    tmp_path: Path, tuner_name: str, file_name: str
) -> None:
    assert cache_path(tmp_path, "cuda-nvidia-h200", tuner_name) == (
        tmp_path / "cuda-nvidia-h200" / file_name
    )


@pytest.mark.parametrize("name", ["aux", "con", "nul.ops", "com1", "lpt9.x", "prn.py::t", "AUX"])
def test_no_cache_file_or_folder_is_named_as_a_windows_device(tmp_path: Path, name: str) -> None:
    """Windows keeps these names for devices, with any extension: `aux.json` there is the
    device, and Git for Windows refuses to check out a commit holding one (a `local_tuner()`
    of a module `aux.py` filed its cache so on Linux)."""
    path = cache_path(tmp_path, name, name).relative_to(tmp_path)
    assert all(
        part.partition(".")[0].lower() not in {"aux", "con", "nul", "com1", "lpt9", "prn"}
        for part in path.parts
    ), path


def test_no_cache_folder_ends_with_a_dot(tmp_path: Path) -> None:
    """Windows drops a trailing dot from a folder's name (`--autotune-runner=win.` made
    `cpu-win.`), and Git for Windows refuses to check out a path holding one."""
    path = cache_path(tmp_path, "cpu-win.", "x.")
    assert not path.parent.name.endswith(".")
    assert path.parent.name != cache_path(tmp_path, "cpu-win", "x.").parent.name


def test_a_test_file_whose_name_is_not_utf8_names_a_cache_file_of_its_own(tmp_path: Path) -> None:
    # Python reads a file name in Latin-1 (`caf\xe9.py`) with a lone surrogate, which its
    # node id keeps: naming its cache failed `--autotune-update` with a UnicodeEncodeError.
    name = "test_caf\udce9.py::test_sum"
    path = cache_path(tmp_path, "cpu-x", name)
    assert path.name.startswith("test_caf_.py__test_sum-")
    assert path != cache_path(tmp_path, "cpu-x", "test_caf\udce8.py::test_sum")
    tuner_cache(tmp_path, "cpu-x", name).save(dict([entry("a")]))
    assert list(tuner_cache(tmp_path, "cpu-x", name).load()) == [entry("a")[0]]


def test_a_cache_a_windows_device_name_had_is_still_read(tmp_path: Path) -> None:
    PersistentCache(tmp_path / "cpu-x" / "aux.json", "aux").save(dict([entry("a")]))
    cache = tuner_cache(tmp_path, "cpu-x", "aux")
    assert {k.key for k in cache.load()} == {stable_key("a")}


def test_a_tuner_named_peaks_does_not_share_the_devices_peaks_file(tmp_path: Path) -> None:
    # A script `peaks.py` names its tuner `peaks`: its cache was `<device>/peaks.json`, the
    # file of the device's probed peaks, which `compare` and `changed` skip.
    from pytest_autotune.tune.cache_names import PEAKS_FILE, cache_files

    path = cache_path(tmp_path, "cpu-x", "peaks")
    assert path.name != PEAKS_FILE and path.name.startswith("peaks-")
    path.parent.mkdir(parents=True)
    path.write_text("{}")
    (path.parent / PEAKS_FILE).write_text("{}")
    assert cache_files(tmp_path) == [path]


def test_long_tuner_names_sharing_a_prefix_get_distinct_files_of_safe_length(
    tmp_path: Path,
) -> None:
    first = cache_path(tmp_path, "d", "x" * 300 + "1")
    second = cache_path(tmp_path, "d", "x" * 300 + "2")

    assert first != second
    assert len(first.name) <= 125 and first.name.startswith("xxxx")


def test_metadata_that_would_replace_the_file_structure_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="'entries'"):
        PersistentCache(tmp_path / "t.json").save({}, metadata={"entries": []})


def test_a_key_whose_string_is_not_its_json_serialized_is_refused(tmp_path: Path) -> None:
    _, value = entry("a")

    with pytest.raises(ValueError, match="does not serialize"):
        PersistentCache(tmp_path / "t.json").save({PersistentCacheKey("a", "c"): value})
    assert not (tmp_path / "t.json").exists()


def test_a_save_after_another_writer_keeps_that_writers_entries(tmp_path: Path) -> None:
    """A save reuses the file it last read only while the file is unchanged on disk."""
    path = tmp_path / "tuner.json"
    mine = PersistentCache(path)
    mine.load()
    mine.save(dict([entry("a")]))
    PersistentCache(path).save(dict([entry("b")]))
    mine.save(dict([entry("c")]))
    assert {k.key for k in PersistentCache(path).load()} == {stable_key(k) for k in ("a", "b", "c")}


def test_a_save_writes_what_one_dump_of_the_whole_document_would(tmp_path: Path) -> None:
    path = tmp_path / "tuner.json"
    cache = PersistentCache(path)
    cache.save(dict([entry("a"), entry("b")]), device={"id": "d"}, metadata={"z": [1], "a": 2})
    cache.save(dict([entry("c", fastest=0)]))
    cache.save(dict([entry("b", checksum="c2")]))
    text = path.read_text()
    assert text == json.dumps(json.loads(text), indent=2, sort_keys=True) + "\n"


def test_a_cache_file_name_is_distinct_for_names_differing_in_non_ascii_letters(
    tmp_path: Path,
) -> None:
    first = cache_path(tmp_path, "d", "tests/test_u.py::test_é")
    second = cache_path(tmp_path, "d", "tests/test_u.py::test_ü")
    assert first != second
    assert first.name.startswith("tests_test_u.py__test__-") and first.name.isascii()


COLLIDED_BEFORE = [
    ("tests/a.py::t", "tests_a.py::t"),
    ("tests/a.py::t", "tests_a.py__t"),
    ("a/b", "a_b"),
    ("a::b", "a__b"),
    ("t[1/2]", "t[1_2]"),
    ("t[x y]", "t[x_y]"),
    (".x", "_x"),
    ("Test_a", "test_a"),
    ("test_A", "test_a"),
    ("x-0123456789", "x"),
]
"""Pairs that shared a cache file under 0.1.0's names (the last three on a file system
that does not tell upper from lower case, and a plain name looking like a hashed one)."""


@pytest.mark.parametrize(("first", "second"), COLLIDED_BEFORE)
def test_names_that_shared_a_file_before_get_two_files_on_any_file_system(
    tmp_path: Path, first: str, second: str
) -> None:
    one, two = cache_path(tmp_path, "d", first), cache_path(tmp_path, "d", second)
    assert str(one).lower() != str(two).lower()


def test_device_ids_that_shared_a_folder_before_get_two_folders(tmp_path: Path) -> None:
    assert cache_path(tmp_path, "cuda:0", "t").parent != cache_path(tmp_path, "cuda_0", "t").parent
    assert cache_path(tmp_path, "cuda-nvidia-h200", "t").parent.name == "cuda-nvidia-h200"


def test_a_file_storing_another_tuners_name_is_reported_with_both_names_and_kept(
    tmp_path: Path,
) -> None:
    path = cache_path(tmp_path, "d", "tests/a.py::t")
    PersistentCache(path, "tests_a.py::t").save(dict([entry("a")]))
    before = path.read_bytes()
    cache = tuner_cache(tmp_path, "d", "tests/a.py::t")

    with pytest.warns(CacheFileWarning) as caught:
        assert cache.load() == {}
    (message,) = [str(w.message) for w in caught]
    assert str(path) in message
    assert "'tests_a.py::t'" in message and "'tests/a.py::t'" in message
    assert "\n" not in message
    with pytest.raises(CacheFileError, match=re.escape("not of 'tests/a.py::t'")):
        cache.save(dict([entry("b")]))
    with pytest.raises(CacheFileError, match=re.escape("holds the cache of 'tests_a.py::t'")):
        tuner_cache(tmp_path, "d", "tests/a.py::t").save(dict([entry("b")]))
    assert path.read_bytes() == before


def test_a_file_of_another_device_in_this_devices_folder_is_reported_and_kept(
    tmp_path: Path,
) -> None:
    # An H200's cache copied by hand into a CPU's folder: its winners were served to the
    # CPU without a word, and the next save labelled the file the CPU's while keeping the
    # H200's fingerprint.
    path = cache_path(tmp_path, "cpu-amd-epyc-2t", "t")
    h200 = {"id": "cuda-nvidia-h200", "fingerprint": {"gpu": "NVIDIA H200"}}
    PersistentCache(path, "t").save(dict([entry("a")]), device=h200)
    before = path.read_bytes()
    cache = tuner_cache(tmp_path, "cpu-amd-epyc-2t", "t")

    with pytest.warns(CacheFileWarning) as caught:
        assert cache.load() == {}
    (message,) = [str(w.message) for w in caught]
    assert str(path) in message
    assert (
        "holds the cache of device 'cuda-nvidia-h200', not of 'cpu-amd-epyc-2t', whose folder"
        " it is in: a file copied or moved by hand? move it to the folder"
        ' \'cuda-nvidia-h200\', or set its device "id" to "cpu-amd-epyc-2t" to use its'
        " entries on this device"
    ) in message
    # Whole, only in the wrong folder: the advice was "repair it, or remove it to start
    # anew", and removing it drops every baseline the other device recorded.
    assert message.endswith(
        "will not overwrite the file: move or relabel it as said, as removing it would drop"
        " every baseline it holds"
    )
    with pytest.raises(CacheFileError, match="not of 'cpu-amd-epyc-2t'"):
        cache.save(dict([entry("b")]), device={"id": "cpu-amd-epyc-2t"})
    assert path.read_bytes() == before
    # In its own device's folder it reads, as it always did.
    assert tuner_cache(tmp_path, "cuda-nvidia-h200", "t").device_id == "cuda-nvidia-h200"
    moved = cache_path(tmp_path, "cuda-nvidia-h200", "t")
    moved.parent.mkdir()
    path.rename(moved)
    assert {k.key for k in tuner_cache(tmp_path, "cuda-nvidia-h200", "t").load()} == {
        stable_key("a")
    }


def test_a_save_stores_the_exact_tuner_name_in_the_file(tmp_path: Path) -> None:
    cache = tuner_cache(tmp_path, "d", "tests/test_é.py::test_x[1]")
    cache.save(dict([entry("a")]))
    assert json.loads(cache.path.read_text())["tuner"] == "tests/test_é.py::test_x[1]"


def test_a_file_under_its_0_1_name_is_read_until_a_save_writes_the_new_name(
    tmp_path: Path,
) -> None:
    legacy = tmp_path / "d" / "tests_a.py__t.json"
    PersistentCache(legacy).save(dict([entry("a")]))
    old = legacy.read_bytes()
    cache = tuner_cache(tmp_path, "d", "tests/a.py::t")

    assert {k.key for k in cache.load()} == {stable_key("a")}
    cache.save(dict([entry("b")]))

    assert cache.path != legacy
    assert {k.key for k in tuner_cache(tmp_path, "d", "tests/a.py::t").load()} == {
        stable_key("a"),
        stable_key("b"),
    }
    assert legacy.read_bytes() == old


EARLIEST_0_1_FILE = """{
  "device": {"fingerprint": {}, "id": "cpu-x", "peaks": null},
  "entries": [
    {
      "bounds": null,
      "checksum": "03f4b658c1662800",
      "fastest_index": 1,
      "fastest_name": "add_reduce",
      "key": "default",
      "results": [
        {"dropped_first": true, "index": 0, "name": "pairwise", "samples_ns": [33132, 12692]},
        {"dropped_first": false, "index": 1, "name": "add_reduce", "samples_ns": [8612, 8586]}
      ]
    }
  ],
  "schema_version": 1
}
"""
"""A cache file as 0.1.0's first releases wrote it, of a test under `tests/unit tests/`: no
hash in its name, though a space was replaced."""


def test_a_file_0_1_named_without_a_hash_for_a_space_is_read_and_carried_over(
    tmp_path: Path,
) -> None:
    """0.1.0 first hashed only an over-long name, later also one with a character other than a
    node id's separators replaced: a test path with a space was filed under both rules' names
    in turn, and the earlier one was never read again ("no baseline", the file not named)."""
    old = tmp_path / "cpu-x" / "tests_unit_tests_test_a.py__test_sum.json"
    old.parent.mkdir()
    old.write_text(EARLIEST_0_1_FILE)
    cache = tuner_cache(tmp_path, "cpu-x", "tests/unit tests/test_a.py::test_sum")

    assert cache.legacy == old
    assert {k.key for k in cache.load()} == {stable_key("default")}
    cache.save(dict([entry("b")]))

    again = tuner_cache(tmp_path, "cpu-x", "tests/unit tests/test_a.py::test_sum")
    assert {k.key for k in again.load()} == {stable_key("default"), stable_key("b")}
    assert again.source() == cache.path
    assert old.read_text() == EARLIEST_0_1_FILE


def test_the_file_of_a_tuner_named_like_a_0_1_name_is_neither_read_nor_touched(
    tmp_path: Path,
) -> None:
    """`tests_a.py__t` files its cache where 0.1.0 filed `tests/a.py::t`'s: that one has a
    file of its own now, and must neither read nor replace the other tuner's."""
    theirs = tuner_cache(tmp_path, "d", "tests_a.py__t")
    theirs.save(dict([entry("a")]))
    before = theirs.path.read_bytes()
    mine = tuner_cache(tmp_path, "d", "tests/a.py::t")
    assert mine.legacy == theirs.path

    assert mine.load() == {}
    mine.save(dict([entry("b")]))

    assert theirs.path.read_bytes() == before
    assert {k.key for k in tuner_cache(tmp_path, "d", "tests/a.py::t").load()} == {stable_key("b")}


def test_threads_saving_through_one_cache_object_lose_no_entry(tmp_path: Path) -> None:
    import threading

    cache = PersistentCache(tmp_path / "tuner.json")
    cache.load()

    def save(prefix: str) -> None:
        for i in range(15):
            cache.save(dict([entry(f"{prefix}{i}")]))

    threads = [threading.Thread(target=save, args=(p,)) for p in "abcd"]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(PersistentCache(tmp_path / "tuner.json").load()) == 60


def test_a_device_folder_that_is_a_file_is_named_as_such(tmp_path: Path) -> None:
    # "Not a directory" named neither the file in the way nor what belongs there.
    (tmp_path / "cpu-x").write_text("")
    cache = PersistentCache(tmp_path / "cpu-x" / "t.json")
    with pytest.warns(
        CacheFileWarning, match=r"cpu-x is a file, where a folder of caches belongs"
    ) as caught:
        assert cache.load() == {}
    # Nor is the advice to remove "it": no cache file is there, and the file in the way
    # (a user's own, named by a mistyped cache_dir) is not ours.
    message = str(caught[0].message)
    assert "remove it" not in message
    assert "the file in the folder's place is no cache file" in message


def test_a_file_committed_with_crlf_line_endings_is_written_back_with_them(
    tmp_path: Path,
) -> None:
    """A cache file committed with CRLF (from Windows without git's line ending conversion)
    was written back with LF by every update: every line of it a change in git's diff."""
    path = tmp_path / "t.json"
    PersistentCache(path).save(dict([entry(1)]))
    lf = path.read_bytes()
    path.write_bytes(lf.replace(b"\n", b"\r\n"))
    PersistentCache(path).save(dict([entry(2)]))
    written = path.read_bytes()
    assert written.count(b"\r\n") == written.count(b"\n") > lf.count(b"\n")
    assert set(PersistentCache(path).load()) == {entry(1)[0], entry(2)[0]}
    path.write_bytes(lf)
    PersistentCache(path).save(dict([entry(3)]))
    assert b"\r\n" not in path.read_bytes()
