"""How the gate measures a candidate: one warm-up, then its precise samples over several
placements of its inputs, and on a CPU beside a calibration read of the same inputs, with
the state of the CPUs during them (`candidate_measurer`). The same measurement runs in a
fresh process to confirm a suspected failure (`measure_candidate`).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import numpy as np

from pytest_autotune.backends.cpu import settle_allocator
from pytest_autotune.calibration import CALIBRATION_KIND, timed_calibration
from pytest_autotune.gate import Baseline, Measurement, contention, device_kind, measure_winner
from pytest_autotune.group_case import GroupCase
from pytest_autotune.time_limit import unlimited
from pytest_autotune.tune.call_scope import call_scope
from pytest_autotune.tune.errors import AutotuneError
from pytest_autotune.tune.sampler import FLOATING_POINT_ERRORS
from pytest_autotune.tune.tunable_set import TunableSet

if TYPE_CHECKING:
    from pytest_autotune.tune.client import Client


def read_kind(case: GroupCase, baseline: Baseline | None) -> str | None:
    """The calibration read the gate measures with: its baseline's kind, so that it divides
    by the read its baseline divided by (`calibration.timed_calibration`); None, this
    version's own read, for an update, whose baseline is then of today's read."""
    if case.settings.update or baseline is None or baseline.calibration is None:
        return None
    return baseline.calibration.kind


def index_measurer(
    client: Client,
    tunables: TunableSet,
    inputs: tuple[Any, ...],
    read_kind: str | None = None,
    fresh: Callable[[], tuple[Any, ...]] | None = None,
) -> Callable[[int], Callable[[], Measurement]]:
    """How the gate measures candidate `index` (`candidate_measurer`): each measurement on
    inputs of its own (`fresh`, where given; `inputs` are the first's)."""
    measure = candidate_measurer(client, inputs, read_kind, fresh)

    def measurer(index: int) -> Callable[[], Measurement]:
        # A production set's candidate is measured bare, as its baselines were: tuning
        # called it under the time limit (`time_limit.Limited`).
        fn = unlimited(tunables.fns[index])
        return functools.partial(measure, fn, tunables.names[index])

    return measurer


def candidate_measurer(
    client: Client,
    inputs: tuple[Any, ...],
    read_kind: str | None = None,
    fresh: Callable[[], tuple[Any, ...]] | None = None,
) -> Callable[[Callable[..., Any], str], Measurement]:
    """How the gate measures a candidate `(fn, name)` on `inputs`: one warm-up, then its
    precise samples, and on a CPU the state of the CPUs during them, with a calibration
    read of `read_kind` where this version makes that kind (else of its own).

    With `fresh`, every measurement after the first is taken on inputs it makes, as the
    tuner gives each candidate a copy of its own: the baseline's winner, measured beside
    the pick, ran on the inputs the pick had written into (a PyTorch candidate's
    `backward()` had filled `.grad`), and failed, "the baseline's winner failed here"."""
    given = [inputs]
    # On a CPU, a read of the same inputs is timed beside each sample, so the gate can
    # divide out what the machine's state did to both (pytest_autotune.calibration).
    on_cpu = device_kind(client.device_id) == "cpu"
    if on_cpu:
        # Where the process's history would otherwise put malloc's thresholds: the
        # baseline's process, this one and a fresh one then time the same kernel.
        settle_allocator()
    # A client samples the winner over several placements of its inputs (and on a GPU its
    # graph pool), so that the time does not depend on where this process's history put
    # them (pytest_autotune.backends.cuda, "Several placements for the gate";
    # pytest_autotune.backends.cpu_placements).
    placed_sampler = getattr(client, "placed_sampler", None)

    def measure(fn: Callable[..., Any], name: str) -> Measurement:
        # The candidate's own scope (its test's warning filters) once around all its
        # samples, not inside each timed call (`tune.call_scope`).
        with call_scope(fn):
            try:
                return measured_in_scope(fn, name, repeats_raise=True)
            except _RaisedOfRepeats:
                # An in-place candidate meets its own output again in every call after the
                # first and may overflow (`x *= 2`), which its one checked call did not:
                # timed as the tuner times it, with NumPy's floating-point errors ignored
                # (`tune.sampler.Samples`). An error of its own raises again here.
                with np.errstate(all="ignore"):
                    return measured_in_scope(fn, name, repeats_raise=False)

    def measured_in_scope(fn: Callable[..., Any], name: str, repeats_raise: bool) -> Measurement:
        # The first measurement takes `inputs`, each later one inputs of its own.
        args = inputs if fresh is None else given.pop() if given else fresh()
        # The calibration reads the arrays this measurement's calls read, as the baseline's
        # did: a read of another copy left the measured one out of the caches it warmed.
        calibrate = timed_calibration(args, client.time, read_kind) if on_cpu else None
        try:
            client.time(fn, args)  # one warm-up: every sample counts
            sample = (
                placed_sampler(fn, args)
                if placed_sampler is not None
                else lambda: client.time(fn, args)
            )
            # The CPUs' stall counter read on both sides of the samples, so their
            # difference covers the measurement exactly, and the CPU time of the
            # process's other threads over the samples alone (`gate.contention`).
            helpers = contention.HelperClock()
            if on_cpu:
                # A thread pool an earlier call left spinning (the peak probe's BLAS
                # matmul, a losing candidate's) is not the winner's: it falls quiet first.
                contention.settle_helpers()
                sample = helpers.wrap(sample)
            before = contention.stall_reading() if on_cpu else None
            cpus_before = contention.cpu_reading() if on_cpu else None
            measured = measure_winner(
                sample,
                calibration=calibrate.sample if calibrate else None,
                calibration_kind=calibrate.kind if calibrate else CALIBRATION_KIND,
                name=name,
            )
            after = contention.stall_reading() if on_cpu else None
            cpus_after = contention.cpu_reading_after(cpus_before)
        except FLOATING_POINT_ERRORS as exc:
            if repeats_raise:
                raise _RaisedOfRepeats from exc
            raise AutotuneError.from_exception(name, exc) from None
        except Exception as exc:
            raise AutotuneError.from_exception(name, exc) from None
        if not on_cpu:
            return measured
        # How loaded the CPUs were, read once the samples are taken: the 1-minute
        # average then covers them, and how long runnable threads waited during them.
        return replace(
            measured,
            load=contention.load_per_cpu(),
            pressure=contention.pressure_share(before, after),
            helpers=helpers.share(),
            neighbours=contention.neighbours(cpus_before, cpus_after),
        )

    return measure


class _RaisedOfRepeats(Exception):
    """A floating-point error in the gate's repeated calls of a candidate (`measure`)."""


def measure_candidate(
    client: Client,
    fn: Callable[..., Any],
    name: str,
    inputs: tuple[Any, ...],
    read_kind: str | None = None,
) -> Measurement:
    """One measurement of a candidate as the gate takes it (`candidate_measurer`): what a
    fresh process runs to confirm a suspected failure (`fresh_process.measure_fresh`)."""
    return candidate_measurer(client, inputs, read_kind)(fn, name)
