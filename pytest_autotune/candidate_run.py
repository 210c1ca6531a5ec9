"""A candidate's call of the test body: the test function called with one candidate and the
test's other arguments (`CandidateRun`), as a plain run checks each candidate and tuning
times it, with the candidate's own test's fixtures, marks and instance."""

from __future__ import annotations

import contextlib
import functools
import inspect
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import Any

import pytest

from pytest_autotune.benchmark_fixture import FixtureValues, OwnBenchmark, used_again
from pytest_autotune.body_arguments import input_names
from pytest_autotune.body_outcomes import (
    EXPECTED_TO_FAIL,
    BodyFailed,
    Failed,
    candidates_failure,
    unrun,
)
from pytest_autotune.body_state import GlobalDraws, Instance
from pytest_autotune.call_fixtures import (
    EachCall,
    each_call,
    folder_given,
    kept_fixtures,
    timed_calls_quiet,
)
from pytest_autotune.call_limit import Names
from pytest_autotune.collection import GROUP_ITEMS, ITEM, ItemSpec
from pytest_autotune.group_marks import warning_marks
from pytest_autotune.own_request import OWN, BodyRequest, OwnFixtures
from pytest_autotune.time_limit import TimeLimit, crashed
from pytest_autotune.tune import call_scope
from pytest_autotune.tune.clone import clone_value
from pytest_autotune.tune.errors import AutotuneSkip
from pytest_autotune.warning_marks import MarkFilters, parse_filters, project_filters

RAISED = pytest.StashKey[dict[str, set[int]]]()
"""The candidates of each group whose test body raised while the group was tuned, as the
`id` of their function: one function under two names raised for both (`Names` knows it by
one of them), and the group's spec keeps each function alive."""


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
    others = input_names(arguments)
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
    that each one's own test can show its traceback (`failing.raise_again`)."""
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
            # Entered by the tuner around a timed call, outside its timer (`call_scope`).
            scope = (
                self.filters.scope(name)
                if self.filters and name is not None and not call_scope.entered()
                else None
            )
            return self._outcome(name, candidate, arguments, scope, request, undo)

        try:
            if self.limit is None or name is None:
                return body()
            return self.limit.call(name, body)
        except Exception as exc:
            self._note_raised(candidate, exc)
            raise

    def _outcome(
        self,
        name: str | None,
        candidate: Callable[..., Any],
        arguments: Mapping[str, Any],
        scope: AbstractContextManager[None] | None,
        request: BodyRequest | None,
        undo: Sequence[Callable[[], object]],
    ) -> Any:
        """The body's output (`_test`), or its outcome as the candidate's own: pytest's
        outcomes raised in the body are not `Exception`s, and each went through the check
        of another candidate's test, and through tuning, and gave its outcome to the
        group's every test, those of candidates that ran included, leaving the group
        untuned. Here `pytest.skip()` declines the candidate (or the inputs), as
        `AutotuneSkip` does; `pytest.xfail()` declines it as expected to fail;
        `pytest.fail()`, `sys.exit()` and a `GeneratorExit` are its failure."""
        problem: str | None
        failure = Failed
        try:
            output = self._test(candidate, arguments, scope, request, undo)
        except pytest.skip.Exception as exc:
            raise AutotuneSkip(exc.msg) from None
        except pytest.xfail.Exception as exc:
            raise AutotuneSkip(f"{EXPECTED_TO_FAIL}{exc.msg}") from None
        except pytest.fail.Exception as exc:
            raise candidates_failure(exc) from None
        except SystemExit as exc:  # not an `Exception` either: it failed the whole group
            problem = f"raised SystemExit({exc.code!r}), as sys.exit() does, which ends"
            problem += " a program: a candidate that fails raises an Exception"
        except GeneratorExit:
            # Nor this one: it went up through the tuning as pytest-timeout's alarm does,
            # failing the group's first test with a hint about a test timeout.
            problem = "raised GeneratorExit, which closes a generator: a candidate that"
            problem += " fails raises an Exception"
        except Exception as exc:
            problem = used_again(exc)
            if problem is None:
                raise
            failure = BodyFailed  # the body's failure, not this candidate's (`check_mode`)
        else:
            problem = unrun(output)
            if problem is None:
                return output
        who = f"candidate {name!r}" if name is not None else "the candidate"
        raise failure(pytest.fail.Exception(f"{who} {problem}", pytrace=False))

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


def called_again(
    run: CandidateRun, spec: ItemSpec, inputs: tuple[Any, ...]
) -> Callable[[], object]:
    """The test's candidate called once more through its body (`failing.raise_again`),
    `pytest.fail()` in the body raised as pytest's own."""

    def call() -> object:
        try:
            fn = dict(spec.function.candidates)[spec.candidate]
            return run.named(spec.candidate, fn)(*clone_value(inputs))
        except Failed as exc:
            raise exc.pytests() from None

    return call


__all__ = [
    "RAISED",
    "CandidateRun",
    "CandidateScope",
    "called_again",
    "candidate_run",
]
