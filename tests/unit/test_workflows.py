"""The CI workflows are valid YAML and run what the README says."""

from pathlib import Path

import yaml

WORKFLOWS = Path(__file__).resolve().parents[2] / ".github" / "workflows"


def load(name: str) -> dict:
    return yaml.safe_load((WORKFLOWS / name).read_text())


def steps_run(job: dict) -> str:
    return "\n".join(step.get("run", "") for step in job["steps"])


def test_the_cpu_workflow_runs_the_suite_on_python_3_10_to_3_13_and_the_oldest_pytest():
    ci = load("ci.yml")
    matrix = ci["jobs"]["test"]["strategy"]["matrix"]
    assert matrix["python"] == ["3.10", "3.11", "3.12", "3.13"]
    assert {"python": "3.10", "pytest": "oldest"} in matrix["include"]
    assert "python -m pytest" in steps_run(ci["jobs"]["test"])


def test_the_gpu_workflow_gates_pull_requests_and_refreshes_the_baselines_on_main():
    autotune = load("autotune.yml")
    # PyYAML reads the key `on` as True (YAML 1.1); GitHub reads it as "on".
    triggers = autotune.get("on", autotune.get(True))
    assert "pull_request" in triggers and triggers["push"]["branches"] == ["main"]
    gate, refresh = autotune["jobs"]["gate"], autotune["jobs"]["refresh"]
    assert "--autotune " in steps_run(gate) + " "
    assert "--autotune-html" in steps_run(gate)
    assert any(s.get("uses", "").startswith("actions/upload-artifact") for s in gate["steps"])
    assert "--autotune-update" in steps_run(refresh)
    assert any("create-pull-request" in s.get("uses", "") for s in refresh["steps"])
    assert "gpu" in gate["runs-on"] and "gpu" in refresh["runs-on"]
