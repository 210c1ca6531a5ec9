"""The check that a key can be cached, for the `autotune` fixture's `key_gen` and the
marker's `key=`: hashable, JSON, finite, and the same in the next process."""

from __future__ import annotations

import re
import reprlib
from typing import Any

from pytest_autotune.failing import fail
from pytest_autotune.tune.files import dumps
from pytest_autotune.tune.key import AutotuneKey, key_to_json


def checked_key(value: Any, what: str) -> Any:
    """A key the cache can hold: hashable, JSON, and finite (JSON has no NaN or inf), and
    the same in the next process (`fail_if_unstable`)."""
    try:
        hash(value)
    except TypeError as exc:
        fail(
            f"{what} returned an unusable key {reprlib.repr(value)}: {exc};"
            f" {_hashable_advice(value)}"
        )
    try:
        text = dumps(key_to_json(value))
    except (TypeError, ValueError) as exc:
        # Shown short: an array's whole repr ran to hundreds of lines.
        fail(f"{what} returned an unusable key {reprlib.repr(value)}: {exc}")
    fail_if_unstable(text, f"{what} returned the key {value!r}, which")
    return value


def _hashable_advice(value: Any) -> str:
    """What makes an unhashable key hashable: an `AutotuneKey` class of its own is frozen
    (a plain `@dataclass` has no hash), and its fields, as any key, are built of ints, strs
    and tuples; "return an int, a str or a tuple" sent such a class's user to give it up."""
    if isinstance(value, AutotuneKey) and type(value).__hash__ is None:
        return f"decorate {type(value).__name__} with @dataclass(frozen=True)"
    what = "give its fields values" if isinstance(value, AutotuneKey) else "return a value"
    return (
        f"{what} built from sizes and names, as an int, a str or a tuple of them (tuple(x.shape))"
    )


MEMORY_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+>")
"""Python's default repr of an object, `<Shape object at 0x7f3a...>`, in a key's text."""


def fail_if_unstable(key_text: str, subject: str, advice: str = "") -> None:
    """Fail where a key holds an object's default repr: its address is new in every
    process, so each update would add an entry that no later run reads, and each gate
    would say "no baseline" without saying why."""
    if MEMORY_ADDRESS.search(key_text):
        fail(
            f"{subject} holds a memory address, which changes with every process: no later"
            f" run would find its baseline; {advice or 'build the key from values (sizes, dtypes)'}"
        )
