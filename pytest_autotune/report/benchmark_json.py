"""The winners in pytest-benchmark's JSON format (`--autotune-benchmark-json=PATH`).

`pytest-benchmark compare PATH` and the dashboards that read pytest-benchmark files (the
github-action-benchmark family) then work on our results. The file has the shape
the installed pytest-benchmark writes with `--benchmark-json`: `machine_info`, `commit_info`,
`benchmarks` (one per group: its winner, with pytest-benchmark's statistics of the precise
measurement and the raw samples as `data`), `datetime` and `version`.
"""

from __future__ import annotations

import importlib.metadata
import json
import platform
import subprocess
from collections.abc import Mapping, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from pytest_autotune.report import GroupSummary, ordered

FORMAT_VERSION: str = importlib.metadata.version("pytest-benchmark")
"""The installed pytest-benchmark, whose format and statistics the file follows."""


def benchmark_stats(samples: Sequence[float]) -> dict[str, Any]:
    """pytest-benchmark's `stats` of a sample set in seconds, computed by its own `Stats`.

    Reusing its class, rather than its formulas copied here, keeps the file right across its
    releases (5.3 changed how `hd15iqr` is computed). Each sample is one call, so
    `iterations` is 1, and the raw samples go in `data` as `--benchmark-json` writes them.
    """
    from pytest_benchmark.stats import Stats

    data = list(samples)
    if not data:
        raise ValueError("no samples")
    stats = Stats()  # type: ignore[no-untyped-call]
    for sample in data:
        stats.update(sample)  # type: ignore[no-untyped-call]
    return {**stats.as_dict(), "data": data, "iterations": 1}  # type: ignore[no-untyped-call]


def machine_info() -> dict[str, Any]:
    """The platform fields pytest-benchmark records; `cpu` is left empty, since filling it
    would need py-cpuinfo, and the device that matters is named in each `extra_info`."""
    return {
        "node": platform.node(),
        "processor": platform.processor(),
        "machine": platform.machine(),
        "python_compiler": platform.python_compiler(),
        "python_implementation": platform.python_implementation(),
        "python_implementation_version": platform.python_version(),
        "python_version": platform.python_version(),
        "python_build": list(platform.python_build()),
        "release": platform.release(),
        "system": platform.system(),
        "cpu": {},
    }


def commit_info(root: Path) -> dict[str, Any]:
    """The commit of the git checkout at `root`, in pytest-benchmark's fields; outside a
    checkout (or without git) the commit is "unversioned", as pytest-benchmark says."""
    info: dict[str, Any] = {
        "id": "unversioned",
        "time": None,
        "author_time": None,
        "dirty": False,
        "project": root.resolve().name,
        "branch": "(unknown)",
    }
    try:
        commit, commit_time, author_time = _git(
            root, "show", "-s", "--format=%H%n%cI%n%aI", "HEAD"
        ).split("\n")
        branch = _git(root, "rev-parse", "--abbrev-ref", "HEAD")
        dirty = bool(_git(root, "status", "--porcelain", "--untracked-files=no"))
    except (OSError, subprocess.CalledProcessError, ValueError):
        return info
    return {
        **info,
        "id": commit,
        "time": commit_time,
        "author_time": author_time,
        "dirty": dirty,
        "branch": "(detached head)" if branch == "HEAD" else branch,
    }


def _git(root: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=root, capture_output=True, text=True, check=True
    ).stdout.strip()


def benchmark_entry(summary: GroupSummary) -> dict[str, Any]:
    """One group's winner as a pytest-benchmark benchmark.

    `group` is the test (so `compare` tables each test's keys together), `name` and
    `fullname` read like the node ids pytest-benchmark uses, with the key as the parameter.
    pytest-benchmark's `options` describe its own timing loop, which did not run: empty.
    """
    function = summary.group.rsplit("::", 1)[-1]
    candidate_medians = {c.name: c.median for c in summary.candidates}
    return {
        "group": summary.group,
        "name": f"{function}[{summary.key}]",
        "fullname": f"{summary.group}[{summary.key}]",
        "params": {"key": summary.key},
        "param": summary.key,
        "extra_info": {
            "winner": summary.winner,
            "device_id": summary.device_id,
            "verdict": summary.verdict.value,
            "fraction_of_roof": summary.fraction_of_roof,
            "delta_vs_baseline": (
                summary.comparison.delta if summary.comparison is not None else None
            ),
            "candidate_medians": candidate_medians,
        },
        "options": {},
        "stats": benchmark_stats(summary.samples),
    }


def benchmark_document(
    summaries: Sequence[GroupSummary],
    *,
    machine: Mapping[str, Any],
    commit: Mapping[str, Any],
    now: datetime,
) -> dict[str, Any]:
    """The whole file's content. Groups that measured nothing are left out, as
    pytest-benchmark leaves out benchmarks that errored."""
    return {
        "machine_info": dict(machine),
        "commit_info": dict(commit),
        "benchmarks": [benchmark_entry(s) for s in ordered(summaries) if s.samples],
        "datetime": now.isoformat(),
        "version": FORMAT_VERSION,
    }


def write_benchmark_json(
    path: Path,
    summaries: Sequence[GroupSummary],
    *,
    root: Path | None = None,
    machine: Mapping[str, Any] | None = None,
    commit: Mapping[str, Any] | None = None,
    now: datetime | None = None,
) -> None:
    """Write the file at `path`, creating its folder: indented, ASCII, a final newline.

    `machine` defaults to `machine_info()`, `commit` to `commit_info(root)` (the working
    directory when `root` is None), `now` to the current UTC time.
    """
    document = benchmark_document(
        summaries,
        machine=machine_info() if machine is None else machine,
        commit=commit_info(root or Path.cwd()) if commit is None else commit,
        now=now or datetime.now(timezone.utc),
    )
    path.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps(document, indent=4, ensure_ascii=True, allow_nan=False) + "\n"
    path.write_text(text, encoding="utf-8")
