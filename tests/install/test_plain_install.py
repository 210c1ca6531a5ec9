"""What a user gets from `pip install pytest-autotune`: the wheel, no extras, not editable,
in a fresh virtual environment.

The rest of the suite runs against the editable install with the dev extras, which hid a
missing dependency once (every pytest run of a plain install ended at plugin load). These
tests build the wheel, install it where nothing else is, and run pytest as a user would:
a plain project (whose output must not change when we are installed) and a small project of
autotune tests through check mode, `--autotune-update`, `--autotune`, a `-k` subset and
`-n 2`, with `filterwarnings = error`.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import textwrap
import venv
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.install

PLAIN_PROJECT = {
    "pyproject.toml": """
        [tool.pytest.ini_options]
        filterwarnings = ["error"]
    """,
    "test_plain.py": """
        import pytest

        def test_adds():
            assert 1 + 1 == 2

        @pytest.mark.parametrize("n", [1, 2])
        def test_param(n):
            assert n > 0

        @pytest.mark.skip(reason="shown as skipped")
        def test_skipped():
            pass

        def test_fails():
            assert [1, 2] == [1, 3]
    """,
}

AUTOTUNE_PROJECT = {
    "pyproject.toml": """
        [tool.pytest.ini_options]
        filterwarnings = ["error"]
        addopts = "--strict-markers"
    """,
    "test_sum.py": """
        import numpy as np
        import pytest

        from pytest_autotune import Work


        def dot_ones(x):
            return np.dot(x, np.ones_like(x))


        @pytest.fixture(params=[1 << 10, 1 << 14], ids=lambda n: f"n{n}")
        def x(request):
            return np.random.default_rng(0).random(request.param)


        # A tolerance no machine's noise reaches: this test is about the plumbing of a plain
        # install, never about this machine's timing.
        @pytest.mark.autotune(
            candidates={"pairwise": np.sum, "add_reduce": np.add.reduce, "dot": dot_ones},
            work=lambda x: Work(compute_ops=x.size, bytes=x.nbytes),
            rtol=1e-9,
            max_regression=1.0,
        )
        def test_sum(candidate, x):
            return candidate(x)
    """,
}


@dataclass(frozen=True)
class Env:
    """A fresh virtual environment: its python, and what pytest printed in it."""

    python: Path

    def run(self, *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "PYTHON"))}
        return subprocess.run(
            [str(self.python), *args],
            cwd=cwd,
            env=env,
            capture_output=True,
            text=True,
            timeout=600,
            check=False,
        )

    def pip(self, *args: str) -> None:
        quiet = ("--quiet", "--disable-pip-version-check")
        done = self.run("-m", "pip", "install", *quiet, *args, cwd=self.python.parent)
        assert done.returncode == 0, done.stdout + done.stderr

    def pytest(self, project: Path, *args: str) -> subprocess.CompletedProcess[str]:
        return self.run("-m", "pytest", "-p", "no:cacheprovider", *args, cwd=project)


def write_project(root: Path, files: dict[str, str]) -> Path:
    root.mkdir(parents=True)
    for name, text in files.items():
        (root / name).write_text(textwrap.dedent(text).lstrip())
    return root


def normalized(output: str) -> str:
    """pytest's output without what differs between any two runs (durations, paths of the
    temporary folder) and the `plugins:` header line, which lists installed plugins by
    design."""
    lines = [line for line in output.splitlines() if not line.startswith("plugins:")]
    text = "\n".join(lines)
    return re.sub(r" in \d+\.\d+s", " in Xs", text)


def listing(folder: Path) -> set[str]:
    return {str(p.relative_to(folder)) for p in folder.rglob("*") if "__pycache__" not in p.parts}


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    built = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "-w", str(out), str(ROOT)],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert built.returncode == 0, built.stdout + built.stderr
    (found,) = out.glob("pytest_autotune-*.whl")
    return found


def fresh_env(folder: Path, *packages: str) -> Env:
    venv.EnvBuilder(with_pip=True).create(folder)
    env = Env(folder / "bin" / "python")
    env.pip(*packages)
    return env


@pytest.fixture(scope="module")
def bare_env(tmp_path_factory: pytest.TempPathFactory) -> Env:
    """pytest alone: the user's environment before they install us."""
    return fresh_env(tmp_path_factory.mktemp("bare") / "venv", "pytest")


@pytest.fixture(scope="module")
def plain_env(tmp_path_factory: pytest.TempPathFactory, wheel: Path) -> Env:
    """pytest-autotune's wheel, no extras, and what it depends on."""
    return fresh_env(tmp_path_factory.mktemp("plain") / "venv", str(wheel))


def test_a_plain_projects_pytest_output_is_the_same_with_pytest_autotune_installed(
    bare_env: Env, plain_env: Env, tmp_path: Path
) -> None:
    before_dir = write_project(tmp_path / "before", PLAIN_PROJECT)
    after_dir = write_project(tmp_path / "after", PLAIN_PROJECT)
    before = bare_env.pytest(before_dir, "-rA")

    after = plain_env.pytest(after_dir, "-rA")

    # Installed, and loaded by its entry point (platformdirs, a dependency, has one too).
    assert re.search(r"^plugins: (.*, )?autotune-", after.stdout, re.MULTILINE)
    assert after.returncode == before.returncode == 1
    assert normalized(after.stdout).replace("after", "before") == normalized(before.stdout)
    assert after.stderr == before.stderr == ""
    assert listing(after_dir) == listing(before_dir)  # no .autotune/, no .benchmarks/


def test_a_plain_install_checks_tunes_and_gates_a_user_project(
    plain_env: Env, tmp_path: Path
) -> None:
    freeze = plain_env.run("-m", "pip", "freeze", cwd=tmp_path).stdout.lower()
    assert "pytest-autotune @ file" in freeze or "pytest-autotune==" in freeze
    assert "pytest-benchmark" not in freeze and "cupy" not in freeze  # no extras came along
    project = write_project(tmp_path / "user", AUTOTUNE_PROJECT)

    check = plain_env.pytest(project)
    assert check.returncode == 0, check.stdout + check.stderr
    assert "6 passed" in check.stdout
    assert not (project / ".autotune").exists()

    update = plain_env.pytest(project, "--autotune-update")
    assert update.returncode == 0, update.stdout + update.stderr
    (cache,) = (project / ".autotune").glob("cpu-*/test_sum.py__test_sum-f49177bfc1.json")
    assert '"fastest_name"' in cache.read_text()
    committed = cache.read_bytes()

    gate = plain_env.pytest(project, "--autotune", "--autotune-html=report.html")
    assert gate.returncode == 0, gate.stdout + gate.stderr
    assert "test_sum.py::test_sum" in gate.stdout
    assert (project / "report.html").is_file()
    assert cache.read_bytes() == committed  # the gate reads the baselines, never writes them

    subset = plain_env.pytest(project, "--autotune", "-k", "n1024")
    assert subset.returncode == 0, subset.stdout + subset.stderr
    assert "3 passed" in subset.stdout


def test_a_plain_install_keeps_each_group_on_one_worker_under_xdist(
    plain_env: Env, tmp_path: Path
) -> None:
    plain_env.pip("pytest-xdist")
    project = write_project(tmp_path / "user", AUTOTUNE_PROJECT)
    update = plain_env.pytest(project, "--autotune-update")
    assert update.returncode == 0, update.stdout + update.stderr

    gate = plain_env.pytest(project, "-n", "2", "--autotune", "--autotune-record=records.jsonl")

    assert gate.returncode == 0, gate.stdout + gate.stderr
    records = (project / "records.jsonl").read_text().splitlines()
    assert len(records) == 2  # one decision per group, not one per worker that saw it
