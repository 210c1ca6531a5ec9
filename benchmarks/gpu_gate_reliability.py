"""Gate reliability on the GPU: no false failures on unchanged code, a 10% slowdown caught.

DESIGN section 8: 100 `pytest --autotune` runs of unchanged code give no gate failure, and
an injected slowdown of 10% (on a GPU) fails at least 95 of 100 runs. A temporary project
holds one autotuned group, saxpy over 2**26 fp32 elements (a float4 kernel, a grid-stride
kernel, CuPy's ufuncs); with `GATE_SLOWDOWN=s` every kernel candidate also runs over the
first s of the arrays after its full pass, so the winner does s more of the same work.

One baseline is recorded with `--autotune-update` in its own process. Then `--workers`
processes, one after another, each run `pytest.main([... --autotune])` `--runs / --workers`
times for each arm, alternating unchanged and slowed runs so drift of the device hits both.
A session per run within a process shares the process's CUDA context and peak probe; the processes
give the between-process part of the noise.

    PYTHONPATH=. python3 benchmarks/gpu_gate_reliability.py [--runs 100] [--workers 4]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

TEST_MODULE = textwrap.dedent(
    """
    import os

    import cupy as cp
    import numpy as np
    import pytest

    from example_kernels import saxpy
    from pytest_autotune import Work

    KEPT = ("float4_256", "grid_stride_512", "cupy_ufuncs")
    FULL = {name: fn for name, fn in saxpy.CUPY.items() if name in KEPT}


    def slowed(fn):
        def run(a, x, y):
            out = fn(a, x, y)
            s = float(os.environ.get("GATE_SLOWDOWN", "0"))
            if s:
                k = int(x.size * s) // 4 * 4
                fn(a, x[:k], y[:k])
            return out
        return run


    CANDIDATES = {name: slowed(fn) for name, fn in FULL.items()}


    @pytest.fixture
    def inputs():
        return saxpy.inputs(1 << 26, cp)


    @pytest.mark.autotune(candidates=CANDIDATES, work=lambda inputs: saxpy.work(*inputs), rtol=1e-3)
    def test_saxpy(candidate, inputs):
        return candidate(*inputs)
    """
)

DRIVER = textwrap.dedent(
    """
    import json, os, sys
    import pytest

    runs, slowdown, out = int(sys.argv[1]), sys.argv[2], sys.argv[3]
    results = []
    for i in range(2 * runs):
        slowed = (i % 2 == 1) if (i // 2) % 2 == 0 else (i % 2 == 0)
        if slowed:
            os.environ["GATE_SLOWDOWN"] = slowdown
        else:
            os.environ.pop("GATE_SLOWDOWN", None)
        record = f"{out}.{i}.jsonl"
        code = pytest.main(["-q", "-p", "pytest_autotune.plugin", "-p", "no:cacheprovider",
                            "--autotune", f"--autotune-record={record}", "test_gate_gpu.py"])
        results.append({"slowed": slowed, "exit": int(code), "record": record})
    with open(out, "w") as f:
        json.dump(results, f)
    """
)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=100)
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--slowdown", default="0.10")
    args = parser.parse_args()
    env = {**os.environ, "PYTHONPATH": f"{REPO}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        project = Path(tmp)
        (project / "test_gate_gpu.py").write_text(TEST_MODULE)
        (project / "driver.py").write_text(DRIVER)
        (project / "pytest.ini").write_text("[pytest]\n")
        base = subprocess.run(
            [
                sys.executable,
                "-m",
                "pytest",
                "-q",
                "-p",
                "pytest_autotune.plugin",
                "-p",
                "no:cacheprovider",
                "--autotune-update",
                "test_gate_gpu.py",
            ],
            cwd=project,
            env=env,
            capture_output=True,
            text=True,
            check=False,
        )
        print(base.stdout[-1500:])
        if base.returncode != 0:
            print(base.stderr[-2000:])
            return 1
        per_worker = max(1, args.runs // args.workers)
        # One process after another: a process creating its inputs while another one
        # times would load the device and read as noise that CI's runs do not have.
        for w in range(args.workers):
            done = subprocess.run(
                [sys.executable, "driver.py", str(per_worker), args.slowdown, f"w{w}.json"],
                cwd=project,
                env=env,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
                text=True,
                check=False,
            )
            if done.returncode:
                print(done.stderr[-2000:])
            path = project / f"w{w}.json"
            runs = json.loads(path.read_text()) if path.exists() else []
            bad = sum(r["exit"] != 0 and not r["slowed"] for r in runs)
            caught = sum(r["exit"] != 0 and r["slowed"] for r in runs)
            print(
                f"worker {w} done at {time.perf_counter() - started:.0f} s: unchanged failures"
                f" {bad}/{len(runs) // 2}, slowed caught {caught}/{len(runs) // 2}",
                flush=True,
            )
        results = []
        for w in range(args.workers):
            path = project / f"w{w}.json"
            if path.exists():
                results.extend(json.loads(path.read_text()))
        medians = {False: [], True: []}
        failures = {False: 0, True: 0}
        for r in results:
            failures[r["slowed"]] += r["exit"] != 0
            for line in Path(project / r["record"]).read_text().splitlines():
                samples = json.loads(line)["extra"]["winner_samples_ns"]
                if samples:
                    medians[r["slowed"]].append(statistics.median(samples))
    unchanged = sum(not r["slowed"] for r in results)
    slowed = sum(r["slowed"] for r in results)
    logs = [math.log(m) for m in medians[False]]
    spread = statistics.pstdev(logs) if len(logs) > 1 else float("nan")
    print(f"unchanged runs: {unchanged}, gate failures: {failures[False]} (target 0)")
    print(
        f"slowed by {float(args.slowdown):.0%}: {slowed}, gate failures: {failures[True]}"
        f" ({failures[True] / max(slowed, 1):.0%}, target >= 95%)"
    )
    print(
        f"winner median, unchanged: {statistics.median(medians[False]) / 1e3:.1f} us;"
        f" slowed: {statistics.median(medians[True]) / 1e3:.1f} us;"
        f" spread of ln(median) across unchanged runs: {spread:.4f}"
    )
    print(f"wall time: {time.perf_counter() - started:.0f} s")
    ok = failures[False] == 0 and failures[True] >= 0.95 * slowed
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
