"""A test moved or renamed, which an update that tunes other tests (`-k`, a node id,
`--lf`) leaves out: its old file, whose module or name is gone, is kept and named with the
move that carries its baselines over, never pruned without a word while the test is there."""

from __future__ import annotations

import json

import pytest

from pytest_autotune.tune.cache_names import cache_path
from tests.plugin.harness import run

OPS_TESTS = """
import pytest
from conftest import spin

def slow(n):
    spin(300e-6)
    return n * 2

def fast(n):
    spin(100e-6)
    return n * 2

def loop(n):
    spin(200e-6)
    return n + 1

def builtin(n):
    spin(50e-6)
    return n + 1

@pytest.mark.autotune(candidates={"slow": slow, "fast": fast})
@pytest.mark.parametrize("n", [1, 2])
def test_sum(candidate, n):
    return candidate(n)

@pytest.mark.autotune(candidates={"loop": loop, "builtin": builtin})
@pytest.mark.parametrize("n", [1, 2])
def test_max(candidate, n):
    return candidate(n)
"""

DEVICE = "cpu-fake-1t"


def cache(pytester: pytest.Pytester, tuner: str) -> str:
    return str(cache_path(pytester.path / ".autotune", DEVICE, tuner).relative_to(pytester.path))


@pytest.fixture
def ops(autotune_pytester: pytest.Pytester) -> pytest.Pytester:
    autotune_pytester.makepyfile(test_ops=OPS_TESTS)
    assert run(autotune_pytester, "--autotune-update").ret == pytest.ExitCode.OK
    return autotune_pytester


def carry_over(pytester: pytest.Pytester, old: str, tuner: str) -> None:
    """What the kept line says to do: move the file and set its "tuner"."""
    data = json.loads((pytester.path / old).read_text())
    data["tuner"] = tuner
    (pytester.path / old).unlink()
    (pytester.path / cache(pytester, tuner)).write_text(json.dumps(data))


@pytest.mark.parametrize(
    "selection",
    [("-k", "test_max"), ("test_kernels.py::test_max",), ("-n", "2", "-k", "test_max")],
    ids=["k", "node-id", "xdist"],
)
def test_a_prune_of_one_test_keeps_the_file_of_a_test_it_left_out_that_moved_with_it(
    ops: pytest.Pytester, selection: tuple[str, ...]
) -> None:
    # `git mv test_ops.py test_kernels.py`, then a prune of one test: the file of the
    # other, deselected, was deleted as "test_ops.py is gone", with no word of the move.
    if "-n" in selection:
        pytest.importorskip("xdist")
    (ops.path / "test_ops.py").rename(ops.path / "test_kernels.py")
    old = cache(ops, "test_ops.py::test_sum")
    result = run(ops, "--autotune-update", "--autotune-prune", *selection)
    assert result.ret == pytest.ExitCode.OK
    assert (ops.path / old).exists()
    assert not (ops.path / cache(ops, "test_ops.py::test_max")).exists()  # tuned: pruned, noted
    result.stdout.fnmatch_lines(
        [
            f"kept {old}: test_ops.py is gone, but it holds the candidate list of"
            " test_kernels.py::test_sum, which this session did not tune and which has no"
            " baseline under its name: if test_kernels.py::test_sum is test_ops.py::test_sum"
            f" moved or renamed, move the file to {cache(ops, 'test_kernels.py::test_sum')}"
            ' and set its "tuner" to "test_kernels.py::test_sum" to keep its baselines (a'
            " session that tunes it judges the file again)",
            "note: test_kernels.py::test_max: this update started its baseline anew, and *,"
            " pruned now,*",
        ]
    )
    carry_over(ops, old, "test_kernels.py::test_sum")
    run(ops, "--autotune", "-k", "test_sum").stdout.fnmatch_lines(["verdicts: 2 pass"])


CLASS_TESTS = OPS_TESTS.replace(
    "def test_sum(candidate, n):\n    return",
    "class TestA:\n  def test_sum(self, candidate, n):\n    return",
)


@pytest.mark.parametrize(
    ("before", "after", "old", "new"),
    [
        (
            OPS_TESTS,
            OPS_TESTS.replace("def test_sum(", "def test_total("),
            "test_ops.py::test_sum",
            "test_ops.py::test_total",
        ),
        (
            CLASS_TESTS,
            CLASS_TESTS.replace("class TestA:", "class TestB:"),
            "test_ops.py::TestA::test_sum",
            "test_ops.py::TestB::test_sum",
        ),
    ],
    ids=["function", "class"],
)
def test_an_update_of_other_tests_keeps_the_file_of_a_renamed_test_and_names_it(
    autotune_pytester: pytest.Pytester, before: str, after: str, old: str, new: str
) -> None:
    pytester = autotune_pytester
    pytester.makepyfile(test_ops=before)
    assert run(pytester, "--autotune-update").ret == pytest.ExitCode.OK
    pytester.makepyfile(test_ops=after)
    for args in (("--autotune-update",), ("--autotune-update", "--autotune-prune")):
        result = run(pytester, *args, "-k", "test_max")
        assert result.ret == pytest.ExitCode.OK
        assert (pytester.path / cache(pytester, old)).exists()
        # Neither "delete the file, or run --autotune-prune, which does" nor pruned.
        result.stdout.fnmatch_lines(
            [
                f"kept {cache(pytester, old)}: test_ops.py defines no test"
                f" {old.partition('::')[2]} now (renamed or deleted), but it holds the"
                f" candidate list of {new}, *: if {new} is {old} moved or renamed, move the"
                f' file to {cache(pytester, new)} and set its "tuner" to "{new}" *'
            ]
        )


def test_a_prune_that_tunes_the_moved_test_still_deletes_its_old_file_and_says_how_to_restore(
    ops: pytest.Pytester,
) -> None:
    # Kept only while the test is left out: a session that tunes it judges the file again.
    (ops.path / "test_ops.py").rename(ops.path / "test_kernels.py")
    old = cache(ops, "test_ops.py::test_sum")
    run(ops, "--autotune-update", "--autotune-prune", "-k", "test_max")
    result = run(ops, "--autotune-update", "--autotune-prune")
    assert result.ret == pytest.ExitCode.OK
    assert not (ops.path / old).exists()
    result.stdout.fnmatch_lines(
        [
            "note: test_kernels.py::test_sum: this update started its baseline anew, and"
            f" {old}, pruned now,*"
        ]
    )
    assert "kept " not in result.stdout.str()
