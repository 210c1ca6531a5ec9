"""What a candidate's test body ends with, as the candidate's own: pytest's outcomes raised
in it as its decline (`EXPECTED_TO_FAIL`) or its failure (`Failed`), but for
pytest-timeout's alarm, and an output that is a call not yet run (a coroutine, a
generator)."""

from __future__ import annotations

import inspect


def unrun(output: object) -> str | None:
    """Why a test body's output is a call not yet run, if it is: an `async def` candidate
    returns a coroutine and a generator function a generator, and neither runs a line
    until awaited or iterated. As the reference, every candidate that computed the answer
    differed from it, and the group fell back to it; timed, it was all but free. The
    coroutine is closed, else its "never awaited" warning, raised when it is collected,
    failed whichever test of a strict project ran then."""
    if inspect.iscoroutine(output):
        output.close()
        return (
            "returned a coroutine, which runs nothing until awaited: an `async def`"
            " candidate is run by the test body, as in `return asyncio.run(candidate(x))`"
        )
    if inspect.isgenerator(output) or inspect.isasyncgen(output):
        return (
            "returned a generator, which runs nothing until iterated: return its values"
            " from the test body, as in `return list(candidate(x))`"
        )
    return None


EXPECTED_TO_FAIL = "expected to fail: "
"""How a candidate's decline by `pytest.xfail()` in the test body begins."""


def candidates_failure(exc: BaseException) -> BaseException:
    """`pytest.fail()` in the test body as the candidate's failure (`Failed`), but for
    pytest-timeout's alarm, its `pytest.fail` raised by its signal handler in whatever call
    the test was making, which is returned as it is. Taken for the candidate's failure, the
    alarm disqualified the candidate it happened to stop, and the group was judged, and
    written by `--autotune-update`, with the next one as its winner; it stops the tuning
    instead (`AutotuneSession.candidate_outcome`), which names the group."""
    tb = exc.__traceback__
    while tb is not None:
        if tb.tb_frame.f_globals.get("__name__") == "pytest_timeout":
            return exc
        tb = tb.tb_next
    return Failed(exc)


class Failed(Exception):
    """`pytest.fail()` in the test body, as the candidate's failure (named as pytest's own,
    which the messages show); the candidate's own test raises pytest's again."""

    def __init__(self, outcome: BaseException) -> None:
        super().__init__(str(outcome))
        self.outcome = outcome

    def pytests(self) -> BaseException:
        """pytest's own outcome, with what was said of this failure (the reference's, in
        another candidate's check: `check_mode`) noted on it."""
        for note in getattr(self, "__notes__", ()):
            self.outcome.add_note(note)
        return self.outcome


class BodyFailed(Failed):
    """A failure of the test body, not of the candidate it called: the body fails so on
    any call after its first (pytest-benchmark's fixture called again through a function of
    another fixture), so another candidate's check fails with it, rather than taking the
    next candidate for the reference."""
