"""The marker's callables (`key=`, `work=`) called as pytest calls a test.

Each is called once for a whole group, with the fixtures it names (`Named`: the test's own
arguments, then the other fixtures set up for it); a failure of one keeps the group as
untuned (`kept_if_raising`), so the report and the records keep it as an ERROR.
"""

from __future__ import annotations

import contextlib
import inspect
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

import pytest

from pytest_autotune.collection import ItemSpec
from pytest_autotune.group_request import GroupRequest
from pytest_autotune.key_checks import checked_key, fail_if_unstable
from pytest_autotune.marker_options import work_error
from pytest_autotune.session import AutotuneSession


@dataclass(frozen=True)
class Named:
    """What a marker's callable (`key=`, `work=`) may ask for by name: the test's own
    arguments, then the other fixtures set up for it. A parameter with a default takes the
    test's argument of its name only, as before any other fixture could fill it: a key
    `lambda size="default": ...` keeps the key its committed baselines are filed under."""

    arguments: Mapping[str, Any]
    closure: Mapping[str, Any]

    def value(self, name: str, required: bool) -> tuple[bool, Any]:
        """Whether `name` is given, and its value."""
        for source in (self.arguments, self.closure) if required else (self.arguments,):
            if name in source:
                return True, source[name]
        return False, None

    def names(self) -> list[str]:
        return sorted({*self.arguments, *self.closure} - {"candidate"})


def group_key(spec: ItemSpec, arguments: Named) -> Any:
    key = spec.function.options.get("key")
    if key is None:
        fail_if_unstable(
            spec.group_key,
            f"{spec.function.nodeid}: the key {spec.group_key!r} (the parameters' ids)",
            "give the parameters ids= or the marker a key=",
        )
        return spec.group_key or "default"
    value = call_with_fixtures(key, arguments, f"{spec.function.nodeid}: key=")
    return checked_key(value, f"{spec.function.nodeid}: key=")


@contextlib.contextmanager
def kept_if_raising(session: AutotuneSession, request: GroupRequest, option: str) -> Iterator[None]:
    """Keep `request`'s group as untuned where its marker's `option` callable fails: the
    plugin's message where it failed it (a fixture it asks for is missing, a bad Work),
    else the callable's own exception."""
    try:
        yield
    except pytest.fail.Exception as failed:
        session.keep_untuned(request, str(failed.msg))
        raise
    except Exception as error:
        session.keep_untuned(
            request, f"its {option} callable raised {type(error).__name__}: {error}"
        )
        raise


def evaluated_options(options: Mapping[str, Any], arguments: Named, nodeid: str) -> dict[str, Any]:
    evaluated = dict(options)
    work = options.get("work")
    if callable(work):
        evaluated["work"] = call_with_fixtures(work, arguments, f"{nodeid}: work=")
        error = work_error(evaluated["work"])
        if error is not None:
            pytest.fail(f"{nodeid}: {error}", pytrace=False)
    return evaluated


def call_with_fixtures(fn: Callable[..., Any], arguments: Named, what: str) -> Any:
    """Call a marker callable with the fixtures it names, as pytest calls a test."""
    wanted = inspect.signature(fn).parameters
    if "candidate" in wanted:
        # One key and one work for all of a group's candidates, made in the test that tunes
        # it: they were the first candidate's, and a `-k` run of another candidate's test
        # made another key, under which no baseline was ever found.
        pytest.fail(
            f"{what} asks for `candidate`: it is called once for a whole group, whose"
            " candidates share one key and one work, so it may not depend on the candidate;"
            f" ask for the fixtures they are given; available: {arguments.names()}",
            pytrace=False,
        )
    given: dict[str, Any] = {}
    missing = []
    for name, parameter in wanted.items():
        required = parameter.default is inspect.Parameter.empty
        found, value = arguments.value(name, required)
        if found:
            given[name] = value
        elif required:
            missing.append(name)
    if missing:
        pytest.fail(
            f"{what} asks for {missing}, which is no fixture of the test; "
            f"available: {arguments.names()}",
            pytrace=False,
        )
    try:
        return fn(**given)
    except Exception as error:
        # The user's own error, with its traceback; but a `work=` or `key=` callable is
        # called by the plugin, and the failure (a ZeroDivisionError, say) named neither.
        add_note = getattr(error, "add_note", None)  # Python 3.11 on
        if add_note is not None:
            nodeid, option = what.rsplit(": ", 1)
            add_note(f"{nodeid}: raised by its {option} callable")
        raise
