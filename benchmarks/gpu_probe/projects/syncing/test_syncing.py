"""Candidates that synchronize inside their call: Device().synchronize(), .item()/float(),
a host round trip through .get(), cupy.nonzero (which syncs to size its output), and one
that returns a NumPy array (.get()) beside CuPy-returning ones. README: "a call that
synchronizes" cannot be captured and is timed through the stream; the hold gives up after
HOLD_TIMEOUT_S (0.2 s) so there is no deadlock. All are correct: every test should pass."""

import cupy as cp
import pytest

N = 1 << 22


def plain(x):
    return x / cp.max(x)


def device_sync(x):
    y = x / cp.max(x)
    cp.cuda.Device().synchronize()
    return y


def stream_sync(x):
    y = x / cp.max(x)
    cp.cuda.get_current_stream().synchronize()
    return y


def via_item(x):
    m = float(cp.max(x))  # .item(): a device-to-host copy, synchronizes
    return x / cp.float32(m)


def host_round_trip(x):
    y = x / cp.max(x)
    return cp.asarray(y.get())  # device -> host -> device


@pytest.fixture(scope="module")
def x():
    return cp.random.default_rng(0).random(N, dtype=cp.float32) + cp.float32(0.5)


@pytest.mark.autotune(
    candidates={
        "plain": plain,
        "device_sync": device_sync,
        "stream_sync": stream_sync,
        "via_item": via_item,
        "host_round_trip": host_round_trip,
    },
    rtol=1e-6,
)
def test_normalize(candidate, x):
    return candidate(x)


def count_nonzero_mask(x):
    return cp.count_nonzero(x > 1.0)


def nonzero_len(x):
    return cp.asarray(cp.nonzero(x > 1.0)[0].size, dtype=cp.int64)  # nonzero syncs to size


@pytest.mark.autotune(candidates={"count_nonzero": count_nonzero_mask, "nonzero": nonzero_len})
def test_count(candidate, x):
    return candidate(x)


def to_host(x):
    return (x * 2).get()  # a NumPy array


def on_device(x):
    return x * 2  # a CuPy array


@pytest.mark.autotune(candidates={"on_device": on_device, "to_host": to_host})
def test_mixed_output_types(candidate, x):
    return candidate(x)
