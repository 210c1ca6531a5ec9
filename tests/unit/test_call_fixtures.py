"""The test body's calls, each with fixtures of its own (`call_fixtures`)."""

from __future__ import annotations

import pickle
import threading
from pathlib import Path

from pytest_autotune.call_fixtures import EachCall, each_call, folder_given


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


def test_a_long_list_a_fixture_gives_is_looked_into_for_paths_at_its_first_items(
    tmp_path: Path,
) -> None:
    # Each of its items was looked into, once a test: `list(array)` of a million NumPy
    # floats took 1.3 s, and 200 000 small objects 0.5 s, before the test's first call.
    looked = 0

    class Row:
        @property
        def __dict__(self) -> dict[str, object]:  # type: ignore[override]
            nonlocal looked
            looked += 1
            return {"value": 1.0}

    rows = [Row() for _ in range(10_000)]
    assert folder_given({"rows": rows, "ids": list(range(10_000))}, tmp_path) is None
    assert looked < 1000
    held = {"rows": rows[:10], "out": [{"path": str(tmp_path / "out")}]}
    assert folder_given(held, tmp_path) == tmp_path
