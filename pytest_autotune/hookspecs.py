"""Hooks of pytest-autotune. Implement them in a `conftest.py` or a plugin.

Each spec has an example; the defaults live in `pytest_autotune.plugin` and `session.py`
(which takes them as its `SessionHooks`; the built-in clients are made in `devices.py`).

Under pytest-xdist they run in the worker that tunes the group (each worker loads the
conftest), never in the controller (which collects no tests, so a device name that is not
built in and that no `pytest_autotune_client` serves fails each test, not the run's start):
a hook that gathers what it sees for the end of the run (`pytest_terminal_summary`) finds
nothing there; read the records (`--autotune-record`, `pytest_autotune.read_records`)
instead.

Mark each implementation `@pytest.hookimpl(optionalhook=True)`, as the examples do: pytest
refuses a hook no plugin declares, so without it a run with the plugin left out (`-p
no:autotune`, a checkout without it installed) stopped at its start on "unknown hook".
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from pytest_autotune.gate import GroupVerdict
    from pytest_autotune.report import GroupSummary
    from pytest_autotune.tune.client import Client


@pytest.hookspec(firstresult=True)
def pytest_autotune_client(config: pytest.Config, device: str) -> Client | None:
    """Return the client that runs and times candidates on `device` ("cpu", "cuda",
    "cuda:N", "auto", or a name of your own from `--autotune-device` or the marker's
    `device=`), or None to let the next implementation, and finally the built-in CPU and
    CUDA clients, answer.

    Asked once per device name for the whole session, through every conftest loaded by
    then (the last loaded first), not per directory as a fixture is: two subfolders'
    conftests that serve one name share the client made first. Give each its own name.

    Example, a backend of your own::

        # conftest.py
        import pytest

        @pytest.hookimpl(optionalhook=True)
        def pytest_autotune_client(config, device):
            if device == "mydsp":
                from mydsp.autotune import DspClient
                return DspClient()
            return None
    """


@pytest.hookspec
def pytest_autotune_fingerprint(config: pytest.Config, fingerprint: dict[str, Any]) -> None:
    """Add to (or edit) the machine fingerprint stored in the cache files and the report.

    Edit `fingerprint` in place and return None (or `fingerprint` itself); anything else
    it returns fails the group's tests, as what it returns is not read. Keys are str,
    values what JSON holds (a str, int, float, bool or None, or a list or dict of them):
    anything else fails the group's tests by name before it is tuned.

    Example, to record the container image the GPU runner used::

        # conftest.py
        import os

        import pytest

        @pytest.hookimpl(optionalhook=True)
        def pytest_autotune_fingerprint(config, fingerprint):
            fingerprint["image"] = os.environ.get("RUNNER_IMAGE", "unknown")
    """


@pytest.hookspec(firstresult=True)
def pytest_autotune_verdict(
    config: pytest.Config, summary: GroupSummary, verdict: GroupVerdict
) -> GroupVerdict | None:
    """Return a replacement verdict for a group, or None to keep the gate's.

    A replacement is a `GroupVerdict` (`dataclasses.replace(verdict, ...)`); anything else
    fails the group's tests by name.

    The first non-None result wins. Example, to report the regressions of a kernel known
    to be unstable without failing the run::

        # conftest.py
        import dataclasses

        import pytest

        @pytest.hookimpl(optionalhook=True)
        def pytest_autotune_verdict(config, summary, verdict):
            from pytest_autotune.gate import Verdict

            if "flaky_kernel" in summary.group and verdict.verdict is Verdict.REGRESSION:
                return dataclasses.replace(verdict, failed=False)
            return None
    """
