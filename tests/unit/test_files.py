"""The file primitives: strict reading, atomic writing with unique names, locks beside."""

from __future__ import annotations

import os
import stat
import threading
import types
from pathlib import Path

import pytest

from pytest_autotune.tune import files
from pytest_autotune.tune.files import (
    JsonFileError,
    decode_strict,
    loads_strict,
    lock_beside,
    lock_holder,
    remove_stale_temporaries,
    replace_text,
    shared_lock,
    write_atomically,
)
from tests.fakes import released_lock


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        ("[1e400]", "1e400, too large for a float"),
        ("[-1e400]", "too large for a float"),
        ("[" + "1" + "0" * 400 + "]", "401 digits"),
        ("[" + "9" * 5000 + "]", "5000 digits"),
        ("[" * 100_000 + "]" * 100_000, "nested deeper than 64 levels"),
        ("[" * 70 + "]" * 70, "nested deeper than 64 levels"),
        ("[NaN]", "NaN is not a JSON number"),
        ("[-Infinity]", "-Infinity is not a JSON number"),
        ("{", "is not valid JSON"),
        (
            '{\n<<<<<<< HEAD\n  "a": 1\n=======\n  "a": 2\n>>>>>>> refresh\n}\n',
            "holds unresolved merge conflict markers (line 2: <<<<<<< HEAD)",
        ),
        ('{"a": {"key": "64", "key": "32"}}', 'holds the field "key" twice in one object'),
    ],
)
def test_strict_reading_names_why_a_document_is_refused(text: str, reason: str) -> None:
    with pytest.raises(JsonFileError, match=None) as error:
        loads_strict(text)
    assert reason in str(error.value)


def test_a_merge_conflict_is_resolved_conflict_by_conflict_not_by_taking_one_file() -> None:
    # Two branches that refreshed different keys of one test's file conflict only where
    # both changed it (the device block's peaks, which every update measures). The advice
    # was "git checkout --ours or --theirs", which keeps one branch's whole file and
    # silently drops the entries only the other branch refreshed.
    text = '{\n<<<<<<< HEAD\n  "a": 1\n=======\n  "a": 2\n>>>>>>> refresh\n}\n'
    with pytest.raises(JsonFileError) as error:
        loads_strict(text)
    assert str(error.value) == (
        "holds unresolved merge conflict markers (line 2: <<<<<<< HEAD): keep one side of"
        " each conflict (one side throughout an entry); taking one branch's whole file"
        " (git checkout --ours or --theirs) drops the entries only the other branch changed,"
        " and two entries the branches added at one place come out interleaved, where no"
        " side keeps both: merge it again entry by entry, with `pytest-autotune merge` set"
        ' up as git\'s merge driver (README, "Merging cache files"), by `git checkout -m --'
        " <file>` while git lists the file as unmerged"
    )


def test_a_field_twice_from_a_conflict_resolved_with_both_sides_is_refused_not_dropped() -> None:
    # An editor's "accept both" on two entries git interleaved (each branch added a key at
    # one place) gives one entry two "key"s: read as Python reads it, the later won, and
    # the next update rewrote the file with the other key's baseline filed under it.
    text = '{"entries": [{"key": "64",\n"key": "32", "fastest_index": 0}]}'
    with pytest.raises(JsonFileError) as error:
        loads_strict(text)
    # The fact alone: a cache file's reader adds the merge's advice (test_cache.py), which
    # a records file's reader would have given wrongly.
    assert str(error.value) == 'holds the field "key" twice in one object ("64", then "32")'


def test_an_empty_file_is_said_to_be_empty() -> None:
    with pytest.raises(JsonFileError, match=r"^is empty$"):
        decode_strict(b" \n")


def test_a_byte_order_mark_an_editor_saved_is_skipped() -> None:
    assert decode_strict(b'\xef\xbb\xbf{"a": 1}\r\n') == {"a": 1}
    assert loads_strict('\ufeff{"a": 1}') == {"a": 1}


def test_strict_reading_keeps_what_we_write() -> None:
    assert loads_strict('{"a": [1, 2.5, "x", null, true], "b": 12345678901234567890}') == {
        "a": [1, 2.5, "x", None, True],
        "b": 12345678901234567890,
    }


def test_an_atomic_write_keeps_the_mode_of_the_file_it_replaces(tmp_path: Path) -> None:
    path = tmp_path / "f.json"
    path.write_text("old")
    path.chmod(0o640)
    write_atomically(path, "new")
    assert path.read_text() == "new"
    assert path.stat().st_mode & 0o777 == 0o640
    assert os.listdir(tmp_path) == ["f.json"]


def test_a_new_file_gets_the_umasks_mode_without_the_umask_being_changed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Reading the umask means setting it, process-wide: a file another thread made in
    that moment (a program's own, beside a LocalTuner's save) was writable by everyone."""
    umask = os.umask(0o027)
    try:
        monkeypatch.setattr(os, "umask", lambda mask: pytest.fail("the umask was changed"))
        write_atomically(tmp_path / "new.json", "new")
    finally:
        monkeypatch.undo()
        os.umask(umask)
    assert (tmp_path / "new.json").stat().st_mode & 0o777 == 0o640
    assert os.listdir(tmp_path) == ["new.json"]


def _refused(times: int) -> tuple[list[str], object]:
    """An `os.replace` that Windows-style refuses `times` times, then renames."""
    calls: list[str] = []
    real = os.replace

    def replace(source: str, target: object) -> None:
        calls.append(source)
        if len(calls) <= times:
            raise PermissionError(13, "The process cannot access the file")
        real(source, target)  # type: ignore[arg-type]

    return calls, replace


def test_on_windows_a_save_waits_while_a_reader_holds_the_file_open(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Windows refuses to rename over a file another process has open (a worker of -n 2
    reading the cache the other saves, a virus scanner): the save tries again for about a
    second instead of failing, and leaves no temporary file."""
    path = tmp_path / "f.json"
    path.write_text("old")
    calls, replace = _refused(3)
    monkeypatch.setattr(files, "REPLACE_WAITS", (0, 0, 0, 0, 0))
    monkeypatch.setattr(files.sys, "platform", "win32")
    monkeypatch.setattr(files.os, "replace", replace)
    write_atomically(path, "new")
    assert len(calls) == 4
    assert path.read_text() == "new"
    assert os.listdir(tmp_path) == ["f.json"]


def test_on_windows_a_rename_refused_throughout_raises_and_keeps_the_old_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "f.json"
    path.write_text("old")
    calls, replace = _refused(100)
    monkeypatch.setattr(files, "REPLACE_WAITS", (0, 0))
    monkeypatch.setattr(files.sys, "platform", "win32")
    monkeypatch.setattr(files.os, "replace", replace)
    with pytest.raises(PermissionError):
        write_atomically(path, "new")
    assert len(calls) == 3
    assert path.read_text() == "old"
    assert os.listdir(tmp_path) == ["f.json"]


def test_elsewhere_a_refused_rename_is_raised_at_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On POSIX a rename over an open file succeeds: a PermissionError is a real one (a
    read-only folder), not worth a second of retries."""
    calls, replace = _refused(1)
    monkeypatch.setattr(files.sys, "platform", "linux")
    monkeypatch.setattr(files.os, "replace", replace)
    with pytest.raises(PermissionError):
        write_atomically(tmp_path / "f.json", "new")
    assert len(calls) == 1


def test_temporary_files_have_unique_names_and_stale_ones_are_removed_under_the_lock(
    tmp_path: Path,
) -> None:
    path = tmp_path / "f.json"
    stale = tmp_path / ".f.json.abc123.tmp"
    stale.write_text("half")
    unrelated = tmp_path / ".g.json.abc123.tmp"
    unrelated.write_text("another file's")
    with lock_beside(path, timeout=1):
        remove_stale_temporaries(path)
        write_atomically(path, "x")
    assert sorted(os.listdir(tmp_path)) == [
        *released_lock(".f.json.lock"),
        ".g.json.abc123.tmp",
        "f.json",
    ]


@pytest.mark.skipif(not os.path.exists("/proc/locks"), reason="Linux lists a lock's holder")
def test_a_held_lock_names_its_holder_and_a_free_one_none(tmp_path: Path) -> None:
    # A program that gives up waiting for a cache file's lock says which process holds it
    # (a process of another command is named with it: `test_cache`).
    lock = lock_beside(tmp_path / "f.json", timeout=0)
    with lock:
        assert lock_holder(lock.lock_file) == f"process {os.getpid()} (this one)"
    assert lock_holder(lock.lock_file) is None
    assert lock_holder(str(tmp_path / "never.lock")) is None


def test_a_lock_lives_beside_the_file_whatever_the_temp_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "cache" / "f.json"
    monkeypatch.setenv("TMPDIR", str(tmp_path / "one"))
    first = lock_beside(path, timeout=1).lock_file
    monkeypatch.setenv("TMPDIR", str(tmp_path / "two"))
    assert lock_beside(path, timeout=1).lock_file == first == str(path.with_name(".f.json.lock"))


def test_a_shared_lock_name_cannot_leave_the_temp_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    lock = shared_lock("pytest-autotune-../../etc/x")
    assert Path(lock.lock_file).parent == tmp_path
    assert Path(lock.lock_file).name == "pytest-autotune-______etc_x.lock"
    assert Path(lock.lock_file).stat().st_mode & 0o777 == 0o666


def test_a_replaced_file_behind_a_link_keeps_the_link_and_a_pipe_stays_a_pipe(
    tmp_path: Path,
) -> None:
    # A report path linked into a served folder, or a pipe (as /dev/null is no regular
    # file), must not become a regular file where the link or the device was.
    served = tmp_path / "served" / "report.html"
    served.parent.mkdir()
    served.write_text("old")
    link = tmp_path / "report.html"
    link.symlink_to(served)
    replace_text(link, "new\n")
    assert link.is_symlink() and served.read_text() == "new\n"

    pipe = tmp_path / "pipe"
    os.mkfifo(pipe)
    got: list[str] = []
    reader = threading.Thread(target=lambda: got.append(pipe.read_text()))
    reader.start()
    replace_text(pipe, "through\n")
    reader.join()
    assert got == ["through\n"] and stat.S_ISFIFO(pipe.stat().st_mode)


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="Linux's /proc/self/fd")
def test_a_path_linked_to_an_open_pipe_as_dev_stdout_is_written_through(
    tmp_path: Path,
) -> None:
    # --autotune-benchmark-json=/dev/stdout in a pipeline: the link, resolved, names no
    # file ("pipe:[1234]"), and writing beside it failed with "No such file or directory".
    read, write = os.pipe()
    try:
        stdout = tmp_path / "stdout"
        stdout.symlink_to(f"/proc/self/fd/{write}")
        replace_text(stdout, "through\n")
        assert os.read(read, 100) == b"through\n"
    finally:
        os.close(read)
        os.close(write)


def test_a_shared_lock_is_made_where_os_has_no_fchmod(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Windows before Python 3.13 has no os.fchmod: every tuning group's device lock
    # raised AttributeError there, failing every test that tunes.
    import tempfile

    from pytest_autotune.tune import files

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    # Our module's `os` alone loses it: filelock's Unix lock (3.21, the oldest pinned) calls
    # os.fchmod itself, where Windows runs filelock's Windows lock instead.
    no_fchmod = types.SimpleNamespace(**{k: v for k, v in vars(os).items() if k != "fchmod"})
    monkeypatch.setattr(files, "os", no_fchmod)
    lock = shared_lock("pytest-autotune-cpu-x")
    with lock:
        assert Path(lock.lock_file).parent == tmp_path


def test_a_name_holding_a_file_names_undecoded_bytes_is_written_as_those_bytes(
    tmp_path: Path,
) -> None:
    # `test_café.py` as pytest names it under `LC_ALL=C PYTHONUTF8=0`: the HTML report of
    # its gate raised UnicodeEncodeError out of the session.
    path = tmp_path / "report.html"
    replace_text(path, "<td>test_caf\udcc3\udca9.py::test_sum</td>\n")
    assert path.read_text(encoding="utf-8") == "<td>test_café.py::test_sum</td>\n"
