"""Baselines never collide (issue 15): one file per test name, the name checked inside,
files of 0.1.0's names still read, and entries in a journal read by the gate."""

from __future__ import annotations

import json
import os
import textwrap
from pathlib import Path

import pytest

from pytest_autotune.tune import journal
from pytest_autotune.tune.cache import cache_path, legacy_cache_file_parts
from pytest_autotune.tune.files import dumps
from tests.plugin.harness import FAKE_CONFTEST, run
from tests.plugin.test_tune_mode import SCALE_TESTS

ROOT = Path(".autotune")
DEVICE = "cpu-fake-1t"

RENAMED_IDS_TESTS = SCALE_TESTS.replace("[1, 2])", '[1, 2], ids=["one", "two"])')
"""SCALE_TESTS whose keys "1", "2" are "one", "two" now (as an upgrade's new ids make them)."""


def keys(path: Path) -> list[str]:
    return sorted(e["key"] for e in json.loads(path.read_text())["entries"])


def prune_lines(result: pytest.RunResult) -> list[str]:
    """The lines of `result` that call a cache file or entry stale or gone, or pruned."""
    return [line for line in result.outlines if any(w in line for w in ("stale", "gone", "pruned"))]


def prune_keeping(project: pytest.Pytester, path: Path, *args: str) -> None:
    """Runs `--autotune-prune` (of `args` too), which must pass, prune nothing and call
    nothing stale, and leave the keys "1" and "2" of the file at `path`."""
    pruned = run(project, "--autotune-prune", *args)
    assert pruned.ret == pytest.ExitCode.OK, pruned.outlines
    assert keys(path) == ["1", "2"]
    assert not prune_lines(pruned)


def test_two_tests_whose_names_shared_a_file_keep_two_baselines(
    autotune_pytester: pytest.Pytester,
) -> None:
    """`test_x/test_y.py::test_scale` and `test_x_test_y.py::test_scale` were both filed as
    `test_x_test_y.py__test_scale.json`, so one update merged their keys into one file."""
    project = autotune_pytester
    project.mkdir("test_x")
    (project.path / "test_x" / "test_y.py").write_text(SCALE_TESTS)
    project.makepyfile(test_x_test_y=SCALE_TESTS.replace("[1, 2]", "[3]"))

    assert run(project, "--autotune-update").ret == pytest.ExitCode.OK

    nested = project.path / cache_path(ROOT, DEVICE, "test_x/test_y.py::test_scale")
    flat = project.path / cache_path(ROOT, DEVICE, "test_x_test_y.py::test_scale")
    assert nested != flat
    assert keys(nested) == ["1", "2"] and keys(flat) == ["3"]
    assert json.loads(nested.read_text())["tuner"] == "test_x/test_y.py::test_scale"
    assert json.loads(flat.read_text())["tuner"] == "test_x_test_y.py::test_scale"
    gated = run(project, "--autotune", "--autotune-strict")
    assert gated.ret == pytest.ExitCode.OK, gated.outlines


def legacy_baseline(project: pytest.Pytester) -> tuple[Path, Path]:
    """The baselines of `test_scale.py::test_scale` (SCALE_TESTS) filed under the name 0.1.0
    gave them, as 0.1.0 wrote them (no "tuner" field); the file's new name, which has none."""
    project.makepyfile(test_scale=SCALE_TESTS)
    assert run(project, "--autotune-update").ret == pytest.ExitCode.OK
    new = project.path / cache_path(ROOT, DEVICE, "test_scale.py::test_scale")
    folder, name = legacy_cache_file_parts(DEVICE, "test_scale.py::test_scale")
    old = project.path / ROOT / folder / name
    document = json.loads(new.read_text())
    del document["tuner"]
    old.write_text(dumps(document))
    new.unlink()
    return old, new


def test_a_baseline_filed_under_its_0_1_name_is_read_and_an_update_writes_the_new_name(
    autotune_pytester: pytest.Pytester,
) -> None:
    project = autotune_pytester
    old, new = legacy_baseline(project)
    legacy_bytes = old.read_bytes()

    gated = run(project, "--autotune", "--autotune-strict")
    assert gated.ret == pytest.ExitCode.OK, gated.outlines
    assert not new.exists()

    updated = run(project, "--autotune-update")
    assert updated.ret == pytest.ExitCode.OK
    updated.stdout.fnmatch_lines([f"*updated .autotune/{DEVICE}/{new.name} (2 entries)*"])
    assert (
        keys(new) == ["1", "2"]
        and json.loads(new.read_text())["tuner"] == "test_scale.py::test_scale"
    )
    assert old.read_bytes() == legacy_bytes


def test_a_gate_failure_against_a_baseline_of_the_0_1_name_names_the_file_it_read(
    autotune_pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The verdict named the file's new name, which did not exist: the user looked for it."""
    project = autotune_pytester
    old, new = legacy_baseline(project)

    monkeypatch.setenv("SLOWDOWN_FAST", "3")
    gated = run(project, "--autotune")
    assert gated.ret == pytest.ExitCode.TESTS_FAILED
    read = f".autotune/{DEVICE}/{old.name}"
    gated.stdout.fnmatch_lines([f"*regression of*(fast on {DEVICE}, {read})*"])
    assert new.name not in gated.stdout.str()


def test_a_file_of_the_0_1_name_that_an_update_carried_over_is_named_for_deletion(
    autotune_pytester: pytest.Pytester,
) -> None:
    """An update carries the old file's entries into the new name and leaves the old file,
    which nothing reads after: it lay in the repository with no word that it could go."""
    project = autotune_pytester
    old, new = legacy_baseline(project)
    shown_old, shown_new = f".autotune/{DEVICE}/{old.name}", f".autotune/{DEVICE}/{new.name}"

    updated = run(project, "--autotune-update")
    assert updated.ret == pytest.ExitCode.OK
    updated.stdout.fnmatch_lines(
        [f"note: {shown_old}: pytest-autotune 0.1.0's name for {shown_new}*delete*"]
    )
    assert old.exists() and keys(new) == ["1", "2"]

    gated = run(project, "--autotune")
    assert gated.ret == pytest.ExitCode.OK
    gated.stdout.fnmatch_lines(
        [f"note: {shown_old}: pytest-autotune 0.1.0's name for {shown_new}*delete*"]
    )
    old.unlink()
    assert "0.1.0's name" not in run(project, "--autotune").stdout.str()


def test_a_file_of_the_0_1_name_holding_keys_the_new_one_lacks_is_not_called_disposable(
    autotune_pytester: pytest.Pytester,
) -> None:
    """A branch still on 0.1.0 may update the old file after the upgrade wrote the new one:
    the merge leaves entries only the old file holds, which its deletion would lose."""
    project = autotune_pytester
    old, new = legacy_baseline(project)
    assert run(project, "--autotune-update").ret == pytest.ExitCode.OK
    document = json.loads(old.read_text())
    document["entries"].append({**document["entries"][0], "key": "3"})
    old.write_text(dumps(document))

    gated = run(project, "--autotune")
    assert gated.ret == pytest.ExitCode.OK
    gated.stdout.fnmatch_lines(
        [
            f"note: .autotune/{DEVICE}/{old.name}: pytest-autotune 0.1.0's name for"
            f" .autotune/{DEVICE}/{new.name}, *it holds 1 entry that file lacks (key"
            ' "3"): where a branch still on 0.1.0 recorded it, copy it into that file\'s'
            ' "entries" to keep it, then delete it; *'
        ]
    )
    gated.stdout.no_fnmatch_line("*nothing reads it now; delete it*")


def test_a_file_of_the_0_1_name_whose_keys_a_prune_dropped_is_not_to_be_copied_back(
    autotune_pytester: pytest.Pytester,
) -> None:
    """The upgrade renamed the ids (keys "1", "2" now "one", "two"); the update carried the
    old keys over and --autotune-prune dropped them, as the stale note advised: every later
    run said the old file held entries the new one lacked, and to copy them back."""
    project = autotune_pytester
    old, new = legacy_baseline(project)
    project.makepyfile(test_scale=RENAMED_IDS_TESTS)
    assert run(project, "--autotune-update").ret == pytest.ExitCode.OK
    assert run(project, "--autotune-prune").ret == pytest.ExitCode.OK
    assert keys(new) == ["one", "two"] and old.exists()

    gated = run(project, "--autotune")
    assert gated.ret == pytest.ExitCode.OK
    gated.stdout.fnmatch_lines(
        [
            f"note: .autotune/{DEVICE}/{old.name}: *it holds 2 entries that file lacks (key"
            ' "1", "2"): *; where --autotune-prune (or a key renamed there) dropped them from'
            " that file, just delete it"
        ]
    )


def test_a_prune_of_renamed_ids_right_after_the_upgrade_points_at_the_0_1_file(
    autotune_pytester: pytest.Pytester,
) -> None:
    """The prune's first save carried the old file's entries into the new name and dropped
    them there at once: the note said "restore the file from git", a file no commit held,
    where the entries lay in the file of 0.1.0's name."""
    project = autotune_pytester
    old, new = legacy_baseline(project)
    project.makepyfile(test_scale=RENAMED_IDS_TESTS)

    pruned = run(project, "--autotune-prune")
    assert pruned.ret == pytest.ExitCode.OK
    assert keys(new) == ["one", "two"] and keys(old) == ["1", "2"]
    pruned.stdout.fnmatch_lines(
        [
            "note: test_scale.py::test_scale: no baseline for its keys*pruned now: *, copy"
            f" those entries from .autotune/{DEVICE}/{old.name} (0.1.0's name for the file,"
            ' which still holds them) into it, and set each one\'s "key" to its new key*'
        ]
    )
    assert "restore the file from git" not in pruned.stdout.str()


def test_a_gate_without_baselines_for_renamed_ids_points_at_the_0_1_files_old_keys(
    autotune_pytester: pytest.Pytester,
) -> None:
    """A file of 0.1.0's name stores no tuner, so it was never judged: a test whose ids
    changed with the upgrade (a tuple's `shape0` now reads `(1000,)`) read "no baseline"
    at every key under `--autotune`, with no word of the old file's entries, which a file
    of the new name gets."""
    project = autotune_pytester
    old, _ = legacy_baseline(project)
    project.makepyfile(test_scale=RENAMED_IDS_TESTS)

    gated = run(project, "--autotune")
    assert gated.ret == pytest.ExitCode.OK
    gated.stdout.fnmatch_lines(
        [
            'note: test_scale.py::test_scale: no baseline for its keys "one", "two", but'
            f" .autotune/{DEVICE}/{old.name} holds baselines of its candidate list at keys no"
            ' group of it makes now ("1", "2")*'
        ]
    )


def test_a_baseline_entry_in_a_journal_is_the_gates_baseline(
    autotune_pytester: pytest.Pytester,
) -> None:
    """A program's `LocalTuner` appends to the journal; the plugin reads it like the file."""
    project = autotune_pytester
    project.makepyfile(test_scale=SCALE_TESTS)
    assert run(project, "--autotune-update").ret == pytest.ExitCode.OK
    path = project.path / cache_path(ROOT, DEVICE, "test_scale.py::test_scale")
    document = json.loads(path.read_text())
    moved = document["entries"].pop()
    path.write_text(dumps(document))
    assert run(project, "--autotune", "--autotune-strict").ret == pytest.ExitCode.TESTS_FAILED

    base = journal.digest(path.read_bytes())
    journal.journal_path(path).write_text(journal.header(base) + journal.entry_line(moved))

    gated = run(project, "--autotune", "--autotune-strict")
    assert gated.ret == pytest.ExitCode.OK, gated.outlines


def test_an_update_names_the_stale_entries_and_prune_drops_them_but_not_a_deselected_tests(
    autotune_pytester: pytest.Pytester,
) -> None:
    # An update never removed an entry and never said which ones nothing makes now: a test
    # renamed or deleted, a parameter dropped. Those of a test `-k` left out are kept.
    project = autotune_pytester
    marked = SCALE_TESTS[SCALE_TESTS.index("@pytest.mark.autotune") :]
    two_tests = SCALE_TESTS + "\n" + marked.replace("def test_scale", "def test_other")
    project.makepyfile(test_ops=two_tests, test_gone=SCALE_TESTS)
    assert run(project, "--autotune-update").ret == pytest.ExitCode.OK
    scale = cache_path(ROOT, DEVICE, "test_ops.py::test_scale")
    other = cache_path(ROOT, DEVICE, "test_ops.py::test_other")
    gone = cache_path(ROOT, DEVICE, "test_gone.py::test_scale")
    for path in (scale, other, gone):
        assert keys(project.path / path) == ["1", "2"]

    (project.path / "test_gone.py").unlink()
    # `test_renamed` is a new test, of another candidate list: one of the same list, which
    # `-k` leaves out, may be a test gone moved or renamed, whose file is kept
    # (test_moved_tests.py).
    renamed = marked.replace("def test_scale", "def test_renamed")
    project.makepyfile(
        test_ops=SCALE_TESTS.replace("[1, 2]", "[1]")
        + "\n"
        + renamed.replace('"medium": medium}', '"medium": medium, "fast2": fast}')
    )
    named = run(project, "--autotune-update", "-k", "test_scale")
    assert named.ret == pytest.ExitCode.OK
    named.stdout.fnmatch_lines(
        [
            f"stale: {gone}: test_gone.py is gone; delete the file*",
            f"stale: {other}: test_ops.py defines no test test_other now (renamed or deleted)*",
            f'stale: {scale}: 1 entry (key "2"): no group of test_ops.py::test_scale makes'
            " this key now; --autotune-prune*",
        ]
    )
    assert (project.path / gone).exists() and (project.path / other).exists()
    assert keys(project.path / scale) == ["1", "2"]

    pruned = run(project, "--autotune-prune", "-k", "test_scale")
    assert pruned.ret == pytest.ExitCode.OK
    pruned.stdout.fnmatch_lines([f'pruned {scale}: 1 entry (key "2")*; the file holds 1 entry now'])
    assert not (project.path / gone).exists() and not (project.path / other).exists()
    assert keys(project.path / scale) == ["1"]
    # `test_renamed`, which `-k` left out, was never tuned: nothing of it was judged.
    assert not (project.path / cache_path(ROOT, DEVICE, "test_ops.py::test_renamed")).exists()


def test_prune_keeps_the_file_of_a_test_named_from_outside_the_root_dir(
    autotune_pytester: pytest.Pytester,
) -> None:
    # A test outside the root dir (`--rootdir`, `--pyargs` of an installed package) has a
    # node id from the folder it was collected from, not from the root dir: the file an
    # update had just written for it was called "gone", and pruned.
    project = autotune_pytester
    project.mkdir("root")
    project.mkdir("tests")
    (project.path / "tests" / "test_ops.py").write_text(SCALE_TESTS)
    path = project.path / "root" / cache_path(ROOT, DEVICE, "test_ops.py::test_scale")

    prune_keeping(project, path, "--rootdir=root", "tests")


def test_a_test_outside_the_root_dir_is_warned_of_where_its_baselines_go(
    autotune_pytester: pytest.Pytester,
) -> None:
    # `pytest pkg_a/tests pkg_b/tests` in a monorepo of no configuration at its top takes
    # pkg_a's (its root dir pkg_a, as --rootdir=pkg_a gives here): pkg_b's test, named
    # `test_pkg_b.py` from the folder given, was filed in pkg_a's cache folder, where a run
    # of pkg_b never looks, without a word.
    # So was a test of the `autotune` fixture whose set has no tuner, named after its test.
    project = autotune_pytester
    for name in ("pkg_a", "pkg_b"):
        project.mkdir(name)
        tests = SCALE_TESTS + SCALE_TESTS.replace("def test_scale(", "def test_scale_too(")
        project.mkdir(f"{name}/tests").joinpath(f"test_{name}.py").write_text(tests)
    (project.path / "pkg_b" / "tests" / "test_set.py").write_text(
        textwrap.dedent(
            """
            from conftest import spin
            from pytest_autotune import TunableSet

            def one(n):
                spin(100e-6)
                return n

            def test_set(autotune):
                assert autotune(TunableSet.of(lambda n: n, {"one": one}), 3) == 3
            """
        )
    )
    update = run(project, "--rootdir=pkg_a", "--autotune-update", "pkg_a/tests", "pkg_b/tests")
    assert update.ret == pytest.ExitCode.OK, update.outlines
    update.stdout.fnmatch_lines(
        [
            "warning: pkg_b?tests?test_pkg_b.py is outside the root dir *pkg_a, so pytest"
            " names its tests from the folder given on the command line (test_pkg_b.py::...),"
            " and their baselines are filed under those names in pkg_a?.autotune, where a run"
            " given another folder, or run from their own project, does not look:*",
        ]
    )
    update.stdout.fnmatch_lines(["warning: pkg_b?tests?test_set.py is outside the root dir*"])
    update.stdout.no_fnmatch_line("warning: tests?test_pkg_a.py*")
    # One line a file, for its two tests too.
    assert len([line for line in update.outlines if line.startswith("warning: pkg_b")]) == 2


def test_a_test_outside_the_root_dir_of_an_ini_file_given_with_c_is_told_to_give_a_rootdir(
    pytester: pytest.Pytester,
) -> None:
    # `pytest -c ci/pytest.ini` makes ci/ the root dir, wherever pytest runs: the warning's
    # "run them from their project (`cd` there)" sent a user who already ran there nowhere.
    pytester.makeini("[pytest]\nfilterwarnings = error\n")
    pytester.mkdir("ci").joinpath("pytest.ini").write_text("[pytest]\nfilterwarnings = error\n")
    pytester.mkdir("tests").joinpath("conftest.py").write_text(FAKE_CONFTEST)
    (pytester.path / "tests" / "test_ops.py").write_text(SCALE_TESTS)
    assert run(pytester, "--autotune-update").ret == pytest.ExitCode.OK

    gated = run(pytester, "--autotune", "-c", "ci/pytest.ini", "tests")
    assert gated.ret == pytest.ExitCode.OK, gated.outlines
    gated.stdout.fnmatch_lines(
        [
            "warning: tests?test_ops.py is outside the root dir *ci, so pytest names its tests"
            " from the folder given on the command line (test_ops.py::...), * does not look:"
            f" -c makes the folder of the file it names the root dir: give --rootdir"
            f"={pytester.path} with -c ci/pytest.ini"
        ]
    )
    rooted = run(pytester, "--autotune", "-c", "ci/pytest.ini", f"--rootdir={pytester.path}")
    rooted.stdout.fnmatch_lines(["*test_scale[[]1[]]*pass*"])
    rooted.stdout.no_fnmatch_line("warning:*")


def fixture_test(names: str) -> str:
    """test_lib.py: a test of the `autotune` fixture whose set, of no tuner, has candidates
    `names` (a dict's items in code)."""
    return textwrap.dedent(
        f"""
        from conftest import spin
        from pytest_autotune import TunableSet

        def one(n):
            spin(100e-6)
            return n

        def two(n):
            spin(200e-6)
            return n

        def test_lib(autotune):
            assert autotune(TunableSet.of(lambda n: n, {{{names}}}), 3) == 3
        """
    )


@pytest.mark.parametrize(
    ("test", "in_a", "in_b", "failed"),
    [
        # The second marker replaced the first, so the first's candidates failed with a
        # KeyError of the plugin's, in a plain run too, and an update filed both tests' keys
        # in one file.
        pytest.param(
            "test_ops.py::test_scale",
            SCALE_TESTS,
            SCALE_TESTS.replace('"medium"', '"other"'),
            12,
            id="marked",
        ),
        # A set of no tuner is filed after its test's node id: the second test's set, named
        # as the first's, was served the first's winner, never tuned nor judged, and the
        # update filed one test's entries for both.
        pytest.param(
            "test_lib.py::test_lib",
            fixture_test('"one": one, "two": two'),
            fixture_test('"two": two, "three": one'),
            2,
            id="fixture",
        ),
    ],
)
def test_two_tests_of_one_node_id_outside_the_root_dir_fail_by_name(
    autotune_pytester: pytest.Pytester, test: str, in_a: str, in_b: str, failed: int
) -> None:
    """pytest names a test outside the root dir from the folder given on the command line:
    `--rootdir=root a b` names both `a/test_ops.py` and `b/test_ops.py` `test_ops.py`."""
    project = autotune_pytester
    project.mkdir("root")
    file = test.split("::")[0]
    for folder, text in (("a", in_a), ("b", in_b)):
        project.mkdir(folder)
        (project.path / folder / "__init__.py").write_text("")
        (project.path / folder / file).write_text(text)
    message = (
        f"*{test}: the node id of both a?{file} and b?{file}: pytest names a test outside the"
        " root dir *root from the folder given on the command line, and the two would share"
        " one cache file: give a --rootdir above both"
    )

    plain = run(project, "--rootdir=root", "a", "b")
    assert plain.ret == pytest.ExitCode.TESTS_FAILED
    plain.assert_outcomes(failed=failed)
    plain.stdout.fnmatch_lines([message])
    plain.stdout.no_fnmatch_line("*KeyError*")

    update = run(project, "--rootdir=root", "a", "b", "--autotune-update")
    assert update.ret == pytest.ExitCode.TESTS_FAILED
    update.assert_outcomes(failed=failed)
    update.stdout.fnmatch_lines([message])
    assert not (project.path / "root" / ROOT).exists()


def test_tests_in_a_folder_whose_name_holds_a_bracket_keep_their_own_names(
    autotune_pytester: pytest.Pytester,
) -> None:
    # A test's node id was cut at its first `[`, taken for its parameters' start: every
    # test under `tests[v2]/` was named `tests`, so two files' tests were one function to
    # the plugin (the first's candidates failed with a KeyError) and one cache file.
    project = autotune_pytester
    folder = project.mkdir("tests[v2]")
    (folder / "test_a.py").write_text(SCALE_TESTS)
    (folder / "test_b.py").write_text(SCALE_TESTS.replace('"medium"', '"other"'))

    update = run(project, "--autotune-update")
    assert update.ret == pytest.ExitCode.OK, update.outlines
    for name in ("test_a", "test_b"):
        path = project.path / cache_path(ROOT, DEVICE, f"tests[v2]/{name}.py::test_scale")
        assert keys(path) == ["1", "2"]
    assert not (project.path / cache_path(ROOT, DEVICE, "tests")).exists()


def test_no_baseline_names_the_file_it_looked_for_where_there_is_none(
    autotune_pytester: pytest.Pytester,
) -> None:
    # Run under another root dir than the update (`--rootdir`, pytest run from a folder of
    # no config file), a test has another name and another cache folder: every group read
    # "no baseline for this key", which did not say where the baseline was looked for.
    project = autotune_pytester
    project.mkdir("tests")
    (project.path / "tests" / "test_ops.py").write_text(SCALE_TESTS)
    assert run(project, "--autotune-update").ret == pytest.ExitCode.OK

    moved = run(project, "--autotune", "--rootdir=tests", "tests")
    assert moved.ret == pytest.ExitCode.OK
    looked = Path("tests") / cache_path(ROOT, DEVICE, "test_ops.py::test_scale")
    moved.stdout.fnmatch_lines(
        [
            f"    no baseline for this key on {DEVICE} (no file {looked});"
            " --autotune-update records one"
        ]
    )

    # Where the file is there and lacks the key, the line is as it was.
    project.path.joinpath("tests", "test_ops.py").write_text(SCALE_TESTS.replace("[1, 2]", "[3]"))
    new_key = run(project, "--autotune")
    new_key.stdout.fnmatch_lines(
        [f"    no baseline for this key on {DEVICE}; --autotune-update records one"]
    )


def project_of_no_configuration_file(pytester: pytest.Pytester) -> None:
    """tests/test_ops.py (SCALE_TESTS) and the fake client's conftest beside it, in a project
    of no pytest configuration file."""
    pytester.mkdir("tests")
    (pytester.path / "tests" / "conftest.py").write_text(FAKE_CONFTEST)
    (pytester.path / "tests" / "test_ops.py").write_text(SCALE_TESTS)


def no_configuration_file(pytester: pytest.Pytester) -> str:
    """What a run in tests/ of `project_of_no_configuration_file` says of its root dir."""
    return (
        "configuration file, so its root dir, which tests are named and filed from, is the"
        f" folder it was run in, {pytester.path / 'tests'}, while {pytester.path / ROOT},"
        " above it, holds caches"
    )


def test_no_baseline_says_where_pytest_found_no_configuration_file(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A project of no pytest configuration file: pytest's root dir is the folder it is run
    # in, so an update from the project's top and a gate run in `tests/` named the test and
    # filed its baselines apart, and the gate read "no baseline", not saying why.
    project_of_no_configuration_file(pytester)
    first = run(pytester, "--autotune")
    # A first run, whose cache is nowhere yet: nothing to point at.
    first.stdout.fnmatch_lines(["*no baseline for this key*"])
    first.stdout.no_fnmatch_line("*configuration file*")
    assert run(pytester, "--autotune-update").ret == pytest.ExitCode.OK
    topped = run(pytester, "--autotune")
    topped.stdout.fnmatch_lines(["*test_scale[[]1[]]*pass*"])
    topped.stdout.no_fnmatch_line("*configuration file*")

    monkeypatch.chdir(pytester.path / "tests")
    inside = run(pytester, "--autotune")
    assert inside.ret == pytest.ExitCode.OK
    looked = cache_path(ROOT, DEVICE, "test_ops.py::test_scale")
    inside.stdout.fnmatch_lines(
        [
            f"    no baseline for this key on {DEVICE} (no file {looked}; pytest found no"
            f" {no_configuration_file(pytester)}: a pytest.ini (or a pyproject.toml's"
            " [[]tool.pytest.ini_options[]]) at the project's top makes that the root dir of"
            " every run); --autotune-update records one"
        ]
    )


def test_an_update_run_below_a_project_of_no_configuration_file_says_it_files_a_second_copy(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A project of no pytest configuration file, updated from its top, then updated again
    # from `tests/`: pytest's root dir is then `tests/`, and the update wrote a second set of
    # baselines to tests/.autotune under other names, saying only "new baseline: none before
    # for this key", while the gate's "no baseline" there says why.
    project_of_no_configuration_file(pytester)
    topped = run(pytester, "--autotune-update")
    assert topped.ret == pytest.ExitCode.OK
    topped.stdout.no_fnmatch_line("*configuration file*")

    monkeypatch.chdir(pytester.path / "tests")
    inside = run(pytester, "--autotune-update")
    assert inside.ret == pytest.ExitCode.OK
    written = cache_path(ROOT, DEVICE, "test_ops.py::test_scale")
    inside.stdout.fnmatch_lines(
        [
            f"note: {written}: written anew by this update, while pytest found no"
            f" {no_configuration_file(pytester)}: *"
        ]
    )


def test_no_baseline_names_the_file_a_nested_projects_update_wrote(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A monorepo's package of its own pytest.ini, its baselines recorded by an update run
    # in its folder, gated by `pytest` at the repository's top, whose configuration
    # (`testpaths` of every package) names and files the test from there: every group read
    # "no baseline", passing, not saying that the package's committed cache held them all.
    package = pytester.mkdir("pkg_a")
    (package / "pytest.ini").write_text("[pytest]\nfilterwarnings = error\n")
    (package / "conftest.py").write_text(FAKE_CONFTEST)
    (package / "tests").mkdir()
    (package / "tests" / "test_ops.py").write_text(SCALE_TESTS)
    monkeypatch.chdir(package)
    assert run(pytester, "--autotune-update").ret == pytest.ExitCode.OK

    monkeypatch.chdir(pytester.path)
    pytester.makeini("[pytest]\nfilterwarnings = error\n")
    top = run(pytester, "--autotune")
    assert top.ret == pytest.ExitCode.OK
    looked = cache_path(ROOT, DEVICE, "pkg_a/tests/test_ops.py::test_scale")
    held = Path("pkg_a") / cache_path(ROOT, DEVICE, "tests/test_ops.py::test_scale")
    top.stdout.fnmatch_lines(
        [
            f"    no baseline for this key on {DEVICE} (no file {looked}; {held} holds this"
            " test's baselines as tests/test_ops.py::test_scale, the name a run whose root dir"
            " is pkg_a gives it: run its tests from there, as the update that recorded them"
            " was); --autotune-update records one"
        ]
    )
    # An update from the top, which would file a second copy, says so too.
    again = run(pytester, "--autotune-update")
    assert again.ret == pytest.ExitCode.OK
    again.stdout.fnmatch_lines(
        [
            f"note: {looked}: written anew by this update, while {held} holds this test's"
            " baselines as tests/test_ops.py::test_scale, *"
        ]
    )


def test_no_baseline_points_at_no_file_of_its_own_cache_folder_as_a_nested_projects(
    autotune_pytester: pytest.Pytester,
) -> None:
    # Under `autotune_cache_dir = tests/.autotune`, the file of a root-level test
    # `test_ops.py::test_scale` is where a run rooted in tests/ would file
    # `tests/test_ops.py::test_scale`: it is another test's, not this one's baselines.
    project = autotune_pytester
    project.makeini("[pytest]\nfilterwarnings = error\nautotune_cache_dir = tests/.autotune\n")
    (project.path / "test_ops.py").write_text(SCALE_TESTS)
    assert run(project, "--autotune-update", "test_ops.py").ret == pytest.ExitCode.OK
    (project.path / "tests" / "test_ops.py").write_text(SCALE_TESTS)  # the update made tests/
    result = run(project, "--autotune", "tests")
    assert result.ret == pytest.ExitCode.OK, result.outlines
    result.stdout.fnmatch_lines(["*no baseline for this key*"])
    result.stdout.no_fnmatch_line("*holds this test's baselines*")


def test_prune_keeps_the_entries_of_groups_a_plugin_deselected_before_this_one_saw_them(
    autotune_pytester: pytest.Pytester,
) -> None:
    # A conftest's (or another plugin's) `tryfirst` hook that deselects items runs before
    # this plugin's: the groups it took were unseen, so their keys read as made by no group
    # of the test, and were pruned.
    project = autotune_pytester
    project.makepyfile(test_ops=SCALE_TESTS)
    assert run(project, "--autotune-update").ret == pytest.ExitCode.OK
    path = project.path / cache_path(ROOT, DEVICE, "test_ops.py::test_scale")
    project.makeconftest(
        FAKE_CONFTEST
        + textwrap.dedent(
            """
            import pytest as _pytest

            @_pytest.hookimpl(tryfirst=True)
            def pytest_collection_modifyitems(config, items):
                taken = [item for item in items if item.nodeid.endswith("-2]")]
                config.hook.pytest_deselected(items=taken)
                items[:] = [item for item in items if item not in taken]
            """
        )
    )
    prune_keeping(project, path)


def test_prune_keeps_a_renamed_tests_file_moved_to_its_new_name_before_its_tuner_is_set(
    autotune_pytester: pytest.Pytester,
) -> None:
    # Halfway through keeping a renamed test's baselines (the file moved to the new name,
    # its "tuner" not yet set), the update said both "set its tuner to keep its entries"
    # and "stale: delete the file, or run --autotune-prune", and the prune deleted it.
    project = autotune_pytester
    project.makepyfile(test_ops=SCALE_TESTS)
    assert run(project, "--autotune-update").ret == pytest.ExitCode.OK
    old = project.path / cache_path(ROOT, DEVICE, "test_ops.py::test_scale")
    new = project.path / cache_path(ROOT, DEVICE, "test_ops.py::test_renamed")
    project.makepyfile(test_ops=SCALE_TESTS.replace("def test_scale", "def test_renamed"))
    old.rename(new)
    moved = new.read_bytes()

    pruned = run(project, "--autotune-prune")
    assert pruned.ret == pytest.ExitCode.TESTS_FAILED  # the file it cannot read, named
    pruned.stdout.fnmatch_lines(['*set its "tuner" to "test_ops.py::test_renamed"*'])
    assert not prune_lines(pruned)
    assert new.read_bytes() == moved


def _project(pytester: pytest.Pytester, name: str, test: str, cache: str = "../shared") -> Path:
    """A project of its own root dir (an ini file) whose cache directory is `cache`."""
    root = pytester.mkdir(name) if not (pytester.path / name).exists() else pytester.path / name
    (root / "tests").mkdir()
    (root / "conftest.py").write_text(textwrap.dedent(FAKE_CONFTEST))
    (root / "pytest.ini").write_text(
        f"[pytest]\nfilterwarnings = error\nautotune_cache_dir = {cache}\n"
    )
    (root / "tests" / f"{test}.py").write_text(SCALE_TESTS.replace("test_scale", test))
    return root


def test_a_shared_cache_directory_keeps_another_projects_files(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Two projects of one cache directory, both with tests/: the second's update called the
    # first's file "tests/test_y.py is gone" (tests/ is a folder here too), and its prune
    # deleted it.
    px = _project(pytester, "px", "test_x")
    py = _project(pytester, "py", "test_y")
    shared = pytester.path / "shared"
    monkeypatch.chdir(py)
    assert run(pytester, "--autotune-update").ret == pytest.ExitCode.OK
    theirs = shared / cache_path(Path("."), DEVICE, "tests/test_y.py::test_y")
    assert json.loads(theirs.read_text())["project_root"] == "../py"
    monkeypatch.chdir(px)
    prune_keeping(pytester, theirs)
    # Its own file, of a test deleted since, is still pruned there.
    own = shared / cache_path(Path("."), DEVICE, "tests/test_x.py::test_x")
    assert json.loads(own.read_text())["project_root"] == "../px"
    (px / "tests" / "test_x.py").unlink()
    (px / "tests" / "test_z.py").write_text(SCALE_TESTS.replace("test_scale", "test_z"))
    assert run(pytester, "--autotune-prune").ret == pytest.ExitCode.OK
    assert not own.exists() and theirs.exists()


def test_a_project_whose_root_holds_a_shared_directory_keeps_the_others_files(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A monorepo: mono/ keeps its own tests' baselines in mono/.autotune, which mono/pkg/
    # shares (`../.autotune`). mono's prune called pkg's file gone (no mono/tests/test_x.py)
    # and deleted it.
    mono = pytester.path
    (mono / "pytest.ini").write_text("[pytest]\nfilterwarnings = error\n")
    (mono / "conftest.py").write_text(textwrap.dedent(FAKE_CONFTEST))
    (mono / "test_mono.py").write_text(SCALE_TESTS.replace("test_scale", "test_mono"))
    pkg = _project(pytester, "pkg", "test_x", cache="../.autotune")
    monkeypatch.chdir(pkg)
    assert run(pytester, "--autotune-update").ret == pytest.ExitCode.OK
    theirs = mono / cache_path(ROOT, DEVICE, "tests/test_x.py::test_x")
    assert json.loads(theirs.read_text())["project_root"] == "../pkg"
    monkeypatch.chdir(mono)
    prune_keeping(pytester, theirs, "test_mono.py")
    # mono's own files, in its own directory, are as they were: no field.
    mine = mono / cache_path(ROOT, DEVICE, "test_mono.py::test_mono")
    assert "project_root" not in json.loads(mine.read_text())


def test_one_project_in_two_checkouts_gates_against_one_outside_cache_directory(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    # `--autotune-cache-dir=/tmp/baseline` from two checkouts (main/, feature/): the files
    # the first wrote are the second's baselines, read and updated as its own.
    for name in ("main", "feature"):
        _project(pytester, name, "test_x", cache=".autotune")
    baseline = pytester.path / "baseline"
    monkeypatch.chdir(pytester.path / "main")
    assert run(pytester, "--autotune-update", f"--autotune-cache-dir={baseline}").ret == 0
    monkeypatch.chdir(pytester.path / "feature")
    gated = run(pytester, "--autotune", f"--autotune-cache-dir={baseline}")
    assert gated.ret == pytest.ExitCode.OK, gated.outlines
    gated.stdout.fnmatch_lines(["*test_x[[]1[]]*pass*", "*test_x[[]2[]]*pass*"])
    updated = run(pytester, "--autotune-update", f"--autotune-cache-dir={baseline}")
    assert updated.ret == pytest.ExitCode.OK, updated.outlines
    file = baseline / cache_path(Path("."), DEVICE, "tests/test_x.py::test_x")
    assert json.loads(file.read_text())["project_root"] == "../feature"


def test_two_projects_whose_tests_share_a_node_id_are_warned_that_they_share_a_file(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    # pkg_a and pkg_b of one monorepo, both with tests/test_x.py::test_x, share one file of
    # ../shared: pkg_b's gate compared its test with pkg_a's baselines in silence, and its
    # update called pkg_a's key "3" stale (--autotune-prune would have dropped it).
    pkg_a = _project(pytester, "pkg_a", "test_x")
    pkg_b = _project(pytester, "pkg_b", "test_x")
    test_x = pkg_a / "tests" / "test_x.py"
    test_x.write_text(test_x.read_text().replace("[1, 2]", "[1, 3]"))
    monkeypatch.chdir(pkg_a)
    assert run(pytester, "--autotune-update").ret == pytest.ExitCode.OK
    monkeypatch.chdir(pkg_b)
    warning = "warning: ../shared/*test_x*.json was last updated by the project at ../pkg_a *"
    gated = run(pytester, "--autotune")
    gated.stdout.fnmatch_lines([warning])
    updated = run(pytester, "--autotune-update")
    assert updated.ret == pytest.ExitCode.OK, updated.outlines
    updated.stdout.fnmatch_lines([warning])
    assert not prune_lines(updated)
    file = pytester.path / "shared" / cache_path(Path("."), DEVICE, "tests/test_x.py::test_x")
    assert keys(file) == ["1", "2", "3"]
    # Its own file again, as last updated by itself, it is silent.
    again = run(pytester, "--autotune")
    assert "last updated by the project" not in again.stdout.str()


def test_a_device_folder_that_is_a_file_is_named_from_where_pytest_ran(
    autotune_pytester: pytest.Pytester,
) -> None:
    # The reason of a "no baseline" named the file in the folder's place by its absolute
    # path, beside the cache file's path shown from the project.
    project = autotune_pytester
    project.makepyfile(test_scale=SCALE_TESTS)
    (project.path / ROOT).mkdir()
    (project.path / ROOT / DEVICE).write_text("")
    gated = run(project, "--autotune")
    gated.stdout.fnmatch_lines([f"*could not be read (cannot be read: {ROOT / DEVICE} is a file*"])
    assert not [line for line in gated.outlines if f"{project.path}{os.sep}" in line]
