"""Which work unit a node id belongs to, and which GPU each pytest-xdist worker gets."""

from __future__ import annotations

from collections import OrderedDict
from types import SimpleNamespace
from typing import Any

import pytest

pytest.importorskip("xdist")

from pytest_autotune.item_groups import xdist_group_name
from pytest_autotune.xdist import (
    INTERRUPTED_BY,
    WORKER_GPU,
    XdistBridge,
    autotune_scheduling,
    function_scope,
    worker_gpus,
)


def test_all_parametrizations_of_a_test_function_share_one_work_unit() -> None:
    assert function_scope("t.py::test_sum[fast-4096]") == "t.py::test_sum"
    assert function_scope("t.py::test_sum[slow-1024]") == "t.py::test_sum"
    assert function_scope("t.py::Cls::test_x") == "t.py::Cls::test_x"


def test_an_xdist_group_suffix_after_the_parameters_names_the_work_unit() -> None:
    assert function_scope("t.py::test_io[1]@db") == "db"
    assert function_scope("t.py::test_mail[a@b]") == "t.py::test_mail"


def test_a_tuned_test_stays_with_its_function_whatever_groups_its_candidates_name() -> None:
    # pytest-xdist before pytest 9, under --dist loadgroup, joins every xdist_group name of
    # a test into its suffix: the plugin's own and one a candidate's pytest.param gives.
    name = xdist_group_name("t.py::test_sum[4096]")
    ids = [
        f"t.py::test_sum[fast-4096]@{name}",
        f"t.py::test_sum[slow-4096]@a_{name}",
        f"t.py::test_sum[dot-4096]@{name}_b",
    ]
    assert {function_scope(nodeid) for nodeid in ids} == {"t.py::test_sum"}


def test_a_group_name_never_ends_in_a_bracket_or_holds_an_at_sign() -> None:
    name = xdist_group_name("t.py::test_x[user@host-4096]")
    assert "]" not in name and "@" not in name


def test_workers_take_the_gpus_in_turn() -> None:
    assert worker_gpus(None, 2, 4) == ["0", "1", "0", "1"]
    assert worker_gpus("3,GPU-abc", 0, 3) == ["3", "GPU-abc", "3"]


def test_workers_take_only_the_gpus_of_cuda_visible_devices_that_cuda_sees() -> None:
    # CUDA stops at the first entry that names no GPU: "0,1,2,3" on a host of two GPUs
    # shows two, and the workers given "2" and "3" saw none (`auto` tuned on the CPU).
    assert worker_gpus("0,1,2,3", 2, 4) == ["0", "1", "0", "1"]
    assert worker_gpus("GPU-a,GPU-gone,GPU-b", 1, 2) == [None, None]
    session: Any = SimpleNamespace(
        settings=SimpleNamespace(tune=True), uses_default_gpu=lambda: True
    )
    config: Any = SimpleNamespace()
    environ = {"CUDA_VISIBLE_DEVICES": "0,1,2,3"}
    bridge = XdistBridge(config, session, gpu_count=lambda: 2, environ=environ)
    specs = [SimpleNamespace(id=f"gw{i}", popen=True, env={}) for i in range(4)]
    bridge.pytest_xdist_setupnodes(config, specs)
    assert [spec.env["CUDA_VISIBLE_DEVICES"] for spec in specs] == ["0", "1", "0", "1"]


def test_with_one_gpu_or_none_workers_keep_what_the_controller_sees() -> None:
    assert worker_gpus(None, 1, 2) == [None, None]
    assert worker_gpus(None, 0, 2) == [None, None]
    assert worker_gpus("1", 4, 2) == [None, None]


def test_a_worker_whose_tx_spec_sets_its_devices_keeps_them() -> None:
    # `--tx 2*popen//env:CUDA_VISIBLE_DEVICES=2`: both workers on the GPU the user chose.
    session: Any = SimpleNamespace(
        settings=SimpleNamespace(tune=True), uses_default_gpu=lambda: True
    )
    config: Any = SimpleNamespace()
    bridge = XdistBridge(config, session, gpu_count=lambda: 4, environ={})
    specs = [
        SimpleNamespace(id="gw0", popen=True, env={"CUDA_VISIBLE_DEVICES": "2"}),
        SimpleNamespace(id="gw1", popen=True, env={}),
    ]
    bridge.pytest_xdist_setupnodes(config, specs)
    assert [spec.env for spec in specs] == [
        {"CUDA_VISIBLE_DEVICES": "2"},
        {"CUDA_VISIBLE_DEVICES": "1"},
    ]
    # Only the GPU the plugin gave reaches the worker as its own.
    inputs = []
    for spec in specs:
        node = SimpleNamespace(gateway=SimpleNamespace(id=spec.id, spec=spec), workerinput={})
        bridge.pytest_configure_node(node)
        inputs.append(node.workerinput)
    assert inputs == [{}, {WORKER_GPU: "1"}]
    # A worker that crashed is replaced on the same spec under a new id (xdist's
    # `_clone_node`): the new worker has the same GPU, and must know it is its own.
    specs[1].id = "gw2"
    node = SimpleNamespace(gateway=SimpleNamespace(id="gw2", spec=specs[1]), workerinput={})
    bridge.pytest_configure_node(node)
    assert node.workerinput == {WORKER_GPU: "1"}


class Worker:
    """A pytest-xdist worker as the scheduler sees it (hashable, as its own are)."""

    shutting_down = False

    def __init__(self) -> None:
        self.sent: list[int] = []

    def shutdown(self) -> None:
        self.shutting_down = True

    def send_runtest_some(self, indices: list[int]) -> None:
        self.sent.extend(indices)


def test_a_worker_already_removed_is_not_rescheduled() -> None:
    # Two workers crashing at once: the scope scheduling rescheduled one it had dropped
    # from its work, and `assigned_work[node]` ended the run in an INTERNALERROR.
    scheduling = autotune_scheduling().__new__(autotune_scheduling())
    scheduling.assigned_work = {}
    scheduling.log = lambda *args: None
    scheduling.workqueue = {"test_a.py::test_a": {"test_a.py::test_a[x]": False}}
    gone = Worker()
    scheduling._reschedule(gone)  # no KeyError
    assert scheduling.workqueue == {"test_a.py::test_a": {"test_a.py::test_a[x]": False}}


def test_a_worker_keeps_only_the_work_units_it_has_tests_of_left_to_run() -> None:
    # The scope scheduling kept every unit given and counted their pending tests at each
    # step: with a unit per test function, quadratic in a suite's plain tests (3000 of
    # them cost the controller 2-3 s of CPU under `-n 2 --autotune`).
    scheduling = autotune_scheduling().__new__(autotune_scheduling())
    scheduling.log = lambda *args: None
    collection = [f"test_a.py::test_{i}" for i in range(6)]
    worker = Worker()
    scheduling.registered_collections = {worker: collection}
    scheduling.workqueue = OrderedDict((nodeid, {nodeid: False}) for nodeid in collection)
    # pytest-xdist's own types: before 3.6 it calls `setdefault(node, default=...)`, which
    # only an OrderedDict takes.
    scheduling.assigned_work = OrderedDict({worker: OrderedDict()})
    scheduling._reschedule(worker)
    ran = 0
    while ran < len(worker.sent):
        scheduling.mark_test_complete(worker, worker.sent[ran])
        ran += 1
        assert all(False in unit.values() for unit in scheduling.assigned_work[worker].values())
    assert (ran, worker.shutting_down, scheduling.assigned_work) == (6, True, {worker: {}})


def test_a_ctrl_c_a_worker_met_first_reads_as_interrupted_and_a_stop_as_its_reason() -> None:
    # pytest-xdist raises its Interrupted (a KeyboardInterrupt) both for `-x` ("stopping
    # after 1 failures") and for a worker that met Ctrl-C before the controller did, whose
    # message ("<WorkerController gw0> received keyboard-interrupt") the summary showed as
    # the reason the run stopped.
    for message, reason in (
        ("<WorkerController gw0> received keyboard-interrupt", None),
        ("stopping after 1 failures", "stopping after 1 failures"),
        ("", None),
    ):
        config: Any = SimpleNamespace(stash=pytest.Stash())
        bridge = XdistBridge(config, SimpleNamespace(), gpu_count=lambda: 0, environ={})
        bridge.pytest_keyboard_interrupt(SimpleNamespace(value=KeyboardInterrupt(message)))  # type: ignore[arg-type]
        assert config.stash.get(INTERRUPTED_BY, None) == reason
