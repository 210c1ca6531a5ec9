"""What a session produces and writes at its end: the groups' records (one per group, the
one value that travels from a pytest-xdist worker to the controller) and what is read from
them: the terminal summary, and the files: records, HTML report, pytest-benchmark JSON,
step summary and, with `--autotune-update`, the cache files.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from pytest_autotune.baselines import CacheUpdate, update_entry, write_caches
from pytest_autotune.gate import Verdict
from pytest_autotune.group_record import group_summary
from pytest_autotune.plugin_settings import PluginSettings
from pytest_autotune.report import GroupSummary
from pytest_autotune.report.extra import RecordExtra
from pytest_autotune.tune.log import format_duration
from pytest_autotune.tune.records import AutotuneRecord, Recorder
from pytest_autotune.tune.run import RunInfo


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

    def add(self, record: AutotuneRecord) -> GroupSummary:
        """Keep a group's record; its summary line."""
        self.records.append(record)
        return group_summary(record)

    def summaries(self) -> list[GroupSummary]:
        return [group_summary(record) for record in self.records]

    def updates(self) -> list[CacheUpdate]:
        """The cache entries `--autotune-update` writes: one per group that measured."""
        return [u for u in map(update_entry, self.records) if u is not None]

    def devices(self) -> dict[str, Mapping[str, Any]]:
        """Each device's block (id, fingerprint, peaks), as the first of its records has it."""
        devices: dict[str, Mapping[str, Any]] = {}
        for record in self.records:
            device = RecordExtra.from_json(record.extra).device
            if device is not None:
                devices.setdefault(record.device_id, device)
        return devices

    def to_worker_output(self) -> dict[str, Any]:
        """A pytest-xdist worker's output: one record per group, and the notes."""
        return {"records": [r.to_json() for r in self.records], "notes": self.notes}

    def merge_worker_output(self, output: Mapping[str, Any]) -> None:
        for record in output["records"]:
            self.add(AutotuneRecord.from_json(record))
        self.notes.extend(output["notes"])

    def finish(self) -> bool:
        """Write what the session produced; True when a group failed the gate or an output
        could not be written (each such output is named in one line of the summary)."""
        settings = self.settings
        summaries = self.summaries()
        caches_written = (
            write_caches(self.updates(), self.devices(), settings, self.notes)
            if settings.update
            else True
        )
        written = [
            caches_written,
            self._write("records", settings.engine.record, self._write_records),
            self._write("report", settings.html, self._write_html),
            self._write("benchmark JSON", settings.benchmark_json, self._write_benchmark_json),
            self._write(
                "step summary", os.environ.get("GITHUB_STEP_SUMMARY"), self._write_step_summary
            ),
        ]
        return any(s.failed for s in summaries) or not all(written)

    def _write(self, what: str, target: Any, write: Callable[[Any], None]) -> bool:
        """Write one output; a path the user gave that cannot be written is one line, not a
        traceback from the end of the session, and the other outputs are still written."""
        if not target:
            return True
        try:
            write(target)
        except OSError as exc:
            self.notes.append(
                f"error: the {what} could not be written to {target}: {exc.strerror or exc}"
            )
            return False
        return True

    def _stamped_records(self) -> list[AutotuneRecord]:
        """The session's records, each carrying this run (one id, time and commit for all
        workers' records: the controller stamps them)."""
        if self.run is None:
            self.run = RunInfo.current(self.settings.rootpath)
        return [dataclasses.replace(r, run=self.run) for r in self.records]

    def _write_records(self, sink: Any) -> None:
        recorder = Recorder(sink)
        for record in self._stamped_records():
            recorder.record(record)

    def _write_html(self, path: Path) -> None:
        from pytest_autotune.report.html import write_html

        write_html(path, self._stamped_records())
        self.notes.append(f"report: {self.settings.relative(path)}")

    def _write_benchmark_json(self, path: Path) -> None:
        from pytest_autotune.report.benchmark_json import write_benchmark_json

        write_benchmark_json(path, self.summaries(), root=self.settings.rootpath)

    def _write_step_summary(self, path: str) -> None:
        summaries = self.summaries()
        if not summaries:
            return
        from pytest_autotune.report.markdown import render_markdown

        with open(path, "a", encoding="utf-8") as out:
            out.write(render_markdown(summaries))

    def summary_lines(self, stats: bool = False, candidates: bool = False) -> list[str]:
        """The terminal summary; `stats` adds every candidate's statistics table,
        `candidates` (under -v) each group's candidates in the summary table."""
        from pytest_autotune.report.terminal import (
            render_candidates,
            render_failures,
            render_summary,
        )

        lines: list[str] = []
        summaries = self.summaries()
        if summaries:
            lines.extend(render_summary(summaries, candidates=candidates).splitlines())
            if stats:
                lines.append("")
                lines.extend(render_candidates(summaries).splitlines())
            updated = [s for s in summaries if s.verdict is Verdict.UPDATED]
            if updated:
                lines.append("")
                lines.extend(
                    f"{s.group} [{s.key}]: {s.message}" for s in sorted(updated, key=_by_group)
                )
            failed = render_failures(summaries)
            if failed:
                lines.append("")
                lines.append("gate failures:")
                lines.extend(failed.splitlines())
        lines.extend(self.notes)
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


def _by_group(summary: GroupSummary) -> tuple[str, str]:
    return summary.group, summary.key


__all__ = ["SessionOutput", "progress_lines"]
