"""The `sample(index)` a schedule calls while tuning: one timing of a candidate, each on its
own copy of the inputs, with room made where the device runs out of memory and NumPy's
floating-point errors of an in-place candidate meeting its own output set aside."""

from __future__ import annotations

import traceback
from typing import Any

import numpy as np

from pytest_autotune.tune.call_scope import SCOPE_ATTRIBUTE, call_scope
from pytest_autotune.tune.client import Client, client_context, out_of_memory, release_memory
from pytest_autotune.tune.client_calls import note_if_unusable
from pytest_autotune.tune.inputs import candidate_cannot_take
from pytest_autotune.tune.tunable_set import TunableSet, TuneInputs

FLOATING_POINT_ERRORS = (FloatingPointError, RuntimeWarning)
"""What NumPy's floating-point errors raise: `np.seterr(all="raise")`'s, and the warnings
of its default under warnings as errors (`filterwarnings = error`)."""


class Samples:
    """Samples of a batch's candidates, each timed on its own copy of the inputs, kept for
    the batch (an in-place candidate meets its own output again, as in a caller's loop).

    Where a candidate runs out of memory, in its call or its copy, while other candidates'
    copies are held, those are dropped, their memory given back, and it is tried once more:
    a plain run of one candidate never holds them (ten candidates over a 2 GiB input held
    20 GiB), and a candidate that fits beside its own inputs failed for the others' copies.
    A dropped copy is made again, from the caller's inputs, at its candidate's next sample.

    Meeting its own output again, an in-place candidate whose values grow (`x *= 2`,
    `np.exp(x, out=x)`) overflows after some calls, which no call of its caller does: where
    NumPy's floating-point error of that raises (a `RuntimeWarning` under warnings as
    errors, a program's `filterwarnings = error`, or `np.seterr(all="raise")`) and one call
    on a fresh copy does not, its samples are timed with those errors ignored. It failed
    there, and where every candidate was such, the call of a program's `LocalTuner` raised
    `AutotuneError` though the winner's one call on its inputs was fine.
    """

    def __init__(self, tunables: TunableSet, key: Any, inputs: TuneInputs, client: Client):
        self._tunables, self._key, self._inputs, self._client = tunables, key, inputs, client
        self._copies: dict[int, TuneInputs] = {}
        self._quiet: set[int] = set()
        """The candidates whose repeated calls raised a floating-point error (above)."""

    def __call__(self, index: int) -> float:
        if index in self._quiet:
            return self._timed_quietly(index)
        try:
            return self._timed(index)
        except BaseException as error:
            if self._drop_others(index, error):
                retry = self._timed
            elif self._raised_of_repeats(index, error):
                retry = self._timed_quietly
            else:
                if isinstance(error, Exception):
                    name = self._tunables.names[index]
                    said = f"{type(error).__name__}: {error}"
                    note_if_unusable(
                        self._client, f"candidate {name!r} (key {self._key!r}) raised {said}"
                    )
                raise
        return retry(index)

    def clear(self) -> None:
        self._copies.clear()

    def _timed(self, index: int) -> float:
        fn = self._tunables.fns[index]
        inputs = self._copy(index)
        try:
            if hasattr(fn, SCOPE_ATTRIBUTE):  # its scope outside the timed call (`call_scope`)
                with call_scope(fn):
                    return self._client.time(fn, inputs)
            return self._client.time(fn, inputs)
        except TypeError as exc:
            said = candidate_cannot_take(fn, inputs, exc)
            if said is None:
                raise
            raise said from exc

    def _timed_quietly(self, index: int) -> float:
        with np.errstate(all="ignore"):
            return self._timed(index)

    def _raised_of_repeats(self, index: int, error: BaseException) -> bool:
        """Whether `error`, a floating-point error of candidate `index`'s samples, is its
        output met again (above): one call on a fresh copy of the inputs, in the
        candidate's scope, raises nothing. The candidate is then sampled quietly."""
        if not isinstance(error, FLOATING_POINT_ERRORS):
            return False
        fn = self._tunables.fns[index]
        try:
            fresh = self._new_copy()
            with call_scope(fn):
                fn(*fresh)
        except Exception:
            return False
        self._quiet.add(index)
        return True

    def _copy(self, index: int) -> TuneInputs:
        if index not in self._copies:
            try:
                self._copies[index] = self._new_copy()
            except BaseException as error:
                if not self._drop_others(index, error):
                    raise
            if index not in self._copies:
                self._copies[index] = self._new_copy()
        return self._copies[index]

    def _new_copy(self) -> TuneInputs:
        with client_context(self._client):  # on the client's device
            return self._tunables.generate_inputs(self._key, self._inputs)

    def _drop_others(self, index: int, error: BaseException) -> bool:
        """Drop the other candidates' copies where `error` is the device out of memory:
        True when there were some, and the caller should try once more."""
        others = [i for i in self._copies if i != index]
        if not others or not out_of_memory(self._client, error):
            return False
        for i in others:
            del self._copies[i]
        traceback.clear_frames(error.__traceback__)  # the failed call's frames hold arrays
        release_memory(self._client)
        return True
