"""How a test fails for its candidates, the `autotune` fixture's and the marker's tests'
alike: with a message alone (`fail`), or with a candidate's own exception raised again, its
traceback shown (`raise_again`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import NoReturn

import pytest

from pytest_autotune.time_limit import crashed


def fail(message: str) -> NoReturn:
    """Fail the test with `message` alone, also from inside an `except` block: there pytest
    would print the error being handled first, then "During handling of the above exception,
    another exception occurred:", and the one line would read as three."""
    raise pytest.fail.Exception(message, pytrace=False) from None


def raise_again(call: Callable[[], object], failure: str) -> None:
    """Call a candidate whose call raised while its group was tuned once more, in its own
    test, and raise what it raises with the failure's message as a note, so that pytest
    shows its traceback (by `--tb`) as a plain run does: the tuning keeps only the
    exception's text (and, for a marker's group, ran inside another test). Where this call
    does not raise (the candidate failed only after many timed calls) or declines, it
    returns, for the message alone to be shown. Python 3.10 keeps no notes: the exception
    is raised without it (the message is the exception's own text), so that its traceback,
    and an `xfail(raises=...)` mark that matches it, work there too."""
    __tracebackhide__ = True  # a candidate's traceback shows the user's frames alone
    try:
        call()
    except (Exception, pytest.fail.Exception) as exc:
        if not crashed(exc):
            return
        error: BaseException = exc
    else:
        return
    add_note = getattr(error, "add_note", None)
    if add_note is not None:
        add_note(f"under --autotune: {failure}")
    raise error
