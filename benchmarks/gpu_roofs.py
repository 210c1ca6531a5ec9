"""The example families on the GPU: each tuned with checks on (against the NumPy reference)
at the sizes of DESIGN section 8, each candidate's median as a fraction of the binding
roof, and the winner against its target (saxpy 95% and transpose 80% and softmax 70% of the
memory roof, sum 90% of the read roof, fp32 matmul 75% of the FMA peak).

A candidate that fails its check (the naive atomic sum) is excluded from the tuning and
shown as such.
"""

from __future__ import annotations

import sys
import time
from typing import Any

from benchmarks.gpu_common import FAMILIES, Family, cupy, host_reference, table, write_json
from pytest_autotune import AutotuneConfig, AutotuneError, AutotuneOutcome, TunableSet, Tuner
from pytest_autotune.backends import cuda


def roof_of(family: Family, peaks: Any) -> float:
    """The rate the family's binding resource is held to: operations or bytes per second."""
    if family.roof == "compute":
        return float(peaks.compute_peak("fp32"))
    if family.roof == "read":
        return float(peaks.memory["read"])
    return float(peaks.memory_peak)


def main() -> int:
    cp = cupy()
    client = cuda()
    peaks = client.peaks()
    summary: list[list[object]] = []
    results: dict[str, Any] = {}
    misses = 0
    for family in FAMILIES:
        inputs = family.module.inputs(*family.args, xp=cp)
        work = family.module.work(*inputs)
        amount = work.compute_ops if family.roof == "compute" else work.bytes
        roof = roof_of(family, peaks)
        tunables = TunableSet.of(lambda *v, key=family.name: key, family.module.CUPY)
        config = AutotuneConfig(disable_cache=True, checks=True, **family.tolerances)
        tuner = Tuner(
            f"roofs-{family.name}",
            client.device_id,
            config,
            reference=host_reference(family.module),
        )
        started = time.perf_counter()
        decision = tuner.tune(family.name, tunables, inputs, client)
        wall = time.perf_counter() - started
        rows: list[list[object]] = []
        per_candidate: dict[str, Any] = {}
        for index, name in enumerate(tunables.names):
            result = decision.results.get(index)
            if isinstance(result, AutotuneOutcome):
                fraction = amount / result.median / roof
                rows.append([name, result.median * 1e6, fraction, len(result.samples), ""])
                per_candidate[name] = {"median_s": result.median, "fraction": fraction}
            else:
                why = result.message if isinstance(result, AutotuneError) else "not timed"
                rows.append([name, "-", "-", 0, why[:70]])
                per_candidate[name] = {"error": why}
        print(
            f"== {family.name} {family.args}: roof {family.roof} {roof:.4g}/s,"
            f" checked and tuned in {wall:.2f} s"
        )
        print(table(["candidate", "median us", "fraction of roof", "samples", "note"], rows))
        print()
        best = per_candidate.get(decision.fastest_name, {})
        fraction = best.get("fraction", float("nan"))
        met = fraction >= family.target
        misses += not met
        median_us = best.get("median_s", float("nan")) * 1e6
        verdict = "met" if met else "MISSED"
        summary.append(
            [family.name, decision.fastest_name, median_us, fraction, family.target, verdict]
        )
        results[family.name] = {
            "winner": decision.fastest_name,
            "candidates": per_candidate,
            "roof": family.roof,
            "roof_rate": roof,
            "tune_wall_s": wall,
        }
        del inputs
        cp.get_default_memory_pool().free_all_blocks()
    print(
        table(["family", "winner", "median us", "fraction of roof", "target", "verdict"], summary)
    )
    write_json("roofs.json", results)
    return 1 if misses else 0


if __name__ == "__main__":
    sys.exit(main())
