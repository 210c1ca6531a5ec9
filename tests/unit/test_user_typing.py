"""A user's code that calls the API as the README and DESIGN.md write it type-checks with
`mypy --strict` against the package, which ships `py.typed`: an annotation narrower than
what the API accepts fails a correct program in its user's CI, though it runs."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

USER_MODULE = """
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from pytest_autotune import (
    AutotuneBound,
    AutotuneFixture,
    AutotuneOutput,
    AutotuneConfig,
    AutotuneKey,
    Bounds,
    CloneInputGenerator,
    LocalTuner,
    Thresholds,
    Tunable,
    TunableSet,
    TuneGroup,
    Work,
    anchor,
    calculate_bounds,
    local_tuner,
)
from pytest_autotune.backends import Client, cpu


@dataclass(frozen=True)
class SumKey(AutotuneKey):
    n: int
    dtype: str


TUNER: LocalTuner = local_tuner()
SHIPPED = local_tuner("sum", AutotuneConfig(cache_dir="mylib/.autotune"))
LOGGED = local_tuner("logged", AutotuneConfig(record="tuning.jsonl", log_level="minimal"))
COARSE = AutotuneConfig(level="minimal", record="stderr")


def sum_pairwise(x: npt.NDArray[np.float32]) -> Any:
    return np.sum(x)


def sum_blocked(x: npt.NDArray[np.float32]) -> Any:
    return np.add.reduce(x)


def work(x: npt.NDArray[np.float32]) -> Work:
    return Work(compute_ops=x.size, bytes=x.nbytes, dtype=x.dtype)


def bounds(key: SumKey, inputs: tuple[npt.NDArray[np.float32]], client: Client) -> Bounds:
    peaks = client.peaks()
    return calculate_bounds(
        Work(key.n, 4 * key.n), Thresholds(), peaks.compute_peak("fp32"), 1e11
    )


def memory_bound(key: SumKey, inputs: tuple[npt.NDArray[np.float32]], client: Client) -> Bounds:
    return Bounds([AutotuneBound("memory", 4.0 * key.n, 1.0, 1e11)], launch_overhead=5e-6)


def make_set() -> TunableSet:
    big = TuneGroup("big", lambda key: 2 if key.n >= 1 << 20 else 0)
    return (
        TunableSet(lambda x: SumKey(anchor(x.size), str(x.dtype)))
        .with_(Tunable("pairwise", sum_pairwise))
        .with_(Tunable("blocked", sum_blocked).group(big, lambda key: 1))
        .with_work(work, Thresholds(memory=0.3))
    )


def make_bounded_set() -> TunableSet:
    return make_set().with_bounds(bounds)


def tuned_sum(x: npt.NDArray[np.float32]) -> Any:
    tunables = TUNER.init(make_set)
    client = cpu()
    return TUNER.execute(client.device_id, client, tunables, (x,))


FP64_WORK = Work(compute_ops=1e9, bytes=8e6, dtype=np.float64)


class dtype:  # torch's, as torch/_C/__init__.pyi declares it (torch is not installed here)
    is_floating_point: bool
    is_complex: bool
    is_signed: bool
    itemsize: int
    abbr: str


def torch_work(n: int, torch_dtype: dtype) -> Work:  # a tensor's `x.dtype`
    return Work(compute_ops=2 * n, bytes=4 * n, dtype=torch_dtype)


# A NumPy number where the API reads one: a size, an amount of work, a priority.
def numpy_size_key(x: npt.NDArray[np.float32]) -> int:
    return anchor(np.prod(x.shape), max=1 << 30)


def numpy_work(x: npt.NDArray[np.float32]) -> Work:
    return Work(compute_ops=np.prod(x.shape), bytes=x.nbytes, working_set=np.int64(x.nbytes))


def fractional_priority(key: int) -> float:
    return 0.5


# An input generator's parameters named as its author likes: it is called positionally.
def renamed_input_gen(k: int, args: tuple[Any, ...]) -> tuple[Any, ...]:
    return args


def listed_set() -> TunableSet:
    half = TuneGroup("half", fractional_priority)
    pairwise = Tunable("pairwise", sum_pairwise).group(half, lambda key: np.float32(0.5))
    return TunableSet(
        numpy_size_key, renamed_input_gen, [pairwise, ("blocked", sum_blocked)]
    ).with_work(numpy_work)


def seed_style_set() -> TunableSet:
    return TunableSet(numpy_size_key, CloneInputGenerator).with_(("pairwise", sum_pairwise))


def numpy_short_circuit_set() -> TunableSet:  # a number of samples read as a NumPy one
    return make_set().with_short_circuit(np.int64(3))


PEAKS_CLIENT = cpu(peaks_cache_dir="mylib/.autotune")
NUMPY_THRESHOLDS = Thresholds(memory=np.float32(0.8))


# A result type of its own, its comparison's parameters named as its author likes.
class Histogram:
    def __init__(self, counts: npt.NDArray[np.int64]) -> None:
        self.counts = counts

    def autotune_compare(self, expected: object, r: float, a: float) -> str | None:
        return None


def compared(h: Histogram) -> AutotuneOutput:
    return h


def test_my_library_sum(autotune: AutotuneFixture) -> None:
    x = np.ones(1024, dtype=np.float32)
    out = autotune(
        make_set(),
        x,
        work=lambda x: Work(x.size, x.nbytes),
        thresholds=Thresholds(memory=0.05),
        reference="pairwise",
        rtol=1e-5,
        tuner=TUNER,
        level="minimal",
    )
    assert out is not None


# A library's tolerances and limits of its inputs' precision, as the fixture takes them.
EPS = np.finfo(np.float32).eps
CHECKED = local_tuner("checked", AutotuneConfig(checks=True, rtol=EPS, atol=EPS))
GATED = AutotuneConfig(max_regression=np.float32(0.1), time_limit=np.int64(5))
HALF = Thresholds.uniform(np.float32(0.5))


def test_in_float32(autotune: AutotuneFixture) -> None:
    # A tolerance of the inputs' precision: a NumPy float32, no `float` to a type checker,
    # which the fixture takes as the marker does.
    x = np.ones(1024, dtype=np.float32)
    eps = np.finfo(np.float32).eps
    autotune(make_set(), x, rtol=eps, atol=eps, max_regression=np.float32(0.1))
"""


def mypy_strict(tmp_path: Path, source: str) -> subprocess.CompletedProcess[str]:
    """`mypy --strict` of `source`, as a module of a user's, against this package."""
    pytest.importorskip("mypy")
    (tmp_path / "userlib.py").write_text(textwrap.dedent(source), encoding="utf-8")
    env = {**os.environ, "MYPYPATH": str(ROOT)}
    # The package's own errors silenced, as mypy silences an installed package's: found
    # through MYPYPATH, its sources read as the user's own, checked against whatever NumPy
    # is installed, and NumPy 1.24's stubs (our floor) failed lines that run there and that
    # the project's own mypy, on the newest NumPy, passes. The user's module is still checked.
    command = [sys.executable, "-m", "mypy", "--strict", "--follow-imports=silent"]
    command += ["--no-error-summary", "userlib.py"]
    return subprocess.run(
        [*command, "--cache-dir", str(tmp_path / "cache")],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )


def test_documented_user_code_type_checks_under_mypy_strict(tmp_path: Path) -> None:
    done = mypy_strict(tmp_path, USER_MODULE)
    assert done.returncode == 0, done.stdout + done.stderr


TYPED_OUTPUT_MODULE = """
from __future__ import annotations

from typing import Any

import numpy as np
import numpy.typing as npt
from typing_extensions import assert_type

from pytest_autotune import AutotuneFixture, TunableSet, local_tuner
from pytest_autotune.backends import cpu

F32 = npt.NDArray[np.float32]


def key(x: F32) -> int:
    return x.size


def pairwise(x: F32) -> np.float32:
    return np.float32(np.sum(x))


def dot(array: F32) -> np.float32:  # another parameter name, in one set all the same
    return np.float32(np.dot(array, np.ones_like(array)))


TUNER = local_tuner()
CLIENT = cpu()
X = np.ones(1024, dtype=np.float32)


def make_set() -> TunableSet[np.float32]:
    return TunableSet.of(key, {"pairwise": pairwise, "dot": dot})


def make_chained() -> TunableSet[np.float32]:
    return TunableSet(key).with_(("pairwise", pairwise)).with_short_circuit(False)


def make_bare() -> TunableSet:  # as the README writes it: Any, as before
    return make_chained()


def make_wider() -> TunableSet[np.floating[Any]]:  # a set is immutable: covariant
    return make_set()


assert_type(TunableSet.of(key, {"pairwise": pairwise, "dot": dot}), TunableSet[np.float32])
assert_type(TUNER.init(make_set), TunableSet[np.float32])
assert_type(TUNER.execute(CLIENT.device_id, CLIENT, TUNER.init(make_set), (X,)), np.float32)
assert_type(TUNER.bind(CLIENT.device_id, CLIENT, TUNER.init(make_set))(X), np.float32)
assert_type(TUNER.execute(CLIENT.device_id, CLIENT, TUNER.init(make_bare), (X,)), Any)


def tuned_sum(x: F32) -> np.float32:
    return TUNER.execute(CLIENT.device_id, CLIENT, TUNER.init(make_set), (x,))


def test_my_library_sum(autotune: AutotuneFixture) -> None:
    assert_type(autotune(TUNER.init(make_set), X), np.float32)
"""


def test_a_sets_candidates_return_type_is_what_execute_bind_and_the_fixture_return(
    tmp_path: Path,
) -> None:
    # All three returned Any: under `mypy --strict` a library's `tuned_sum` declared to
    # return what its candidates return failed ("Returning Any from function declared to
    # return ..."), and a bound operation's result went unchecked wherever it was used.
    done = mypy_strict(tmp_path, TYPED_OUTPUT_MODULE)
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.parametrize(
    ("module", "name"),
    [
        ("pytest_autotune/tune/tunable_set.py", "TunableSet"),
        ("pytest_autotune/tune/bounds.py", "Work"),
        ("pytest_autotune/tune/bounds.py", "Thresholds"),
        ("pytest_autotune/tune/config.py", "AutotuneConfig"),
    ],
)
def test_a_constructor_typed_for_checkers_names_the_fields_the_dataclass_takes(
    module: str, name: str
) -> None:
    # These declare, for type checkers only, an `__init__` wider than their
    # fields; a field added to the dataclass and not to it would refuse, under mypy, an
    # argument the class takes at run time.
    import ast
    import dataclasses

    import pytest_autotune

    cls = getattr(pytest_autotune, name)
    tree = ast.parse((Path(__file__).parents[2] / module).read_text(encoding="utf-8"))
    (node,) = (n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == name)
    (stub,) = (
        s
        for block in node.body
        if isinstance(block, ast.If) and ast.unparse(block.test) == "TYPE_CHECKING"
        for s in block.body
        if isinstance(s, ast.FunctionDef) and s.name == "__init__"
    )
    stubbed = [a.arg for a in stub.args.args[1:]]
    taken = [f.name for f in dataclasses.fields(cls) if f.init]
    assert stubbed == taken


def test_the_fixture_type_takes_the_options_the_fixture_takes() -> None:
    # `AutotuneFixture` is what a typed test annotates `autotune` with: an option the
    # fixture takes that it lacks would be refused under mypy, one it names that the
    # fixture does not would pass mypy and fail the test.
    import inspect

    from pytest_autotune import AutotuneFixture
    from pytest_autotune.fixture import FIXTURE_OPTIONS

    parameters = inspect.signature(AutotuneFixture.__call__).parameters.values()
    keywords = [p.name for p in parameters if p.kind is inspect.Parameter.KEYWORD_ONLY]
    assert sorted(keywords) == sorted(FIXTURE_OPTIONS)


@pytest.mark.parametrize("name", ["anchor", "Tunable", "Thresholds", "calculate_bounds"])
def test_the_annotations_of_the_api_resolve_at_run_time(name: str) -> None:
    # Sphinx's autodoc (`autodoc_typehints`), runtime type checkers and `help()`-style
    # tools read them with `typing.get_type_hints`: an annotation naming `RealNumber`,
    # there a string naming NumPy as `np`, raised NameError: name 'np' is not defined.
    import typing

    import pytest_autotune

    assert typing.get_type_hints(getattr(pytest_autotune, name))


@pytest.mark.parametrize(
    ("protocol", "method"),
    [
        ("pytest_autotune.backends.Client", "time"),
        ("pytest_autotune.InputGenerator", "__call__"),
        ("pytest_autotune.AutotuneOutput", "autotune_compare"),
    ],
)
def test_a_protocol_the_user_implements_names_no_parameter(protocol: str, method: str) -> None:
    # Each is called positionally, so an implementation may name its parameters as it
    # likes; pyright (and mypy, where a call passes one by keyword) checks the names of a
    # protocol's parameters that are not positional-only, and refused a client whose
    # `time(self, f, args)` the tuner calls as `client.time(fn, inputs)` all the same.
    import importlib
    import inspect

    module, name = protocol.rsplit(".", 1)
    signature = inspect.signature(getattr(getattr(importlib.import_module(module), name), method))
    named = [
        p.name
        for p in list(signature.parameters.values())[1:]
        if p.kind is not inspect.Parameter.POSITIONAL_ONLY
    ]
    assert named == []
