"""Decision quality: does the default adaptive tuning pick the true fastest, every time?

DESIGN section 8 asks for the true fastest in 100 tunings of candidates whose true times
differ by 5% or more. The candidates here spin on `time.perf_counter_ns` for 200, 210,
220.5 and 231.5 us (each 5% over the one before), so their true order is known; each
tuning is a fresh `Tuner` with the default config, on the real CPU client, and gets
the candidates in a new shuffled order, so neither the position in a round nor the
index can decide.

The same run times a fixed pass of 10 samples per candidate (`BenchConfig(adaptive=False,
max_samples=10)`) on the same candidates, tuning for tuning and alternating which of the
two goes first, and reports the wall time of one tuning of each and their ratio. For each,
it also judges the same samples by best time, by median and by the seed's score (whose
`std` spread term the engine replaced with the median absolute deviation), and prints
every wrong decision with its samples.

Hopeless candidates (issue 14): the adaptive tuning stops sampling a candidate whose
warm-up and first sample both exceed `hopeless_factor` (10) times the leader's best. Its
risk is a candidate dropped that would have won: here every candidate is within 16% of
the fastest, so any hopeless cut among them is a false one, and the script counts them
and prints the largest first-sample inflation seen (first sample over the true time: how
close noise came to the margin). Then the same candidates plus one 40x slower (8 ms) are
tuned with the cut and without it (`hopeless_factor=1e9`), tuning for tuning: same
winners, the slow one's samples, and the cost of each.

    PYTHONPATH=. python benchmarks/decision.py [--tunings N] [--seed S]

Exits with status 1 when the adaptive tuning picks a wrong winner even once, or the cut
drops a candidate that was not hopeless.
"""

from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from pytest_autotune import (
    AutotuneConfig,
    AutotuneOutcome,
    BenchConfig,
    SampleStats,
    TunableSet,
    Tuner,
)
from pytest_autotune.backends.cpu import CpuClient, cpu
from pytest_autotune.tune.benchmark import NS_PER_S
from pytest_autotune.tune.log import Eliminated

SPINS_US = (200.0, 210.0, 220.5, 231.5)
"""True times of the candidates, each 5% over the one before."""


def spinner(us: float) -> Callable[[], None]:
    """A candidate that busy-waits `us` microseconds: a true time that nothing but noise moves."""
    duration_ns = round(us * 1000)
    clock = time.perf_counter_ns

    def spin() -> None:
        end = clock() + duration_ns
        while clock() < end:
            pass

    spin.__name__ = f"spin_{us:g}us"
    return spin


CANDIDATES = {f"spin_{us:g}us": spinner(us) for us in SPINS_US}
FASTEST = f"spin_{min(SPINS_US):g}us"

STRATEGIES = {
    "adaptive (default)": BenchConfig(),
    "fixed pass, 10 samples": BenchConfig(adaptive=False, max_samples=10),
}

HOPELESS_US = 40 * SPINS_US[0]
"""A candidate 40 times slower than the fastest: hopeless by any margin noise leaves."""
HOPELESS = f"spin_{HOPELESS_US:g}us"
CANDIDATES[HOPELESS] = spinner(HOPELESS_US)
HOPELESS_STRATEGIES = {
    "adaptive, hopeless cut": BenchConfig(),
    "adaptive, no cut": BenchConfig(hopeless_factor=1e9),
}
TRUE_US = {f"spin_{us:g}us": us for us in (*SPINS_US, HOPELESS_US)}


def the_key() -> str:
    return "busy-wait"


@dataclass(frozen=True, slots=True)
class Tuning:
    """One tuning: the order the candidates came in, what won, what it measured, its cost."""

    order: tuple[str, ...]
    winner: str
    outcomes: tuple[AutotuneOutcome, ...]
    wall: float
    hopeless: tuple[str, ...] = ()
    """The candidates the hopeless cut dropped."""


def tune_once(bench: BenchConfig, order: Sequence[str], client: CpuClient) -> Tuning:
    tunables = TunableSet.of(the_key, {name: CANDIDATES[name] for name in order})
    tuner = Tuner("benchmarks.decision", client.device_id, AutotuneConfig(bench=bench))
    start = time.perf_counter()
    decision = tuner.tune(the_key(), tunables, (), client)
    wall = time.perf_counter() - start
    outcomes = tuple(r for r in decision.results.values() if isinstance(r, AutotuneOutcome))
    hopeless = tuple(
        e.name
        for e in decision.context.events
        if isinstance(e, Eliminated) and e.reason.startswith("hopeless")
    )
    return Tuning(tuple(order), decision.fastest_name, outcomes, wall, hopeless)


def inflation(runs: Sequence[Tuning]) -> float:
    """The largest first sample over its candidate's true time, over every candidate."""
    return max(o.samples[0] / (TRUE_US[o.name] * 1e-6) for t in runs for o in t.outcomes)


def first_sample_cuts(runs: Sequence[Tuning]) -> int:
    """Candidates within 16% of the fastest whose first sample alone was over 10x the
    fastest's true time: the false cuts of a rule that did not also ask the warm-up."""
    limit = 10 * SPINS_US[0] * 1e-6
    return sum(o.samples[0] > limit for t in runs for o in t.outcomes if o.name != HOPELESS)


def hopeless_family(args: argparse.Namespace, client: CpuClient) -> int:
    """The same candidates plus a hopeless one, with and without the cut; false cuts."""
    shuffles = random.Random(args.seed + 1)
    names = list(HOPELESS_STRATEGIES)
    tunings: dict[str, list[Tuning]] = {name: [] for name in names}
    for number in range(args.tunings):
        order = [*(f"spin_{us:g}us" for us in SPINS_US), HOPELESS]
        shuffles.shuffle(order)
        for name in names if number % 2 == 0 else names[::-1]:
            tunings[name].append(tune_once(HOPELESS_STRATEGIES[name], order, client))
    print(f"with a hopeless candidate ({HOPELESS}, {HOPELESS_US / SPINS_US[0]:g}x the fastest):")
    walls = {}
    for name in names:
        runs = tunings[name]
        walls[name] = statistics.median(t.wall for t in runs)
        right = sum(t.winner == FASTEST for t in runs)
        slow = [len(o.samples) for t in runs for o in t.outcomes if o.name == HOPELESS]
        false = sum(n != HOPELESS for t in runs for n in t.hopeless)
        print(
            f"{name:24} chose {FASTEST}: {right}/{len(runs)}"
            f"   wall of one tuning: median {walls[name] * 1e3:6.2f} ms"
            f"   samples of {HOPELESS}: mean {statistics.mean(slow):.1f}"
            f"   false hopeless cuts: {false}"
        )
        for tuning in runs:
            if tuning.winner != FASTEST:
                print(describe(tuning) + f"\n    hopeless cuts: {', '.join(tuning.hopeless)}")
    cut, no_cut = names
    same = sum(a.winner == b.winner for a, b in zip(tunings[cut], tunings[no_cut], strict=True))
    print(
        f"same winner with and without the cut: {same}/{args.tunings};"
        f" tuning cost, cut / no cut: {walls[cut] / walls[no_cut]:.2f}x;"
        f" largest first-sample inflation: {inflation(tunings[cut] + tunings[no_cut]):.2f}x,"
        f" first sample alone over 10x: {first_sample_cuts(tunings[cut] + tunings[no_cut])}"
        " times"
    )
    wrong = sum(t.winner != FASTEST for t in tunings[cut])
    false = sum(n != HOPELESS for t in tunings[cut] for n in t.hopeless)
    return wrong + false


def judged_by(tuning: Tuning, measure: Callable[[AutotuneOutcome], float]) -> str:
    """The winner the same samples give under another rule: a diagnosis, not the engine's."""
    return min(tuning.outcomes, key=measure).name


def seed_score(outcome: AutotuneOutcome) -> float:
    """The seed's score, `(0.8*min + 0.2*median) * (1 + std/(1+mean))` in nanoseconds, whose
    spread term one preempted sample moves; the engine's uses the median absolute deviation."""
    stats = SampleStats.of([s * NS_PER_S for s in outcome.effective_samples])
    return (0.8 * stats.min + 0.2 * stats.median) * (1.0 + stats.std / (1.0 + stats.mean))


def spikes(runs: Sequence[Tuning]) -> tuple[float, float]:
    """The share of samples more than 5% above their candidate's best, and the largest excess
    in seconds: how often, and how hard, the machine disturbed a busy wait."""
    excess = [s - o.best for t in runs for o in t.outcomes for s in o.effective_samples]
    bests = [o.best for t in runs for o in t.outcomes for _ in o.effective_samples]
    over = sum(e > 0.05 * b for e, b in zip(excess, bests, strict=True))
    return over / len(excess), max(excess)


def describe(tuning: Tuning) -> str:
    """A wrong decision with the evidence it was made on, in microseconds."""
    lines = [f"  order {', '.join(tuning.order)}: chose {tuning.winner}"]
    for outcome in sorted(tuning.outcomes, key=lambda o: o.score):
        samples = " ".join(f"{s * 1e6:.1f}" for s in outcome.samples)
        lines.append(
            f"    {outcome.name:14} score {outcome.score / 1e3:7.1f} us"
            f"  best {outcome.best * 1e6:6.1f}  median {outcome.median * 1e6:6.1f}"
            f"  samples [{samples}]{' (first dropped)' if outcome.dropped_first else ''}"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tunings", type=int, default=100, help="tunings per strategy")
    parser.add_argument("--seed", type=int, default=20240501, help="seed of the shuffles")
    args = parser.parse_args(argv)

    client = cpu()
    shuffles = random.Random(args.seed)
    names = list(STRATEGIES)
    tunings: dict[str, list[Tuning]] = {name: [] for name in names}
    for name in names:  # calibrate the client's repeat counts outside the figures
        tune_once(STRATEGIES[name], [f"spin_{us:g}us" for us in SPINS_US], client)
    for number in range(args.tunings):
        order = [f"spin_{us:g}us" for us in SPINS_US]
        shuffles.shuffle(order)
        for name in names if number % 2 == 0 else names[::-1]:
            tunings[name].append(tune_once(STRATEGIES[name], order, client))

    spins = ", ".join(f"{us:g}" for us in SPINS_US)
    print(
        f"decision quality: {args.tunings} tunings of {len(SPINS_US)} busy-wait candidates"
        f" ({spins} us), shuffled; fresh Tuner each, CPU client {client.device_id}"
    )
    walls = {}
    for name in names:
        runs = tunings[name]
        right = sum(t.winner == FASTEST for t in runs)
        walls[name] = statistics.median(t.wall for t in runs)
        samples = statistics.mean(len(o.samples) for t in runs for o in t.outcomes)
        print(
            f"{name:24} chose {FASTEST}: {right}/{len(runs)}"
            f"   wall of one tuning: median {walls[name] * 1e3:6.2f} ms"
            f" (min {min(t.wall for t in runs) * 1e3:.2f},"
            f" max {max(t.wall for t in runs) * 1e3:.2f})"
            f"   samples per candidate: {samples:.1f}"
        )
        by_best = sum(judged_by(t, lambda o: o.best) == FASTEST for t in runs)
        by_median = sum(judged_by(t, lambda o: o.median) == FASTEST for t in runs)
        by_seed = sum(judged_by(t, seed_score) == FASTEST for t in runs)
        share, largest = spikes(runs)
        print(
            f"{'':24} the same samples judged by best time: {by_best}/{len(runs)},"
            f" by median: {by_median}/{len(runs)},"
            f" by the seed's score (std): {by_seed}/{len(runs)};"
            f" samples over 5% above their candidate's best: {share:.1%}"
            f" (largest +{largest * 1e6:.1f} us)"
        )
        for tuning in runs:
            if tuning.winner != FASTEST:
                print(describe(tuning))
    adaptive, fixed = names
    print(f"tuning cost, adaptive / fixed pass: {walls[adaptive] / walls[fixed]:.2f}x")
    false = sum(len(t.hopeless) for t in tunings[adaptive])
    print(
        f"false hopeless cuts (every candidate within 16% of the fastest): {false};"
        f" largest first-sample inflation: {inflation(tunings[adaptive]):.2f}x"
        f" (the cut needs warm-up and first sample over 10x; the first sample alone was"
        f" over it {first_sample_cuts(tunings[adaptive])} times)"
    )
    wrong = sum(t.winner != FASTEST for t in tunings[adaptive]) + false
    wrong += hopeless_family(args, client)
    print(
        f"target: the true fastest every time, no false hopeless cut"
        f" -> {'met' if wrong == 0 else 'MISSED'}"
    )
    return 0 if wrong == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
