"""Which cache entries an update calls stale: only what the session can tell."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from pytest_autotune.stale import Collected, _prune, defined_names, find_stale
from pytest_autotune.tune.cache import PersistentCache, cache_path
from pytest_autotune.tune.journal import journal_path
from tests.unit.test_cache import entry

DEVICE = "cpu-fake-1t"


def write(root: Path, tuner: str, *keys: object) -> Path:
    path = cache_path(root / ".autotune", DEVICE, tuner)
    PersistentCache(path, tuner).save(dict(entry(key) for key in keys))
    return path


class Suite:
    def test_sum(self) -> None: ...

    class Inner:
        def test_x(self) -> None: ...


def test_a_test_of_a_collected_module_is_judged_by_the_names_the_module_defines(
    tmp_path: Path,
) -> None:
    (tmp_path / "test_a.py").write_text("")
    kept = write(tmp_path, "test_a.py::Suite::test_sum", 1)
    gone = write(tmp_path, "test_a.py::test_old", 1)
    nested = write(tmp_path, "test_a.py::Suite::Inner::test_x", 1)
    # A test of a nested class renamed: its file was never called stale.
    renamed = write(tmp_path, "test_a.py::Suite::Inner::test_old", 1)
    library = write(tmp_path, "mylib.ops", 1)
    collected = Collected({"test_a.py": defined_names(sys.modules[__name__])})
    found = find_stale(tmp_path / ".autotune", [DEVICE], collected, {}, tmp_path)
    assert sorted((s.path, s.keys) for s in found) == sorted([(gone, None), (renamed, None)])
    assert {kept, nested, library}.isdisjoint(s.path for s in found)


def test_the_keys_of_a_test_are_judged_only_when_every_group_of_it_was_tuned(
    tmp_path: Path,
) -> None:
    (tmp_path / "test_a.py").write_text("")
    write(tmp_path, "test_a.py::test_sum", 1, 2, 3)
    groups = {"test_a.py::test_sum": frozenset({"test_a.py::test_sum[1]", "g2"})}
    collected = Collected({}, groups)
    some = {"test_a.py::test_sum": {"test_a.py::test_sum[1]": "1"}}
    assert find_stale(tmp_path / ".autotune", [DEVICE], collected, some, tmp_path) == []
    every = {"test_a.py::test_sum": {"test_a.py::test_sum[1]": "1", "g2": "2"}}
    (stale,) = find_stale(tmp_path / ".autotune", [DEVICE], collected, every, tmp_path)
    assert stale.keys == ("3",)


def test_what_two_workers_collected_is_joined() -> None:
    one = Collected({"a.py": frozenset({"t"})}, {"a.py::t": frozenset({"g1"})})
    two = Collected({"b.py": frozenset({"u"})}, {"a.py::t": frozenset({"g2"})})
    joined = one.joined(two.to_json())
    assert joined.defined == {"a.py": {"t"}, "b.py": {"u"}}
    assert joined.groups == {"a.py::t": {"g1", "g2"}}


def test_no_module_is_called_gone_where_node_ids_are_not_from_the_root_dir(
    tmp_path: Path,
) -> None:
    # Tests collected from outside the root dir are named from their own folder: their
    # modules are not below the root dir, gone or not.
    write(tmp_path, "test_a.py::test_sum", 1)
    outside = Collected({"test_a.py": frozenset({"test_sum"})}, rooted=False)
    assert find_stale(tmp_path / ".autotune", [DEVICE], outside, {}, tmp_path) == []
    joined = Collected().joined(outside.to_json())
    assert not joined.rooted
    assert find_stale(tmp_path / ".autotune", [DEVICE], joined, {}, tmp_path) == []


def test_a_module_of_a_folder_this_root_lacks_is_not_called_gone(tmp_path: Path) -> None:
    # One cache directory for several projects (a monorepo's `../.autotune`): another
    # root's files name folders that are no paths here, and were pruned as gone.
    (tmp_path / "tests").mkdir()
    deleted = write(tmp_path, "tests/test_old.py::test_sum", 1)
    write(tmp_path, "other_project/tests/test_b.py::test_sum", 1)
    found = find_stale(tmp_path / ".autotune", [DEVICE], Collected(), {}, tmp_path)
    assert [(s.path, s.reason) for s in found] == [(deleted, "tests/test_old.py is gone")]


def test_a_cache_file_whose_journal_is_a_folder_is_left_to_the_run_that_names_it(
    tmp_path: Path,
) -> None:
    (tmp_path / "test_a.py").write_text("")
    blocked = write(tmp_path, "test_a.py::test_old", 1)
    journal_path(blocked).mkdir()
    gone = write(tmp_path, "test_a.py::test_older", 1)
    collected = Collected({"test_a.py": frozenset()})
    found = find_stale(tmp_path / ".autotune", [DEVICE], collected, {}, tmp_path)
    assert [s.path for s in found] == [gone]


def test_a_stale_file_written_since_it_was_judged_keeps_what_was_written(tmp_path: Path) -> None:
    # The test is gone, and its whole file stale; another process (a second checkout's
    # update, a program's tuner) wrote a key into it after the judgement: the prune deleted
    # the file, and that write with it.
    (tmp_path / "tests").mkdir()
    path = write(tmp_path, "tests/test_old.py::test_sum", 1, 2)
    (stale,) = find_stale(tmp_path / ".autotune", [DEVICE], Collected(), {}, tmp_path)
    assert stale.keys is None
    PersistentCache(path, "tests/test_old.py::test_sum").save(dict([entry(3)]))
    _prune(stale)
    assert [key.key for key in PersistentCache(path).load()] == ["3"]
    # Unchanged since, it goes whole, its journal with it.
    (again,) = find_stale(tmp_path / ".autotune", [DEVICE], Collected(), {}, tmp_path)
    _prune(again)
    assert not path.exists()
    assert not journal_path(path).exists()


def test_a_stale_file_whose_keys_were_written_again_since_goes_whole(tmp_path: Path) -> None:
    # Another process wrote the file's same keys again after the judgement: removing them
    # left a cache file of no entry; deleted since, the prune made one.
    (tmp_path / "tests").mkdir()
    path = write(tmp_path, "tests/test_old.py::test_sum", 1, 2)
    (stale,) = find_stale(tmp_path / ".autotune", [DEVICE], Collected(), {}, tmp_path)
    PersistentCache(path, "tests/test_old.py::test_sum").save(dict([entry(1)]))
    _prune(stale)
    assert not path.exists()
    write(tmp_path, "tests/test_old.py::test_sum", 1, 2)
    (stale,) = find_stale(tmp_path / ".autotune", [DEVICE], Collected(), {}, tmp_path)
    path.unlink()
    _prune(stale)
    assert not path.exists()


def test_only_keys_that_differ_in_a_floats_last_digits_get_the_rounding_note() -> None:
    from pytest_autotune.moved_baselines import _rounding

    assert "differ only in a float's last digits" in _rounding(
        ["[8, 0.30000000000000004]"], ["[8, 0.3]"]
    )
    # JSON's true is no number: a key (True, ...) beside (1.0000000001, ...) is no rounding.
    assert _rounding(["[true, 2]"], ["[1.0000000001, 2]"]) == ""
    assert _rounding(["[8, 0.4]"], ["[8, 0.3]"]) == ""
    assert _rounding(['"n1024"'], ['"n2048"']) == ""


def test_a_test_file_named_beyond_ascii_is_not_gone_under_the_c_locale(tmp_path: Path) -> None:
    """Under `LC_ALL=C PYTHONUTF8=0` the file system's encoding is ASCII: pytest names
    `test_café.py` `test_caf\\udcc3\\udca9.py`, each test's cache was another file than a
    UTF-8 run's, and the committed one's module, looked up by its text, was called gone and
    pruned. Run in a process of that locale, whose encoding is fixed at its start."""
    script = f"""
import os
from pathlib import Path
from pytest_autotune.collection import tuner_of_test
from pytest_autotune.stale import Collected, find_stale
from pytest_autotune.tune.cache import PersistentCache, cache_path
from tests.unit.test_cache import entry

root = Path({str(tmp_path)!r})
(root / os.fsdecode("test_caf\\u00e9.py".encode())).write_text("")
nodeid = os.fsdecode("test_caf\\u00e9.py".encode()) + "::test_sum"
assert tuner_of_test(nodeid) == "test_caf\\u00e9.py::test_sum", ascii(tuner_of_test(nodeid))
path = cache_path(root / ".autotune", {DEVICE!r}, tuner_of_test(nodeid))
PersistentCache(path, tuner_of_test(nodeid)).save(dict([entry(1)]))
assert path == cache_path(root / ".autotune", {DEVICE!r}, "test_caf\\u00e9.py::test_sum")
assert find_stale(root / ".autotune", [{DEVICE!r}], Collected(), {{}}, root) == []
"""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("LC_", "PYTHONIO"))}
    env |= {"LC_ALL": "C", "LANG": "C", "PYTHONUTF8": "0", "PYTHONCOERCECLOCALE": "0"}
    done = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        env=env,
        cwd=Path(__file__).parents[2],  # where `tests` imports from
        check=False,
    )
    assert done.returncode == 0, done.stderr


def test_a_node_id_holding_a_lone_surrogate_no_bytes_make_is_its_own_tuner() -> None:
    # A Windows file name may hold one: encoded with surrogateescape, it raised
    # UnicodeEncodeError out of the collection.
    from pytest_autotune.collection import tuner_of_test

    assert tuner_of_test("a\ud800.py::t") == "a\ud800.py::t"
