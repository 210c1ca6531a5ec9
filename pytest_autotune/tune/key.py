"""Autotune keys: what identifies a problem, and `anchor` so nearby shapes share one."""

from __future__ import annotations

import contextlib
import dataclasses
import enum
import json
import math
import os
from collections.abc import Callable, Iterator
from contextvars import ContextVar
from typing import Any, ClassVar, TypeVar, Union

KeyT = TypeVar("KeyT", bound="AutotuneKey")

Key = Union["AutotuneKey", str, int, tuple[Any, ...]]
"""What a key generator may return: an `AutotuneKey` dataclass, or a str, int or tuple of them."""

KeyGenerator = Callable[..., Any]
"""`key_gen(*inputs) -> key`: produces an autotune key from the tuning inputs."""


class AutotuneKey:
    """Base of user key classes; subclass it as a `@dataclass(frozen=True)`.

    A frozen dataclass is hashable and compares by value, which is what the in-memory
    cache needs; this base adds the JSON round trip and the stable serialized form the
    persistent cache is keyed by. Field values must be str, int, float, bool or None.
    """

    __dataclass_fields__: ClassVar[dict[str, Any]]

    def __str__(self) -> str:
        fields = ", ".join(f"{f.name}={getattr(self, f.name)}" for f in dataclasses.fields(self))
        return f"{type(self).__name__}({fields})"

    def to_json(self) -> dict[str, Any]:
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}

    @classmethod
    def from_json(cls: type[KeyT], data: dict[str, Any]) -> KeyT:
        names = {f.name for f in dataclasses.fields(cls)}
        unknown = set(data) - names
        if unknown:
            raise ValueError(f"{cls.__name__}: unknown fields {sorted(unknown)}")
        return cls(**data)


def key_to_json(key: Any) -> Any:
    """The JSON value of a key: a dataclass key becomes an object, a tuple a list."""
    if isinstance(key, AutotuneKey):
        return key.to_json()
    if isinstance(key, tuple):
        return [key_to_json(k) for k in key]
    if isinstance(key, (str, int, float, bool)) or key is None:
        return key
    raise TypeError(
        f"autotune key {key!r} of type {type(key).__name__}"
        " is not an AutotuneKey, str, int or tuple"
    )


def stable_key(key: Any) -> str:
    """The serialized form that identifies a key in a cache file, the same in every process."""
    return serialize_key_json(key_to_json(key))


def serialize_key_json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


class AutotuneLevel(enum.Enum):
    """How hard to tune: the coarser the anchoring, the fewer distinct keys get tuned."""

    MINIMAL = "minimal"
    BALANCED = "balanced"
    EXTENSIVE = "extensive"
    FULL = "full"

    @classmethod
    def parse(cls, value: str, source: str) -> AutotuneLevel:
        try:
            return cls(value.strip().lower())
        except ValueError:
            choices = ", ".join(level.value for level in cls)
            raise ValueError(
                f"{source}: autotune level must be one of {choices}, got {value!r}"
            ) from None


_level: AutotuneLevel | None = None
"""The process's level (`set_autotune_level`, else the environment's, read on first use)."""

_scoped: ContextVar[AutotuneLevel | None] = ContextVar("autotune_level", default=None)
"""The level of the innermost `autotune_level_scope` of this thread or task, None outside."""


def autotune_level() -> AutotuneLevel:
    """The level `anchor` uses: the innermost `autotune_level_scope`'s, else the process's
    (`set_autotune_level`, else `PYTEST_AUTOTUNE_LEVEL`, else balanced)."""
    return _scoped.get() or _level or _environment_level()


def _environment_level() -> AutotuneLevel:
    global _level  # noqa: PLW0603 - a process-wide setting, like the seed's global level
    raw = os.environ.get("PYTEST_AUTOTUNE_LEVEL")
    _level = AutotuneLevel.parse(raw, "PYTEST_AUTOTUNE_LEVEL") if raw else AutotuneLevel.BALANCED
    return _level


def set_autotune_level(level: AutotuneLevel | None) -> None:
    """Set the level of this process; None goes back to the environment's. A scope
    (`autotune_level_scope`) still wins inside it."""
    global _level  # noqa: PLW0603 - a process-wide setting, like the seed's global level
    _level = level


@contextlib.contextmanager
def autotune_level_scope(level: AutotuneLevel | None) -> Iterator[None]:
    """`anchor` uses `level` inside the block, in this thread or task only, and whatever it
    used before after it; None leaves the level as it is.

    The plugin makes each group's keys and tunes it under the group's level (its marker's,
    else the session's), so one group's `level=` reaches its key function and nothing
    outside it. A library's `LocalTuner` makes its key on every call, where a scope would
    cost its hot path, so it sets none: its keys use the process's level, or the scope
    its caller opens.
    """
    token = _scoped.set(level or _scoped.get())
    try:
        yield
    finally:
        _scoped.reset(token)


_LEVEL_BASE_FACTOR = {
    AutotuneLevel.MINIMAL: 1.25,
    AutotuneLevel.BALANCED: 1.0,
    AutotuneLevel.EXTENSIVE: 0.75,
}


def anchor(
    x: int,
    max: int | None = None,
    min: int | None = None,
    base: float | None = None,
    level: AutotuneLevel | None = None,
) -> int:
    """Anchor a number to a power of the base (2 by default), rounding up.

    Nearby shapes then share a key, so one tuning serves them all. The level (`level`,
    else `autotune_level()`) scales the base: minimal anchors coarser (1.25x base),
    extensive finer (0.75x base), full not at all. The result is clamped to `[min, max]`.
    """
    # `autotune_level()` inlined: a key generator may call this on every dispatch.
    level = level or _scoped.get() or _level or _environment_level()
    if level is AutotuneLevel.FULL:
        result = x
    else:
        b = (2.0 if base is None else float(base)) * _LEVEL_BASE_FACTOR[level]
        if b <= 1.0:
            raise ValueError(f"anchor base must be above 1 after the level's scaling, got {b}")
        if x <= 1:
            result = 1
        else:
            exponent = math.ceil(math.log(x, b) - 1e-12)
            result = math.ceil(b**exponent - 1e-9)
            # Guard float rounding: the anchor is never below x.
            while result < x:
                exponent += 1
                result = math.ceil(b**exponent - 1e-9)
    if max is not None and result > max:
        result = max
    if min is not None and result < min:
        result = min
    return int(result)
