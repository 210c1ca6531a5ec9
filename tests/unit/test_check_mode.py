"""Check mode's choice of the reference a candidate is compared with (plain pytest)."""

from __future__ import annotations

from typing import Any

from pytest_autotune.check_mode import check_candidate
from pytest_autotune.tune.config import AutotuneConfig


def _run(candidate: Any, *inputs: Any) -> Any:
    return candidate(*inputs)


def _raises(n: int) -> int:
    raise ValueError(n)


def test_a_candidate_marked_not_to_run_but_run_here_is_its_own_reference() -> None:
    # Its test run by node id, though its mark skips it: where every other candidate
    # raised, no reference was assigned and an internal UnboundLocalError reached the user.
    failure = check_candidate(
        "doubled",
        [("doubled", lambda n: n * 2), ("broken", _raises)],
        _run,
        (3,),
        reference=None,
        config=AutotuneConfig(),
        not_run={"doubled"},
    )
    assert failure is None


def test_a_first_candidate_that_returns_none_is_no_reference_where_a_later_one_returns_one() -> (
    None
):
    # A first candidate that forgot its `return` was the reference: every right one after
    # it failed as "cannot be checked", told to return the output from the test body.
    candidates = [("forgot", lambda n: None), ("good", lambda n: n * 2), ("also", lambda n: 2 * n)]

    def check(name: str) -> str | None:
        return check_candidate(
            name, candidates, _run, (3,), reference=None, config=AutotuneConfig()
        )

    assert check("good") is None
    assert check("also") is None
    assert check("forgot") == (
        "candidate 'forgot' returned None, where the reference candidate 'good' (the first"
        " that succeeds) returned 6"
    )
    # Where none returns an output, the first None is the reference, which shows none right.
    nothing = [("a", lambda n: None), ("b", lambda n: None)]
    failure = check_candidate("b", nothing, _run, (3,), reference=None, config=AutotuneConfig())
    assert failure is not None
    assert failure.startswith(
        "candidate 'b' cannot be checked: the reference candidate 'a' (the first that succeeds)"
        " returned None, so there is nothing to compare"
    )
