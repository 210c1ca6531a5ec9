"""Plugin tests run pytest in-process with `pytester`, with a fake client (a fake clock that
candidates advance) so that verdicts are exact, never a matter of this machine's noise."""

from __future__ import annotations

import pytest

from tests.plugin.harness import FAKE_CONFTEST


@pytest.fixture
def autotune_pytester(pytester: pytest.Pytester) -> pytest.Pytester:
    """A pytester with the fake client's conftest and warnings as errors, as in a strict
    project."""
    pytester.makeconftest(FAKE_CONFTEST)
    pytester.makeini("[pytest]\nfilterwarnings = error\n")
    return pytester
