"""One pytest session of autotuning, without pytest: settings, check mode, tuning and
judging each group, and what the session writes at its end.

`plugin.py` feeds it pytest's items and fixture values; everything it decides, and every
file it writes, is decided and written here, so it reads (and is tested) as plain Python.
"""

from __future__ import annotations

import dataclasses
import math
import os
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from filelock import FileLock

from pytest_autotune.calibration import timed_calibration
from pytest_autotune.gate import (
    MAX_BASELINE_SESSIONS,
    UPDATED_MESSAGE,
    Baseline,
    BaselineError,
    BaselineSession,
    GroupVerdict,
    Measurement,
    RegressionCheck,
    Verdict,
    device_kind,
    format_change,
    format_interval,
    judge,
    measure_winner,
    runner_device_id,
)
from pytest_autotune.plugin_settings import PluginSettings, is_builtin_device
from pytest_autotune.report import CandidateRow, GroupSummary, key_text
from pytest_autotune.report.extra import RecordExtra
from pytest_autotune.tune.benchmark import AutotuneOutcome
from pytest_autotune.tune.bounds import Bounds, Thresholds, Work, roofline
from pytest_autotune.tune.cache import (
    CacheFileError,
    PersistentCache,
    PersistentCacheKey,
    PersistentCacheValue,
    cache_path,
)
from pytest_autotune.tune.checks import NOTHING_TO_COMPARE, compare_outputs
from pytest_autotune.tune.config import AutotuneConfig, ConfigError
from pytest_autotune.tune.errors import AutotuneError, AutotuneErrorKind
from pytest_autotune.tune.files import shared_lock
from pytest_autotune.tune.key import key_to_json, set_autotune_level, stable_key
from pytest_autotune.tune.log import format_duration
from pytest_autotune.tune.records import AutotuneRecord, Recorder
from pytest_autotune.tune.run import RunInfo
from pytest_autotune.tune.tunable import Tunable, TuneGroup
from pytest_autotune.tune.tunable_set import TunableSet, clone_value
from pytest_autotune.tune.tuner import TuneDecision, Tuner

if TYPE_CHECKING:
    from pytest_autotune.tune.client import Client

Candidates = Sequence[tuple[str, Callable[..., Any]]]
Body = Callable[..., Any]
"""`run(candidate, *inputs)`: the test body called with one candidate."""

# -- check mode -----------------------------------------------------------------------------


def check_candidate(
    name: str,
    candidates: Candidates,
    run: Body,
    inputs: tuple[Any, ...],
    *,
    reference: Callable[..., Any] | str | None,
    config: AutotuneConfig,
    check_output: bool = True,
) -> str | None:
    """Run one candidate once and compare its output with the reference's; the failure
    message, or None. Each call gets its own copy of the inputs, so a candidate writing into
    them changes nothing for the next. `config` holds the tolerances, the marker's
    included (`PluginSettings.for_marker`). The candidate's own exception propagates (the test
    shows its traceback); `AutotuneSkip` propagates too, for the caller to skip the test.
    A reference output of None fails unless `check_output` is False: None equals None, so
    a test body without `return` would pass every candidate, a wrong one included.
    """
    by_name = dict(candidates)
    output = run(by_name[name], *clone_value(inputs))
    if not check_output:
        return None
    if reference is None:
        for other, fn in candidates:
            label = f"the reference candidate {other!r} (the first that succeeds)"
            if other == name:
                expected = output
                break
            try:
                expected = run(fn, *clone_value(inputs))
            except Exception:
                continue
            break
    elif isinstance(reference, str):
        if reference not in by_name:
            raise ConfigError(f"reference={reference!r} names no candidate: {sorted(by_name)}")
        fn, label = by_name[reference], f"the reference candidate {reference!r}"
        expected = output if reference == name else run(fn, *clone_value(inputs))
    else:
        fn, label = reference, "the explicit reference"
        expected = run(fn, *clone_value(inputs))
    if expected is None:
        return f"candidate {name!r} cannot be checked: {NOTHING_TO_COMPARE.format(label)}"
    diff = compare_outputs(expected, output, config.rtol, config.atol)
    return None if diff is None else f"candidate {name!r} differs from {label}:\n{diff}"


# -- tune mode ------------------------------------------------------------------------------


@dataclass(frozen=True)
class GroupRequest:
    """One group to tune: its candidates, the body that calls them, and the inputs."""

    group: str
    tuner_name: str
    key: Any
    candidates: Candidates
    run: Body
    inputs: tuple[Any, ...]
    options: Mapping[str, Any]
    tunables: TunableSet | None = None
    """A production set (the `autotune` fixture); None builds one from `candidates`."""


@dataclass(frozen=True)
class _Outcome:
    tunables: TunableSet
    decision: TuneDecision
    verdict: GroupVerdict
    summary: GroupSummary
    failures: dict[str, str]


class AutotuneSession:
    """The state of one session: groups tuned so far and what the end of it writes."""

    def __init__(self, settings: PluginSettings, worker: bool = False) -> None:
        self.settings = settings
        # The level is the config's; `anchor` in a key function reads it process-wide.
        set_autotune_level(settings.engine.level)
        self.worker = worker
        self.client_hook: Callable[[str], Client | None] | None = None
        self.fingerprint_hook: Callable[[dict[str, Any]], object] | None = None
        self.verdict_hook: Callable[[GroupSummary, GroupVerdict], GroupVerdict | None] | None = None
        self.progress: Callable[[str], None] | None = None
        self.notes: list[str] = []
        self._outcomes: dict[str, _Outcome] = {}
        self._key_owners: dict[tuple[str, str], str] = {}
        """(tuner, stable key) -> the group that has it: one entry of a cache file each."""
        self._collisions: dict[str, str] = {}
        self._clients: dict[str, Client] = {}
        self._baselines: dict[
            Path, tuple[PersistentCache, dict[PersistentCacheKey, PersistentCacheValue]]
        ] = {}
        # What travels to the controller and gets written at the end: plain JSON values.
        self.summaries: list[GroupSummary] = []
        self.updates: list[dict[str, Any]] = []
        self.records: list[dict[str, Any]] = []
        self.devices: dict[str, dict[str, Any]] = {}
        self.run: RunInfo | None = None
        self._group_settings: dict[str, PluginSettings] = {}
        self._measured: dict[str, str] = {}
        """The candidate the gate measured, by group, where it is not tuning's pick."""

    def settings_of(self, request: GroupRequest) -> PluginSettings:
        """The settings of a group: the session's under its marker's."""
        if request.group not in self._group_settings:
            self._group_settings[request.group] = self.settings.for_marker(request.options)
        return self._group_settings[request.group]

    # -- clients

    def client(self, device: str | None) -> Client:
        name = device or self.settings.device
        if name not in self._clients:
            self._clients[name] = self._make_client(name)
        return self._clients[name]

    def _make_client(self, name: str) -> Client:
        client = self.client_hook(name) if self.client_hook is not None else None
        if client is not None:
            return client
        from pytest_autotune.backends import cpu

        if name == "cpu":
            return cpu()
        from pytest_autotune.backends import CudaUnavailableError, cuda

        if name == "auto":
            try:
                return cuda(self._gpu_index(None))
            except CudaUnavailableError:
                return cpu()
        if not is_builtin_device(name):
            raise ConfigError(
                f"device {name!r}: no pytest_autotune_client hook provides it, and it is not"
                " auto, cpu, cuda or cuda:N"
            )
        index = int(name.split(":", 1)[1]) if ":" in name else None
        return cuda(self._gpu_index(index))

    def _gpu_index(self, explicit: int | None) -> int:
        """The GPU of `cuda`/`auto`: device 0, which under pytest-xdist is the worker's own
        (pytest_autotune.xdist sets each worker's CUDA_VISIBLE_DEVICES before it starts)."""
        return 0 if explicit is None else explicit

    def uses_default_gpu(self) -> bool:
        """Whether groups run on the GPU the session picks (`auto` or `cuda`), rather than
        on one the settings name or on the CPU."""
        return self.settings.device in ("auto", "cuda")

    def _device_id(self, client: Client) -> str:
        """The id a group's baselines are filed and compared under: the runner class's, when
        the settings name one, else the client's device id."""
        return runner_device_id(client.device_id, self.settings.engine.runner)

    def _baseline_devices(self, request: GroupRequest) -> list[str]:
        """The devices (cache folders) holding a baseline file of this test."""
        root = self.settings.cache_dir
        if self.settings.engine.disable_cache or not root.is_dir():
            return []
        return sorted(
            folder.name
            for folder in root.iterdir()
            if cache_path(root, folder.name, request.tuner_name).is_file()
        )

    # -- groups

    def candidate_outcome(self, request: GroupRequest, name: str) -> str | None:
        """Tune the request's group on first use; then what fails for candidate `name`."""
        collision = self._collision(request)
        if collision is not None:
            return collision
        outcome = self._outcomes.get(request.group)
        if outcome is None:
            outcome = self._outcomes[request.group] = self._tune(request)
        return outcome.failures.get(name)

    def _collision(self, request: GroupRequest) -> str | None:
        """Two groups of one test with one key would share one cache entry, each baseline
        replacing the other's (and the gate comparing one size with another's time)."""
        if request.group in self._collisions or request.group in self._outcomes:
            return self._collisions.get(request.group)
        owner = self._key_owners.setdefault(
            (request.tuner_name, stable_key(request.key)), request.group
        )
        if owner == request.group:
            return None
        message = (
            f"{request.group}: key= gives the key {stable_key(request.key)}, as it does for"
            f" {owner}; one cache entry cannot hold the baselines of both, so give each"
            " group its own key"
        )
        self._collisions[request.group] = message
        return message

    def run_winner(self, request: GroupRequest) -> Any:
        outcome = self._outcomes[request.group]
        fn = outcome.tunables.fns[outcome.decision.fastest_index]
        return fn(*clone_value(request.inputs))

    def _tunable_set(self, request: GroupRequest, work: Work | None) -> TunableSet:
        def wrap(fn: Callable[..., Any]) -> Callable[..., Any]:
            def call(*values: Any) -> Any:
                return request.run(fn, *values)

            return call

        tunables = request.tunables
        if tunables is None:
            items = [Tunable(name, wrap(fn)) for name, fn in request.candidates]
            tunables = TunableSet(lambda *_: request.key, tunables=tuple(_grouped(items, request)))
        if work is not None and tunables.bounds_gen is None:
            # The roofline itself (default thresholds) drives the short circuit; the
            # marker's thresholds are the gate's floor, not a reason to stop tuning.
            def bounds(key: Any, inputs: tuple[Any, ...], client: Client) -> Bounds:
                return roofline(work, client.peaks(), launch_overhead=client.launch_overhead)

            tunables = tunables.with_bounds(bounds)
        return tunables

    def _tune(self, request: GroupRequest) -> _Outcome:
        options = request.options
        settings = self.settings_of(request)
        client = self.client(settings.device)
        work: Work | None = options.get("work")
        thresholds: Thresholds | None = options.get("thresholds")
        engine = replace(settings.engine, checks=True)
        tunables = self._tunable_set(request, work)
        reference = _reference(options.get("reference"), request)
        device_id = self._device_id(client)
        tuner = Tuner(
            request.tuner_name,
            device_id,
            engine,
            reference=reference,
            require_output=options.get("check_output") is not False,
        )
        if self.progress is not None:
            self.progress(f"autotune: tuning {request.group} on {device_id}")
        with _device_lock(client.device_id, client.fingerprint().get("uuid")):
            decision = tuner.tune(request.key, tunables, request.inputs, client)
            verdict = self._judge(request, tunables, decision, client, work, thresholds)
        history: tuple[BaselineSession, ...] = ()
        if verdict.verdict is Verdict.UPDATED:
            history = self._history(request, tunables, verdict, device_id)
            verdict = replace(
                verdict,
                message=self._update_message(request, tunables, verdict, history, device_id),
            )
        if self.verdict_hook is not None:
            provisional = self._summary(request, tunables, decision, verdict, client)
            verdict = self.verdict_hook(provisional, verdict) or verdict
        summary = self._summary(request, tunables, decision, verdict, client)
        self.summaries.append(summary)
        self._remember(request, tunables, decision, verdict, client, history)
        if self.progress is not None:
            for row in summary.candidates:
                what = row.error or ("-" if row.median is None else format_duration(row.median))
                if row.error is None and row.device is not None and row.enqueue is not None:
                    what += (
                        f" (device {format_duration(row.device)},"
                        f" enqueue {format_duration(row.enqueue)})"
                    )
                self.progress(f"autotune:   {row.name}: {what}")
        return _Outcome(tunables, decision, verdict, summary, self._failures(decision, verdict))

    def _judge(
        self,
        request: GroupRequest,
        tunables: TunableSet,
        decision: TuneDecision,
        client: Client,
        work: Work | None,
        thresholds: Thresholds | None,
    ) -> GroupVerdict:
        common: dict[str, Any] = {
            "device_id": self._device_id(client),
            "checksum": tunables.checksum,
            "strict": self.settings.engine.strict,
            "update": self.settings.update,
        }
        if not decision.measured:
            errors = "; ".join(str(r) for r in decision.results.values())
            return judge(None, None, error=f"every candidate failed: {errors}", **common)
        inputs = tunables.input_gen(request.key, request.inputs)
        # On a CPU, a read of the same inputs is timed beside each sample, so the gate can
        # divide out what the machine's state did to both (pytest_autotune.calibration).
        calibrate = (
            timed_calibration(inputs, client.time)
            if device_kind(client.device_id) == "cpu"
            else None
        )

        # A GPU client samples the winner over several placements of its inputs and graph
        # pool, so that the time does not depend on where this process's history put them
        # (pytest_autotune.backends.cuda, "Several placements for the gate").
        placed_sampler = getattr(client, "placed_sampler", None)

        def measurer(index: int) -> Callable[[], Measurement]:
            fn, name = tunables.fns[index], tunables.names[index]

            def measure() -> Measurement:
                try:
                    client.time(fn, inputs)  # one warm-up: every sample counts
                    sample = (
                        placed_sampler(fn, inputs)
                        if placed_sampler is not None
                        else lambda: client.time(fn, inputs)
                    )
                    return measure_winner(sample, calibration=calibrate, name=name)
                except Exception as exc:
                    raise AutotuneError.from_exception(name, exc) from None

            return measure

        measure = measurer(decision.fastest_index)
        try:
            current = measure()
        except AutotuneError as exc:
            return judge(None, None, error=f"the winner failed while measured: {exc}", **common)
        peaks = client.peaks()
        baseline, note = self._baseline(self._device_id(client), request, tunables.checksum)
        if note:
            self.notes.append(note)
        slip = self._tuning_slip(request, tunables, decision, baseline)
        if slip is not None:
            # Tuning here picked another candidate than the baseline's, on samples far
            # fewer than the gate's: if the baseline's winner is still the faster one, the
            # group's code did not slow down, this run's pick did, and only the committed
            # cache decides what runs in production. The group is judged on the faster.
            try:
                other = measurer(slip)()
            except AutotuneError:
                other = None
            if other is not None and other.median < current.median:
                self.notes.append(
                    f"note: {request.group}: tuning picked {decision.fastest_name}"
                    f" ({format_duration(current.median)}), but the baseline's winner"
                    f" {tunables.names[slip]} measured faster ({format_duration(other.median)});"
                    f" the gate compared {tunables.names[slip]}"
                )
                current, measure = other, measurer(slip)
                self._measured[request.group] = tunables.names[slip]
        return judge(
            current,
            baseline,
            work=work,
            peaks=peaks,
            thresholds=thresholds,
            launch_overhead=client.launch_overhead,
            max_regression=self.settings_of(request).engine.max_regression,
            remeasure=measure,
            baseline_devices=() if baseline is not None else self._baseline_devices(request),
            **common,
        )

    def _tuning_slip(
        self,
        request: GroupRequest,
        tunables: TunableSet,
        decision: TuneDecision,
        baseline: Baseline | None,
    ) -> int | None:
        """The index of the baseline's winner when this run's tuning picked another candidate
        of the same list and the baseline's winner was measured and passed its check here;
        None otherwise (and always with --autotune-update, which records what it tuned)."""
        if self.settings.update or baseline is None or baseline.checksum != tunables.checksum:
            return None
        if baseline.mismatch is not None:
            return None
        if baseline.fastest_name == decision.fastest_name:
            return None
        if baseline.fastest_name not in tunables.names:
            return None
        index = tunables.names.index(baseline.fastest_name)
        measured = isinstance(decision.results.get(index), AutotuneOutcome)
        failed_check = any(
            c.name == baseline.fastest_name and not c.skipped and not c.passed
            for c in decision.checks
        )
        return index if measured and not failed_check else None

    def _baseline(
        self, device_id: str, request: GroupRequest, checksum: str
    ) -> tuple[Baseline | None, str | None]:
        """The committed baseline of the group, read once per file; never written here."""
        if self.settings.engine.disable_cache:
            return None, None
        path = cache_path(self.settings.cache_dir, device_id, request.tuner_name)
        if path not in self._baselines:
            cache = PersistentCache(path)
            # Read once, its warnings kept for the summary: inside a test, a project's
            # `filterwarnings = error` would turn them into that test's failure.
            with warnings.catch_warnings(record=True) as caught:
                warnings.simplefilter("always")
                entries = cache.load()
            self.notes.extend(f"warning: {w.message}" for w in caught)
            self._baselines[path] = (cache, entries)
        cache, entries = self._baselines[path]
        try:
            return (
                Baseline.find(
                    entries,
                    stable_key(request.key),
                    checksum,
                    device=cache.device(),
                    metadata=cache.metadata(),
                    source=_relative(path, self.settings.rootpath),
                ),
                None,
            )
        except BaselineError as exc:
            return None, f"warning: {exc}"

    def _summary(
        self,
        request: GroupRequest,
        tunables: TunableSet,
        decision: TuneDecision,
        verdict: GroupVerdict,
        client: Client,
    ) -> GroupSummary:
        checks = {c.name: c for c in decision.checks}
        call_costs = getattr(client, "call_costs", None)  # a CUDA client's device/enqueue split
        rows = []
        for index, name in enumerate(tunables.names):
            result = decision.results.get(index)
            check = checks.get(name)
            cost = call_costs(tunables.fns[index]) if call_costs is not None else None
            rows.append(
                CandidateRow(
                    name=name,
                    median=result.median if isinstance(result, AutotuneOutcome) else None,
                    error=result.message if isinstance(result, AutotuneError) else None,
                    check_passed=None if check is None or check.skipped else check.passed,
                    samples=result.effective_samples if isinstance(result, AutotuneOutcome) else (),
                    device=None if cost is None else cost.device,
                    enqueue=None if cost is None else cost.enqueue,
                )
            )
        return GroupSummary.of(
            request.group,
            key_text(key_to_json(request.key)),
            self._measured.get(request.group, decision.fastest_name) if decision.measured else None,
            verdict,
            rows,
            self._device_id(client),
        )

    def _failures(self, decision: TuneDecision, verdict: GroupVerdict) -> dict[str, str]:
        failures = {
            result.name or "": f"candidate {result.name!r} {result.message}"
            for result in decision.results.values()
            if isinstance(result, AutotuneError) and result.kind is not AutotuneErrorKind.SKIP
        }
        if verdict.failed:
            name = decision.fastest_name
            gate = f"autotune gate: {verdict.verdict.value}: {verdict.message}"
            failures[name] = f"{failures[name]}\n{gate}" if name in failures else gate
        return failures

    def _remember(
        self,
        request: GroupRequest,
        tunables: TunableSet,
        decision: TuneDecision,
        verdict: GroupVerdict,
        client: Client,
        history: tuple[BaselineSession, ...],
    ) -> None:
        """Keep, as plain JSON values, what the end of the session writes."""
        device_id = self._device_id(client)
        record = decision.to_record(request.tuner_name, device_id)
        if device_id not in self.devices:
            fingerprint = dict(client.fingerprint())
            if self.fingerprint_hook is not None:
                self.fingerprint_hook(fingerprint)
            self.devices[device_id] = {
                "id": device_id,
                "fingerprint": fingerprint,
                "peaks": client.peaks().to_json(),
            }
            if device_id != client.device_id:
                self.devices[device_id]["measured_on"] = client.device_id
        work: Work | None = request.options.get("work")
        extra = RecordExtra(
            group=request.group,
            verdict=verdict.verdict.value,
            failed=verdict.failed,
            message=verdict.message,
            fraction_of_roof=verdict.fraction_of_roof,
            roof=verdict.roof,
            call_costs=_call_costs(client, tunables),
            comparison=verdict.comparison.to_json() if verdict.comparison else None,
            measured=self._measured.get(request.group, decision.fastest_name),
            winner_samples_ns=[
                round(s * 1e9) for s in (verdict.measurement.samples if verdict.measurement else ())
            ],
            calibration=(
                verdict.measurement.calibration.to_json()
                if verdict.measurement is not None and verdict.measurement.calibration is not None
                else None
            ),
            # The report re-renders from records alone, so each carries its device and work,
            # and the baseline's samples it draws beside the winner's.
            device=self.devices[device_id],
            work=(
                {
                    "compute_ops": work.compute_ops,
                    "bytes": work.bytes,
                    "working_set": work.footprint,
                }
                if work
                else None
            ),
            baseline=_baseline_extra(self._baseline(device_id, request, tunables.checksum)[0]),
        )
        self.records.append(dataclasses.replace(record, extra=extra.to_json()).to_json())
        if not decision.measured or verdict.measurement is None or verdict.verdict is Verdict.ERROR:
            return
        # The baseline to commit holds the winner's precise measurement, not its tuning
        # samples: the gate compares precise medians with precise medians.
        index = decision.fastest_index
        results = dict(decision.results)
        results[index] = AutotuneOutcome(decision.fastest_name, index, verdict.measurement.samples)
        calibration = verdict.measurement.calibration
        value = replace(
            decision.to_cache_value(),
            results=tuple(results[i] for i in sorted(results)),
            calibration=None if calibration is None else calibration.to_json(),
            sessions=[s.to_json() for s in history] or None,
        )
        self.updates.append(
            {
                "device_id": device_id,
                "tuner": request.tuner_name,
                "key": stable_key(decision.key),
                "checksum": decision.checksum,
                "value": value.to_json(),
            }
        )

    def _update_message(
        self,
        request: GroupRequest,
        tunables: TunableSet,
        verdict: GroupVerdict,
        history: tuple[BaselineSession, ...],
        device_id: str,
    ) -> str:
        """What an update did with the baseline: joined it (and how many sessions it now
        holds) or started a new one (and why), then what the gate would have said."""
        comparison = verdict.comparison
        if history:
            head = f"joined the baseline: {len(history) + 1} sessions"
            if comparison is not None:
                head += f" (this one {format_interval(comparison)} against the old)"
        elif comparison is not None:
            head = f"new baseline: {format_change(comparison.delta)} against the old one"
        else:
            baseline, _ = self._baseline(device_id, request, tunables.checksum)
            head = (
                "new baseline: none before for this key"
                if baseline is None
                else "new baseline: the old one measured another device or candidate list"
            )
        return head + verdict.message.removeprefix(UPDATED_MESSAGE)

    def _history(
        self,
        request: GroupRequest,
        tunables: TunableSet,
        verdict: GroupVerdict,
        device_id: str,
    ) -> tuple[BaselineSession, ...]:
        """The earlier sessions an update keeps beside its own: the committed baseline's,
        when it measured the same candidate list on this device, unless the gate would
        call this session's change a regression or an improvement (its interval wholly
        past `max_regression` either way), which starts a new baseline rather than blending
        into the old one. One slow session on a noisy machine is not such a change: it
        joins the others and moves their mean by its share, where resetting on it would
        make it the whole baseline. The winner's name may differ: like the gate, a
        baseline is the group's best time, whichever of two equal candidates gave it."""
        baseline, _ = self._baseline(device_id, request, tunables.checksum)
        comparison = verdict.comparison
        if baseline is None or comparison is None:
            return ()
        same = baseline.device_id == device_id and baseline.checksum == tunables.checksum
        measurement = verdict.measurement
        tolerance = RegressionCheck.for_device(
            device_id,
            self.settings_of(request).engine.max_regression,
            calibrated=measurement is not None and measurement.calibrated_against(baseline),
        ).max_regression
        changed = comparison.failed or math.log1p(comparison.high) < -math.log1p(tolerance)
        if not same or changed:
            return ()
        return baseline.sessions()[-(MAX_BASELINE_SESSIONS - 1) :]

    # -- the end of the session

    def to_worker_output(self) -> dict[str, Any]:
        return {
            "summaries": [s.to_json() for s in self.summaries],
            "updates": self.updates,
            "records": self.records,
            "devices": self.devices,
            "notes": self.notes,
        }

    def merge_worker_output(self, output: Mapping[str, Any]) -> None:
        self.summaries.extend(GroupSummary.from_json(s) for s in output["summaries"])
        self.updates.extend(output["updates"])
        self.records.extend(output["records"])
        for device_id, device in output["devices"].items():
            self.devices.setdefault(device_id, device)
        self.notes.extend(output["notes"])

    def finish(self) -> bool:
        """Write what the session produced; True when a group failed the gate or an output
        could not be written (each such output is named in one line of the summary)."""
        caches_written = self._write_caches() if self.settings.update else True
        written = [
            caches_written,
            self._write_output("records", self.settings.engine.record, self._write_records),
            self._write_output("report", self.settings.html, self._write_html),
            self._write_output(
                "benchmark JSON", self.settings.benchmark_json, self._write_benchmark_json
            ),
            self._write_output(
                "step summary", os.environ.get("GITHUB_STEP_SUMMARY"), self._write_step_summary
            ),
        ]
        return any(s.failed for s in self.summaries) or not all(written)

    def _write_output(self, what: str, target: Any, write: Callable[[Any], None]) -> bool:
        """Write one output; a path the user gave that cannot be written is one line, not a
        traceback from the end of the session, and the other outputs are still written."""
        if not target:
            return True
        try:
            write(target)
        except OSError as exc:
            self.notes.append(
                f"error: the {what} could not be written to {target}: {exc.strerror or exc}"
            )
            return False
        return True

    def _stamped_records(self) -> list[AutotuneRecord]:
        """The session's records, each carrying this run (one id, time and commit for all
        workers' records: the controller stamps them)."""
        if self.run is None:
            self.run = RunInfo.current(self.settings.rootpath)
        return [
            dataclasses.replace(AutotuneRecord.from_json(r), run=self.run) for r in self.records
        ]

    def _write_records(self, sink: Any) -> None:
        recorder = Recorder(sink)
        for record in self._stamped_records():
            recorder.record(record)

    def _write_html(self, path: Path) -> None:
        from pytest_autotune.report.html import write_html

        write_html(path, self._stamped_records())
        self.notes.append(f"report: {_relative(path, self.settings.rootpath)}")

    def _write_benchmark_json(self, path: Path) -> None:
        from pytest_autotune.report.benchmark_json import write_benchmark_json

        write_benchmark_json(path, self.summaries, root=self.settings.rootpath)

    def _write_step_summary(self, path: str) -> None:
        if not self.summaries:
            return
        from pytest_autotune.report.markdown import render_markdown

        with open(path, "a", encoding="utf-8") as out:
            out.write(render_markdown(self.summaries))

    def _write_caches(self) -> bool:
        """Save each cache file; False when one could not be (each named in one line):
        `--autotune-update` then fails, since its user believes a baseline was saved."""
        written = True
        files: dict[tuple[str, str], dict[PersistentCacheKey, PersistentCacheValue]] = {}
        for update in self.updates:
            entries = files.setdefault((update["device_id"], update["tuner"]), {})
            pk = PersistentCacheKey(update["key"], update["checksum"])
            entries[pk] = PersistentCacheValue.from_json(update["value"])
        for (device_id, tuner), entries in sorted(files.items()):
            path = cache_path(self.settings.cache_dir, device_id, tuner)
            try:
                PersistentCache(path).save(entries, device=self.devices.get(device_id))
            except CacheFileError as exc:
                self.notes.append(f"error: {exc}; this file was not updated")
                written = False
            else:
                self.notes.append(
                    f"updated {_relative(path, self.settings.rootpath)} ({len(entries)} entries)"
                )
        return written

    def summary_lines(self, stats: bool = False) -> list[str]:
        """The terminal summary; `stats` adds every candidate's statistics table."""
        from pytest_autotune.report.terminal import (
            render_candidates,
            render_failures,
            render_summary,
        )

        lines: list[str] = []
        if self.summaries:
            lines.extend(
                render_summary(self.summaries, candidates=self.progress is not None).splitlines()
            )
            if stats:
                lines.append("")
                lines.extend(render_candidates(self.summaries).splitlines())
            updated = [s for s in self.summaries if s.verdict is Verdict.UPDATED]
            if updated:
                lines.append("")
                lines.extend(
                    f"{s.group} [{s.key}]: {s.message}" for s in sorted(updated, key=_by_group)
                )
            failed = render_failures(self.summaries)
            if failed:
                lines.append("")
                lines.append("gate failures:")
                lines.extend(failed.splitlines())
        lines.extend(self.notes)
        return lines


def _baseline_extra(baseline: Baseline | None) -> dict[str, Any] | None:
    """What a record keeps of the baseline it was judged against, for the report."""
    if baseline is None:
        return None
    return {
        "fastest_name": baseline.fastest_name,
        "device_id": baseline.device_id,
        "source": baseline.source,
        "samples_ns": [round(s * 1e9) for s in baseline.samples],
        "calibration": None if baseline.calibration is None else baseline.calibration.to_json(),
        "sessions": len(baseline.sessions()),
    }


def _call_costs(client: Client, tunables: TunableSet) -> dict[str, dict[str, float | None]]:
    """Each candidate's device and host enqueue seconds of its latest sample, by name,
    where the client tells them apart (a CUDA client; empty for others)."""
    call_costs = getattr(client, "call_costs", None)
    if call_costs is None:
        return {}
    costs = {}
    for name, fn in zip(tunables.names, tunables.fns, strict=True):
        cost = call_costs(fn)
        if cost is not None:
            costs[name] = {"device_s": cost.device, "enqueue_s": cost.enqueue}
    return costs


def _by_group(summary: GroupSummary) -> tuple[str, str]:
    return summary.group, summary.key


def _reference(reference: Any, request: GroupRequest) -> Callable[..., Any] | None:
    """The marker's `reference` as a function of the inputs, called through the body."""
    if reference is None:
        return None
    if isinstance(reference, str):
        by_name = dict(request.candidates)
        if reference not in by_name:
            raise ConfigError(f"{request.group}: reference={reference!r} names no candidate")
        reference = by_name[reference]
    fn = reference

    def call(*values: Any) -> Any:
        return request.run(fn, *values)

    return call


def _grouped(items: list[Tunable], request: GroupRequest) -> list[Tunable]:
    """Apply the marker's `groups=[(TuneGroup, {candidate: priority}), ...]`."""
    groups = request.options.get("groups") or ()
    by_name = {t.name: t for t in items}
    for entry in groups:
        group, members = entry
        if not isinstance(group, TuneGroup) or not isinstance(members, Mapping):
            raise ConfigError(
                f"{request.group}: groups= takes (TuneGroup, {{candidate name: priority}}) pairs"
            )
        for name, priority in members.items():
            if name not in by_name:
                raise ConfigError(f"{request.group}: groups= names no candidate {name!r}")
            fn = priority if callable(priority) else (lambda key, p=int(priority): p)
            by_name[name] = by_name[name].group(group, fn)
    return [by_name[t.name] for t in items]


def _device_lock(device_id: str, uuid: object = None) -> FileLock:
    """Timing on one device is serialized across processes (pytest-xdist workers): two
    candidates timed at once on one GPU would each read the other's load as their own.
    A GPU's UUID names it where known, so workers on two GPUs of one model time at once."""
    name = device_id if not isinstance(uuid, str) else f"{device_id}-{uuid}"
    return shared_lock(f"pytest-autotune-{name}")


def _relative(path: Path, root: Path) -> str:
    try:
        return str(path.relative_to(root))
    except ValueError:
        return str(path)


__all__ = [
    "AutotuneSession",
    "GroupRequest",
    "check_candidate",
]
