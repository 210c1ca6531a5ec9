"""`pytest-autotune changed BEFORE AFTER`: whether a scheduled refresh deserves a pull
request, judged on what `--autotune-update` really writes."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from pytest_autotune.cli import EXIT_CHANGED, main
from tests.plugin.harness import run
from tests.plugin.test_tune_mode import SCALE_TESTS


@pytest.fixture
def refreshed(autotune_pytester: pytest.Pytester, tmp_path: Path) -> tuple[Path, Path]:
    """The committed folder (one update) and a copy to refresh."""
    autotune_pytester.makepyfile(test_scale=SCALE_TESTS)
    assert run(autotune_pytester, "--autotune-update").ret == pytest.ExitCode.OK
    before = tmp_path / "before"
    shutil.copytree(autotune_pytester.path / ".autotune", before)
    return before, autotune_pytester.path / ".autotune"


def changed(capsys: pytest.CaptureFixture[str], before: Path, after: Path) -> tuple[int, list[str]]:
    capsys.readouterr()  # what the in-process pytest runs printed
    code = main(["changed", str(before), str(after)])
    return code, capsys.readouterr().out.splitlines()


def test_an_unchanged_kernel_refreshed_is_no_pull_request_though_its_file_changed(
    autotune_pytester: pytest.Pytester,
    refreshed: tuple[Path, Path],
    capsys: pytest.CaptureFixture[str],
) -> None:
    before, after = refreshed
    assert run(autotune_pytester, "--autotune-update").ret == pytest.ExitCode.OK
    (name,) = (p.relative_to(after) for p in after.rglob("*.json"))
    assert (after / name).read_bytes() != (before / name).read_bytes()  # a session joined

    assert changed(capsys, before, after) == (
        0,
        ["no significant change: every baseline kept its history"],
    )


def test_a_significant_slowdown_and_a_new_candidate_list_each_ask_for_a_pull_request(
    autotune_pytester: pytest.Pytester,
    refreshed: tuple[Path, Path],
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    before, after = refreshed
    monkeypatch.setenv("SLOWDOWN_FAST", "2")
    assert run(autotune_pytester, "--autotune-update").ret == pytest.ExitCode.OK

    code, lines = changed(capsys, before, after)

    assert code == EXIT_CHANGED
    where = "cpu-fake-1t/test_scale.py__test_scale-bdc7d159eb.json"
    assert lines == [
        f"{where}: key 1: new baseline (fast -> medium): a significant change",
        f"{where}: key 2: new baseline (fast -> medium): a significant change",
    ]

    autotune_pytester.makepyfile(test_scale=SCALE_TESTS.replace('"medium": medium}', "}"))
    monkeypatch.delenv("SLOWDOWN_FAST")
    assert run(autotune_pytester, "--autotune-update").ret == pytest.ExitCode.OK
    code, lines = changed(capsys, before, after)
    assert code == EXIT_CHANGED
    # One line a key, saying what changed in its list: not "new entry" beside "entry
    # removed" for one key, which read as though the refresh had lost a baseline.
    assert lines == [
        f"{where}: key 1: new candidate list (removed 'medium')",
        f"{where}: key 2: new candidate list (removed 'medium')",
    ]


def test_a_new_key_and_a_key_no_longer_made_are_each_said(
    autotune_pytester: pytest.Pytester,
    refreshed: tuple[Path, Path],
    capsys: pytest.CaptureFixture[str],
) -> None:
    before, after = refreshed
    autotune_pytester.makepyfile(
        test_scale=SCALE_TESTS.replace('parametrize("n", [1, 2])', 'parametrize("n", [1, 3])')
    )
    assert run(autotune_pytester, "--autotune-prune").ret == pytest.ExitCode.OK
    code, lines = changed(capsys, before, after)
    assert code == EXIT_CHANGED
    where = "cpu-fake-1t/test_scale.py__test_scale-bdc7d159eb.json"
    assert lines == [f"{where}: key 2: entry removed", f"{where}: key 3: new entry (a new key)"]


def test_a_folder_that_is_not_there_is_one_line_and_status_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["changed", str(tmp_path / "missing"), str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err == (
        f"pytest-autotune: error: {tmp_path / 'missing'}: not a folder"
        " (give the cache folders, e.g. .autotune)\n"
    )
