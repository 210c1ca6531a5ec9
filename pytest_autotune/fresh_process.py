"""Measuring a CPU winner again in a fresh Python process, to confirm a suspected failure.

On the shared 2-core VM a small NumPy kernel can run slow for the whole life of one
process: in one session of 100 of `benchmarks/gate_reliability.py --condition k`, a 7 us
64x64 `dot` read 9.3 us when tuned, 9.6 us when the gate measured it, and 8.9 and 9.9 us in
two re-measurements each taken after a 2 s pause, against 7.0-7.1 us in the other
processes (BENCHMARKS.md). A pause lets an episode of the machine pass; nothing in the
process changes what the process keeps (where its arrays and its BLAS buffers landed).
So on the built-in CPU client a re-measurement runs in a process of its own, started
with `spawn` so that nothing of this one comes along but the candidate and its inputs,
which travel by pickle: a candidate that does not pickle (a lambda, a closure) or a
module the new process cannot import gives None, and the caller measures here instead.
"""

from __future__ import annotations

import multiprocessing
import pickle
from collections.abc import Callable
from typing import Any

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
        payload = pickle.dumps((fn, inputs, measure))
    except Exception:  # a lambda, a closure, an input that does not pickle
        return None
    context = multiprocessing.get_context("spawn")
    receiver, sender = context.Pipe(duplex=False)
    process = context.Process(target=_measure_here, args=(sender, payload, name), daemon=True)
    try:
        process.start()
    except Exception:
        return None
    sender.close()
    try:
        result = receiver.recv() if receiver.poll(TIMEOUT_S) else None
    except (EOFError, OSError):
        result = None
    finally:
        receiver.close()
        process.join(5.0)
        if process.is_alive():
            process.kill()
            process.join()
    return _measurement(result)


def _measure_here(sender: Any, payload: bytes, name: str) -> None:
    """The fresh process's work: measure the candidate and send back its figures (plain
    values: a frozen dataclass with slots does not unpickle on Python 3.10)."""
    try:
        from pytest_autotune.backends.cpu import cpu

        fn, inputs, measure = pickle.loads(payload)
        measured = measure(cpu(), fn, name, inputs)
        calibration = measured.calibration
        sender.send(
            {
                "samples": measured.samples,
                "calibration": None if calibration is None else calibration.samples,
                "load": measured.load,
                "pressure": measured.pressure,
                "helpers": measured.helpers,
            }
        )
    except BaseException as exc:  # the caller measures here instead
        sender.send(repr(exc))
    finally:
        sender.close()


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


__all__ = ["MAX_INPUT_BYTES", "TIMEOUT_S", "measure_fresh"]
