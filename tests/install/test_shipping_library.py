"""A library ships what its tests tuned, end to end (`examples/sigkit`).

Its CI tunes (`pytest --autotune-update` writes `sigkit/.autotune/<device_id>/sigkit.ops.json`),
the wheel carries that file as package data, and a user who installs the wheel into a fresh
environment gets the shipped winner without any benchmarking, has a key nothing shipped
tuned once into their own cache directory, and finds nothing written anywhere else: not in
the working directory, not in site-packages.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
import zipfile
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.install.test_plain_install import ROOT, Env, fresh_env

pytestmark = pytest.mark.install

EXAMPLE = ROOT / "examples" / "sigkit"

USER_PROGRAM = textwrap.dedent(
    """
    import collections, json, sys

    import numpy as np

    from pytest_autotune.backends import cpu
    from sigkit import ops

    calls = collections.Counter()

    def counted(name, fn):
        def run(*inputs):
            calls[name] += 1
            return fn(*inputs)
        return run

    # The set is built from these module globals at its first use, so every call of a
    # candidate, timed or not, is counted.
    for name in ("by_convolve", "by_cumsum", "by_window_view"):
        setattr(ops, name, counted(name, getattr(ops, name)))

    seen = {"device_id": cpu().device_id}
    x = np.random.default_rng(1).random(1 << 10)
    ops.moving_sum(x, 16)  # a key the library's CI tuned and shipped
    seen["shipped"] = dict(calls)
    calls.clear()
    ops.moving_sum(np.random.default_rng(2).random(3000), 5)  # a key nothing shipped
    seen["new"] = dict(calls)
    print(json.dumps(seen))
    """
)


@dataclass(frozen=True)
class Shipped:
    """The environment where a user installed the sigkit wheel, and what CI tuned into it."""

    env: Env
    cache: dict[str, object]
    """The cache file CI wrote and the wheel ships."""


def run(cmd: list[str], cwd: Path, env: dict[str, str] | None = None) -> str:
    done = subprocess.run(
        cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=600, check=False
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def build_wheel(source: Path, distribution: str, out: Path) -> Path:
    pip_wheel = [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "-w", str(out)]
    run([*pip_wheel, str(source)], out)
    (wheel,) = out.glob(f"{distribution}-*.whl")
    return wheel


def clean_environ(**extra: str) -> dict[str, str]:
    environ = {k: v for k, v in os.environ.items() if not k.startswith(("PYTEST_", "PYTHON"))}
    return {**environ, **extra}


@pytest.fixture(scope="module")
def shipped(tmp_path_factory: pytest.TempPathFactory) -> Shipped:
    work = tmp_path_factory.mktemp("ship")
    ours = build_wheel(ROOT, "pytest_autotune", work)
    env = fresh_env(work / "venv", str(ours))

    # CI: tune the library's tests on this machine into its package folder.
    source = work / "sigkit"
    shutil.copytree(EXAMPLE, source, ignore=shutil.ignore_patterns(".autotune", "__pycache__"))
    tuned = env.run("-m", "pytest", "-p", "no:cacheprovider", "--autotune-update", cwd=source)
    assert tuned.returncode == 0, tuned.stdout + tuned.stderr
    (cache_file,) = (source / "sigkit" / ".autotune").glob("cpu-*/sigkit.ops.json")

    wheel = build_wheel(source, "sigkit", work)
    with zipfile.ZipFile(wheel) as archive:
        assert f"sigkit/.autotune/{cache_file.parent.name}/sigkit.ops.json" in archive.namelist()
    env.pip(str(wheel))
    return Shipped(env, json.loads(cache_file.read_text()))


def site_packages(env: Env) -> Path:
    out = env.run(
        "-c",
        "import sigkit, pathlib; print(pathlib.Path(sigkit.__file__).parents[1])",
        cwd=env.python.parent,
    )
    return Path(out.stdout.strip())


def listing(folder: Path) -> dict[str, int]:
    return {
        str(p.relative_to(folder)): p.stat().st_mtime_ns
        for p in folder.rglob("*")
        if "__pycache__" not in p.parts
    }


def test_a_user_gets_the_shipped_winner_untimed_and_tunes_a_new_key_into_their_cache(
    shipped: Shipped, tmp_path: Path
) -> None:
    user_dir = tmp_path / "project"
    user_dir.mkdir()
    xdg = tmp_path / "xdg"
    records = tmp_path / "records.jsonl"
    packages = site_packages(shipped.env)
    before = listing(packages)

    out = run(
        [str(shipped.env.python), "-c", USER_PROGRAM],
        cwd=user_dir,
        env=clean_environ(XDG_CACHE_HOME=str(xdg), PYTEST_AUTOTUNE_RECORD=str(records)),
    )

    seen = json.loads(out)
    device = seen["device_id"]
    assert shipped.cache["device"]["id"] == device  # type: ignore[index]
    entries = {
        (e["key"]["n"], e["key"]["window"]): e["fastest_name"]
        for e in shipped.cache["entries"]  # type: ignore[attr-defined]
    }
    assert seen["shipped"] == {f"by_{entries[(1024, 16)]}": 1}  # the winner, called once
    assert len(seen["new"]) == 3 and min(seen["new"].values()) > 1  # all three were timed
    (record,) = (json.loads(line) for line in records.read_text().splitlines())
    assert (record["source"], record["key"]["window"]) == ("tuned", 5)
    user_cache = xdg / "pytest-autotune" / device / "sigkit.ops.json"
    keys = [e["key"] for e in json.loads(user_cache.read_text())["entries"]]
    assert keys == [{"dtype": "float64", "n": 4096, "window": 5}]
    assert list(user_dir.iterdir()) == []
    assert listing(packages) == before
