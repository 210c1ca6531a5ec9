"""Measuring a CPU winner again in a fresh Python process, to confirm a suspected failure.

On the shared 2-core VM a small NumPy kernel can run slow for the whole life of one
process: in one session of 100 of `benchmarks/gate_reliability.py --condition k`, a 7 us
64x64 `dot` read 9.3 us when tuned, 9.6 us when the gate measured it, and 8.9 and 9.9 us in
two re-measurements each taken after a 2 s pause, against 7.0-7.1 us in the other
processes (BENCHMARKS.md). A pause lets an episode of the machine pass; nothing in the
process changes what the process keeps (where its arrays and its BLAS buffers landed).
So on the built-in CPU client a re-measurement runs in a process of its own: a new
interpreter (`sys.executable -c`) to which nothing of this one comes along but this
process's `sys.path` and, by pickle, the candidate and its inputs. A module of theirs that
the new process cannot import by its name (a test module under pytest's
`--import-mode=importlib`, named from the rootdir, which is not on `sys.path`) is loaded
there from its file, as pytest loaded it here. A candidate that does not pickle (a lambda,
a closure) or a module that does not load there gives `NotFresh`, saying why, and the
caller measures here instead.

Not multiprocessing's `spawn`: it runs the parent's main script again in the child, and
a user's script that calls `pytest.main()` without an `if __name__ == "__main__":` guard
would then run a whole second test session there (with `--autotune-update`, writing the
cache files) before the candidate was measured. What the new process's imports print goes
to its stderr; its one line of stdout is the figures, as JSON.
"""

from __future__ import annotations

import importlib.util
import io
import json
import os
import pickle
import subprocess
import sys
import types
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, cast

from pytest_autotune.calibration import input_arrays
from pytest_autotune.gate import Calibration, Measurement
from pytest_autotune.tune.errors import AutotuneError

TIMEOUT_S = 120.0
"""The longest a fresh process may take to start, import the candidate's module and
measure it; past it the process is killed and the caller measures here."""

MAX_INPUT_BYTES = 256 << 20
"""The most bytes of input arrays sent to a fresh process: pickling copies them, and a
kernel whose inputs are that large runs long enough that what one process keeps (where a
few small arrays landed) does not move its time."""

Measure = Callable[[Any, Callable[..., Any], str, tuple[Any, ...]], Measurement]
"""How a process measures a candidate: `(client, fn, name, inputs) -> Measurement`."""


@dataclass(frozen=True, slots=True)
class NotFresh:
    """Why a candidate could not be measured in a fresh process: the gate says it where the
    confirmation it then took here fails the group."""

    why: str


def measure_fresh(
    fn: Callable[..., Any], inputs: tuple[Any, ...], name: str, measure: Measure
) -> Measurement | NotFresh:
    """`measure(cpu(), fn, name, inputs)` run in a fresh process, with the built-in CPU
    client there; `NotFresh` where it cannot run there (see the module docstring), its
    input arrays pass `MAX_INPUT_BYTES`, or it fails."""
    if sum(array.nbytes for array in input_arrays(inputs)) > MAX_INPUT_BYTES:
        return NotFresh(f"its inputs pass {MAX_INPUT_BYTES >> 20} MiB")
    try:
        pickler, call = _pickled((fn, inputs, measure, _warning_filters()))
    except Exception as error:  # an input that does not pickle, even by value
        return NotFresh(f"the candidate or its inputs do not pickle ({_said(error)})")
    # The path first, in a pickle of plain values: the call's modules load only once the
    # new process searches where this one does.
    payload = pickle.dumps((list(sys.path), name, pickler.sources(), call))
    try:
        child = subprocess.run(
            [sys.executable, "-c", _CHILD],
            input=payload,
            capture_output=True,
            timeout=TIMEOUT_S,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return NotFresh(f"the fresh process took more than {TIMEOUT_S:.0f} s")
    except (OSError, subprocess.SubprocessError) as error:
        return NotFresh(f"the fresh process did not start ({_said(error)})")
    return _result(child)


def _result(child: subprocess.CompletedProcess[bytes]) -> Measurement | NotFresh:
    """What the fresh process measured, from its last line of stdout; why not, where it
    failed (its error) or ended without that line (its exit code and last line of stderr)."""
    lines = child.stdout.decode(errors="replace").strip().splitlines()
    try:
        result = json.loads(lines[-1])
    except (ValueError, IndexError):
        stderr = child.stderr.decode(errors="replace").strip().splitlines()
        return NotFresh(
            f"the fresh process ended with exit code {child.returncode}"
            + (f" ({stderr[-1]})" if stderr else "")
        )
    if not isinstance(result, dict):
        return NotFresh(f"it failed in the fresh process ({result})")
    return _measurement(result)


def _said(error: BaseException) -> str:
    """An error as a note says it: a candidate's, as it raised it (the measurement wraps it
    in an `AutotuneError` that names the candidate, which the note names already)."""
    if isinstance(error, AutotuneError) and error.message:
        return error.message
    return f"{type(error).__name__}: {error}"


Source = tuple[str | None, list[str] | None]
"""Where a module was loaded from in the measuring process: its file (None for a package
of no `__init__.py`) and, for a package, where its submodules are looked for."""


def _pickled(call: object) -> tuple[_Noting, bytes]:
    """`call` pickled, with the pickler that noted its modules: by reference where pickle
    can, else by value with cloudpickle. A candidate that is a lambda or a closure (a
    marker's `candidates={"sum": lambda x: x.sum()}`) does not pickle by reference; measured
    again in the test's own process, it kept that process's slow placement, and the gate
    confirmed a regression of unchanged code (+66% to +94% on the 2-core VM)."""
    pickler = _NotingPickler()
    try:
        return pickler, pickler.dumps(call)
    except Exception as error:
        try:
            import cloudpickle  # type: ignore[import-untyped]  # a tree run without it: here
        except ImportError:
            raise error from None
        by_value = _noting(cloudpickle.Pickler)()
        return by_value, by_value.dumps(call)


class _Noting:
    """What a pickler adds to note every module whose functions or classes it pickles, for
    `_LoadingUnpickler` in the new process (a superset of those pickled by reference: a
    module only by-value functions name is never looked for there)."""

    _buffer: io.BytesIO
    _modules: set[str]

    def dumps(self, value: object) -> bytes:
        self.dump(value)  # type: ignore[attr-defined]
        return self._buffer.getvalue()

    def reducer_override(self, obj: Any) -> Any:
        if isinstance(obj, (type, types.FunctionType)):
            self._modules.add(getattr(obj, "__module__", None) or "")
        base = super()
        # cloudpickle's own override decides what goes by value; pickle's has none.
        return base.reducer_override(obj) if hasattr(base, "reducer_override") else NotImplemented

    def sources(self) -> dict[str, Source]:
        """Where the noted modules that have a source file, and their packages, were
        loaded from: a test module's relative import needs its package there too."""
        found: dict[str, Source] = {}
        for name in self._modules:
            file = getattr(sys.modules.get(name), "__file__", None)
            if not (isinstance(file, str) and file.endswith(".py") and os.path.isfile(file)):
                continue
            found[name] = (file, None)
            package = name.rpartition(".")[0]
            while package and package not in found and package in sys.modules:
                module = sys.modules[package]
                init = getattr(module, "__file__", None)
                path = getattr(module, "__path__", None)
                found[package] = (
                    init if isinstance(init, str) and os.path.isfile(init) else None,
                    [str(entry) for entry in path] if path is not None else None,
                )
                package = package.rpartition(".")[0]
        return found


def _noting(base: type[pickle.Pickler]) -> Callable[[], _Noting]:
    """A pickler of class `base` that notes modules (`_Noting`)."""

    class Noting(_Noting, base):  # type: ignore[valid-type, misc]
        def __init__(self) -> None:
            self._buffer = io.BytesIO()
            base.__init__(self, self._buffer, protocol=pickle.HIGHEST_PROTOCOL)
            self._modules = set()

    return Noting


_NotingPickler = _noting(pickle.Pickler)
"""A pickler that notes every module whose functions or classes it pickles by reference."""


class _LoadingUnpickler(pickle.Unpickler):
    """An unpickler that loads a module its name does not find from the file it was loaded
    from in the measuring process, under the same name, its packages first, as pytest's
    importlib import mode loads a test module (`importlib.util.spec_from_file_location`)."""

    def __init__(self, data: bytes, sources: dict[str, Source]) -> None:
        super().__init__(io.BytesIO(data))
        self._sources = sources
        self._loaded: dict[str, types.ModuleType] = {}

    def find_class(self, module: str, name: str) -> Any:
        # Pickle's own lookup imports the module's top package first, which is not there
        # for one loaded from its file: such a module is looked in directly.
        if module not in self._loaded:
            try:
                return super().find_class(module, name)
            except ModuleNotFoundError:
                if self._sources.get(module, (None,))[0] is None or module in sys.modules:
                    raise
            self._loaded[module] = _load(module, self._sources)
        found: Any = self._loaded[module]
        for part in name.split("."):  # a nested class's qualified name
            found = getattr(found, part)
        return found


def _load(name: str, sources: dict[str, Source]) -> types.ModuleType:
    """The module `name` as the measuring process loaded it (`sources`), its packages
    first, each kept in `sys.modules`; one already there is used as it is."""
    if name in sys.modules:
        return sys.modules[name]
    package = name.rpartition(".")[0]
    if package:
        _load(package, sources)
    file, path = sources.get(name, (None, None))
    if file is None:  # a package of no __init__.py (a namespace, pytest's stand-in)
        module = types.ModuleType(name)
        module.__path__ = path or []
        sys.modules[name] = module
        return module
    spec = importlib.util.spec_from_file_location(name, file, submodule_search_locations=path)
    if spec is None or spec.loader is None:  # pragma: no cover - a .py file always has one
        raise ModuleNotFoundError(f"no module named {name!r}", name=name)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[name]
        raise
    return module


_CHILD = (
    "import pickle, sys; path, name, sources, call = pickle.load(sys.stdin.buffer);"
    " sys.path[:] = path; from pytest_autotune.fresh_process import measure_here;"
    " measure_here(name, call, sources)"
)
"""The new process's program: this process's `sys.path`, then `measure_here`."""


def measure_here(name: str, call: bytes, sources: dict[str, Source] | None = None) -> None:
    """The fresh process's work: measure the candidate and write its figures to stdout as
    one line of JSON (what failed, where it did: the caller measures there). `sources` say
    where the call's modules and their packages were loaded from, for those that do not
    import by name here (`_NotingPickler.sources`)."""
    out = os.fdopen(os.dup(sys.stdout.fileno()), "w")
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())  # what imports print stays out of it
    sys.stdout = sys.stderr
    result: object
    try:
        from pytest_autotune.backends.cpu import cpu

        fn, inputs, measure, filters = _LoadingUnpickler(call, sources or {}).load()
        with warnings.catch_warnings():
            _apply(filters)
            measured = measure(cpu(), fn, name, inputs)
        calibration = measured.calibration
        result = {
            "samples": list(measured.samples),
            "calibration": None if calibration is None else list(calibration.samples),
            "calibration_kind": None if calibration is None else calibration.kind,
            "load": measured.load,
            "pressure": measured.pressure,
            "helpers": measured.helpers,
            "neighbours": measured.neighbours,
        }
    except BaseException as exc:  # the caller measures here instead
        result = _said(exc)
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


def _measurement(result: dict[str, Any]) -> Measurement:
    reads, kind = result["calibration"], result["calibration_kind"]
    return Measurement(
        tuple(result["samples"]),
        None if reads is None else Calibration(tuple(reads), kind),
        load=result["load"],
        pressure=result["pressure"],
        helpers=result["helpers"],
        neighbours=result["neighbours"],
    )


__all__ = ["MAX_INPUT_BYTES", "TIMEOUT_S", "NotFresh", "measure_fresh", "measure_here"]
