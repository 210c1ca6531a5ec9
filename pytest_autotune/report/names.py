"""How a decision is named and ordered wherever it is shown: its key as text, its group's
node id with and without parameters, and the natural order of numbers in them."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from typing import Any

from pytest_autotune.report import GroupSummary
from pytest_autotune.tune.key import serialize_key_json


def key_text(key: Any) -> str:
    """A key's JSON value as people read it: a string as itself, anything else as JSON.

    The one form of a key everywhere it is shown (terminal, Markdown, HTML, CLI), so the key
    a reader finds in the log is the key they search for in the report. A string with a
    line break or a tab (`key=` returns what it likes) is shown as JSON too, escaped: as
    itself it broke the terminal's table in two. Letters beyond ASCII read as themselves
    inside JSON too (`[1024,"naïve"]`, as the key "naïve" reads), unless one is a character
    no terminal shows."""
    if isinstance(key, str) and key.isprintable():
        return key
    stable = serialize_key_json(key)
    readable = json.dumps(json.loads(stable), ensure_ascii=False, separators=(",", ":"))
    return readable if readable.isprintable() else stable


_DIGITS = re.compile(r"(\d+)")


def natural_key(text: str) -> tuple[tuple[int, int | str], ...]:
    """Sort key that reads numbers as numbers: `n16384` before `n131072`. A run of
    decimal digits (what `\\d` matches) is a number; superscripts such as `2¹⁰`, which
    `str.isdigit` calls digits but `int` refuses, are text."""
    return tuple(
        (1, int(part)) if part.isdecimal() else (0, part) for part in _DIGITS.split(text) if part
    )


def decision_name(group: str, key: str) -> str:
    """How one decision (a group and a key) is named: the group alone when its parameters
    are the key (`test_saxpy[n1024]`, key `n1024`), else the group and the key, so a name
    never repeats itself and two keys of one test are never one name."""
    return group if group.endswith(f"[{key}]") else f"{group} [{key}]"


def node_name(node_id: str) -> str:
    """A node id's last name with its parameters, as pytest's `item.name` is
    (`test_sum[a::b]` of `tests/t.py::TestX::test_sum[a::b]`): the ids in the brackets are
    the user's and may hold `::` themselves, so only the part before them is split."""
    _, colons, rest = node_id.partition("::")
    names, bracket, parameters = (rest if colons else node_id).partition("[")
    return names.rsplit("::", 1)[-1] + bracket + parameters


def without_parameters(node_id: str) -> str:
    """A node id without its parameters' ids: the test function's
    (`tests/[gpu]/t.py::test_sum` of `tests/[gpu]/t.py::test_sum[n1-fast]`). They begin at
    the first `[` after the path, which may hold `[` itself (a folder `[gpu]`): cut at the
    path's, every test under it was one tuner, one cache file, their keys merged."""
    path, colons, names = node_id.partition("::")
    return path + colons + names.split("[", 1)[0] if colons else node_id


def ordered(summaries: Iterable[GroupSummary]) -> list[GroupSummary]:
    """By test, then by parameters and key, numbers read as numbers: the order pytest-xdist
    workers finish in must not show, and `n16384` comes before `n131072`."""
    return sorted(summaries, key=lambda s: group_order(s.group, s.key))


def group_order(group: str, key: str) -> tuple[Any, ...]:
    """The sort key of a group and key: the test's node id, then its parameters and the key,
    compared naturally."""
    test = without_parameters(group)
    parameters = group[len(test) + 1 :]
    return (natural_key(test), natural_key(parameters), natural_key(key))


LATER_CALL = re.compile(r" \(call \d+\)$")
"""How `fixture.call_group` names a test's second and later `autotune` fixture calls: the
test's node id, then ` (call 2)` and so on."""
