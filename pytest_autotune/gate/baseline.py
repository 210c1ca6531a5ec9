"""The baseline: what the committed cache says one group's winner measured, read out of the
cache file's entry (`Baseline.from_cache_entry`, `Baseline.find`).

A baseline that cannot be read is a `BaselineError` naming the file and key; one that
measured something else still reads, so that the gate can call it not comparable.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from pytest_autotune.gate.samples import BaselineSession, Calibration, Samples
from pytest_autotune.report.figures import format_si
from pytest_autotune.tune.benchmark import AutotuneOutcome, SampleStats
from pytest_autotune.tune.bounds import COMPUTE, MEMORY, Bounds
from pytest_autotune.tune.cache import PersistentCacheKey, PersistentCacheValue
from pytest_autotune.tune.files import json_text
from pytest_autotune.tune.key import serialize_key_json
from pytest_autotune.tune.peaks import Peaks
from pytest_autotune.tune.tunable_set import checksum_of


class BaselineError(ValueError):
    """A cache entry that cannot serve as a baseline; the message names the file and key."""


MAX_BASELINE_SESSIONS = 8
"""How many `--autotune-update` sessions a baseline keeps (the newest): enough that their
mean is a third of one session's noise, few enough to follow a slow drift."""

FOLLOWS_FACTOR = 1.5
"""How many times the raw spread of a baseline's sessions their spread divided by the
calibration read may reach before the read is refused (`Baseline.read_follows`): about one
sampling error of the ratio of two spreads measured from five sessions."""

FOLLOWS_SLACK = 0.01
"""How much wider (sd of ln) the divided spread may be than the raw one in any case: sessions
that agree to 1% raw measure the read's effect no better than that."""


MEASURED_SESSIONS = 3
"""The update sessions from which a baseline measures its own spread (`Baseline.spread`)."""


@dataclass(frozen=True, slots=True)
class Baseline(Samples):
    """What the committed cache says about one group: the winner measured then, and how.

    `peak` is the roof the baseline's winner was measured against (the binding bound's
    peak when the entry was tuned, of `peak_resource`), so a run on a machine that is
    slower today can be normalised; None when the entry has no bounds.
    """

    device_id: str
    checksum: str
    fastest_name: str
    samples: tuple[float, ...]
    peak: float | None = None
    peak_resource: str | None = None
    peak_level: str | None = None
    """The memory level of `peak` (L2, DRAM, ...) where the bound named one."""
    sigma_between: float | None = None
    """The between-session noise measured on this device and stored with the cache."""
    source: str = ""
    """The cache file, for messages."""
    calibration: Calibration | None = None
    """The calibration read measured beside the baseline's winner, when it had one."""
    history: tuple[BaselineSession, ...] = ()
    """Earlier update sessions of the same winner, oldest first (the samples above are the
    newest session's): a baseline of several sessions is not one session's luck."""
    mismatch: str | None = None
    """Why the entry's winner index and name disagree (its samples are not the winner's),
    None when they agree: such a baseline is not comparable."""
    candidates: tuple[str, ...] = ()
    """The names of the candidates the entry was tuned over, in order; empty where its
    results do not list them all (an entry written before results were kept aligned)."""
    machine: str | None = None
    """The physical device the file was last updated on (a GPU's uuid, from its device
    block's fingerprint, or under a runner class the device id it was measured on), None
    where the block names neither: another one widens the noise (`gate.conditions`)."""
    thread_env: Mapping[str, str] | None = None
    """The variables that capped BLAS, OpenMP and Numba threads where the file was last
    updated (its device block's fingerprint, a CPU client's `thread_env`), None where the
    block does not say: other caps make the baseline not comparable (`not_comparable`)."""
    work: tuple[tuple[str, float], ...] | None = None
    """The work its entry's bounds were made of, (resource, amount) pairs (operations for
    "compute", bytes for "memory"; `work_amounts`), None where the entry has no bounds
    (`other_work`)."""
    _stats: SampleStats = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        self._set_samples("Baseline")

    def sessions(self) -> tuple[BaselineSession, ...]:
        """The sessions the baseline holds, oldest first, the stored samples' last: the
        newest `MAX_BASELINE_SESSIONS`. An update keeps no more; a file edited by hand or
        merged from two branches may hold more, and the gate averaged them all."""
        read = None if self.calibration is None else self.calibration.median
        kept = self.history[-(MAX_BASELINE_SESSIONS - 1) :]
        return (*kept, BaselineSession(self.median, read))

    def level(self, calibrated: bool) -> tuple[float, float]:
        """ln of the baseline's time (over its calibration read when `calibrated`), and the
        standard error of that figure.

        One session gives its median's, with the median's error. Several give the mean over
        them (those with a read, when `calibrated`), with the error of that mean from their
        spread: that spread holds the between-session noise which the newest session's
        own error cannot show, and which one session's offset would carry into every
        comparison against it.
        """
        own = self.se_log**2
        if calibrated and self.calibration is not None:
            own += self.calibration.se_log**2
        logs = self._session_logs(calibrated)
        if len(logs) < 2:
            return logs[-1], math.sqrt(own)
        k = len(logs)
        return statistics.fmean(logs), math.sqrt((statistics.variance(logs) + own) / k)

    def read_follows(self) -> bool:
        """Whether the calibration read may scale the winner's time: False only where the
        baseline's sessions show that dividing by it widens their spread (of ln(time /
        read) against ln(time)) by more than sampling explains, `FOLLOWS_FACTOR` times and
        `FOLLOWS_SLACK` more; True with fewer than three sessions with a read, too few to
        show it.

        Why a margin: the baseline's sessions are usually recorded back to back, when the
        machine is steady and both spreads are noise of a few sessions (an sd measured from
        five is good to about +-35%). Rejecting the read on any widening dropped it by a
        coin flip: on the 2-core VM five sessions read 2.7% raw and 3.0% divided, the gate
        compared raw times from then on, and over 100 later sessions the raw change moved by
        7.0% against 4.5% divided, so 51 of 100 25% slowdowns passed silently
        (benchmarks/gate_reliability.py, BENCHMARKS.md, 2026-12-01). A read that wanders on
        its own (a winner steady over sessions while the read moved 30%) is still refused."""
        calibrated, raw = self.spread(calibrated=True), self.spread(calibrated=False)
        if calibrated is None or raw is None:
            return True
        return calibrated[0] <= max(FOLLOWS_FACTOR * raw[0], raw[0] + FOLLOWS_SLACK)

    def spread(self, calibrated: bool) -> tuple[float, int] | None:
        """The standard deviation of ln(time) between its sessions, a measured
        `sigma_between`, and how many sessions it comes from; None with fewer than
        `MEASURED_SESSIONS`, too few to say."""
        logs = self._session_logs(calibrated)
        return (statistics.stdev(logs), len(logs)) if len(logs) >= MEASURED_SESSIONS else None

    def typical(self, calibrated: bool = False) -> tuple[float, float | None]:
        """The winner's time and the calibration read's to show: the geometric means over
        the sessions (the read's None where no session had one)."""
        sessions = self.sessions()
        reads = [s.read for s in sessions if s.read is not None]
        if calibrated:
            sessions = tuple(s for s in sessions if s.read is not None)
        median = statistics.geometric_mean(s.median for s in sessions)
        read = statistics.geometric_mean(reads) if reads else None
        return median, read

    def _session_logs(self, calibrated: bool) -> list[float]:
        return [
            math.log(s.median) - (math.log(s.read) if calibrated and s.read else 0.0)
            for s in self.sessions()
            if not calibrated or s.read is not None
        ]

    def other_work(self, bounds: Bounds | None) -> str | None:
        """What differs between the work the baseline was measured for and the work of this
        run's `bounds` ("100 kB, now 800 kB"), None where they agree or either is unknown.

        A key is the problem's name, and the inputs behind it can change without it (a
        fixture's arrays grown eightfold under the same parameter ids): the baseline then
        times another problem, and an eight times longer run read as a regression of +700%.
        The bounds' amounts are the `work=` of the inputs each side measured. Only a
        resource both sides bound is compared: a `work=` that now also counts
        operations changes the model, not the problem."""
        if self.work is None or bounds is None:
            return None
        now = dict(work_amounts(bounds))
        changed = [
            f"{_amount(resource, before)}, now {_amount(resource, now[resource])}"
            for resource, before in self.work
            if resource in now and not math.isclose(before, now[resource], rel_tol=1e-6)
        ]
        return "; ".join(changed) or None

    def peak_ratio(self, peaks: Peaks) -> float:
        """This run's peak over the baseline's, on the baseline's binding resource: the
        memory level, or the compute unit, its bound names (`peak_level`; a compute bound
        without one is fp32's, as every bound was before units were named).

        1.0 (no normalisation) when either side has no usable peak: a missing probe must not
        turn into a scaling of the kernel's time by 0 or infinity.
        """
        if self.peak is None or self.peak_resource is None:
            return 1.0
        current = (
            peaks.level_peak(self.peak_level)
            if self.peak_resource == MEMORY
            else peaks.compute_peak(self.peak_level or "fp32")
        )
        usable = current > 0 and math.isfinite(current) and self.peak > 0
        return current / self.peak if usable and math.isfinite(self.peak) else 1.0

    @classmethod
    def from_cache_entry(
        cls,
        value: PersistentCacheValue,
        checksum: str,
        *,
        device: Mapping[str, Any] | None,
        metadata: Mapping[str, Any],
        source: str = "",
    ) -> Baseline:
        """The baseline in one entry of a cache file (`PersistentCache.load()`, `.device()`,
        `.metadata()`, `.path`).

        The samples are the winner's effective samples (`results[fastest_index]`, the warm-up
        biased first one left out as in tuning). Raises `BaselineError` naming the file and
        key when the entry cannot serve: no device id, a winner without samples, bounds or a
        `sigma_between` that do not read.
        """
        where = f"{source or 'cache'}: key {serialize_key_json(value.key)}"
        if device is None or "id" not in device:
            raise BaselineError(f"{where}: the file's device block has no 'id'")
        device_id = device["id"]
        if not isinstance(device_id, str) or not device_id:
            raise BaselineError(
                f"{where}: the file's device block's 'id' is {json_text(device_id)},"
                " expected a device id"
            )
        if value.fastest_index >= len(value.results):
            raise BaselineError(
                f"{where}: fastest_index {value.fastest_index} is past the"
                f" {len(value.results)} results"
            )
        winner = value.results[value.fastest_index]
        out_of_line = None
        if value.winner() is None:
            # Results out of line with the candidates: the samples at the winner's index
            # are another candidate's, so this baseline cannot be compared with anything.
            out_of_line = (
                f"out of line with its candidates: the result at fastest_index"
                f" {value.fastest_index} is {winner.name!r}, not the winner"
                f" {value.fastest_name!r}"
            )
        if not isinstance(winner, AutotuneOutcome):
            # The result at the index may be another candidate's skip or error: "the winner
            # has no samples" then named a winner whose samples were elsewhere in the file.
            # What to do is the missing baseline's message to say.
            raise BaselineError(
                f"{where}: the winner {value.fastest_name} has no samples"
                if out_of_line is None
                else f"{where}: {out_of_line}"
            )
        peak, resource, level = binding_peak(value.bounds, where)
        # `binding_peak` has read the bounds, or raised naming the entry.
        work = None if value.bounds is None else work_amounts(Bounds.from_json(value.bounds))
        calibration, history = _calibration_and_history(value, where)
        return cls(
            device_id=device_id,
            checksum=checksum,
            fastest_name=value.fastest_name,
            samples=winner.effective_samples,
            peak=peak,
            peak_resource=resource,
            peak_level=level,
            sigma_between=_sigma_between(metadata, where),
            source=source,
            calibration=calibration,
            history=history,
            mismatch=None
            if out_of_line is None
            else (
                f"the baseline in {source or 'the cache'} is {out_of_line};"
                " --autotune-update re-records it"
            ),
            candidates=names
            if checksum_of(names := tuple(r.name or "" for r in value.results)) == checksum
            else (),
            machine=device_machine(device),
            thread_env=device_thread_env(device),
            work=work,
        )

    @classmethod
    def find(
        cls,
        entries: Mapping[PersistentCacheKey, PersistentCacheValue],
        key: str,
        checksum: str,
        *,
        device: Mapping[str, Any] | None,
        metadata: Mapping[str, Any],
        source: str = "",
    ) -> Baseline | None:
        """The baseline of `key` (its `stable_key`) in a loaded cache, None when it has none.

        The entry with `checksum` is preferred; an entry with another checksum still comes
        back, so that `judge` reports it as not comparable instead of as missing.
        """
        matches = sorted(
            (pk for pk in entries if pk.key == key), key=lambda pk: pk.checksum != checksum
        )
        if not matches:
            return None
        found = matches[0]
        return cls.from_cache_entry(
            entries[found], found.checksum, device=device, metadata=metadata, source=source
        )


def binding_peak(
    bounds: dict[str, Any] | None, where: str
) -> tuple[float | None, str | None, str | None]:
    """The binding bound's peak, resource and memory level, from a cache entry's or a
    record's bounds: what a GPU's time is scaled by (`Baseline.peak_ratio`)."""
    if bounds is None:
        return None, None, None
    try:
        parsed = Bounds.from_json(bounds)
    except (KeyError, TypeError, ValueError) as error:
        raise BaselineError(f"{where}: bounds do not read: {error!r}") from None
    resource = parsed.binding_resource()
    binding = [b for b in parsed.bounds if b.resource == resource]
    return (binding[0].peak, resource, binding[0].level) if binding else (None, None, None)


def work_amounts(bounds: Bounds) -> tuple[tuple[str, float], ...]:
    """The work a set of bounds was made of, what no candidate avoids: (resource, amount)
    pairs in the resources' order, a tuple so that a `Baseline` stays hashable."""
    return tuple(
        sorted(
            (b.resource, b.amount)
            for b in bounds.bounds
            if math.isfinite(b.amount) and b.amount > 0
        )
    )


def _amount(resource: str, amount: float) -> str:
    unit = {COMPUTE: "op", MEMORY: "B"}.get(resource, f" {resource}")
    return f"{format_si(amount)}{unit}"


def _calibration_and_history(
    value: PersistentCacheValue, where: str
) -> tuple[Calibration | None, tuple[BaselineSession, ...]]:
    """The entry's calibration read and earlier sessions, as the gate's values."""
    calibration = None
    try:
        if value.calibration is not None:
            calibration = Calibration.from_json(value.calibration)
    except (TypeError, ValueError) as error:
        raise BaselineError(f"{where}: calibration does not read: {error}") from None
    sessions = []
    for i, session in enumerate(value.sessions or ()):
        try:
            sessions.append(BaselineSession.from_json(session))
        except (TypeError, ValueError) as error:
            raise BaselineError(f"{where}: sessions do not read: sessions[{i}]: {error}") from None
    history = tuple(sessions)
    return calibration, history


def _sigma_between(metadata: Mapping[str, Any], where: str) -> float | None:
    try:
        return sigma_between_of(metadata)
    except ValueError as error:
        raise BaselineError(f"{where}: {error}") from None


def sigma_between_of(metadata: Mapping[str, Any]) -> float | None:
    """A cache file's own between-session noise (its top-level `sigma_between`), None where
    it sets none; ValueError, saying what is wrong, where it does not read.

    A fraction, as `max_regression` is: `3` meant as 3% read as 300% noise, and every group
    of the file then read "too noisy", its advice (more sessions, a quieter runner) saying
    nothing of the field that made it so."""
    value = metadata.get("sigma_between")
    if value is None:
        return None
    what = "(the between-session noise as a fraction of the time: 0.03 for 3%)"
    if (
        isinstance(value, bool)
        or not isinstance(value, (int, float))
        or not (math.isfinite(value) and value >= 0)
    ):
        raise ValueError(
            f"field 'sigma_between' is {json_text(value)}, expected a number >= 0 {what}"
        )
    if value > 1:
        raise ValueError(
            f"field 'sigma_between' is {json_text(value)}, expected a fraction from 0 to 1 {what}"
        )
    return float(value)


def device_thread_env(device: Mapping[str, Any] | None) -> dict[str, str] | None:
    """The thread caps a device block's fingerprint names (`fingerprint_thread_env`)."""
    return fingerprint_thread_env(device.get("fingerprint") if device is not None else None)


def fingerprint_thread_env(fingerprint: object) -> dict[str, str] | None:
    """The thread caps a client's fingerprint names (`cpu_device.thread_env`: `{}` where
    none was set), None where it names none (a GPU's, a client of a hook's)."""
    caps = fingerprint.get("thread_env") if isinstance(fingerprint, Mapping) else None
    if not isinstance(caps, Mapping):
        return None
    return {str(name): str(value) for name, value in caps.items()}


def device_machine(device: Mapping[str, Any] | None) -> str | None:
    """The physical device a device block (a cache file's, a record's) was measured on: the
    GPU its fingerprint names by its uuid, else, under a runner class, the device id it was
    `measured_on` (a CPU model of the class), else a CPU's own id (a folder that
    `--autotune-runner` names from another machine, as "no baseline" suggests); None where
    it names none of them. Two GPUs of one model differ, and two CPU models far more, which
    the gate counts as noise (`gate.conditions`)."""
    if device is None:
        return None
    fingerprint = device.get("fingerprint")
    uuid = fingerprint.get("uuid") if isinstance(fingerprint, Mapping) else None
    if isinstance(uuid, str) and uuid:
        return uuid
    measured_on = device.get("measured_on")
    if isinstance(measured_on, str) and measured_on:
        return measured_on
    own = device.get("id")
    # A GPU's block names its uuid (`rules.device_kind`: a `cuda-` id is a GPU's).
    return own if isinstance(own, str) and own and not own.startswith("cuda-") else None
