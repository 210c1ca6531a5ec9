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
