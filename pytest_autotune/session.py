"""One pytest session of autotuning, without pytest: tuning and judging each group, over
its settings (`plugin_settings`), the gate's policy (`gate_policy`), the baselines
(`baselines`), each group's record (`group_record`) and what the session writes
(`outputs`); check mode is `check_mode`.

`plugin.py` feeds it pytest's items and fixture values and the hooks of other plugins;
everything it decides is plain Python, read (and tested) without pytest.
"""

from __future__ import annotations

import functools
import json
import os
import time
from collections.abc import Callable, Collection, Iterator, Mapping
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, TypeGuard

from filelock import FileLock, Timeout

from pytest_autotune.backends.cpu import settle_allocator
from pytest_autotune.backends.tracing import unsuspended
from pytest_autotune.baselines import Baselines, baseline_extra
from pytest_autotune.check_mode import Body, Candidates, candidate_call
from pytest_autotune.gate import (
    BaselineSession,
    GroupVerdict,
    Verdict,
    device_kind,
    runner_device_id,
)
from pytest_autotune.gate_policy import (
    FoundBaseline,
    GroupCase,
    Judged,
    judge_group,
    settle_update,
)
from pytest_autotune.group_record import call_costs, group_record, group_summary, instrument
from pytest_autotune.outputs import SessionOutput, progress_lines
from pytest_autotune.plugin_settings import PluginSettings, is_builtin_device, unserved_device
from pytest_autotune.quiet import Quiet, crashed_tests, tuning_noted, tuning_test
from pytest_autotune.report import GroupSummary
from pytest_autotune.tune.benchmark import AutotuneOutcome
from pytest_autotune.tune.bounds import Bounds, Work, roofline
from pytest_autotune.tune.call_scope import SCOPE_ATTRIBUTE
from pytest_autotune.tune.check_result import RAISED
from pytest_autotune.tune.config import ConfigError
from pytest_autotune.tune.errors import (
    NOT_REACHED,
    UNPLANNED,
    AutotuneError,
    AutotuneErrorKind,
    AutotuneSkip,
)
from pytest_autotune.tune.files import shared_lock
from pytest_autotune.tune.key import autotune_level_scope, stable_key
from pytest_autotune.tune.log import AutotuneLogContext, format_duration
from pytest_autotune.tune.plain_numbers import real_number
from pytest_autotune.tune.records import AutotuneRecord
from pytest_autotune.tune.tunable import Tunable, TuneGroup, tune_plan, unplanned
from pytest_autotune.tune.tunable_set import TunableSet, checksum_of
from pytest_autotune.tune.tuner import MEASURED_FAILURES, TuneDecision, Tuner

if TYPE_CHECKING:
    from pytest_autotune.tune.client import Client


@dataclass(frozen=True)
class SessionHooks:
    """What other plugins and the terminal add to a session, each optional."""

    client: Callable[[str], Client | None] | None = None
    """`pytest_autotune_client`: the client of a device name, or None for the built-ins."""
    fingerprint: Callable[[dict[str, Any]], object] | None = None
    """`pytest_autotune_fingerprint`: adds to a device's fingerprint in place; returns what
    its implementations returned (pluggy's list of those that returned something), which
    none should."""
    verdict: Callable[[GroupSummary, GroupVerdict], GroupVerdict | None] | None = None
    """`pytest_autotune_verdict`: may replace a group's verdict."""
    progress: Callable[[str], None] | None = None
    """Under -v: a line as each group is tuned (and each candidate in the summary)."""


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
    not_run: Mapping[str, str] = field(default_factory=dict)
    """The candidates whose tests are marked not to run, with why (`collection.not_run`):
    in the set built from `candidates`, declining the key there, so that its candidate list
    (and the checksum its baseline is found by) is the one a machine that runs them
    tunes; still a reference where the marker names one."""
    test_ids: Mapping[str, str] = field(default_factory=dict)
    """Each candidate's own test item by name, as its node id (`collection.candidate_nodeids`): the
    pytest-benchmark file names a candidate's figures as pytest names its test."""
    expected_to_fail: frozenset[str] = frozenset()
    """The candidates whose tests are marked `xfail` (`collection.expected_to_fail`): the
    report does not raise their failed checks."""
    key_known: bool = True
    """False where `key` is only the parameters' ids, its marker's `key=` callable having
    failed: the record says so, and an update's stale entries leave the test's alone."""
    filed_before: str | None = None
    """The tuner an earlier version filed this group under, where it differs from
    `tuner_name`: an `autotune` fixture's set of a `LocalTuner`, filed under its test's node
    id by pytest-autotune 0.1.0, whose baselines are read there while the tuner's file
    holds none of the key (`Baselines.find`)."""


@dataclass(frozen=True)
class _Outcome:
    tunables: TunableSet
    decision: TuneDecision
    failures: dict[str, str]
    gate: str | None = None
    """The gate's failure alone, where it failed (also in `failures`, on the candidate it
    judged): a fixture call goes on past it (`fixture._tune_set`)."""
    gate_test: str | None = None
    """The candidate whose test the gate's failure was given to, where it failed."""


class AutotuneSession:
    """The state of one session: groups tuned so far and what the end of it writes."""

    def __init__(
        self,
        settings: PluginSettings,
        worker: bool = False,
        hooks: SessionHooks | None = None,
        worker_gpu: str | None = None,
    ) -> None:
        self.settings = settings
        self.worker = worker
        self.worker_gpu = worker_gpu
        """The `CUDA_VISIBLE_DEVICES` pytest_autotune.xdist gave this worker, None where it
        gave it none: one GPU or none, or a `--tx` spec that sets the variable itself (the
        worker then sees the devices the controller or the user chose)."""
        self.hooks = hooks or SessionHooks()
        notes: list[str] = []
        self.output = SessionOutput(settings, notes)
        """What travels to the controller and gets written at the end."""
        self.baselines = Baselines(settings, notes)
        self._outcomes: dict[str, _Outcome] = {}
        self._key_owners: dict[tuple[str, str, str], str] = {}
        """(tuner, stable key, checksum) -> the group that has it: one entry of a cache file
        each."""
        self._collisions: dict[str, str] = {}
        self._stopped: dict[str, str] = {}
        """Why each group whose tuning an exception of no candidate's stopped (pytest-timeout's
        alarm, an internal error) is not tuned again by its other tests."""
        self._verdict_raised: set[str] = set()
        """The groups whose `pytest_autotune_verdict` hook raised, not asked again."""
        self._kept: set[str] = set()
        """The groups kept (`_add`), so that one that measured nothing (its device could
        not be used, its tuning was stopped) is kept once: a `ConfigError` (a device no
        client serves) is met again by each test of the group."""
        self._waiting_for: str | None = None
        """The lock a tuning waits for now (another process's timing of its device), said
        where a test timeout stops the tuning there: its traceback shows only a sleep."""
        self._clients: dict[str, Client] = {}
        self._group_settings: dict[str, PluginSettings] = {}
        self._devices: dict[str, dict[str, Any]] = {}
        self.quiet: Quiet | None = None
        """Under pytest-xdist, the locks that pause the other workers' tests while this
        worker tunes and measures a group (`pytest_autotune.quiet`); None elsewhere."""
        self.selected: dict[str, tuple[str, ...]] = {}
        """The candidates of each marked group whose items were selected (after `-k`,
        `-m`, node ids), in collection order: a group is tuned whole, and the gate's
        failure of a winner whose own item was not selected is reported on the first that
        was (`_failures`)."""

    def level_scope(self, options: Mapping[str, Any]) -> AbstractContextManager[None]:
        """Where a group's key is made and its test runs: `anchor` there uses the group's
        level (its marker's `level=`, else the session's), and the process's outside."""
        return autotune_level_scope(self.settings.for_marker(options).engine.level)

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
        client = self.hooks.client(name) if self.hooks.client is not None else None
        if client is not None:
            if not hasattr(client, "device_id"):
                # A device's name, or the factory of a client in place of one (`cpu`),
                # read as "a client with the device id None".
                factory = getattr(client, "__name__", None) if callable(client) else None
                call = f"; call it: {factory}()" if factory else ""
                raise ConfigError(
                    f"device {name!r}: a pytest_autotune_client hook returned {client!r},"
                    f" not a client{call}: return a client (an object with device_id,"
                    " launch_overhead, fingerprint(), sync(), time() and peaks()) or None"
                )
            device_id = getattr(client, "device_id", None)
            if not isinstance(device_id, str) or not device_id:
                # Said here once, not as a traceback from the cache's file names (or the
                # gate's rules) in every test that tunes on it.
                raise ConfigError(
                    f"device {name!r}: the client of a pytest_autotune_client hook has the"
                    f" device id {device_id!r}: it names the folder of its baselines, so it"
                    " must be a non-empty str"
                )
            return client
        from pytest_autotune.backends import cpu

        if name == "cpu":
            return cpu()
        from pytest_autotune.backends import CudaUnavailableError, cuda

        if name == "auto":
            try:
                return cuda(self._gpu_index(None))
            except CudaUnavailableError as error:
                self._note_cpu_fallback(error)
                return cpu()
        if not is_builtin_device(name):
            raise ConfigError(unserved_device(name))
        index = int(name.split(":", 1)[1]) if ":" in name else None
        return cuda(self._gpu_index(index))

    def _note_cpu_fallback(self, error: Exception) -> None:
        """Say why `auto` tuned on the CPU, where a GPU was meant: CuPy is installed, or
        `CUDA_VISIBLE_DEVICES` is set. A bad `CUDA_VISIBLE_DEVICES` ("7" on a host of one
        GPU) otherwise moved every baseline to the CPU's folder without a word. Without
        CuPy and the variable, the CPU is what the machine has, and nothing is said."""
        without_cupy = isinstance(error.__cause__, ImportError)
        if without_cupy and "CUDA_VISIBLE_DEVICES" not in os.environ:
            return
        self.output.notes.append(f"warning: device auto: tuned on the CPU, as {error}")

    def _note_profiler(self) -> None:
        """Say once that the times carry a profiler's cost, where one that the timed loops
        cannot put aside runs (`backends.tracing`): `python -m cProfile -m pytest`."""
        profiler = unsuspended()
        if profiler is None:
            return
        line = (
            f"warning: timed under a profiler that cannot be put aside ({profiler}): every"
            " time carries its cost, so winners and verdicts may not hold"
        )
        if line not in self.output.notes:
            self.output.notes.append(line)

    def _gpu_index(self, explicit: int | None) -> int:
        """The GPU of `cuda`/`auto`: device 0, which under pytest-xdist is the worker's own
        (pytest_autotune.xdist sets each worker's CUDA_VISIBLE_DEVICES before it starts).

        An index is refused in a worker given one GPU: there `cuda:N` would name the worker's
        N-th device, not the host's, and a group goes to whichever worker is free, so the
        group would run on another GPU than it names, or fail, from run to run."""
        if explicit is not None and self.worker_gpu is not None:
            raise ConfigError(
                f"device cuda:{explicit}: this pytest-xdist worker sees one GPU alone"
                f" (CUDA_VISIBLE_DEVICES={self.worker_gpu}: pytest-autotune gives each worker"
                " a GPU of its own under the default --autotune-device, and a group goes to"
                " whichever worker is free); name a device for the whole run"
                f" (--autotune-device=cuda:{explicit}: every worker then sees every GPU), or"
                " leave the group's device to the worker (device='cuda')"
            )
        return 0 if explicit is None else explicit

    def uses_default_gpu(self) -> bool:
        """Whether groups run on the GPU the session picks (`auto` or `cuda`), rather than
        on one the settings name or on the CPU."""
        return self.settings.device in ("auto", "cuda")

    def _device_id(self, client: Client) -> str:
        """The id a group's baselines are filed and compared under: the runner class's, when
        the settings name one, else the client's device id."""
        return runner_device_id(client.device_id, self.settings.engine.runner)

    # -- groups

    def candidate_outcome(self, request: GroupRequest, name: str) -> str | None:
        """Tune the request's group on first use; then what fails for candidate `name`."""
        collision = self._collision(request)
        if collision is not None:
            return collision
        stopped = self._stopped.get(request.group)
        if stopped is not None:
            return stopped
        outcome = self._outcomes.get(request.group)
        if outcome is None and self.quiet is not None:
            crashed = crashed_tests(self.quiet.folder) & set(request.test_ids.values())
            # Only a crash inside the group's tuning keeps it from being tuned again: one
            # in a test's own code (a fixture's setup) lost the tuning with the worker, and
            # the group's next test tunes it anew.
            tuning = tuning_test(self.quiet.folder, request.group) if crashed else None
            if tuning is not None:
                stopped = self._stopped[request.group] = _crashed(request, tuning)
                return stopped
        if outcome is None:
            folder = self.quiet.folder if self.quiet else None
            nodeid = request.test_ids.get(name, name)
            if self.output.hand_back is not None:
                # The group's row should this worker crash in its tuning: the worker's
                # output never comes, and the group was in no summary, report or record.
                why = _crashed(request, request.test_ids.get(name))
                if_crashed = self._untuned_record(request, why)
                if if_crashed is not None:
                    self.output.note_tuning(if_crashed)
            try:
                with tuning_noted(folder, request.group, nodeid):
                    outcome = self._outcomes[request.group] = self._tune(request)
            except BaseException as exc:  # pytest-timeout's alarm is pytest's `fail`
                # A setting refused (a client's device id) is no stopped tuning: each test
                # of the group meets it again and says it in its one line, not as a hint
                # about pytest-timeout.
                waiting, self._waiting_for = self._waiting_for, None
                if not isinstance(exc, (KeyboardInterrupt, SystemExit, ConfigError)):
                    self._stopped[request.group] = _stopped(request.group, name, exc, waiting)
                    self.keep_untuned(request, self._stopped[request.group])
                    if not isinstance(exc, Exception):
                        # pytest's outcomes (pytest-timeout's alarm is its `fail`) are no
                        # `Exception`; an error of ours or a client's is its own message.
                        _note_stopped_here(exc, request.group, waiting)
                elif request.group in self._stopped:
                    # A refusal that stops the group, its tuning done (a verdict hook's
                    # return that is no GroupVerdict): kept as the ERROR it is, or it was in
                    # no summary, report nor record.
                    self.keep_untuned(request, self._stopped[request.group])
                raise
            finally:
                self.output.note_tuned()  # returned or raised: no crash in it
        return outcome.failures.get(name)

    def gate_failure(self, request: GroupRequest) -> str | None:
        """The gate's failure of a tuned group, where the gate failed it: the one failure
        of a group whose candidates all ran right."""
        outcome = self._outcomes.get(request.group)
        return None if outcome is None else outcome.gate

    def skipped_after_tuning(self, group: str, name: str, why: str) -> str | None:
        """Candidate `name`'s test was skipped at its setup (a fixture's `pytest.skip()`,
        `why`) after its group was tuned, which ran it on an earlier test's fixtures (a
        fixture's skip is known only when that test runs): the gate's failure where it was
        given to this test, with why, else None, a note said where the group timed it.
        Without it the run failed on the gate with no test failed."""
        outcome = self._outcomes.get(group)
        if outcome is None:
            return None
        timed = any(
            r.name == name and not isinstance(r, AutotuneError)
            for r in outcome.decision.results.values()
        )
        if not timed and outcome.gate_test != name:
            return None
        said = (
            f"candidate {name!r} was tuned with its group {group} before its own test was"
            f" skipped at its setup ({why}): a fixture's skip keeps a candidate out of its"
            " group only where its test runs before the one that tunes the group; to keep"
            " it out, mark its parameter (pytest.param(..., marks=pytest.mark.skipif(...)))"
        )
        if outcome.gate_test != name:
            self.note(f"note: {said}")
            return None
        return f"{outcome.failures[name]}\n({said})"

    def declined(self, group: str, name: str) -> str | None:
        """Why candidate `name` of a tuned group declined its key (`AutotuneSkip`, or
        `pytest.skip()` in the test body), or None where it did not: its test is skipped,
        as plain pytest skips it."""
        outcome = self._outcomes.get(group)
        return None if outcome is None else _declined(outcome.decision).get(name)

    def _collision(self, request: GroupRequest) -> str | None:
        """Two groups of one test with one key would share one cache entry, each baseline
        replacing the other's (and the gate comparing one size with another's time)."""
        if request.group in self._collisions or request.group in self._outcomes:
            return self._collisions.get(request.group)
        # The checksum too: two sets of one tuner (two `autotune` fixture calls) are two
        # entries of its file at one key, as their candidate lists differ.
        names = tuple(name for name, _ in request.candidates)
        owner = self._key_owners.setdefault(
            (request.tuner_name, stable_key(request.key), checksum_of(names)), request.group
        )
        if owner == request.group:
            return None
        # A marker's key comes from its `key=`; an `autotune` fixture call's from its set.
        if request.tunables is None:
            # Without a key=, the parameters' ids, a numbered one by its value
            # (`collection.plain_text`): one value given twice in a parametrize.
            source = "key= (or without one, the parameters' ids and values)"
            remedy = "so give each group its own key"
        else:
            source, remedy = "the set's key_gen", "so tune this set at this key in one test"
        message = (
            f"{request.group}: {source} gives the key {stable_key(request.key)}, as it does"
            f" for {owner}; one cache entry cannot hold the baselines of both, {remedy}"
        )
        self._collisions[request.group] = message
        return message

    def winners(self, request: GroupRequest) -> list[tuple[str, Callable[..., Any]]]:
        """The candidates of a tuned group in the order a call runs them on the caller's
        own inputs (`fixture._run_winner`), each where those before it declined them: the
        winner, then the candidates its plan tries for the key, batch by batch, the
        measured of a batch by their score. `LocalTuner.execute` tunes a key again where
        its winner declines the inputs of a call, and a call repeating an earlier one's
        key (a size that anchors to it) raised the winner's `AutotuneSkip` instead."""
        outcome = self._outcomes[request.group]
        decision, tunables = outcome.decision, outcome.tunables
        results = decision.results

        def rank(index: int) -> tuple[bool, float]:
            result = results.get(index)
            if isinstance(result, AutotuneOutcome):
                return (False, result.score)
            return (True, 0.0)  # unmeasured, after the measured, in the plan's order

        order = [decision.fastest_index]
        for batch in tune_plan(request.key, tunables.tunables):
            order.extend(i for i in sorted(batch, key=rank) if i not in order)
        return [(tunables.names[i], tunables.fns[i]) for i in order]

    def _tunable_set(self, request: GroupRequest, work: Work | None) -> TunableSet:
        def wrap(name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
            # A partial, not a closure: it pickles where the body and the candidate do,
            # so a fresh process can measure it again (`fresh_process`).
            wrapped = candidate_call(request.run, name, fn)
            scope_of = getattr(request.run, "scope_of", None)  # `candidate_run.CandidateRun`'s
            scope = scope_of(name) if scope_of is not None else None
            if scope is not None:
                # Its test's warning filters, entered around each timed call by the tuner
                # and outside its timer (`tune.call_scope`).
                setattr(wrapped, SCOPE_ATTRIBUTE, scope)
            return wrapped

        tunables = request.tunables
        if tunables is None:
            items = [
                Tunable(name, _skipped_here(request.not_run[name]))
                if name in request.not_run
                else Tunable(name, wrap(name, fn))
                for name, fn in request.candidates
            ]
            grouped = _grouped(items, request.options.get("groups"), request.not_run)
            tunables = TunableSet(lambda *_: request.key, tunables=tuple(grouped))
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
        work: Work | None = options.get("work")
        tunables = self._tunable_set(request, work)
        try:
            client = self.client(settings.device)
        except Exception as error:
            # Its tests fail with the error; the group is kept as an ERROR too, as one
            # whose every candidate failed is, or the summary, the report and the records
            # left it out as if it had never been asked for.
            self._keep_unusable(request, tunables, settings, error)
            raise
        device_id = self._device_id(client)
        try:
            # Made before the tuning: a fingerprint hook's addition that no file can hold
            # failed the run's end, after every group was tuned, and wrote nothing.
            self._fingerprint(client, device_id)
        except ConfigError as error:
            # Kept as an ERROR, as above (what a hook raises stops the tuning, which
            # keeps it so); not "device cannot be used", the device being fine.
            self._keep_unmeasured(request, tunables, settings, str(error), device_id)
            raise
        compared = options.get("check_output") is not False
        tuner = Tuner(
            request.tuner_name,
            device_id,
            replace(settings.engine, checks=True),
            reference=_reference(options.get("reference"), request),
            # As plain pytest's check: with nothing to compare, each candidate has to run.
            require_output=compared,
            # A production set's functions (the `autotune` fixture's) that write into an
            # `out` argument and return None are judged by what they wrote, as at run time.
            written_inputs=request.tunables is not None,
            compare_outputs=compared,
            reference_last=request.expected_to_fail,
        )
        progress = self.hooks.progress
        if progress is not None:
            progress(f"autotune: tuning {request.group} on {device_id}")
        self._note_profiler()
        machine = client.fingerprint().get("uuid")
        on_gpu = device_kind(client.device_id) == "gpu"
        quiet = self.quiet.measuring(gpu=on_gpu) if self.quiet else nullcontext(None)
        with (
            self._device_held(client.device_id, machine),
            quiet as unpaused,
            autotune_level_scope(settings.engine.level),
        ):
            if not on_gpu:
                # malloc's thresholds where the gate's measurer puts them (`settle_allocator`),
                # so that tuning ranks a kernel of large temporaries as the gate times it.
                settle_allocator()
            decision = tuner.tune(request.key, tunables, request.inputs, client)
            if not decision.measured and _nothing_takes(decision):
                # Nothing takes the key: skipped, as plain pytest skips each test, with
                # nothing to judge nor record (a failure the key is not).
                return _Outcome(tunables, decision, {})
            case = GroupCase(
                request.group, request.key, request.inputs, tunables, decision, device_id, settings
            )
            judged, notes = self._judge(request, case, client, work, machine)
            while judged.winner_failed is not None:
                # A candidate that raises fails its own test, and the others are judged:
                # the group, left with no verdict, got no baseline either. The notes of a
                # judgement given up ("the gate compared fast") are not the group's.
                decision = decision.without_winner(judged.winner_failed)
                if not decision.measured and decision.unreached():
                    # A `groups=` plan stopped at the batch of the one that raised: its
                    # next batches are tuned, the candidates that raised declining.
                    decision = _with_failures(
                        tuner.tune(
                            request.key, _declining(tunables, decision), request.inputs, client
                        ),
                        decision,
                    )
                case = replace(case, decision=decision)
                judged, notes = self._judge(request, case, client, work, machine)
            # A file's warning (a bad `sigma_between`) comes with each of its groups: said once.
            said = set(self.output.notes)
            self.output.notes.extend(
                n for n in notes if not (n.startswith("warning: ") and n in said)
            )
        if unpaused is not None:
            self.output.notes.append(
                f"{request.group}: measured while other pytest-xdist workers ran tests ({unpaused})"
            )
        verdict = self._keep(request, case, judged, client, work)
        selected = self._selected(request)
        failures, gate_test = _failures(
            decision,
            verdict,
            selected,
            judged.measured,
            judged.overtaken,
            _unexpected_tests(request, selected),
        )
        return _Outcome(tunables, decision, failures, _gate_failure(verdict), gate_test)

    def _selected(self, request: GroupRequest) -> tuple[str, ...] | None:
        """The group's selected candidates whose tests may still run: a test a fixture
        skipped at its setup before the group was tuned (`request.not_run`) has ended, and
        a gate failure given to it was shown on no test, the run failing all the same."""
        selected = self.selected.get(request.group)
        if selected is None:
            return None
        # The running test is one of them: what is left is never empty (`_chosen`).
        return tuple(name for name in selected if name not in request.not_run)

    def _judge(
        self,
        request: GroupRequest,
        case: GroupCase,
        client: Client,
        work: Work | None,
        machine: object,
    ) -> tuple[Judged, list[str]]:
        """The gate's judgement of one tuned group (`gate_policy.judge_group`), and the notes
        it makes."""
        notes: list[str] = []
        judged = judge_group(
            case,
            client,
            work=work,
            thresholds=request.options.get("thresholds"),
            find_baseline=lambda: self._baseline(request, case),
            baseline_devices=lambda: self.baselines.devices_with(request.tuner_name),
            notes=notes,
            # A GPU's uuid; else the device measured on, which under a runner class names
            # the CPU model that a baseline's `measured_on` is compared with.
            machine=machine if isinstance(machine, str) and machine else client.device_id,
            unreadable_file=lambda: self.baselines.unreadable(case.device_id, request.tuner_name),
            missing_file=lambda: self.baselines.missing(case.device_id, request.tuner_name),
        )
        return judged, notes

    def _keep(
        self,
        request: GroupRequest,
        case: GroupCase,
        judged: Judged,
        client: Client,
        work: Work | None,
    ) -> GroupVerdict:
        """Keep a judged group as its record, with the verdict an update settles and the
        verdict hook may replace; that verdict."""
        verdict = judged.verdict
        kept: tuple[BaselineSession, ...] = ()
        recorded = True
        if verdict.verdict is Verdict.UPDATED:
            unreadable = self.baselines.unreadable(case.device_id, request.tuner_name)
            found, unusable = self._baseline(request, case)
            # The entry's own fault, as `Baselines.find` warned of it (the file's path and
            # the key are on the update's line already).
            why = unusable.removeprefix("warning: ") if unusable else None
            settled = settle_update(case, verdict, found, unreadable, why)
            verdict, kept, recorded = settled.verdict, settled.history, settled.recorded
        device = self._device(client, case.device_id)
        baseline = baseline_extra(self._baseline(request, case)[0])

        def record(verdict: GroupVerdict) -> AutotuneRecord:
            return group_record(
                case,
                verdict,
                work=work,
                call_costs=call_costs(client, case.tunables),
                instrument=instrument(client),
                measured=judged.measured,
                device=device,
                baseline=baseline,
                history=kept,
                recorded=recorded,
                **self._of_request(request),
            )

        verdict, summary = self._add(verdict, record)
        if self.hooks.progress is not None:
            for line in progress_lines(summary):
                self.hooks.progress(line)
        return verdict

    def _keep_unusable(
        self,
        request: GroupRequest,
        tunables: TunableSet,
        settings: PluginSettings,
        error: Exception,
    ) -> None:
        """Keep a group whose device could not be used as an ERROR record, once: each of
        its candidates failed by the device's error, nothing measured, no device block
        but its name."""
        device = settings.device
        # A device no client serves names itself already ("device 'tpu': no ..."); a
        # client hook's error may say nothing but its type.
        said = str(error).removeprefix(f"device {device!r}: ") or type(error).__name__
        why = f"device {device!r} cannot be used: {said}"
        # Without a client there is no device id (nor a runner class's, which takes the
        # device's kind from it): the record names the device as the settings do.
        self._keep_unmeasured(request, tunables, settings, why, device)

    def keep_untuned(self, request: GroupRequest, why: str) -> None:
        """Keep a group that could not be tuned (its tuning stopped by an exception of no
        candidate's: its inputs or bounds refused, a test timeout's alarm; or its marker's
        `key=` or `work=` failed) as an ERROR record, as one whose device could not be used
        is, or the summary, the report and the records left it out. Best effort: what
        cannot be rebuilt of the group (the error was in its own settings or candidates)
        keeps no record, and the test's own error stands."""
        try:
            settings = self.settings_of(request)
            tunables = self._tunable_set(request, request.options.get("work"))
        except Exception:
            return
        self._keep_unmeasured(request, tunables, settings, why, self._untuned_device(settings))

    def _untuned_device(self, settings: PluginSettings) -> str:
        """The id of the device a group that was not tuned is filed under: the client's
        its tuning would have used (made here where the group is the session's first)."""
        try:
            return self._device_id(self.client(settings.device))
        except Exception:
            return settings.device or self.settings.device

    def _untuned_record(self, request: GroupRequest, why: str) -> AutotuneRecord | None:
        """The ERROR record `keep_untuned` would keep, kept nowhere; None where the group
        cannot be rebuilt."""
        try:
            settings = self.settings_of(request)
            tunables = self._tunable_set(request, request.options.get("work"))
        except Exception:
            return None
        device = self._untuned_device(settings)
        record = self._unmeasured(request, tunables, settings, why, device)
        return record(GroupVerdict(Verdict.ERROR, why, None, None, failed=True))

    def _keep_unmeasured(
        self,
        request: GroupRequest,
        tunables: TunableSet,
        settings: PluginSettings,
        why: str,
        device: str,
    ) -> None:
        """Keep a group that measured nothing as an ERROR record on `device`, once: each of
        its candidates failed by `why`."""
        if request.group in self._kept:
            return
        self._kept.add(request.group)
        record = self._unmeasured(request, tunables, settings, why, device)
        self._add(GroupVerdict(Verdict.ERROR, why, None, None, failed=True), record)

    def _unmeasured(
        self,
        request: GroupRequest,
        tunables: TunableSet,
        settings: PluginSettings,
        why: str,
        device: str,
    ) -> Callable[[GroupVerdict], AutotuneRecord]:
        """The record of a group that measured nothing on `device`, each of its candidates
        failed by `why`, for its verdict."""
        decision = TuneDecision(
            key=request.key,
            checksum=tunables.checksum,
            fastest_index=0,
            fastest_name=tunables.names[0],
            results={
                index: AutotuneError(AutotuneErrorKind.UNKNOWN, why, name)
                for index, name in enumerate(tunables.names)
            },
            bounds=None,
            context=AutotuneLogContext(),
            measured=False,
            source="tuned",
        )
        case = GroupCase(
            request.group, request.key, request.inputs, tunables, decision, device, settings
        )

        def record(verdict: GroupVerdict) -> AutotuneRecord:
            return group_record(
                case,
                verdict,
                work=request.options.get("work"),
                call_costs={},
                measured=None,
                device={"id": device},
                baseline=None,
                **self._of_request(request),
            )

        return record

    def _of_request(self, request: GroupRequest) -> dict[str, Any]:
        """What a group's record says of the request that tuned it, measured or not."""
        return {
            "tuner": request.tuner_name,
            "test_ids": request.test_ids,
            "expected_to_fail": request.expected_to_fail,
            "selected": self.selected.get(request.group),
            "key_known": request.key_known,
        }

    def _add(
        self, verdict: GroupVerdict, record: Callable[[GroupVerdict], AutotuneRecord]
    ) -> tuple[GroupVerdict, GroupSummary]:
        """Keep a group's record, with the verdict the verdict hook may replace; that
        verdict, and the group's summary."""
        if self.hooks.verdict is not None:
            verdict = self._hook_verdict(self.hooks.verdict, verdict, record)
        summary = self.output.add(record(verdict))
        self._kept.add(summary.group)  # kept: a tuning stopped after it adds no other
        return verdict, summary

    def _hook_verdict(
        self,
        hook: Callable[[GroupSummary, GroupVerdict], GroupVerdict | None],
        verdict: GroupVerdict,
        record: Callable[[GroupVerdict], AutotuneRecord],
    ) -> GroupVerdict:
        """The verdict `pytest_autotune_verdict` gives a group in place of the gate's."""
        judged = group_summary(record(verdict))
        if judged.group in self._verdict_raised:
            return verdict
        try:
            replaced = hook(judged, verdict)
        except Exception:
            # Its test fails with the hook's traceback, and the group is kept as the ERROR
            # of a stopped tuning without asking the hook again: it raised again inside
            # that handling, a second traceback, and no record was kept.
            self._verdict_raised.add(judged.group)
            raise
        if replaced is not None and not isinstance(replaced, GroupVerdict):
            # Said by each test of the group, none tuning it again, nor the hook asked again
            # where the group is kept as an ERROR: it would return the same.
            self._verdict_raised.add(judged.group)
            said = self._stopped[judged.group] = (
                f"pytest_autotune_verdict returned {replaced!r}, not a GroupVerdict:"
                " return dataclasses.replace(verdict, ...) to change the gate's verdict,"
                " or None to keep it"
            )
            raise ConfigError(said)
        return replaced or verdict

    def _baseline(self, request: GroupRequest, case: GroupCase) -> FoundBaseline:
        return self.baselines.find(
            case.device_id,
            request.tuner_name,
            case.key,
            case.tunables.checksum,
            filed_before=request.filed_before,
        )

    def _device(self, client: Client, device_id: str) -> dict[str, Any]:
        """The device block a group's record carries (id, fingerprint, peaks), its
        fingerprint made once per device: other plugins add to it
        (`pytest_autotune_fingerprint`)."""
        self._fingerprint(client, device_id)
        # The peaks as they stand now: a winner above its roof has them probed again
        # (`gate_policy`), and the record's fraction of roof is of these.
        return {**self._devices[device_id], "peaks": client.peaks().to_json()}

    def _fingerprint(self, client: Client, device_id: str) -> None:
        """Make the device block of `device_id` once, its fingerprint with what other
        plugins add (`pytest_autotune_fingerprint`), each addition one a file can hold."""
        if device_id in self._devices:
            return
        given = client.fingerprint()
        # A client of a pytest_autotune_client hook's, said as its own, not the hook's.
        problem = (
            _unwritable(given)
            if isinstance(given, Mapping)
            else f"fingerprint() returned {given!r}, not a dict"
        )
        if problem is not None:
            raise ConfigError(f"device {device_id!r}: its client's {problem}")
        fingerprint = dict(given)
        if self.hooks.fingerprint is not None:
            returned = self.hooks.fingerprint(fingerprint)
            # pluggy's list of the implementations' non-None results; one that edits the
            # dict and returns it (`return fingerprint`, as such hooks are often written)
            # did what it is asked, and failed every test.
            others = [
                r
                for r in (returned if isinstance(returned, list) else [returned])
                if r is not None and r is not fingerprint
            ]
            if others:
                shown = others[0]
                raise ConfigError(
                    f"pytest_autotune_fingerprint returned {shown!r}: it adds to the"
                    " fingerprint it is given, in place, and returns None; what it returns"
                    " is not read"
                )
            problem = _unwritable(fingerprint)
            if problem is not None:
                raise ConfigError(f"pytest_autotune_fingerprint set {problem}")
        device = {"id": device_id, "fingerprint": fingerprint}
        if device_id != client.device_id:
            device["measured_on"] = client.device_id
        self._devices[device_id] = device

    @contextmanager
    def _device_held(self, device_id: str, uuid: object) -> Iterator[None]:
        """The machine-wide lock on timing this device, held for the block; waited for at
        most `DEVICE_WAIT_S`, a longer wait said in the summary."""
        lock = _device_lock(device_id, uuid)
        started = time.monotonic()
        self._waiting_for = f"another process's timing of {device_id} ({lock.lock_file})"
        try:
            lock.acquire(timeout=DEVICE_WAIT_S)
            self._waiting_for = None
        except KeyboardInterrupt:
            # "stopped early (interrupted): no group was tuned" did not say what the run had
            # hung on before the user pressed Ctrl-C.
            self.output.notes.append(f"interrupted while waiting for {self._waiting_for}")
            raise
        except Timeout:
            self._waiting_for = None
            self.output.notes.append(
                f"warning: timed {device_id} without its lock ({lock.lock_file}): another"
                f" process held it for {DEVICE_WAIT_S / 60:.0f} minutes, and both timings"
                " may have overlapped"
            )
            yield
            return
        waited = time.monotonic() - started
        if waited > NOTED_WAIT_S:
            self.output.notes.append(
                f"waited {format_duration(waited)} for another process's timing of"
                f" {device_id} ({lock.lock_file})"
            )
        try:
            yield
        finally:
            lock.release()

    # -- the end of the session

    def to_worker_output(self) -> dict[str, Any]:
        return self.output.to_worker_output()

    def merge_worker_output(self, output: Mapping[str, Any]) -> None:
        self.output.merge_worker_output(output)

    def note(self, line: str) -> None:
        """A line for the end of the summary."""
        self.output.notes.append(line)

    def note_test_failure(self, group: str, expected: bool) -> None:
        """A test of `group` failed, as its `xfail` mark expected or not. When its tests
        failed only as expected, the gate's failure of the group (every candidate failing)
        is the one expected too, and the run does not fail on it; the summary says so."""
        self.output.note_test_failure(group, expected)

    def finish(self, stopped: str | None = None) -> bool:
        """Write what the session produced, saying why it `stopped` early where it did;
        True when a group failed the gate (but for one whose tests failed only as their
        `xfail` marks expected) or an output could not be written."""
        self.output.stopped = stopped
        return self.output.finish()

    def summary_lines(self, stats: bool = False) -> list[str]:
        """The terminal summary; `stats` adds every candidate's statistics table."""
        return self.output.summary_lines(stats, candidates=self.hooks.progress is not None)


def _failures(
    decision: TuneDecision,
    verdict: GroupVerdict,
    selected: tuple[str, ...] | None = None,
    measured: str | None = None,
    overtaken: str | None = None,
    unexpected: tuple[str, ...] = (),
) -> tuple[dict[str, str], str | None]:
    """What fails for each candidate of a tuned group, by name: its own error, and for the
    winner the gate's failure; and the candidate whose test the gate's failure goes to,
    where it failed. The winner is the candidate the gate judged: `measured`, the
    baseline's winner where tuning here slipped onto another (`gate_policy.judge_group`),
    since the failure is that candidate's time, and the summary names it. Where the
    winner's item was not selected (`selected`: the selected candidates whose tests may
    still run, None where every one is), the gate's failure goes to the first selected
    candidate instead: the run fails
    on a failing test, not on the summary alone. A regression where tuning's pick overtook
    the baseline's winner (`overtaken`, which measured slower here) fails the baseline's
    winner: its slowdown lost the group its time, and the pick, unchanged, passed. Where
    that test is marked `xfail`, the failure goes to the first of `unexpected` (the group's
    tests that run and are not marked so): the mark says the candidate's output may be
    wrong, not that the group may get slower, and it turned a 2.5x slowdown of a winner
    whose output was right into an expected failure, the run passing."""
    failures = {
        result.name or "": f"candidate {result.name!r} {_failed_as(result)}"
        for result in decision.results.values()
        if isinstance(result, AutotuneError) and result.kind is not AutotuneErrorKind.SKIP
    }
    gate = _gate_failure(verdict)
    if gate is not None:
        judged = measured or decision.fastest_name
        name = judged
        regressed = verdict.verdict is Verdict.REGRESSION
        if regressed and overtaken not in (None, judged) and _chosen(overtaken, selected):
            gate += (
                f"\n(tuning here picks {decision.fastest_name}; {overtaken}, the baseline's"
                " winner, measured slower than it)"
            )
            name = str(overtaken)
        if not _chosen(name, selected):
            assert selected  # `_chosen` is True without a selection
            gate = f"{gate}\n(the winner {name!r} was not selected; its group's gate fails here)"
            name = selected[0]
        if unexpected and name not in unexpected:
            gate = (
                f"{gate}\n(the test of {name!r} is marked xfail, whose reason is its output's,"
                " not the group's speed: the group's gate fails here)"
            )
            name = unexpected[0]
        if (
            not decision.measured
            and not decision.unreached()
            and failures.keys() >= {r.name for r in decision.results.values()}
        ):
            # Every candidate failed, each test by its own error: the gate's "every candidate
            # failed: ..." repeated them all below the first one's.
            return failures, name
        failures[name] = f"{failures[name]}\n{gate}" if name in failures else gate
        return failures, name
    return failures, None


def _failed_as(error: AutotuneError) -> str:
    """How a candidate failed, after its name: what it raised when timed (its traceback
    kept) is said to be raised ("candidate 'boom' raised ValueError: ..."), as its check
    says it; a check's failure, a time limit and the like read as they are."""
    if error.trace and not error.message.startswith(RAISED):
        return f"{RAISED}{error.message}"
    return error.message


def _unexpected_tests(request: GroupRequest, selected: tuple[str, ...] | None) -> tuple[str, ...]:
    """The group's candidates whose tests run and are not marked `xfail`, in order."""
    return tuple(
        name
        for name, _ in request.candidates
        if _chosen(name, selected)
        and name not in request.expected_to_fail
        and name not in request.not_run
    )


def _chosen(name: str | None, selected: tuple[str, ...] | None) -> bool:
    """Whether the test of candidate `name` runs (`selected`: None where every one does)."""
    return not selected or name in selected


def _gate_failure(verdict: GroupVerdict) -> str | None:
    """The line a failed gate fails its test with; None where it did not fail."""
    if not verdict.failed:
        return None
    # "regression of ...", "no baseline for ...": a message that names its verdict is not
    # prefixed with it again ("regression: regression of").
    kind = verdict.verdict.value
    named = "" if verdict.message.startswith(kind) else f"{kind}: "
    return f"autotune gate: {named}{verdict.message}"


def _nothing_takes(decision: TuneDecision) -> bool:
    """Whether no candidate takes the decision's key: every one declined it, or the
    `groups=` plan tries none for it (every priority negative there). The plan's case
    failed the group's first test ("no measured candidate is left") and passed the others,
    where plain pytest skips them all (`check_groups`)."""
    return all(_declines(r) or _unplanned(r) for r in decision.results.values())


def _declined(decision: TuneDecision) -> dict[str, str]:
    """The candidates of a decision that declined its key, by name: why. The `groups=` plan
    declines a candidate it never tries for the key for it, as plain pytest does."""
    return {
        result.name or "": result.message
        for result in decision.results.values()
        if _declines(result) or _unplanned(result)
    }


def _unplanned(result: object) -> TypeGuard[AutotuneError]:
    """Whether a candidate's result says the `groups=` plan never tries it for the key."""
    return isinstance(result, AutotuneError) and result.message == UNPLANNED


def _declines(result: object) -> TypeGuard[AutotuneError]:
    """Whether a candidate's result is its own refusal of the key (`AutotuneSkip`), not a
    skip for having never run."""
    return (
        isinstance(result, AutotuneError)
        and result.kind is AutotuneErrorKind.SKIP
        and not result.message.startswith(NOT_REACHED)
    )


def _reference(reference: Any, request: GroupRequest) -> Callable[..., Any] | str | None:
    """The marker's `reference`: a function of the inputs, called through the body, or the
    name of a candidate, which the checks then name as plain pytest does."""
    if reference is None:
        return None
    if isinstance(reference, str):
        if reference not in dict(request.candidates):
            names = sorted(dict(request.candidates))
            raise ConfigError(f"reference={reference!r} names no candidate: {names}")
        return reference
    return functools.partial(request.run, reference)


def check_groups(
    candidates: Candidates, groups: Any, not_run: Collection[str], key: Any
) -> frozenset[str]:
    """Evaluate the marker's `groups=` on `key` as tuning does, for the plain run: a
    priority function that raises or returns no number for the key then fails the plain
    run every CI job makes, not only --autotune's. The candidates the plan never tries for
    the key, which decline it, as in tuning (`Tuner._check`)."""
    if not groups:
        return frozenset()
    items = [Tunable(name, _planned_only) for name, _ in candidates if name not in not_run]
    skipped = unplanned(tune_plan(key, _grouped(items, groups, not_run)), len(items))
    return frozenset(items[i].name for i in skipped)


def _raised_when_measured(decision: TuneDecision) -> dict[int, AutotuneError]:
    """The candidates of a decision that raised while the gate measured them, by index."""
    return {
        i: r
        for i, r in decision.results.items()
        if isinstance(r, AutotuneError) and r.message.startswith(MEASURED_FAILURES)
    }


def _declining(tunables: TunableSet, decision: TuneDecision) -> TunableSet:
    """`tunables` with each candidate that raised while measured declining every key, so
    that a plan's next batches are tried. The names, and so the checksum, stay."""
    raised = _raised_when_measured(decision)
    return replace(
        tunables,
        tunables=tuple(
            replace(t, fn=_skipped_here("raised when measured")) if i in raised else t
            for i, t in enumerate(tunables.tunables)
        ),
    )


def _with_failures(tuned: TuneDecision, before: TuneDecision) -> TuneDecision:
    """A decision of `_declining`'s set, its declining candidates given back the errors
    they raised (`before`'s)."""
    return replace(tuned, results={**tuned.results, **_raised_when_measured(before)})


def _skipped_here(reason: str) -> Callable[..., Any]:
    """The function of a candidate marked not to run here: it declines every key, with its
    mark's reason, and never calls the candidate (which may crash on this machine). Left
    out of the set instead, it changed the set's candidate list: the baseline of a machine
    that runs it read as of "another candidate list (removed ...)", and an update replaced
    that baseline as if the candidate had been deleted from the code."""

    def skipped(*inputs: Any) -> Any:
        raise AutotuneSkip(reason)

    return skipped


def _planned_only(*inputs: Any) -> None:
    """The function of a candidate that is only planned (`check_groups`), never called."""


def _grouped(items: list[Tunable], groups: Any, not_run: Collection[str]) -> list[Tunable]:
    """Apply the marker's `groups=[(TuneGroup, {candidate: priority}), ...]`."""
    by_name = {t.name: t for t in items}
    for entry in groups or ():
        group, members = entry
        if not isinstance(group, TuneGroup) or not isinstance(members, Mapping):
            raise ConfigError("groups= takes (TuneGroup, {candidate name: priority}) pairs")
        for name, priority in members.items():
            if name in not_run:
                continue
            if name not in by_name:
                raise ConfigError(f"groups= names no candidate {name!r}: {sorted(by_name)}")
            fn = priority if callable(priority) else _fixed_priority(priority)
            by_name[name] = by_name[name].group(group, fn)
    return [by_name[t.name] for t in items]


def _fixed_priority(priority: object) -> Callable[[Any], Any]:
    """A priority given as a number, as the number it is, as a priority function may
    return one: int() made -0.5 a 0 that no longer skips, and 1.5 share a batch with 1."""
    number = real_number(priority)
    return lambda key: number


DEVICE_WAIT_S = 1800.0
"""The longest a group waits for another process's timing of its device: a run waits out
another run's tuning, however long, but not a process that hung holding the lock (a
fresh process that never returned once held it for good). Past it the group is timed
anyway, and the summary says so."""

NOTED_WAIT_S = 10.0
"""A wait for the device lock longer than this is said in the summary."""


def _device_lock(device_id: str, uuid: object = None) -> FileLock:
    """Timing on one device is serialized across processes (pytest-xdist workers): two
    candidates timed at once on one GPU would each read the other's load as their own.
    A GPU's UUID names it where known, so workers on two GPUs of one model time at once."""
    name = device_id if not isinstance(uuid, str) else f"{device_id}-{uuid}"
    return shared_lock(f"pytest-autotune-{name}")


__all__ = ["AutotuneSession", "GroupRequest", "SessionHooks", "check_groups"]


_ROOM = (
    "a test timeout (pytest-timeout) must leave room for the tuning of a whole group, which"
    " runs inside the first of its tests"
)


def _unwritable(fingerprint: Mapping[Any, Any]) -> str | None:
    """Why a fingerprint cannot go into the cache files and records as JSON, or None."""
    for name, value in fingerprint.items():
        if not isinstance(name, str):
            return f"fingerprint[{name!r}]: a key of the fingerprint must be a str"
        try:
            json.dumps(value, sort_keys=True, allow_nan=False)
        except (TypeError, ValueError):
            return (
                f"fingerprint[{name!r}] = {value!r}, which a cache file cannot hold: give it"
                " as a str, int, float, bool or None, or a list or dict of them"
            )
    return None


def _stopped(group: str, name: str, error: BaseException, waiting: str | None = None) -> str:
    """What the other tests of a group say where its tuning was stopped in `name`'s test:
    each tuned it again from the start, and each was stopped the same way (a test timeout
    shorter than the group's tuning failed every candidate's test, one timeout each)."""
    why = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
    if isinstance(error, Exception):
        # Raised by the tuning itself, which refused its inputs, client or bounds before
        # any candidate ran (a candidate's own error is its failure, caught inside): no
        # timeout stopped it, and the hint about one misled.
        return f"the tuning of {group} failed in {name}'s test ({why}) and is not started again"
    where = f" while waiting for {waiting}" if waiting else ""
    return (
        f"the tuning of {group} was stopped in {name}'s test{where} ({why}) and is not started"
        f" again: {_ROOM}"
    )


def _crashed(request: GroupRequest, nodeid: str | None) -> str:
    """What a group's other tests say where a pytest-xdist worker crashed in `nodeid`, a
    test of the group, while it tuned the group. That test calls every candidate of the
    group: the crash is no sign of its own (one that calls os._exit, tuned in the test of
    the first, was blamed on the first). None for an `autotune` fixture's group, whose
    one test calls every candidate in plain pytest too (its row named a candidate as the
    test the worker crashed in)."""
    names = ", ".join(name for name, _ in request.candidates)
    if nodeid is None:
        return (
            f"the tuning of {request.group} ended with its pytest-xdist worker's crash: it"
            f" calls each of the set's candidates ({names}), and one of them ends its"
            " process (a segfault, os._exit, pytest-timeout's thread method)"
        )
    return (
        f"the tuning of {request.group} is not started again: a pytest-xdist worker crashed"
        f" in {nodeid} while that test tuned the group, which calls each of its candidates"
        f" ({names}): one of them ends its process (a segfault, os._exit, pytest-timeout's"
        " thread method), and tuning the group again would crash another worker; plain"
        " pytest (without --autotune) calls each candidate in its own test, and fails the one"
    )


def _note_stopped_here(error: BaseException, group: str, waiting: str | None) -> None:
    """The test whose tuning was stopped says what it was doing: pytest-timeout's message
    and a traceback through this package (or a lock's sleep) name neither the group nor
    why a test of a fast candidate ran out of time (Python 3.11 on, which keeps notes)."""
    add_note = getattr(error, "add_note", None)
    if add_note is not None:
        where = f"waiting for {waiting}" if waiting else "tuning it"
        add_note(f"under --autotune: this test tunes {group}, and was stopped {where}: {_ROOM}")
