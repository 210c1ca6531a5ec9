"""Autotune keys: what identifies a problem, and `anchor` so nearby shapes share one."""

from __future__ import annotations

import contextlib
import dataclasses
import enum
import fractions
import json
import math
import numbers
import os
import warnings
from collections.abc import Callable, Iterator
from contextvars import ContextVar
from typing import Any, ClassVar, TypeVar

from pytest_autotune.tune.errors import ConfigWarning, caller_level
from pytest_autotune.tune.files import MAX_DEPTH, MAX_INT_DIGITS
from pytest_autotune.tune.plain_numbers import RealNumber, finite, real_number
from pytest_autotune.tune.wording import chosen, short_repr

KeyT = TypeVar("KeyT", bound="AutotuneKey")

KeyGenerator = Callable[..., Any]
"""`key_gen(*inputs) -> key`: produces an autotune key from the tuning inputs."""


class AutotuneKey:
    """Base of user key classes; subclass it as a `@dataclass(frozen=True)`.

    A frozen dataclass is hashable and compares by value, which is what the in-memory
    cache needs; this base adds the JSON round trip and the stable serialized form the
    persistent cache is keyed by. Field values must be str, int, float, bool or None, or
    tuples of them: a NumPy number (`np.prod(shape)`) is taken as the Python number it
    equals, and anything else (a dtype) is refused by name: convert it (`str(x.dtype)`).
    """

    __dataclass_fields__: ClassVar[dict[str, Any]]

    def __str__(self) -> str:
        fields = ", ".join(f"{f.name}={getattr(self, f.name)}" for f in _key_fields(type(self)))
        return f"{type(self).__name__}({fields})"

    def to_json(self) -> dict[str, Any]:
        """The fields as `json.dumps` takes them, as the cache file holds the key: a NumPy
        number is the Python number it equals (returned as it was, `json.dumps` refused
        the key of `np.prod(shape)` that the tuner had taken and written)."""
        return {
            f.name: _field(self, f.name, getattr(self, f.name)) for f in _key_fields(type(self))
        }

    @classmethod
    def from_json(cls: type[KeyT], data: dict[str, Any]) -> KeyT:
        """The key `to_json` wrote (a record's or a cache entry's `key`). One of another
        form (a tuple key's list) or lacking a field is refused naming this class: read
        with the wrong class, it failed as "unknown fields [8, 'int8']", or in the
        dataclass's own `__init__`."""
        fields = _key_fields(cls)
        if not isinstance(data, dict):
            raise TypeError(
                f"{cls.__name__}: expected a JSON object of its fields, got"
                f" {type(data).__name__} {short_repr(data)}"
            )
        unknown = set(data) - {f.name for f in fields}
        if unknown:
            raise ValueError(f"{cls.__name__}: unknown fields {sorted(unknown)}")
        missing = [
            f.name
            for f in fields
            if f.init
            and f.name not in data
            and f.default is dataclasses.MISSING
            and f.default_factory is dataclasses.MISSING
        ]
        if missing:
            raise ValueError(f"{cls.__name__}: missing fields {missing}")
        # JSON has no tuple: a tuple field comes back a list, which is neither equal to
        # the key written nor hashable.
        return cls(**{name: _tuples(value) for name, value in data.items()})


def _key_fields(cls: type[AutotuneKey]) -> tuple[dataclasses.Field[Any], ...]:
    """The fields of a key class, which must be a dataclass: a class written without the
    decorator (as the seed's `#[derive(AutotuneKey)]` might suggest) otherwise failed at its
    first lookup in `dataclasses.fields`, naming neither the key nor the fix."""
    __tracebackhide__ = True
    if not dataclasses.is_dataclass(cls):
        raise TypeError(
            f"autotune key class {cls.__name__} is not a dataclass: decorate it with"
            " @dataclass(frozen=True)"
        )
    return dataclasses.fields(cls)


def _tuples(value: Any) -> Any:
    """`value` with every list, at any depth, made the tuple it was written from."""
    return tuple(_tuples(v) for v in value) if isinstance(value, list) else value


def key_to_json(key: Any) -> Any:
    """The JSON value of a key: a dataclass key becomes an object, a tuple a list."""
    return _shallow(key, _part_to_json(key, key))


def _part_to_json(key: Any, whole: Any) -> Any:
    """The JSON value of `key`, a part of the key `whole` or all of it (named in messages)."""
    if isinstance(key, AutotuneKey):
        return {name: _field(key, name, value) for name, value in key.to_json().items()}
    if isinstance(key, tuple):
        return [_part_to_json(k, whole) for k in key]
    # A subclass of int, str or float (an IntEnum, np.str_, np.float64) is written as the
    # plain value its JSON reads as: kept as it was, it went into the records, which
    # pytest-xdist's workers could not hand back ("can't serialize numpy.float64").
    if isinstance(key, int):
        return _storable(whole, _plain(key))
    if isinstance(key, str) or key is None:
        return _plain(key)
    if isinstance(key, float):
        return _finite(whole, float(key))
    # A NumPy number (`np.prod(x.shape)`) is written as the Python number it equals and
    # hashes as, so the file's key read back finds the same entry.
    plain = _plain_scalar(key)
    if plain is not None:
        return _finite(whole, plain)
    if dataclasses.is_dataclass(key) and not isinstance(key, type):
        # `@dataclass(frozen=True) class Key:` is hashable, and the tuner took it, but the
        # cache file cannot read a plain dataclass back: the base is what it lacks.
        name = type(key).__name__
        raise TypeError(
            f"autotune key {short_repr(whole)}: {name} is a dataclass but not an AutotuneKey;"
            f" derive it from AutotuneKey (class {name}(AutotuneKey)), which gives the cache"
            " file its JSON round trip"
        )
    if whole is key:
        raise TypeError(
            f"autotune key {short_repr(key)} of type {type(key).__name__}"
            " is not an AutotuneKey, str, int or tuple; convert it, as str(x.dtype) or"
            " tuple(x.shape) do"
        )
    # A part of a tuple key (`(x.shape, x.dtype)`): the key the user wrote is named, as the
    # part alone read as the whole key, and the usual conversions with it.
    raise TypeError(
        f"autotune key {short_repr(whole)} holds {short_repr(key)} of type"
        f" {type(key).__name__}, which is not"
        " an AutotuneKey, str, int or tuple; convert it, as str(x.dtype) or tuple(x.shape) do"
    )


_FIELD_TYPES = (str, int, float, bool, type(None))


def _field(key: AutotuneKey, name: str, value: Any) -> Any:
    """A field's JSON value: a NumPy number as the Python number it is (as a bare key's),
    also inside a tuple or list. Anything else (a dtype, `x.dtype`, is the usual one) would
    fail deep in `json.dumps` with no word of the key: it is named here with the
    conversion that fixes it."""
    if isinstance(value, (tuple, list)):
        return type(value)(_field(key, name, item) for item in value)
    if isinstance(value, int):
        return _storable(key, _plain(value))
    if isinstance(value, _FIELD_TYPES):
        return _finite(key, float(value)) if isinstance(value, float) else _plain(value)
    plain = _plain_scalar(value)
    if plain is None:
        # An enum member is no dtype: "as str(dtype)" sent its user looking for one.
        how = (
            f"store its .name ({value.name!r}) or .value"
            if isinstance(value, enum.Enum)
            else "convert it, as str(dtype)"
        )
        raise TypeError(
            f"autotune key {key}: field {name!r} holds {value!r} of type"
            f" {type(value).__name__}; a key field must be a str, int, float, bool or"
            f" None (or a tuple of them): {how}"
        )
    return _finite(key, plain)


def _plain(value: Any) -> Any:
    """An int or a str of a subclass (an IntEnum member, np.str_) as the plain one its
    JSON reads as; a bool, None, or a plain value as it is."""
    if type(value) is bool or value is None:
        return value
    return int(value) if isinstance(value, int) else str.__str__(value)


def _plain_scalar(value: Any) -> int | float | bool | None:
    """A NumPy scalar as the Python number or bool it equals and hashes as, else None.
    `np.all(x > 0)` is an `np.bool_`, no `bool`: it was refused as a key "of type bool"
    that is no bool, a message that contradicts itself."""
    dtype = getattr(value, "dtype", None)
    if getattr(dtype, "kind", None) == "b" and getattr(value, "ndim", None) == 0:
        return bool(value)
    return real_number(value)


def _finite(key: Any, value: Any) -> Any:
    """`value`, a number of `key`, where it is finite. NaN equals nothing, itself included,
    so a NaN key is never found again and was tuned at every call; neither it nor an
    infinity can be written to a cache file (strict JSON), where the decision was lost with
    a message about float values that named no key."""
    if isinstance(value, float) and not math.isfinite(value):
        what = "is" if isinstance(key, float) else f"holds {value!r}, which is"
        raise ValueError(
            f"autotune key {key!r} {what} not finite, and a key must be: NaN equals"
            " nothing, itself included, so it is never found again, and no cache file"
            " holds NaN or an infinity; make the key of what the inputs are, such as their"
            " shape or size"
        )
    return value


def _storable(key: Any, value: int) -> int:
    """`value`, an int of `key`, where a cache file can hold it: a reader takes integers of
    at most `MAX_INT_DIGITS` digits (more is a damaged file). A key of a digest as an int
    (SHA-1: 48 digits) was written, and every later process then read the file as damaged,
    went on without a cache, and never saved to it again."""
    if abs(value) >= _INT_LIMIT:
        # Past 4300 digits Python prints no int (`sys.set_int_max_str_digits`): the digits
        # are counted from the bits, and such a key is not printed.
        digits = len(str(abs(value))) if value.bit_length() < 14000 else None
        what = "is" if key is value else "holds"
        shown = f" {key!r}" if digits is not None else ""
        size = f"of {digits} digits" if digits is not None else "of over 4000 digits"
        raise ValueError(
            f"autotune key{shown} {what} an integer {size}, and a cache file"
            f" holds at most {MAX_INT_DIGITS}: make that part of the key a str, str() of it"
            " or a hex digest"
        )
    return value


_INT_LIMIT = 10**MAX_INT_DIGITS

_KEY_DEPTH = MAX_DEPTH - 3
"""The deepest a key's JSON value may nest: a cache file holds it three levels down (the
document, its entries, the entry), and a reader refuses a file nested past `MAX_DEPTH`."""


def _shallow(key: Any, value: Any) -> Any:
    """`value`, the JSON of `key`, where a cache file can hold it. A key of tuples nested
    past `_KEY_DEPTH` was written, and every later process read the whole file as nested
    too deep, went on without any of its entries, and never saved to it again."""
    stack = [(value, 1)]
    while stack:
        part, depth = stack.pop()
        if depth > _KEY_DEPTH:
            raise ValueError(
                f"autotune key {short_repr(key)} nests deeper than {_KEY_DEPTH} levels, and a"
                " cache file holds no deeper key: flatten it"
            )
        if isinstance(part, (list, dict)):
            stack.extend(
                (item, depth + 1) for item in (part.values() if isinstance(part, dict) else part)
            )
    return value


def stable_key(key: Any) -> str:
    """The serialized form that identifies a key in a cache file, the same in every process."""
    return serialize_key_json(key_to_json(key))


def serialize_key_json(value: Any) -> str:
    """The stable form of a key's JSON value (`key_to_json`'s, or a cache file's)."""
    return json.dumps(_whole_numbers(value), sort_keys=True, separators=(",", ":"))


def _whole_numbers(value: Any) -> Any:
    """`value` with every float that is a whole number, and every bool, at any depth, made
    the int it equals.

    `1.0` and `np.float32(1.0)` equal and hash as `1` in Python, so the in-memory cache
    already serves one tuning to all three; their stored forms (`1.0`, `1`) differed, and a
    file written with one was a miss, tuned again, for the other. The seed prints a key's
    numbers the same way (`1.0_f32` displays as `1`). A bool is the same case: `True == 1`
    with one hash, so memory serves a key of `x.flags.c_contiguous` and one of `int(...)`
    one tuning, and the file must too (it found `true` only for `True`, and the next
    process tuned `1` again). Only the identity changes: the file still writes the key
    as given, `true` as in the seed. Applied to a file's keys as well, so an entry written
    as `1.0` or `true` before is found by `1`.
    """
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, (list, tuple)):
        return [_whole_numbers(item) for item in value]
    if isinstance(value, dict):
        return {name: _whole_numbers(item) for name, item in value.items()}
    return value


class AutotuneLevel(enum.Enum):
    """How hard to tune: the coarser the anchoring, the fewer distinct keys get tuned."""

    MINIMAL = "minimal"
    BALANCED = "balanced"
    EXTENSIVE = "extensive"
    FULL = "full"

    @classmethod
    def parse(cls, value: str, source: str) -> AutotuneLevel:
        return chosen(cls, value, source, "autotune level")


_level: AutotuneLevel | None = None
"""The process's level (`set_autotune_level`, else the environment's, read on first use)."""

_scoped: ContextVar[AutotuneLevel | None] = ContextVar("autotune_level", default=None)
"""The level of the innermost `autotune_level_scope` of this thread or task, None outside."""


def autotune_level() -> AutotuneLevel:
    """The level `anchor` uses: the innermost `autotune_level_scope`'s, else the process's
    (`set_autotune_level`, else `PYTEST_AUTOTUNE_LEVEL`, else balanced)."""
    return _scoped.get() or _level or _environment_level()


def _environment_level() -> AutotuneLevel:
    """`PYTEST_AUTOTUNE_LEVEL`'s level, else balanced; a value that names no level is left
    out with a `ConfigWarning`, once, as a library's tuner leaves out a variable it cannot
    read (`LocalTuner.config`): every `anchor` of every call of the library failed on it.
    (A pytest run refuses it at its start.)"""
    global _level  # noqa: PLW0603 - a process-wide setting, like the seed's global level
    raw = os.environ.get("PYTEST_AUTOTUNE_LEVEL")
    try:
        level = AutotuneLevel.parse(raw, "PYTEST_AUTOTUNE_LEVEL") if raw else None
    except ValueError as error:
        warnings.warn(
            ConfigWarning(f"{error}; left out, keys are anchored at the balanced level"),
            stacklevel=caller_level(),
        )
        level = None
    _level = level or AutotuneLevel.BALANCED
    return _level


def _named_level(level: AutotuneLevel | str | None, where: str) -> AutotuneLevel | None:
    """A level or its name ("full"), as the marker and `PYTEST_AUTOTUNE_LEVEL` take it,
    parsed where it is given: a name kept as it was failed in a later `anchor`, as a
    KeyError far from the call that set it."""
    if isinstance(level, str):
        return AutotuneLevel.parse(level, where)
    if level is not None and not isinstance(level, AutotuneLevel):
        # A number (5) was kept, and failed as `KeyError: 5` in a later `anchor`.
        choices = ", ".join(repr(choice.value) for choice in AutotuneLevel)
        raise TypeError(
            f"{where}: expected an AutotuneLevel or its name ({choices}), got {level!r}"
        )
    return level


def set_autotune_level(level: AutotuneLevel | str | None) -> None:
    """Set the level of this process (an `AutotuneLevel` or its name); None goes back to
    the environment's. A scope (`autotune_level_scope`) still wins inside it."""
    global _level  # noqa: PLW0603 - a process-wide setting, like the seed's global level
    _level = _named_level(level, "set_autotune_level")


@contextlib.contextmanager
def autotune_level_scope(level: AutotuneLevel | str | None) -> Iterator[None]:
    """`anchor` uses `level` (an `AutotuneLevel` or its name) inside the block, in this
    thread or task only, and whatever it used before after it; None leaves the level as it
    is.

    The plugin makes each group's keys and tunes it under the group's level (its marker's,
    else the session's), so one group's `level=` reaches its key function and nothing
    outside it. A library's `LocalTuner` makes its key on every call, where a scope would
    cost its hot path, so it sets none: its keys use the process's level, or the scope
    its caller opens.
    """
    token = _scoped.set(_named_level(level, "autotune_level_scope") or _scoped.get())
    try:
        yield
    finally:
        _scoped.reset(token)


_MIN_BASE = 1.1
"""The seed's floor of a scaled base: extensive scales a base of 1.3 to 0.975, which has no
powers above 1 to round to; the level is a setting of the process, not of the caller."""

_LEVEL_BASE_FACTOR = {
    AutotuneLevel.MINIMAL: 1.25,
    AutotuneLevel.BALANCED: 1.0,
    AutotuneLevel.EXTENSIVE: 0.75,
}


def anchor(
    x: RealNumber,
    max: int | None = None,
    min: int | None = None,
    base: float | None = None,
    level: AutotuneLevel | str | None = None,
) -> int:
    """Anchor a number to a power of the base (2 by default), rounding up.

    Nearby shapes then share a key, so one tuning serves them all. The level (`level`, an
    `AutotuneLevel` or its name, else `autotune_level()`) scales the base: minimal
    anchors coarser (1.25x base), extensive finer (0.75x base), full not at all; a scaled
    base is never below 1.1, as in the seed, so a base that works at one level works at
    all of them. Zero stays zero (an empty dimension keeps a key of its own, as in the
    seed). The result is clamped to `[min, max]`.
    """
    if type(x) is int:  # the hot path: the int a shape gives
        if x < 0:
            _check_size(x)
    elif type(x) is not float or not 0 <= x < math.inf:  # NaN fails the comparison
        _check_size(x)
    # `autotune_level()` inlined: a key generator may call this on every dispatch.
    if level is not None and type(level) is not AutotuneLevel:  # a name, as elsewhere
        level = _named_level(level, "anchor")
    level = level or _scoped.get() or _level or _environment_level()
    b = _scaled_base(base, level)
    if b is None:
        result = x if type(x) is int else _rounded_up(x)
    elif x <= 1:
        result = 0 if x <= 0 else 1
    elif b == 2.0 and isinstance(x, int):  # the default base: a bit length, 60 ns
        result = 1 << (x - 1).bit_length()
    elif b.is_integer():
        result = _whole_power_at_least(x, int(b))
    else:
        result = _float_power_at_least(x, b)
    if (max is not None and (type(max) is not int or max < 0)) or (
        min is not None and (type(min) is not int or min < 0)
    ):
        _check_limits(max, min)
    if max is not None and result > max:
        result = max
    if min is not None and result < min:
        result = min
    return int(result)


def _check_limits(upper: object, lower: object) -> None:
    """Refuse a `max` or `min` that is no size: a string failed in a comparison (`'>' not
    supported`), NaN clamped nothing, a bool was 1 and a negative max gave a negative key.
    A NumPy integer is the size it is."""
    __tracebackhide__ = True
    for name, limit in (("max", upper), ("min", lower)):
        number = real_number(limit)
        if limit is not None and (number is None or not number >= 0 or not finite(number)):
            raise ValueError(f"anchor: {name} must be a size (a whole number >= 0), got {limit!r}")


def _rounded_up(x: RealNumber) -> int:
    """A size that is not a Python int, rounded up, as at every level: never below it. A
    NumPy integer is taken whole: `math.ceil` goes through a float, and moved
    np.int64(2**62 + 1) to 2**62, below it, at the level that anchors nothing."""
    return int(x) if isinstance(x, numbers.Integral) else math.ceil(x)


def _float_power_at_least(x: RealNumber, b: float) -> int:
    """The least whole number at or above the first power of a fractional base `b` at or
    above `x`."""
    try:
        exponent = math.ceil(math.log(x, b) - 1e-12)
        result = math.ceil(b**exponent - 1e-9)
        # Guard float rounding: the anchor is never below x.
        while result < x:
            exponent += 1
            result = math.ceil(b**exponent - 1e-9)
    except OverflowError:  # a power past the largest float: exact, and rare
        return _exact_power_at_least(x, b)
    return result


def _exact_power_at_least(x: RealNumber, b: float) -> int:
    """The least whole number at or above the first power of `b` at or above `x`, in exact
    arithmetic: the float path's `b**n` overflows past 1.8e308 where a Python int does not
    (a size of 10**400 still anchors, as it does with an integer base)."""
    exact = fractions.Fraction(b)
    exponent = max(1, math.floor(math.log(x, b)) - 1)  # at or below the answer
    power = exact**exponent
    while power < x:
        power *= exact
    return math.ceil(power)


def _scaled_base(base: float | None, level: AutotuneLevel) -> float | None:
    """The base `anchor` rounds to at `level`, never below `_MIN_BASE`; None at FULL,
    which does not anchor."""
    if base is not None and (type(base) not in (int, float) or not 1 < base < math.inf):
        number = real_number(base)
        if number is None or not 1 < number < math.inf:
            # A string failed in the comparison, infinity deep in `fractions`.
            raise ValueError(f"anchor base must be above 1, got {base!r} (a finite number)")
    if level is AutotuneLevel.FULL:
        return None
    b = (2.0 if base is None else float(base)) * _LEVEL_BASE_FACTOR[level]
    return b if b >= _MIN_BASE else _MIN_BASE


def _check_size(x: object) -> None:
    """Refuse what `anchor` cannot anchor, in one line: NaN, infinity, a negative size or
    a string failed deep in the arithmetic (`cannot convert float NaN to integer`), and a
    negative size anchored to 0 without a word. A NumPy integer or float is a size."""
    if type(x) is not float and (isinstance(x, bool) or not isinstance(x, numbers.Real)):
        raise TypeError(f"anchor: expected a size (a number >= 0), got {x!r}")
    if x < 0 or not math.isfinite(x):  # NaN is not below 0; a huge int is finite
        raise ValueError(f"anchor: expected a finite size >= 0, got {x!r}")


def _whole_power_at_least(x: RealNumber, base: int) -> int:
    """The least power of a whole `base` not below `x`, in integers: a float power is not a
    power of the base past 2**53 (3**35 anchored to 1.5e17, above 3**36), and past 1e308
    it overflows. The logarithm only gives the first guess."""
    result: int = base ** max(0, math.ceil(math.log(x, base) - 1e-12))
    while result < x:
        result *= base
    while result // base >= x:
        result //= base
    return result
