"""pytest-xdist: each group tuned by one worker, each worker on a GPU of its own, and the
controller alone merging and writing.

Workers put their groups' records (one JSON object per group, `group_record`) and their
notes in `config.workeroutput` at the end of their session; the controller reads them in
`pytest_testnodedown`, as pytest-xdist's own plugins do, and reads each group's summary
and cache update from its record as a session without workers does.

Why the plugin schedules rather than leaving it to `--dist loadgroup` and the
`xdist_group` mark: that mark reaches the scheduler as an `@name` suffix the worker adds
to each node id, and three things stop it. The worker decides whether to add it from its
own command line, which has `-n 2` but not the `--dist loadgroup` an option set on the
controller; the suffix is parsed only when it comes after the id's last `]`, which a
group name such as `test_sum[4096]` defeats; and pytest 9 derives `nodeid` from a
structured id, so the worker's rewrite of `item._nodeid` no longer changes it. Each
candidate then went wherever the load took it, and one group was tuned twice, with two
verdicts. `AutotuneScheduling` instead keeps every parametrization of one test function
on one worker (a group is one function's parametrization without its candidate), and
still honours an `@name` suffix where pytest-xdist managed to add one.

GPUs: a worker's GPU is chosen before the worker starts, as `CUDA_VISIBLE_DEVICES` in the
environment pytest-xdist starts it with, so that device 0 of each worker is its own GPU
and arrays a test module makes at import land on it (once CUDA is initialised, a process
can no longer change which devices it sees).
"""

from __future__ import annotations

import functools
import os
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import pytest

from pytest_autotune.item_groups import xdist_group_name
from pytest_autotune.outputs import SessionOutput
from pytest_autotune.quiet import controller_run_folder, hand_back_path, note_crashed
from pytest_autotune.report.names import without_parameters
from pytest_autotune.session import AutotuneSession
from pytest_autotune.tune.wording import counted

WORKER_GPU = "autotune_gpu"
"""The `workerinput` key of the `CUDA_VISIBLE_DEVICES` the plugin gave a worker, absent where
it gave none: the worker's session then refuses a device index (`AutotuneSession`), which
would name another GPU in the worker than on the host."""

DIST = "loadgroup"
"""The `--dist` mode the plugin selects when `-n` is given without one (or with one that
hands out single tests), and schedules."""


def function_scope(nodeid: str) -> str:
    """The work unit of a node id: its `@name` suffix when pytest-xdist added one after the
    parameters (as it does for an `xdist_group` mark, where it can), else the test function
    without its parameters, so that all of a function's candidates stay on one worker.

    A suffix that holds the plugin's own group name (`item_groups.xdist_group_name`) is a
    tuned test's: its function is the unit. pytest-xdist joins every `xdist_group` name of a
    test into one suffix, so a candidate given a group of its own
    (`pytest.param(f, marks=pytest.mark.xdist_group("a"))`) had a suffix of its own, and
    under `--dist loadgroup` before pytest 9 one group was tuned on as many workers as
    its candidates had groups, with as many verdicts."""
    if nodeid.rfind("@") > nodeid.rfind("]"):
        base, suffix = nodeid.rsplit("@", 1)
        function = without_parameters(base)
        if xdist_group_name(function) not in suffix:
            return suffix
        return function
    return without_parameters(nodeid)


SCOPED = (DIST, "loadscope", "loadfile")
"""The `--dist` modes whose scheduling the plugin's replaces under tuning: its own
(`DIST`), and the two of pytest-xdist that keep a function's tests together themselves,
which keep their scopes and take the mends of a crashed worker (`remove_node`)."""


class _DoneUnitsLetGo:
    """pytest-xdist's scope scheduling, but a work unit whose tests have all run is let go:
    it keeps every unit a worker was given, and counts their pending tests over all of them
    at each step, which `AutotuneScheduling`'s one unit per test function made quadratic in
    a suite's plain tests (3000 of them cost the controller 2-3 s of CPU under `-n 2
    --autotune` on the 2-core VM, beside the workers)."""

    def mark_test_complete(self: Any, node: Any, item_index: int, duration: float = 0) -> None:
        nodeid = self.registered_collections[node][item_index]
        scope = self._split_scope(nodeid)
        work = self.assigned_work[node]
        unit = work.get(scope)
        # A unit let go holds no test left to report: none is expected here, but a second
        # report of one must not stop the run with an INTERNALERROR (KeyError).
        if unit is not None:
            unit[nodeid] = True
            if all(unit.values()):
                del work[scope]
        self._reschedule(node)


@functools.cache
def autotune_scheduling(dist: str = DIST) -> type:
    """pytest-xdist's scope scheduling with `function_scope` as the scope (`--dist
    loadscope` and `loadfile` keep theirs). Made on first use: pytest-xdist is an optional
    integration (the `[xdist]` extra), imported only once pytest-xdist itself asks for a
    scheduler, so this module imports without it."""
    from xdist.scheduler import (  # type: ignore[import-untyped]
        LoadFileScheduling,
        LoadScopeScheduling,
    )

    base = LoadFileScheduling if dist == "loadfile" else LoadScopeScheduling

    class AutotuneScheduling(_DoneUnitsLetGo, base):  # type: ignore[misc,valid-type]
        def _split_scope(self, nodeid: str) -> str:
            if dist != DIST:
                return base._split_scope(self, nodeid)  # type: ignore[no-any-return]
            return function_scope(nodeid)

        def remove_node(self, node: Any) -> str | None:
            """pytest-xdist's, but the test the worker crashed in is not queued again.
            Scope scheduling puts the crashed worker's whole work unit back, that test
            included: each replacement worker ran it again (a candidate that kills its
            process, tuned again, killed it again) until pytest-xdist's limit on restarts
            ended the run, reporting it once a crash and the group's other tests never.
            Plain `-n` (its load scheduling) reports it once, as this now does."""
            workload = self.assigned_work.get(node, {})
            crashed: str | None = next(
                (test for unit in workload.values() for test, done in unit.items() if not done),
                None,
            )
            if crashed is None:
                return super().remove_node(node)  # type: ignore[no-any-return]
            for unit in workload.values():
                if crashed in unit:
                    unit[crashed] = True
            # Said before the rest goes to other workers: the test tuned its group, and
            # the group's other tests would tune it again, each crashing another worker
            # (`AutotuneSession.candidate_outcome` reads it).
            folder = controller_run_folder(self.config)
            if folder is not None:
                note_crashed(folder, crashed)
            super().remove_node(node)  # queues the rest; None where nothing else is left
            return crashed

        def _reschedule(self, node: Any) -> None:
            """pytest-xdist's, then more work until the worker holds two tests, or told to
            stop once nothing is left: a worker runs its last test only when it has the
            next or is told to stop. The scope scheduling ensures that at the start, but a
            worker that replaced a crashed one (a candidate that killed its process) was
            given a single test this way and never ran it, and the run hung for good.
            Nothing for a worker already removed: two workers crashing at once had the
            scope scheduling reschedule one it had dropped, an INTERNALERROR (KeyError) in
            3 of 11 runs of `-n 2 --autotune` (plain `--dist loadscope` has the race too)."""
            if node not in self.assigned_work:
                return
            super()._reschedule(node)
            while not node.shutting_down and self._pending_of(self.assigned_work[node]) < 2:
                if not self.workqueue:
                    node.shutdown()
                    return
                self._assign_work_unit(node)

    return AutotuneScheduling


def worker_gpus(visible: str | None, count: int, workers: int) -> list[str | None]:
    """The `CUDA_VISIBLE_DEVICES` of each of `workers` workers: worker N gets the N-th GPU
    (modulo their number) of those the controller sees, `visible` when it is set (its
    entries as given: indices or UUIDs), else the `count` devices CUDA finds. None for
    every worker where there is at most one GPU: nothing to share out, and a worker then
    sees what the controller sees.

    Of `visible`, only the first `count` entries (where `count` is known, not 0): CUDA
    stops at the first entry that names no GPU, so "0,1,2,3" on a host of two shows the
    controller GPUs 0 and 1, and the workers given "2" and "3" found none (`auto` tuned
    their groups on the CPU, `cuda` failed them)."""
    if visible is None:
        devices = [str(i) for i in range(count)]
    else:
        devices = [d.strip() for d in visible.split(",") if d.strip()]
        devices = devices[:count] if count else devices
    if len(devices) < 2:
        return [None] * workers
    return [devices[i % len(devices)] for i in range(workers)]


INTERRUPTED_BY = pytest.StashKey[str]()
"""Why pytest-xdist interrupted the run (`XdistBridge.pytest_keyboard_interrupt`)."""


class XdistBridge:
    """The controller's side: the scheduler, each worker's GPU, and the workers' output."""

    def __init__(
        self,
        config: pytest.Config,
        session: AutotuneSession,
        gpu_count: Callable[[], int],
        environ: Mapping[str, str] = os.environ,
    ) -> None:
        self.config = config
        self.session = session
        self.gpu_count = gpu_count
        self.environ = environ
        self.given: dict[int, tuple[Any, str]] = {}
        """The `CUDA_VISIBLE_DEVICES` given to each worker's spec, by the spec's identity
        (kept with it): a worker that crashed is replaced on the same spec under a new id
        (gw2 for gw1), with the same environment, so the same GPU."""
        self.nodes: list[Any] = []
        """Every worker started, each until its output is read (`pytest_testnodedown`)."""
        self.read: set[int] = set()
        """The workers whose output was read, by identity: each is read once."""

    def pytest_keyboard_interrupt(self, excinfo: pytest.ExceptionInfo[BaseException]) -> None:
        # pytest-xdist ends a run under `-x` or `--maxfail` by raising its `Interrupted`
        # (a KeyboardInterrupt), pytest's reason its message ("stopping after 1
        # failures"): read as Ctrl-C, the outputs said "interrupted". Ctrl-C has none.
        reason = str(excinfo.value).strip()
        # A worker that met Ctrl-C before the controller did is told as its Interrupted's
        # "<WorkerController gw0> received keyboard-interrupt": a Ctrl-C all the same.
        if reason and not reason.endswith("received keyboard-interrupt"):
            self.config.stash[INTERRUPTED_BY] = reason

    @pytest.hookimpl(optionalhook=True, tryfirst=True)
    def pytest_xdist_make_scheduler(self, config: pytest.Config, log: Any) -> Any:
        # `--dist loadscope` and `loadfile` too: with pytest-xdist's own, a candidate that
        # ended its worker's process was run again by every replacement worker, until the
        # limit on restarts ended the run with the rest of the scope never run.
        dist = config.getoption("dist")
        if dist not in SCOPED or not self.session.settings.tune:
            return None
        return autotune_scheduling(dist)(config, log)

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_setupnodes(self, config: pytest.Config, specs: Sequence[Any]) -> None:
        if not self.session.settings.tune or not self.session.uses_default_gpu():
            return
        visible = self.environ.get("CUDA_VISIBLE_DEVICES")
        gpus = worker_gpus(visible, self.gpu_count(), len(specs))
        for spec, gpu in zip(specs, gpus, strict=True):
            # A worker whose --tx spec sets its devices (popen//env:CUDA_VISIBLE_DEVICES=2)
            # keeps what the user chose.
            chosen = "CUDA_VISIBLE_DEVICES" in spec.env
            if gpu is not None and getattr(spec, "popen", False) and not chosen:
                spec.env["CUDA_VISIBLE_DEVICES"] = gpu
                self.given[id(spec)] = (spec, gpu)

    @pytest.hookimpl(optionalhook=True)
    def pytest_configure_node(self, node: Any) -> None:
        self.nodes.append(node)
        given = self.given.get(id(node.gateway.spec))
        if given is not None:
            node.workerinput[WORKER_GPU] = given[1]

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node: Any, error: Any) -> None:
        if node in self.nodes:
            self.nodes.remove(node)
        output = getattr(node, "workeroutput", {}).get("autotune")
        if output is not None:
            self._merge(node, output)
        elif error is not None:
            # A worker hands its groups back at the end of its session: one that crashed
            # (a candidate that segfaults or exits) took them with it, and the summary, the
            # records and an update lacked every group it had tuned; they are read from
            # what it noted as it went.
            self._recover(node, "; fix the crash and run again", crashed=True)

    def shut_down_by(self) -> str | None:
        """Why pytest-xdist shut the run down before every test ran, where it did for a
        reason of its own: past its limit on crashed workers (`--max-worker-restart`), the
        tests left to the last crashed worker never run, and pytest's outcome is no
        interruption (its own summary line, "xdist: maximum crashed workers reached: 4",
        is not shown under -q). None otherwise."""
        dsession = self.config.pluginmanager.getplugin("dsession")
        reason = getattr(dsession, "_summary_report", None)
        return reason if isinstance(reason, str) and reason else None

    def hand_back_unread(self) -> None:
        """At the end of the session, the output of each worker that pytest-xdist tore
        down without reading it: on Ctrl-C or a cancelled job the controller stops
        reading its workers' events, and no `pytest_testnodedown` comes, so the groups
        the workers had tuned were neither shown nor written, where a run without
        workers writes them and says it stopped early. A worker interrupted too hands
        its output back as it ends (pytest-xdist keeps it on the node); one that
        handed back nothing is named."""
        for node in self.nodes:
            output = getattr(node, "workeroutput", {}).get("autotune")
            if output is not None:
                self._merge(node, output)
                continue
            self._recover(node, "", crashed=False)
        self.nodes.clear()

    def _recover(self, node: Any, advice: str, crashed: bool) -> None:
        """The groups of a worker that ended without handing its output back (it crashed,
        or was torn down unread), from its hand-back file (`quiet.hand_back`), and a
        warning naming the worker. Where it `crashed` in a group's tuning, that group is an
        ERROR row (`SessionOutput.handed_back_output`)."""
        if id(node) in self.read:
            return
        worker = getattr(node, "workerinput", {}).get("workerid") or getattr(
            getattr(node, "gateway", None), "id", None
        )
        folder = controller_run_folder(self.config)
        output = None
        if worker is not None and folder is not None:
            output = SessionOutput.handed_back_output(hand_back_path(folder, worker), crashed)
        if output is None:
            self.session.note(
                f"warning: pytest-xdist worker {worker or 'a worker'} stopped before handing"
                " back what it tuned: its groups are missing from this summary, the"
                f" records, the report and any --autotune-update{advice}"
            )
            return
        self._merge(node, output)
        finished = output["finished"]
        kept = (
            f"the {counted(finished, 'group')} it had finished"
            f" {'is' if finished == 1 else 'are'} read from what it noted"
            " as it went (its notes are lost)"
            if finished
            else "it had finished no group"
        )
        self.session.note(
            f"warning: pytest-xdist worker {worker} stopped before handing back what it"
            f" tuned: {kept}{advice}"
        )

    def _merge(self, node: Any, output: Any) -> None:
        """A worker's output, merged once: pytest-xdist tells a worker whose session ended
        on KeyboardInterrupt down twice (finished, then errored), and its groups were
        listed, recorded and counted twice."""
        if id(node) not in self.read:
            self.read.add(id(node))
            self.session.merge_worker_output(output)
