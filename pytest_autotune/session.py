"""One pytest session of autotuning, without pytest: tuning and judging each group, over
its settings (`plugin_settings`), its request (`group_request`), the devices it is timed
on (`devices`), the gate's policy (`gate_policy`), the baselines (`baselines`), each
group's record (`group_record`, kept by `group_keeper`), what each candidate's test ends
with (`candidate_outcomes`) and what the session writes (`outputs`); check mode is
`check_mode`.

`plugin.py` feeds it pytest's items and fixture values and the hooks of other plugins;
everything it decides is plain Python, read (and tested) without pytest.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from pytest_autotune.backends.cpu import settle_allocator
from pytest_autotune.baselines import Baselines
from pytest_autotune.candidate_outcomes import (
    crashed_tuning,
    declined_in,
    gate_failure_line,
    group_failures,
    note_stopped_here,
    nothing_takes,
    stopped_tuning,
    unexpected_tests,
)
from pytest_autotune.devices import Devices
from pytest_autotune.gate import GroupVerdict, Verdict, device_kind
from pytest_autotune.gate.baseline import fingerprint_thread_env
from pytest_autotune.gate_policy import Judged
from pytest_autotune.group_case import GroupCase
from pytest_autotune.group_keeper import GroupKeeper, unmeasured
from pytest_autotune.group_request import (
    EntryOwners,
    GroupRequest,
    call_order,
    declining,
    tunable_set_of,
    tuner_of,
    with_failures,
)
from pytest_autotune.outputs import SessionOutput
from pytest_autotune.plugin_settings import PluginSettings
from pytest_autotune.quiet import Quiet, crashed_tests, tuning_noted, tuning_test
from pytest_autotune.report import GroupSummary
from pytest_autotune.tune.bounds import Work
from pytest_autotune.tune.client_calls import ClientError, client_fingerprint
from pytest_autotune.tune.config import ConfigError
from pytest_autotune.tune.decision import TuneDecision
from pytest_autotune.tune.errors import AutotuneError
from pytest_autotune.tune.key import autotune_level_scope
from pytest_autotune.tune.records import AutotuneRecord
from pytest_autotune.tune.tunable_set import TunableSet
from pytest_autotune.tune.tuner import Tuner

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
class _Outcome:
    tunables: TunableSet
    decision: TuneDecision
    failures: dict[str, str]
    gate: str | None = None
    """The gate's failure alone, where it failed (also in `failures`, on the candidate it
    judged): a fixture call goes on past it (`fixture_modes.tune_set`)."""
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
        self.hooks = hooks or SessionHooks()
        notes: list[str] = []
        self.output = SessionOutput(settings, notes)
        """What travels to the controller and gets written at the end."""
        self.baselines = Baselines(settings, notes)
        self.devices = Devices(
            settings, notes, worker_gpu, self.hooks.client, self.hooks.fingerprint
        )
        """Each device's client and fingerprint, and the lock on timing it."""
        self._outcomes: dict[str, _Outcome] = {}
        self._entry_owners = EntryOwners()
        self._stopped: dict[str, str] = {}
        """Why each group whose tuning an exception of no candidate's stopped (pytest-timeout's
        alarm, an internal error) is not tuned again by its other tests."""
        self.keeper = GroupKeeper(
            self.output,
            self.baselines,
            self.devices,
            self._stopped,
            self.hooks.verdict,
            self.hooks.progress,
        )
        """Each group's record, kept once."""
        self._group_settings: dict[str, PluginSettings] = {}
        self.quiet: Quiet | None = None
        """Under pytest-xdist, the locks that pause the other workers' tests while this
        worker tunes and measures a group (`pytest_autotune.quiet`); None elsewhere."""
        self.selected: dict[str, tuple[str, ...]] = {}
        """The candidates of each marked group whose items were selected (after `-k`,
        `-m`, node ids), in collection order: a group is tuned whole, and the gate's
        failure of a winner whose own item was not selected is reported on the first that
        was (`candidate_outcomes.group_failures`)."""

    def level_scope(self, options: Mapping[str, Any]) -> AbstractContextManager[None]:
        """Where a group's key is made and its test runs: `anchor` there uses the group's
        level (its marker's `level=`, else the session's), and the process's outside."""
        return autotune_level_scope(self.settings.for_marker(options).engine.level)

    def settings_of(self, request: GroupRequest) -> PluginSettings:
        """The settings of a group: the session's under its marker's, the device `auto`
        made the CPU for a group of host arrays on a machine with a GPU
        (`Devices.group_device`)."""
        if request.group not in self._group_settings:
            settings = self.settings.for_marker(request.options)
            device = self.devices.group_device(settings.device, request.group, request.inputs)
            if device != settings.device:
                settings = self.settings.for_marker({**request.options, "device": device})
            self._group_settings[request.group] = settings
        return self._group_settings[request.group]

    # -- clients

    def client(self, device: str | None) -> Client:
        """The client of a device name (the session's device where None), made once."""
        return self.devices.client(device)

    def uses_default_gpu(self) -> bool:
        """Whether groups run on the GPU the session picks (`auto` or `cuda`), rather than
        on one the settings name or on the CPU."""
        return self.settings.device in ("auto", "cuda")

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
                stopped = self._stopped[request.group] = crashed_tuning(request, tuning)
                return stopped
        if outcome is None:
            folder = self.quiet.folder if self.quiet else None
            nodeid = request.test_ids.get(name, name)
            if self.output.hand_back is not None:
                # The group's row should this worker crash in its tuning: the worker's
                # output never comes, and the group was in no summary, report or record.
                why = crashed_tuning(request, request.test_ids.get(name))
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
                waiting, self.devices.waiting_for = self.devices.waiting_for, None
                # A client's method that failed (`ClientError`) is a setting too, but met
                # during the tuning (its peaks), whose group was then in no summary, report
                # nor record, and tuned again, to the same end, by each of its tests: kept
                # as an ERROR that says the client's line.
                client_failed = isinstance(exc, ClientError)
                if client_failed or not isinstance(
                    exc, (KeyboardInterrupt, SystemExit, ConfigError)
                ):
                    # A fixture's group has no test of each candidate (`test_ids`).
                    test = name if name in request.test_ids else None
                    self._stopped[request.group] = stopped_tuning(request.group, test, exc, waiting)
                    self.keep_untuned(
                        request, str(exc) if client_failed else self._stopped[request.group]
                    )
                    if not isinstance(exc, Exception):
                        # pytest's outcomes (pytest-timeout's alarm is its `fail`) are no
                        # `Exception`; an error of ours or a client's is its own message.
                        note_stopped_here(exc, request.group, waiting)
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
        return None if outcome is None else declined_in(outcome.decision).get(name)

    def _collision(self, request: GroupRequest) -> str | None:
        """Where the request's group shares its cache entry with another group, why its
        tests fail (`EntryOwners.collision`); None for a group tuned already."""
        if request.group in self._outcomes:
            return None
        return self._entry_owners.collision(request)

    def winners(self, request: GroupRequest) -> list[tuple[str, Callable[..., Any]]]:
        """The candidates of a tuned group in the order a call runs them on the caller's
        own inputs (`fixture_modes._run_winner`), each where those before it declined them: the
        winner, then the candidates its plan tries for the key, batch by batch, the
        measured of a batch by their score. `LocalTuner.execute` tunes a key again where
        its winner declines the inputs of a call, and a call repeating an earlier one's
        key (a size that anchors to it) raised the winner's `AutotuneSkip` instead."""
        outcome = self._outcomes[request.group]
        tunables = outcome.tunables
        order = call_order(request.key, outcome.decision, tunables)
        return [(tunables.names[i], tunables.fns[i]) for i in order]

    def _tune(self, request: GroupRequest) -> _Outcome:
        settings = self.settings_of(request)
        work: Work | None = request.options.get("work")
        tunables = tunable_set_of(request, work)
        client, device_id = self._usable_client(request, tunables, settings)
        tuner = tuner_of(request, device_id, settings)
        progress = self.hooks.progress
        if progress is not None:
            progress(f"autotune: tuning {request.group} on {device_id}")
        self.devices.note_profiler()
        fingerprint = client_fingerprint(client)
        machine = fingerprint.get("uuid")
        on_gpu = device_kind(client.device_id) == "gpu"
        quiet = self.quiet.measuring(gpu=on_gpu) if self.quiet else nullcontext(None)
        with (
            self.devices.held(client.device_id, machine),
            quiet as unpaused,
            autotune_level_scope(settings.engine.level),
        ):
            if not on_gpu:
                # malloc's thresholds where the gate's measurer puts them (`settle_allocator`),
                # so that tuning ranks a kernel of large temporaries as the gate times it.
                settle_allocator()
            decision = tuner.tune(request.key, tunables, request.inputs, client)
            if not decision.measured and nothing_takes(decision):
                # Nothing takes the key: skipped, as plain pytest skips each test, with
                # nothing to judge nor record (a failure the key is not).
                return _Outcome(tunables, decision, {})
            case = GroupCase(
                request.group,
                request.key,
                request.inputs,
                tunables,
                decision,
                device_id,
                settings,
                thread_env=fingerprint_thread_env(fingerprint),
            )
            case, judged, notes = self._judged(request, case, tuner, client, work, machine)
            decision = case.decision
            # A file's warning (a bad `sigma_between`) comes with each of its groups: said once.
            said = set(self.output.notes)
            self.output.notes.extend(
                n for n in notes if not (n.startswith("warning: ") and n in said)
            )
        if unpaused is not None:
            self.output.notes.append(
                f"{request.group}: measured while other pytest-xdist workers ran tests ({unpaused})"
            )
        verdict = self.keeper.keep(
            request, case, judged, client, work, self.selected.get(request.group)
        )
        selected = self._selected(request)
        failures, gate_test = group_failures(
            decision,
            verdict,
            selected,
            judged.measured,
            judged.overtaken,
            unexpected_tests(request, selected),
        )
        return _Outcome(tunables, decision, failures, gate_failure_line(verdict), gate_test)

    def _usable_client(
        self, request: GroupRequest, tunables: TunableSet, settings: PluginSettings
    ) -> tuple[Client, str]:
        """The client a group is tuned on, and the id its baselines are filed under; a
        group whose device cannot be used is kept as an ERROR before the error is raised."""
        try:
            client = self.client(settings.device)
        except Exception as error:
            # Its tests fail with the error; the group is kept as an ERROR too, as one
            # whose every candidate failed is, or the summary, the report and the records
            # left it out as if it had never been asked for.
            self.keeper.keep_unusable(
                request, tunables, settings, error, self.selected.get(request.group)
            )
            raise
        device_id = self.devices.device_id(client)
        try:
            # Made before the tuning: a fingerprint hook's addition that no file can hold
            # failed the run's end, after every group was tuned, and wrote nothing.
            self.devices.fingerprint(client, device_id)
        except ConfigError as error:
            # Kept as an ERROR, as above (what a hook raises stops the tuning, which
            # keeps it so); not "device cannot be used", the device being fine.
            self.keeper.keep_unmeasured(
                request,
                tunables,
                settings,
                str(error),
                device_id,
                self.selected.get(request.group),
            )
            raise
        return client, device_id

    def _judged(
        self,
        request: GroupRequest,
        case: GroupCase,
        tuner: Tuner,
        client: Client,
        work: Work | None,
        machine: object,
    ) -> tuple[GroupCase, Judged, list[str]]:
        """The gate's judgement of a tuned group (`GroupKeeper.judge`), given again without
        each winner that raised while measured; the case it judged last, and that
        judgement's notes."""
        judged, notes = self.keeper.judge(request, case, client, work, machine)
        decision = case.decision
        while judged.winner_failed is not None:
            # A candidate that raises fails its own test, and the others are judged:
            # the group, left with no verdict, got no baseline either. The notes of a
            # judgement given up ("the gate compared fast") are not the group's.
            decision = decision.without_winner(judged.winner_failed)
            if not decision.measured and decision.unreached():
                # A `groups=` plan stopped at the batch of the one that raised: its
                # next batches are tuned, the candidates that raised declining.
                decision = with_failures(
                    tuner.tune(
                        request.key, declining(case.tunables, decision), request.inputs, client
                    ),
                    decision,
                )
            case = replace(case, decision=decision)
            judged, notes = self.keeper.judge(request, case, client, work, machine)
        return case, judged, notes

    def _selected(self, request: GroupRequest) -> tuple[str, ...] | None:
        """The group's selected candidates whose tests may still run: a test a fixture
        skipped at its setup before the group was tuned (`request.not_run`) has ended, and
        a gate failure given to it was shown on no test, the run failing all the same."""
        selected = self.selected.get(request.group)
        if selected is None:
            return None
        # The running test is one of them: what is left is never empty
        # (`candidate_outcomes._chosen`).
        return tuple(name for name in selected if name not in request.not_run)

    def keep_untuned(self, request: GroupRequest, why: str) -> None:
        """Keep a group that could not be tuned (its tuning stopped by an exception of no
        candidate's: its inputs or bounds refused, a test timeout's alarm; or its marker's
        `key=` or `work=` failed) as an ERROR record, as one whose device could not be used
        is, or the summary, the report and the records left it out. Best effort: what
        cannot be rebuilt of the group (the error was in its own settings or candidates)
        keeps no record, and the test's own error stands."""
        try:
            settings = self.settings_of(request)
            tunables = tunable_set_of(request, request.options.get("work"))
        except Exception:
            return
        device = self.devices.untuned_id(settings)
        selected = self.selected.get(request.group)
        self.keeper.keep_unmeasured(request, tunables, settings, why, device, selected)

    def _untuned_record(self, request: GroupRequest, why: str) -> AutotuneRecord | None:
        """The ERROR record `keep_untuned` would keep, kept nowhere; None where the group
        cannot be rebuilt."""
        try:
            settings = self.settings_of(request)
            tunables = tunable_set_of(request, request.options.get("work"))
        except Exception:
            return None
        device = self.devices.untuned_id(settings)
        record = unmeasured(
            request, tunables, settings, why, device, self.selected.get(request.group)
        )
        return record(GroupVerdict(Verdict.ERROR, why, None, None, failed=True))

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


__all__ = ["AutotuneSession", "GroupRequest", "SessionHooks"]
