"""Measuring a CPU winner again in a fresh Python process, to confirm a suspected failure.

On the shared 2-core VM a small NumPy kernel can run slow for the whole life of one
process: in one session of 100 of `benchmarks/gate_reliability.py --condition k`, a 7 us
64x64 `dot` read 9.3 us when tuned, 9.6 us when the gate measured it, and 8.9 and 9.9 us in
two re-measurements each taken after a 2 s pause, against 7.0-7.1 us in the other
processes (BENCHMARKS.md). A pause lets an episode of the machine pass; nothing in the
process changes what the process keeps (where its arrays and its BLAS buffers landed).
So on the built-in CPU client a re-measurement runs in a process of its own: a new
interpreter (`sys.executable -c`) to which nothing of this one comes along but this
process's `sys.path` and, by pickle, the candidate and its inputs. A candidate that does
not pickle (a lambda, a closure) or a module the new process cannot import gives None, and
the caller measures here instead.

Not multiprocessing's `spawn`: it runs the parent's main script again in the child, and
a user's script that calls `pytest.main()` without an `if __name__ == "__main__":` guard
would then run a whole second test session there (with `--autotune-update`, writing the
cache files) before the candidate was measured. What the new process's imports print goes
to its stderr; its one line of stdout is the figures, as JSON.
"""

from __future__ import annotations

import json
import os
import pickle
import subprocess
import sys
import warnings
from collections.abc import Callable
from typing import Any, cast

from pytest_autotune.calibration import input_arrays
from pytest_autotune.gate import Calibration, Measurement

TIMEOUT_S = 120.0
"""The longest a fresh process may take to start, import the candidate's module and
measure it; past it the process is killed and the caller measures here."""

MAX_INPUT_BYTES = 256 << 20
"""The most bytes of input arrays sent to a fresh process: pickling copies them, and a
kernel whose inputs are that large runs long enough that what one process keeps (where a
few small arrays landed) does not move its time."""

Measure = Callable[[Any, Callable[..., Any], str, tuple[Any, ...]], Measurement]
"""How a process measures a candidate: `(client, fn, name, inputs) -> Measurement`."""


def measure_fresh(
    fn: Callable[..., Any], inputs: tuple[Any, ...], name: str, measure: Measure
) -> Measurement | None:
    """`measure(cpu(), fn, name, inputs)` run in a fresh process, with the built-in CPU
    client there; None where it cannot run there (see the module docstring), its input
    arrays pass `MAX_INPUT_BYTES`, or it fails."""
    if sum(array.nbytes for array in input_arrays(inputs)) > MAX_INPUT_BYTES:
        return None
    try:
        call = pickle.dumps((fn, inputs, measure, _warning_filters()))
    except Exception:  # a lambda, a closure, an input that does not pickle
        return None
    # The path first, in a pickle of plain values: the call's modules load only once the
    # new process searches where this one does.
    payload = pickle.dumps((list(sys.path), name, call))
    try:
        child = subprocess.run(
            [sys.executable, "-c", _CHILD],
            input=payload,
            capture_output=True,
            timeout=TIMEOUT_S,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):  # cannot start, or killed past TIMEOUT_S
        return None
    if child.returncode != 0:
        return None
    try:
        result = json.loads(child.stdout.decode().strip().splitlines()[-1])
    except (ValueError, IndexError, UnicodeDecodeError):
        return None
    return _measurement(result)


_CHILD = (
    "import pickle, sys; path, name, call = pickle.load(sys.stdin.buffer); sys.path[:] = path;"
    " from pytest_autotune.fresh_process import measure_here; measure_here(name, call)"
)
"""The new process's program: this process's `sys.path`, then `measure_here`."""


def measure_here(name: str, call: bytes) -> None:
    """The fresh process's work: measure the candidate and write its figures to stdout as
    one line of JSON (an error's repr where it failed: the caller measures there)."""
    out = os.fdopen(os.dup(sys.stdout.fileno()), "w")
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())  # what imports print stays out of it
    sys.stdout = sys.stderr
    result: object
    try:
        from pytest_autotune.backends.cpu import cpu

        fn, inputs, measure, filters = pickle.loads(call)
        with warnings.catch_warnings():
            _apply(filters)
            measured = measure(cpu(), fn, name, inputs)
        calibration = measured.calibration
        result = {
            "samples": list(measured.samples),
            "calibration": None if calibration is None else list(calibration.samples),
            "load": measured.load,
            "pressure": measured.pressure,
            "helpers": measured.helpers,
        }
    except BaseException as exc:  # the caller measures here instead
        result = repr(exc)
    with out:
        out.write(json.dumps(result) + "\n")


def _warning_filters() -> list[object]:
    """The warning filters in force here (pytest's for the running test: the ini's
    `filterwarnings`, `-W`, its marks), as `warnings` keeps them, first first. The new
    process starts with Python's defaults: a warning that the candidate's test ignores
    here was printed there on every call that varied its message, and one it makes an
    error here passed there, a confirmation of another run than the one it confirms."""
    return list(warnings.filters)


def _apply(filters: list[object]) -> None:
    """`_warning_filters` of the measuring process, in force in place of this one's: as
    they are kept, since `warnings` matches a pattern kept as a string exactly, and one
    added again through `filterwarnings` would be a regular expression."""
    warnings.resetwarnings()  # and what this process's modules were shown is forgotten
    cast("list[object]", warnings.filters)[:] = filters  # a list; typeshed says Sequence


def _measurement(result: object) -> Measurement | None:
    if not isinstance(result, dict):
        return None
    calibration = result["calibration"]
    return Measurement(
        tuple(result["samples"]),
        None if calibration is None else Calibration(tuple(calibration)),
        load=result["load"],
        pressure=result["pressure"],
        helpers=result["helpers"],
    )


__all__ = ["MAX_INPUT_BYTES", "TIMEOUT_S", "measure_fresh", "measure_here"]
