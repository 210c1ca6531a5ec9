"""The plugin's pytest-xdist scheduler (`xdist.autotune_scheduling`) on its own."""

from __future__ import annotations

import pytest

from pytest_autotune.xdist import autotune_scheduling

pytest.importorskip("xdist")


class Worker:
    """A pytest-xdist worker as the scheduler sees it (hashable, as its own are)."""

    shutting_down = False

    def shutdown(self) -> None:
        self.shutting_down = True


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
