"""pytest-benchmark's `benchmark` fixture in an autotune test's body: who times the call.

A team that uses pytest-benchmark writes `return benchmark(candidate, x)`. Its fixture times
one call, once per test: the tuner, which calls the body thousands of times in the group's
first test, met `FixtureAlreadyUsed` from the second call on (every candidate failed), and
a plain run, which calls the reference's body in each other candidate's test, gave
pytest-benchmark the reference's figures under that test's name while the test's own
fixture, handed to the body as a copied input, was "not used at all" (an error under
`filterwarnings = error`). So the real fixture is never an input: a candidate's own call in its
own plain test gets the real one, which times it as pytest-benchmark does; every other call
(a reference, a timed call of the tuner) gets `CallOnce`, which calls the function once, as
`--benchmark-disable` does; and under --autotune each test's real fixture is used as
`--benchmark-disable` uses it, since the tuner, not pytest-benchmark, timed the body.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any


def is_benchmark_fixture(value: object) -> bool:
    """Whether `value` is pytest-benchmark's fixture, not a fixture of the user's that is
    also named `benchmark` (told by its class, so that pytest-benchmark is never imported)."""
    cls = type(value)
    return cls.__name__ == "BenchmarkFixture" and cls.__module__.startswith("pytest_benchmark")


def used_again(exc: BaseException) -> str | None:
    """Why a body failed, where it raised pytest-benchmark's `FixtureAlreadyUsed`: the real
    fixture reached where it cannot be stood in for (a function of the user's fixture that
    calls it, `lambda f, *a: benchmark.pedantic(f, args=a)`), whose second call raised.
    Bare, that read as pytest-benchmark's alone, every candidate failing under --autotune
    with no word of the tuner's many calls or of what to pass instead. None for any other
    error."""
    cls = type(exc)
    if cls.__name__ != "FixtureAlreadyUsed" or not cls.__module__.startswith("pytest_benchmark"):
        return None
    return (
        "called pytest-benchmark's fixture again (FixtureAlreadyUsed) through a function of"
        " another fixture: the body runs once per check and per sample of --autotune, and"
        " pytest-autotune stands in for the fixture only where the test takes it as an"
        " argument; take `benchmark` itself as the test's argument (or a fixture that"
        " returns it) and call it in the body"
    )


class CallOnce:
    """pytest-benchmark's fixture where it does not time: each call runs its function once
    and returns its result (`pedantic` with its `setup` and `teardown`), as under
    `--benchmark-disable`; `extra_info` and `group` may be set and go nowhere."""

    enabled = False
    disabled = True

    def __init__(self) -> None:
        self.extra_info: dict[str, Any] = {}
        self.group: str | None = None

    def __call__(self, function: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        return function(*args, **kwargs)

    def pedantic(
        self,
        target: Callable[..., Any],
        args: tuple[Any, ...] = (),
        kwargs: Mapping[str, Any] | None = None,
        setup: Callable[[], Any] | None = None,
        teardown: Callable[..., Any] | None = None,
        rounds: int = 1,
        warmup_rounds: int = 0,
        iterations: int = 1,
    ) -> Any:
        kwargs = dict(kwargs or {})
        if setup is not None:
            made = setup()
            if made:  # pytest-benchmark's rule: `setup` may return `(args, kwargs)`
                args, kwargs = made
        result = target(*args, **kwargs)
        if teardown is not None:
            teardown(*args, **kwargs)
        return result


class OwnBenchmark:
    """The real fixture for the first call of the test's own candidate in a plain run,
    `CallOnce` for every other call (`CandidateRun`). `fixtures`: the test's arguments
    that are pytest-benchmark's fixture, by name (`real_fixtures`)."""

    def __init__(self, fixtures: Mapping[str, object], candidate: Callable[..., Any]) -> None:
        self._fixtures = dict(fixtures)
        self._candidate = candidate

    def __call__(self, candidate: Callable[..., Any]) -> dict[str, object]:
        if candidate is not self._candidate:
            return {}
        fixtures, self._fixtures = self._fixtures, {}
        return fixtures


class FixtureValues:
    """pytest-benchmark's fixture as `request.getfixturevalue` gives it to a candidate's
    body, by the rule of the body's argument (`stand_in`, `OwnBenchmark`): the real one for
    the test's own candidate in a plain run, once; `CallOnce` for every other call. Asked
    of pytest, the real one went to every call: under --autotune the tuner's second timed
    call met `FixtureAlreadyUsed` (every candidate failed), and in a plain run the
    reference's call in another test used that test's fixture up, and pytest-benchmark
    left the test out of its figures. One per test: `used`, the fixtures of its arguments
    that `stand_in` used up."""

    def __init__(self, *, tuning: bool, used: Mapping[str, object]) -> None:
        self._tuning = tuning
        self._used = {id(f) for f in used.values()} if tuning else set()

    def value(self, value: Any, *, own: bool) -> Any:
        """What the body of the test's own candidate (`own`), or of another, gets for
        `value`, what pytest gave for a fixture name."""
        if not is_benchmark_fixture(value):
            return value
        if id(value) not in self._used and (own or self._tuning):
            self._used.add(id(value))
            if not self._tuning:
                return value
            _use_up(value)
        return CallOnce()


def real_fixtures(arguments: Mapping[str, Any]) -> dict[str, Any]:
    """The arguments that are pytest-benchmark's fixture, by name: `benchmark` itself, or a
    fixture of the user's that returns it (`def bench(benchmark)`)."""
    return {name: value for name, value in arguments.items() if is_benchmark_fixture(value)}


def stand_in(arguments: dict[str, Any], *, tuning: bool) -> dict[str, Any]:
    """`arguments` (a test's fixture values, by name) with `CallOnce` in place of
    pytest-benchmark's fixture. Under --autotune the real one is used as
    `--benchmark-disable` uses it, timing nothing and reporting no figures: left unused,
    its teardown warned that the test never used it."""
    real = real_fixtures(arguments)
    if not real:
        return arguments
    if tuning:
        # One fixture may come under two names (`benchmark` and the user's `bench`); it
        # can be used once.
        for fixture in {id(f): f for f in real.values()}.values():
            _use_up(fixture)
    call_once = CallOnce()
    return {**arguments, **dict.fromkeys(real, call_once)}


def _use_up(fixture: Any) -> None:
    """Use the real fixture as `--benchmark-disable` does: it times nothing, reports no
    figures, and its teardown does not warn that the test never used it."""
    fixture.disabled = True
    fixture(_nothing)


def _nothing() -> None:
    return None


def nothing_to_save(config: Any) -> None:
    """After a tuning run's tests: where pytest-benchmark holds no figures (the tuner, not
    pytest-benchmark, timed the autotune tests, and no other test was selected), it is
    marked disabled, so that its end of the session saves nothing and says nothing, as
    under `--benchmark-disable`. It warned "Not saving anything, no benchmarks have been
    run!" where `--benchmark-json` or `--benchmark-autosave` was set (a project's
    `addopts`); under `filterwarnings = error` that warning, raised at the session's end
    before this plugin's, lost the run's cache files, records and report."""
    session = getattr(config, "_benchmarksession", None)
    if session is not None and not session.benchmarks:
        session.disabled = True


__all__ = [
    "CallOnce",
    "FixtureValues",
    "OwnBenchmark",
    "is_benchmark_fixture",
    "nothing_to_save",
    "real_fixtures",
    "stand_in",
    "used_again",
]
