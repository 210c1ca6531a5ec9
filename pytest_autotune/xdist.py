"""pytest-xdist: workers tune, the controller alone merges and writes.

Workers put plain dicts in `config.workeroutput` at the end of their session; the
controller reads them in `pytest_testnodedown`, as pytest-xdist's own plugins do. Groups
stay on one worker through the `xdist_group` mark each item carries, which needs
`--dist loadgroup`: the plugin selects it when `-n` is given without a `--dist`.
"""

from __future__ import annotations

from typing import Any

import pytest

from pytest_autotune.session import AutotuneSession


class XdistBridge:
    def __init__(self, config: pytest.Config, session: AutotuneSession) -> None:
        self.config = config
        self.session = session

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node: Any, error: Any) -> None:
        output = getattr(node, "workeroutput", {}).get("autotune")
        if output is not None:
            self.session.merge_worker_output(output)
