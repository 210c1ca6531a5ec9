"""The `request` a candidate's test body is given: its own test's, wherever the body runs.

Under --autotune a group is tuned inside its first test, which calls every candidate's
body, and a plain run calls the reference's body in each other candidate's test; a body
that reads `request.node` (its name, its marks, `callspec.params`, `user_properties`)
read the running test's item, not its own. It is also never an input:
the inputs are copied for each candidate, and a copy of `request` (it reaches the test's
arrays through its item) held a copy of the item, whose `user_properties` the test's
report never saw.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from typing import Any

import pytest

from pytest_autotune.benchmark_fixture import FixtureValues, is_benchmark_fixture
from pytest_autotune.call_fixtures import fresh_patcher, is_kept, is_mocker
from pytest_autotune.tune.clone import clone_value


class OwnRequest:
    """The running test's `request`, but for the item of another candidate's test: what
    belongs to the item (`node`, `keywords`, `applymarker`) is that item's, the rest
    (fixture values, `config`, `getfixturevalue`) the running test's, as the inputs are.
    With pytest-benchmark loaded, the running candidate's own `request` is one too, for
    `getfixturevalue` to give its fixture as the body's argument would be (`value`)."""

    def __init__(
        self,
        running: pytest.FixtureRequest,
        item: pytest.Item,
        value: Callable[[Any], Any] | None = None,
    ) -> None:
        self._running = running
        self._item = item
        self._value = value

    def getfixturevalue(self, argname: str) -> Any:
        """The running test's fixture value, as `value` gives it to this body (pytest-
        benchmark's fixture: `benchmark_fixture.FixtureValues`)."""
        got = self._running.getfixturevalue(argname)
        return got if self._value is None else self._value(got)

    @property
    def node(self) -> pytest.Item:
        return self._item

    @property
    def keywords(self) -> Any:
        return self._item.keywords

    def applymarker(self, marker: str | pytest.MarkDecorator) -> None:
        self._item.add_marker(marker)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._running, name)

    def __repr__(self) -> str:
        return f"<FixtureRequest for {self._item!r}>"


class BodyRequest:
    """The `request` one candidate's body is given (its test's, or an `OwnRequest`), as
    the single call of a plain test has it: the finalizers a call adds run when it ends
    (`finish`), and `getfixturevalue` gives the call's own values (`arguments`, set by
    `candidate_run.CandidateRun` for each call).

    Under --autotune a finalizer the body added ran at the first test's teardown once per
    timed call (its error reported thousands of times), and in a plain run the reference's
    ran at the teardown of another candidate's test. `getfixturevalue("x")` gave the
    fixture's own value where the argument `x` is a copy: an in-place candidate changed it
    for the next candidate's body. A fixture the body does not take as an argument is
    copied once for this candidate, as the arguments are (a copy in each timed call would
    be timed). One object for all the candidate's calls: a new one for each call cost
    about 2 us of each timed call on the 2-core VM."""

    def __init__(self, request: Any) -> None:
        self._request = request
        self._copies: dict[str, Any] = {}
        self.arguments: dict[str, Any] = {}
        self.candidate: Callable[..., Any] | None = None
        """The call's candidate, which the body is given beside `arguments`: the running
        test's own, from pytest, is another candidate's wherever this one's body runs in
        another's test (a reference's check, tuning), and a body reading its candidate as
        `request.getfixturevalue("candidate")` checked the running one against itself."""
        self.finalizers: list[Callable[[], object]] = []

    def addfinalizer(self, finalizer: Callable[[], object]) -> None:
        self.finalizers.append(finalizer)

    def getfixturevalue(self, argname: str) -> Any:
        """The call's argument of that name (its copy of the input, its `candidate`), else
        the fixture as this candidate's calls share it."""
        if argname == "candidate" and self.candidate is not None:
            return self.candidate
        if argname in self.arguments and argname != "request":
            return self.arguments[argname]
        if argname in self._copies:
            return self._copies[argname]
        got = self._request.getfixturevalue(argname)
        if isinstance(got, pytest.MonkeyPatch) or is_mocker(got):
            # The test's own would keep this call's patches for the next call and the next
            # candidate: one of the call's own, undone when it ends, as the argument's is
            # (`call_fixtures.EachCall.fresh_patches`), and the same all through the call.
            patcher, undo = fresh_patcher(got, self._request.config)
            self.arguments[argname] = patcher
            self.finalizers.append(undo)
            return patcher
        # pytest's fixtures that hold the test's state, and the request, are never copied
        # (`call_fixtures.is_kept`: a copied `monkeypatch` is never undone), nor
        # pytest-benchmark's, which a copy would leave unused.
        if (
            is_kept(got)
            or isinstance(got, (pytest.FixtureRequest, OwnRequest))
            or is_benchmark_fixture(got)
        ):
            return got
        copied = clone_value(got)
        # Only a copy is kept: a value nothing can write into is asked for again at each
        # call, as pytest-benchmark's fixture must be (`FixtureValues` gives it once).
        if copied is not got:
            self._copies[argname] = copied
        return copied

    def finish(self) -> None:
        """Run the call's finalizers, the last added first, as pytest does at a teardown;
        raise the first error once all have run."""
        error: BaseException | None = None
        while self.finalizers:
            try:
                self.finalizers.pop()()
            except BaseException as exc:
                error = error or exc
        if error is not None:
            raise error

    def __getattr__(self, name: str) -> Any:
        return getattr(self._request, name)

    def __repr__(self) -> str:
        return repr(self._request)


OWN = ("request", "record_property", "record_xml_attribute")
"""The fixtures of a test that belong to its item: a candidate's body gets its own test's."""

XML_ATTRIBUTES = pytest.StashKey[dict[str, object]]()
"""The `record_xml_attribute` calls of an item's body made while another test ran it, by
attribute name, for its own test to record (`record_xml_attributes`): pytest writes an
item's <testcase> attributes through a function of its test alone."""


class OwnFixtures:
    """The fixtures of its own test (`OWN`, those the test takes) that each candidate's
    body is given, by candidate name: its own test's where that test is another item of
    the running group (`items`), else the running test's (`arguments`: its own candidate,
    or an explicit reference)."""

    def __init__(
        self,
        item: pytest.Item,
        arguments: Mapping[str, Any],
        items: Mapping[str, pytest.Item] | None = None,
        values: FixtureValues | None = None,
    ) -> None:
        self._running: dict[str, Any] = {n: arguments[n] for n in OWN if n in arguments}
        if values is not None and "request" in arguments:
            # Where pytest-benchmark's fixture may be asked for by name, the running
            # candidate's `request` gives it as the body's argument would be, too.
            own_value = functools.partial(values.value, own=True)
            self._running["request"] = OwnRequest(arguments["request"], item, own_value)
        self._own: dict[str, dict[str, Any]] = {
            name: _own_fixtures(arguments, other, values)
            for name, other in (items or {}).items()
            if other is not item
        }

    def __call__(self, name: str) -> Mapping[str, Any]:
        own = self._own.get(name)
        return self._running if own is None else own


def _own_fixtures(
    arguments: Mapping[str, Any], item: pytest.Item, values: FixtureValues | None
) -> dict[str, Any]:
    fixtures: dict[str, Any] = {}
    if "request" in arguments:
        value = None if values is None else functools.partial(values.value, own=False)
        fixtures["request"] = OwnRequest(arguments["request"], item, value)
    if "record_property" in arguments:
        fixtures["record_property"] = functools.partial(_record_property, item)
    if "record_xml_attribute" in arguments:
        fixtures["record_xml_attribute"] = functools.partial(_record_xml_attribute, item)
    return fixtures


def _record_property(item: pytest.Item, name: str, value: object) -> None:
    """`record_property` of `item`, as pytest's fixture records it."""
    item.user_properties.append((name, value))


def _record_xml_attribute(item: pytest.Item, name: str, value: object) -> None:
    """`record_xml_attribute` of `item`, kept for its own test (the last value of a name,
    as pytest keeps it): the body is called thousands of times when tuned."""
    item.stash.setdefault(XML_ATTRIBUTES, {})[name] = value


def record_xml_attributes(item: pytest.Item, arguments: Mapping[str, Any]) -> None:
    """Record, through the test's own `record_xml_attribute`, the attributes its body
    recorded while another test ran it (under --autotune, the group's first test)."""
    record = arguments.get("record_xml_attribute")
    if record is None:
        return
    for name, value in item.stash.get(XML_ATTRIBUTES, {}).items():
        record(name, value)
