"""A client's `peaks()` and `fingerprint()`, called and checked: what a client of
the user's raises or returns wrong is said in one line naming the method, before the engine
uses it.

A `peaks()` that returned None or a dict failed in the roofline ("'NoneType' object has no
attribute 'memory_roof'"), and a `peaks()` or `fingerprint()` that raised failed the
group's first test with a traceback through the tuner's frames; a `LocalTuner` got
"'NoneType' object is not iterable" from its cache file's device block.

`sync()` is not wrapped: called right after a candidate, what it raises is most often that
candidate's asynchronous error (a CUDA kernel's illegal address surfaces there), which must
be blamed on the candidate, as it is."""

from __future__ import annotations

import contextlib
import json
import weakref
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from pytest_autotune.tune.parse import ConfigError
from pytest_autotune.tune.peaks import Peaks
from pytest_autotune.tune.wording import short_repr

if TYPE_CHECKING:
    from pytest_autotune.tune.client import Client


class ClientError(ConfigError):
    """A client's method raised, or returned what the `Client` protocol does not allow.
    A `ConfigError`: the client is the user's setting, so each test of its groups fails
    with the one line, as for a device no client serves, never the candidates."""


def _owner(client: object) -> str:
    device_id = getattr(client, "device_id", None)
    return f"device {device_id!r}" if isinstance(device_id, str) else type(client).__name__


_UNUSABLE: weakref.WeakKeyDictionary[Any, str] = weakref.WeakKeyDictionary()
"""The clients whose device a candidate's call left in error for good, with what it was."""


def note_if_unusable(client: Client, what: str) -> None:
    """After a call (`what`: "candidate 'x' of tuner: its error") raised: where the client's
    `sync()` raises still, the device is left in error for the rest of the process (CUDA's
    sticky errors: a kernel's illegal address or failed launch), and the call is what did
    it, unless an earlier one was noted. What the device is asked next (its peaks, the next
    group's checks) then fails naming that call (`refuse_unusable`), where it read as the
    client's own fault ("peaks() raised CURANDError: CURAND_STATUS_INITIALIZATION_FAILED"),
    every group after it too, for as long as `sync()` raises."""
    try:
        client.sync()
    except Exception:
        with contextlib.suppress(TypeError):  # a client no weak reference holds: not kept
            _UNUSABLE.setdefault(client, what)


def refuse_unusable(client: Client) -> None:
    """A `ClientError` where a call left the client's device in error (`note_if_unusable`)
    and its `sync()` raises still. One that no longer raises is forgotten: a `sync()` that
    failed for a while (a test suite's fake device; a device-wide synchronize while
    another thread's stream captures a CUDA graph, which CUDA documents as invalid) refused
    every later tuning of the process, naming a candidate that left nothing broken."""
    if _noted(client) is not None:
        refuse_in_error(client)


def refuse_in_error(client: Client) -> None:
    """A `ClientError` where the client's `sync()` raises before a tuning's first call:
    naming the call noted as what left the device unusable (`note_if_unusable`), else none
    of the tuning's candidates. A device that what ran before the tuning left in error (a
    program's own kernel, a test's body) named the tuning's first candidate that raised as
    what broke it, and said to fix that one."""
    try:
        client.sync()
    except Exception as error:
        since = _noted(client)
        if since is not None:
            raise ClientError(
                f"{_owner(client)} is unusable since {since} (CUDA's sticky errors: every"
                " later call on the device fails, in this process); fix it, and start the"
                " run again"
            ) from error
        raise ClientError(
            f"{_owner(client)}: its client's sync() raised {type(error).__name__}: {error},"
            " before any candidate of this tuning ran"
        ) from error
    with contextlib.suppress(TypeError):  # a client no weak reference holds: none noted
        _UNUSABLE.pop(client, None)


def _noted(client: Client) -> str | None:
    """The call noted as what left the client's device unusable, None where none is."""
    try:
        return _UNUSABLE.get(client)
    except TypeError:
        return None


def _called(client: Client, method: str) -> Any:
    """`client.<method>()`, or a `ClientError` naming the method and what it raised. Looked
    up inside the `try`: a client that lacks the method is said in the same one line."""
    try:
        return getattr(client, method)()
    except Exception as error:
        refuse_unusable(client)
        raise ClientError(
            f"{_owner(client)}: its client's {method}() raised {type(error).__name__}: {error}"
        ) from error


def client_peaks(client: Client) -> Peaks:
    """`client.peaks()`, or a `ClientError` naming what is wrong with it."""
    peaks = _called(client, "peaks")
    if not isinstance(peaks, Peaks):
        raise ClientError(
            f"{_owner(client)}: its client's peaks() returned {short_repr(peaks)}, not a"
            " Peaks: return pytest_autotune.backends.Peaks(memory={...}, compute={...})"
            " (bytes and operations per second; an empty dict where a rate is unknown)"
        )
    return peaks


def client_fingerprint(client: Client) -> dict[str, Any]:
    """A copy of `client.fingerprint()`, or a `ClientError` naming what is wrong with it:
    it goes into the cache files and the records, so it must be a dict JSON can hold."""
    given = _called(client, "fingerprint")
    problem = (
        unwritable(given)
        if isinstance(given, Mapping)
        else f"fingerprint() returned {short_repr(given)}, not a dict"
    )
    if problem is not None:
        raise ClientError(f"{_owner(client)}: its client's {problem}")
    return dict(given)


def unwritable(fingerprint: Mapping[Any, Any]) -> str | None:
    """Why a fingerprint cannot go into the cache files and records as JSON, or None."""
    for name, value in fingerprint.items():
        if not isinstance(name, str):
            return f"fingerprint[{name!r}]: a key of the fingerprint must be a str"
        try:
            json.dumps(value, sort_keys=True, allow_nan=False)
        except (TypeError, ValueError):
            return (
                f"fingerprint[{name!r}] = {value!r}, which a cache file cannot hold: give it"
                " as a str, int, float, bool or None, or a list or dict of them"
            )
    return None


__all__ = [
    "ClientError",
    "client_fingerprint",
    "client_peaks",
    "note_if_unusable",
    "refuse_in_error",
    "refuse_unusable",
    "unwritable",
]
