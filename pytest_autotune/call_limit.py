"""The time limit of a test's calls of its candidates, the `autotune` fixture's and the
marker's tests' alike: the limit itself (`call_time_limit`), and each candidate's name for
its message (`Names`)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from pytest_autotune.session import AutotuneSession
from pytest_autotune.time_limit import TimeLimit
from pytest_autotune.tune.settings import DEFAULT_TIME_LIMIT_S


class Names:
    """The name of a candidate function, for a time limit's message."""

    def __init__(self, candidates: tuple[tuple[str, Callable[..., Any]], ...]) -> None:
        self._by_id = {id(fn): name for name, fn in candidates}

    def __call__(self, fn: Callable[..., Any]) -> str:
        return self._by_id.get(id(fn), "the reference")


def call_time_limit(session: AutotuneSession, options: Mapping[str, Any]) -> TimeLimit:
    """The marker's limit, else the settings' (command line, environment, YAML, ini), else
    the default under --autotune; a plain run has none unless one is set."""
    seconds = session.settings.for_marker(options).engine.time_limit
    if seconds is None and session.settings.tune:
        seconds = DEFAULT_TIME_LIMIT_S
    return TimeLimit(seconds)
