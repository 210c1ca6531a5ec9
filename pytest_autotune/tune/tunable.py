"""Candidates (`Tunable`), their priority buckets (`TuneGroup`) and the order they are tried in."""

from __future__ import annotations

import inspect
import math
import reprlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from pytest_autotune.tune.plain_numbers import RealNumber, real_number

TuneFn = Callable[..., Any]
"""A candidate: a plain callable called as `fn(*inputs)`."""

PriorityFn = Callable[[Any], RealNumber]
"""`priority(key) -> number`: higher goes first; negative skips. Any real number, a float or
a NumPy scalar (`np.log2(key.n)`) too, as `_priority` reads it."""


@dataclass(frozen=True, slots=True, eq=False)
class TuneGroup:
    """A priority bucket for tunables, computed from the autotune key.

    Groups let a set say "for big problems try these first, and only fall back to the
    rest if they all fail", so a key does not pay for timing every candidate.
    """

    name: str
    priority: PriorityFn

    def __post_init__(self) -> None:
        __tracebackhide__ = True  # pytest shows the user's line that built it, not this one
        check_name("TuneGroup", self.name)
        check_callable(f"TuneGroup {self.name!r}: priority", self.priority)


@dataclass(frozen=True, slots=True)
class Tunable:
    """A single candidate: a named function plus the groups it belongs to.

    A tunable is tried whenever any of its groups is; with no group it joins the first batch.
    """

    name: str
    fn: TuneFn
    groups: tuple[tuple[TuneGroup, PriorityFn], ...] = field(default=())

    def __post_init__(self) -> None:
        # A candidate that is not callable would only fail when timed, where the tuner
        # records it as a failed candidate and picks another: the mistake would pass unseen.
        __tracebackhide__ = True
        check_name("Tunable", self.name)
        check_callable(f"Tunable {self.name!r}", self.fn)
        _check_runs_when_called(f"Tunable {self.name!r}", self.fn)

    def group(self, group: TuneGroup, priority: PriorityFn) -> Tunable:
        """This candidate, also in `group` at the intra-group `priority(key)`."""
        __tracebackhide__ = True
        if not isinstance(group, TuneGroup):
            raise TypeError(
                f"Tunable {self.name!r}: group() takes a TuneGroup, got {type(group).__name__}"
            )
        check_callable(f"Tunable {self.name!r}: priority in group {group.name!r}", priority)
        return Tunable(self.name, self.fn, (*self.groups, (group, priority)))


def check_name(owner: str, name: object) -> None:
    """A name is what files, records and reports show: a non-empty string of one line.

    Not a line break: a set's checksum joins its names with them, so `["a\\nb", "c"]` and
    `["a", "b\\nc"]` were one candidate list to the cache, whose winner's index then
    called the other set's function. Nor a tab or another character that does not print,
    which breaks the tables the name is shown in."""
    __tracebackhide__ = True
    if not isinstance(name, str) or not name:
        raise TypeError(f"{owner}: the name must be a non-empty str, got {name!r}")
    if not name.isprintable():
        raise ValueError(
            f"{owner}: the name {name!r} holds a control character (a line break, a tab):"
            " a name is one line in every table, record and cache file"
        )


def check_callable(what: str, value: object) -> None:
    __tracebackhide__ = True
    if not callable(value):
        raise TypeError(
            f"{what}: expected a callable, got {type(value).__name__} {reprlib.repr(value)}"
        )


def _check_runs_when_called(what: str, fn: object) -> None:
    """The tuner calls a candidate as `fn(*inputs)` and never awaits or iterates what it
    returns: an `async def` function or a generator function would run nothing, be timed
    as all but free, and as the reference fail every candidate that computed the answer."""
    __tracebackhide__ = True
    if inspect.iscoroutinefunction(fn) or inspect.isasyncgenfunction(fn):
        raise TypeError(
            f"{what}: an `async def` function runs nothing until awaited, and the tuner calls"
            " it as fn(*inputs); give a plain function that runs it, such as"
            " `lambda *inputs: asyncio.run(fn(*inputs))`"
        )
    if inspect.isgeneratorfunction(fn):
        raise TypeError(
            f"{what}: a generator function runs nothing until iterated, and the tuner calls"
            " it as fn(*inputs); give a plain function returning its values, such as"
            " `lambda *inputs: list(fn(*inputs))`"
        )


def _priority(priority: PriorityFn, key: Any, owner: str) -> int | float:
    """`priority(key)`, which must be a number: a priority function whose branches do not
    all return (None) would otherwise fail inside the plan's comparisons, naming neither
    the group nor the candidate. A NumPy number (`np.log2(key.n)`) is the number it is."""
    __tracebackhide__ = True
    value = priority(key)
    number = real_number(value)
    # NaN compares false with everything: not negative, so tried, and ordered nowhere.
    if number is None or math.isnan(number):
        raise PriorityError(
            f"{owner}: priority({key!r}) returned {value!r}; it must return a number"
            " (higher goes first, negative skips)"
        )
    return number


class PriorityError(TypeError):
    """A priority function returned no number: the user's mistake, which the plugin shows
    as the test's one line rather than as a traceback through the tuner."""


def tune_plan(key: Any, tunables: Sequence[Tunable]) -> list[tuple[int, ...]]:
    """The batches of candidate indices to try for `key`, in order.

    Ungrouped candidates join the first batch. Groups are bucketed by their priority for
    this key and go from the highest down; inside a bucket, one intra-group priority
    level makes one batch, highest first. A negative priority, of a group or of a
    candidate inside it, skips. A candidate in several groups is tried once, through the
    first batch that holds it (its highest group), and a batch left empty by that is
    passed over. Its first place in that order decides, negative or not: one its highest
    group skips is never tried through a lower one, as the seed's plan removes each level
    it reaches, a skipped one too, from every later group ("negative priorities ensure
    the entry is never tuned for this key"). The tuner stops at the first batch in which
    any candidate succeeds.

    The ungrouped candidates join the batch of the highest group's highest level, as the
    seed's plan has them: when every candidate of that level skips the key, they form the
    first batch alone, and the next groups are tried only if they all fail.
    """
    buckets: dict[float, dict[float, list[int]]] = {}
    ungrouped: list[int] = []
    top_group: float | None = None
    for index, tunable in enumerate(tunables):
        if not tunable.groups:
            ungrouped.append(index)
            continue
        # The candidate's first place in the plan's order: its highest group, and its
        # highest level there (a group that skips the key needs no level: no place after
        # it is tried).
        first: tuple[float, float] | None = None
        for group, intra in tunable.groups:
            group_priority = _priority(group.priority, key, f"TuneGroup {group.name!r}")
            top_group = group_priority if top_group is None else max(top_group, group_priority)
            level = -math.inf
            if group_priority >= 0:
                name = f"Tunable {tunable.name!r} in group {group.name!r}"
                level = _priority(intra, key, name)
            if first is None or (group_priority, level) > first:
                first = (group_priority, level)
        assert first is not None
        group_priority, level = first
        if group_priority >= 0 and level >= 0:
            buckets.setdefault(group_priority, {}).setdefault(level, []).append(index)

    batches: list[tuple[int, ...]] = []
    tried: set[int] = set()
    pending_ungrouped = ungrouped
    if ungrouped and top_group is not None and top_group >= 0 and top_group not in buckets:
        # The highest group skips the key at its every level: the ungrouped candidates are
        # the seed's whole first batch then, and a lower group is only their fallback.
        batches.append(tuple(ungrouped))
        tried.update(ungrouped)
        pending_ungrouped = []
    for group_priority in sorted(buckets, reverse=True):
        levels = buckets[group_priority]
        for level in sorted(levels, reverse=True):
            batch = [*pending_ungrouped, *(i for i in levels[level] if i not in tried)]
            batch = list(dict.fromkeys(batch))
            if not batch:
                continue
            pending_ungrouped = []
            tried.update(batch)
            batches.append(tuple(batch))
    if pending_ungrouped:
        batches.append(tuple(pending_ungrouped))
    return batches


def unplanned(plan: list[tuple[int, ...]], count: int) -> frozenset[int]:
    """The candidates of a set of `count` that no batch of `plan` holds: those its groups
    skip for the key, which decline it: the checks never run them for it."""
    planned = {i for batch in plan for i in batch}
    return frozenset(i for i in range(count) if i not in planned)


def first_planned(plan: list[tuple[int, ...]]) -> int:
    """The first candidate the plan tries (the first of the set when the plan skips them
    all): what a candidate calling back into its own tuner while tuned runs."""
    return plan[0][0] if plan else 0
