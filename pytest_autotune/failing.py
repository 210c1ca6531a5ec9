"""How a test fails for its candidates, the `autotune` fixture's and the marker's tests'
alike: with a message alone (`fail`), or with a candidate's own exception raised again, its
traceback shown (`raise_again`)."""

from __future__ import annotations

import inspect
import sys
from collections.abc import Callable
from typing import NoReturn

import pytest

from pytest_autotune.time_limit import crashed
from pytest_autotune.tune.decision import MEASURED_FAILURES
from pytest_autotune.tune.loaded import instance_of


def fail(message: str) -> NoReturn:
    """Fail the test with `message` alone, also from inside an `except` block: there pytest
    would print the error being handled first, then "During handling of the above exception,
    another exception occurred:", and the one line would read as three."""
    raise pytest.fail.Exception(message, pytrace=False) from None


def raise_again(call: Callable[[], object], failure: str) -> bool:
    """Call a candidate whose call raised while its group was tuned once more, in its own
    test, and raise what it raises with the failure's message as a note, so that pytest
    shows its traceback (by `--tb`) as a plain run does: the tuning keeps only the
    exception's text (and, for a marker's group, ran inside another test). Where this call
    does not raise (the candidate failed only after many timed calls, or at times) or
    declines, it returns, for the message alone to be shown: True where it ran clean.
    Python 3.10 keeps no notes: the exception is raised without it (the message is the
    exception's own text), so that its traceback, and an `xfail(raises=...)` mark that
    matches it, work there too."""
    __tracebackhide__ = True  # a candidate's traceback shows the user's frames alone
    try:
        call()
    except (Exception, pytest.fail.Exception) as exc:
        if not crashed(exc):
            return False
        error: BaseException = exc
    else:
        return True
    add_note = getattr(error, "add_note", None)
    if add_note is not None:
        add_note(f"under --autotune: {failure}")
    raise error


def raised_only_when_tuned(failure: str) -> str:
    """The failure of a candidate that raised while its group was tuned, but not when its
    own test called it again (`raise_again`): said "raised" alone, the test read as the
    candidate failing now, and each rerun of it (pytest-rerunfailures), which does not
    tune the group again, said so again while a plain run's rerun passed."""
    # A winner that raised while the gate measured it had been tuned: said "while its
    # group was tuned" and "tuned without it", the message hid that it had won.
    when, without = (
        ("after it won its group's tuning", "judged")
        if any(f" {how}" in failure for how in MEASURED_FAILURES)  # after its name
        else ("while its group was tuned", "tuned")
    )
    return (
        f"{failure} {when}; called again in its own test, it did not raise: it fails at"
        f" times, or only after many calls, and the group was {without} without it (a"
        " rerun of this test does not tune the group again)"
    )


def let_go_of_memory(config: pytest.Config, error: BaseException) -> None:
    """Clear the frames of a test's out-of-memory failure once its report is made: pytest
    keeps the last failure (`sys.last_traceback`, for a post-mortem) and with it what the
    candidate's frames held. A candidate that filled an H100 block by block before CuPy's
    OutOfMemoryError kept 74 of its 79 GiB used through the next tests, which then ran out
    of memory in turn (the forty-fourth session's GPU probe). Kept under `--pdb`, whose
    post-mortem shows those frames."""
    if config.getoption("usepdb", False) or not _out_of_memory(error):
        return
    tb = error.__traceback__
    while tb is not None:
        # Before 3.13 a frame keeps its locals' snapshot, a dict that pytest's report read
        # (`__tracebackhide__`) and holds beside the frame: `frame.clear()` alone left the
        # candidate's arrays in it (traceback.clear_frames does no more).
        # A module's, a class body's or exec's frame has no snapshot: its f_locals is the
        # namespace itself (a module's globals), left alone.
        frame = tb.tb_frame
        snapshot = frame.f_locals if frame.f_code.co_flags & inspect.CO_OPTIMIZED else None
        try:
            frame.clear()
        except RuntimeError:  # a frame still running: its locals are in use
            pass
        else:
            if isinstance(snapshot, dict):
                snapshot.clear()
        tb = tb.tb_next


def _out_of_memory(error: BaseException) -> bool:
    """A host's or a device's out-of-memory error: CuPy's (a MemoryError too), or one
    CuPy or PyTorch raise where a library or the driver ran out of device memory."""
    if isinstance(error, MemoryError) or instance_of(error, "torch", "cuda.OutOfMemoryError"):
        return True
    cp = sys.modules.get("cupy")
    if cp is None:
        return False
    from pytest_autotune.backends.cuda_device import is_out_of_memory

    try:
        return is_out_of_memory(cp, error)
    except AttributeError:  # a stand-in for CuPy (a test suite's mock) lacks its errors
        return False
