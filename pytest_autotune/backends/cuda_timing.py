"""What a caller pays for a candidate on a GPU: the eager calls a caller-timed sample makes
beside its device sample, and each candidate's latest device and enqueue seconds
(`CallCost`). Step 4 of `backends.cuda`'s docstring says why.
"""

from __future__ import annotations

import collections
import contextlib
import statistics
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pytest_autotune.backends.tracing import untraced

ENQUEUE_MARGIN = 4.0
"""A candidate whose device time exceeds its host enqueue time this many times over is
device-bound: its later samples skip the eager call that measures the enqueue time."""

EAGER_CALLS = 24
"""The eager calls whose host enqueue time a caller-timed sample of a short call averages,
after `EAGER_LEAD` calls whose time is left out (`CallerTiming.eager_loop`). The host's own
jitter is a microsecond or two a call, and averages down with the count: on a 16-core H200
host 8 calls ranked a 2048x1024 layernorm's candidates, 9% apart, right in 87 of 100
tunings."""

EAGER_LEAD = 8
"""The first calls of `CallerTiming.eager_loop`, made and not counted: after a synchronize
the host path is cold for a few calls (one call read 28-34 us where a long loop pays 10-13
us for a 2048x1024 layernorm on an H200)."""

EAGER_BUDGET_S = 500e-6
"""About how long the counted calls of a sample's eager loop may take: a candidate whose
calls cost more than `EAGER_BUDGET_S / EAGER_CALLS` (about 20 us) gets fewer counted calls,
down to `EAGER_MIN_CALLS` (its lead stays `EAGER_LEAD`, which the cold start needs). The
host's jitter is a smaller share of a longer call, and such a candidate is rarely close to
a leader of short calls: a 60 us CuPy softmax beside a 12 us kernel made 41 calls a sample
and put the family's tuning at 0.13x do_bench."""

EAGER_MIN_CALLS = 6
"""The fewest calls of an eager loop's difference."""

PROBE_LAUNCHES = 8
"""Empty launches whose host times are read before and after each eager loop: how fast the
host's launch path is at that moment (`HostSpeed`)."""

SPELL = 1.25
"""A probe whose median launch takes this many times the host's fastest probe marks a slow
spell of the host."""

USUAL_LAUNCHES_KEPT = 64
"""The latest probes outside spells whose median is the host's usual launch time."""

HOST_SPEED_PROBE = False

TIMINGS = ("caller", "device")
"""`timing="caller"` scores a sample by the larger of device and host enqueue time,
`"device"` by the device time alone (see `backends.cuda`'s docstring)."""

MIN_SAMPLE_S = 1e-9
"""The least a sample reads once the empty sample is taken away: a duration must stay
positive, and a call that enqueues nothing is not free for the host either."""


@dataclass(frozen=True, slots=True)
class CallCost:
    """What one sample of a candidate cost: seconds of device work, and seconds the host
    took to enqueue one eager call of it (None where not measured: `timing="device"`)."""

    device: float
    enqueue: float | None


class HostSpeed:
    """How much slower the host launches right now than usual, from probes of
    `PROBE_LAUNCHES` empty launches taken before and after an eager loop. Only a spell on
    both sides of the loop counts, and each probe is the median of its launches."""

    def __init__(self) -> None:
        self._usual: collections.deque[float] = collections.deque(maxlen=USUAL_LAUNCHES_KEPT)
        self._fastest: float | None = None

    def factor(self, before: float, after: float) -> float:
        """What to multiply the loop's enqueue time by (1 outside a spell), given the median
        seconds of a probe's launches before and after the loop (0: not measured)."""
        if before <= 0 or after <= 0:
            return 1.0
        if self._fastest is None or min(before, after) < self._fastest:
            self._fastest = min(before, after)
        spell = SPELL * self._fastest
        if max(before, after) <= spell:
            self._usual.extend((before, after))
            return 1.0
        usual = [t for t in self._usual if t <= spell]
        if min(before, after) <= spell or not usual:
            return 1.0
        return statistics.median(usual) / ((before + after) / 2)


class CallerTiming:
    """How a client scores its samples (`timing`: "caller" or "device"), the eager loop
    that measures what a caller pays, and the latest `CallCost` of each candidate."""

    def __init__(self, timing: str, host_timer: Callable[[], int]) -> None:
        if timing not in TIMINGS:
            raise ValueError(f"timing must be one of {TIMINGS}, got {timing!r}")
        self.timing = timing
        self.host_timer = host_timer
        self.launch_nothing: Callable[[], None] | None = None
        self._speed = HostSpeed()
        self._costs: weakref.WeakKeyDictionary[Callable[..., object], CallCost] = (
            weakref.WeakKeyDictionary()
        )

    def call_costs(self, fn: Callable[..., object]) -> CallCost | None:
        """The device and host enqueue seconds of `fn`'s latest sample, None when it was
        never timed (or cannot be remembered: an unhashable or unreferenceable callable)."""
        try:
            return self._costs.get(fn)
        except TypeError:
            return None

    def sample_statistic(self, fn: Callable[..., object]) -> str:
        """How `fn`'s samples are scored (`benchmark.STATISTICS`): by their median where the
        latest read the host's enqueue time of a caller's loop (the caller timing, a
        host-bound call), whose noise runs both ways; else by the seed's score."""
        cost = self.call_costs(fn)
        if (
            self.timing == "caller"
            and cost is not None
            and cost.enqueue is not None
            and cost.enqueue > cost.device
        ):
            return "median"
        return "score"

    def caller_costs(
        self,
        fn: Callable[..., object],
        inputs: tuple[Any, ...],
        device: float,
        first_enqueue: float,
        stream: Any,
    ) -> float:
        """The host enqueue time of one call in a caller's loop, for a replayed sample of
        `device` seconds. The eager loop runs only where the host may bind: a
        call whose device time is over `ENQUEUE_MARGIN` times its last known enqueue time
        (the previous sample's, or on the first `first_enqueue`, the capture's warm-up
        call's) is device-bound, and its loop would cost `EAGER_CALLS` calls of device time
        for a figure the device sample already gives: 24 calls of 0.47 s on the first
        tuning of a slow sum candidate, where do_bench pays 8. `stream` is the current
        stream.

        The warm-up call was cold: its enqueue time holds the first allocations in the
        capture's fresh pool (cudaMalloc) and any compilation. Where that alone keeps the
        first sample from calling the call device-bound, two eager calls are made and the
        second's enqueue time decides instead (`warm_enqueue`): a 300 us transpose whose
        warm-up allocated 256 MiB no longer pays a loop of 23 calls in its first tuning,
        which a warm client never paid."""
        cost = self.call_costs(fn)
        known = cost.enqueue if cost is not None and cost.enqueue is not None else first_enqueue
        if device > ENQUEUE_MARGIN * known:
            return known

        def eager() -> None:
            fn(*inputs)

        if cost is None:
            known = self.warm_enqueue(eager)
            if device > ENQUEUE_MARGIN * known:
                return known
        calls = max(EAGER_MIN_CALLS, min(EAGER_CALLS, int(EAGER_BUDGET_S / max(known, 1e-9))))
        return self.eager_loop(eager, stream, calls)

    def warm_enqueue(self, eager: Callable[[], None]) -> float:
        """Host seconds to enqueue one eager call after another, whose first allocations
        (from CuPy's pool, not the capture's) are behind it. One call read more than a
        loop's per-call cost on an H200 (see `eager_loop`), never less: a call it shows
        device-bound is."""
        eager()
        return untraced(_enqueue_seconds, self.host_timer, eager, 1)

    def eager_loop(self, eager: Callable[[], None], stream: Any, calls: int = EAGER_CALLS) -> float:
        """Host seconds to enqueue one eager call in a caller's steady loop: `calls` calls
        timed back to back on the host, after a lead of `EAGER_LEAD` calls made from a
        synchronize of `stream` (the current stream) and left out.

        Why the host's part alone, and not the loop's time to its synchronize: on one H200
        host a 2048x1024 layernorm's candidates were enqueued in 9.7-10.7 us a call and
        replayed in 7.7-14.8 us of device time, and a long loop (30 ms back to back) paid
        10.1-12.8 us a call, the larger of the two, as the issue's model says; but loops of
        tens of calls, even the difference of a loop of 8 and one of 32, took 15-17 us a
        call to their synchronize, for every candidate alike (the device was slow to run
        short bursts of launches; the long loop's own first 0.5 s read 15 us as well). The
        loop's whole time then hid the candidate whose device time (14.8 us) binds a long
        loop behind the others' 16 us, and 8 of 100 tunings picked it, 27% slower in the
        long loop. The device's part is the replayed sample's; the host's, timed after the
        lead, holds no cold start."""
        stream.synchronize()
        for _ in range(EAGER_LEAD):
            eager()
        before = self._probe()
        each = untraced(_enqueue_each, self.host_timer, eager, calls)
        after = self._probe()
        stream.synchronize()
        return loop_seconds(each) * self._speed.factor(before, after)

    def _probe(self) -> float:
        if not HOST_SPEED_PROBE or self.launch_nothing is None:
            return 0.0
        times = []
        for _ in range(PROBE_LAUNCHES):
            start = self.host_timer()
            self.launch_nothing()
            times.append(self.host_timer() - start)
        return statistics.median(times) / 1e9

    def score(
        self,
        fn: Callable[..., object],
        device: float,
        enqueue: float | None,
        caller: bool,
    ) -> float:
        """Keep both figures of the sample (device and host enqueue time); the device time,
        or for the `caller` the larger of it and the host enqueue time (where this sample
        took none, the last one measured): a call cannot finish faster than its launches
        are issued, and in a caller's steady loop it costs no more than the larger."""
        previous = self.call_costs(fn)
        if enqueue is None and previous is not None:
            enqueue = previous.enqueue
        with contextlib.suppress(TypeError):
            self._costs[fn] = CallCost(device, enqueue)
        if caller and enqueue is not None:
            return max(device, enqueue)
        return device


ENQUEUE_STATISTICS = ("mean", "median", "trimmed", "lower_quartile")
ENQUEUE_STATISTIC = "mean"


def loop_seconds(each: list[int]) -> float:
    """Seconds per call of an eager loop whose calls took `each` nanoseconds."""
    ordered = sorted(each)
    if ENQUEUE_STATISTIC == "median":
        figure = statistics.median(ordered)
    elif ENQUEUE_STATISTIC == "trimmed":
        kept = ordered[: max(1, len(ordered) - len(ordered) // 4)]
        figure = sum(kept) / len(kept)
    elif ENQUEUE_STATISTIC == "lower_quartile":
        figure = ordered[len(ordered) // 4]
    else:
        figure = sum(ordered) / len(ordered)
    return max(figure, 1) / 1e9


def _enqueue_each(
    host_timer: Callable[[], int], eager: Callable[[], None], calls: int
) -> list[int]:
    """Host nanoseconds each of `calls` eager calls back to back took to enqueue."""
    each = []
    last = host_timer()
    for _ in range(calls):
        eager()
        now = host_timer()
        each.append(now - last)
        last = now
    return each


def _enqueue_seconds(host_timer: Callable[[], int], eager: Callable[[], None], calls: int) -> float:
    """Host seconds to enqueue `calls` eager calls back to back (at least a nanosecond).
    Run through `untraced`: a tracer (`pytest --cov`, a debugger) slows the Python that
    launches the kernels several times, and a caller's loop does not pay for it."""
    start = host_timer()
    for _ in range(calls):
        eager()
    return max(host_timer() - start, 1) / 1e9
