"""What the installed plugin costs a pytest run that does not use it.

`pytest` of a project of one plain test, with the plugin left out (`-p no:autotune`) and
with it, the two interleaved so that both meet the same moments of a shared machine; the
best of `--rounds` runs of each, and their difference. The plugin is the package of
`--tree` (default: the tree this script is in), put first on the path, which the
installed entry point then loads.

    python benchmarks/plugin_cost.py [--tree PATH] [--rounds 10] [--no-bytecode] [-- ARGS...]

`--no-bytecode` runs with PYTHONDONTWRITEBYTECODE=1, as many CI images do: pytest then
rewrites the asserts of the plugin's modules again at every run. ARGS go to each pytest
run (`-- -n 2` for pytest-xdist's workers). CPU only; about 10-30 s.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def timed(command: list[str], cwd: Path, env: dict[str, str]) -> float:
    start = time.perf_counter()
    subprocess.run(command, cwd=cwd, env=env, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tree", type=Path, default=REPO)
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--no-bytecode", action="store_true")
    parser.add_argument("args", nargs="*", help="given to each pytest run (after --)")
    options = parser.parse_args()
    env = {**os.environ, "PYTHONPATH": str(options.tree.resolve())}
    env.pop("PYTEST_ADDOPTS", None)
    if options.no_bytecode:
        env["PYTHONDONTWRITEBYTECODE"] = "1"
    with tempfile.TemporaryDirectory() as scratch:
        project = Path(scratch)
        (project / "test_plain.py").write_text("def test_plain():\n    assert 1 + 1 == 2\n")
        (project / "pytest.ini").write_text("[pytest]\n")
        pytest = [sys.executable, "-m", "pytest", "-q", "-p", "no:randomly", *options.args]
        runs = {"-p no:autotune": [*pytest, "-p", "no:autotune"], "with the plugin": pytest}
        # Each command once before timing: the plugin's check that it loads at all, and
        # the first run's writes (bytecode, pytest's rewrite cache) out of the figures.
        for command in runs.values():
            timed(command, project, env)
        best = dict.fromkeys(runs, float("inf"))
        for _ in range(options.rounds):
            for name, command in runs.items():
                best[name] = min(best[name], timed(command, project, env))
    without, with_plugin = best["-p no:autotune"], best["with the plugin"]
    print(f"tree: {options.tree.resolve()}, best of {options.rounds} runs each")
    print(f"-p no:autotune   {without:.3f} s")
    print(f"with the plugin  {with_plugin:.3f} s")
    print(f"difference       {with_plugin - without:+.3f} s")


if __name__ == "__main__":
    main()
