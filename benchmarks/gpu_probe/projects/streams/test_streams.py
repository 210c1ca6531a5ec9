"""Candidates that run on streams other than the caller's current one.

test_streams_joined: every candidate is correct and ordered with the caller's stream
(a side stream that waits for the caller and that the caller waits for again, the legacy
null stream, a per-call non-blocking stream joined back): plain pytest and --autotune
should pass, each candidate timed for its real work.

test_side_stream_unjoined: one candidate launches on a side stream and returns without
making the caller's stream wait: README says such a candidate "is timed short, as its
caller would be served wrong" (and its check may race). Informative: its verdict is for the
lead to read, see EXPECTED.md."""

import threading

import cupy as cp
import numpy as np
import pytest

N = 1 << 24

_SLOW_SRC = r"""
extern "C" __global__ void slow_scale(const float* x, float* out, long long n, int iters) {
    long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float v = x[i];
        float acc = v;
        for (int k = 0; k < iters; ++k) acc = acc * 0.5f + v;   // converges to 2v
        out[i] = acc;
    }
}
"""
_slow = cp.RawKernel(_SLOW_SRC, "slow_scale")
ITERS = 64


def _launch(x, out):
    n = x.size
    _slow(((n + 255) // 256,), (256,), (x, out, np.int64(n), np.int32(ITERS)))


def on_current(x):
    out = cp.empty_like(x)
    _launch(x, out)
    return out


_SIDE = {}


def _side_stream(tag):
    """A module-level side stream per candidate (and device), made once, as programs do."""
    key = (tag, cp.cuda.Device().id)
    if key not in _SIDE:
        _SIDE[key] = cp.cuda.Stream(non_blocking=True)
    return _SIDE[key]


def side_joined(x):
    caller = cp.cuda.get_current_stream()
    side = _side_stream("joined")
    side.wait_event(caller.record())
    with side:
        out = cp.empty_like(x)
        _launch(x, out)
    caller.wait_event(side.record())
    return out


def fresh_stream_joined(x):
    caller = cp.cuda.get_current_stream()
    s = cp.cuda.Stream(non_blocking=True)  # a stream made on every call
    s.wait_event(caller.record())
    with s:
        out = cp.empty_like(x)
        _launch(x, out)
    caller.wait_event(s.record())
    return out


def on_null_stream(x):
    with cp.cuda.Stream.null:
        out = cp.empty_like(x)
        _launch(x, out)
    return out


@pytest.fixture(scope="module")
def x():
    return cp.random.default_rng(0).random(N, dtype=cp.float32)


@pytest.mark.autotune(
    candidates={
        "current": on_current,
        "side_joined": side_joined,
        "fresh_stream_joined": fresh_stream_joined,
        "null_stream": on_null_stream,
    },
    rtol=1e-4,
)
def test_streams_joined(candidate, x):
    return candidate(x)


def side_unjoined(x):
    side = _side_stream("unjoined")
    side.wait_event(cp.cuda.get_current_stream().record())
    with side:
        out = cp.empty_like(x)
        _launch(x, out)
    return out  # the caller's stream never waits for `side`


@pytest.mark.autotune(
    candidates={"current": on_current, "side_unjoined": side_unjoined},
    rtol=1e-4,
)
def test_side_stream_unjoined(candidate, x):
    return candidate(x)


def test_y_side_streams_still_usable(x):
    """After the tuning (whose capture of side_unjoined fails: its side stream joined the
    capture and never rejoined), the program's own side streams must work as before."""
    for tag in ("joined", "unjoined"):
        side = _side_stream(tag)
        with side:
            y = x * 2
        side.synchronize()
        assert bool((y == x * 2).all()), tag
        print(f"PROBE side stream {tag!r} usable after the tuning: yes")


CANDIDATES = [
    ("current", on_current),
    ("side_joined", side_joined),
    ("fresh_stream_joined", fresh_stream_joined),
    ("null_stream", on_null_stream),
    ("side_unjoined", side_unjoined),
]


def test_report_stream_times():
    """Not an autotune test: prints what the CUDA client reads for each candidate, timed
    directly, so the lead can see whether the unjoined one reads short."""
    from pytest_autotune.backends import cuda

    client = cuda()
    xs = cp.random.default_rng(0).random(N, dtype=cp.float32)
    times = {}
    for name, fn in CANDIDATES:
        client.time(fn, (xs,))
        times[name] = sorted(client.time(fn, (xs,)) for _ in range(5))[2]
    print("\nPROBE stream times (us):", {k: round(v * 1e6, 1) for k, v in times.items()})
    print("PROBE threads:", [t.name for t in threading.enumerate()])
    print("PROBE uncaptured:", [n for n, f in CANDIDATES if client._replays.warmed_uncaptured(f)])
    base = times["current"]
    for name in ("side_joined", "fresh_stream_joined", "null_stream"):
        assert 0.5 < times[name] / base < 2.0, (name, times)
