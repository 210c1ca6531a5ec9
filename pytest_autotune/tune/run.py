"""Which run a record belongs to: an id, when it ran, and the git commit it measured.

Records of several runs are read side by side (`pytest-autotune report a.jsonl b.jsonl`),
so each must say which run it came from: without that, two runs of eight groups read as
sixteen unlabelled rows. The commit and branch tie a run to the code it measured; outside
a git checkout (or without git) they are None and the run is still told apart by its id
and time.
"""

from __future__ import annotations

import os
import subprocess
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

__all__ = ["RunInfo", "git_head", "git_output"]


@dataclass(frozen=True, slots=True)
class RunInfo:
    """One run: `id` is random (two runs of one commit are still two runs), `timestamp` an
    ISO-8601 UTC time, `commit` and `branch` the checkout's, None where there is none."""

    id: str
    timestamp: str
    commit: str | None = None
    branch: str | None = None
    stopped: str | None = None
    """Why the run stopped before every test ran (`interrupted`, pytest's `stopping after 1
    failures`), None when it ran to its end: its records are then not the whole run, and
    a report that did not say so read as if the groups never reached did not exist."""

    @classmethod
    def current(
        cls, root: str | os.PathLike[str] | None = None, now: datetime | None = None
    ) -> RunInfo:
        """A new run, now, at the git checkout that holds `root` (the working directory)."""
        commit, branch = git_head(Path(root) if root is not None else Path.cwd())
        moment = (now or datetime.now(timezone.utc)).astimezone(timezone.utc)
        return cls(
            id=uuid.uuid4().hex[:12],
            timestamp=moment.isoformat(timespec="seconds"),
            commit=commit,
            branch=branch,
        )

    @property
    def label(self) -> str:
        """How reports name the run: its time, and the short commit when there is one (or
        its id when there is none)."""
        if not self.timestamp:
            return self.id
        when = self.timestamp.replace("T", " ").removesuffix("+00:00")
        return f"{when} {self.commit[:8]}" if self.commit else f"{when} {self.id}"

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "id": self.id,
            "timestamp": self.timestamp,
            "commit": self.commit,
            "branch": self.branch,
        }
        if self.stopped is not None:  # only then: a run to its end writes what it always did
            data["stopped"] = self.stopped
        return data

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> RunInfo:
        """Read `to_json`'s form; a field of the wrong type is a ValueError naming it."""
        for name, optional in (
            ("id", False),
            ("timestamp", False),
            ("commit", True),
            ("branch", True),
            ("stopped", True),
        ):
            value = data.get(name)
            if not (isinstance(value, str) or (optional and value is None)):
                raise ValueError(f"run field {name!r} has the wrong type: {value!r}")
        return cls(
            data["id"],
            data["timestamp"],
            data.get("commit"),
            data.get("branch"),
            data.get("stopped"),
        )


def git_head(root: Path, environ: Mapping[str, str] = os.environ) -> tuple[str | None, str | None]:
    """(commit, branch) of the checkout holding `root`; (None, None) outside one or without
    git. On a detached head the branch is None, except in a GitHub Actions job of a pull
    request, which checks out a merge commit detached: its branch is then the pull request's
    (`GITHUB_HEAD_REF`), the one a reader of the records looks for."""
    try:
        commit = git_output(root, "rev-parse", "HEAD")
        branch = git_output(root, "rev-parse", "--abbrev-ref", "HEAD")
    except (OSError, subprocess.SubprocessError):
        return None, None
    if branch in ("", "HEAD"):
        branch = environ.get("GITHUB_HEAD_REF", "")
    return commit or None, branch or None


def git_output(root: Path, *args: str) -> str:
    """What `git *args` prints in `root`, stripped; `OSError` without git, a
    `subprocess.SubprocessError` where it fails or hangs (10 s)."""
    return subprocess.run(
        ["git", *args],
        cwd=root,
        capture_output=True,
        encoding="utf-8",  # git's own; Windows would decode in its ANSI code page
        errors="replace",
        check=True,
        timeout=10,
    ).stdout.strip()
