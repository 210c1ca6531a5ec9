"""The README's code, copied as a new user copies it, runs: its first test, the runtime
library's module and the `autotune` fixture's test that tunes that module's set."""

from __future__ import annotations

import re
import textwrap
from pathlib import Path

import pytest

from tests.plugin.harness import run

README = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")


def snippet(heading: str) -> str:
    """The first Python block under the README's section `heading`."""
    section = README[README.index(f"{heading}\n") :]
    found = re.search(r"```python\n(.*?)```", section, re.DOTALL)
    assert found is not None, heading
    return found.group(1)


def test_the_readmes_first_test_library_and_fixture_test_run_as_written(
    pytester: pytest.Pytester,
) -> None:
    # The fixture's snippet names the library's module `mylib` and the first test's `x`;
    # a user puts the three together as the README's words say. The snippet carries its
    # own imports: without them a new user's copy failed with NameError: mylib.
    first = snippet("## A first autotune test")
    pytester.makeini("[pytest]\nfilterwarnings = error\n")
    pytester.makepyfile(mylib=snippet("## The runtime library: `LocalTuner` in your package"))
    pytester.makepyfile(test_sum=first)
    pytester.makepyfile(
        test_mylib=first[: first.index("@pytest.mark.autotune")]
        + snippet("### A production `TunableSet`: the `autotune` fixture")
    )
    result = run(pytester, "-rf")
    result.assert_outcomes(passed=8)


def test_the_hook_examples_leave_a_run_without_the_plugin_working(
    pytester: pytest.Pytester,
) -> None:
    # A conftest with the examples as written stopped `pytest -p no:autotune` (and any
    # checkout without the plugin installed) with an INTERNALERROR: "unknown hook
    # 'pytest_autotune_client' in plugin <module 'conftest'>".
    from pytest_autotune import hookspecs

    examples = [
        textwrap.dedent(spec.__doc__.split("::\n", 1)[1]).replace("# conftest.py\n", "")
        for spec in (getattr(hookspecs, name) for name in dir(hookspecs))
        if callable(spec) and spec.__name__.startswith("pytest_autotune_") and spec.__doc__
    ]
    assert len(examples) == 3
    pytester.makeconftest("\n\n".join(examples))
    pytester.makepyfile("def test_plain():\n    pass\n")
    result = pytester.runpytest_inprocess("-p", "no:autotune", "-p", "no:randomly")
    assert result.ret == pytest.ExitCode.OK, result.outlines
    result.assert_outcomes(passed=1)
