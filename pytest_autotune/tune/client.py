"""What the tuner needs from a device: its identity, a timer for one call, and its peaks.

The engine's own contract, so it lives in `tune/` (the seed keeps its compute client in the
runtime); the clients in `pytest_autotune.backends` implement it."""

from __future__ import annotations

import contextlib
import gc
import math
import numbers
from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

if TYPE_CHECKING:
    from pytest_autotune.tune.peaks import Peaks


@runtime_checkable
class Client(Protocol):
    """How to run and time candidates on one device (the seed's `ComputeClient`)."""

    @property
    def device_id(self) -> str:
        """The hardware class, e.g. `cuda-nvidia-h200` or `cpu-amd-epyc-7b13-2t`: the name of
        the cache folder, so machines of one class share a baseline."""

    @property
    def launch_overhead(self) -> float:
        """Seconds a call costs beyond its work, added to roofline time limits."""

    def fingerprint(self) -> dict[str, Any]:
        """Everything that may change a timing (driver, library versions, threads, clocks)."""

    def sync(self) -> None:
        """Wait until every call issued so far has finished."""

    def time(self, fn: Callable[..., object], inputs: tuple[Any, ...], /) -> float:
        """Seconds one call of `fn(*inputs)` takes; raises what `fn` raises.

        Called positionally, `client.time(fn, inputs)`: a client's own may name its
        parameters as it likes (`def time(self, f, args)`), which pyright refused as "not
        assignable to Client" while a protocol named them."""

    def peaks(self) -> Peaks:
        """The device's measured peaks (probed once, cached per device)."""

    # Optional, read with getattr: `warm_first_sample: bool`, True where the first `time`
    # of a call is not inflated by one-time work (compilation, first allocations), so that
    # the adaptive round robin may drop a hopeless candidate on its warm-up alone. Read only
    # where it is True: `long_call: float | None`, the seconds from which a timing of a call,
    # its first one included, is as good a sample as any later one and a device time held
    # to the device's noise (the first pass then keeps a long candidate's warm-up as its
    # sample: one call, not two); and `hopeless_factor: float | None`, the margin of the
    # hopeless cut for such calls, where the config sets none (`batch.LongCalls`).
    # `sample_statistic(fn) -> str`, the rule that scores `fn`'s samples once a batch is
    # over (and after each round once all have converged: `convergence.open_race`): "median"
    # where their noise runs both ways (a host loop's time), else "score"
    # (`benchmark.STATISTICS`); without it, every candidate gets the seed's score.
    # `preferred(scored) -> int`, given each live candidate's function and score in seconds
    # once a batch is over, the position of the one that wins it (`measure._preference_for`:
    # CUDA's caller timing breaks a tie of host-bound candidates); without it, the lowest
    # score wins.
    # `context`, a context manager entered where the tuner copies a candidate's inputs and
    # makes calls of its own (the checks): CUDA's device, since CuPy copies an array to the
    # current device, and the copies must be where `time` runs the candidates
    # (`client_context`).
    # `out_of_memory(error) -> bool`, whether `error` is the device running out of memory
    # (CuPy raises several kinds; without it, `MemoryError`), and `release_memory()`, which
    # gives back what the client caches of freed memory (CuPy's pool keeps freed blocks
    # from what cuBLAS allocates outside it): the tuner drops the other candidates' copies
    # of the inputs and retries a candidate that ran out of memory (`out_of_memory`).


_MISSING = object()

CLIENT_METHODS = ("fingerprint", "sync", "time", "peaks")
"""The methods of the `Client` protocol, which the tuning calls."""


def protocol_gap(client: object) -> str | None:
    """What `client` lacks of the `Client` protocol, or None; a `pytest_autotune_client`
    hook's client is checked so when it is made (`devices.Devices`). Each gap was found only
    where the tuning first used it: a missing `time` said "the client must be a Client" from
    the tuner's frames, a missing `peaks` or `fingerprint` was an AttributeError in ours, and
    a missing `sync` failed every candidate as if each had raised it."""
    missing = [name for name in CLIENT_METHODS if not callable(getattr(client, name, None))]
    if missing:
        named = ", ".join(f"{name}()" for name in missing)
        return f"has no method {named}: it must have fingerprint(), sync(), time() and peaks()"
    try:
        overhead = getattr(client, "launch_overhead", _MISSING)
    except Exception as error:  # a property of its own that raised
        return f"raised {type(error).__name__} reading its launch_overhead: {error}"
    if overhead is _MISSING:
        return (
            "has no launch_overhead: the seconds a call costs beyond its work (0.0 where unknown)"
        )
    seconds = (
        float(overhead)
        if isinstance(overhead, numbers.Real) and not isinstance(overhead, bool)
        else math.nan
    )
    if not (math.isfinite(seconds) and seconds >= 0):
        return (
            f"has the launch_overhead {overhead!r}: it is the seconds a call costs beyond"
            " its work, a finite number >= 0 (0.0 where unknown)"
        )
    return None


def not_a_client(owner: str, client: object) -> TypeError | None:
    """The error for a `client` that cannot time calls, or None: the tuning would call its
    `time` for every candidate and blame each of them (the key then remembered as one no
    candidate can run, even once a client is given), and a tuner reading the client's
    fingerprint failed with an AttributeError of ours. The client's class passed for an
    instance has a `time` to call, which raised "missing 1 required positional argument"
    as every candidate's error."""
    if isinstance(client, type):
        return TypeError(
            f"{owner}: the client must be a Client that times calls, got the class"
            f" {client.__name__}: pass an instance (pytest_autotune.backends.cpu() or cuda())"
        )
    if callable(getattr(client, "time", None)):
        return None
    swapped = (
        "; a str is a device id: pass the client whose device_id it is"
        if isinstance(client, str)
        else ""
    )
    return TypeError(
        f"{owner}: the client must be a Client that times calls"
        " (pytest_autotune.backends.cpu() or cuda()), got"
        f" {type(client).__name__} {client!r}{swapped}"
    )


def client_context(client: object) -> AbstractContextManager[Any]:
    """The optional `context` of a client (see `Client`), or one that does nothing."""
    context = getattr(client, "context", None)
    return contextlib.nullcontext() if context is None else context


def out_of_memory(client: object, error: BaseException) -> bool:
    """Whether `error` is `client`'s device running out of memory (see `Client`)."""
    check = getattr(client, "out_of_memory", None)
    return bool(check(error)) if check is not None else isinstance(error, MemoryError)


def release_memory(client: object) -> None:
    """Give back the memory the process holds for nothing: garbage in reference cycles, and
    the freed blocks `client` caches (`release_memory`, see `Client`)."""
    gc.collect()
    release = getattr(client, "release_memory", None)
    if release is not None:
        release()
