"""What the plugin keeps in pytest's stash that its entry point (`plugin.py`) reads in every
run, before the engine is loaded and in runs that never load it: kept apart from the
modules that import NumPy."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from pytest_autotune.session import AutotuneSession

SESSION: pytest.StashKey[AutotuneSession] = pytest.StashKey()
"""The run's session, there once the plugin's engine is loaded (`plugin.py`)."""
IN_BODY = pytest.StashKey[bool]()
"""Set while the test's body runs (the call phase): a fixture call outside it (in a
fixture's setup or teardown) fails at once, as there is no body's end to wait for."""
