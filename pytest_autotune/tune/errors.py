"""Errors from running autotune (the seed's `AutotuneError`), the candidate's way to decline,
and the warning about a cache file that cannot be read."""

from __future__ import annotations

import enum
import os
import sys
import traceback
import types
from typing import Any, NoReturn

from pytest_autotune.tune.files import json_text


class AutotuneErrorKind(enum.Enum):
    """Why a candidate, or a whole tuning, produced no measurement."""

    UNKNOWN = "unknown"
    """The candidate raised: its message is kept so the report can show it in full."""
    INVALID_SAMPLES = "invalid_samples"
    """The timer returned a duration that is not a positive finite number."""
    NO_VALID_KERNEL_FOUND = "no_valid_kernel_found"
    """Every candidate of every batch failed or declined."""
    SKIP = "skip"
    """The candidate raised `AutotuneSkip`: it does not handle this key."""


NOT_REACHED = "not reached"
"""How the `SKIP` result of a candidate that never ran begins (a batch ended before it, or
no group holds it for the key), which tells it from one that declined."""

UNPLANNED = f"{NOT_REACHED}: no group prioritized for this key holds it"
"""The `SKIP` result of a candidate that no group of the plan tries for the key (its
groups' priorities are negative there)."""


class AutotuneSkip(Exception):
    """Raise from a candidate to decline a key; it is recorded, never reported as a failure."""


def declines(exc: BaseException) -> bool:
    """Whether `exc` is a candidate declining its key: `AutotuneSkip`, or the seed's
    `AutotuneError::Skip` raised."""
    return isinstance(exc, AutotuneSkip) or (
        isinstance(exc, AutotuneError) and exc.kind is AutotuneErrorKind.SKIP
    )


class CandidateStopped(Exception):
    """A candidate stopped from outside before it returned (`time_limit.TimeLimitExceeded`):
    its message says what happened in full, and reads as it is, not as an error the
    candidate raised ("failed its check: TimeLimitExceeded: ran past ...")."""


class InputGeneratorError(RuntimeError):
    """A `TunableSet`'s own input generator raised (or returned no tuple) before any candidate
    ran: the user's error, raised from it so its traceback shows, not recorded as every
    candidate's failure."""


_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep
"""This package's folder: frames in it are the tuner's, not the user's (`_trace`,
`caller_level`)."""


def _trace(exc: BaseException) -> str:
    """`exc`'s traceback as text, from its first frame outside this package: the tuner's
    and the client's frames that called the candidate say nothing to its author."""
    tb = exc.__traceback__
    while tb is not None and tb.tb_frame.f_code.co_filename.startswith(_PACKAGE):
        tb = tb.tb_next
    return "".join(traceback.format_exception(type(exc), exc, tb or exc.__traceback__))


def _kind(kind: object) -> AutotuneErrorKind:
    """The kind an `AutotuneError` is raised with, its value's name ("skip") taken as the
    kind. `raise AutotuneError("bad shape")` from a candidate was taken with the message
    for the kind, and the tuning crashed on it ("'str' object has no attribute 'value'")."""
    __tracebackhide__ = True
    if isinstance(kind, AutotuneErrorKind):
        return kind
    try:
        return AutotuneErrorKind(kind)
    except (ValueError, TypeError):
        kinds = ", ".join(k.name for k in AutotuneErrorKind)
        raise TypeError(
            f"AutotuneError(kind, message): the kind must be an AutotuneErrorKind ({kinds}),"
            f" got {kind!r};"
            f" raise AutotuneError(AutotuneErrorKind.UNKNOWN, {kind!r}) for a failure, or"
            " AutotuneSkip(message) to decline the key"
        ) from None


class CandidateTracebacks(Exception):
    """The tracebacks of what the candidates raised, as text: the cause of a
    NoValidKernelFound raised to the caller."""


class AutotuneError(Exception):
    """A candidate's failure, recorded in its result; it never wins and never crashes the tuner."""

    def __init__(
        self,
        kind: AutotuneErrorKind,
        message: str = "",
        name: str | None = None,
        trace: str = "",
    ) -> None:
        __tracebackhide__ = True
        super().__init__(message)
        self.kind = _kind(kind)
        self.message = message
        self.name = name
        self.trace = trace
        """The traceback of what the candidate raised, as text (not its frames, which hold
        the inputs), or of what every candidate raised for a NoValidKernelFound: raised to
        the caller as its cause (`raise_fresh`), so that the line at fault shows. Neither
        compared nor written to files."""

    def __reduce__(self) -> tuple[Any, ...]:
        # Pickled as an Exception is, by its `args` (the message alone), it came back from a
        # pool's worker with the message for its kind, which is refused (it had been taken
        # silently, and the error read "boom: ..." where it printed its kind).
        return (type(self), (self.kind, self.message, self.name, self.trace), self.__dict__)

    @classmethod
    def from_exception(cls, name: str, exc: BaseException) -> AutotuneError:
        if isinstance(exc, AutotuneError):
            return cls(exc.kind, exc.message, name, exc.trace)
        if isinstance(exc, AutotuneSkip):
            return cls(AutotuneErrorKind.SKIP, str(exc) or "declined the key", name)
        if isinstance(exc, CandidateStopped):
            return cls(AutotuneErrorKind.UNKNOWN, str(exc), name)
        return cls(AutotuneErrorKind.UNKNOWN, f"{type(exc).__name__}: {exc}", name, _trace(exc))

    def fresh(self) -> AutotuneError:
        """A new error of the same kind, message and name, to raise where this one is kept
        (a key's NoValidKernelFound, raised at each call): raising the kept one again would
        chain each call's traceback onto the last, and keep the first call's frames, and
        the input arrays they hold, alive as long as the tuner."""
        return AutotuneError(self.kind, self.message, self.name, self.trace)

    def raise_fresh(self) -> NoReturn:
        """Raise `fresh()`, from what the candidates raised where their tracebacks are kept:
        a user whose every candidate failed saw only "IndexError: index 999 is out of
        bounds" and no line of their own code."""
        if self.trace:
            raise self.fresh() from CandidateTracebacks(self.trace)
        raise self.fresh()

    def __str__(self) -> str:
        who = f"{self.name}: " if self.name else ""
        return (
            f"{who}{self.kind.value}: {self.message}" if self.message else f"{who}{self.kind.value}"
        )

    def __repr__(self) -> str:
        return f"AutotuneError({self.kind.value!r}, {self.message!r}, name={self.name!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, AutotuneError) and (self.kind, self.message, self.name) == (
            other.kind,
            other.message,
            other.name,
        )

    def __hash__(self) -> int:
        return hash((self.kind, self.message, self.name))

    def to_json(self) -> dict[str, Any]:
        return {"kind": self.kind.value, "message": self.message}

    @classmethod
    def from_json(cls, data: dict[str, Any], name: str | None = None) -> AutotuneError:
        """Read `to_json`'s form; a missing kind is a KeyError, anything else that is not
        what `to_json` writes a ValueError saying why."""
        unknown = data.keys() - {"kind", "message"}
        if unknown:
            raise ValueError(f"error: unknown fields {sorted(unknown)}")
        message = data.get("message", "")
        if not isinstance(message, str):
            raise ValueError(f"error: message is {json_text(message)}, expected a string")
        kinds = ", ".join(kind.value for kind in AutotuneErrorKind)
        try:
            kind = AutotuneErrorKind(data["kind"])
        except ValueError:
            kind_text = json_text(data["kind"])
            raise ValueError(f"error: kind is {kind_text}, expected one of {kinds}") from None
        return cls(kind, message, name)


def caller_level() -> int:
    """The `stacklevel` that makes a warning name the first frame outside this package: a
    library's call of its tuner, not the tuner's line that noticed a damaged file. Called
    in the function that warns (`warnings.warn(..., stacklevel=caller_level())`): the
    depth from there varies with the path that led to it."""
    frame: types.FrameType | None = sys._getframe(1)
    level = 1
    while frame is not None and frame.f_code.co_filename.startswith(_PACKAGE):
        frame, level = frame.f_back, level + 1
    return level


class ConfigWarning(UserWarning):
    """A setting a library's tuner could not read and runs without (`LocalTuner.config`,
    `anchor`'s level), or a records file it could not write and goes on without: the
    message names it and says why."""


class CacheFileWarning(UserWarning):
    """A cache file that cannot be read: the run goes on as if it were missing."""


class CacheJournalWarning(CacheFileWarning):
    """A cache file read without part of its journal (a last line cut short by a killed
    writer, or a journal of another version of the file): the file and the journal's whole
    entries are used, so a reader that refuses an unreadable file still reads this one."""
