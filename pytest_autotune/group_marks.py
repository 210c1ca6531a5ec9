"""The marks of a group's candidates, each read from its own test, or from its
`pytest.param` where its test was not collected: those not to run here (`not_run`), those
expected to fail (`expected_to_fail`), and each one's warning filters (`warning_marks`)."""

from __future__ import annotations

import os
import platform
import sys
from collections.abc import Iterable, Mapping
from typing import Any

import pytest

from pytest_autotune.collection import GROUP_ITEMS, ITEM, NOT_RUN, SKIPPED_AT_SETUP


def warning_marks(config: pytest.Config, group: str) -> dict[str, tuple[str, ...]]:
    """The filters of each candidate's test's `filterwarnings` marks in `group`, by
    candidate name, in the order pytest applies them to the test (`warning_marks.py`).

    A candidate whose item was not collected (a node id names only some of the group's
    tests) has a collected test's filters, that test's candidate's `pytest.param` marks
    replaced by its own: without them, tuning ran it under the project's filters alone,
    and where `filterwarnings = error` made its warning its failure, an update recorded
    another winner."""
    items = config.stash.get(GROUP_ITEMS, {}).get(group, [])
    found = {
        item.stash[ITEM].candidate: tuple(
            arg for mark in item.iter_markers("filterwarnings") for arg in mark.args
        )
        for item in items
    }
    if items:
        first = items[0]
        function = first.stash[ITEM].function
        for name, _ in function.candidates:
            if name not in found:
                marks = _filter_marks_of(first, function.marks, name)
                found[name] = tuple(arg for mark in marks for arg in mark.args)
    return found


def _filter_marks_of(
    item: pytest.Item, marks: Mapping[str, tuple[pytest.Mark, ...]], name: str
) -> list[pytest.Mark]:
    """The `filterwarnings` marks of candidate `name`'s test, made from `item`'s, a test of
    the same group: its own marks (the function's, then its parameters') with its
    candidate's `pytest.param` marks (`marks`) replaced by `name`'s, then its parents'."""
    every = list(item.iter_markers("filterwarnings"))
    count = sum(1 for mark in item.own_markers if mark.name == "filterwarnings")
    own, parents = every[:count], every[count:]
    at = len(own)
    for mark in reversed(marks.get(item.stash[ITEM].candidate, ())):
        if mark.name == "filterwarnings" and mark in own:
            at = len(own) - 1 - own[::-1].index(mark)
            del own[at]
    theirs = [mark for mark in marks.get(name, ()) if mark.name == "filterwarnings"]
    return own[:at] + theirs + own[at:] + parents


def expected_to_fail(config: pytest.Config, group: str) -> frozenset[str]:
    """The candidates of `group` whose tests are marked `xfail` here (a true condition, run):
    their failed checks are what the project expects, which the report does not raise.

    A candidate whose item was not collected (a node id names only some of the group's
    tests) is judged by its `pytest.param`'s marks, as in `not_run`: it was otherwise the
    reference that the selected candidate failed its check against, and the winner."""
    if not _marks_skip(config) or config.getoption("runxfail"):
        return frozenset()
    items = config.stash.get(GROUP_ITEMS, {}).get(group, [])
    marked = {
        item.stash[ITEM].candidate
        for item in items
        if any(_condition_holds(item, mark) for mark in item.iter_markers("xfail"))
    }
    if items:
        collected = {item.stash[ITEM].candidate for item in items}
        for name, own in items[0].stash[ITEM].function.marks.items():
            xfails = (mark for mark in own if mark.name == "xfail")
            if name not in collected and any(_condition_holds(items[0], m) for m in xfails):
                marked.add(name)
    return frozenset(marked)


def not_run(config: pytest.Config, group: str) -> Mapping[str, str]:
    """The candidates of `group` whose items are marked not to run here, each with the
    mark's reason: a `skip`, a true `skipif`, an `xfail(run=False)`, on the candidate's
    `pytest.param` or added by a conftest. They are never tuned nor the default reference,
    as pytest leaves their tests out: a candidate skipped as wrong or as crashing on this
    machine was otherwise the reference the others were checked against, or the winner.

    A candidate whose item was not collected (a node id or `--lf` names only some of the
    group's tests) is judged by its `pytest.param`'s marks: its skip mark is no less true.

    So is one whose test a fixture skipped at its setup before now (`SKIPPED_AT_SETUP`): a
    "needs feature X" fixture's skip of the first candidate left it the reference every
    other candidate failed its check against, and the winner.

    Read when the group first runs, once every hook has added its marks."""
    skipped = config.stash.get(SKIPPED_AT_SETUP, {}).get(group, {})
    marked = _marked_not_to_run(config, group)
    return {**skipped, **marked} if skipped else marked


def note_skipped_at_setup(item: pytest.Item, reason: str) -> None:
    """A candidate's test skipped at its setup, by a fixture (`pytest.skip()`, or
    `pytest.xfail()`): from now on its group leaves it out, as one marked to skip
    (`not_run`). A group tuned before cannot: it ran the candidate on its first test's
    fixtures."""
    spec = item.stash.get(ITEM, None)
    if spec is not None:
        skipped = item.config.stash.setdefault(SKIPPED_AT_SETUP, {})
        skipped.setdefault(spec.group, {}).setdefault(spec.candidate, reason)


def _marked_not_to_run(config: pytest.Config, group: str) -> Mapping[str, str]:
    known = config.stash.setdefault(NOT_RUN, {})
    if not _marks_skip(config):
        return {}
    if group not in known:
        items = config.stash.get(GROUP_ITEMS, {}).get(group, [])
        out: dict[str, str] = {}
        for item in items:
            why = _marked_out(item, item.iter_markers())
            if why is not None:
                out.setdefault(item.stash[ITEM].candidate, why)
        if items:
            collected = {item.stash[ITEM].candidate for item in items}
            marks = items[0].stash[ITEM].function.marks
            for name, own in marks.items():
                why = None if name in collected else _marked_out(items[0], own)
                if why is not None:
                    out[name] = why
        known[group] = out
    return known[group]


def _marks_skip(config: pytest.Config) -> bool:
    """Whether pytest acts on `skip`, `skipif` and `xfail` marks: under `-p no:skipping` it
    runs every test whatever its marks, and has no --runxfail option (reading it ended the
    run in an INTERNALERROR); so does the group then."""
    return bool(config.pluginmanager.hasplugin("skipping"))


def _marked_out(item: pytest.Item, marks: Iterable[pytest.Mark]) -> str | None:
    """Why pytest skips a test of these marks, or does not run it (`xfail(run=False)`),
    as its reason says; None where it runs. `item` is a test of the function, whose
    namespace a string condition is read in."""
    runxfail = item.config.getoption("runxfail")
    for mark in marks:
        if mark.name == "skip":
            return _reason(mark, "unconditional skip")
        if mark.name == "skipif" and _condition_holds(item, mark):
            return _reason(mark, "skipif")
        xfail_not_run = mark.name == "xfail" and mark.kwargs.get("run", True) is False
        if xfail_not_run and not runxfail and _condition_holds(item, mark):
            return _reason(mark, "xfail(run=False)")
    return None


def _reason(mark: pytest.Mark, default: str) -> str:
    """A skip mark's reason, as pytest shows it: `reason=`, a `skip`'s positional one, or
    a condition given as a string."""
    reason = mark.kwargs.get("reason")
    if reason is None and mark.name == "skip" and mark.args:
        reason = mark.args[0]
    if reason is None:
        conditions = (mark.kwargs["condition"],) if "condition" in mark.kwargs else mark.args
        strings = [c for c in conditions if isinstance(c, str)]
        reason = f"condition: {strings[0]}" if strings else default
    return str(reason)


def _condition_holds(item: pytest.Item, mark: pytest.Mark) -> bool:
    """A `skipif` or `xfail` mark's condition as pytest reads it: none is true, a string is
    evaluated in the test module's namespace. One pytest cannot read either reads as
    false: pytest reports it on that test."""
    conditions = (mark.kwargs["condition"],) if "condition" in mark.kwargs else mark.args
    if not conditions:
        return True
    namespace: dict[str, Any] = {"os": os, "sys": sys, "platform": platform, "config": item.config}
    for extra in reversed(item.ihook.pytest_markeval_namespace(config=item.config)):
        namespace.update(extra)
    namespace.update(getattr(getattr(item, "obj", None), "__globals__", {}))
    try:
        return any(bool(eval(c, namespace)) if isinstance(c, str) else bool(c) for c in conditions)
    except Exception:
        return False
