"""A CPU winner measured again in a process of its own (`pytest_autotune.fresh_process`)."""

from __future__ import annotations

import functools
import importlib.util
import os
import platform
import subprocess
import sys
import threading
import time
import types
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import pytest_autotune
from pytest_autotune.calibration import calibration_kind
from pytest_autotune.candidate_measure import measure_candidate
from pytest_autotune.candidate_run import CandidateRun
from pytest_autotune.fresh_process import NotFresh, measure_fresh
from pytest_autotune.gate import Measurement
from pytest_autotune.tune.call_scope import SCOPE_ATTRIBUTE
from pytest_autotune.warning_marks import MarkFilters, parse_filters

SLOW_HERE = [False]
"""A state of this process only: a fresh process imports this module anew, with False."""


def candidate(x: np.ndarray[Any, Any]) -> Any:
    if SLOW_HERE[0]:
        time.sleep(2e-3)
    return x.sum()


def failing(x: np.ndarray[Any, Any]) -> Any:
    raise ValueError("boom")


def test_a_fresh_process_measures_the_candidate_without_what_this_process_keeps() -> None:
    x = np.arange(1024, dtype=np.float64)
    SLOW_HERE[0] = True
    try:
        fresh = measure_fresh(candidate, (x,), "candidate", measure_candidate)
    finally:
        SLOW_HERE[0] = False
    assert not isinstance(fresh, NotFresh), fresh
    # Here every call sleeps 2 ms; there the module was imported anew and none does.
    assert fresh.median < 1e-3
    assert len(fresh.samples) >= 10
    assert fresh.helpers is not None and fresh.helpers < 0.1


def test_a_fresh_process_keeps_the_kind_of_a_repeated_calibration_read() -> None:
    """A 128 KiB input is read 16 times beside each sample: the figure that comes back is of
    that read, and says so, or it would be divided by a baseline's read of another length."""
    x = np.ones(1 << 15, dtype=np.float32)
    fresh = measure_fresh(np.sum, (x,), "np_sum", measure_candidate)
    assert not isinstance(fresh, NotFresh), fresh
    assert fresh.calibration is not None
    assert fresh.calibration.kind == calibration_kind((x,)) == "read-inputs/2x16"


def warns(x: np.ndarray[Any, Any]) -> Any:
    warnings.warn("clipped 3 values", UserWarning, stacklevel=1)
    return x.sum()


def body(candidate: Callable[..., Any], x: np.ndarray[Any, Any]) -> Any:
    """A test body, as `CandidateRun` calls it."""
    return candidate(x)


def test_a_fresh_process_measures_under_the_warning_filters_of_this_one() -> None:
    # The new process started with Python's default filters: a warning that the running
    # test's filters refuse (filterwarnings = error) or ignore was printed there instead,
    # on every call that varied its message, a cost of the confirmation alone.
    x = np.arange(16, dtype=np.float64)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        refused = measure_fresh(warns, (x,), "warns", measure_candidate)
        assert isinstance(refused, NotFresh)
        assert refused.why == "it failed in the fresh process (UserWarning: clipped 3 values)"
        warnings.filterwarnings("ignore", "clipped")
        assert not isinstance(measure_fresh(warns, (x,), "warns", measure_candidate), NotFresh)


def test_a_fresh_process_measures_a_candidate_under_its_own_warning_marks() -> None:
    # The winner of another candidate's test, whose own mark ignores its warning: its
    # scope pickled without its filters, and the fresh process measured it without them.
    x = np.arange(16, dtype=np.float64)
    run = CandidateRun(
        body, ("x",), filters=MarkFilters((), {"warns": parse_filters(("ignore:clipped",))})
    )
    fn = functools.partial(run, warns)
    setattr(fn, SCOPE_ATTRIBUTE, run.scope_of("warns"))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert not isinstance(measure_fresh(fn, (x,), "warns", measure_candidate), NotFresh)


def test_a_lambda_or_a_closure_is_measured_in_a_fresh_process_too() -> None:
    # Pickled by value (cloudpickle): measured again in the test's own process, a lambda
    # candidate kept that process's slow placement, and the gate confirmed a regression of
    # unchanged code. A global the lambda names (`candidate`, of this module) comes by name.
    x = np.arange(16, dtype=np.float64)
    scale = 2.0

    def closure(x: np.ndarray) -> np.ndarray:
        return x * scale

    for fn in (lambda x: x.sum(), closure, lambda x: candidate(x) * 1):
        measured = measure_fresh(fn, (x,), "by value", measure_candidate)
        assert isinstance(measured, Measurement), measured


def test_a_candidate_that_does_not_pickle_or_fails_there_says_why() -> None:
    x = np.arange(16, dtype=np.float64)
    lock = threading.Lock()  # no pickler takes a lock, by value or not
    unpickled = measure_fresh(lambda x: lock and x.sum(), (x,), "lambda", measure_candidate)
    assert isinstance(unpickled, NotFresh)
    assert unpickled.why.startswith("the candidate or its inputs do not pickle (")
    assert measure_fresh(failing, (x,), "failing", measure_candidate) == NotFresh(
        "it failed in the fresh process (ValueError: boom)"
    )


def test_inputs_past_the_size_limit_stay_in_this_process(monkeypatch: pytest.MonkeyPatch) -> None:
    def no_process(*args: object, **kwargs: object) -> None:
        raise AssertionError("started a process for inputs past the limit")

    monkeypatch.setattr("pytest_autotune.fresh_process.subprocess.run", no_process)
    monkeypatch.setattr("pytest_autotune.fresh_process.MAX_INPUT_BYTES", 1024)
    nested = ([np.zeros(100)], {"b": np.zeros(100)})  # 1,600 bytes of arrays
    assert measure_fresh(candidate, nested, "candidate", measure_candidate) == NotFresh(
        "its inputs pass 0 MiB"
    )


UNGUARDED = """
import numpy as np

from pytest_autotune.fresh_process import NotFresh, measure_fresh
from pytest_autotune.gate import Measurement
from pytest_autotune.candidate_measure import measure_candidate
from pytest_autotune.candidate_run import CandidateRun
from pytest_autotune.tune.call_scope import SCOPE_ATTRIBUTE
from pytest_autotune.warning_marks import MarkFilters, parse_filters

with open("runs.txt", "a") as runs:  # once per run of this script's body
    runs.write("ran\\n")
print("noise on stdout at import")
x = np.arange(1024, dtype=np.float64)
fresh = measure_fresh(np.sum, (x,), "np_sum", measure_candidate)
print("samples:", len(fresh.samples) if hasattr(fresh, "samples") else fresh)
"""


def test_a_main_script_without_a_main_guard_is_not_run_again_by_the_fresh_process(
    tmp_path: Path,
) -> None:
    # As a user's script calling pytest.main() at its top level: multiprocessing's spawn
    # would run it again in the child, a second test session inside the first.
    script = tmp_path / "run_checks.py"
    script.write_text(UNGUARDED)
    package_root = Path(pytest_autotune.__file__).resolve().parents[1]
    env = {**os.environ, "PYTHONPATH": str(package_root)}
    done = subprocess.run(
        [sys.executable, str(script)],
        check=False,
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    assert (tmp_path / "runs.txt").read_text().splitlines() == ["ran"]
    samples = [line for line in done.stdout.splitlines() if line.startswith("samples:")]
    assert len(samples) == 1 and samples[0].removeprefix("samples: ").isdigit(), samples


def test_what_the_candidates_module_prints_does_not_spoil_the_figures(tmp_path: Path) -> None:
    module = tmp_path / "noisy_module.py"
    module.write_text(
        "import sys\nprint('{not json')\nsys.stdout.write('more\\n')\n"
        "def kernel(x):\n    return x.sum()\n"
    )
    sys.path.insert(0, str(tmp_path))
    try:
        import noisy_module  # type: ignore[import-not-found]

        x = np.arange(64, dtype=np.float64)
        fresh = measure_fresh(noisy_module.kernel, (x,), "kernel", measure_candidate)
    finally:
        sys.path.remove(str(tmp_path))
        sys.modules.pop("noisy_module", None)
    assert not isinstance(fresh, NotFresh), fresh
    assert len(fresh.samples) >= 10


def in_a_thread(call: Callable[[], object], seconds: float = 60.0) -> list[object]:
    """`call`'s result, asserting that it came within `seconds`."""
    result: list[object] = []
    worker = threading.Thread(target=lambda: result.append(call()), daemon=True)
    worker.start()
    worker.join(seconds)
    assert not worker.is_alive(), "hung"
    return result


def load_as_importlib_mode(source: Path, name: str) -> Any:
    """`source` loaded as pytest's --import-mode=importlib loads a test module: under a
    name (from the rootdir) that no entry of `sys.path` leads to, its parent an empty
    module (`_pytest.pathlib.insert_missing_modules`)."""
    parent = name.rpartition(".")[0]
    sys.modules.setdefault(parent, types.ModuleType(parent))
    spec = importlib.util.spec_from_file_location(name, source)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


SLOW_KERNELS = """
import time

SLOW = [False]


class Scale:
    factor = 2.0


def kernel(x, scale):
    if SLOW[0]:
        time.sleep(2e-3)
    return x * scale.factor
"""


def test_a_candidate_of_a_module_imported_by_importlib_mode_is_measured_fresh(
    tmp_path: Path,
) -> None:
    # The module loads in the new process from its file, under its name: there it is
    # imported anew, and its kernel is not slow. Its class, an input, comes from it too.
    source = tmp_path / "test_kernels.py"
    source.write_text(SLOW_KERNELS)
    name = "unreachable_name.test_kernels"
    try:
        module = load_as_importlib_mode(source, name)
        module.SLOW[0] = True
        x = np.arange(1024, dtype=np.float64)
        fresh = measure_fresh(module.kernel, (x, module.Scale), "kernel", measure_candidate)
    finally:
        sys.modules.pop(name, None)
        sys.modules.pop("unreachable_name", None)
    assert not isinstance(fresh, NotFresh), fresh
    assert fresh.median < 1e-3


def test_a_candidate_the_fresh_process_cannot_load_with_large_inputs_says_so_promptly(
    tmp_path: Path,
) -> None:
    # Its file gone since it was imported (a module made in memory, a file moved): no name
    # and no file leads to it there.
    source = tmp_path / "test_gone.py"
    source.write_text("def kernel(x):\n    return x.sum()\n")
    name = "unreachable_name.test_gone"
    try:
        module = load_as_importlib_mode(source, name)
        source.unlink()
        x = np.zeros(1 << 17, dtype=np.float64)  # 1 MiB, far past a pipe's buffer
        call = functools.partial(measure_fresh, module.kernel, (x,), "kernel", measure_candidate)
        [result] = in_a_thread(call)
    finally:
        sys.modules.pop(name, None)
        sys.modules.pop("unreachable_name", None)
    assert isinstance(result, NotFresh)
    assert result.why.startswith("it failed in the fresh process (ModuleNotFoundError: ")


def test_a_fresh_process_that_dies_before_reading_its_input_says_so_promptly(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # As a new process that cannot import this package (another version of it, a broken
    # environment). With multiprocessing's spawn, a child that failed so before reading
    # the pickled call left the parent blocked for ever writing the rest of it into the
    # child's pipe (whose read end the parent still held), with the machine's device lock
    # held: seen on this VM with 4 MiB of inputs.
    monkeypatch.setattr("pytest_autotune.fresh_process._CHILD", "import sys; sys.exit(3)")
    x = np.zeros(1 << 19, dtype=np.float64)  # 4 MiB, far past a pipe's buffer
    call = functools.partial(measure_fresh, candidate, (x,), "candidate", measure_candidate)
    assert in_a_thread(call) == [NotFresh("the fresh process ended with exit code 3")]


FAULTS_PER_CALL = """
import resource

import numpy as np

from pytest_autotune.backends.cpu import cpu
from pytest_autotune.candidate_measure import candidate_measurer


def softmax(x):
    e = np.exp(x - x.max())
    return e / e.sum()


x = np.random.default_rng(0).random(1 << 18, dtype=np.float32)
candidate_measurer(cpu(), (x,))
softmax(x)
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for _ in range(20):
    softmax(x)
print((resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before) / 20)
"""


@pytest.mark.skipif(
    sys.platform != "linux" or platform.libc_ver()[0] != "glibc",
    reason="glibc's malloc thresholds",
)
def test_a_fresh_process_times_a_kernel_of_temporaries_as_a_long_lived_process_does() -> None:
    # A softmax of 1 MiB makes three 1 MiB temporaries a call. In a new process glibc gives
    # each its own pages and returns them on free, so every call faults ~470 pages in again
    # and runs 4-6x slower than in a pytest process that freed a large array before: the
    # gate's confirmations then read an unchanged kernel as a regression, and a baseline
    # recorded in one process misleads the gate of the next. The gate's measurer settles
    # the allocator first, in every process alike.
    child = subprocess.run(
        [sys.executable, "-c", FAULTS_PER_CALL], capture_output=True, text=True, check=True
    )
    assert float(child.stdout.strip()) < 10, child.stdout
