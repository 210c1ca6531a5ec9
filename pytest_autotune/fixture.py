"""The `autotune` fixture: tune or check a production `TunableSet` from a test, and what it
shares with the marker's tests (each candidate's name for a time limit's message, the
limit itself, the check that a key can be cached)."""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from typing import Any

import pytest

from pytest_autotune.check_mode import check_candidate
from pytest_autotune.marker_options import option_error, work_error
from pytest_autotune.session import AutotuneSession, GroupRequest
from pytest_autotune.time_limit import TimeLimit, TimeLimitExceeded
from pytest_autotune.tune.errors import AutotuneSkip
from pytest_autotune.tune.files import dumps
from pytest_autotune.tune.key import key_to_json
from pytest_autotune.tune.local import LocalTuner
from pytest_autotune.tune.settings import DEFAULT_TIME_LIMIT_S
from pytest_autotune.tune.tunable_set import TunableSet, clone_value

SESSION = pytest.StashKey[AutotuneSession]()


class Names:
    """The name of a candidate function, for a time limit's message."""

    def __init__(self, candidates: tuple[tuple[str, Callable[..., Any]], ...]) -> None:
        self._by_id = {id(fn): name for name, fn in candidates}

    def __call__(self, fn: Callable[..., Any]) -> str:
        return self._by_id.get(id(fn), "the reference")


def time_limit(session: AutotuneSession, options: Mapping[str, Any]) -> TimeLimit:
    """The marker's limit, else the settings' (command line, environment, YAML, ini), else
    the default under --autotune; a plain run has none unless one is set."""
    seconds = session.settings.for_marker(options).engine.time_limit
    if seconds is None and session.settings.tune:
        seconds = DEFAULT_TIME_LIMIT_S
    return TimeLimit(seconds)


def checked_key(value: Any, what: str) -> Any:
    """A key the cache can hold: hashable, JSON, and finite (JSON has no NaN or inf)."""
    try:
        hash(value)
        dumps(key_to_json(value))
    except (TypeError, ValueError) as exc:
        pytest.fail(f"{what} returned an unusable key {value!r}: {exc}", pytrace=False)
    return value


@pytest.fixture
def autotune(request: pytest.FixtureRequest) -> Callable[..., Any]:
    """Tune (with --autotune) or check (plain pytest) a production `TunableSet`.

    `out = autotune(TUNER.init(make_set), x, work=..., thresholds=...)` returns the output
    of the winner (or of the reference, in check mode), with the same checks, records and
    gate as the marker. The cache file is named after the set's `LocalTuner` (the one whose
    `init` built it, or `tuner=`), so the library ships what its tests tuned; a set of no
    tuner is named after the test. `check_output=False` for candidates that return nothing
    to compare.
    """
    return functools.partial(_run_set, request.config.stash[SESSION], request.node.nodeid)


def _run_set(
    session: AutotuneSession,
    nodeid: str,
    tunables: TunableSet,
    *inputs: Any,
    work: Any = None,
    thresholds: Any = None,
    reference: Callable[..., Any] | None = None,
    rtol: float | None = None,
    atol: float | None = None,
    max_regression: float | None = None,
    tuner: LocalTuner | str | None = None,
    check_output: bool = True,
) -> Any:
    """One call of the fixture: its arguments checked, then the set checked or tuned."""
    if not isinstance(tunables, TunableSet):
        pytest.fail(
            f"{nodeid}: the autotune fixture takes a TunableSet first, got {tunables!r};"
            " build one with TunableSet(key_gen, tunables=[Tunable(name, fn), ...])",
            pytrace=False,
        )
    options = {
        "work": work,
        "thresholds": thresholds,
        "reference": reference,
        "rtol": rtol,
        "atol": atol,
        "max_regression": max_regression,
        "check_output": check_output,
    }
    checked = ("thresholds", "rtol", "atol", "check_output", "max_regression", "work")
    _fail_on(nodeid, option_error({"tuner": tuner, **{name: options[name] for name in checked}}))
    candidates = tuple(zip(tunables.names, tunables.fns, strict=True))
    names = Names(candidates)
    limit = time_limit(session, {})

    def run(candidate: Callable[..., Any], *values: Any) -> Any:
        return limit.call(names(candidate), candidate, *values)

    with limit.armed(), session.level_scope({}):
        try:
            options["work"] = work(*inputs) if callable(work) else work
            _fail_on(nodeid, work_error(options["work"]))
            # Called in check mode too: a key_gen that fails or returns what cannot be
            # cached fails the plain run, not only --autotune (or the library's callers).
            key = checked_key(tunables.key_gen(*inputs), f"{nodeid}: the set's key_gen")
            if not session.settings.tune:
                return _check_set(session, candidates, run, inputs, options)
            group = GroupRequest(
                group=nodeid,
                tuner_name=fixture_tuner_name(tunables, tuner, nodeid),
                key=key,
                candidates=candidates,
                run=run,
                inputs=inputs,
                options=options,
                tunables=tunables,
            )
            return _tune_set(session, group)
        except TimeLimitExceeded as exc:
            pytest.fail(f"{nodeid}: candidate {exc.name!r} {exc}", pytrace=False)


def _tune_set(session: AutotuneSession, group: GroupRequest) -> Any:
    """Tune mode: the group tuned and judged; the winner's output."""
    failures = [f for name, _ in group.candidates if (f := session.candidate_outcome(group, name))]
    if failures:
        pytest.fail("\n\n".join(failures), pytrace=False)
    return session.run_winner(group)


def _check_set(
    session: AutotuneSession,
    candidates: tuple[tuple[str, Callable[..., Any]], ...],
    run: Callable[..., Any],
    inputs: tuple[Any, ...],
    options: Mapping[str, Any],
) -> Any:
    """Check mode: every candidate against the reference; the reference's output (else the
    first candidate's that does not decline). A candidate that raises `AutotuneSkip` declines
    these inputs and is left out, as tuning leaves it out; the test is skipped when every
    candidate declines."""
    reference = options["reference"]
    failures: list[str] = []
    declined: dict[str, str] = {}  # name: why
    for name, _ in candidates:
        try:
            failure = check_candidate(
                name,
                candidates,
                run,
                inputs,
                reference=reference,
                config=session.settings.for_marker(options).engine,
                check_output=options["check_output"],
            )
        except AutotuneSkip as exc:
            declined[name] = str(exc)
            continue
        if failure:
            failures.append(failure)
    if failures:
        pytest.fail("\n\n".join(failures), pytrace=False)
    if len(declined) == len(candidates):
        said = ", ".join(f"{name!r} ({why})" for name, why in declined.items())
        pytest.skip(f"every candidate declined: {said}")
    if reference is not None:
        return run(reference, *clone_value(inputs))
    first = next(fn for name, fn in candidates if name not in declined)
    return run(first, *clone_value(inputs))


def _fail_on(nodeid: str, error: str | None) -> None:
    """A fixture argument's error, in the fixture's words."""
    if error is not None:
        pytest.fail(
            f"{nodeid}: {error.replace('@pytest.mark.autotune', 'autotune')}", pytrace=False
        )


def fixture_tuner_name(tunables: TunableSet, tuner: LocalTuner | str | None, nodeid: str) -> str:
    """The tuner a fixture call tunes for: `tuner=`, else the set's own, else the test's."""
    if isinstance(tuner, LocalTuner):
        return tuner.name
    return tuner or tunables.tuner or nodeid.split("[", 1)[0]
