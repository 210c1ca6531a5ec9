"""A group's key: its parameters' ids, each id that pytest numbers by the value's place
replaced by the value's text where that text is plain, the same in every process."""

from __future__ import annotations

import enum
import re
from collections.abc import Iterable
from typing import Any

import numpy as np

from pytest_autotune.tune.torch_tensors import is_dtype


def by_value(callspec: Any, key: str) -> str:
    """The group's key: its parameters' ids, each id pytest numbered by position
    (`shape0`, `shape1`: a tuple, a list, a dtype object) replaced by its value's text
    where that is plain (`(1000,)`). A key by position compared another value's baseline
    once the values were reordered or one was inserted before it: a 1,000-element sum
    against the 400,000-element one's baseline read +3586%, a REGRESSION of unchanged
    code. The group's name keeps pytest's id, as its node ids do.

    The numbered id is found in the key by its form, the parameter's name and digits, not
    by `callspec.indices`: pytest 8 and later renumber a direct parameter's index as the
    test's place among all its calls (`Metafunc._recompute_direct_params_indices`), which
    is the value's place in its list only where the test has one parametrization."""
    for name in callspec.params:
        if name == "candidate":
            continue
        if _written_by_pytest(callspec.params[name]):
            key = _int_enum_by_value(key, callspec.params[name])
            continue
        component = _numbered_component(key, name, callspec.params)
        text = plain_text(callspec.params[name]) if component is not None else None
        if component is not None and text is not None:
            key = _replaced_component(key, component, text)
    return key


def _int_enum_by_value(key: str, value: Any) -> str:
    """`key` with the id pytest wrote for an `IntEnum` or `IntFlag` member made its int
    value. pytest ids such a member by `str()`, which Python 3.11 changed from the member's
    name (`Mode.FAST`) to its value (`1`): a baseline recorded under Python 3.10 read "no
    baseline" under 3.11 and later, and each version's update added entries the other never
    read. The value is what 3.11 and later already write, and what an int enum in a `key=`
    is stored as (`key_to_json`)."""
    if not isinstance(value, enum.Enum) or not isinstance(value, int):
        return key
    written, plain = str(value), int.__repr__(value)
    if written == plain or f"-{written}-" not in f"-{key}-":
        return key
    return _replaced_component(key, written, plain)


def positional_parameters(callspec: Any, key: str) -> list[str]:
    """The parameters whose part of a group's key (`by_value`'s) still numbers their value
    by its place in its list: a value with no plain text (an array, an object), whose
    baseline a reordered or inserted value would take over."""
    return [
        name
        for name in callspec.params
        if name != "candidate"
        and not _written_by_pytest(callspec.params[name])
        and _numbered_component(key, name, callspec.params) is not None
    ]


def _written_by_pytest(value: Any) -> bool:
    """Whether pytest ids `value` by its own text (a str, a number, a bool, None), never by
    the parameter's name and its place: an id of that form is then the user's own, an
    `ids=lambda n: f"n{n}"` of a parameter named `n` (`n10`), which the key kept as given,
    not replaced by the value's text (`10`), where a group priority read `key == "n10"`.
    A str of over 100 characters is not: pytest 9 numbers it by its place (`n0`, its
    default `parametrize_long_str_id_strategy`), and its key by place, taken for the
    user's own, swapped two queries' baselines without a word once they were reordered."""
    if isinstance(value, str):
        return len(value) <= _LONGEST_STR_ID
    return value is None or isinstance(value, (bool, int, float, complex))


_LONGEST_STR_ID = 100
"""The longest str pytest writes as its id by default; a longer one it numbers by place."""


def _numbered_component(key: str, name: str, names: Iterable[str]) -> str | None:
    """The id pytest gives a value of parameter `name` that it cannot write (`name` and
    the value's place, `shape1`), where `key` holds exactly one. An id that also reads as
    that of another parameter whose name begins with this one (`x20`: x's 21st value, or
    x2's first) is not this one's: at worst a value of x keeps its number (a key by place,
    which the summary warns of), where x's value in x2's place gave two groups one key."""
    longer = [other for other in names if other != name and other.startswith(name)]
    found = {
        component
        for component in re.findall(rf"(?<=-){re.escape(name)}\d+(?=-)", f"-{key}-")
        if not any(re.fullmatch(rf"{re.escape(other)}\d+", component) for other in longer)
    }
    return found.pop() if len(found) == 1 else None


_MAX_VALUE_TEXT = 60
"""The longest value text a key takes in place of a positional id: longer, it is data
(an array's list), kept by its id."""


_SCALAR_TYPES = frozenset(np.sctypeDict.values())
"""NumPy's concrete scalar types (`np.float32`), each a dtype's type; not the abstract ones
(`np.floating`), which name no dtype."""


def plain_text(value: Any, depth: int = 0) -> str | None:
    """A text of `value` that is the same in every process and NumPy version, where it is
    made of plain values (numbers, strings, booleans, None, NumPy scalars, dtypes and their
    scalar types, PyTorch's dtypes, in tuples and lists): None for anything else, and for a
    text too long to be a key."""
    text: str | None
    if value is None or isinstance(value, (bool, int, float, complex, str)):
        text = repr(value)
    elif isinstance(value, np.generic):
        text = repr(value.item())
    elif isinstance(value, np.dtype) or is_dtype(value):
        # `torch.bfloat16`: pytest numbers a torch dtype (`dtype1`) as it does NumPy's.
        text = str(value)
    elif isinstance(value, type) and value in _SCALAR_TYPES:
        # `(1000, np.float32)`: the type a dtype argument is most often written as, which
        # pytest names itself (`float32`) alone but numbers by place inside a tuple.
        text = str(np.dtype(value))
    elif isinstance(value, (tuple, list)) and depth < 3:
        parts = [plain_text(v, depth + 1) for v in value]
        if any(p is None for p in parts):
            return None
        inner = ", ".join(p for p in parts if p is not None)
        if isinstance(value, tuple):
            text = f"({inner},)" if len(parts) == 1 else f"({inner})"
        else:
            text = f"[{inner}]"
    else:
        return None
    return text if len(text) <= _MAX_VALUE_TEXT else None


def _replaced_component(key: str, component: str, text: str) -> str:
    """`key` with its parameter id `component` replaced by `text` (ids joined with '-')."""
    padded = f"-{key}-".replace(f"-{component}-", f"-{text}-", 1)
    return padded[1:-1]
