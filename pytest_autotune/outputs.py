"""What a session produces and writes at its end: the groups' summaries, records and cache
updates (plain JSON values, which travel from pytest-xdist workers to the controller), the
terminal summary, and the files: records, HTML report, pytest-benchmark JSON, step summary
and, with `--autotune-update`, the cache files.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pytest_autotune.baselines import write_caches
from pytest_autotune.gate import GroupVerdict, Verdict
from pytest_autotune.plugin_settings import PluginSettings
from pytest_autotune.report import CandidateRow, GroupSummary, key_text
from pytest_autotune.tune.benchmark import AutotuneOutcome
from pytest_autotune.tune.errors import AutotuneError
from pytest_autotune.tune.key import key_to_json
from pytest_autotune.tune.log import format_duration
from pytest_autotune.tune.records import AutotuneRecord, Recorder
from pytest_autotune.tune.run import RunInfo
from pytest_autotune.tune.tunable_set import TunableSet
from pytest_autotune.tune.tuner import TuneDecision

if TYPE_CHECKING:
    from pytest_autotune.tune.client import Client


class SessionOutput:
    """What the session's groups produced, and its writing at the end."""

    def __init__(self, settings: PluginSettings, notes: list[str]) -> None:
        self.settings = settings
        self.notes = notes
        """Lines for the end of the summary: warnings, notes, what was written."""
        self.summaries: list[GroupSummary] = []
        self.updates: list[dict[str, Any]] = []
        self.records: list[dict[str, Any]] = []
        self.devices: dict[str, dict[str, Any]] = {}
        self.run: RunInfo | None = None

    def to_worker_output(self) -> dict[str, Any]:
        return {
            "summaries": [s.to_json() for s in self.summaries],
            "updates": self.updates,
            "records": self.records,
            "devices": self.devices,
            "notes": self.notes,
        }

    def merge_worker_output(self, output: Mapping[str, Any]) -> None:
        self.summaries.extend(GroupSummary.from_json(s) for s in output["summaries"])
        self.updates.extend(output["updates"])
        self.records.extend(output["records"])
        for device_id, device in output["devices"].items():
            self.devices.setdefault(device_id, device)
        self.notes.extend(output["notes"])

    def finish(self) -> bool:
        """Write what the session produced; True when a group failed the gate or an output
        could not be written (each such output is named in one line of the summary)."""
        settings = self.settings
        caches_written = (
            write_caches(self.updates, self.devices, settings, self.notes)
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
        return any(s.failed for s in self.summaries) or not all(written)

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
        return [
            dataclasses.replace(AutotuneRecord.from_json(r), run=self.run) for r in self.records
        ]

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

        write_benchmark_json(path, self.summaries, root=self.settings.rootpath)

    def _write_step_summary(self, path: str) -> None:
        if not self.summaries:
            return
        from pytest_autotune.report.markdown import render_markdown

        with open(path, "a", encoding="utf-8") as out:
            out.write(render_markdown(self.summaries))

    def summary_lines(self, stats: bool = False, candidates: bool = False) -> list[str]:
        """The terminal summary; `stats` adds every candidate's statistics table,
        `candidates` (under -v) each group's candidates in the summary table."""
        from pytest_autotune.report.terminal import (
            render_candidates,
            render_failures,
            render_summary,
        )

        lines: list[str] = []
        if self.summaries:
            lines.extend(render_summary(self.summaries, candidates=candidates).splitlines())
            if stats:
                lines.append("")
                lines.extend(render_candidates(self.summaries).splitlines())
            updated = [s for s in self.summaries if s.verdict is Verdict.UPDATED]
            if updated:
                lines.append("")
                lines.extend(
                    f"{s.group} [{s.key}]: {s.message}" for s in sorted(updated, key=_by_group)
                )
            failed = render_failures(self.summaries)
            if failed:
                lines.append("")
                lines.append("gate failures:")
                lines.extend(failed.splitlines())
        lines.extend(self.notes)
        return lines


def group_summary(
    group: str,
    key: Any,
    tunables: TunableSet,
    decision: TuneDecision,
    verdict: GroupVerdict,
    client: Client,
    *,
    measured: str | None,
    device_id: str,
) -> GroupSummary:
    """One group's line of the summary, with a row per candidate."""
    checks = {c.name: c for c in decision.checks}
    call_costs = getattr(client, "call_costs", None)  # a CUDA client's device/enqueue split
    rows = []
    for index, name in enumerate(tunables.names):
        result = decision.results.get(index)
        check = checks.get(name)
        cost = call_costs(tunables.fns[index]) if call_costs is not None else None
        rows.append(
            CandidateRow(
                name=name,
                median=result.median if isinstance(result, AutotuneOutcome) else None,
                error=result.message if isinstance(result, AutotuneError) else None,
                check_passed=None if check is None or check.skipped else check.passed,
                samples=result.effective_samples if isinstance(result, AutotuneOutcome) else (),
                device=None if cost is None else cost.device,
                enqueue=None if cost is None else cost.enqueue,
            )
        )
    return GroupSummary.of(
        group,
        key_text(key_to_json(key)),
        (measured or decision.fastest_name) if decision.measured else None,
        verdict,
        rows,
        device_id,
    )


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


def call_costs(client: Client, tunables: TunableSet) -> dict[str, dict[str, float | None]]:
    """Each candidate's device and host enqueue seconds of its latest sample, by name,
    where the client tells them apart (a CUDA client; empty for others)."""
    costs_of = getattr(client, "call_costs", None)
    if costs_of is None:
        return {}
    costs = {}
    for name, fn in zip(tunables.names, tunables.fns, strict=True):
        cost = costs_of(fn)
        if cost is not None:
            costs[name] = {"device_s": cost.device, "enqueue_s": cost.enqueue}
    return costs


def _by_group(summary: GroupSummary) -> tuple[str, str]:
    return summary.group, summary.key


__all__ = ["SessionOutput", "call_costs", "group_summary", "progress_lines"]
