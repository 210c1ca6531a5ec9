"""Groups the gate reported for one reason, shown as one entry where more than a few are:
their names, the first few named and the rest counted, and their one message."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from pathlib import PurePath

from pytest_autotune.report import GroupSummary
from pytest_autotune.report.names import LATER_CALL, decision_name, without_parameters

SAME_REPORT_SHOWN = 3
"""How many groups reported for one reason are shown each as its own entry, and named
when more are shown as one: a first `--autotune` of a test over 100 sizes printed its
one "no baseline" message 100 times."""


def alike(summaries: Iterable[GroupSummary]) -> list[list[GroupSummary]]:
    """`summaries` with one verdict and one message together (messages that differ only in
    the cache file each looked in are one), in their order of each reason's first group.
    The terminal and the step summary show more than `SAME_REPORT_SHOWN` of one reason as
    one entry (`alike_names`, `one_message`)."""
    together: dict[tuple[str, str], list[GroupSummary]] = {}
    for summary in summaries:
        reason = _NO_FILE.sub(" (no file)", summary.message)
        together.setdefault((summary.verdict.value, reason), []).append(summary)
    return list(together.values())


def alike_names(groups: Sequence[GroupSummary]) -> str:
    """The first `SAME_REPORT_SHOWN` of `groups` named, the rest counted."""
    names = [decision_name(s.group, s.key) for s in groups]
    if len(names) <= SAME_REPORT_SHOWN:
        return ", ".join(names)
    return f"{', '.join(names[:SAME_REPORT_SHOWN])} and {len(names) - SAME_REPORT_SHOWN} more"


_NO_FILE = re.compile(r" \(no file (?P<path>.+?)\)(?=;|$)", re.MULTILINE)
"""The cache file a "no baseline" message says it looked in (`gate.judge`): one of each
test, so that a first `--autotune` of 150 groups over 60 test files printed 150 messages
alike but for it, 300 lines."""


_OF_ONE_TEST = "; baselines of this test exist for "
"""How a "no baseline" message names the other devices its test has baselines for
(`gate.judge`): said once for the groups of several tests, it named one test."""


def one_message(groups: Sequence[GroupSummary]) -> str:
    """The message of groups reported for one reason: theirs, where they are one; where
    they differ only in the cache file each looked in, their folder in its place. The
    groups' other devices are "of these tests" where the groups are of several."""
    messages = {s.message for s in groups}
    if len(messages) == 1:
        message = groups[0].message
    else:
        folders = {
            str(PurePath(found["path"]).parent)
            for s in groups
            for found in _NO_FILE.finditer(s.message)
        }
        where = (
            f"no file of theirs in {folders.pop()}" if len(folders) == 1 else "no file of theirs"
        )
        message = _NO_FILE.sub(f" ({where})", groups[0].message)
    if len({_test_of(s.group) for s in groups}) > 1:
        message = message.replace(_OF_ONE_TEST, "; baselines of these tests exist for ")
    return message


def _test_of(group: str) -> str:
    """The test a group's name names, without the group's parameters (`t.py::test_s` of
    `t.py::test_s[n8]`) or the number of a later `autotune` fixture call (of
    `t.py::test_s (call 2)`: four calls of one test read "of these tests"); a tuner's name
    as it is."""
    return without_parameters(LATER_CALL.sub("", group))
