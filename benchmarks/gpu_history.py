"""Why does a kernel's time depend on what the process ran before it? (issue 9, item 4)

`benchmarks/gpu_placement.py` showed the shared-atomics histogram reading about 4% faster
after three layernorm candidates had been timed than when timed first in a fresh process,
and sampling over placements of its inputs did not remove it. This script looks for the
cause inside one process at a time, so machine-to-machine differences cancel: it measures
the histogram (the gate's precise measurement, `measure_winner`), then does one thing,
then measures it again, and prints the ratio second/first for each thing:

- `nothing`: measure again (the measurement's own warm-up);
- `spin`: 300 ms of a compute-only kernel that touches no memory (clocks, power state);
- `alloc`: allocate and fill 256 MiB, then free it, no timing (memory pool, placement);
- `layernorm`: time three layernorm candidates over 256 MiB, as the issue's sequence did;
- `idle`: sleep 2 s with the GPU idle (does the state decay back?).

Each child also reads the SM and memory clocks and the power draw with `nvidia-smi`
before and after, where it exists.

    PYTHONPATH=. python3 benchmarks/gpu_history.py OUT_DIR [--runs 3]

The cause is the thing whose ratio stays away from `nothing`'s; if `spin` matches
`layernorm`, the history is the GPU's power/clock state, not where buffers land.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from gpu_placement import BYTES, LAYERNORM_BYTES, histogram_of, time_layernorms

SPIN = r"""
extern "C" __global__ void spin(long long cycles, int* sink) {
    long long start = clock64();
    while (clock64() - start < cycles) { }
    if (cycles < 0) sink[0] = 1;
}
"""

THINGS = ("nothing", "spin", "alloc", "layernorm", "idle")


def smi() -> dict[str, str]:
    if shutil.which("nvidia-smi") is None:
        return {}
    query = "clocks.sm,clocks.mem,power.draw,temperature.gpu,pstate"
    done = subprocess.run(
        ["nvidia-smi", "-i", "0", f"--query-gpu={query}", "--format=csv,noheader"],
        capture_output=True,
        text=True,
        check=False,
    )
    return dict(zip(query.split(","), (v.strip() for v in done.stdout.split(",")), strict=False))


def one_process(thing: str) -> dict[str, Any]:
    import cupy as cp

    from pytest_autotune.backends import cuda
    from pytest_autotune.gate import measure_winner

    data = cp.random.randint(0, 256, BYTES).astype(cp.uint8)
    client = cuda()
    histogram = histogram_of(cp, client)

    inputs = (data,)

    def measure() -> float:
        client.time(histogram, inputs)  # the gate's warm-up
        return measure_winner(lambda: client.time(histogram, inputs), time_cap=1.0).median

    before_state = smi()
    first = measure()
    start = time.perf_counter()
    if thing == "spin":
        spin = cp.RawModule(code=SPIN).get_function("spin")
        sink = cp.zeros(1, dtype=cp.int32)
        cycles = int(0.3 * 1.98e9)
        spin((client.sm_count * 4,), (128,), (cp.int64(cycles), sink))
        cp.cuda.Device().synchronize()
    elif thing == "alloc":
        block = cp.empty(LAYERNORM_BYTES // 4, dtype=cp.float32)
        block.fill(1.0)
        cp.cuda.Device().synchronize()
        del block
    elif thing == "layernorm":
        time_layernorms(cp, client)
    elif thing == "idle":
        time.sleep(2.0)
    between_s = time.perf_counter() - start
    middle_state = smi()
    second = measure()
    return {
        "thing": thing,
        "first_us": first * 1e6,
        "second_us": second * 1e6,
        "ratio": second / first,
        "between_s": between_s,
        "smi_before": before_state,
        "smi_middle": middle_state,
        "smi_after": smi(),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--child", choices=THINGS, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(one_process(args.child)))
        return
    args.out.mkdir(parents=True, exist_ok=True)
    results: list[dict[str, Any]] = []
    for run in range(args.runs):
        for thing in THINGS:
            child = [sys.executable, __file__, str(args.out), "--child", thing]
            done = subprocess.run(child, capture_output=True, text=True, check=False)
            if done.returncode != 0:
                print(f"run {run} {thing}: failed\n{done.stderr[-2000:]}")
                continue
            result = json.loads(done.stdout.strip().splitlines()[-1])
            result["run"] = run
            results.append(result)
            print(
                f"run {run}  {thing:9}  first {result['first_us']:7.2f} us"
                f"  second {result['second_us']:7.2f} us  ratio {result['ratio']:.3f}"
                f"  smi {result['smi_before'].get('clocks.sm', '?')}"
                f" -> {result['smi_middle'].get('clocks.sm', '?')}"
                f" power {result['smi_before'].get('power.draw', '?')}"
                f" -> {result['smi_middle'].get('power.draw', '?')}"
            )
    (args.out / "gpu_history.json").write_text(json.dumps(results, indent=2) + "\n")
    print()
    for thing in THINGS:
        ratios = [r["ratio"] for r in results if r["thing"] == thing]
        firsts = [r["first_us"] for r in results if r["thing"] == thing]
        if ratios:
            print(
                f"{thing:9}  second/first median {statistics.median(ratios):.3f}"
                f" ({min(ratios):.3f}-{max(ratios):.3f})  first {min(firsts):.1f}-"
                f"{max(firsts):.1f} us"
            )


if __name__ == "__main__":
    main()
