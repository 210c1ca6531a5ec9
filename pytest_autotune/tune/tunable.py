"""Candidates (`Tunable`), their priority buckets (`TuneGroup`) and the order they are tried in."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

TuneFn = Callable[..., Any]
"""A candidate: a plain callable called as `fn(*inputs)`."""

PriorityFn = Callable[[Any], int]
"""`priority(key) -> int`: higher goes first; negative skips."""


@dataclass(frozen=True, slots=True, eq=False)
class TuneGroup:
    """A priority bucket for tunables, computed from the autotune key.

    Groups let a set say "for big problems try these first, and only fall back to the
    rest if they all fail", so a key does not pay for timing every candidate.
    """

    name: str
    priority: PriorityFn


@dataclass(frozen=True, slots=True)
class Tunable:
    """A single candidate: a named function plus the groups it belongs to.

    A tunable is tried whenever any of its groups is; with no group it joins the first batch.
    """

    name: str
    fn: TuneFn
    groups: tuple[tuple[TuneGroup, PriorityFn], ...] = field(default=())

    def group(self, group: TuneGroup, priority: PriorityFn) -> Tunable:
        """This candidate, also in `group` at the intra-group `priority(key)`."""
        return Tunable(self.name, self.fn, (*self.groups, (group, priority)))


def tune_plan(key: Any, tunables: Sequence[Tunable]) -> list[tuple[int, ...]]:
    """The batches of candidate indices to try for `key`, in order.

    Ungrouped candidates join the first batch. Groups are bucketed by their priority for
    this key and go from the highest down; inside a bucket, one intra-group priority
    level makes one batch, highest first. A negative priority, of a group or of a
    candidate inside it, skips. A candidate in several groups is tried once, through the
    first batch that holds it (its highest group), and a batch left empty by that is
    passed over. The tuner stops at the first batch in which any candidate succeeds.
    """
    buckets: dict[int, dict[int, list[int]]] = {}
    ungrouped: list[int] = []
    for index, tunable in enumerate(tunables):
        if not tunable.groups:
            ungrouped.append(index)
            continue
        for group, intra in tunable.groups:
            group_priority = group.priority(key)
            if group_priority < 0:
                continue
            level = intra(key)
            if level < 0:
                continue
            buckets.setdefault(group_priority, {}).setdefault(level, []).append(index)

    batches: list[tuple[int, ...]] = []
    tried: set[int] = set()
    pending_ungrouped = ungrouped
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
