"""How the gate confirms a suspected failure: measured again, on a CPU twice, each after a
pause and in a fresh process, on a GPU once right away (`confirming`), the baseline's
winner beside tuning's pick where tuning slipped onto another, and what the
re-measurements did (`Confirmations`).
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pytest_autotune.backends.cpu import cpu
from pytest_autotune.candidate_measure import measure_candidate, read_kind
from pytest_autotune.fresh_process import NotFresh, measure_fresh
from pytest_autotune.gate import Baseline, GroupVerdict, Measurement, device_kind
from pytest_autotune.group_case import GroupCase
from pytest_autotune.tune.errors import AutotuneError

if TYPE_CHECKING:
    from pytest_autotune.tune.client import Client


CPU_CONFIRMATIONS = 2
"""How many re-measurements a suspected failure on a CPU must fail too (`judge`'s
`confirmations`), each `CONFIRM_GAP_S` after the last measurement."""


CONFIRM_GAP_S = 2.0
"""The pause before each re-measurement on a CPU. On the shared 2-core VM a small kernel
slows in episodes of a fraction of a second to a few seconds: a 64x64 `dot` timed in
0.1 s windows every 0.2 s for a minute read 8% or more over its usual time in 6-26% of
the windows, in episodes of 1 to 11 windows; in 20 fresh processes that timed it six
times each, a slow read was followed by a slow one in 27 of 35 cases read back to back
and in 10 of 32 two seconds apart, about the share of slow reads overall (39 of 120):
after two seconds the episode no longer predicts the read (benchmarks/cpu_episodes.py,
BENCHMARKS.md). A re-measurement right after the first stays in the episode: beside a
busy core, 3 of 100 unchanged sessions failed on a 7 us matmul read +31% to +37% twice in
a row (the two reads' correlation over all sessions +0.92). A regression of the code is
there every time."""


Candidate = tuple[Callable[..., Any], str, Callable[[], Measurement]]
"""A candidate as the gate measures it: its function, its name, and its measurement here."""


@dataclass(slots=True)
class Confirmations:
    """What the confirmations of a suspected failure did (`confirming`)."""

    judged: list[str] = field(default_factory=list)
    """The name of the candidate each re-measurement judged, in order."""
    not_fresh: dict[str, str] = field(default_factory=dict)
    """Why a candidate was measured in the test process rather than a fresh one, by name."""
    rival_raised: AutotuneError | None = None
    """What the baseline's winner, measured beside tuning's pick (the rival), raised when
    measured again: a failing candidate, dropped as a winner that raises is."""
    rival_reads: list[Measurement] = field(default_factory=list)
    """The rival's re-measurements, in order."""

    def not_fresh_note(self, group: str, verdict: GroupVerdict) -> list[str]:
        """The README promises the confirmations in fresh processes: a failure confirmed
        without them says so, and why, so that the user can weigh it (and mend it)."""
        if not (verdict.failed and self.not_fresh):
            return []
        said = "; ".join(f"{name}: {why}" for name, why in self.not_fresh.items())
        return [f"note: {group}: measured again in the test process, not in a fresh one: {said}"]


def confirming(
    client: Client,
    fresh_inputs: Callable[[], tuple[Any, ...]],
    judged: Candidate,
    rival: Candidate | None,
    confirmations: Confirmations,
    read_kind: str | None = None,
) -> dict[str, Any]:
    """How `judge` confirms a suspected failure: on a CPU up to `CPU_CONFIRMATIONS`
    re-measurements, each after `CONFIRM_GAP_S` (the machine's episodes pass, the code's
    regression stays) and, on the built-in CPU client, each in a fresh process
    (`fresh_process`: what one process keeps does not follow); on a GPU, whose time does
    not come in such episodes, one right away.

    `rival` is the baseline's winner where tuning picked another and it measured no faster
    here: each re-measurement measures it too, and the faster of the two is judged (its
    name appended to `confirmations.judged`). On the 2-core VM a tiled transpose ran at 36 us in
    most processes and at 67 us in one in six, as fast as the plain copy there; in such a
    process tuning picked the copy, the baseline's winner measured no faster, and the
    confirmations measured the copy alone, whose 63 us never moves: an unchanged group
    failed at +79%, confirmed twice."""
    on_cpu = device_kind(client.device_id) == "cpu"
    again = functools.partial(measure_again, client, fresh_inputs, confirmations, read_kind)

    def remeasure() -> Measurement:
        if on_cpu:
            time.sleep(CONFIRM_GAP_S)
        measured = again(judged)
        name = judged[1]
        if rival is not None:
            try:
                other = again(rival)
            except AutotuneError as exc:
                # The pick is judged as it is; the rival fails its own test, not hidden.
                if confirmations.rival_raised is None:
                    confirmations.rival_raised = exc
            else:
                confirmations.rival_reads.append(other)
                if other.median < measured.median:
                    measured, name = other, rival[1]
        confirmations.judged.append(name)
        return measured

    return {"remeasure": remeasure, "confirmations": CPU_CONFIRMATIONS if on_cpu else 1}


def measure_again(
    client: Client,
    fresh_inputs: Callable[[], tuple[Any, ...]],
    confirmations: Confirmations,
    read_kind: str | None,
    candidate: Candidate,
) -> Measurement:
    """`candidate` measured again: with the built-in CPU client in a fresh process
    (`fresh_process`), else, or where it cannot be, in this one (saying why)."""
    fn, name, measure = candidate
    if client is not cpu():
        return measure()
    fresh = measure_fresh(
        fn, fresh_inputs(), name, functools.partial(measure_candidate, read_kind=read_kind)
    )
    if isinstance(fresh, NotFresh):
        confirmations.not_fresh.setdefault(name, fresh.why)
        return measure()
    return fresh


def again_after_gap(
    client: Client,
    fresh_inputs: Callable[[], tuple[Any, ...]],
    confirmations: Confirmations,
    case: GroupCase,
    baseline: Baseline | None,
    rival: Candidate | None,
) -> Measurement | None:
    """The baseline's winner measured again as a confirmation measures it (after a pause
    on a CPU, in a fresh process there); None where it raises now."""
    if rival is None:
        return None
    if device_kind(client.device_id) == "cpu":
        time.sleep(CONFIRM_GAP_S)
    try:
        return measure_again(client, fresh_inputs, confirmations, read_kind(case, baseline), rival)
    except AutotuneError:
        return None
