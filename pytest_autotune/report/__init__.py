"""What a run reports: one `GroupSummary` per tuned group, and the table every renderer shows.

The terminal summary, the GitHub step summary and the pytest-benchmark file all read the
same summaries, and the two tables the same cells (`summary_row`), so they can never
disagree about a number. A session reads each summary from its group's record
(`pytest_autotune.group_record`), which is what travels from pytest-xdist workers.
"""

from __future__ import annotations

import json
import re
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass
from pathlib import PurePath
from typing import Any

# The verdicts module, not the gate package: the gate imports `report.figures`, so this
# package may run while the gate is still loading.
from pytest_autotune.gate.verdicts import Comparison, Verdict
from pytest_autotune.report.figures import format_fraction, format_interval
from pytest_autotune.tune.benchmark import SampleStats
from pytest_autotune.tune.check_result import RAISED
from pytest_autotune.tune.errors import AutotuneErrorKind
from pytest_autotune.tune.key import serialize_key_json
from pytest_autotune.tune.log import format_duration

__all__ = [
    "COLUMNS",
    "INTENDED",
    "LATER_CALL",
    "PROBLEM_PREFIXES",
    "RIGHT_ALIGNED",
    "SAME_REPORT_SHOWN",
    "CandidateRow",
    "GroupSummary",
    "alike",
    "alike_names",
    "decision_name",
    "error_text",
    "failed_checks",
    "failed_checks_text",
    "failures",
    "format_roof",
    "group_order",
    "key_text",
    "natural_key",
    "node_name",
    "one_message",
    "ordered",
    "raised_in_checks",
    "reason_in_a_word",
    "stopped_text",
    "summary_row",
    "verdict_counts",
    "verdict_text",
    "without_parameters",
]


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


@dataclass(frozen=True, slots=True)
class CandidateRow:
    """One candidate of a group as tuned: its samples (seconds), or the error it failed
    with."""

    name: str
    median: float | None = None
    error: str | None = None
    check_passed: bool | None = None
    """The output check: None when checks did not run."""
    samples: tuple[float, ...] = ()
    """The tuning samples the median comes from (the warm-up biased first one left out)."""
    device: float | None = None
    """Seconds of device work of its latest sample, where the client tells it apart (CUDA)."""
    enqueue: float | None = None
    """Seconds the host took to enqueue one eager call of it, where measured (CUDA)."""
    test_id: str | None = None
    """The node id of its own test item, where it has one (`test_saxpy[n1024-float4]`)."""
    expected_to_fail: bool = False
    """Its test is marked `xfail`: a failed check there is what the mark expects."""
    skipped: bool = False
    """It declined the key, or its test is marked not to run here: `error` says why, and
    no error it is."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "samples", tuple(self.samples))


@dataclass(frozen=True, slots=True)
class GroupSummary:
    """The outcome of one tuned group, as the summary, the step summary and the pytest-benchmark
    file show it.

    `group` names the test function (`tests/test_sum.py::test_sum`) or the tuner, `key` the
    key within it; `samples` are the winner's precise measurement in seconds, empty when
    nothing was measured.
    """

    group: str
    key: str
    winner: str | None
    verdict: Verdict
    failed: bool
    message: str = ""
    samples: tuple[float, ...] = ()
    fraction_of_roof: float | None = None
    comparison: Comparison | None = None
    candidates: tuple[CandidateRow, ...] = ()
    device_id: str = ""
    roof: str | None = None
    """Which roof `fraction_of_roof` is of: a memory level (L1, L2, L3, DRAM, HBM) or a
    compute unit ("fp32 compute")."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "samples", tuple(self.samples))
        object.__setattr__(self, "candidates", tuple(self.candidates))

    @property
    def median(self) -> float | None:
        """The winner's median in seconds, None when nothing was measured."""
        return SampleStats.of(self.samples).median if self.samples else None

    def samples_of(self, candidate: CandidateRow) -> tuple[float, ...]:
        """The samples a candidate is shown with: the winner's precise measurement where
        there is one (the number the gate judged, so every table agrees with the summary
        row), every other candidate's tuning samples."""
        if candidate.name == self.winner and self.samples:
            return self.samples
        return candidate.samples


COLUMNS = ("group", "key", "winner", "median", "roof", "delta vs baseline", "verdict")
"""The summary table's header; "roof" is the fraction of the binding roof reached."""

RIGHT_ALIGNED = frozenset({"median", "roof"})
"""The columns of numbers, which line up on their last digit in the terminal's and the
Markdown summary's tables; names and intervals read from the left."""


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


def format_roof(fraction: float | None, roof: str | None) -> str:
    """The fraction of the roof reached and which roof binds (`90.1% fp32 compute`,
    `13.9% L3`), as every view shows the winner's."""
    return format_fraction(fraction) + (f" {roof}" if roof and fraction is not None else "")


def summary_row(summary: GroupSummary) -> tuple[str, ...]:
    """The cells of one group's row of the summary table, under `COLUMNS`.

    A failed verdict is in capitals (`REGRESSION`, or `NO BASELINE` in strict mode), so the
    row that broke the build is found at a glance in a log without colour.
    """
    return (
        summary.group,
        summary.key,
        summary.winner or "-",
        format_duration(summary.median) if summary.median is not None else "-",
        format_roof(summary.fraction_of_roof, summary.roof),
        format_interval(summary.comparison) if summary.comparison is not None else "-",
        verdict_text(summary.verdict.value, summary.failed),
    )


def verdict_text(verdict: str, failed: bool) -> str:
    """A verdict as shown: in capitals when it fails the gate, whatever its name."""
    return verdict.upper() if failed else verdict


def verdict_counts(summaries: Iterable[GroupSummary]) -> str:
    """How many groups got each verdict, in the verdicts' order: `3 pass, 1 too noisy`.
    A verdict that failed the gate (strict mode) is counted in capitals, as in the table."""
    counts: dict[tuple[Verdict, bool], int] = {}
    for summary in summaries:
        counts[summary.verdict, summary.failed] = (
            counts.get((summary.verdict, summary.failed), 0) + 1
        )
    order = {verdict: i for i, verdict in enumerate(Verdict)}
    return ", ".join(
        f"{n} {verdict_text(verdict.value, failed)}"
        for (verdict, failed), n in sorted(counts.items(), key=lambda c: (order[c[0][0]], c[0][1]))
    )


PROBLEM_PREFIXES = ("error:", "warning:")
"""How the session's lines that may fail a run, or leave groups out of it, begin; the
others ("note: ...", "updated FILE", "stale: FILE ...") are notes."""


def stopped_text(reason: str) -> str:
    """What every view says of a run that stopped before every test ran (`RunInfo.stopped`):
    the groups it shows are not the whole run."""
    return f"stopped early ({reason}): the groups tuned before it are shown, no others"


def reason_in_a_word(error: str | None, skipped: bool = False) -> str:
    """Why a candidate has no numbers, in a word or two, where a table or a chart has no
    room for its whole error: the head of its error when short (`not reached`, `hopeless`,
    `RuntimeError`), else `error`, or `skipped` for a candidate that declined the key
    (`AutotuneSkip`), which is no error."""
    if error is None:
        return "not measured"
    head = error.split(":", 1)[0].strip()
    return head if head and len(head) <= 24 else "skipped" if skipped else "error"


INTENDED = (
    "a slowdown that is intended (a trade-off, a kernel made exact): pytest --autotune-update"
    " records this code's times as the baseline; commit the cache files it names"
)
"""Said once under the gate's failures where one is a regression, in the terminal and the
step summary: every other verdict that asks for an update says so, and a regression was
the one that did not."""


def failures(summaries: Iterable[GroupSummary]) -> list[GroupSummary]:
    """The groups that fail the gate, in the table's order."""
    return [s for s in ordered(summaries) if s.failed]


def failed_checks(summary: GroupSummary) -> list[str]:
    """The candidates of a group that failed their checks, but for those whose `xfail`
    marks expect it: each fails its own test, whatever the gate said of the winner."""
    return [
        c.name for c in summary.candidates if c.check_passed is False and not c.expected_to_fail
    ]


def failed_checks_text(names: Sequence[str], raised: Collection[str] = ()) -> str:
    """What a report says of candidates that failed their checks: their tests fail. Those
    `raised` names raised there: no output was compared, so none "failed its check"."""
    if len(names) == 1:
        how = "raised" if names[0] in raised else "failed its check"
        return f"candidate {names[0]} {how}: its test fails"
    if not names:
        return ""
    if not raised:
        return f"{len(names)} candidates failed their checks: their tests fail ({', '.join(names)})"
    if set(names) <= set(raised):
        return f"{len(names)} candidates raised: their tests fail ({', '.join(names)})"
    each = ", ".join(f"{n} {'raised' if n in raised else 'failed its check'}" for n in names)
    return f"{len(names)} candidates failed: their tests fail ({each})"


_EXCEPTION_TEXT = re.compile(r"[A-Za-z_][\w.]*:(\s|$)")
"""How the message of an exception a candidate raised while timed begins: its type's name
("ValueError: ..."), where a failed check, a stop at the time limit or a group left
untuned, errors of the same kind, read in words ("failed its check: ...")."""


def error_text(kind: str, message: str) -> str:
    """A candidate's error as a report or `show` gives it: what it raised ("raised
    ValueError: ..."), any other error of kind "unknown" by its message alone ("failed its
    check: ...", not "raised failed its check: ..."; the kind says nothing to a reader),
    else the error's kind and its message."""
    if kind == AutotuneErrorKind.UNKNOWN.value and message:
        raised = not message.startswith(RAISED) and _EXCEPTION_TEXT.match(message)
        return RAISED + message if raised else message
    return kind + (f": {message}" if message else "")


def raised_in_checks(summary: GroupSummary) -> set[str]:
    """The candidates of a group that raised in their checks (see `failed_checks`)."""
    return {c.name for c in summary.candidates if c.error and c.error.startswith(RAISED)}


REPORTED = frozenset(
    {
        Verdict.NO_BASELINE,
        Verdict.NOT_COMPARABLE,
        Verdict.TOO_NOISY,
        Verdict.REGRESSION,
        Verdict.FLOOR,
    }
)
"""The verdicts the gate reports without failing: the first three outside strict mode, and
a regression or a missed floor that a `pytest_autotune_verdict` hook let pass (its example
"reports the regressions of a kernel known to be unstable without failing the run")."""


def reported(summaries: Iterable[GroupSummary]) -> list[GroupSummary]:
    """The groups the gate reported without failing, in the table's order: the table's
    word ("no baseline") names neither why (the devices that have one, the interval that
    is too wide) nor what helps, which their messages do."""
    return [s for s in ordered(summaries) if s.verdict in REPORTED and not s.failed and s.message]


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


LATER_CALL = re.compile(r" \(call \d+\)$")
"""How `fixture.call_group` names a test's second and later `autotune` fixture calls: the
test's node id, then ` (call 2)` and so on."""
