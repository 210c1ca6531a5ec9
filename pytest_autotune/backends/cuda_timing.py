"""What a caller pays for a candidate on a GPU: the eager calls a caller-timed sample makes
beside its device sample, and each candidate's latest device and enqueue seconds
(`CallCost`). Step 4 of `backends.cuda`'s docstring says why.
"""

from __future__ import annotations

import collections
import contextlib
import statistics
import weakref
from collections.abc import Callable, Sequence
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

TRIMMED = 0.25
"""The share of an eager loop's calls, the slowest, that its figure leaves out
(`loop_seconds`): a stall of the host (an interrupt, another process) lands on a call or
two of a loop and says nothing of the candidate, while a cost of its own (launches, an
allocation, Python) lands on every call. On H200 hosts, 100-tuning processes of a
2048x1024 layernorm picked one of its two candidates that are never faster (block1024,
device-bound; warp_row, whose host part is 5-8% over block256's) in 49 of 700 tunings
with the loop's mean and 66 of 1200 with this trimmed mean, most of either in processes
that a slow spell of the host covered whole, which no figure of a loop tells apart
(`TIE` and `HOST_SPEEDUP` are for those); side by side in one call, 41 of 400 against 9,
the median 16 and the lower quartile 9 (BENCHMARKS.md, twenty-fourth session). What it
gives up: a candidate whose own cost comes on fewer than a quarter of its calls (a
periodic flush, say) reads as if it never came, and one that comes on more reads part of
it; a steady loop of the caller pays all of it."""

TIE = 1.03
"""Caller-timed scores within this factor of the best are a tie (`CallerTiming.preferred`):
well under the 5% by which a pick counts as wrong, and a gap that host-bound scores cross
from one tuning to the next on the H200 hosts (block128 and block256, level by a long eager
loop, each won 28-70 of every 100 tunings)."""

HOST_SPEEDUP: float | None = None
"""How much faster than during the tuning the host is taken to launch when a tie is broken
(`CallerTiming.preferred`); None (the default): as much faster as it usually is, measured
at the tie (`CallerTiming.host_slowdown`). The H200 hosts here ran every launch loop
1.4-1.7 times slower in spells of milliseconds to whole processes, and a tuning in one is
a tie of every one-kernel candidate of a 2048x1024 layernorm at 17-20 us, block1024
(13.9-14.2 us of device time) among them, which is 18-31% slower at the host's usual speed.
Taken faster, the others' launches fall under their device time and block1024's does not.

A fixed 1.5 (the rule of earlier versions) broke those ties as well, but at the host's
usual speed it gave a tie of block256 and warp_row (5.5-7.9 us on the device, 5-8% over
block256's 10-11 us to launch) to warp_row, which a host 1.5 times faster would launch
under block256's device time: the ties the last session's misses were made of. Measured,
a host at its usual speed reads 1 and the tie goes to the lower score. Re-judged on the
same samples (round by round, `batch.paired_scores`), 2,600 tunings of three hosts
agreed with the eager truth in 2,583 measured, 2,578 at 1.5 and 2,567 at 1.0 (no speed-up:
block1024 won 26 ties in spells); 600 of a fourth, where block1024 was level with
the others, in 600 measured (BENCHMARKS.md, twenty-seventh session)."""

SLOWDOWN_MAX = 2.0
"""The most a measured slowdown of the host is taken to be (`CallerTiming.host_slowdown`):
the spells seen were 1.4-1.7 times slower; a reading past 2 is a stall of the reference
loop itself, not the host's speed."""

REFERENCE_LEAD = 4
"""The reference loop's first launches, made and not counted (`CallerTiming.host_slowdown`):
the host path is cold for a few calls after other work."""

REFERENCE_CALLS = 16
"""The reference loop's counted launches of an empty kernel: about 70 us of an H200 host's
time at its usual speed."""

REFERENCE_SEED = 3
"""The reference loops a client times back to back the first time it needs the host's
usual speed: with one, the usual speed would be the one reading it is compared with."""

REFERENCES_KEPT = 64
"""The latest reference loops whose lower quartile is the host's usual speed: a long
session's host may settle at another speed."""

TIE_BREAK = True
"""Whether `CallerTiming.preferred` breaks ties (a benchmark turns it off to compare)."""

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


class CallerTiming:
    """How a client scores its samples (`timing`: "caller" or "device"), the eager loop
    that measures what a caller pays, and the latest `CallCost` of each candidate."""

    def __init__(
        self,
        timing: str,
        host_timer: Callable[[], int],
        reference: Callable[[], None] | None = None,
    ) -> None:
        if timing not in TIMINGS:
            raise ValueError(f"timing must be one of {TIMINGS}, got {timing!r}")
        self.timing = timing
        self.host_timer = host_timer
        self.reference = reference
        """One launch of an empty kernel: the host's own speed (`host_slowdown`); None where
        the client has none, and the host is taken at its usual speed."""
        self.last_slowdown: float | None = None
        """The latest slowdown `host_slowdown` measured (a benchmark reads it)."""
        self._references: collections.deque[float] = collections.deque(maxlen=REFERENCES_KEPT)
        self._loop_overhead_ns: float | None = None
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
        back to back, each timed on the host and read by `loop_seconds`, after a lead of
        `EAGER_LEAD` calls made from a synchronize of `stream` (the current stream) and left
        out.

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
        seconds = self._loop(eager, EAGER_LEAD, calls)
        stream.synchronize()
        return seconds

    def _loop(self, call: Callable[[], None], lead: int, calls: int) -> float:
        """Host seconds per call of `call` in a loop (`loop_seconds`), each timed alone, the
        loop's own cost taken off, after `lead` calls made and left out."""
        for _ in range(lead):
            call()
        each = untraced(_enqueue_each, self.host_timer, call, calls)
        own = self.loop_overhead_ns()
        return loop_seconds([max(round(ns - own), 1) for ns in each])

    def loop_overhead_ns(self) -> float:
        """What timing each eager call alone adds to it, in nanoseconds: the loop's own
        reads of the clock, its bookkeeping and the call of the `eager` wrapper, none of
        which a caller pays (200-300 ns a call on the CPU this was written on, 5-7% of
        a 4 us launch). The least median of a few loops of calls that do nothing, measured
        once, as `FixedCosts.taken` measures the device's instrument."""
        if self._loop_overhead_ns is None:
            self._loop_overhead_ns = min(
                statistics.median(
                    untraced(_enqueue_each, self.host_timer, _do_nothing, EAGER_CALLS)
                )
                for _ in range(5)
            )
        return self._loop_overhead_ns

    def preferred(self, scored: Sequence[tuple[Callable[..., object], float]]) -> int:
        """Which of a batch's live candidates (each function with its score) wins: the
        lowest score; with the caller timing, of the candidates that tie with it (within
        `TIE`), the one of least regret, now or on a host `HOST_SPEEDUP` times faster
        (None: as much faster as the host usually is than now, `host_slowdown`).

        A host-bound candidate's score is what the host took to launch it during the
        tuning, and the H200 hosts here had spells of tens of milliseconds to whole
        processes in which every launch loop ran 1.4-1.7 times slower. In a spell a
        2048x1024 layernorm's block1024 (13.9 us of device time) read level with block128
        and block256 (8 us on the device, 15-16 us to launch in the spell, 10-11 us outside
        it), and processes that a spell covered picked it in 15-35 of 100 tunings, 17-30%
        slower for a caller once the spell was over. On a faster host a call costs the
        larger of its device time and its launch time sped up, so each tied candidate's
        regret is the larger of its score over the best score and that figure over the
        best such figure; the least wins (the lower score between equals). The pick costs
        at most `TIE` at the tuning's own speed, and of the tied it takes one that a faster
        host does not leave behind. Where a tied candidate's device time is not known (a
        callable this client cannot remember), nothing tells the tied apart and the lowest
        score wins. The tuner logs a pick other than the lowest score (`Preferred`)."""
        best = min(range(len(scored)), key=lambda i: scored[i][1])
        if self.timing != "caller" or not TIE_BREAK:
            return best
        tied = [i for i, (_, score) in enumerate(scored) if score <= TIE * scored[best][1]]
        if len(tied) < 2:
            return best
        costs = {}
        for i in tied:
            cost = self.call_costs(scored[i][0])
            if cost is None:
                return best
            costs[i] = cost
        speedup = HOST_SPEEDUP
        if speedup is None:
            # Measured only where it can matter: of device-bound calls each scores its
            # device time whatever the host's speed.
            host_bound = any(c.enqueue is not None and c.enqueue > c.device for c in costs.values())
            speedup = self.host_slowdown() if host_bound else 1.0
        faster = {i: max(costs[i].device, scored[i][1] / speedup) for i in tied}
        least = min(faster.values())

        def regret(i: int) -> tuple[float, float]:
            score = scored[i][1]
            return max(score / scored[best][1], faster[i] / least), score

        return min(tied, key=regret)

    def host_slowdown(self) -> float:
        """How many times slower than usual the host launches now, between 1 and
        `SLOWDOWN_MAX`: a reference loop of empty launches timed now, over the lower quartile
        of this client's latest ones (`REFERENCES_KEPT`; the first time, `REFERENCE_SEED`
        timed before it). An empty launch's loop moves with the spells that slow a host-bound
        candidate's (x1.36 where the layernorm's block256 moved x1.48 on an H200 host,
        `benchmarks/host_spells.py`). 1 where the client has no `reference`."""
        if self.reference is None:
            return 1.0
        if not self._references:
            self._references.extend(self._reference_loop() for _ in range(REFERENCE_SEED))
        now = self._reference_loop()
        self._references.append(now)
        usual = statistics.quantiles(self._references, n=4, method="inclusive")[0]
        self.last_slowdown = min(SLOWDOWN_MAX, max(1.0, now / usual))
        return self.last_slowdown

    def _reference_loop(self) -> float:
        """Host seconds per launch of `reference` in a loop (`_loop`)."""
        assert self.reference is not None
        return self._loop(self.reference, REFERENCE_LEAD, REFERENCE_CALLS)

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


def loop_seconds(each: list[int]) -> float:
    """Seconds per call of an eager loop whose calls took `each` nanoseconds: the mean of the
    fastest three quarters (`TRIMMED`)."""
    kept = sorted(each)[: max(1, len(each) - int(len(each) * TRIMMED))]
    return max(sum(kept) / len(kept), 1) / 1e9


def _do_nothing() -> None:
    """The eager call of `CallerTiming.loop_overhead_ns`: what the loop costs around a call."""


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
