"""What each call of a candidate's test body starts from, as a plain test would: the global
random generators' states (`GlobalDraws`), and a method's own instance of its test class
(`Instance`)."""

from __future__ import annotations

import copy
import random
import sys
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from pytest_autotune.tune.clone import clone_value
from pytest_autotune.tune.torch_tensors import real_torch


@dataclass(frozen=True)
class GlobalDraws:
    """The states of the global random generators (`random`'s, NumPy's `np.random`, and
    PyTorch's `torch.randn` where the program imported torch) that a body may draw its
    inputs from: each call whose output is checked starts from them, as
    each plain test starts from the seed pytest-randomly gives it. Drawn on, the reference's
    call moved the state the candidate's then drew from, and every correct candidate
    "differed from the reference". The timed calls (in their scope, `tune.call_scope`) draw
    on: setting the states costs some microseconds a call."""

    python: tuple[Any, ...]
    numpy: dict[str, Any]
    torch: Any = None
    """torch's CPU generator's state, None where torch is not imported."""

    @classmethod
    def now(cls) -> GlobalDraws:
        get_rng_state = getattr(getattr(real_torch(), "random", None), "get_rng_state", None)
        torch_state = None if get_rng_state is None else get_rng_state()
        return cls(random.getstate(), np.random.get_state(legacy=False), torch_state)

    def restore(self) -> None:
        random.setstate(self.python)
        np.random.set_state(self.numpy)
        if self.torch is not None:
            sys.modules["torch"].random.set_rng_state(self.torch)


@dataclass(frozen=True)
class Instance:
    """The instance of a test class that a method's body runs on (`parameter`, its first
    argument's name): `running`'s own, the running test's, and a copy for each other
    candidate. Tuned, every candidate's body ran on the first test's instance, and a plain
    run the reference's on the running test's: what one candidate's body kept on `self`
    (a plan, a buffer, a flag) the next one found there. A shallow copy keeps what the
    class's fixtures and `setup_method` set up, which the other tests' instances do not
    have yet (their setup comes later); the arrays it holds are copied as inputs are
    (`clone_value`): shared, an in-place candidate's writes into `self.x` were the next
    candidate's input, and a plain run failed two correct candidates."""

    parameter: str
    instance: object
    running: str
    _pristine: object = field(init=False, repr=False, compare=False)
    """A copy of `instance` as the test found it, or the error copying it raised. Plain
    values, not a closure: the fresh process of a confirmation gets the body pickled."""

    def __post_init__(self) -> None:
        # Copied now, before the running test's body: copied when another candidate was
        # called, it had what that body set on `self` (a counter at 2 where plain pytest's
        # fresh instance has 1), and a plain run failed the check of unchanged code.
        try:
            pristine: object = clone_value(copy.copy(self.instance))
        except Exception as error:  # an instance that does not copy fails where it is used
            pristine = _NotCopied(error)
        object.__setattr__(self, "_pristine", pristine)

    def of(self, name: str | None) -> object:
        """The instance candidate `name`'s body runs on."""
        if name == self.running:
            return self.instance
        if isinstance(self._pristine, _NotCopied):
            raise self._pristine.error
        return clone_value(copy.copy(self._pristine))


@dataclass(frozen=True)
class _NotCopied:
    """Why a test's instance could not be copied (`Instance`)."""

    error: Exception
