"""The test body's calls, each with fixtures of its own (`call_fixtures`)."""

from __future__ import annotations

import pickle
import threading
from pathlib import Path

from pytest_autotune.call_fixtures import EachCall, each_call


def body(candidate: object, tmp_path: Path) -> object:
    return candidate


def test_a_body_given_tmp_path_alone_pickles_to_be_measured_in_a_fresh_process(
    tmp_path: Path,
) -> None:
    # Each call's own `mocker` is made from the test's config, which does not pickle (a
    # lock stands for it here): kept for every body, a CPU winner whose body takes
    # `tmp_path` was measured again in the slow pytest process instead of a fresh one.
    config = threading.Lock()
    call = each_call(body, {}, config, tmp_path)  # type: ignore[arg-type]
    assert isinstance(call, EachCall) and call.config is None
    assert pickle.loads(pickle.dumps(call)).test is body
