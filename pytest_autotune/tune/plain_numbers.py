"""Numbers as the files, records and checks take them: a NumPy scalar as the Python
number it is, and a finiteness test that a huge integer cannot crash."""

from __future__ import annotations

import math
import numbers
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from typing import TypeAlias

    import numpy as np

    RealNumber: TypeAlias = float | np.integer[Any] | np.floating[Any]
else:
    # At run time the class `real_number` tests, without importing NumPy: an annotation
    # naming it resolves (`typing.get_type_hints(anchor)`, Sphinx's autodoc), where a
    # string naming `np` raised NameError.
    RealNumber = numbers.Real
"""A number as the API takes it where `real_number` reads it: a Python int or float, or a
NumPy scalar (`np.prod(shape)`, an `np.int64`, is no `int` to a type checker, and
`np.float32` no `float`), so that a user's code that passes one type-checks as it runs."""


def real_number(value: object) -> int | float | None:
    """`value` as a plain Python number where it is a real number, NumPy's scalars
    included: `np.prod(shape)` is an `np.int64` and `np.finfo(np.float32).eps` an
    `np.float32`, and neither is an `int` or a `float` (nor would it write as JSON). None
    for anything else, a bool among them: `True` given for a number is a slip, not 1."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        return None
    return int(value) if isinstance(value, numbers.Integral) else float(value)


def finite(value: float) -> bool:
    """`math.isfinite`, where an integer past a float's range (`10**400`) is infinite
    rather than an OverflowError raised from inside a check."""
    try:
        return math.isfinite(value)
    except OverflowError:
        return False


__all__ = ["RealNumber", "finite", "real_number"]
