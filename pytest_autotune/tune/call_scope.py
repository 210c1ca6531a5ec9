"""A candidate's call scope: a context a candidate's calls need (the pytest plugin's
warning filters of the candidate's own test), entered by the tuner around each timed call
and outside its timer.

A candidate function may carry `autotune_scope`, a callable that returns a fresh context
manager. Entered inside the timed call it cost about 11 us a call on the 2-core VM, which
moved the pick of short candidates by which test happened to tune the group; entered here,
around `client.time`, it costs the sample nothing. While it is entered, `entered()` says
so, and the candidate does not enter it again itself (`candidate_run.CandidateRun`).
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from contextvars import ContextVar
from typing import Any

_entered: ContextVar[bool] = ContextVar("autotune_scope_entered", default=False)

SCOPE_ATTRIBUTE = "autotune_scope"
"""The attribute of a candidate function that makes its scope."""


def entered() -> bool:
    """Whether a candidate's scope is entered around the call now running."""
    return _entered.get()


@contextlib.contextmanager
def call_scope(fn: Any) -> Iterator[None]:
    """`fn`'s own scope, where it carries one, around the block; else nothing."""
    make = getattr(fn, SCOPE_ATTRIBUTE, None)
    if make is None:
        yield
        return
    token = _entered.set(True)
    try:
        with make():
            yield
    finally:
        _entered.reset(token)


__all__ = ["SCOPE_ATTRIBUTE", "call_scope", "entered"]
