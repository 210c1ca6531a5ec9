"""A program with two threads: thread A tunes new keys through a LocalTuner with the CUDA
client (each tuning captures the candidates' calls into CUDA graphs on the client's capture
stream, a *blocking* stream: cuda_client.py, "Blocking, unlike the usual capture stream"),
while thread B does ordinary CuPy work on CuPy's default stream, which is CUDA's legacy
stream unless CUPY_CUDA_PER_THREAD_DEFAULT_STREAM=1.

CUDA's rule: while any blocking stream of the context is capturing, any use of the legacy
stream from any thread is invalid (cudaErrorStreamCaptureImplicit) and invalidates the
capture. So B's innocent `x * 2` may raise while A tunes, and A's captures may fail.

README promises nothing specific here; a library's users would expect B never to fail.
Prints PROBE lines: B's iterations and errors by type, A's decisions and failed candidates.
Exits 0 when B saw no error and A's every key tuned with every candidate, else 1.
The switch interval is set to 0.1 ms so that B gets to run during A's captures.
"""

from __future__ import annotations

import collections
import os
import sys
import threading
import time
import traceback

import cupy as cp
import numpy as np

from pytest_autotune import AutotuneConfig, AutotuneOutcome, TunableSet, Tuner
from pytest_autotune.backends import cuda

_SRC = r"""
extern "C" __global__ void scale(const float* x, float* out, long long n) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) out[i] = 3.0f * x[i] + 1.0f;
}
"""
_raw = cp.RawKernel(_SRC, "scale")


def expr(x):
    return x * np.float32(3) + np.float32(1)


def raw(x):
    out = cp.empty_like(x)
    _raw(((x.size + 255) // 256,), (256,), (x, out, np.int64(x.size)))
    return out


def expr_two(x):
    y = x * np.float32(3)
    return y + np.float32(1)


def many_launches(x):
    # 24 small launches: a capture of it lasts long enough for the other thread to run.
    y = x * np.float32(3)
    for _ in range(11):
        y = y + np.float32(1)
        y = y - np.float32(1)
    return y + np.float32(1)


TUNABLES = TunableSet.of(
    lambda x: ("probe_legacy", int(x.size)),
    {"expr": expr, "raw": raw, "expr_two": expr_two, "many_launches": many_launches},
)
CLIENT = cuda(0)
TUNER = Tuner("probe-legacy", CLIENT.device_id, AutotuneConfig(disable_cache=True, checks=True))

stop = threading.Event()
b_iterations = 0
b_errors: collections.Counter[str] = collections.Counter()
b_first_traceback: list[str] = []
a_report: list[str] = []
a_problems: list[str] = []


def thread_b() -> None:
    global b_iterations
    x = cp.arange(1 << 16, dtype=cp.int64)
    expected = int((x * 2 + 1).sum())  # exact: 2^32
    while not stop.is_set():
        try:
            y = x * 2 + 1  # kernels on the current (default) stream
            got = int(y.sum())  # a device-to-host copy: synchronizes that stream
            if got != expected:
                b_errors["wrong value"] += 1
        except Exception as error:
            b_errors[f"{type(error).__name__}: {str(error)[:120]}"] += 1
            if not b_first_traceback:
                b_first_traceback.append(traceback.format_exc())
            time.sleep(0.001)
        b_iterations += 1


def thread_a() -> None:
    try:
        for i in range(6):
            x = cp.random.default_rng(i).random((1 << 18) + 4096 * i, dtype=cp.float32)
            decision = TUNER.tune(("probe_legacy", int(x.size)), TUNABLES, (x,), CLIENT)
            failed = {
                r.name: getattr(r, "message", str(r))[:200]
                for r in decision.results.values()
                if not isinstance(r, AutotuneOutcome)
            }
            a_report.append(
                f"key {x.size}: winner {decision.fastest_name}, failed {failed or 'none'}"
            )
            if failed:
                a_problems.append(f"key {x.size}: candidates failed: {sorted(failed)}")
    except Exception:
        a_problems.append("thread A raised:\n" + traceback.format_exc())
    finally:
        stop.set()


def main() -> int:
    # Threads switch every 0.1 ms rather than 5 ms, so that B runs during A's captures as
    # it would beside a busy program's other threads (a data loader, a server's workers).
    sys.setswitchinterval(1e-4)
    ptds = os.environ.get("CUPY_CUDA_PER_THREAD_DEFAULT_STREAM", "0")
    print(
        f"PROBE device {CLIENT.device_id}, CuPy {cp.__version__}, CUPY_CUDA_PER_THREAD_DEFAULT_STREAM={ptds}"
    )
    b = threading.Thread(target=thread_b, daemon=True)
    a = threading.Thread(target=thread_a, daemon=True)
    b.start()
    time.sleep(0.2)
    start = time.perf_counter()
    a.start()
    a.join(90)
    stop.set()
    b.join(10)
    print(f"PROBE thread A: {time.perf_counter() - start:.2f} s, alive after join: {a.is_alive()}")
    for line in a_report:
        print("PROBE A", line)
    print(f"PROBE thread B: {b_iterations} iterations, errors: {dict(b_errors) or 'none'}")
    if b_first_traceback:
        print("PROBE B's first error:\n" + b_first_traceback[0])
    for p in a_problems:
        print("PROBE A problem:", p)
    try:
        cp.cuda.Device().synchronize()
        print("PROBE device still usable after: yes,", int(cp.arange(10).sum()))
    except Exception as error:
        print(f"PROBE device still usable after: NO ({type(error).__name__}: {error})")
        return 1
    return 1 if (b_errors or a_problems or a.is_alive()) else 0


if __name__ == "__main__":
    sys.exit(main())
