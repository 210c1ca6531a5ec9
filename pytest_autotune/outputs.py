"""What a session produces and writes at its end: the groups' records (one per group, the
one value that travels from a pytest-xdist worker to the controller) and what is read from
them: the terminal summary, and the files: records, HTML report, pytest-benchmark JSON,
step summary and, with `--autotune-update`, the cache files.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from pytest_autotune.cache_updates import (
    CacheUpdate,
    SavingInterrupted,
    fold_journals,
    kept_few_sessions,
    update_entry,
    write_caches,
)
from pytest_autotune.gate import Verdict
from pytest_autotune.group_record import group_summary
from pytest_autotune.moved_baselines import moved_baselines
from pytest_autotune.plugin_settings import PluginSettings
from pytest_autotune.quiet import hand_back, handed_back
from pytest_autotune.report import PROBLEM_PREFIXES, GroupSummary, stopped_text
from pytest_autotune.report.alike import SAME_REPORT_SHOWN, alike, alike_names, one_message
from pytest_autotune.report.extra import RecordExtra
from pytest_autotune.report.failures import INTENDED, XFAILED
from pytest_autotune.report.names import decision_name, ordered
from pytest_autotune.stale import Collected, review
from pytest_autotune.tune.errors import AutotuneErrorKind
from pytest_autotune.tune.files import NAME_BYTES, why_unwritable
from pytest_autotune.tune.key import serialize_key_json
from pytest_autotune.tune.log import format_duration
from pytest_autotune.tune.records import AutotuneRecord, Recorder
from pytest_autotune.tune.run import RunInfo

_REPORT_WRITTEN = "report: "
"""How the summary's line naming the HTML report written begins."""

_UPDATE_VERDICTS = frozenset({Verdict.UPDATED, Verdict.NOT_RECORDED})
"""The verdicts of an update, whose messages (what it did with each baseline) follow the
table."""


def _unsaved(record: AutotuneRecord, unsaved: Mapping[tuple[str, str], str]) -> AutotuneRecord:
    """An updated group's record whose cache file could not be written: "not recorded",
    as the table must not say a file was refreshed that was not."""
    return _not_recorded(record, unsaved.get((record.device_id, record.tuner)))


def _not_recorded(record: AutotuneRecord, error: str | None) -> AutotuneRecord:
    """An updated group's record whose entry was not written, for `error`."""
    if error is None or record.extra.get("verdict") != Verdict.UPDATED.value:
        return record
    extra = {**record.extra, "verdict": Verdict.NOT_RECORDED.value}
    extra["message"] = f"not recorded: {error}"
    return dataclasses.replace(record, extra=extra)


def _group(record: AutotuneRecord) -> str | None:
    """A record's group, read without validating its whole extra (called per record, in
    sorts and filters)."""
    group = record.extra.get("group")
    return group if isinstance(group, str) else None


def _candidate_failed(record: AutotuneRecord) -> bool:
    """Whether a candidate of the group raised or failed its check (a decline is no failure)."""
    return any(
        isinstance(result.get("error"), dict)
        and result["error"].get("kind") != AutotuneErrorKind.SKIP.value
        for result in record.results
    )


def shared_entries(records: Sequence[AutotuneRecord]) -> dict[str, str]:
    """The groups whose cache entry (device, tuner, key and candidate list) an earlier
    group holds, with why, as the session refuses the second of two such groups of one
    process (`Session._collision`). Two tests that tune one tuner's set at one key run on
    two pytest-xdist workers, where neither saw the other: the run passed, both wrote the
    one entry, and each later gate compared one test's inputs with the other's time."""
    owners: dict[tuple[str, str, str, str], str] = {}
    shared: dict[str, str] = {}
    # By group, so that which of two workers reported first decides nothing.
    for record in sorted(records, key=lambda r: _group(r) or ""):
        group = _group(record)
        if group is None:
            continue
        key = serialize_key_json(record.key)
        owner = owners.setdefault((record.device_id, record.tuner, key, record.checksum), group)
        if owner != group:
            shared[group] = (
                f"{group}: its key {key} of {record.tuner} is the one {owner} tuned, on"
                " another pytest-xdist worker; one cache entry cannot hold the baselines of"
                " both, so tune this set at this key in one test"
            )
    return shared


class SessionOutput:
    """What the session's groups produced, and its writing at the end.

    Each group is kept as its record alone (`group_record`); the summaries, the cache
    updates and the devices are read from the records when needed. A pytest-xdist worker
    sends its records and notes; the controller adds them as its own."""

    def __init__(self, settings: PluginSettings, notes: list[str]) -> None:
        self.settings = settings
        self.notes = notes
        """Lines for the end of the summary: warnings, notes, what was written."""
        self.records: list[AutotuneRecord] = []
        """One per group, in the order the groups were tuned (or their workers' came)."""
        self.run: RunInfo | None = None
        self.expected_failures: set[str] = set()
        """Groups with a test that failed as its `xfail` mark expected: pytest's outcome of
        that test, not the gate's verdict, decides whether the run fails on them, unless
        another of their tests failed outright (`failed_tests`)."""
        self.failed_tests: set[str] = set()
        """Groups with a test that failed outright (not as an `xfail` mark expected)."""
        self.collected: Collected | None = None
        """What a tuning session collected, for an update's stale entries and the baselines
        of a test renamed or moved (`stale`); None where nothing was collected here (a
        pytest-xdist controller, until its workers report)."""
        self.stopped: str | None = None
        """Why the session stopped before every test ran (`RunInfo.stopped`), set before
        `finish`: every output then says its groups are not the whole run."""
        self.interrupted = False
        """Whether Ctrl-C stopped the saving of the cache files (`SavingInterrupted`) or the
        writing of an output (`_write`): the session's exit status is then pytest's for an
        interrupted run."""
        self.hand_back: Path | None = None
        """A pytest-xdist worker's hand-back file (`quiet.hand_back`), where each record and
        test failure is noted as it comes, for the controller to read should the worker
        crash before the end of its session; None elsewhere."""

    def add(self, record: AutotuneRecord) -> GroupSummary:
        """Keep a group's record; its summary line."""
        self.records.append(record)
        if self.hand_back is not None:
            hand_back(self.hand_back, {"record": record.to_json()})
        return group_summary(record)

    def note_tuning(self, crashed: AutotuneRecord) -> None:
        """A group's tuning starts: `crashed` is its record should the worker crash before
        the group's own record follows in the hand-back file (`handed_back_output`)."""
        if self.hand_back is not None:
            hand_back(self.hand_back, {"tuning": crashed.to_json()})

    def note_tuned(self) -> None:
        """The tuning `note_tuning` noted ended, as it returned or raised (a group whose
        every candidate declined its key keeps no record)."""
        if self.hand_back is not None:
            hand_back(self.hand_back, {"tuned": True})

    def note_test_failure(self, group: str, expected: bool) -> None:
        """A test of `group` failed, as its `xfail` mark expected or not."""
        (self.expected_failures if expected else self.failed_tests).add(group)
        if self.hand_back is not None:
            hand_back(self.hand_back, {"failed_test": group, "expected": expected})

    def summaries(self) -> list[GroupSummary]:
        return [group_summary(record) for record in self.records]

    def updates(self, leaving_out: Mapping[str, str] | None = None) -> list[CacheUpdate]:
        """The cache entries `--autotune-update` writes: one per group that measured, but
        for the groups `leaving_out` names (`shared_entries`)."""
        records = [r for r in self.records if _group(r) not in (leaving_out or {})]
        return [u for u in map(update_entry, records) if u is not None]

    def _failing_tests(self) -> dict[str, str]:
        """The groups an update leaves as they are because a test of theirs failed for what
        no candidate's result explains (an `autotune` fixture's test whose assertion on the
        winner's output failed), with why: a refresh to commit is what a passing run
        measured. A candidate that failed its check or raised is in the group's results,
        its test failing by name, and the update records the winner among the others, as
        the gate's message on a broken baseline winner says it will."""
        explained = {_group(r) for r in self.records if _candidate_failed(r)}
        tuned = {_group(r) for r in self.records}
        return {
            group: "a test of the group failed after its call (an update records what"
            " passing tests measured)"
            for group in self.failed_tests
            if group in tuned and group not in explained
        }

    def devices(self) -> dict[str, Mapping[str, Any]]:
        """Each device's block (id, fingerprint, peaks), as the first of its records that
        measured on it has it. A group kept unmeasured (an ERROR: its `key=` raised, its
        worker crashed in its tuning) carries the id alone; where it came first, an update
        wrote that id as the device block of every file, their fingerprint and peaks lost."""
        devices: dict[str, Mapping[str, Any]] = {}
        for record in self.records:
            device = RecordExtra.from_json(record.extra).device
            held = devices.get(record.device_id)
            if device is not None and (held is None or held.keys() <= {"id"}):
                devices[record.device_id] = device
        return devices

    def to_worker_output(self) -> dict[str, Any]:
        """A pytest-xdist worker's output: one record per group, the notes, and which groups'
        tests failed, as expected or not (pytest's outcomes, which no record holds)."""
        output = {
            "records": [r.to_json() for r in self.records],
            "notes": self.notes,
            "expected_failures": sorted(self.expected_failures),
            "failed_tests": sorted(self.failed_tests),
        }
        if self.collected is not None:  # what stale entries and moved baselines are judged by
            output["collected"] = self.collected.to_json()
        return output

    @staticmethod
    def handed_back_output(path: Path, crashed: bool) -> dict[str, Any] | None:
        """The output a worker that ended without handing it back had noted in its
        hand-back file (`hand_back`), in the form of `to_worker_output`, its notes and what
        it collected left out; with the ERROR record of the group it was tuning where it
        `crashed` there. None where it noted nothing."""
        entries = handed_back(path)
        if not entries:
            return None
        failures = [e for e in entries if "failed_test" in e]
        records = [e["record"] for e in entries if "record" in e]
        finished = len(records)
        if crashed and "tuning" in entries[-1]:  # the group it crashed in, which kept none
            records.append(entries[-1]["tuning"])
        return {
            "records": records,
            "finished": finished,
            "notes": [],
            "expected_failures": sorted({e["failed_test"] for e in failures if e["expected"]}),
            "failed_tests": sorted({e["failed_test"] for e in failures if not e["expected"]}),
        }

    def merge_worker_output(self, output: Mapping[str, Any]) -> None:
        records = [AutotuneRecord.from_json(record) for record in output["records"]]
        # A group a worker finished before it crashed (in another group's tuning, or in a
        # test's setup) is tuned again by the worker given its other tests: the later
        # tuning, which those tests were judged by, replaces the one handed back, or the
        # group had two rows, two records and two verdicts.
        again = {_group(record) for record in records} - {None}
        if again:
            self.records = [r for r in self.records if _group(r) not in again]
        for record in records:
            self.add(record)
        # Each worker notes what it meets, a GPU that `auto` could not use among them: the
        # summary says it once.
        self.notes.extend(note for note in output["notes"] if note not in self.notes)
        self.expected_failures.update(output.get("expected_failures", ()))
        self.failed_tests.update(output.get("failed_tests", ()))
        if output.get("collected") is not None:
            self.collected = (self.collected or Collected()).joined(output["collected"])

    def expected(self, summary: GroupSummary) -> bool:
        """Whether a group's gate failure is one its tests' `xfail` marks expected."""
        return summary.group in self.expected_failures and summary.group not in self.failed_tests

    def finish(self) -> bool:
        """Write what the session produced; True when a group failed the gate (but for one
        whose tests failed only as their `xfail` marks expected, `expected`) or an output
        could not be written (each such output is named in one line of the summary)."""
        settings = self.settings
        shared = shared_entries(self.records)
        self.notes.extend(f"error: {message}" for message in shared.values())
        taken_over: set[Path] = set()
        unsaved: dict[tuple[str, str], str] = {}
        unfolded: dict[tuple[str, str], str] = {}
        failing = self._failing_tests() if settings.update else {}
        if settings.update:
            updates = self.updates({**failing, **shared})
            try:
                unsaved = write_caches(
                    updates,
                    self.devices(),
                    settings,
                    self.notes,
                    kept_few_sessions(self.records),
                    taken_over,
                )
            except SavingInterrupted as stop:
                # The other outputs are still written, as after any Ctrl-C, saying which
                # groups' files were not; nothing more is folded or pruned.
                unsaved, self.interrupted = stop.unsaved, True
            else:
                unfolded = fold_journals(self.records, updates, settings, self.notes)
        if unsaved:
            self.records = [_unsaved(record, unsaved) for record in self.records]
        if shared or failing:
            left_out = {**failing, **shared}
            self.records = [_not_recorded(r, left_out.get(_group(r) or "")) for r in self.records]
        pruned = True
        # Asked before a prune deletes the stale files that it finds a renamed test's in.
        moved = (
            moved_baselines(self.records, self.collected, settings)
            if self.collected is not None
            else []
        )
        if settings.update and self.collected is not None and not self.interrupted:
            lines, pruned = review(self.records, self.collected, settings, taken_over)
            self.notes.extend(lines)
        self.notes.extend(moved)
        summaries = self.summaries()
        if self.stopped is not None and summaries:
            self.notes.append(stopped_text(self.stopped))
        elif self.stopped is not None and self.collected is not None and self.collected.groups:
            # Stopped before its first group (`-x` on an ordinary test): no autotune section
            # at all read as though the run had nothing to tune, an update as though done.
            unwritten = ", and no cache file was written" if settings.update else ""
            self.notes.append(f"stopped early ({self.stopped}): no group was tuned{unwritten}")
        written = [
            not shared,
            not unsaved,
            not unfolded,
            pruned,
            self._write("records", settings.engine.record, self._write_records),
            self._write("report", settings.html, self._write_html),
            self._write("benchmark JSON", settings.benchmark_json, self._write_benchmark_json),
            self._write(
                "step summary", os.environ.get("GITHUB_STEP_SUMMARY"), self._write_step_summary
            ),
        ]
        return any(s.failed and not self.expected(s) for s in summaries) or not all(written)

    def _write(self, what: str, target: Any, write: Callable[[Any], None]) -> bool:
        """Write one output; a path the user gave that cannot be written is one line, not a
        traceback from the end of the session, and the other outputs are still written.
        So is Ctrl-C while it is written: escaping the end of the session, it was pytest's
        internal traceback, and the summary with the gate's verdicts was never shown."""
        if not target:
            return True
        # A path the user gave is shown as the summary's others are; a stream's name, or
        # the step summary's file, which GitHub names, as it is.
        show: Callable[[Path], str] = self.settings.relative if isinstance(target, Path) else str
        try:
            write(target)
        except OSError as exc:
            why = why_unwritable(exc, target, show)
        except KeyboardInterrupt:
            why, self.interrupted = "interrupted (Ctrl-C)", True
        else:
            return True
        self.notes.append(f"error: the {what} could not be written to {show(target)}: {why}")
        return False

    def _stamped_records(self) -> list[AutotuneRecord]:
        """The session's records, each carrying this run (one id, time and commit for all
        workers' records: the controller stamps them)."""
        if self.run is None:
            self.run = dataclasses.replace(
                RunInfo.current(self.settings.rootpath), stopped=self.stopped
            )
        return [dataclasses.replace(r, run=self.run, extra=self._xfailed(r)) for r in self.records]

    def _xfailed(self, record: AutotuneRecord) -> dict[str, Any]:
        """A record's extras, marked `xfailed` where its group failed the gate only as its
        tests' `xfail` marks expected: the terminal said so and the run did not fail, where
        the HTML report, which reads the records alone, listed it under "Failing"."""
        if not self.expected_failures:
            return record.extra
        summary = group_summary(record)
        if not (summary.failed and self.expected(summary)):
            return record.extra
        return {**record.extra, "xfailed": True}

    def _write_records(self, sink: Any) -> None:
        recorder = Recorder(sink)
        for record in self._stamped_records():
            recorder.record(record)

    def _write_html(self, path: Path) -> None:
        from pytest_autotune.report.html import write_html

        write_html(path, self._stamped_records(), stopped=self.stopped, notes=self._shown_notes())
        self.notes.append(f"{_REPORT_WRITTEN}{self.settings.relative(path)}")

    def _write_benchmark_json(self, path: Path) -> None:
        from pytest_autotune.report.benchmark_json import write_benchmark_json

        write_benchmark_json(path, self.summaries(), root=self.settings.rootpath)

    def _shown_notes(self) -> list[str]:
        """The notes a report file carries, as the terminal summary shows them beside its
        table: all but what the file says otherwise (the run stopped early) or of itself
        (where the report was written)."""
        said = stopped_text(self.stopped) if self.stopped is not None else None
        return [n for n in self.notes if n != said and not n.startswith(_REPORT_WRITTEN)]

    def _write_step_summary(self, path: str) -> None:
        summaries = self.summaries()
        shown = self._shown_notes()
        problems = [n for n in shown if n.startswith(PROBLEM_PREFIXES)]
        notes = [n for n in shown if not n.startswith(PROBLEM_PREFIXES)]
        if not summaries and not problems:
            return
        from pytest_autotune.report.markdown import STEP_SUMMARY_LIMIT, render_markdown

        # GitHub's limit is of the whole file, which the step's other commands may write to.
        used = os.path.getsize(path) if os.path.isfile(path) else 0
        with open(path, "a", encoding="utf-8", errors=NAME_BYTES) as out:
            out.write(
                render_markdown(
                    summaries,
                    expected=self.expected,
                    tests_failed=lambda summary: summary.group in self.failed_tests,
                    stopped=self.stopped,
                    problems=problems,
                    notes=notes,
                    limit=max(STEP_SUMMARY_LIMIT - used, 0),
                )
            )

    def summary_lines(self, stats: bool = False, candidates: bool = False) -> list[str]:
        """The terminal summary; `stats` adds every candidate's statistics table,
        `candidates` (under -v) each group's candidates in the summary table."""
        from pytest_autotune.report.terminal import (
            render_candidates,
            render_failures,
            render_reported,
            render_summary,
        )

        lines: list[str] = []
        summaries = self.summaries()
        if summaries:
            lines.extend(render_summary(summaries, candidates=candidates).splitlines())
            if stats:
                lines.append("")
                lines.extend(render_candidates(summaries).splitlines())
            updated = [s for s in summaries if s.verdict in _UPDATE_VERDICTS]
            if updated:
                lines.append("")
                lines.extend(_updated_lines(ordered(updated)))
            notes = render_reported(summaries)
            if notes:
                lines.extend(["", "reported, not failing:", *notes.splitlines()])
            failed = render_failures(summaries)
            if failed:
                lines.append("")
                lines.append("gate failures:")
                lines.extend(failed.splitlines())
                lines.extend(
                    f"{s.group}: {XFAILED}" for s in summaries if s.failed and self.expected(s)
                )
                if any(s.failed and s.verdict is Verdict.REGRESSION for s in summaries):
                    lines.append(INTENDED)
        lines.extend(self.notes)
        return lines


def _updated_lines(updated: Sequence[GroupSummary]) -> list[str]:
    """What an update did with each group: a line each, but more than `SAME_REPORT_SHOWN`
    groups alike (a first update's "new baseline: none before for this key") as one, their
    first named and the rest counted, as the step summary shows them: a first update of 150
    groups printed 148 such lines."""
    lines: list[str] = []
    for groups in alike(updated):
        if len(groups) <= SAME_REPORT_SHOWN:
            lines.extend(f"{decision_name(s.group, s.key)}: {s.message}" for s in groups)
        else:
            lines.append(f"{len(groups)} groups ({alike_names(groups)}): {one_message(groups)}")
    return lines


def progress_lines(summary: GroupSummary) -> list[str]:
    """What `-v` shows of each candidate once its group is tuned."""
    lines = []
    for row in summary.candidates:
        what = row.error or ("-" if row.median is None else format_duration(row.median))
        if row.error is None and row.device is not None and row.enqueue is not None:
            what += (
                f" (device {format_duration(row.device)}, enqueue {format_duration(row.enqueue)})"
            )
        lines.append(f"autotune:   {row.name}: {what}")
    return lines


__all__ = ["SessionOutput", "progress_lines"]
