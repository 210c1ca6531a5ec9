"""The value parsers of the settings: each takes a value from a string (a command line, an
ini file, a variable) or its native type (YAML, code) and returns it checked, or raises a
`ConfigError` of one line naming where the value came from."""

from __future__ import annotations

import contextlib
import math
import os
import re
import reprlib
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

from pytest_autotune.tune.key import AutotuneLevel
from pytest_autotune.tune.log import STREAMS, AutotuneLogLevel
from pytest_autotune.tune.plain_numbers import real_number

RecordSink = Path | Literal["stdout", "stderr"]
"""Where records go: a JSON-lines file, or a standard stream."""

ShippedMatch = Literal["exact", "class"]
SHIPPED_MATCHES: tuple[ShippedMatch, ...] = ("exact", "class")


class ConfigError(ValueError):
    """A setting a user got wrong; the message names where it came from."""


Parser = Callable[[object, str], Any]
"""`parse(value, where)`: a value from a string or its native type, or a `ConfigError`."""


_SHOWN = reprlib.Repr()
_SHOWN.maxstring = _SHOWN.maxother = 200
_SHOWN.maxlevel = 2


def _shown(value: object) -> str:
    """`value` as a message shows it: its repr, shortened where it is long or nested.
    `autotune.yaml` may give a setting a list or a mapping, and one of YAML aliases of
    aliases (a few lines that stand for 9**9 strings) was written out whole: the run hung
    building its message."""
    return _SHOWN.repr(value)


def parse_bool(value: object, where: str) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, int) and value in (0, 1):
        return bool(value)
    if isinstance(value, str):
        word = value.strip().lower()
        if word in ("1", "true", "yes", "on"):
            return True
        if word in ("0", "false", "no", "off"):
            return False
    raise ConfigError(
        f"{where}: expected a boolean (1/0, true/false, yes/no, on/off), got {_shown(value)}"
    )


def int_at_least(minimum: int) -> Parser:
    def parse(value: object, where: str) -> int:
        plain = real_number(value)
        number = plain if isinstance(plain, int) else None
        if isinstance(plain, float) and plain.is_integer():
            number = int(plain)  # pytest 9.2 reads an ini file's number key as a float
        if isinstance(value, str):
            with contextlib.suppress(ValueError):
                number = int(value.strip())
        if number is None or number < minimum:
            raise ConfigError(f"{where}: expected an integer >= {minimum}, got {_shown(value)}")
        return number

    return parse


def number(minimum: float, above: bool) -> Parser:
    """A finite float >= `minimum`, or > it when `above`."""
    relation = ">" if above else ">="

    def parse(value: object, where: str) -> float:
        plain = value.strip() if isinstance(value, str) else real_number(value)
        parsed: float | None = None
        if plain is not None:
            with contextlib.suppress(ValueError, OverflowError):  # "abc"; 10**400
                parsed = float(plain)
        if (
            parsed is None
            or not math.isfinite(parsed)
            or parsed < minimum
            or (above and parsed == minimum)
        ):
            raise ConfigError(
                f"{where}: expected a number {relation} {minimum:g}, got {_shown(value)}"
            )
        return parsed

    return parse


def parse_fraction(value: object, where: str) -> float:
    """A fraction from 0 to 1, such as a tolerated slowdown: `max_regression: 10`, meant as
    10%, read as 1000% and turned the gate off without a word."""
    error = ConfigError(
        f"{where}: expected a fraction from 0 to 1 (0.1 for 10%), got {_shown(value)}"
    )
    if isinstance(value, str) and value.strip().endswith("%"):
        raise error  # not "expected a number", which then refused "10" as no fraction
    try:
        parsed = float(number(0.0, above=False)(value, where))
    except ConfigError:
        # One message for every bad value: "expected a number >= 0" for -0.1 or "abc",
        # then the fraction's for 5, took two tries to learn what is asked.
        raise error from None
    if parsed > 1.0:
        raise error
    return parsed


def parse_path(value: object, where: str) -> Path:
    """A path with `~` and `$VARIABLE`s expanded, as pytest expands `--junitxml` and the
    ini's `cache_dir`: a shell leaves `--autotune-html=~/r.html` alone (the `~` is not at
    a word's start), and no shell reads an ini file, `autotune.yaml` or a CI's `env:`
    block, so without it each would write into a folder named `~` or `$HOME`."""
    if isinstance(value, (str, os.PathLike)):
        path = os.fspath(value)
        if isinstance(path, str) and path.strip():
            return Path(os.path.expandvars(os.path.expanduser(path)))
    raise ConfigError(f"{where}: expected a path, got {_shown(value)}")


def parse_record(value: object, where: str) -> RecordSink:
    if value == "stdout":
        return "stdout"
    if value == "stderr":
        return "stderr"
    try:
        return parse_path(value, where)
    except ConfigError:
        raise ConfigError(
            f"{where}: expected a file path, {' or '.join(STREAMS)}, got {_shown(value)}"
        ) from None


def _member(kind: type[AutotuneLevel] | type[AutotuneLogLevel]) -> Parser:
    """A member of an enum with a `parse(text, where)` of its own, or the member itself."""

    def parse(value: object, where: str) -> Any:
        if isinstance(value, kind):
            return value
        try:
            return kind.parse(value if isinstance(value, str) else _shown(value), where)
        except ValueError as exc:
            raise ConfigError(str(exc)) from None

    return parse


parse_level = _member(AutotuneLevel)
parse_log_level = _member(AutotuneLogLevel)


def parse_shipped_match(value: object, where: str) -> ShippedMatch:
    word = value.strip().lower() if isinstance(value, str) else value  # as a level is read
    for match in SHIPPED_MATCHES:
        if word == match:
            return match
    raise ConfigError(f"{where}: expected {' or '.join(SHIPPED_MATCHES)}, got {_shown(value)}")


def _name(pattern: str, expected: str) -> Parser:
    """A name matching `pattern` once stripped and lowercased."""
    compiled = re.compile(pattern)

    def parse(value: object, where: str) -> str:
        name = (value if isinstance(value, str) else _shown(value)).strip().lower()
        # YAML reads `runner: yes` as True and `runner: 1.10` as 1.1: the name was filed as
        # "true", or "1.1", without a word. A name is text (a plain integer reads as given).
        if isinstance(value, (bool, float)) or not compiled.match(name):
            raise ConfigError(f"{where}: expected {expected}, got {_shown(value)}")
        return name

    return parse


parse_runner = _name(
    r"^[a-z0-9][a-z0-9._-]*$",
    "a runner class name of letters, digits, '.', '_' and '-' (a cache folder name)",
)

DEVICE = re.compile(r"^[a-z][a-z0-9_-]*(:\d+)?$")
"""A device name: auto, cpu, cuda, cuda:N, or the name of a client a hook provides."""

parse_device = _name(
    DEVICE.pattern,
    "auto, cpu, cuda, cuda:N or the name of a client from a pytest_autotune_client hook",
)


def optional(parse: Parser) -> Parser:
    def parse_optional(value: object, where: str) -> Any:
        return None if value is None else parse(value, where)

    return parse_optional
