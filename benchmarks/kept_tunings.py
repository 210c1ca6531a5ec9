"""What the re-judging scripts read from a `gpu_short_calls.py --keep-all` run: the
layernorm family's entry, every tuning kept, and a caller timing that knows each
candidate's latest device and enqueue time, so the product's own `CallerTiming.preferred`
can pick winners again (`rejudge_tie_break.py`, `replay_races.py`, `short_calls_gap.py`)."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pytest_autotune.backends import cuda_timing

FAMILY = "layernorm 2048x1024"


def layernorm_run(path: Path) -> dict[str, Any]:
    """The layernorm family's entry of the run at `path`; a run that kept only its first
    disagreeing tunings (no `--keep-all`) is refused: its counts would be of those alone."""
    family: dict[str, Any] = json.loads(path.read_text())[FAMILY]
    caller = family["caller"]
    if len(caller["disagreeing"]) != sum(caller["winners"].values()):
        raise SystemExit(f"{path}: not every tuning was kept (run it with --keep-all)")
    return family


def caller_timing(
    call_costs: dict[str, dict[str, float | None]],
) -> tuple[cuda_timing.CallerTiming, dict[str, Callable[[], None]]]:
    """A caller timing that remembers each candidate's `call_costs` (device and enqueue
    seconds), and the function that stands for each candidate in it, by name."""
    timing = cuda_timing.CallerTiming("caller", time.perf_counter_ns)
    fns = {}
    for name, cost in call_costs.items():
        fns[name] = _stand_in(name)
        device = cost["device_s"]
        assert device is not None, f"{name}: no device time in the run"
        timing.score(fns[name], device, cost["enqueue_s"], caller=True)
    return timing, fns


def _stand_in(name: str) -> Callable[[], None]:
    def call() -> None:
        """Never called: it stands for candidate `name` in the timing's memory."""

    call.__name__ = name
    return call
