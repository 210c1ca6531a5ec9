"""Measuring a key's candidates: the plan's batches timed in order, each by the schedule,
statistic and preference its client asks for, until one finds a winner; the results the
checks settled, never timed; and what is run, or raised, where no candidate was measured."""

from __future__ import annotations

import functools
import operator
import time
from collections.abc import Callable, Collection
from typing import Any

from pytest_autotune.tune.batch import BatchResult, LongCalls, Preference, Statistic
from pytest_autotune.tune.benchmark import NS_PER_S, STATISTICS, AutotuneResult
from pytest_autotune.tune.check_result import SKIPPED, CheckResult
from pytest_autotune.tune.client import Client
from pytest_autotune.tune.config import BenchConfig
from pytest_autotune.tune.errors import NOT_REACHED, UNPLANNED, AutotuneError, AutotuneErrorKind
from pytest_autotune.tune.log import AutotuneLogContext, TuningStep
from pytest_autotune.tune.sampler import Samples
from pytest_autotune.tune.schedule import adaptive_round_robin, fixed_pass
from pytest_autotune.tune.tunable import unplanned
from pytest_autotune.tune.tunable_set import TunableSet, TuneInputs
from pytest_autotune.tune.wording import first_line

Strategy = Callable[..., BatchResult]
"""`fixed_pass` or `adaptive_round_robin`, with the client's options bound."""


def _schedule_for(bench: BenchConfig, client: Client) -> Strategy:
    """The sampling strategy for `client`. A client may say its first timing of a call is
    already warm (`warm_first_sample`, optional: a client without it is assumed cold); then
    a warm-up can judge a hopeless candidate, and where it names its long calls
    (`long_call`), a long warm-up is kept as the first sample and a long candidate is
    judged hopeless by the client's `hopeless_factor`, unless the config sets one."""
    if not bench.adaptive:
        return fixed_pass
    if not getattr(client, "warm_first_sample", False):
        return adaptive_round_robin
    seconds = getattr(client, "long_call", None)
    factor = getattr(client, "hopeless_factor", None) if bench.hopeless_factor is None else None
    long_calls = LongCalls(seconds, factor) if seconds is not None else None
    return functools.partial(adaptive_round_robin, warm_up_judges=True, long_calls=long_calls)


def _statistic_for(client: Client, tunables: TunableSet) -> Statistic | None:
    """How each candidate's samples are scored, where the client says (its optional
    `sample_statistic(fn)`: "median" for samples whose noise runs both ways, such as a host's
    time to enqueue eager calls); None, the seed's score for all, where it does not."""
    rule = getattr(client, "sample_statistic", None)
    if rule is None:
        return None

    def statistic(index: int) -> str:
        name = rule(tunables.fns[index])
        # Said here, by the client's name: the outcome that would refuse it later says
        # only "statistic is ...", from deep inside the round robin.
        if name not in STATISTICS:
            raise ValueError(
                f"{type(client).__name__}.sample_statistic returned {name!r}: expected one"
                f" of {', '.join(STATISTICS)}"
            )
        return str(name)

    return statistic


def _preference_for(client: Client, tunables: TunableSet) -> Preference | None:
    """Which live candidate wins a batch, where the client says (its optional
    `preferred(scored)`, given each candidate's function and score in seconds, returns the
    position of the one to take: `CudaClient` breaks a tie of host-bound calls by what a
    faster host would pay); None, the lowest score, where it does not."""
    rule = getattr(client, "preferred", None)
    if rule is None:
        return None

    def prefer(scores: dict[int, float]) -> int:
        order = list(scores)
        # Scores are in nanoseconds (`benchmark.score`); a client's own figures in seconds.
        chosen = rule([(tunables.fns[i], scores[i] / NS_PER_S) for i in order])
        try:
            position = operator.index(chosen)
        except TypeError:
            position = -1
        if not 0 <= position < len(order):
            raise TypeError(
                f"{type(client).__name__}.preferred returned {chosen!r}: expected the"
                f" position of one of the {len(order)} candidates it was given"
            )
        return order[position]

    return prefer


def settled_by_checks(checks: tuple[CheckResult, ...]) -> dict[int, AutotuneResult]:
    """The result of each candidate its check settled, which is never timed: one that
    failed its check, and one that declined the key there. A decliner would only decline
    again when timed, and where the plan never reached it, its result said "not reached":
    the plugin then passed its test under --autotune while plain pytest skipped it."""
    return {
        index: AutotuneError(
            AutotuneErrorKind.SKIP, check.message.removeprefix(SKIPPED), check.name
        )
        if check.skipped
        else AutotuneError(
            AutotuneErrorKind.UNKNOWN,
            check.failure(),
            check.name,
            check.trace,
        )
        for index, check in enumerate(checks)
        if check.skipped or not check.passed
    }


def run_plan(
    plan: list[tuple[int, ...]],
    key: Any,
    tunables: TunableSet,
    inputs: TuneInputs,
    client: Client,
    bench: BenchConfig,
    ctx: AutotuneLogContext,
    results: dict[int, AutotuneResult],
) -> int | None:
    """Time the plan's batches in order until one finds a winner (the seed's loop over
    priority groups), adding every candidate's result to `results`; those already there
    (settled by the checks) are left out, those never reached are skipped with the reason. The
    winner's index, None when no batch found one."""
    sample = Samples(tunables, key, inputs, client)
    excluded = set(results)
    strategy = _schedule_for(bench, client)
    statistic = _statistic_for(client, tunables)
    prefer = _preference_for(client, tunables)
    short_circuit = tunables.short_circuit_for(bench)
    winner: int | None = None
    for number, batch in enumerate(plan):
        indices = [i for i in batch if i not in excluded]
        if not indices:
            continue
        step_started = time.perf_counter()
        measured = strategy(
            indices,
            tunables.names,
            sample,
            bench,
            ctx.time_limit,
            short_circuit,
            ctx,
            statistic=statistic,
            prefer=prefer,
        )
        sample.clear()
        results.update(measured.results)
        ctx.event(TuningStep(number, tuple(indices), time.perf_counter() - step_started))
        if measured.winner is not None:
            winner = measured.winner
            why = f"{NOT_REACHED}: batch {number} found a winner first"
            break
    else:
        why = UNPLANNED
    _skip_unreached(results, tunables.names, why, unplanned(plan, len(tunables)))
    return winner


def _skip_unreached(
    results: dict[int, AutotuneResult],
    names: tuple[str, ...],
    why: str,
    unplanned: Collection[int],
) -> None:
    """Give every candidate without a result a Skip one, so results line up with indices:
    `why` for those a batch after the last one run would have tried, `UNPLANNED` for those
    no batch holds. A candidate whose groups skip the key read "batch 0 found a winner
    first" in the records of a tuning that found one, as though a later batch held it."""
    for index, name in enumerate(names):
        if index not in results:
            reason = UNPLANNED if index in unplanned else why
            results[index] = AutotuneError(AutotuneErrorKind.SKIP, reason, name)


def fallback_for(plan: list[tuple[int, ...]], results: dict[int, AutotuneResult]) -> int | None:
    """The candidate run when none was measured: the first the plan tries that ran (only
    its timing failed: it returned but the timer gave no valid duration), never one that
    declined or failed; None when there is none."""
    ran = [
        i
        for batch in plan
        for i in batch
        if isinstance(results.get(i), AutotuneError)
        and results[i].kind is AutotuneErrorKind.INVALID_SAMPLES  # type: ignore[union-attr]
    ]
    return ran[0] if ran else None


def nothing_succeeded(
    key: Any, names: tuple[str, ...], results: dict[int, AutotuneResult], fallback: int | None
) -> AutotuneError:
    """The seed's NoValidKernelFound, naming each candidate's error: the first line of one
    whose traceback, its cause when raised, gives it whole (`wording.first_line`)."""
    errors = "; ".join(_error_text(results[i]) for i in sorted(results))
    then = f"; falling back to {names[fallback]}" if fallback is not None else ""
    traces = [
        f"candidate {names[i]!r}:\n{result.trace}"
        for i, result in sorted(results.items())
        if isinstance(result, AutotuneError) and result.trace
    ]
    return AutotuneError(
        AutotuneErrorKind.NO_VALID_KERNEL_FOUND,
        f"no candidate succeeded for key {key!r}: {errors}{then}",
        trace="\n".join(traces),
    )


def _error_text(result: AutotuneResult) -> str:
    if isinstance(result, AutotuneError) and result.trace:
        return first_line(str(result), "its traceback, the cause of this error")
    return str(result)
