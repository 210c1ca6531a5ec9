"""Gate reliability on the GPU: no false failures on unchanged code, a 10% slowdown caught.

DESIGN section 8: 100 `pytest --autotune` runs of unchanged code give no gate failure, and
an injected slowdown of 10% (on a GPU) fails at least 95 of 100 runs. A temporary project
holds one autotuned group, saxpy over 2**26 fp32 elements (a float4 kernel, a grid-stride
kernel, CuPy's ufuncs); with `GATE_SLOWDOWN=s` every kernel candidate also runs over the
first s of the arrays after its full pass, so the winner does s more of the same work.

A second group is SM-bound: a 256-bin histogram of 2**26 bytes counted with shared-memory
atomics (8 blocks of 256 threads per SM, as in issue 9), against the same with global
atomics and `cupy.bincount`; slowed by counting 1 + s times the bytes in its one pass (the
bytes and their first s again) and subtracting the extra counts. Before 2026-11-30 (third
session) it ran a second launch over the first s, which read +20% for s = 10%.

`--condition` (issue 9): `module` (the default: this module alone), `suite` (a second
module of GPU work that allocates and frees 1 GiB, collected first, baseline and gate
alike), `k` (the baseline by the whole suite, the gate on a `-k` subset of the two
groups), `xdist` (baseline and gate under `-n 2`; on a host with two GPUs each worker
takes one), `groups` (saxpy tuned with a `groups=` plan whose first batch succeeds).

The baseline is recorded with `--baseline-sessions` (1) `--autotune-update` sessions, each
its own process. Then `--workers`
processes, one after another, each run `pytest.main([... --autotune])` `--runs / --workers`
times for each arm, alternating unchanged and slowed runs so drift of the device hits both.
A session per run within a process shares the process's CUDA context and peak probe; the processes
give the between-process part of the noise.

    PYTHONPATH=. python3 benchmarks/gpu_gate_reliability.py [--runs 100] [--workers 4]
        [--condition module|suite|k|xdist|groups]

Prints, per group, unchanged runs that failed (target 0), slowed runs caught (target 95%)
and "too noisy" verdicts of each.
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
from typing import Any

from benchmarks.gpu_common import HISTOGRAM_KERNELS

REPO = Path(__file__).resolve().parent.parent

TEST_MODULE = textwrap.dedent(
    '''
    import os

    import cupy as cp
    import numpy as np
    import pytest

    from example_kernels import saxpy
    from pytest_autotune import TuneGroup, Work

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


    PLAN = [
        (TuneGroup("vector", lambda key: 2), {"float4_256": 1, "grid_stride_512": 1}),
        (TuneGroup("fallback", lambda key: 1), {"cupy_ufuncs": 1}),
    ]
    GROUPS = PLAN if os.environ.get("GATE_GROUPS") else None


    @pytest.mark.autotune(
        candidates=CANDIDATES, work=lambda inputs: saxpy.work(*inputs), rtol=1e-3, groups=GROUPS
    )
    def test_saxpy(candidate, inputs):
        return candidate(*inputs)


    HISTOGRAM = r"""@HISTOGRAM_KERNELS@"""
    MODULE = cp.RawModule(code=HISTOGRAM)
    SMS = cp.cuda.Device().attributes["MultiProcessorCount"]


    _LONGER = {}


    def longer(data, s):
        """`data` and the first s of it again, and the counts of that extra part: a slowed
        histogram counts 1 + s times the bytes in the same one pass (a second launch over a
        tenth of the bytes would cost more than a tenth, its fixed grid being the same) and
        subtracts the extra counts, so its output stays right."""
        key = (data.data.ptr, s)
        if key not in _LONGER:
            extra = data[: int(data.size * s)]
            _LONGER[key] = (
                cp.concatenate([data, extra]),
                cp.bincount(extra, minlength=256).astype(cp.uint32),
            )
        return _LONGER[key]


    def kernel(name):
        fn = MODULE.get_function(name)

        def histogram(data):
            bins = cp.zeros(256, dtype=cp.uint32)
            s = float(os.environ.get("GATE_SLOWDOWN", "0"))
            if s:
                data, extra_counts = longer(data, s)
            fn((8 * SMS,), (256,), (data, cp.int64(data.size), bins))
            if s:
                bins -= extra_counts
            return bins
        return histogram


    def bincount(data):
        s = float(os.environ.get("GATE_SLOWDOWN", "0"))
        if s:
            longer_data, extra_counts = longer(data, s)
            return cp.bincount(longer_data, minlength=256).astype(cp.uint32) - extra_counts
        return cp.bincount(data, minlength=256).astype(cp.uint32)


    BYTES = cp.random.randint(0, 256, 1 << 26).astype(cp.uint8)  # made at import


    @pytest.mark.autotune(
        candidates={"shared_atomics": kernel("shared256"), "global_atomics": kernel("global256"),
                    "bincount": bincount},
        work=lambda: Work(bytes=1 << 26),
    )
    def test_histogram(candidate):
        return candidate(BYTES)
    '''
)

OTHER_MODULE = textwrap.dedent(
    """
    # Ordinary GPU tests of the suite, collected first: a layernorm over 256 MiB and
    # allocations of 1 GiB, so the gated groups run in a process with a history.
    import cupy as cp
    import pytest


    @pytest.mark.parametrize("rows", [4096, 16384])
    def test_layernorm(rows):
        x = cp.random.standard_normal((rows, 4096), dtype=cp.float32)
        y = (x - x.mean(axis=1, keepdims=True)) / cp.sqrt(x.var(axis=1, keepdims=True) + 1e-5)
        assert abs(float(y.mean())) < 1e-2


    def test_big_allocation():
        blocks = [cp.ones(1 << 26, dtype=cp.float32) for _ in range(4)]
        assert float(sum(b.sum() for b in blocks)) == 4 * (1 << 26)
    """
)

CONDITIONS = ("module", "suite", "k", "xdist", "groups")


def selection(condition: str, gate: bool) -> list[str]:
    if condition == "suite" or (condition == "k" and not gate):
        return []
    if condition == "k":
        return ["-k", "test_saxpy or test_histogram"]
    if condition == "xdist":
        return ["-n", "2", "test_gate_gpu.py"]
    return ["test_gate_gpu.py"]


DRIVER = textwrap.dedent(
    """
    import json, os, sys
    import pytest

    runs, slowdown, out = int(sys.argv[1]), sys.argv[2], sys.argv[3]
    selection = json.loads(sys.argv[4])
    results = []
    for i in range(2 * runs):
        slowed = (i % 2 == 1) if (i // 2) % 2 == 0 else (i % 2 == 0)
        if slowed:
            os.environ["GATE_SLOWDOWN"] = slowdown
        else:
            os.environ.pop("GATE_SLOWDOWN", None)
        record = f"{out}.{i}.jsonl"
        code = pytest.main(["-q", "-p", "pytest_autotune.plugin", "-p", "no:cacheprovider",
                            "--autotune", f"--autotune-record={record}", *selection])
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
    parser.add_argument("--condition", choices=CONDITIONS, default="module")
    parser.add_argument(
        "--budget",
        type=float,
        default=None,
        help="seconds: start no further worker once the last one's duration would pass it,"
        " and report the runs done (a device call's time limit)",
    )
    parser.add_argument(
        "--baseline-sessions",
        type=int,
        default=1,
        help="record the baseline with this many --autotune-update sessions, as the README"
        " advises (the cache keeps the sessions that agree; their spread widens the noise)",
    )
    args = parser.parse_args()
    env = {**os.environ, "PYTHONPATH": f"{REPO}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    if args.condition == "groups":
        env["GATE_GROUPS"] = "1"
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        project = Path(tmp)
        (project / "test_gate_gpu.py").write_text(
            TEST_MODULE.replace("@HISTOGRAM_KERNELS@", HISTOGRAM_KERNELS)
        )
        (project / "driver.py").write_text(DRIVER)
        (project / "pytest.ini").write_text("[pytest]\n")
        if args.condition in ("suite", "k"):
            (project / "test_a_other_gpu.py").write_text(OTHER_MODULE)
        for _ in range(args.baseline_sessions):
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
                    *selection(args.condition, gate=False),
                ],
                cwd=project,
                env=env,
                capture_output=True,
                text=True,
                check=False,
            )
            if base.returncode != 0:
                print(base.stdout[-1500:], base.stderr[-2000:])
                return 1
        print(base.stdout[-1500:])
        per_worker = max(1, args.runs // args.workers)
        # One process after another: a process creating its inputs while another one
        # times would load the device and read as noise that CI's runs do not have.
        last = 0.0
        for w in range(args.workers):
            if args.budget is not None and time.perf_counter() - started + last > args.budget:
                print(f"budget of {args.budget:.0f} s reached: {w} workers of {args.workers} ran")
                break
            began = time.perf_counter()
            done = subprocess.run(
                [
                    sys.executable,
                    "driver.py",
                    str(per_worker),
                    args.slowdown,
                    f"w{w}.json",
                    json.dumps(selection(args.condition, gate=True)),
                ],
                cwd=project,
                env=env,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
                text=True,
                check=False,
            )
            last = time.perf_counter() - began
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
        verdicts: dict[tuple[str, bool], list[str]] = {}
        comparisons: dict[tuple[str, bool], list[dict[str, Any]]] = {}
        for r in results:
            failures[r["slowed"]] += r["exit"] != 0
            for line in Path(project / r["record"]).read_text().splitlines():
                extra = json.loads(line)["extra"]
                group = extra["group"].split("::")[-1]
                verdicts.setdefault((group, r["slowed"]), []).append(extra["verdict"])
                if extra.get("comparison"):
                    comparisons.setdefault((group, r["slowed"]), []).append(extra["comparison"])
                samples = extra["winner_samples_ns"]
                if samples and group == "test_saxpy":
                    medians[r["slowed"]].append(statistics.median(samples))
    unchanged = sum(not r["slowed"] for r in results)
    slowed = sum(r["slowed"] for r in results)
    logs = [math.log(m) for m in medians[False]]
    spread = statistics.pstdev(logs) if len(logs) > 1 else float("nan")
    print(f"condition: {args.condition}")
    for (group, was_slowed), seen in sorted(verdicts.items()):
        failing = sum(v in ("regression", "floor", "error") for v in seen)
        caught = sum(v == "regression" for v in seen)
        noisy = sum(v == "too noisy" for v in seen)
        what = f"caught {caught}" if was_slowed else f"failed {failing}"
        print(
            f"  {group:15} {'slowed' if was_slowed else 'unchanged':9} {what}/{len(seen)},"
            f" too noisy {noisy}/{len(seen)}"
        )
        # The figures the verdicts used: the spread of the change over unchanged sessions
        # is the between-session noise the gate's interval should carry on this machine.
        seen_comparisons = comparisons.get((group, was_slowed), [])
        if seen_comparisons:
            deltas = [c["delta"] for c in seen_comparisons]
            widths = [(float(c["high"]) - float(c["low"])) / 2 for c in seen_comparisons]
            print(
                f"  {'':15} change {statistics.median(deltas):+.2%} (sd"
                f" {statistics.pstdev(deltas):.2%}, {min(deltas):+.2%} to {max(deltas):+.2%}),"
                f" interval half-width median {statistics.median(widths):.2%}"
            )
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
