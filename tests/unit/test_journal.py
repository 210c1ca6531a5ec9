"""The journal beside a cache file: saves that append what changed (issue 15)."""

from __future__ import annotations

import errno
import json
import os
import signal
import subprocess
import textwrap
import warnings
from pathlib import Path
from typing import Any

import pytest

from pytest_autotune.tune import journal
from pytest_autotune.tune.benchmark import AutotuneOutcome
from pytest_autotune.tune.cache import (
    CacheFileError,
    PersistentCache,
    PersistentCacheKey,
    PersistentCacheValue,
    parse_cache,
)
from pytest_autotune.tune.cache_format import entry_to_json
from pytest_autotune.tune.errors import CacheFileWarning
from pytest_autotune.tune.key import key_to_json, stable_key
from tests.fakes import text_mode_opens
from tests.unit.test_cache import python


def entry(key: Any, winner: str = "a") -> tuple[PersistentCacheKey, PersistentCacheValue]:
    results = (AutotuneOutcome("a", 0, (1e-3, 2e-3)), AutotuneOutcome("b", 1, (3e-3,)))
    index = 0 if winner == "a" else 1
    value = PersistentCacheValue(key_to_json(key), index, winner, results)
    return PersistentCacheKey(stable_key(key), "c"), value


def seeded(path: Path, size: int = 200) -> dict[PersistentCacheKey, PersistentCacheValue]:
    """A file large enough that a few appended entries stay under the fold threshold."""
    entries = dict(entry(i) for i in range(size))
    PersistentCache(path).save(entries, device={"id": "d"})
    return entries


def cache_file(tmp_path: Path, *journaled: Any, size: int = 200) -> Path:
    """tuner.json, `seeded` with `size` entries, and a journal of an entry for each key of
    `journaled`, one save each, as a program's `LocalTuner` appends them."""
    path = tmp_path / "tuner.json"
    seeded(path, size)
    for key in journaled:
        PersistentCache(path, journal=True).save(dict([entry(key)]), device={"id": "d"})
    return path


def keys(path: Path) -> set[str]:
    return {k.key for k in PersistentCache(path).load()}


def journal_lines(path: Path) -> list[Any]:
    return [json.loads(line) for line in journal.journal_path(path).read_text().splitlines()]


def journal_keys(path: Path) -> list[Any]:
    """The key of each line of `path`'s journal, in order: None for its header."""
    return [line.get("key") for line in journal_lines(path)]


def test_a_journaled_save_appends_one_line_and_leaves_the_file_as_it_was(
    tmp_path: Path,
) -> None:
    path = cache_file(tmp_path)
    before = path.read_bytes()
    cache = PersistentCache(path, journal=True)
    cache.load()

    cache.save(dict([entry("new")]), device={"id": "d"})

    assert path.read_bytes() == before
    header, line = journal_lines(path)
    assert header == {"journal_of": journal.digest(before), "journal_version": 1}
    assert line["key"] == "new" and line["checksum"] == "c"
    assert keys(path) == {stable_key(i) for i in range(200)} | {stable_key("new")}


def test_a_later_line_replaces_every_entry_of_its_key(tmp_path: Path) -> None:
    path = cache_file(tmp_path)
    cache = PersistentCache(path, journal=True)
    cache.save(dict([entry(5, winner="b")]), device={"id": "d"})
    cache.save(dict([entry(5, winner="a")]), device={"id": "d"})
    cache.save(dict([entry(6, winner="b")]), device={"id": "d"})

    loaded = PersistentCache(path).load()
    assert loaded[entry(5)[0]].fastest_name == "a"
    assert loaded[entry(6)[0]].fastest_name == "b"
    assert len(journal_lines(path)) == 4


def test_the_journal_is_folded_into_the_file_once_it_outgrows_half_of_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(journal, "MIN_COMPACT_BYTES", 0)
    path = cache_file(tmp_path, size=20)
    cache = PersistentCache(path, journal=True)

    folded_at = None
    for i in range(100, 130):
        cache.save(dict([entry(i)]), device={"id": "d"})
        if folded_at is None and not journal.journal_path(path).exists():
            folded_at = i
    assert folded_at is not None and folded_at > 100
    assert keys(path) == {stable_key(i) for i in (*range(20), *range(100, 130))}
    folded = json.loads(path.read_text())
    assert len(folded["entries"]) >= 20 + folded_at - 100


def test_a_whole_file_save_folds_the_journal_in_and_removes_it(tmp_path: Path) -> None:
    """`--autotune-update` saves whole files, so what it leaves to commit is self-contained."""
    path = cache_file(tmp_path, "j")

    PersistentCache(path).save(dict([entry("u")]))

    assert not journal.journal_path(path).exists()
    entries = {e["key"] for e in json.loads(path.read_text())["entries"]}
    assert {"j", "u"} <= entries


def test_a_save_changing_the_device_block_rewrites_the_file(tmp_path: Path) -> None:
    path = cache_file(tmp_path)
    PersistentCache(path, journal=True).save(dict([entry("j")]), device={"id": "other"})
    assert not journal.journal_path(path).exists()
    assert json.loads(path.read_text())["device"] == {"id": "other"}


def test_a_torn_last_line_is_ignored_with_a_warning_and_cut_off_by_the_next_save(
    tmp_path: Path,
) -> None:
    path = cache_file(tmp_path, "whole")
    where = journal.journal_path(path)
    with open(where, "a", encoding="ascii") as file:
        file.write('{"key":"torn","chec')

    cache = PersistentCache(path, journal=True)
    with pytest.warns(CacheFileWarning, match="last line is cut short") as caught:
        loaded = cache.load()
    assert str(where) in str(caught[0].message)
    assert stable_key("whole") in {k.key for k in loaded} and len(loaded) == 201

    cache.save(dict([entry("after")]), device={"id": "d"})
    assert journal_keys(path) == [None, "whole", "after"]
    assert {stable_key("whole"), stable_key("after")} <= keys(path)


def test_a_whole_last_line_without_its_newline_is_read_and_ended_by_the_next_save(
    tmp_path: Path,
) -> None:
    """An editor or a copy that strips the last newline leaves a whole entry: it was read as
    cut short, with a warning, tuned again and then cut off by the next save."""
    path = cache_file(tmp_path, "first", "last")
    where = journal.journal_path(path)
    where.write_bytes(where.read_bytes().rstrip(b"\n"))

    cache = PersistentCache(path, journal=True)
    loaded = cache.load()  # no warning: filterwarnings=error
    assert {stable_key("first"), stable_key("last")} <= {k.key for k in loaded}

    cache.save(dict([entry("after")]), device={"id": "d"})
    assert journal_keys(path) == [None, "first", "last", "after"]
    assert where.read_bytes().endswith(b"\n")
    assert {stable_key("first"), stable_key("last"), stable_key("after")} <= keys(path)


def test_blank_lines_in_a_journal_are_passed_over_and_the_next_save_appends_after_them(
    tmp_path: Path,
) -> None:
    """An editor's second newline at the end (or a blank line between entries) made the
    whole cache unreadable: every key tuned again and none saved, the file never replaced."""
    path = cache_file(tmp_path, "first", "last")
    where = journal.journal_path(path)
    header, first, last = where.read_bytes().splitlines()
    where.write_bytes(header + b"\n\n" + first + b"\n  \n" + last + b"\n\n")

    cache = PersistentCache(path, journal=True)
    loaded = cache.load()  # no warning: filterwarnings=error
    assert cache.unreadable() is None
    assert {stable_key("first"), stable_key("last")} <= {k.key for k in loaded}
    cache.save(dict([entry("after")]), device={"id": "d"})
    assert {stable_key("first"), stable_key("last"), stable_key("after")} <= keys(path)
    assert journal.journal_path(path).read_bytes().endswith(b"\n\n" + journal_line("after"))


def journal_line(key: Any) -> bytes:
    return journal.entry_line(entry_to_json(*entry(key))).encode()


def test_a_journal_of_a_header_alone_without_its_newline_takes_the_next_entry(
    tmp_path: Path,
) -> None:
    path = cache_file(tmp_path, "j")
    where = journal.journal_path(path)
    where.write_bytes(where.read_bytes().splitlines()[0])

    cache = PersistentCache(path, journal=True)
    assert len(cache.load()) == 200
    cache.save(dict([entry("k")]), device={"id": "d"})
    assert journal_keys(path) == [None, "k"]


def test_a_journal_that_cannot_be_read_is_named_when_loaded_and_when_a_save_refuses(
    tmp_path: Path,
) -> None:
    """A save's refusal named the cache file for what was its journal's fault."""
    path = cache_file(tmp_path)
    before = path.read_bytes()
    where = journal.journal_path(path)
    where.mkdir()

    cache = PersistentCache(path, journal=True)
    with pytest.warns(CacheFileWarning) as caught:
        assert cache.load() == {}
    assert str(caught[0].message).startswith(f"{where}: cannot be read: Is a directory")
    with pytest.raises(CacheFileError) as raised:
        cache.save(dict([entry("x")]))
    assert str(raised.value) == (
        f"{where}: cannot be read: Is a directory (when loaded); not overwriting tuner.json"
    )
    assert path.read_bytes() == before and where.is_dir()


def replaced_by_a_checkout(tmp_path: Path) -> Path:
    """tuner.json, whose journal (of key "local") extends a file a checkout replaced since:
    the file holds key "pulled" now, and not "local"."""
    pulled = tmp_path / "pulled.json"
    seeded(pulled)
    PersistentCache(pulled).save(dict([entry("pulled")]))
    path = cache_file(tmp_path, "local")
    path.write_bytes(pulled.read_bytes())
    return path


def test_a_journal_of_a_replaced_file_is_ignored_and_said_so_when_it_adds_entries(
    tmp_path: Path,
) -> None:
    """As after a checkout replaced the file: the journal extends a file that is gone."""
    path = replaced_by_a_checkout(tmp_path)

    with pytest.warns(CacheFileWarning, match="its 1 entry the file lacks is ignored"):
        loaded = PersistentCache(path).load()
    assert stable_key("pulled") in {k.key for k in loaded}


@pytest.mark.parametrize("save", ["appended", "whole"])
def test_a_journal_of_a_replaced_file_is_kept_aside_by_the_next_save(
    tmp_path: Path, save: str
) -> None:
    """Its entries were "ignored", and the next save wrote a new journal over it (or, a
    whole-file save, deleted it): gone, also once that version was checked out again."""
    path = replaced_by_a_checkout(tmp_path)
    stale = journal.journal_path(path).read_bytes()

    cache = PersistentCache(path, journal=True)
    with pytest.warns(CacheFileWarning, match=r"kept: the next save of the file moves the"):
        cache.load()
    cache.save(dict([entry("new")]), remove=["x"] if save == "whole" else ())
    for _ in range(2):  # a second save finds the journal its first began, and keeps it
        assert journal.journal_path(path).with_name("tuner.json.journal.stale-1").read_bytes() == (
            stale
        )
        assert {stable_key("pulled"), stable_key("new")} <= keys(path)
        cache.save(dict([entry("newer")]))
    assert not journal.journal_path(path).with_name("tuner.json.journal.stale-2").exists()


def test_a_file_and_journal_a_checkout_gave_crlf_line_endings_still_read_as_one(
    tmp_path: Path,
) -> None:
    """Git's core.autocrlf (Git for Windows' default) converts both on checkout: the
    journal still extends the file, and a later journaled save still appends to it."""
    path = cache_file(tmp_path, "local", size=20)
    for converted in (path, journal.journal_path(path)):
        text = converted.read_bytes().replace(b"\n", b"\r\n")
        converted.write_bytes(b"\xef\xbb\xbf" + text if converted == path else text)

    cache = PersistentCache(path, journal=True)
    assert stable_key("local") in {k.key for k in cache.load()}  # no warning: error
    cache.save(dict([entry("later")]), device={"id": "d"})
    assert {stable_key("local"), stable_key("later")} <= keys(path)
    assert journal_keys(path) == [None, "local", "later"]


def test_a_journal_left_by_a_writer_killed_before_removing_it_is_ignored_quietly(
    tmp_path: Path,
) -> None:
    """The file was rewritten with the journal folded in; the journal is stale, not lost."""
    path = cache_file(tmp_path, "j")
    kept = journal.journal_path(path).read_bytes()
    PersistentCache(path).save({})
    journal.journal_path(path).write_bytes(kept)

    cache = PersistentCache(path, journal=True)
    assert stable_key("j") in {k.key for k in cache.load()}  # no warning: filterwarnings=error
    cache.save(dict([entry("k")]), device={"id": "d"})
    assert journal_keys(path) == [None, "k"]


def test_a_damaged_whole_line_makes_the_cache_unreadable_and_it_is_not_overwritten(
    tmp_path: Path,
) -> None:
    path = cache_file(tmp_path, "j")
    where = journal.journal_path(path)
    where.write_bytes(where.read_bytes() + b'{"key": 1}\n')
    before = path.read_bytes(), where.read_bytes()

    cache = PersistentCache(path, journal=True)
    with pytest.warns(
        CacheFileWarning,
        match=r"tuner.json: in its journal tuner.json.journal, entry 2: missing field",
    ):
        assert cache.load() == {}
    with pytest.raises(CacheFileError, match="not overwriting it"):
        cache.save(dict([entry("x")]))
    assert (path.read_bytes(), where.read_bytes()) == before


def test_a_damaged_journal_line_is_to_be_repaired_or_the_journal_removed_not_the_file(
    tmp_path: Path,
) -> None:
    # The advice was a damaged file's, "repair it, or remove it to start anew", after the
    # file's path: removing the file dropped its 200 entries for one bad journal line.
    path = cache_file(tmp_path, "j")
    where = journal.journal_path(path)
    where.write_bytes(where.read_bytes() + b"garbage\n")

    with pytest.warns(CacheFileWarning) as caught:
        PersistentCache(path, journal=True).load()
    (message,) = [str(w.message) for w in caught]
    assert "in its journal tuner.json.journal" in message
    assert "remove the journal alone" in message and "remove it to start anew" not in message


def test_a_journal_a_newer_pytest_autotune_wrote_is_to_be_kept_not_removed(
    tmp_path: Path,
) -> None:
    # As for a cache file of a newer schema_version: its advice was "repair it, or remove
    # it to start anew", which drops what the newer version recorded.
    path = cache_file(tmp_path)
    where = journal.journal_path(path)
    digest = journal.digest(path.read_bytes())
    where.write_text(json.dumps({"journal_of": digest, "journal_version": 99}) + "\n{}\n")

    with pytest.warns(CacheFileWarning) as caught:
        assert PersistentCache(path, journal=True).load() == {}
    (message,) = [str(w.message) for w in caught]
    assert "newer pytest-autotune" in message and "keep it" in message
    assert "remove it" not in message


def test_a_long_lived_cache_sees_what_another_process_appended_since(tmp_path: Path) -> None:
    path = cache_file(tmp_path)
    mine = PersistentCache(path, journal=True)
    mine.load()
    mine.save(dict([entry("mine-1")]), device={"id": "d"})
    PersistentCache(path, journal=True).save(dict([entry("theirs")]), device={"id": "d"})
    mine.save(dict([entry("mine-2")]), device={"id": "d"})

    assert {stable_key(k) for k in ("mine-1", "theirs", "mine-2")} <= keys(path)
    assert journal_keys(path)[1:] == ["mine-1", "theirs", "mine-2"]


def test_a_shipped_file_read_with_its_journal_serves_the_journals_entries(tmp_path: Path) -> None:
    path = cache_file(tmp_path, "j", size=3)
    journal_data = journal.journal_path(path).read_bytes()

    contents = parse_cache(path.read_text(), "pkg/.autotune/d/tuner.json", journal_data)

    assert stable_key("j") in {k.key for k in contents.entries}


JOURNAL_WRITER = textwrap.dedent(
    """
    import sys
    from pathlib import Path
    from pytest_autotune.tune.benchmark import AutotuneOutcome
    from pytest_autotune.tune.cache import PersistentCache, PersistentCacheKey, PersistentCacheValue
    from pytest_autotune.tune.key import stable_key

    path, worker, saves = Path(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
    cache = PersistentCache(path, journal=True)
    cache.load()
    for i in range(saves):
        value = PersistentCacheValue([worker, i], 0, "a", (AutotuneOutcome("a", 0, (1e-3,)),))
        cache.save({PersistentCacheKey(stable_key((worker, i)), "c"): value}, device={"id": "d"})
    """
)


def test_eight_processes_appending_and_folding_at_once_lose_no_entry(tmp_path: Path) -> None:
    path = cache_file(tmp_path, size=5)
    workers = [python(JOURNAL_WRITER, str(path), str(w), "25") for w in range(8)]

    assert [w.wait(timeout=120) for w in workers] == [0] * 8

    found = {k.key for k in PersistentCache(path).load()}
    assert found >= {stable_key((w, i)) for w in range(8) for i in range(25)}
    assert len(found) == 5 + 8 * 25


KILLED_APPENDER = textwrap.dedent(
    """
    import os, sys, time
    from pathlib import Path
    from pytest_autotune.tune.benchmark import AutotuneOutcome
    from pytest_autotune.tune.cache import PersistentCache, PersistentCacheKey, PersistentCacheValue

    write = os.write
    def half_a_line_then_stuck(fd, data):
        write(fd, data[: len(data) // 2])
        print("stuck", flush=True)
        time.sleep(600)

    os.write = half_a_line_then_stuck
    value = PersistentCacheValue("late", 0, "a", (AutotuneOutcome("a", 0, (1e-3,)),))
    PersistentCache(Path(sys.argv[1]), journal=True).save(
        {PersistentCacheKey('"late"', "c"): value}, device={"id": "d"}
    )
    """
)


@pytest.mark.skipif(not hasattr(signal, "SIGKILL"), reason="needs SIGKILL")
def test_an_append_killed_midway_loses_only_its_own_entry(tmp_path: Path) -> None:
    path = cache_file(tmp_path, "before")

    writer = python(KILLED_APPENDER, str(path), stdout=subprocess.PIPE)
    assert writer.stdout is not None
    assert writer.stdout.readline() == "stuck\n"
    writer.send_signal(signal.SIGKILL)
    writer.wait(timeout=30)
    writer.stdout.close()

    with pytest.warns(CacheFileWarning, match="cut short"):
        assert len(PersistentCache(path).load()) == 201
    PersistentCache(path, journal=True).save(dict([entry("after")]), device={"id": "d"})
    assert keys(path) == {stable_key(i) for i in range(200)} | {
        stable_key("before"),
        stable_key("after"),
    }


def test_a_journal_is_appended_to_where_os_has_no_pread(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Windows has no `os.pread`: every journaled save after the first raised
    AttributeError there."""
    path = cache_file(tmp_path)
    monkeypatch.delattr(journal.os, "pread")
    for name in ("first", "second", "third"):
        PersistentCache(path, journal=True).save(dict([entry(name)]), device={"id": "d"})
    assert journal_keys(path) == [None, "first", "second", "third"]


def test_a_journal_is_written_in_binary_mode(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A descriptor Windows opens in text mode wrote each line's newline as CRLF, two bytes
    where the save counted one: the next save of a long-lived cache cut the file at the
    count, losing the end of its last entry."""
    path = cache_file(tmp_path)
    opened_as_text = text_mode_opens(monkeypatch)
    cache = PersistentCache(path, journal=True)
    cache.save(dict([entry("first")]), device={"id": "d"})
    cache.save(dict([entry("second")]), device={"id": "d"})
    assert str(journal.journal_path(path)) not in opened_as_text
    assert journal_keys(path) == [None, "first", "second"]


def test_an_append_the_disk_cut_short_is_taken_back_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A disk that fills partway through an append (ENOSPC after some bytes) left a torn
    last line, which every later reader warned of as a writer killed midway, though the
    save had said it failed and kept the entry in memory only."""
    path = cache_file(tmp_path, "before")
    before = journal.journal_path(path).read_bytes()
    write = os.write
    writes = iter([lambda fd, data: write(fd, data[: len(data) // 2]), None])

    def filling(fd: int, data: bytes) -> int:
        partial = next(writes, None)
        if partial is None:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return partial(fd, data)

    monkeypatch.setattr(journal.os, "write", filling)
    with pytest.raises(CacheFileError, match="No space left on device"):
        PersistentCache(path, journal=True).save(dict([entry("full")]), device={"id": "d"})
    monkeypatch.undo()

    assert journal.journal_path(path).read_bytes() == before
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert keys(path) == {stable_key(i) for i in range(200)} | {stable_key("before")}
