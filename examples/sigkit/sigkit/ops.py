"""`moving_sum(x, window)`: three implementations, the fastest picked per key and device.

Each is exact to rounding; which is fastest depends on the window, the size and the CPU.
The winners come from `sigkit/.autotune/<device_id>/sigkit.ops.json`, which the tests
(`pytest --autotune-update`) write and the wheel ships; a key or device they do not cover
is tuned once on the user's machine and kept in the user's cache directory.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from pytest_autotune import AutotuneKey, Tunable, TunableSet, anchor, local_tuner
from pytest_autotune.backends import cpu

TUNER = local_tuner()
"""Named "sigkit.ops" after this module; reads the shipped caches of the `sigkit` package."""


@dataclass(frozen=True)
class MovingSumKey(AutotuneKey):
    n: int
    window: int
    dtype: str


def by_convolve(x: NDArray[np.float64], window: int) -> NDArray[np.float64]:
    return np.convolve(x, np.ones(window, dtype=x.dtype), mode="valid")


def by_cumsum(x: NDArray[np.float64], window: int) -> NDArray[np.float64]:
    total = np.cumsum(x)
    out = total[window - 1 :].copy()
    out[1:] -= total[: x.size - window]
    return out


def by_window_view(x: NDArray[np.float64], window: int) -> NDArray[np.float64]:
    windows = np.lib.stride_tricks.sliding_window_view(x, window)
    out: NDArray[np.float64] = windows.sum(axis=1)
    return out


def moving_sum_key(x: NDArray[np.float64], window: int) -> MovingSumKey:
    return MovingSumKey(anchor(x.size), window, str(x.dtype))


def moving_sum_set() -> TunableSet:
    return (
        TunableSet(moving_sum_key)
        .with_(Tunable("convolve", by_convolve))
        .with_(Tunable("cumsum", by_cumsum))
        .with_(Tunable("window_view", by_window_view))
    )


def moving_sum(x: NDArray[np.float64], window: int) -> NDArray[np.float64]:
    """The sums of every `window` consecutive values of `x`."""
    tunables = TUNER.init(moving_sum_set)
    client = cpu()
    result: NDArray[np.float64] = TUNER.execute(client.device_id, client, tunables, (x, window))
    return result
