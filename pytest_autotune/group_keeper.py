"""What a session keeps of each group: its record, once, with the verdict an update settles
and the `pytest_autotune_verdict` hook may replace; and the ERROR record of a group that
measured nothing (its device could not be used, its tuning stopped), so that the summary,
the report and the records name every group asked for.

Each record goes to the session's output (`outputs.SessionOutput.add`); `selected` is the
group's selected candidates (`AutotuneSession.selected`), which its record names.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from pytest_autotune.baselines import Baselines, baseline_extra
from pytest_autotune.devices import Devices
from pytest_autotune.gate import BaselineSession, GroupVerdict, Verdict
from pytest_autotune.gate_policy import FoundBaseline, Judged, judge_group
from pytest_autotune.group_case import GroupCase
from pytest_autotune.group_record import call_costs, group_record, group_summary, instrument
from pytest_autotune.group_request import GroupRequest
from pytest_autotune.outputs import SessionOutput, progress_lines
from pytest_autotune.plugin_settings import PluginSettings
from pytest_autotune.report import GroupSummary
from pytest_autotune.tune.bounds import Work
from pytest_autotune.tune.config import ConfigError
from pytest_autotune.tune.decision import TuneDecision
from pytest_autotune.tune.errors import AutotuneError, AutotuneErrorKind
from pytest_autotune.tune.log import AutotuneLogContext
from pytest_autotune.tune.records import AutotuneRecord
from pytest_autotune.tune.tunable_set import TunableSet
from pytest_autotune.update_policy import settle_update

if TYPE_CHECKING:
    from pytest_autotune.tune.client import Client


class GroupKeeper:
    """The records of one session's groups, each kept once."""

    def __init__(
        self,
        output: SessionOutput,
        baselines: Baselines,
        devices: Devices,
        stopped: dict[str, str],
        verdict_hook: Callable[[GroupSummary, GroupVerdict], GroupVerdict | None] | None = None,
        progress: Callable[[str], None] | None = None,
    ) -> None:
        self.output = output
        self.baselines = baselines
        self.devices = devices
        self._stopped_tunings = stopped
        """The session's groups whose tuning is not started again, with why
        (`AutotuneSession.candidate_outcome`): a verdict hook's return that is no
        GroupVerdict stops its group."""
        self._verdict_hook = verdict_hook
        """`pytest_autotune_verdict` (`SessionHooks.verdict`)."""
        self._progress = progress
        """`SessionHooks.progress`: under -v, each candidate's line of a kept group."""
        self._verdict_raised: set[str] = set()
        """The groups whose `pytest_autotune_verdict` hook raised, not asked again."""
        self.kept: set[str] = set()
        """The groups kept (`_add`), so that one that measured nothing (its device could
        not be used, its tuning was stopped) is kept once: a `ConfigError` (a device no
        client serves) is met again by each test of the group."""

    def baseline(self, request: GroupRequest, case: GroupCase) -> FoundBaseline:
        """The committed baseline of a group, as `Baselines.find` reads it."""
        return self.baselines.find(
            case.device_id,
            request.tuner_name,
            case.key,
            case.tunables.checksum,
            filed_before=request.filed_before,
        )

    def judge(
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
            find_baseline=lambda: self.baseline(request, case),
            baseline_devices=lambda: self.baselines.devices_with(request.tuner_name),
            notes=notes,
            # A GPU's uuid; else the device measured on, which under a runner class names
            # the CPU model that a baseline's `measured_on` is compared with.
            machine=machine if isinstance(machine, str) and machine else client.device_id,
            unreadable_file=lambda: self.baselines.unreadable(case.device_id, request.tuner_name),
            missing_file=lambda: self.baselines.missing(case.device_id, request.tuner_name),
        )
        return judged, notes

    def keep(
        self,
        request: GroupRequest,
        case: GroupCase,
        judged: Judged,
        client: Client,
        work: Work | None,
        selected: tuple[str, ...] | None,
    ) -> GroupVerdict:
        """Keep a judged group as its record, with the verdict an update settles and the
        verdict hook may replace; that verdict."""
        verdict = judged.verdict
        kept: tuple[BaselineSession, ...] = ()
        recorded = True
        if verdict.verdict is Verdict.UPDATED:
            unreadable = self.baselines.unreadable(case.device_id, request.tuner_name)
            found, unusable = self.baseline(request, case)
            # The entry's own fault, as `Baselines.find` warned of it (the file's path and
            # the key are on the update's line already).
            why = unusable.removeprefix("warning: ") if unusable else None
            settled = settle_update(case, verdict, found, unreadable, why)
            verdict, kept, recorded = settled.verdict, settled.history, settled.recorded
        device = self.devices.device(client, case.device_id)
        baseline = baseline_extra(self.baseline(request, case)[0])

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
                **_of_request(request, selected),
            )

        verdict, summary = self._add(verdict, record)
        if self._progress is not None:
            for line in progress_lines(summary):
                self._progress(line)
        return verdict

    def keep_unusable(
        self,
        request: GroupRequest,
        tunables: TunableSet,
        settings: PluginSettings,
        error: Exception,
        selected: tuple[str, ...] | None,
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
        self.keep_unmeasured(request, tunables, settings, why, device, selected)

    def keep_unmeasured(
        self,
        request: GroupRequest,
        tunables: TunableSet,
        settings: PluginSettings,
        why: str,
        device: str,
        selected: tuple[str, ...] | None,
    ) -> None:
        """Keep a group that measured nothing as an ERROR record on `device`, once: each of
        its candidates failed by `why`."""
        if request.group in self.kept:
            return
        self.kept.add(request.group)
        record = unmeasured(request, tunables, settings, why, device, selected)
        self._add(GroupVerdict(Verdict.ERROR, why, None, None, failed=True), record)

    def _add(
        self, verdict: GroupVerdict, record: Callable[[GroupVerdict], AutotuneRecord]
    ) -> tuple[GroupVerdict, GroupSummary]:
        """Keep a group's record, with the verdict the verdict hook may replace; that
        verdict, and the group's summary."""
        if self._verdict_hook is not None:
            verdict = self._hook_verdict(self._verdict_hook, verdict, record)
        summary = self.output.add(record(verdict))
        self.kept.add(summary.group)  # kept: a tuning stopped after it adds no other
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
            said = self._stopped_tunings[judged.group] = (
                f"pytest_autotune_verdict returned {replaced!r}, not a GroupVerdict:"
                " return dataclasses.replace(verdict, ...) to change the gate's verdict,"
                " or None to keep it"
            )
            raise ConfigError(said)
        return replaced or verdict


def unmeasured(
    request: GroupRequest,
    tunables: TunableSet,
    settings: PluginSettings,
    why: str,
    device: str,
    selected: tuple[str, ...] | None,
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
            **_of_request(request, selected),
        )

    return record


def _of_request(request: GroupRequest, selected: tuple[str, ...] | None) -> dict[str, Any]:
    """What a group's record says of the request that tuned it, measured or not."""
    return {
        "tuner": request.tuner_name,
        "test_ids": request.test_ids,
        "expected_to_fail": request.expected_to_fail,
        "selected": selected,
        "key_known": request.key_known,
    }


__all__ = ["GroupKeeper", "unmeasured"]
