"""`TunableSet`: the candidates of one operation with their key, input and bounds generators."""

from __future__ import annotations

import copy
import dataclasses
import functools
import hashlib
import inspect
import types
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Protocol

from pytest_autotune.tune.bounds import Bounds, BoundsGenerator, Thresholds, Work, roofline
from pytest_autotune.tune.config import BenchConfig
from pytest_autotune.tune.key import KeyGenerator
from pytest_autotune.tune.tunable import Tunable, TuneFn

if TYPE_CHECKING:
    from pytest_autotune.tune.client import Client

TuneInputs = tuple[Any, ...]
"""The inputs a set's candidates are called with, as `fn(*inputs)`."""


class InputGenerator(Protocol):
    """Produces the benchmark inputs for a given key and reference inputs."""

    def __call__(self, key: Any, inputs: TuneInputs) -> TuneInputs: ...


def clone_value(value: Any, _depth: int = 0) -> Any:
    """A copy of an array (NumPy, CuPy, anything with `__array__` and `copy`), recursing into
    tuples, lists and dicts, and into the attributes of an object that holds an array (a
    shallow copy of the object with its arrays copied): a candidate writing into
    `state.buffer` must not change the fixture for later tests. Other values are shared."""
    if isinstance(value, tuple):
        return tuple(clone_value(v, _depth) for v in value)
    if isinstance(value, list):
        return [clone_value(v, _depth) for v in value]
    if isinstance(value, dict):
        return {k: clone_value(v, _depth) for k, v in value.items()}
    if hasattr(value, "__array__") and hasattr(value, "copy") and hasattr(value, "shape"):
        return value.copy()
    if _depth < _MAX_OBJECT_DEPTH:
        return _clone_object(value, _depth + 1)
    return value


_MAX_OBJECT_DEPTH = 3
"""Objects inside objects inside objects: deep enough for a state holding a buffer, shallow
enough that a cyclic object graph ends and the cost per call stays small."""

_NEVER_COPIED = (
    type,
    types.ModuleType,
    types.FunctionType,
    types.BuiltinFunctionType,
    types.MethodType,
    functools.partial,
)


def _clone_object(value: Any, depth: int) -> Any:
    if isinstance(value, _NEVER_COPIED):
        return value
    attributes = dict(getattr(value, "__dict__", None) or {})
    if dataclasses.is_dataclass(value):
        attributes.update((f.name, getattr(value, f.name)) for f in dataclasses.fields(value))
    cloned = {name: clone_value(v, depth) for name, v in attributes.items()}
    if all(cloned[name] is attributes[name] for name in attributes):
        return value  # holds no array: shared, as before
    try:
        copied = copy.copy(value)
        for name, v in cloned.items():
            object.__setattr__(copied, name, v)
    except Exception:
        return value
    return copied


class CloneInputGenerator:
    """InputGenerator that clones the reference inputs verbatim.

    Every candidate gets its own copy, so one that writes into its inputs (an in-place
    saxpy) corrupts neither the caller's arrays nor the next candidate's inputs.
    """

    def __call__(self, key: Any, inputs: TuneInputs) -> TuneInputs:
        return tuple(clone_value(v) for v in inputs)


def checksum_of(names: tuple[str, ...]) -> str:
    """Checksum of the candidate names in order: a cache entry tuned for another candidate
    list must not be served, since its winner index would point at another function."""
    return hashlib.sha256("\n".join(names).encode()).hexdigest()[:16]


def takes_one_input(fn: Callable[..., Any]) -> bool:
    """Whether `fn` accepts exactly one positional argument and no more: one positional
    parameter, no `*args`, no other parameter without a default. False where the signature
    cannot be read (some builtins): such a key generator takes the general path."""
    try:
        parameters = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return False
    positional = [p for p in parameters if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    if any(p.kind is p.VAR_POSITIONAL for p in parameters) or len(positional) != 1:
        return False
    required_keywords = [p for p in parameters if p.kind is p.KEYWORD_ONLY and p.default is p.empty]
    return not required_keywords


@dataclass(frozen=True, slots=True)
class TunableSet:
    """A set of candidate functions for one operation, sharing key and input generators."""

    key_gen: KeyGenerator
    input_gen: InputGenerator = field(default_factory=CloneInputGenerator)
    tunables: tuple[Tunable, ...] = ()
    bounds_gen: BoundsGenerator | None = None
    short_circuit: bool | None = None
    """Whether a batch may end early under the time limit; None leaves it to the config."""
    short_circuit_samples: int | None = None
    tuner: str | None = None
    """The name of the `LocalTuner` that serves this set (`LocalTuner.init` sets it): the
    `autotune` fixture writes its cache file under this name, so the winners a library's
    tests tune are the ones its tuner reads at run time."""
    names: tuple[str, ...] = field(init=False)
    fns: tuple[TuneFn, ...] = field(init=False)
    checksum: str = field(init=False)
    unary: bool = field(init=False, repr=False, compare=False)
    """Whether the key generator takes exactly one input (`takes_one_input`): the cache
    hit path of `LocalTuner.execute` then unpacks it without a length test."""

    def __post_init__(self) -> None:
        names = tuple(t.name for t in self.tunables)
        duplicates = sorted({n for n in names if names.count(n) > 1})
        if duplicates:
            raise ValueError(f"TunableSet: candidate names must be unique, repeated: {duplicates}")
        object.__setattr__(self, "names", names)
        object.__setattr__(self, "fns", tuple(t.fn for t in self.tunables))
        object.__setattr__(self, "checksum", checksum_of(names))
        object.__setattr__(self, "unary", takes_one_input(self.key_gen))

    def with_(self, tunable: Tunable | tuple[str, TuneFn]) -> TunableSet:
        """This set plus one candidate (a `Tunable`, or a `(name, fn)` pair)."""
        if not isinstance(tunable, Tunable):
            tunable = Tunable(*tunable)
        return replace(self, tunables=(*self.tunables, tunable))

    def with_bounds(self, bounds_gen: BoundsGenerator) -> TunableSet:
        """This set with a bounds generator: `bounds_gen(key, inputs, client) -> Bounds`."""
        return replace(self, bounds_gen=bounds_gen)

    def with_work(
        self, work: Callable[..., Work], thresholds: Thresholds | None = None
    ) -> TunableSet:
        """This set with roofline bounds from a work model `work(*inputs) -> Work`, against
        the peaks the client measured on its device (the common case of `with_bounds`)."""

        def bounds_gen(key: Any, inputs: TuneInputs, client: Client) -> Bounds:
            return roofline(
                work(*inputs), client.peaks(), thresholds, launch_overhead=client.launch_overhead
            )

        return replace(self, bounds_gen=bounds_gen)

    def with_short_circuit(self, enabled: bool | int) -> TunableSet:
        """Turn the short circuit on or off (the seed's `with_short_circuit(bool)`), or give
        the samples under the bounds' time limit that end a batch (`with_short_circuit(3)`).

        `True` keeps the config's `short_circuit_samples`; it never means one sample.
        """
        if isinstance(enabled, bool):
            return replace(self, short_circuit=enabled)
        if not isinstance(enabled, int) or enabled < 1:
            raise ValueError(
                f"with_short_circuit: expected True, False or a number of samples >= 1,"
                f" got {enabled!r}"
            )
        return replace(self, short_circuit=True, short_circuit_samples=enabled)

    def short_circuit_for(self, bench: BenchConfig) -> int | None:
        """The samples under the time limit that end a batch, None when it never ends early."""
        enabled = bench.short_circuit if self.short_circuit is None else self.short_circuit
        return (self.short_circuit_samples or bench.short_circuit_samples) if enabled else None

    @classmethod
    def of(cls, key_gen: KeyGenerator, candidates: Mapping[str, TuneFn]) -> TunableSet:
        """A set of ungrouped candidates from a name -> function mapping, in its order."""
        return cls(key_gen, tunables=tuple(Tunable(n, f) for n, f in candidates.items()))

    def bounds(self, key: Any, inputs: TuneInputs, client: Client) -> Bounds | None:
        return self.bounds_gen(key, inputs, client) if self.bounds_gen is not None else None

    def __len__(self) -> int:
        return len(self.tunables)
