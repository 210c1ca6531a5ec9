"""`TunableSet`: the candidates of one operation with their key, input and bounds generators."""

from __future__ import annotations

import hashlib
import inspect
import operator
from collections.abc import Callable, Iterable, Mapping
from dataclasses import FrozenInstanceError, dataclass, field, replace
from typing import TYPE_CHECKING, Any, Generic, Protocol, SupportsIndex

from pytest_autotune.tune.bounds import Bounds, BoundsGenerator, Thresholds, Work, roofline
from pytest_autotune.tune.client import Client
from pytest_autotune.tune.client_calls import client_peaks
from pytest_autotune.tune.clone import clone_value
from pytest_autotune.tune.config import BenchConfig
from pytest_autotune.tune.key import KeyGenerator
from pytest_autotune.tune.tunable import Tunable, TuneFn, check_callable

# What a set's candidates return, `TunableSet[np.float32]`, so that `LocalTuner.execute`,
# `bind` and the `autotune` fixture return it (Any lost it). Covariant, as a set is immutable:
# a `TunableSet[np.float32]` is a `TunableSet[np.floating[Any]]`. Its default (PEP 696, in
# `typing` from Python 3.13 only) is Any: a set annotated bare, `def make_set() ->
# TunableSet`, as the README writes it, stays as it was, where a type parameter without one
# failed `mypy --strict` ("Missing type parameters for generic type").
if TYPE_CHECKING:
    from typing_extensions import TypeVar

    OutputT = TypeVar("OutputT", covariant=True, default=Any)
else:
    from typing import TypeVar

    OutputT = TypeVar("OutputT", covariant=True)

ReturnT = TypeVar("ReturnT")
"""What the candidates of a set given to a function return (`TunableSet.of`, `execute`)."""

TuneInputs = tuple[Any, ...]
"""The inputs a set's candidates are called with, as `fn(*inputs)`."""


class InputGenerator(Protocol):
    """Produces the benchmark inputs for a given key and reference inputs.

    Called positionally, `input_gen(key, inputs)`: its parameters may have any names
    (`def gen(k, args)`), which a protocol naming them would refuse under a type checker."""

    def __call__(self, key: Any, inputs: TuneInputs, /) -> TuneInputs: ...


class CloneInputGenerator:
    """InputGenerator that clones the reference inputs verbatim.

    Every candidate gets its own copy, so one that writes into its inputs (an in-place
    saxpy) corrupts neither the caller's arrays nor the next candidate's inputs.
    """

    def __call__(self, key: Any, inputs: TuneInputs) -> TuneInputs:
        cloned: tuple[Any, ...] = clone_value(tuple(inputs))
        return cloned

    def __repr__(self) -> str:
        return "CloneInputGenerator()"


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


class NotATuple(TypeError):
    """An input generator's return that is not a tuple (or list) of the candidates' arguments."""


def _check_arity(generator: Callable[..., Any], what: str, call: str, arity: int) -> None:
    """Refuse a generator that cannot be called as `call`: an input generator written as
    `lambda inputs: ...` failed at every candidate's first call instead, each recorded as
    that candidate's error, and the key remembered as one no candidate can run; a bounds
    generator ported from the seed without the client failed inside the tuner. A signature
    that cannot be read (some builtins) is taken on trust."""
    __tracebackhide__ = True
    try:
        signature = inspect.signature(generator)
    except (TypeError, ValueError):
        return
    try:
        signature.bind(*([None] * arity))
    except TypeError as exc:
        raise TypeError(
            f"TunableSet: the {what} is called as {call}, the inputs a tuple;"
            f" the function given cannot be ({exc})"
        ) from None


def _as_tunable(tunable: object) -> object:
    """A `(name, fn)` pair as the `Tunable` it names; anything else as it is."""
    if isinstance(tunable, tuple) and len(tunable) == 2:
        return Tunable(*tunable)
    return tunable


def _check_tunable(tunable: object) -> Tunable:
    __tracebackhide__ = True
    if not isinstance(tunable, Tunable):
        raise TypeError(
            "TunableSet: a candidate must be a Tunable(name, fn) or a (name, fn) pair,"
            f" got {type(tunable).__name__}"
        )
    return tunable


@dataclass(frozen=True, slots=True)
class TunableSet(Generic[OutputT]):
    """A set of candidate functions for one operation, sharing key and input generators.

    Its type parameter is what the candidates return: `TunableSet.of` infers it from the
    functions, and a set built otherwise takes it from its annotation (`def make_set() ->
    TunableSet[np.float32]`); without either it is Any, as an untyped call's return is."""

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
    work: Callable[..., Work] | None = field(default=None, compare=False, repr=False)
    """The work model `with_work` built the bounds from, None otherwise: the `autotune`
    fixture's roof column reads it where the test gives no `work=`."""
    names: tuple[str, ...] = field(init=False)
    fns: tuple[Callable[..., OutputT], ...] = field(init=False, repr=False)
    """The candidates' functions, in order (the hit path's lookup); left out of the repr,
    which names each in `tunables` already."""
    checksum: str = field(init=False)
    unary: bool = field(init=False, repr=False, compare=False)
    """Whether the key generator takes exactly one input (`takes_one_input`): the cache
    hit path of `LocalTuner.execute` then unpacks it without a length test."""

    if TYPE_CHECKING:
        # What it is built from, wider than what it holds: candidates as any iterable of
        # `Tunable`s and `(name, fn)` pairs (held as a tuple of `Tunable`s), and the seed's
        # `CloneInputGenerator` class for its one value, as `__post_init__` takes them.

        def __init__(
            self,
            key_gen: KeyGenerator,
            input_gen: InputGenerator | type[CloneInputGenerator] = ...,
            tunables: Iterable[Tunable | tuple[str, TuneFn]] = (),
            bounds_gen: BoundsGenerator | None = None,
            short_circuit: bool | None = None,
            short_circuit_samples: int | None = None,
            tuner: str | None = None,
            work: Callable[..., Work] | None = None,
        ) -> None: ...

    def __post_init__(self) -> None:
        __tracebackhide__ = True  # pytest shows the user's line that built it, not this one
        # Set before anything can raise: pytest shows `self` in the traceback of a set that
        # failed its checks, and its repr read `names` ("<[AttributeError(...) raised in
        # repr()] TunableSet object>").
        for name, empty in (("names", ()), ("fns", ()), ("checksum", ""), ("unary", False)):
            object.__setattr__(self, name, empty)
        check_callable("TunableSet: key generator", self.key_gen)
        if isinstance(self.input_gen, type) and issubclass(self.input_gen, CloneInputGenerator):
            # The seed's `TunableSet::new(key_gen, CloneInputGenerator)` passes the unit
            # struct, its one value; ported as written, the class itself was refused as an
            # input generator that "cannot be called as input_gen(key, inputs)".
            object.__setattr__(self, "input_gen", self.input_gen())
        check_callable("TunableSet: input generator", self.input_gen)
        _check_arity(self.input_gen, "input generator", "input_gen(key, inputs)", 2)
        if self.bounds_gen is not None:
            check_callable("TunableSet: bounds generator", self.bounds_gen)
            _check_arity(self.bounds_gen, "bounds generator", "bounds_gen(key, inputs, client)", 3)
        if isinstance(self.tunables, Tunable) or not isinstance(self.tunables, Iterable):
            # `tunables=Tunable(...)` or None failed as "'Tunable' object is not iterable".
            raise TypeError(
                f"TunableSet: tunables must be a list of Tunable (or (name, fn) pairs), got"
                f" {type(self.tunables).__name__}; TunableSet.of(key_gen, {{name: fn}})"
                " builds one from a dict"
            )
        # A list is taken as the tuple it means: the set stays immutable and hashable. A
        # `(name, fn)` pair is a candidate here as in `with_` (refused, the error said it was).
        object.__setattr__(self, "tunables", tuple(_as_tunable(t) for t in self.tunables))
        for tunable in self.tunables:
            _check_tunable(tunable)
        names = tuple(t.name for t in self.tunables)
        duplicates = sorted({n for n in names if names.count(n) > 1})
        if duplicates:
            raise ValueError(f"TunableSet: candidate names must be unique, repeated: {duplicates}")
        object.__setattr__(self, "names", names)
        object.__setattr__(self, "fns", tuple(t.fn for t in self.tunables))
        object.__setattr__(self, "checksum", checksum_of(names))
        object.__setattr__(self, "unary", takes_one_input(self.key_gen))

    def with_(self, tunable: Tunable | tuple[str, TuneFn]) -> TunableSet[OutputT]:
        """This set plus one candidate (a `Tunable`, or a `(name, fn)` pair)."""
        __tracebackhide__ = True
        return replace(self, tunables=(*self.tunables, _check_tunable(_as_tunable(tunable))))

    def with_bounds(self, bounds_gen: BoundsGenerator) -> TunableSet[OutputT]:
        """This set with a bounds generator: `bounds_gen(key, inputs, client) -> Bounds`."""
        return replace(self, bounds_gen=bounds_gen, work=None)

    def with_work(
        self, work: Callable[..., Work], thresholds: Thresholds | None = None
    ) -> TunableSet[OutputT]:
        """This set with roofline bounds from a work model `work(*inputs) -> Work`, against
        the peaks the client measured on its device (the common case of `with_bounds`)."""
        __tracebackhide__ = True
        # Refused here, not in the first tuning: a `Work(...)` given for the model failed
        # there as "'Work' object is not callable", a fraction given for the thresholds as
        # "'float' object has no attribute 'compute'".
        if isinstance(work, Work):
            raise TypeError(
                f"with_work: work is a function of the inputs returning a Work, got the"
                f" Work {work!r}; pass `lambda x: Work(...)`"
            )
        check_callable("with_work: work", work)
        if thresholds is not None and not isinstance(thresholds, Thresholds):
            raise TypeError(
                f"with_work: thresholds must be Thresholds(compute, memory) or None, got"
                f" {type(thresholds).__name__} {thresholds!r}"
                " (Thresholds.uniform(f) for one fraction of both roofs)"
            )

        def bounds_gen(key: Any, inputs: TuneInputs, client: Client) -> Bounds:
            # A model ported from the seed's bounds generator, `lambda key, inputs: ...`,
            # raised "missing 1 required positional argument" from the call below, naming
            # neither the work model nor how it is called.
            _check_arity(work, "work model", "work(*inputs)", len(inputs))
            needed = work(*inputs)
            if not isinstance(needed, Work):
                # A model returning `(ops, bytes)` failed inside the roofline, on an
                # attribute of a tuple, naming neither the work model nor the key.
                raise TypeError(
                    f"the work model of key {key!r} returned {type(needed).__name__}"
                    f" {needed!r}, not a Work(compute_ops, bytes)"
                )
            return roofline(
                needed, client_peaks(client), thresholds, launch_overhead=client.launch_overhead
            )

        return replace(self, bounds_gen=bounds_gen, work=work)

    def with_short_circuit(self, enabled: bool | SupportsIndex) -> TunableSet[OutputT]:
        """Turn the short circuit on or off (the seed's `with_short_circuit(bool)`), or give
        the samples under the bounds' time limit that end a batch (`with_short_circuit(3)`).

        `True` is the config's `short_circuit_samples`, whatever number an earlier call gave;
        it never means one sample.
        """
        if isinstance(enabled, bool):
            return replace(self, short_circuit=enabled, short_circuit_samples=None)
        try:  # any integer, a NumPy one among them (`np.int64(3)` read as no number)
            samples = operator.index(enabled)
        except TypeError:
            samples = 0
        if samples < 1:
            raise ValueError(
                f"with_short_circuit: expected True, False or a number of samples >= 1,"
                f" got {enabled!r}"
            )
        return replace(self, short_circuit=True, short_circuit_samples=samples)

    def short_circuit_for(self, bench: BenchConfig) -> int | None:
        """The samples under the time limit that end a batch, None when it never ends early.

        The config's `short_circuit: false` wins over the set, as the seed's
        `disable_short_circuit` does: it is how a run asks for every candidate measured,
        whatever the library's sets say; the set can only turn it off for itself."""
        enabled = bench.short_circuit and self.short_circuit is not False
        return (self.short_circuit_samples or bench.short_circuit_samples) if enabled else None

    @classmethod
    def of(
        cls: type[TunableSet[Any]],
        key_gen: KeyGenerator,
        candidates: Mapping[str, Callable[..., ReturnT]],
    ) -> TunableSet[ReturnT]:
        """A set of ungrouped candidates from a name -> function mapping, in its order.

        The set's type is what the functions return (`TunableSet[np.float32]`), so
        `execute` and `bind` return it; functions of other parameter names are one set."""
        __tracebackhide__ = True
        if not isinstance(candidates, Mapping):
            raise TypeError(
                "TunableSet.of: candidates must be a mapping of name -> function,"
                f" got {type(candidates).__name__}"
            )
        return cls(key_gen, tunables=tuple(Tunable(n, f) for n, f in candidates.items()))

    def generate_inputs(self, key: Any, inputs: TuneInputs) -> TuneInputs:
        """The inputs a candidate is called with: `input_gen(key, inputs)`, which must
        return a tuple (or list) of arguments. An input generator ported as returning its
        one input bare would have every candidate called with the array's rows as arguments,
        each failing with its own unrelated message."""
        generated = self.input_gen(key, inputs)
        if not isinstance(generated, (tuple, list)):
            raise NotATuple(
                f"the input generator returned {type(generated).__name__}, not a tuple of the"
                " candidates' arguments; return (x,) for one input"
            )
        return tuple(generated)

    def bounds(self, key: Any, inputs: TuneInputs, client: Client) -> Bounds | None:
        """The bounds of `key` on its inputs, None without a bounds generator (or where it
        gives none). What is neither failed in the tuner, on an attribute of its own."""
        if self.bounds_gen is None:
            return None
        bounds = self.bounds_gen(key, inputs, client)
        if bounds is not None and not isinstance(bounds, Bounds):
            raise TypeError(
                f"the bounds generator of key {key!r} returned {type(bounds).__name__}"
                f" {bounds!r}, not Bounds or None (calculate_bounds or roofline builds them)"
            )
        return bounds

    def __len__(self) -> int:
        return len(self.tunables)


def _refuse_assignment(self: TunableSet[Any], name: str, value: object) -> None:
    raise FrozenInstanceError(f"cannot assign to field {name!r}")


# `TunableSet[np.float32](key_gen)` sets `__orig_class__` on the new set, and `typing` lets
# only an AttributeError of that pass before Python 3.13; the frozen, slotted dataclass's
# own `__setattr__` answers a name not a field with a TypeError ("super(type, obj): obj must
# be an instance or subtype of type": its `super(cls, self)` names the class before slots
# were added), so the call failed on 3.10 to 3.12. Every name refused as a field is.
TunableSet.__setattr__ = _refuse_assignment  # type: ignore[method-assign,assignment]
