"""The runtime library from plain Python with two threads: a LocalTuner with the CUDA client.

Phase 1: both threads meet the same new key at once. README: "Two threads meeting the same
         new key tune it once (the second waits)". Both must get the right output; the
         record file must hold one decision for that key.
Phase 2: the two threads tune two different new keys at the same time (the client's lock
         serializes their samples). Both right, one decision per key.
Phase 3: both threads call the bound operation (`TUNER.bind`) 200 times on hits.
Prints PROBE lines and exits 0 when everything held, 1 otherwise.
"""

from __future__ import annotations

import collections
import json
import os
import sys
import tempfile
import threading
import time
import traceback

import cupy as cp
import numpy as np

from pytest_autotune import AutotuneConfig, TunableSet, local_tuner
from pytest_autotune.backends import cuda

_SRC = r"""
extern "C" __global__ void scale(const float* x, float* out, long long n) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = 3.0f * x[i] + 1.0f;
}
"""
_raw = cp.RawKernel(_SRC, "scale")
_ew = cp.ElementwiseKernel("float32 x", "float32 y", "y = 3.0f * x + 1.0f", "probe_thr_ew")


def expr(x):
    return x * np.float32(3) + np.float32(1)


def raw(x):
    out = cp.empty_like(x)
    _raw(((x.size + 255) // 256,), (256,), (x, out, np.int64(x.size)))
    return out


def elementwise(x):
    return _ew(x)


@cp.fuse()
def _fused(x):
    return x * np.float32(3) + np.float32(1)


def fused(x):
    return _fused(x)


def make_set() -> TunableSet:
    return TunableSet.of(
        lambda x: ("probe_scale", int(x.size)),
        {"expr": expr, "raw": raw, "elementwise": elementwise, "fused": fused},
    )


WORK = tempfile.mkdtemp(prefix="probe-threads-")
RECORD = os.path.join(WORK, "records.jsonl")
TUNER = local_tuner(
    "probe-threads",
    AutotuneConfig(cache_dir=os.path.join(WORK, "cache"), checks=True, record=RECORD),
)
CLIENT = cuda(0)
problems: list[str] = []
lock = threading.Lock()


def check(out, x, who):
    expected = x * np.float32(3) + np.float32(1)
    if not isinstance(out, cp.ndarray) or not bool(cp.allclose(out, expected, rtol=1e-6)):
        with lock:
            problems.append(f"{who}: wrong output {type(out).__name__}")


def run_threads(target, args_per_thread, label, timeout=60.0):
    errors: list[str] = []
    barrier = threading.Barrier(len(args_per_thread))

    def body(i, args):
        try:
            barrier.wait()
            target(i, *args)
        except BaseException:
            errors.append(f"thread {i}: {traceback.format_exc()}")

    threads = [
        threading.Thread(target=body, args=(i, a), daemon=True)
        for i, a in enumerate(args_per_thread)
    ]
    start = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout)
    hung = [i for i, t in enumerate(threads) if t.is_alive()]
    took = time.perf_counter() - start
    print(f"PROBE {label}: {took:.2f} s, errors {len(errors)}, hung threads {hung}")
    for e in errors:
        print(e)
    if hung:
        problems.append(f"{label}: threads {hung} still running after {timeout} s (deadlock?)")
    problems.extend(f"{label}: {e.splitlines()[-1]}" for e in errors)


def execute_on(i, x):
    tunables = TUNER.init(make_set)
    out = TUNER.execute(CLIENT.device_id, CLIENT, tunables, (x,))
    check(out, x, f"thread {i}")


def decisions_by_key():
    counts = collections.Counter()
    sources = collections.Counter()
    winners = {}
    if os.path.exists(RECORD):
        for line in open(RECORD):
            line = line.strip()
            if not line:
                continue
            r = json.loads(line)
            key = json.dumps(r.get("key"), sort_keys=True)
            sources[r.get("source")] += 1
            if r.get("source", "tuned") != "tuned":
                continue  # a decision served from the cache, not a tuning
            counts[key] += 1
            winners[key] = r.get("fastest_name")
    print(f"PROBE records by source: {dict(sources)}")
    return counts, winners


def main() -> int:
    print(f"PROBE device {CLIENT.device_id}, CuPy {cp.__version__}, work dir {WORK}")
    # Phase 1: one new key, two threads at once (each its own array of the same size).
    same = [(cp.random.default_rng(i).random(1 << 22, dtype=cp.float32),) for i in range(2)]
    run_threads(execute_on, same, "phase 1 (same new key, 2 threads)")
    # Phase 2: two different new keys at once.
    diff = [
        (cp.random.default_rng(10 + i).random((1 << 20) + 1000 * (i + 1), dtype=cp.float32),)
        for i in range(2)
    ]
    run_threads(execute_on, diff, "phase 2 (two new keys, 2 threads)")
    # Phase 3: the bound operation on hits, 200 calls a thread.
    op = TUNER.bind(CLIENT.device_id, CLIENT, TUNER.init(make_set))

    def hits(i, x):
        for _ in range(200):
            out = op(x)
        check(out, x, f"bound thread {i}")

    run_threads(hits, same, "phase 3 (bound op on hits, 2 threads x 200)")
    counts, winners = decisions_by_key()
    print(f"PROBE tunings recorded per key: {dict(counts)}")
    print(f"PROBE winners: {winners}")
    for key, count in counts.items():
        if count != 1:
            problems.append(f"key {key} was decided {count} times (README: tuned once)")
    if len(counts) != 3:
        problems.append(f"expected 3 keys decided, found {len(counts)}")
    print("PROBE problems:", problems or "none")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
