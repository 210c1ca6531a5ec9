"""What identifies the init function a `LocalTuner` builds a set from (`init_site`): its
site, so that a lambda made at each call of the tuned function builds one set, not one a call."""

from __future__ import annotations

import types
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pytest_autotune.tune.tunable_set import TunableSet

_SITE_DEPTH = 4
"""How deep `init_site` follows functions captured by functions of the tuned function."""


def init_site(
    factory: Callable[[], TunableSet], codes: list[types.CodeType] | None = None, depth: int = 0
) -> Any:
    """What identifies an init function: the seed's `init(|| ...)` has one closure type per
    site, and its port `TUNER.init(lambda: ...)` in the tuned function is a new lambda at
    each call, which would build a set at each call and keep them all. A function defined
    in another function is its code with the values it captures (closure cells, defaults):
    two of one site that capture the same values build the same set, and two that capture
    others are kept apart, as their sets may differ. A captured function defined in a
    function (`lambda: make()` beside a `def make()` of the same body, new at each call
    too) is its own site in turn. The code goes by its id (hashing a code object hashes its
    bytecode, microseconds a call), added to `codes` where given, for the tuner to keep
    alive (`LocalTuner._codes`) so that the id is never another's: only once a set is
    built, as the seed's pattern makes a lambda and calls `init` at every call of the tuned
    function. One capturing a value that cannot be hashed (an array) stays itself, as does
    any other callable, and a module's function: it is made once."""
    if (
        not isinstance(factory, types.FunctionType)
        or "<locals>" not in factory.__qualname__
        or depth > _SITE_DEPTH  # a local function that captures itself, say
    ):
        return factory
    closure, keywords = factory.__closure__, factory.__kwdefaults__
    try:
        cells = tuple([cell.cell_contents for cell in closure]) if closure else ()
        for value in cells:
            if type(value) is _FUNCTION and "<locals>" in value.__qualname__:
                cells = tuple([init_site(v, codes, depth + 1) for v in cells])
                break
        site = (
            id(factory.__code__),
            cells,
            factory.__defaults__,
            tuple(sorted(keywords.items())) if keywords else (),
        )
        hash(site)
    except (TypeError, ValueError):  # an unhashable value, an empty cell
        return factory
    if codes is not None:
        codes.append(factory.__code__)
    return site


_FUNCTION = types.FunctionType
