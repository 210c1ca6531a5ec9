"""One group to tune, as the plugin asks for it (`GroupRequest`), and what is made of it
alone: the candidate set it is tuned as (its candidates called through the test body, the
marker's `groups=` plan), its tuner (with the marker's `reference`), the set tuned again
where candidates raised while the gate measured them, the order a call runs a tuned set's
candidates in, and which group owns each cache entry.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from pytest_autotune.check_mode import Body, Candidates, candidate_call
from pytest_autotune.plugin_settings import PluginSettings
from pytest_autotune.tune.benchmark import AutotuneOutcome
from pytest_autotune.tune.bounds import Bounds, Work, roofline
from pytest_autotune.tune.call_scope import SCOPE_ATTRIBUTE
from pytest_autotune.tune.client_calls import client_peaks
from pytest_autotune.tune.config import ConfigError
from pytest_autotune.tune.decision import MEASURED_FAILURES, TuneDecision
from pytest_autotune.tune.errors import AutotuneError, AutotuneSkip
from pytest_autotune.tune.key import stable_key
from pytest_autotune.tune.plain_numbers import real_number
from pytest_autotune.tune.tunable import Tunable, TuneGroup, tune_plan, unplanned
from pytest_autotune.tune.tunable_set import TunableSet, checksum_of
from pytest_autotune.tune.tuner import Tuner

if TYPE_CHECKING:
    from pytest_autotune.tune.client import Client


@dataclass(frozen=True)
class GroupRequest:
    """One group to tune: its candidates, the body that calls them, and the inputs."""

    group: str
    tuner_name: str
    key: Any
    candidates: Candidates
    run: Body
    inputs: tuple[Any, ...]
    options: Mapping[str, Any]
    tunables: TunableSet | None = None
    """A production set (the `autotune` fixture); None builds one from `candidates`."""
    not_run: Mapping[str, str] = field(default_factory=dict)
    """The candidates whose tests are marked not to run, with why (`group_marks.not_run`):
    in the set built from `candidates`, declining the key there, so that its candidate list
    (and the checksum its baseline is found by) is the one a machine that runs them
    tunes; still a reference where the marker names one."""
    test_ids: Mapping[str, str] = field(default_factory=dict)
    """Each candidate's own test item by name, as its node id (`item_groups.candidate_nodeids`): the
    pytest-benchmark file names a candidate's figures as pytest names its test."""
    expected_to_fail: frozenset[str] = frozenset()
    """The candidates whose tests are marked `xfail` (`group_marks.expected_to_fail`): the
    report does not raise their failed checks."""
    key_known: bool = True
    """False where `key` is only the parameters' ids, its marker's `key=` callable having
    failed: the record says so, and an update's stale entries leave the test's alone."""
    filed_before: str | None = None
    """The tuner an earlier version filed this group under, where it differs from
    `tuner_name`: an `autotune` fixture's set of a `LocalTuner`, filed under its test's node
    id by pytest-autotune 0.1.0, whose baselines are read there while the tuner's file
    holds none of the key (`Baselines.find`)."""


def tunable_set_of(request: GroupRequest, work: Work | None) -> TunableSet:
    """The set a group is tuned as: the request's own (an `autotune` fixture's), else one
    of its candidates, each called through the body; bounded by the roofline of `work`."""

    def wrap(name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
        # A partial, not a closure: it pickles where the body and the candidate do,
        # so a fresh process can measure it again (`fresh_process`).
        wrapped = candidate_call(request.run, name, fn)
        scope_of = getattr(request.run, "scope_of", None)  # `candidate_run.CandidateRun`'s
        scope = scope_of(name) if scope_of is not None else None
        if scope is not None:
            # Its test's warning filters, entered around each timed call by the tuner
            # and outside its timer (`tune.call_scope`).
            setattr(wrapped, SCOPE_ATTRIBUTE, scope)
        return wrapped

    tunables = request.tunables
    if tunables is None:
        items = [
            Tunable(name, _skipped_here(request.not_run[name]))
            if name in request.not_run
            else Tunable(name, wrap(name, fn))
            for name, fn in request.candidates
        ]
        grouped = _grouped(items, request.options.get("groups"), request.not_run)
        key = request.key
        # The key alone, not the request: the session keeps each tuned group's set to the
        # end (`AutotuneSession.winners`), and a key generator closing over the request
        # kept its inputs too, every group's, so that 20 groups of a 32 MiB array grew
        # a tuning run by 640 MiB.
        tunables = TunableSet(lambda *_: key, tunables=tuple(grouped))
    if work is not None and tunables.bounds_gen is None:
        # The roofline itself (default thresholds) drives the short circuit; the
        # marker's thresholds are the gate's floor, not a reason to stop tuning.
        def bounds(key: Any, inputs: tuple[Any, ...], client: Client) -> Bounds:
            return roofline(work, client_peaks(client), launch_overhead=client.launch_overhead)

        tunables = tunables.with_bounds(bounds)
    return tunables


def tuner_of(request: GroupRequest, device_id: str, settings: PluginSettings) -> Tuner:
    """The tuner of a group: its candidates checked as plain pytest checks them."""
    options = request.options
    compared = options.get("check_output") is not False
    return Tuner(
        request.tuner_name,
        device_id,
        replace(settings.engine, checks=True),
        reference=reference_of(options.get("reference"), request),
        # As plain pytest's check: with nothing to compare, each candidate has to run.
        require_output=compared,
        # A production set's functions (the `autotune` fixture's) that write into an
        # `out` argument and return None are judged by what they wrote, as at run time.
        written_inputs=request.tunables is not None,
        compare_outputs=compared,
        reference_last=request.expected_to_fail,
    )


def call_order(key: Any, decision: TuneDecision, tunables: TunableSet) -> list[int]:
    """The indexes of a tuned set's candidates in the order a call runs them
    (`AutotuneSession.winners`): the winner, then the candidates its plan tries for the key,
    batch by batch, the measured of a batch by their score."""
    results = decision.results

    def rank(index: int) -> tuple[bool, float]:
        result = results.get(index)
        if isinstance(result, AutotuneOutcome):
            return (False, result.score)
        return (True, 0.0)  # unmeasured, after the measured, in the plan's order

    order = [decision.fastest_index]
    for batch in tune_plan(key, tunables.tunables):
        order.extend(i for i in sorted(batch, key=rank) if i not in order)
    return order


class EntryOwners:
    """The group that has each cache entry of a session: two groups of one test with one key
    would share one cache entry, each baseline replacing the other's (and the gate comparing
    one size with another's time)."""

    def __init__(self) -> None:
        self._key_owners: dict[tuple[str, str, str], str] = {}
        """(tuner, stable key, checksum) -> the group that has it: one entry of a cache file
        each."""
        self._collisions: dict[str, str] = {}

    def collision(self, request: GroupRequest) -> str | None:
        """Why the request's group cannot have its cache entry, which another group has;
        None where it is the group that has it."""
        if request.group in self._collisions:
            return self._collisions[request.group]
        # The checksum too: two sets of one tuner (two `autotune` fixture calls) are two
        # entries of its file at one key, as their candidate lists differ.
        names = tuple(name for name, _ in request.candidates)
        owner = self._key_owners.setdefault(
            (request.tuner_name, stable_key(request.key), checksum_of(names)), request.group
        )
        if owner == request.group:
            return None
        # A marker's key comes from its `key=`; an `autotune` fixture call's from its set.
        if request.tunables is None:
            # Without a key=, the parameters' ids, a numbered one by its value
            # (`group_key.plain_text`): one value given twice in a parametrize.
            source = "key= (or without one, the parameters' ids and values)"
            remedy = "so give each group its own key"
        else:
            source, remedy = "the set's key_gen", "so tune this set at this key in one test"
        message = (
            f"{request.group}: {source} gives the key {stable_key(request.key)}, as it does"
            f" for {owner}; one cache entry cannot hold the baselines of both, {remedy}"
        )
        self._collisions[request.group] = message
        return message


def reference_of(reference: Any, request: GroupRequest) -> Callable[..., Any] | str | None:
    """The marker's `reference`: a function of the inputs, called through the body, or the
    name of a candidate, which the checks then name as plain pytest does."""
    if reference is None:
        return None
    if isinstance(reference, str):
        if reference not in dict(request.candidates):
            names = sorted(dict(request.candidates))
            raise ConfigError(f"reference={reference!r} names no candidate: {names}")
        return reference
    return functools.partial(request.run, reference)


def check_groups(
    candidates: Candidates, groups: Any, not_run: Collection[str], key: Any
) -> frozenset[str]:
    """Evaluate the marker's `groups=` on `key` as tuning does, for the plain run: a
    priority function that raises or returns no number for the key then fails the plain
    run every CI job makes, not only --autotune's. The candidates the plan never tries for
    the key, which decline it, as in tuning (`Tuner._check`)."""
    if not groups:
        return frozenset()
    items = [Tunable(name, _planned_only) for name, _ in candidates if name not in not_run]
    skipped = unplanned(tune_plan(key, _grouped(items, groups, not_run)), len(items))
    return frozenset(items[i].name for i in skipped)


def _raised_when_measured(decision: TuneDecision) -> dict[int, AutotuneError]:
    """The candidates of a decision that raised while the gate measured them, by index."""
    return {
        i: r
        for i, r in decision.results.items()
        if isinstance(r, AutotuneError) and r.message.startswith(MEASURED_FAILURES)
    }


def declining(tunables: TunableSet, decision: TuneDecision) -> TunableSet:
    """`tunables` with each candidate that raised while measured declining every key, so
    that a plan's next batches are tried. The names, and so the checksum, stay."""
    raised = _raised_when_measured(decision)
    return replace(
        tunables,
        tunables=tuple(
            replace(t, fn=_skipped_here("raised when measured")) if i in raised else t
            for i, t in enumerate(tunables.tunables)
        ),
    )


def with_failures(tuned: TuneDecision, before: TuneDecision) -> TuneDecision:
    """A decision of `declining`'s set, its declining candidates given back the errors
    they raised (`before`'s)."""
    return replace(tuned, results={**tuned.results, **_raised_when_measured(before)})


def _skipped_here(reason: str) -> Callable[..., Any]:
    """The function of a candidate marked not to run here: it declines every key, with its
    mark's reason, and never calls the candidate (which may crash on this machine). Left
    out of the set instead, it changed the set's candidate list: the baseline of a machine
    that runs it read as of "another candidate list (removed ...)", and an update replaced
    that baseline as if the candidate had been deleted from the code."""

    def skipped(*inputs: Any) -> Any:
        raise AutotuneSkip(reason)

    return skipped


def _planned_only(*inputs: Any) -> None:
    """The function of a candidate that is only planned (`check_groups`), never called."""


def _grouped(items: list[Tunable], groups: Any, not_run: Collection[str]) -> list[Tunable]:
    """Apply the marker's `groups=[(TuneGroup, {candidate: priority}), ...]`."""
    by_name = {t.name: t for t in items}
    for entry in groups or ():
        group, members = entry
        if not isinstance(group, TuneGroup) or not isinstance(members, Mapping):
            raise ConfigError("groups= takes (TuneGroup, {candidate name: priority}) pairs")
        for name, priority in members.items():
            if name in not_run:
                continue
            if name not in by_name:
                raise ConfigError(f"groups= names no candidate {name!r}: {sorted(by_name)}")
            fn = priority if callable(priority) else _fixed_priority(priority)
            by_name[name] = by_name[name].group(group, fn)
    return [by_name[t.name] for t in items]


def _fixed_priority(priority: object) -> Callable[[Any], Any]:
    """A priority given as a number, as the number it is, as a priority function may
    return one: int() made -0.5 a 0 that no longer skips, and 1.5 share a batch with 1."""
    number = real_number(priority)
    return lambda key: number


__all__ = [
    "EntryOwners",
    "GroupRequest",
    "call_order",
    "check_groups",
    "declining",
    "reference_of",
    "tunable_set_of",
    "tuner_of",
    "with_failures",
]
