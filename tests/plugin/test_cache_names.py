"""Baselines never collide (issue 15): one file per test name, the name checked inside,
files of 0.1.0's names still read, and entries in a journal read by the gate."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_autotune.tune import journal
from pytest_autotune.tune.cache import cache_path, legacy_cache_file_parts
from pytest_autotune.tune.files import dumps
from tests.plugin.harness import run
from tests.plugin.test_tune_mode import SCALE_TESTS

ROOT = Path(".autotune")
DEVICE = "cpu-fake-1t"


def keys(path: Path) -> list[str]:
    return sorted(e["key"] for e in json.loads(path.read_text())["entries"])


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


def test_a_baseline_filed_under_its_0_1_name_is_read_and_an_update_writes_the_new_name(
    autotune_pytester: pytest.Pytester,
) -> None:
    project = autotune_pytester
    project.makepyfile(test_scale=SCALE_TESTS)
    assert run(project, "--autotune-update").ret == pytest.ExitCode.OK
    new = project.path / cache_path(ROOT, DEVICE, "test_scale.py::test_scale")
    folder, name = legacy_cache_file_parts(DEVICE, "test_scale.py::test_scale")
    old = project.path / ROOT / folder / name
    document = json.loads(new.read_text())
    del document["tuner"]  # as 0.1.0 wrote it
    old.write_text(dumps(document))
    new.unlink()
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
