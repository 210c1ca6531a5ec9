"""A candidate's call of the test body: the test function called with one candidate and the
test's other arguments (`CandidateRun`), as a plain run checks each candidate and tuning
times it, with the candidate's own test's fixtures, marks and instance."""

from __future__ import annotations

import contextlib
import copy
import functools
import inspect
import random
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pytest

from pytest_autotune.benchmark_fixture import FixtureValues, OwnBenchmark
from pytest_autotune.call_fixtures import (
    EachCall,
    each_call,
    folder_given,
    kept_fixtures,
    timed_calls_quiet,
)
from pytest_autotune.collection import GROUP_ITEMS, ITEM, ItemSpec
from pytest_autotune.fixture import Names
from pytest_autotune.group_marks import warning_marks
from pytest_autotune.own_request import OWN, BodyRequest, OwnFixtures
from pytest_autotune.time_limit import TimeLimit, crashed
from pytest_autotune.tune import call_scope
from pytest_autotune.tune.clone import clone_value
from pytest_autotune.tune.errors import AutotuneSkip
from pytest_autotune.tune.inputs import used_up_within
from pytest_autotune.warning_marks import MarkFilters, parse_filters, project_filters

RAISED = pytest.StashKey[dict[str, set[int]]]()
"""The candidates of each group whose test body raised while the group was tuned, as the
`id` of their function: one function under two names raised for both (`Names` knows it by
one of them), and the group's spec keeps each function alive."""


def arguments_of(item: pytest.Function) -> dict[str, Any]:
    """The fixture values the test function asks for, by name (set up, never timed)."""
    names = inspect.signature(item.obj).parameters
    return {name: item.funcargs[name] for name in names if name in item.funcargs}


def _input_names(arguments: Mapping[str, Any]) -> tuple[str, ...]:
    """The arguments whose values the tuner copies for each candidate and passes to the
    body: all but `candidate`, those of the test's own item (`own_request.OWN`), which
    the body gets as its candidate's (`CandidateRun.own`), and pytest's fixtures that hold
    the test's state (`call_fixtures.KEPT`), which it gets as they are (`CandidateRun.kept`)."""
    kept = kept_fixtures(arguments)
    return tuple(n for n in arguments if n != "candidate" and n not in OWN and n not in kept)


def inputs_of(arguments: Mapping[str, Any]) -> tuple[Any, ...]:
    """The values of `_input_names`, in order."""
    return tuple(arguments[n] for n in _input_names(arguments))


def used_up_input_error(nodeid: str, arguments: Mapping[str, Any]) -> str | None:
    """Why a plain run cannot check the test's candidates: an argument that one call uses up
    (a fixture returning a generator), which no copy can copy, as tuning refuses it. The
    reference, called in each other candidate's test after the candidate, was given the
    generator emptied, and the candidate "differed from the reference"."""
    for name in _input_names(arguments):
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


def candidate_run(
    item: pytest.Function,
    spec: ItemSpec,
    arguments: Mapping[str, Any],
    real: Mapping[str, Any],
    limit: TimeLimit,
    tuning: bool,
) -> CandidateRun:
    """`run(candidate, *values)`: the test body with `candidate` and the other arguments,
    stopped by name if it runs past the time limit, and each other candidate under its own
    test's warning filters (its marks' in place of this test's). Each candidate's body gets
    its own test's `request` (`own_request`): tuning runs them all in one test, and a plain
    run the reference in each. `arguments`: the test's, pytest-benchmark's fixture among
    them stood in for (`stand_in`); `real`: that fixture itself, by name, read once from
    the test's arguments by the caller."""
    marks = warning_marks(item.config, spec.group)
    own = marks.get(spec.candidate, ())
    differ = {name: parse_filters(args) for name, args in marks.items() if args != own}
    filters = None
    # None where every candidate's marks are this test's (most groups): each timed call
    # then pays nothing for them, not even the lookup of a scope it does not need.
    if differ:
        config = item.config
        project = project_filters(
            config.getini("filterwarnings"), config.getoption("pythonwarnings", None) or ()
        )
        running = tuple(f for f in parse_filters(own) if f not in project)
        filters = MarkFilters(running, differ)
    others = _input_names(arguments)
    fixtures = None
    if any(name in arguments for name in OWN):
        # With pytest-benchmark loaded, `request.getfixturevalue` may reach its fixture.
        values = None
        if item.config.pluginmanager.hasplugin("benchmark"):
            values = FixtureValues(tuning=tuning, used=real)
        fixtures = OwnFixtures(item, arguments, _candidate_items(item, spec), values)
    names = Names(spec.function.candidates)
    raised = item.config.stash.setdefault(RAISED, {}).setdefault(spec.group, set())
    benchmark = None
    if real and not tuning:
        benchmark = OwnBenchmark(real, dict(spec.function.candidates)[spec.candidate])
    kept = kept_fixtures(arguments)
    # Every fixture of the test is set up by now: its `tmp_path` holds what they wrote.
    folder = folder_given(arguments, item.funcargs.get("tmp_path"))
    test, instance = _test_and_instance(item, spec)
    return CandidateRun(
        each_call(test, kept, item.config, folder),
        others,
        limit,
        names,
        filters,
        fixtures,
        raised if tuning else None,
        benchmark,
        kept,
        instance,
        GlobalDraws.now(),
    )


@dataclass(frozen=True)
class GlobalDraws:
    """The states of the global random generators (`random`'s, NumPy's `np.random`) that a
    body may draw its inputs from: each call whose output is checked starts from them, as
    each plain test starts from the seed pytest-randomly gives it. Drawn on, the reference's
    call moved the state the candidate's then drew from, and every correct candidate
    "differed from the reference". The timed calls (in their scope, `tune.call_scope`) draw
    on: setting the states costs some microseconds a call."""

    python: tuple[Any, ...]
    numpy: dict[str, Any]

    @classmethod
    def now(cls) -> GlobalDraws:
        return cls(random.getstate(), np.random.get_state(legacy=False))

    def restore(self) -> None:
        random.setstate(self.python)
        np.random.set_state(self.numpy)


@dataclass(frozen=True)
class Instance:
    """The instance of a test class that a method's body runs on (`parameter`, its first
    argument's name): `running`'s own, the running test's, and a copy for each other
    candidate. Tuned, every candidate's body ran on the first test's instance, and a plain
    run the reference's on the running test's: what one candidate's body kept on `self`
    (a plan, a buffer, a flag) the next one found there. A shallow copy keeps what the
    class's fixtures and `setup_method` set up, which the other tests' instances do not
    have yet (their setup comes later)."""

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
            pristine: object = copy.copy(self.instance)
        except Exception as error:  # an instance that does not copy fails where it is used
            pristine = _NotCopied(error)
        object.__setattr__(self, "_pristine", pristine)

    def of(self, name: str | None) -> object:
        """The instance candidate `name`'s body runs on."""
        if name == self.running:
            return self.instance
        if isinstance(self._pristine, _NotCopied):
            raise self._pristine.error
        return copy.copy(self._pristine)


@dataclass(frozen=True)
class _NotCopied:
    """Why a test's instance could not be copied (`Instance`)."""

    error: Exception


def _test_and_instance(item: pytest.Function, spec: ItemSpec) -> tuple[Any, Instance | None]:
    """The test function, and its instance where it is a method (passed to it by name)."""
    method = item.obj
    if not inspect.ismethod(method):
        return method, None
    first = next(iter(inspect.signature(method.__func__).parameters.values()), None)
    if first is None or first.kind is not inspect.Parameter.POSITIONAL_OR_KEYWORD:
        return method, None  # a wrapper taking `*args`: left bound, as it was
    return method.__func__, Instance(first.name, method.__self__, spec.candidate)


def _candidate_items(item: pytest.Function, spec: ItemSpec) -> dict[str, pytest.Item]:
    """Each candidate's own test item in the run of the group that `item` is: `item` for
    its candidate, and for another the item of the same parameters (pytest-repeat's
    repetition number among them: a group holds every repetition), else the first
    collected. By candidate name alone, the last repetition's item stood for each, and the
    first repetition's body read and wrote the second's."""
    run = _other_indices(item)
    found: dict[str, pytest.Item] = {}
    for other in item.config.stash.get(GROUP_ITEMS, {}).get(spec.group, []):
        name = other.stash[ITEM].candidate
        if name not in found or _other_indices(other) == run:
            found[name] = other
    found[spec.candidate] = item
    return found


def _other_indices(item: pytest.Item) -> dict[str, int]:
    """Which value of each parameter but `candidate` the item has (indices compare where
    the values, arrays among them, may not)."""
    callspec = getattr(item, "callspec", None)  # every item of a group has one
    indices: Mapping[str, int] = callspec.indices if callspec is not None else {}
    return {name: i for name, i in indices.items() if name != "candidate"}


@dataclass(frozen=True)
class CandidateRun:
    """`run(candidate, *values)`: the test function called with `candidate` and the other
    arguments (`others`, in order), stopped by name past the time limit.

    It pickles as the test function's name, the argument names, the warning filters and
    a method's instance, without the limit: a fresh process that measures a CPU winner
    again (`fresh_process`) runs the body there, under the process's own timeout and the
    candidate's own marks."""

    test: Callable[..., Any]
    others: tuple[str, ...]
    limit: TimeLimit | None = None
    names: Names | None = None
    filters: MarkFilters | None = None
    """The warning filters of each candidate's test's marks (`warning_marks.py`); None where
    every candidate's are the running test's."""
    own: OwnFixtures | None = None
    """The fixtures of each candidate's own test item (`request`), given to its body beside
    the values; None where the test takes none."""
    raised: set[int] | None = None
    """Tuning, where the candidates whose body raised are kept (`RAISED`), so
    that each one's own test can show its traceback (`fixture.raise_again`)."""
    benchmark: OwnBenchmark | None = None
    """A plain run's pytest-benchmark fixture, given in place of the `CallOnce` among the
    values to the first call of the test's own candidate (`benchmark_fixture`)."""
    kept: Mapping[str, Any] = field(default_factory=dict)
    """pytest's fixtures that hold the test's state, by name, given to each call as they
    are (`call_fixtures`)."""
    instance: Instance | None = None
    """A method's instance, given to each candidate's body as its own (`Instance`); None
    for a test function, which `test` is then."""
    draws: GlobalDraws | None = None
    """The global random generators as the test's fixtures left them, which each untimed
    call starts from (`GlobalDraws`); None in a fresh process, whose calls are all timed."""

    def scope_of(self, name: str) -> CandidateScope:
        """What makes candidate `name`'s scope, for the tuner to enter around its timed
        calls (`tune.call_scope`): its warning filters where they differ from the running
        test's, and its output kept quiet (`call_fixtures.timed_calls_quiet`)."""
        return CandidateScope(self, name)

    def __call__(self, candidate: Callable[..., Any], *values: Any) -> Any:
        """The body of a candidate known by its function alone (an explicit reference)."""
        name = self.names(candidate) if self.names is not None else None
        return self._call(name, candidate, self._own_fixtures(name), *values)

    def named(self, name: str, candidate: Callable[..., Any]) -> functools.partial[Any]:
        """The body of candidate `name`, taking the values: by its name, not its function,
        which two names may share (each is a candidate with a test of its own, whose
        fixtures its body gets); those fixtures looked up once, not on each timed call."""
        return functools.partial(self._call, name, candidate, self._own_fixtures(name))

    def _own_fixtures(self, name: str | None) -> Mapping[str, Any]:
        """The fixtures candidate `name`'s body takes as they are: pytest's that hold the
        test's state (`kept`), those of its own test (`own`), and a method's instance."""
        if self.instance is not None:
            # A copy for each `named` (once for a candidate's timed calls).
            instance = {self.instance.parameter: self.instance.of(name)}
            return {**self._test_fixtures(name), **instance}
        return self._test_fixtures(name)

    def _test_fixtures(self, name: str | None) -> Mapping[str, Any]:
        if self.own is None:
            return self.kept
        fixtures = {**self.kept, **self.own(name or "")}
        if "request" in fixtures:
            # This candidate's, for its calls (`named` is called once for its timed
            # calls); `_call` gives it each call's arguments and runs its finalizers.
            fixtures["request"] = BodyRequest(fixtures["request"])
        return fixtures

    def _call(
        self,
        name: str | None,
        candidate: Callable[..., Any],
        own: Mapping[str, Any],
        *values: Any,
    ) -> Any:
        def body() -> Any:
            # pytest's outcomes raised in the body are not `Exception`s: each went through
            # the check of another candidate's test, and through tuning, and gave its
            # outcome to the group's every test, those of candidates that ran included,
            # leaving the group untuned. Here they are the candidate's own: `pytest.skip()`
            # declines it (or the inputs), as `AutotuneSkip` does; `pytest.xfail()` declines
            # it as expected to fail; `pytest.fail()` and `sys.exit()` are its failure.
            arguments = dict(zip(self.others, values, strict=True))
            arguments.update(own)
            # Before the request is given them: its `getfixturevalue` reads this dict.
            test = self.test
            undo = test.fresh_patches(arguments) if isinstance(test, EachCall) else ()
            request = own.get("request")
            if isinstance(request, BodyRequest):
                request.arguments = arguments
                request.candidate = candidate
            else:
                request = None
            if self.benchmark is not None:
                arguments.update(self.benchmark(candidate))
            problem: str | None
            # Entered by the tuner around a timed call, outside its timer (`call_scope`).
            scope = (
                self.filters.scope(name)
                if self.filters and name is not None and not call_scope.entered()
                else None
            )
            try:
                output = self._test(candidate, arguments, scope, request, undo)
            except pytest.skip.Exception as exc:
                raise AutotuneSkip(exc.msg) from None
            except pytest.xfail.Exception as exc:
                raise AutotuneSkip(f"{EXPECTED_TO_FAIL}{exc.msg}") from None
            except pytest.fail.Exception as exc:
                raise _candidates_failure(exc) from None
            except SystemExit as exc:  # not an `Exception` either: it failed the whole group
                problem = f"raised SystemExit({exc.code!r}), as sys.exit() does, which ends"
                problem += " a program: a candidate that fails raises an Exception"
            else:
                problem = _unrun(output)
                if problem is None:
                    return output
            who = f"candidate {name!r}" if name is not None else "the candidate"
            raise Failed(pytest.fail.Exception(f"{who} {problem}", pytrace=False))

        try:
            if self.limit is None or name is None:
                return body()
            return self.limit.call(name, body)
        except Exception as exc:
            self._note_raised(candidate, exc)
            raise

    def _test(
        self,
        candidate: Callable[..., Any],
        arguments: Mapping[str, Any],
        scope: AbstractContextManager[None] | None,
        request: BodyRequest | None,
        undo: Sequence[Callable[[], object]],
    ) -> Any:
        """The test function's call, in `scope`; the finalizers it added to `request` run
        when it ends (`BodyRequest`), and its own patches are undone (`undo`)."""
        if self.draws is not None and not call_scope.entered():
            self.draws.restore()
        try:
            if scope is not None:
                with scope:
                    return self.test(candidate=candidate, **arguments)
            return self.test(candidate=candidate, **arguments)
        finally:
            for undone in undo:
                undone()
            if request is not None and request.finalizers:
                request.finish()

    def _note_raised(self, candidate: Callable[..., Any], exc: BaseException) -> None:
        """Keep a candidate whose body raised: not a decline, nor a stop at
        the time limit, which its test says in a line of its own."""
        if self.raised is not None and crashed(exc):
            self.raised.add(id(candidate))

    def __reduce__(self) -> tuple[Any, ...]:
        if self.own is not None or self.kept:
            # A test's own `request` and `monkeypatch` exist in this process only:
            # measured here instead.
            raise TypeError("a test body that takes its test's own fixtures does not pickle")
        return (
            CandidateRun,
            (self.test, self.others, None, None, self.filters, None, None, None, {}, self.instance),
        )


@dataclass(frozen=True)
class CandidateScope:
    """`autotune_scope` of a candidate's timed calls (`CandidateRun.scope_of`): its test's
    warning marks where they differ from the running test's, and its printed output and
    log records kept from the running test's capture (`call_fixtures.timed_calls_quiet`).
    It pickles with its `CandidateRun` and its filters: a fresh process that measures the
    winner again enters it as the gate does here."""

    run: CandidateRun
    name: str

    @contextlib.contextmanager
    def __call__(self) -> Iterator[None]:
        scope = self.run.filters.scope(self.name) if self.run.filters is not None else None
        with timed_calls_quiet(self.run.kept), scope or contextlib.nullcontext():
            yield


def _unrun(output: object) -> str | None:
    """Why a test body's output is a call not yet run, if it is: an `async def` candidate
    returns a coroutine and a generator function a generator, and neither runs a line
    until awaited or iterated. As the reference, every candidate that computed the answer
    differed from it, and the group fell back to it; timed, it was all but free. The
    coroutine is closed, else its "never awaited" warning, raised when it is collected,
    failed whichever test of a strict project ran then."""
    if inspect.iscoroutine(output):
        output.close()
        return (
            "returned a coroutine, which runs nothing until awaited: an `async def`"
            " candidate is run by the test body, as in `return asyncio.run(candidate(x))`"
        )
    if inspect.isgenerator(output) or inspect.isasyncgen(output):
        return (
            "returned a generator, which runs nothing until iterated: return its values"
            " from the test body, as in `return list(candidate(x))`"
        )
    return None


EXPECTED_TO_FAIL = "expected to fail: "
"""How a candidate's decline by `pytest.xfail()` in the test body begins."""


def _candidates_failure(exc: BaseException) -> BaseException:
    """`pytest.fail()` in the test body as the candidate's failure (`Failed`), but for
    pytest-timeout's alarm, its `pytest.fail` raised by its signal handler in whatever call
    the test was making, which is returned as it is. Taken for the candidate's failure, the
    alarm disqualified the candidate it happened to stop, and the group was judged, and
    written by `--autotune-update`, with the next one as its winner; it stops the tuning
    instead (`AutotuneSession.candidate_outcome`), which names the group."""
    tb = exc.__traceback__
    while tb is not None:
        if tb.tb_frame.f_globals.get("__name__") == "pytest_timeout":
            return exc
        tb = tb.tb_next
    return Failed(exc)


class Failed(Exception):
    """`pytest.fail()` in the test body, as the candidate's failure (named as pytest's own,
    which the messages show); the candidate's own test raises pytest's again."""

    def __init__(self, outcome: BaseException) -> None:
        super().__init__(str(outcome))
        self.outcome = outcome

    def pytests(self) -> BaseException:
        """pytest's own outcome, with what was said of this failure (the reference's, in
        another candidate's check: `check_mode`) noted on it."""
        for note in getattr(self, "__notes__", ()):
            self.outcome.add_note(note)
        return self.outcome


def called_again(
    run: CandidateRun, spec: ItemSpec, inputs: tuple[Any, ...]
) -> Callable[[], object]:
    """The test's candidate called once more through its body (`fixture.raise_again`),
    `pytest.fail()` in the body raised as pytest's own."""

    def call() -> object:
        try:
            fn = dict(spec.function.candidates)[spec.candidate]
            return run.named(spec.candidate, fn)(*clone_value(inputs))
        except Failed as exc:
            raise exc.pytests() from None

    return call


__all__ = [
    "EXPECTED_TO_FAIL",
    "RAISED",
    "CandidateRun",
    "CandidateScope",
    "Failed",
    "Instance",
    "arguments_of",
    "called_again",
    "candidate_run",
    "inputs_of",
]
