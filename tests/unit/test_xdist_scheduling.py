"""Which work unit a node id belongs to, and which GPU each pytest-xdist worker gets."""

from __future__ import annotations

import pytest

pytest.importorskip("xdist")

from pytest_autotune.plugin import xdist_group_name
from pytest_autotune.xdist import function_scope, worker_gpus


def test_all_parametrizations_of_a_test_function_share_one_work_unit() -> None:
    assert function_scope("t.py::test_sum[fast-4096]") == "t.py::test_sum"
    assert function_scope("t.py::test_sum[slow-1024]") == "t.py::test_sum"
    assert function_scope("t.py::Cls::test_x") == "t.py::Cls::test_x"


def test_an_xdist_group_suffix_after_the_parameters_names_the_work_unit() -> None:
    name = xdist_group_name("t.py::test_sum[4096]")
    assert function_scope(f"t.py::test_sum[fast-4096]@{name}") == name
    assert function_scope("t.py::test_mail[a@b]") == "t.py::test_mail"


def test_a_group_name_never_ends_in_a_bracket_or_holds_an_at_sign() -> None:
    name = xdist_group_name("t.py::test_x[user@host-4096]")
    assert "]" not in name and "@" not in name


def test_workers_take_the_gpus_in_turn() -> None:
    assert worker_gpus(None, 2, 4) == ["0", "1", "0", "1"]
    assert worker_gpus("3,GPU-abc", 0, 3) == ["3", "GPU-abc", "3"]


def test_with_one_gpu_or_none_workers_keep_what_the_controller_sees() -> None:
    assert worker_gpus(None, 1, 2) == [None, None]
    assert worker_gpus(None, 0, 2) == [None, None]
    assert worker_gpus("1", 4, 2) == [None, None]
