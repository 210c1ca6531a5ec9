"""Every candidate in pytest-benchmark's JSON format (`--autotune-benchmark-json=PATH`).

`pytest-benchmark compare PATH` and the dashboards that read pytest-benchmark files (the
github-action-benchmark family) then work on our results. The file has the shape
pytest-benchmark writes with `--benchmark-json`: `machine_info`, `commit_info`,
`benchmarks`, `datetime` and `version`. Each candidate of each tuned group is one
benchmark, grouped by its autotune group, so `compare` tables a group's candidates together:
the winner with its precise measurement (the numbers the gate judged), the others with
their tuning samples.

pytest-benchmark is an optional extra (`pytest-autotune[benchmark]`): it is imported only
when this file is asked for, since its own plugin changes the runs of anyone who has it.
"""

from __future__ import annotations

import importlib.metadata
import json
import os
import platform
import subprocess
from collections.abc import Mapping, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from pytest_autotune.report import CandidateRow, GroupSummary
from pytest_autotune.report.names import (
    LATER_CALL,
    decision_name,
    node_name,
    ordered,
    without_parameters,
)
from pytest_autotune.tune.files import replace_text
from pytest_autotune.tune.run import git_output

INSTALL_HINT = "it needs pytest-benchmark: pip install 'pytest-autotune[benchmark]'"


def require_pytest_benchmark() -> str:
    """The installed pytest-benchmark's version, whose format and statistics the file
    follows; ImportError naming the extra to install when it is missing."""
    try:
        import pytest_benchmark.stats  # noqa: F401

        return importlib.metadata.version("pytest-benchmark")
    except (ImportError, importlib.metadata.PackageNotFoundError):
        raise ImportError(INSTALL_HINT) from None


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
        commit, commit_time, author_time = git_output(
            root, "show", "-s", "--format=%H%n%cI%n%aI", "HEAD"
        ).split("\n")
        branch = git_output(root, "rev-parse", "--abbrev-ref", "HEAD")
        dirty = bool(git_output(root, "status", "--porcelain", "--untracked-files=no"))
    # A hang (git's timeout) too: a broken checkout holds up no run.
    except (OSError, subprocess.SubprocessError, ValueError):
        return info
    return {
        **info,
        "id": commit,
        "time": commit_time,
        "author_time": author_time,
        "dirty": dirty,
        "branch": _detached_branch() if branch == "HEAD" else branch,
    }


def _detached_branch() -> str:
    """The branch of a detached checkout: on GitHub Actions, a pull request's merge commit
    is its branch (`GITHUB_HEAD_REF`), as the run's records name it; the file of a pull
    request's gate said "(detached head)" beside records that named the branch."""
    return os.environ.get("GITHUB_HEAD_REF") or "(detached head)"


def benchmark_id(
    summary: GroupSummary, candidate: str, test_id: str | None = None
) -> tuple[str, str]:
    """(name, fullname) of one candidate: its test item's node id where it has one
    (`test_id`), else read like one: `test_saxpy[float4-n67108864]`, with the group's
    parameters (or the key, for a group without any) once, never twice."""
    if test_id:
        return node_name(test_id), test_id
    # The `autotune` fixture's later calls in a test are groups of their own, named
    # `test_sizes[float32] (call 2)`: the call's number follows the name, as it follows the
    # test's id there. Read as parameters, it cost the name the test's parameters and call.
    group, call = summary.group, ""
    if (found := LATER_CALL.search(group)) is not None:
        group, call = group[: found.start()], found.group()
    test = without_parameters(group)
    rest = group[len(test) + 1 :]
    parameters = rest[:-1] if rest.endswith("]") else ""
    if not parameters and summary.key != "default":
        parameters = summary.key
    inner = f"{candidate}-{parameters}" if parameters else candidate
    return f"{test.rsplit('::', 1)[-1]}[{inner}]{call}", f"{test}[{inner}]{call}"


def benchmark_entry(summary: GroupSummary, candidate: CandidateRow) -> dict[str, Any] | None:
    """One candidate as a pytest-benchmark benchmark, None when it has no samples.

    `group` is the autotune group, so `compare` tables a group's candidates together.
    pytest-benchmark's `options` describe its own timing loop, which did not run: empty.
    """
    samples = summary.samples_of(candidate)
    if not samples:
        return None
    winner = candidate.name == summary.winner
    name, fullname = benchmark_id(summary, candidate.name, candidate.test_id)
    return {
        "group": decision_name(summary.group, summary.key),
        "name": name,
        "fullname": fullname,
        "params": {"candidate": candidate.name, "key": summary.key},
        "param": name[name.index("[") + 1 : name.rindex("]")],
        "extra_info": {
            "autotune_group": summary.group,
            "key": summary.key,
            "candidate": candidate.name,
            "winner": winner,
            "samples": "precise measurement" if winner and summary.samples else "tuning",
            "device_id": summary.device_id,
            "verdict": summary.verdict.value,
            "fraction_of_roof": summary.fraction_of_roof if winner else None,
            "delta_vs_baseline": (
                summary.comparison.delta if winner and summary.comparison is not None else None
            ),
        },
        "options": {},
        "stats": benchmark_stats(samples),
    }


def benchmark_document(
    summaries: Sequence[GroupSummary],
    *,
    machine: Mapping[str, Any],
    commit: Mapping[str, Any],
    now: datetime,
) -> dict[str, Any]:
    """The whole file's content: every measured candidate, group by group. A group whose
    candidates list is empty (a summary from elsewhere) still gives its winner."""
    version = require_pytest_benchmark()
    benchmarks = []
    for summary in ordered(summaries):
        candidates = summary.candidates or (
            (CandidateRow(summary.winner),) if summary.winner else ()
        )
        for candidate in candidates:
            entry = benchmark_entry(summary, candidate)
            if entry is not None:
                benchmarks.append(entry)
    return {
        "machine_info": dict(machine),
        "commit_info": dict(commit),
        "benchmarks": benchmarks,
        "datetime": now.isoformat(),
        "version": version,
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
    """Write the file at `path`, creating its folder, replacing any file there whole
    (`replace_text`): indented, ASCII, a final newline.

    `machine` defaults to `machine_info()`, `commit` to `commit_info(root)` (the working
    directory when `root` is None), `now` to the current UTC time.
    """
    document = benchmark_document(
        summaries,
        machine=machine_info() if machine is None else machine,
        commit=commit_info(root or Path.cwd()) if commit is None else commit,
        now=now or datetime.now(timezone.utc),
    )
    text = json.dumps(document, indent=4, ensure_ascii=True, allow_nan=False) + "\n"
    replace_text(path, text)
