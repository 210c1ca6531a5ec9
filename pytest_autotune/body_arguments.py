"""The arguments of a candidate's test body: the fixture values its test function asks for,
those the tuner copies for each candidate and passes to the body (its inputs), and why a
plain run cannot check the candidates on them (one that a call uses up)."""

from __future__ import annotations

import inspect
from collections.abc import Mapping
from typing import Any

import pytest

from pytest_autotune.call_fixtures import kept_fixtures
from pytest_autotune.own_request import OWN
from pytest_autotune.tune.inputs import used_up_within


def arguments_of(item: pytest.Function) -> dict[str, Any]:
    """The fixture values the test function asks for, by name (set up, never timed)."""
    names = inspect.signature(item.obj).parameters
    return {name: item.funcargs[name] for name in names if name in item.funcargs}


def input_names(arguments: Mapping[str, Any]) -> tuple[str, ...]:
    """The arguments whose values the tuner copies for each candidate and passes to the
    body: all but `candidate`, those of the test's own item (`own_request.OWN`), which
    the body gets as its candidate's (`CandidateRun.own`), and pytest's fixtures that hold
    the test's state (`tune.clone.is_kept`), which it gets as they are (`CandidateRun.kept`)."""
    kept = kept_fixtures(arguments)
    return tuple(n for n in arguments if n != "candidate" and n not in OWN and n not in kept)


def inputs_of(arguments: Mapping[str, Any]) -> tuple[Any, ...]:
    """The values of `input_names`, in order."""
    return tuple(arguments[n] for n in input_names(arguments))


def used_up_input_error(nodeid: str, arguments: Mapping[str, Any]) -> str | None:
    """Why a plain run cannot check the test's candidates: an argument that one call uses up
    (a fixture returning a generator), which no copy can copy, as tuning refuses it. The
    reference, called in each other candidate's test after the candidate, was given the
    generator emptied, and the candidate "differed from the reference"."""
    for name in input_names(arguments):
        used_up = used_up_within(arguments[name])
        if used_up is not None:
            return (
                f"{nodeid}: the argument {name!r} {used_up},"
                " which one call uses up: a candidate's test calls the body with it and"
                " again with the reference, and tuning calls every candidate on it, each"
                " after the first finding it empty; have the fixture return a list or a"
                " tuple (list(...))"
            )
    return None
