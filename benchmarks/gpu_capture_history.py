"""Where does a process's history act on a kernel's time? (issue 9, item 4, continued)

`gpu_placement.py` read the shared-atomics histogram 4% faster in a process that had timed
three layernorm candidates before the histogram's first capture, and sampling over
placements of its inputs kept the 4%; `gpu_history.py`, whose interventions came after
the first capture, found nothing. So the history acts on what a capture made after it
gets. This script tells which part of a capture, with three kinds of fresh processes:

- `recapture`: capture and measure the histogram (A); time the layernorms; measure A
  again, then capture the same kernel anew (B, a new function, so a new graph and pool)
  and measure it; then empty CuPy's pool and the client's graphs and capture it a third
  time (C). If B differs from A while A stays put, the history acts at capture time.
- `offsets`: the histogram writing its 256 bins into views of one large buffer at
  offsets from 0 to 31 KiB in 1 KiB steps and from 1 to 16 MiB, each offset its own
  capture, timed in one process: if the time depends on where the bins lie (the L2
  slice that serves their global atomics), it shows here, with everything else equal.
- `inputs`: the bins fixed, the input copied to 8 fresh placements: the same for the
  input.
- `modules`: eight instances of the histogram, each its own loaded module (a RawModule of
  the same code), captured and measured in turn, then again in reverse order.
- `loaded`: the eight instances launched once each in order first (so their code is
  loaded in that order), then captured and measured in reverse order: the odd one out is
  either the one loaded first or the one captured first.
- `warm`: the client's own fixed-cost graphs captured before the histogram's first
  capture, then the histogram, then a new module of it.

    PYTHONPATH=. python3 benchmarks/gpu_capture_history.py OUT_DIR [--runs 2] [--kinds K ...]

Writes OUT_DIR/gpu_capture_history.json and prints each process's figures.
"""

from __future__ import annotations

import argparse
import functools
import json
import statistics
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from gpu_placement import BYTES, HISTOGRAM, LAYERNORM_BYTES, histogram_of, time_layernorms

SAMPLES = 15
KIB_OFFSETS = [k << 10 for k in range(32)]
MIB_OFFSETS = [m << 20 for m in range(1, 17)]


def median_us(client: Any, fn: Callable[..., Any], inputs: tuple[Any, ...]) -> float:
    client.time(fn, inputs)  # the capture and its warm-up
    return statistics.median(client.time(fn, inputs) for _ in range(SAMPLES)) * 1e6


def recapture(cp: Any, client: Any, data: Any) -> dict[str, float]:
    first = histogram_of(cp, client)
    out = {"A": median_us(client, first, (data,))}
    time_layernorms(cp, client)
    out["A after layernorms"] = median_us(client, first, (data,))
    out["B captured after layernorms"] = median_us(client, histogram_of(cp, client), (data,))
    client._replays._replays.clear()
    cp.get_default_memory_pool().free_all_blocks()
    out["C captured after emptying the pools"] = median_us(
        client, histogram_of(cp, client), (data,)
    )
    out["A recaptured"] = median_us(client, histogram_of(cp, client), (data,))
    return out


def into(cp: Any, client: Any) -> Callable[[Any, Any], None]:
    """The histogram writing into bins given by the caller."""
    kernel = cp.RawModule(code=HISTOGRAM).get_function("histogram256")
    grid = (8 * client.sm_count,)

    def histogram(x: Any, bins: Any) -> None:
        kernel(grid, (256,), (x, cp.int64(x.size), bins))

    return histogram


def offsets(cp: Any, client: Any, data: Any) -> dict[str, float]:
    fn = into(cp, client)
    buffer = cp.zeros((MIB_OFFSETS[-1] + (1 << 20)) // 4, dtype=cp.uint32)
    out = {}
    for offset in KIB_OFFSETS + MIB_OFFSETS:
        bins = buffer[offset // 4 : offset // 4 + 256]
        out[f"bins at +{offset >> 10} KiB"] = median_us(client, fn, (data, bins))
    return out


def inputs(cp: Any, client: Any, data: Any) -> dict[str, float]:
    fn = into(cp, client)
    bins = cp.zeros(256, dtype=cp.uint32)
    copies = [data] + [data.copy() for _ in range(7)]
    return {f"input copy {i}": median_us(client, fn, (copy, bins)) for i, copy in enumerate(copies)}


def modules(cp: Any, client: Any, data: Any) -> dict[str, float]:
    """Eight instances of the histogram, each its own loaded module, captured and measured in
    order, then measured again in reverse order (their graphs kept)."""
    instances = [histogram_of(cp, client) for _ in range(8)]
    out = {f"module {i}": median_us(client, fn, (data,)) for i, fn in enumerate(instances)}
    for i, fn in reversed(list(enumerate(instances))):
        out[f"module {i} again"] = (
            statistics.median(client.time(fn, (data,)) for _ in range(SAMPLES)) * 1e6
        )
    return out


def loaded(cp: Any, client: Any, data: Any) -> dict[str, float]:
    """Eight instances launched once each in order (their code loaded, lazily, in that
    order), then captured and measured in reverse order: is the one loaded first or the one
    captured first the odd one?"""
    instances = [histogram_of(cp, client) for _ in range(8)]
    for fn in instances:
        fn(data)
    cp.cuda.Device().synchronize()
    return {
        f"module {i} (loaded {i}, captured {7 - i})": median_us(client, fn, (data,))
        for i, fn in reversed(list(enumerate(instances)))
    }


def warm(cp: Any, client: Any, data: Any) -> dict[str, float]:
    """The client's fixed-cost graphs captured before the histogram's first capture."""
    client._fixed_costs.taken(True, True)
    first = histogram_of(cp, client)
    return {
        "A after the client's own graphs": median_us(client, first, (data,)),
        "B, a new module": median_us(client, histogram_of(cp, client), (data,)),
    }


def parts(cp: Any, client: Any, data: Any) -> dict[str, float]:
    """The histogram's graph in parts, captured before and after the layernorms: the output's
    memset alone, the kernel alone into bins made outside the call, and both (the call)."""

    def parts_of() -> dict[str, Callable[..., Any]]:
        fixed = cp.zeros(256, dtype=cp.uint32)
        kernel = into(cp, client)
        return {
            "memset alone": lambda x: cp.zeros(256, dtype=cp.uint32),
            "kernel alone": lambda x: kernel(x, fixed),
            "memset and kernel": histogram_of(cp, client),
        }

    out = {f"{name}, first": median_us(client, fn, (data,)) for name, fn in parts_of().items()}
    time_layernorms(cp, client)
    out |= {
        f"{name}, after layernorms": median_us(client, fn, (data,))
        for name, fn in parts_of().items()
    }
    return out


def allocated(cp: Any, client: Any, data: Any) -> dict[str, float]:
    """256 MiB allocated, filled and freed (CuPy's pool emptied) before the first capture,
    no kernel timed: does the allocator's state alone decide?"""
    block = cp.ones(LAYERNORM_BYTES // 4, dtype=cp.float32)
    del block
    cp.get_default_memory_pool().free_all_blocks()
    first = histogram_of(cp, client)
    out = {"A after an allocation": median_us(client, first, (data,))}
    time_layernorms(cp, client)
    out["B after layernorms"] = median_us(client, histogram_of(cp, client), (data,))
    return out


def _rows(cp: Any) -> Any:
    return cp.ones((LAYERNORM_BYTES // 4 // 4096, 4096), dtype=cp.float32)


def _timed_sum(cp: Any, client: Any, mib: int) -> None:
    client.time(lambda x: x.sum(), (cp.ones((mib << 20) // 4, dtype=cp.float32),))


FLIPS: dict[str, Callable[[Any, Any], None]] = {
    "nothing": lambda cp, client: None,
    "layernorms": time_layernorms,
    "normal": lambda cp, client: cp.random.standard_normal(LAYERNORM_BYTES // 4, cp.float32),
    "reduction": lambda cp, client: _rows(cp).mean(axis=1),
    "elementwise": lambda cp, client: _rows(cp) * 2,
    "zeros": lambda cp, client: cp.zeros(LAYERNORM_BYTES // 4, dtype=cp.float32),
    "small zeros": lambda cp, client: cp.zeros(256, dtype=cp.uint32),
    "timed allocation": lambda cp, client: client.time(
        lambda: cp.empty(LAYERNORM_BYTES // 4, dtype=cp.float32), ()
    ),
    "timed reduction": lambda cp, client: client.time(lambda x: x.mean(axis=1), (_rows(cp),)),
    "timed small reduction": lambda cp, client: client.time(
        lambda x: x.mean(axis=1), (cp.ones((64, 1024), dtype=cp.float32),)
    ),
    "timed elementwise": lambda cp, client: client.time(lambda x: x * 2, (_rows(cp),)),
    "timed sum": lambda cp, client: client.time(lambda x: x.sum(), (_rows(cp),)),
    "eager reductions x40": lambda cp, client: [_rows(cp).mean(axis=1) for _ in range(40)],
    "device-timed reduction": lambda cp, client: _device_client(cp).time(
        lambda x: x.mean(axis=1), (_rows(cp),)
    ),
    "captured reduction": lambda cp, client: _captured(cp, lambda x: x.mean(axis=1), _rows(cp)),
    **{
        f"timed sum of {mib} MiB": functools.partial(_timed_sum, mib=mib)
        for mib in (1, 8, 32, 64, 128)
    },
}


def settled(cp: Any, client: Any, data: Any) -> dict[str, float]:
    """After a timed sum of 256 MiB (which flips the process), does the layernorms' history
    still move a later capture?"""
    FLIPS["timed sum"](cp, client)
    out = {"A after a timed sum": median_us(client, histogram_of(cp, client), (data,))}
    time_layernorms(cp, client)
    out["B after the layernorms too"] = median_us(client, histogram_of(cp, client), (data,))
    return out


def _device_client(cp: Any) -> Any:
    from pytest_autotune.backends import CudaClient

    return CudaClient(timing="device")


def _captured(cp: Any, fn: Callable[[Any], Any], x: Any) -> None:
    """`fn(x)` captured into a graph and replayed once, without the client."""
    stream = cp.cuda.Stream()
    fn(x)
    with stream:
        stream.begin_capture()
        fn(x)
        graph = stream.end_capture()
    graph.launch(stream)
    stream.synchronize()


def flip(cp: Any, client: Any, data: Any, name: str = "nothing") -> dict[str, float]:
    """What flips a process into the other mode: one of `FLIPS` done before the histogram's
    first capture (one per process, `--flip`)."""
    FLIPS[name](cp, client)
    cp.cuda.Device().synchronize()
    cp.get_default_memory_pool().free_all_blocks()
    return {f"after {name}": median_us(client, histogram_of(cp, client), (data,))}


def memset_offsets(cp: Any, client: Any, data: Any) -> dict[str, float]:
    """The call with its memset, into bins at offsets of one buffer from 0 to 16 KiB in
    512-byte steps: is the memset's destination what decides?"""
    kernel = into(cp, client)
    buffer = cp.zeros((64 << 10) // 4, dtype=cp.uint32)

    def zeroed(x: Any, bins: Any) -> None:
        bins.data.memset_async(0, bins.nbytes)
        kernel(x, bins)

    out = {}
    for offset in range(0, 16 << 10, 512):
        bins = buffer[offset // 4 : offset // 4 + 256]
        out[f"memset and kernel, bins at +{offset} B"] = median_us(client, zeroed, (data, bins))
    return out


def pools(cp: Any, client: Any, data: Any) -> dict[str, float]:
    """The call (its bins from its capture's pool) captured 16 times in a row, each capture
    a new function and so a new pool, with the address its bins got."""
    out = {}
    for i in range(16):
        fn = histogram_of(cp, client)
        value = median_us(client, fn, (data,))
        replay = next(r for (f, _), r in client._replays._replays.items() if f is fn)
        out[f"capture {i}, bins at {replay.outputs.data.ptr:#x}"] = value
    return out


KINDS = {
    "memset_offsets": memset_offsets,
    "pools": pools,
    "flip": flip,
    "settled": settled,
    "parts": parts,
    "allocated": allocated,
    "recapture": recapture,
    "offsets": offsets,
    "inputs": inputs,
    "modules": modules,
    "loaded": loaded,
    "warm": warm,
}


def one_process(kind: str, flipped: str) -> dict[str, float]:
    import cupy as cp

    from pytest_autotune.backends import cuda

    data = cp.random.randint(0, 256, BYTES).astype(cp.uint8)  # made first, as at import
    client = cuda()
    if kind == "flip":
        return flip(cp, client, data, flipped)
    return KINDS[kind](cp, client, data)


def summary(figures: dict[str, float]) -> str:
    values = list(figures.values())
    low, high = min(values), max(values)
    return f"min {low:.2f} us, max {high:.2f} us, max/min {high / low:.3f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--runs", type=int, default=2)
    parser.add_argument("--kinds", nargs="+", choices=sorted(KINDS), default=list(KINDS))
    parser.add_argument("--child", choices=sorted(KINDS), help=argparse.SUPPRESS)
    parser.add_argument("--flip", choices=sorted(FLIPS), help=argparse.SUPPRESS)
    parser.add_argument("--flips", nargs="+", choices=sorted(FLIPS))
    args = parser.parse_args()
    if args.child:
        print(json.dumps(one_process(args.child, args.flip or "nothing")))
        return
    args.out.mkdir(parents=True, exist_ok=True)
    results: list[dict[str, Any]] = []
    for run in range(args.runs):
        jobs: list[tuple[str, str | None]] = [(k, None) for k in args.kinds if k != "flip"]
        jobs += [("flip", f) for f in args.flips or FLIPS if "flip" in args.kinds]
        for kind, flipped in jobs:
            child = [sys.executable, __file__, str(args.out), "--child", kind]
            child += ["--flip", flipped] if flipped else []
            done = subprocess.run(child, capture_output=True, text=True, check=False)
            if done.returncode != 0:
                print(f"run {run} {kind}: failed\n{done.stderr[-2000:]}")
                continue
            figures = json.loads(done.stdout.strip().splitlines()[-1])
            results.append({"run": run, "kind": kind, "figures": figures})
            print(f"run {run}  {kind}: {summary(figures)}")
            for label, value in figures.items():
                print(f"    {label:40} {value:8.2f} us")
    (args.out / "gpu_capture_history.json").write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()
