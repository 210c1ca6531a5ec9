"""PyTorch candidates on the CUDA client: their times against `triton.testing.do_bench`.

A torch candidate is never captured in one of the client's graphs (its kernels go to
torch's stream: `cuda_graphs.inputs_key`), so it is timed through the stream, behind the
held stream, with events ordered against torch's work. This script tunes a few torch
families with a fresh `Tuner` (device timing and the default caller timing) and prints each
candidate's median time beside do_bench's median of the same call, with the winners of
both: the ratio tells whether the client times torch's device work (about 1) or something
else (the launches alone: far under 1; a synchronisation: far over).

    PYTHONPATH=. python3 benchmarks/gpu_torch.py

Writes `$OUT/gpu_torch.json` when `OUT` is set. Exit code 1 when a winner is not do_bench's
(nor within 3% of it by do_bench's clock).
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable
from typing import Any

from benchmarks.gpu_common import gpu_import, table, write_json
from pytest_autotune import AutotuneConfig, AutotuneOutcome, TunableSet, Tuner
from pytest_autotune.backends import cuda

SAME = 1.03


def families(torch: Any) -> dict[str, tuple[dict[str, Callable[..., Any]], tuple[Any, ...]]]:
    x = torch.rand(1 << 26, device="cuda")
    rows = torch.rand(4096, 4096, device="cuda")
    a, b = torch.rand(4096, 4096, device="cuda"), torch.rand(4096, 4096, device="cuda")

    def manual_softmax(m: Any) -> Any:
        e = torch.exp(m - m.max(dim=1, keepdim=True).values)
        return e / e.sum(dim=1, keepdim=True)

    return {
        "saxpy": (
            {"mul_add": lambda v: 2.0 * v + 1.0, "add": lambda v: torch.add(v, v) + 1.0},
            (x,),
        ),
        "softmax": (
            {"torch": lambda m: torch.softmax(m, dim=1), "manual": manual_softmax},
            (rows,),
        ),
        "matmul": (
            {"matmul": torch.matmul, "einsum": lambda p, q: torch.einsum("ik,kj->ij", p, q)},
            (a, b),
        ),
    }


def main() -> int:
    torch = gpu_import("torch")
    triton_testing = gpu_import("triton.testing")

    clients = {"device": cuda(timing="device"), "caller": cuda()}
    report: dict[str, Any] = {}
    rows = []
    worst = 0
    for name, (candidates, inputs) in families(torch).items():
        for fn in candidates.values():
            fn(*inputs)
        torch.cuda.synchronize()
        do_bench = {
            label: triton_testing.do_bench(functools.partial(fn, *inputs), return_mode="median")
            / 1e3
            for label, fn in candidates.items()
        }
        best = min(do_bench.values())
        tunables = TunableSet.of(lambda *args, family=name: family, candidates)
        for timing, client in clients.items():
            config = AutotuneConfig(disable_cache=True)
            tuner = Tuner("gpu-torch", client.device_id, config)
            decision = tuner.tune(name, tunables, inputs, client)
            medians = {
                r.name: r.median
                for r in decision.results.values()
                if isinstance(r, AutotuneOutcome)
            }
            same = do_bench[decision.fastest_name] <= SAME * best
            worst |= not same
            report[f"{name}/{timing}"] = {
                "ours_s": medians,
                "do_bench_s": do_bench,
                "winner": decision.fastest_name,
                "same_winner": same,
            }
            for label, seconds in medians.items():
                rows.append(
                    [
                        f"{name} ({timing})",
                        label,
                        f"{seconds * 1e6:.1f}",
                        f"{do_bench[label] * 1e6:.1f}",
                        f"{seconds / do_bench[label]:.3f}",
                        "winner" if label == decision.fastest_name else "",
                    ]
                )
    print(table(["family", "candidate", "ours us", "do_bench us", "ratio", ""], rows))
    write_json("gpu_torch.json", report)
    return 1 if worst else 0


if __name__ == "__main__":
    sys.exit(main())
