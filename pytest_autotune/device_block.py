"""The device block an update writes into a cache file: this session's, with the file's own
peaks kept where none of their figures moved far enough to be rewritten."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

PEAKS_KEPT_WITHIN = 0.02
"""How far each figure of a device's peaks may move (relative) before an update writes the
new ones into a cache file: a GPU's probes repeat to about 1%, and peaks rewritten to their
last digit by every update made two branches that each refreshed another key of one test
conflict in git on the device block alone (their entries merged cleanly)."""


def settled_device(device: Any, held: Any) -> Any:
    """The device block to write over `held`, the file's own (read under its lock by
    `PersistentCache.save`, so another update's peaks, written since this session read the
    file, are the ones compared): `device`, with the file's peaks where the file holds this
    device's and none of their figures moved past `PEAKS_KEPT_WITHIN`."""
    if (
        isinstance(device, Mapping)
        and "peaks" in device
        and isinstance(held, Mapping)
        and held.get("id") == device.get("id")
        and held.get("fingerprint") == device.get("fingerprint")
        and _agree(held.get("peaks"), device["peaks"])
    ):
        return {**device, "peaks": held["peaks"]}
    return device


def _agree(held: Any, new: Any) -> bool:
    """Whether two JSON values have one shape, equal strings and numbers within
    `PEAKS_KEPT_WITHIN` of each other."""
    if isinstance(new, Mapping):
        return (
            isinstance(held, Mapping)
            and held.keys() == new.keys()
            and all(_agree(held[k], new[k]) for k in new)
        )
    if isinstance(new, list):
        return (
            isinstance(held, list)
            and len(held) == len(new)
            and all(_agree(a, b) for a, b in zip(held, new, strict=True))
        )
    numbers = (int, float)
    if isinstance(new, numbers) and isinstance(held, numbers):
        if isinstance(new, bool) or isinstance(held, bool):
            return held == new
        return abs(new - held) <= PEAKS_KEPT_WITHIN * max(abs(new), abs(held))
    return bool(held == new)
