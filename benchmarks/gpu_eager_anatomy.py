"""Where an eager caller's time goes for a short call (issue 14): why the tuner's caller
timing (the larger of a graph replay's device time and the host's enqueue time) ranks the
2048x1024 layernorm's one-launch candidates equal, where a long eager loop finds one of them
7-14% behind (`benchmarks/gpu_short_calls.py`, two hosts).

For each candidate of `gpu_short_calls.families`, in `--rounds` rounds (the candidates in a
new random order each round, so no candidate always follows the same one), it reads:

- `loop`: a long eager loop (about `EAGER_LOOP_S`), synchronised once at the end, per call:
  the short-call benchmark's truth;
- `loop_host`: the same loop's host time up to its last enqueue, per call;
- `queued`: device time per call of `QUEUED_CALLS` eager calls queued behind a holding
  kernel (their launches all enqueued before the GPU starts them), timed with events: the
  device's part of an eager loop, with the stream's launches and a warm L2, without the
  host's gaps;
- `replay_cold`, `replay_warm`, `enqueue`: what the default client (`cuda()`: graph replay,
  cold L2) and a `cold_l2=False` client read, and the enqueue time of the caller timing;
- `host_nogc`: the long loop's host part with Python's garbage collector off;
- `eagerN` for each N of `--eager-calls`: the caller timing's eager loop of N counted calls
  alone (`CallerTiming.eager_loop`), to see how many calls it takes to read the long loop's
  host part, and `eagerN_mean` the same loop's mean with its slowest quarter kept; a second
  table gives each figure over its round's fastest, paired.

    PYTHONPATH=. python3 benchmarks/gpu_eager_anatomy.py OUT_DIR [--rounds N] [--per-cpu]
        [--eager-calls 24 96] [--family layernorm]

`--per-cpu` reads instead, with the process pinned to each CPU it may run on in turn, each
layernorm candidate's long loop (three loops, median): whether a host's slow spells (one
process read every loop at 16.5 us a call, the next at 11.2 us, on one machine) follow the
CPU the process runs on.

Writes OUT_DIR/eager_anatomy.json and prints one table per family: each figure's median over
the rounds, and the loop's median ratio to the round's fastest candidate (paired within a
round, so a host's slow spell lands on every candidate of that round).
"""

from __future__ import annotations

import argparse
import ctypes
import functools
import gc
import json
import os
import random
import statistics
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from benchmarks.gpu_common import cupy, table
from benchmarks.gpu_short_calls import eager_loop as loop
from benchmarks.gpu_short_calls import families
from pytest_autotune.backends import cuda_timing
from pytest_autotune.backends.cuda import CudaClient
from pytest_autotune.backends.cuda_sampler import _HOLD_SOURCE

QUEUED_CALLS = 64


class Queued:
    """Device seconds per call of eager calls queued behind a holding kernel."""

    def __init__(self, cp: Any) -> None:
        self.cp = cp
        self.kernel = cp.RawModule(code=_HOLD_SOURCE).get_function("autotune_hold")
        self.ptr = cp.cuda.runtime.hostAlloc(8, cp.cuda.runtime.hostAllocMapped)
        self.flag = (ctypes.c_int32 * 2).from_address(self.ptr)
        self.start, self.stop = cp.cuda.Event(), cp.cuda.Event()

    def __call__(self, fn: Callable[..., Any], inputs: tuple[Any, ...]) -> float | None:
        cp = self.cp
        stream = cp.cuda.get_current_stream()
        for _ in range(3):
            fn(*inputs)
        stream.synchronize()
        self.flag[0] = self.flag[1] = 0
        self.kernel((1,), (1,), (cp.uint64(self.ptr), cp.uint64(200_000_000)))
        self.start.record(stream)
        for _ in range(QUEUED_CALLS):
            fn(*inputs)
        self.stop.record(stream)
        self.flag[0] = 1
        self.stop.synchronize()
        if self.flag[1]:
            return None  # the hold gave up before the host had enqueued every call
        return float(cp.cuda.get_elapsed_time(self.start, self.stop)) / 1e3 / QUEUED_CALLS


def client_figures(client: CudaClient, fn: Callable[..., Any], inputs: tuple[Any, ...]) -> dict:
    scores = [client.time(fn, inputs) for _ in range(5)]
    cost = client.call_costs(fn)
    return {
        "score": statistics.median(scores),
        "device": cost.device if cost else None,
        "enqueue": cost.enqueue if cost else None,
    }


def per_cpu(cp: Any, out: Path) -> None:
    """Each layernorm candidate's long loop with the process pinned to each CPU in turn."""
    family = families(cp)[0]
    cpus = sorted(os.sched_getaffinity(0))
    rows, report = [], {}
    for cpu in cpus:
        os.sched_setaffinity(0, {cpu})
        figures = {
            name: statistics.median(loop(cp, fn, family.inputs)[0] for _ in range(3))
            for name, fn in family.candidates.items()
            if name != "cupy_expression"
        }
        report[cpu] = figures
        rows.append([cpu, *(v * 1e6 for v in figures.values())])
        print(
            f"cpu {cpu}: " + ", ".join(f"{n} {v * 1e6:.2f}" for n, v in figures.items()), flush=True
        )
    os.sched_setaffinity(0, set(cpus))
    print(table(["cpu", *report[cpus[0]]], rows))
    (out / "eager_per_cpu.json").write_text(json.dumps(report, indent=2) + "\n")


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--rounds", type=int, default=15)
    parser.add_argument("--per-cpu", action="store_true", help="the loops on each CPU in turn")
    parser.add_argument("--eager-calls", type=int, nargs="*", default=[24, 96, 384])
    parser.add_argument(
        "--family", default=None, help="only the families whose name holds this text"
    )
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    cp = cupy()
    if args.per_cpu:
        per_cpu(cp, args.out)
        return 0
    cold, warm = CudaClient(), CudaClient(cold_l2=False)
    queued = Queued(cp)
    rng = random.Random(1)
    report: dict[str, Any] = {}
    for family in families(cp):
        if args.family is not None and args.family not in family.name:
            continue
        names = list(family.candidates)
        rounds: dict[str, dict[str, list[float]]] = {n: {} for n in names}
        for _ in range(args.rounds):
            rng.shuffle(names)
            for name in names:
                fn = family.candidates[name]
                figures = rounds[name]
                total, host = loop(cp, fn, family.inputs)
                q = queued(fn, family.inputs)
                c = client_figures(cold, fn, family.inputs)
                w = client_figures(warm, fn, family.inputs)
                gc.disable()
                try:
                    host_nogc = loop(cp, fn, family.inputs)[1]
                finally:
                    gc.enable()
                for calls in args.eager_calls:
                    eager = functools.partial(fn, *family.inputs)
                    stream = cp.cuda.get_current_stream()
                    seconds = cold._caller.eager_loop(eager, stream, calls)
                    figures.setdefault(f"eager{calls}", []).append(seconds)
                    # The same loop's mean, its slowest quarter kept (`TRIMMED` 0).
                    trimmed, cuda_timing.TRIMMED = cuda_timing.TRIMMED, 0.0
                    try:
                        seconds = cold._caller.eager_loop(eager, stream, calls)
                    finally:
                        cuda_timing.TRIMMED = trimmed
                    figures.setdefault(f"eager{calls}_mean", []).append(seconds)
                figures.setdefault("host_nogc", []).append(host_nogc)
                for key, value in (
                    ("loop", total), ("loop_host", host), ("queued", q),
                    ("replay_cold", c["device"]), ("enqueue", c["enqueue"]),
                    ("score_cold", c["score"]), ("replay_warm", w["device"]),
                ):  # fmt: skip
                    figures.setdefault(key, []).append(float("nan") if value is None else value)
        # The loop over the round's fastest: rounds were taken candidate by candidate in
        # one order per round, so each round's values are compared with each other.
        count = args.rounds
        paired = {
            n: statistics.median(
                rounds[n]["loop"][i] / min(rounds[m]["loop"][i] for m in rounds)
                for i in range(count)
            )
            for n in rounds
        }
        report[family.name] = {"rounds": rounds, "loop_paired": paired}
        keys = ["loop", "loop_host", "host_nogc", "queued", "replay_cold", "replay_warm"]
        eagers = [f"eager{calls}{how}" for calls in args.eager_calls for how in ("", "_mean")]
        keys += ["enqueue", "score_cold", *eagers]
        rows = [
            [n, paired[n]] + [statistics.median(rounds[n][k]) * 1e6 for k in keys] for n in rounds
        ]
        print(f"== {family.name} ({count} rounds; us per call, medians)")
        print(table(["candidate", "loop / fastest (paired)", *keys], rows))
        # Each figure over its round's fastest: which of the short loops reads the long
        # loop's gaps between candidates.
        ratios = ["loop", "loop_host", *eagers]
        rows = [
            [n]
            + [
                statistics.median(
                    rounds[n][k][i] / min(rounds[m][k][i] for m in rounds) for i in range(count)
                )
                for k in ratios
            ]
            for n in rounds
        ]
        report[family.name]["paired"] = {
            row[0]: dict(zip(ratios, row[1:], strict=True)) for row in rows
        }
        print(table(["candidate", *(f"{k} / fastest" for k in ratios)], rows))
        print(flush=True)
    (args.out / "eager_anatomy.json").write_text(json.dumps(report, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
