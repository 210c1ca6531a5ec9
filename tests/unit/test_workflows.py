"""The CI workflows: valid for GitHub (its schema), on runners we declare, and safe: no
refresh loop, no write permission or GPU runner for code nobody reviewed."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
WORKFLOWS = ROOT / ".github" / "workflows"
GITHUB_LABELS = {"self-hosted", "linux", "x64", "ubuntu-latest", "ubuntu-24.04", "ubuntu-22.04"}


def load(name: str) -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load((WORKFLOWS / name).read_text())
    # PyYAML reads the key `on` as True (YAML 1.1); GitHub reads it as "on".
    data["on"] = data.pop(True, data.get("on"))
    return data


def steps_run(job: dict[str, Any]) -> str:
    return "\n".join(step.get("run", "") for step in job["steps"])


@pytest.mark.skipif(
    shutil.which("check-jsonschema") is None
    and subprocess.run(
        [sys.executable, "-c", "import check_jsonschema"], capture_output=True, check=False
    ).returncode,
    reason="check-jsonschema is not installed (the dev extra has it)",
)
def test_every_workflow_validates_against_githubs_workflow_schema() -> None:
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "check_jsonschema",
            "--builtin-schema",
            "vendor.github-workflows",
            *map(str, sorted(WORKFLOWS.glob("*.yml"))),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_every_runner_label_is_githubs_or_declared_for_actionlint() -> None:
    declared = yaml.safe_load((ROOT / ".github" / "actionlint.yaml").read_text())
    known = GITHUB_LABELS | set(declared["self-hosted-runner"]["labels"])
    for path in WORKFLOWS.glob("*.yml"):
        for name, job in load(path.name)["jobs"].items():
            labels = job["runs-on"] if isinstance(job["runs-on"], list) else [job["runs-on"]]
            assert set(labels) <= known, f"{path.name}: {name}: {labels}"


def test_the_cpu_workflow_runs_the_suite_on_python_3_10_to_3_13_and_the_oldest_pytest() -> None:
    ci = load("ci.yml")
    matrix = ci["jobs"]["test"]["strategy"]["matrix"]
    assert matrix["python"] == ["3.10", "3.11", "3.12", "3.13"]
    assert {"python": "3.10", "pytest": "oldest"} in matrix["include"]
    assert "-m pytest" in steps_run(ci["jobs"]["test"])
    assert "make check" in steps_run(ci["jobs"]["lint"])
    assert ci["permissions"] == {"contents": "read"}


def test_the_oldest_pytest_job_installs_the_oldest_pytest_benchmark_beside_it() -> None:
    # pytest-benchmark 5 needs pytest 8.1: beside pytest 7.4 its compare command fails, so
    # the job pins both to the floors that pyproject.toml declares. The other dependencies
    # and pytest-xdist at their floors too: NumPy 1.24 names a dtype's type otherwise, and
    # filelock 3.x removes a released lock's file, which no other job would run into.
    pyproject = (ROOT / "pyproject.toml").read_text()
    runtime = pyproject.split("dependencies = [", 1)[1].split("]", 1)[0]
    floors = re.findall(r'"([a-z0-9-]+)>=([0-9.]+)"', runtime)
    floors += re.findall(r'"(pytest-benchmark|pytest-xdist)>=([0-9.]+)"', pyproject)
    assert {"pytest", "numpy", "filelock", "pytest-benchmark", "pytest-xdist"} <= {
        name for name, _ in floors
    }
    test = load("ci.yml")["jobs"]["test"]
    oldest = next(line for line in steps_run(test).splitlines() if "matrix.pytest" in line)
    for name, version in floors:
        assert f"'{name}=={version}.*'" in oldest, (name, oldest)


def test_the_refresh_runs_on_a_schedule_or_on_demand_never_on_a_push() -> None:
    autotune = load("autotune.yml")
    assert "push" not in autotune["on"]
    assert set(autotune["on"]) == {"pull_request", "schedule", "workflow_dispatch"}
    refresh = autotune["jobs"]["refresh"]
    assert "pull_request" not in refresh["if"]
    assert "--autotune-update" in steps_run(refresh)


def test_the_refresh_opens_a_pull_request_only_for_a_significant_change() -> None:
    refresh = load("autotune.yml")["jobs"]["refresh"]
    decide = next(s for s in refresh["steps"] if s.get("id") == "changed")
    assert "pytest-autotune changed" in decide["run"]
    opening = next(s for s in refresh["steps"] if "create-pull-request" in s.get("uses", ""))
    assert opening["if"] == "steps.changed.outputs.significant == 'true'"
    # A token that starts workflows, so the refresh's pull request gets its CI.
    assert "secrets.AUTOTUNE_PR_TOKEN" in opening["with"]["token"]
    # One pull request branch per base branch: a refresh run on a feature branch must not
    # force-push over the open pull request of main's.
    assert "${{ github.ref_name }}" in opening["with"]["branch"]
    # What `changed` found is the commit's message too, not only the pull request's body.
    assert "changes<<" in decide["run"]
    assert "${{ steps.changed.outputs.changes }}" in opening["with"]["commit-message"]


def test_only_the_refresh_job_may_write() -> None:
    autotune = load("autotune.yml")
    assert autotune["permissions"] == {"contents": "read"}
    assert "permissions" not in autotune["jobs"]["gate"]
    assert autotune["jobs"]["refresh"]["permissions"] == {
        "contents": "write",
        "pull-requests": "write",
    }


def test_a_forks_pull_request_reaches_the_gpu_runner_only_when_a_maintainer_labels_it() -> None:
    gate = load("autotune.yml")["jobs"]["gate"]
    assert "gpu" in gate["runs-on"]
    condition = " ".join(gate["if"].split())
    assert "github.event.pull_request.head.repo.full_name == github.repository" in condition
    assert "github.event.label.name == 'gpu-gate'" in condition
    # A push to a labeled fork's pull request is a `synchronize`, not a `labeled` event.
    assert "github.event.action == 'labeled' && github.event.label.name" in condition


def test_one_pull_requests_gate_never_cancels_anothers() -> None:
    gate = load("autotune.yml")["jobs"]["gate"]
    assert "github.event.pull_request.number" in gate["concurrency"]["group"]
    assert "concurrency" not in load("autotune.yml")


def test_the_gpu_jobs_name_the_gpu_so_a_runner_without_one_fails_them() -> None:
    # Device `auto` falls back to the CPU: the gate then passed with "no baseline" for every
    # group, and the refresh opened a pull request of the runner's CPU baselines.
    for name, job in load("autotune.yml")["jobs"].items():
        tuning = [line for line in steps_run(job).splitlines() if "-m pytest" in line]
        assert tuning, name
        assert all("--autotune-device=cuda" in line for line in tuning), (name, tuning)


def test_the_gpu_jobs_install_into_a_virtual_environment() -> None:
    for job in load("autotune.yml")["jobs"].values():
        run = steps_run(job)
        assert "python3 -m venv .venv" in run
        assert "pip install" not in run.replace(".venv/bin/python -m pip install", "")


def run_step(job: dict[str, Any], name: str, checkout: Path, runner_temp: Path) -> int:
    """Run one step's script as GitHub's runner does (`bash -e`) in `checkout`."""
    step = next(s for s in job["steps"] if s.get("name") == name)
    done = subprocess.run(
        ["bash", "-e", "-c", step["run"]],
        cwd=checkout,
        env={"PATH": "/usr/bin:/bin", "RUNNER_TEMP": str(runner_temp)},
        capture_output=True,
        text=True,
        check=False,
    )
    return done.returncode


@pytest.mark.skipif(shutil.which("bash") is None, reason="the runner's shell, bash, is not here")
def test_the_first_refresh_of_a_project_without_committed_baselines_keeps_an_empty_folder(
    tmp_path: Path,
) -> None:
    # A project that copies the workflow has no .autotune/ until its first refresh: that
    # refresh must go on, and every entry it writes is new to `changed`.
    refresh = load("autotune.yml")["jobs"]["refresh"]
    checkout, runner_temp = tmp_path / "checkout", tmp_path / "temp"
    checkout.mkdir()
    runner_temp.mkdir()

    assert run_step(refresh, "Keep the committed baselines", checkout, runner_temp) == 0
    assert list((runner_temp / "committed").iterdir()) == []

    (checkout / ".autotune" / "cpu-x").mkdir(parents=True, exist_ok=True)
    (checkout / ".autotune" / "cpu-x" / "t.json").write_text("{}\n")
    runner_temp = tmp_path / "temp2"
    runner_temp.mkdir()
    assert run_step(refresh, "Keep the committed baselines", checkout, runner_temp) == 0
    assert (runner_temp / "committed" / "cpu-x" / "t.json").read_text() == "{}\n"
