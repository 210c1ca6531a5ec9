"""A forked child process run to its end, or stopped when it hangs."""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Callable

HANG_S = 60.0
"""A guard against a child that hangs, not a timing: a healthy child ends in milliseconds."""


def run_forked(child: Callable[[], bool]) -> str:
    """Fork; the child runs `child` and exits, never returning into pytest. What became of
    it: "ok" when `child` returned True, "failed" for False or an exception, "hung" when it
    was still running after `HANG_S` (then it is killed)."""
    pid = os.fork()
    if pid == 0:
        status = 1
        try:
            status = 0 if child() else 1
        finally:
            os._exit(status)
    deadline = time.monotonic() + HANG_S
    while (done := os.waitpid(pid, os.WNOHANG))[0] == 0:
        if time.monotonic() > deadline:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            return "hung"
        time.sleep(0.01)
    return "ok" if os.waitstatus_to_exitcode(done[1]) == 0 else "failed"
