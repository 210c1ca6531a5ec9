"""The bad-input matrix (issue 15): every input a user can get wrong, one row each.

Each row runs pytest in-process on a project that also holds a bystander test with a
committed baseline, records and a report, and asserts four things: the exit code; one line
of output naming the source and the value; no traceback through our package (and no
INTERNALERROR); and that nothing already there was lost or overwritten (the bystander's
cache keeps its entry, the record file keeps its first line, a bad cache file is left as
it was). Warnings are errors in every row, as in a strict project.
"""

from __future__ import annotations

import json
import textwrap
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from pytest_autotune.tune import journal
from pytest_autotune.tune.benchmark import AutotuneOutcome
from pytest_autotune.tune.cache import (
    PersistentCache,
    PersistentCacheKey,
    PersistentCacheValue,
    cache_path,
)
from pytest_autotune.tune.key import key_to_json, stable_key
from pytest_autotune.tune.tunable_set import checksum_of
from tests.plugin.harness import BOTH_MODES, FAKE_CONFTEST, noted, run

OK, FAILED, INTERRUPTED, USAGE = 0, 1, 2, 4
DEVICE = Path(".autotune/cpu-fake-1t")
TARGET = cache_path(Path(".autotune"), "cpu-fake-1t", "test_x.py::test_x")
KEEP = cache_path(Path(".autotune"), "cpu-fake-1t", "test_keep.py::test_keep")
RECORD_SEED = '{"kept": "a record from an earlier run"}\n'

GOOD_AND_OTHER = """
import pytest
from conftest import spin

def good(n):
    spin(100e-6)
    return n * 2

def other(n):
    spin(200e-6)
    return n * 2
"""
"""Two candidates that agree, `good` the faster: test_x's prelude and the bystander's."""

PRELUDE = (
    GOOD_AND_OTHER
    + """
import asyncio
import math
from pytest_autotune import Thresholds, TuneGroup, Tunable, TunableSet, Work

def wrong(n):
    spin(50e-6)
    return n * 3
"""
)

KEEP_TESTS = (
    GOOD_AND_OTHER
    + """
@pytest.mark.autotune(candidates={"good": good, "other": other})
def test_keep(candidate):
    return candidate(3)
"""
)


@dataclass(frozen=True)
class Case:
    id: str
    mode: str
    """"check" (plain pytest), "tune" (--autotune) or "update" (--autotune-update)."""
    ret: int
    line: tuple[str, ...]
    """Fragments that must all appear on one line of output."""
    tests: str = ""
    """The body of test_x.py after the prelude."""
    args: tuple[str, ...] = ()
    env: dict[str, str] = field(default_factory=dict)
    target: str | bytes | None = None
    """The contents of test_x's cache file before the run (left as it was after)."""
    setup: Callable[[Path], None] | None = None
    check: Callable[[Path, str], None] | None = None
    """Any further assertion on the project after the run and the output."""


def marker(options: str, body: str = "return candidate(n)") -> str:
    return textwrap.dedent(
        f"""
        @pytest.mark.autotune(candidates={{"good": good, "other": other}}, {options})
        @pytest.mark.parametrize("n", [1])
        def test_x(candidate, n):
            {body}
        """
    )


def marked_test(arguments: str, sizes: str | None = None) -> str:
    """test_x marked `@pytest.mark.autotune(<arguments>)`, which returns its candidate's
    output for 1, or for each of `sizes` as its parameter `n`."""
    if sizes is None:
        return textwrap.dedent(
            f"""
            @pytest.mark.autotune({arguments})
            def test_x(candidate):
                return candidate(1)
            """
        )
    return textwrap.dedent(
        f"""
        @pytest.mark.autotune({arguments})
        @pytest.mark.parametrize("n", {sizes})
        def test_x(candidate, n):
            return candidate(n)
        """
    )


def cache_text(
    samples: str = "[100000, 100000]", index: str = "0", version: str = "2", top: str = ""
) -> str:
    """A cache file of one entry; `top`, more top-level fields, each followed by a comma."""
    return (
        f'{{"schema_version": {version}, {top}"entries": [{{"key": "1", "checksum": "0",'
        f' "fastest_index": {index}, "fastest_name": "good", "bounds": null,'
        f' "results": [{{"name": "good", "index": 0, "samples_ns": {samples}}}]}}]}}\n'
    )


def not_in(output: str, *fragments: str) -> None:
    for fragment in fragments:
        assert fragment not in output, output


def no_file(path: Path) -> Callable[[Path, str], None]:
    def check(root: Path, output: str) -> None:
        assert not (root / path).exists(), f"{path} was written"

    return check


def entries(path: Path) -> Callable[[Path, str], None]:
    def check(root: Path, output: str) -> None:
        data = json.loads((root / path).read_text(encoding="utf-8"))
        assert len(data["entries"]) == 1, data["entries"]

    return check


def no_raw_escape(root: Path, output: str) -> None:
    assert "\x1b" not in output and "\x07" not in output


def two_files_for_two_names(root: Path, output: str) -> None:
    names = sorted(p.name for p in (root / DEVICE).glob("test_x.py__test_*.json"))
    assert len(names) == 2, names


def one_group_per_size(root: Path, output: str) -> None:
    data = json.loads((root / TARGET).read_text(encoding="utf-8"))
    assert sorted(e["key"] for e in data["entries"]) == ["1", "2"]


OTHER_TESTS_FILE = cache_text().replace(
    '"schema_version": 2,', '"schema_version": 2, "tuner": "other.py::test_x",'
)
"""A file at test_x's name that stores another test's name: two names on one file."""


def torn_journal(root: Path) -> None:
    base = journal.digest(cache_text().encode())
    line = journal_line('"2"')
    (root / DEVICE).mkdir(parents=True, exist_ok=True)
    (root / f"{TARGET}.journal").write_text(journal.header(base) + line + line[:30])


def damaged_journal(root: Path) -> None:
    base = journal.digest(cache_text().encode())
    (root / DEVICE).mkdir(parents=True, exist_ok=True)
    (root / f"{TARGET}.journal").write_text(journal.header(base) + "{not json\n")


def journal_line(key: str) -> str:
    entry = json.loads(cache_text())["entries"][0]
    return journal.entry_line({**entry, "key": json.loads(key)})


def lock_is_a_directory(root: Path) -> None:
    (root / DEVICE / f".{TARGET.name}.lock").mkdir(parents=True)


def target_is_a_directory(root: Path) -> None:
    (root / TARGET).mkdir(parents=True)


def cache_dir_is_a_file(root: Path) -> None:
    (root / "afile").write_text("not a folder\n")


def record_is_a_directory(root: Path) -> None:
    (root / "records").mkdir()


def bad_setting_file(id: str, mode: str, said: tuple[str, ...], text: str) -> Case:
    """A row whose autotune.yaml holds `text`, which stops the run saying `said`."""

    def setup(root: Path) -> None:
        (root / "autotune.yaml").write_text(text)

    return Case(id, mode, USAGE, said, marker(""), setup=setup)


def bad_variable(id: str, mode: str, said: tuple[str, ...], **env: str) -> Case:
    """A row run with the environment variable in `env`, which stops the run saying `said`."""
    return Case(id, mode, USAGE, said, marker(""), env=env)


def unreadable_cache(id: str, said: tuple[str, ...], target: str, mode: str = "tune") -> Case:
    """A row whose test_x cache file holds `target`, which cannot be read: a gate says `said`
    and passes (the group has no baseline); an update says it and fails."""
    return Case(id, mode, OK if mode == "tune" else FAILED, said, marker(""), target=target)


UNRUN = """
async def coro(n):
    spin(10e-6)
    return n * 2

def gen(n):
    spin(10e-6)
    yield n * 2

@pytest.mark.autotune(candidates={{"{first}": {first}, "{second}": {second}}})
def test_x(candidate):
    return candidate(1)
"""
"""A candidate whose call runs nothing (a coroutine, a generator) beside one that works."""

BESIDE_GOOD = """
def {name}(n):
    {body}

@pytest.mark.autotune(candidates={{"good": good, "{name}": {name}}})
def test_x(candidate):
    return candidate(1)
"""
"""test_x over `good` and a candidate `name` whose body is `body`."""


def _passed_and_failed(output: str, passed: str, failed: str) -> None:
    """The working candidate's test passes, the other's fails, and nothing else does (a
    coroutine never awaited warns when collected, which fails a later test of a strict
    project)."""
    assert f"FAILED test_x.py::test_x[{failed}]" in output, output
    assert f"test_x[{passed}]" not in output, output
    assert "never awaited" not in output, output


def failing_beside_good(id: str, mode: str, name: str, said: tuple[str, ...], tests: str) -> Case:
    """A row whose candidate `name` fails its test, saying `said` after its name, while
    `good`'s test passes (`_passed_and_failed`)."""
    return Case(
        id,
        mode,
        FAILED,
        (f"candidate '{name}'", *said),
        tests,
        check=lambda root, output: _passed_and_failed(output, "good", name),
    )


def mutation_tests() -> str:
    return textwrap.dedent(
        """
        import numpy as np

        class State:
            def __init__(self):
                self.buffer = np.zeros(4)

        STATE = State()

        @pytest.fixture(scope="module")
        def state():
            return STATE

        def scribble(state):
            spin(100e-6)
            state.buffer[:] = 7.0
            return float(state.buffer.sum())

        def tidy(state):
            spin(200e-6)
            return float(state.buffer.sum()) * 0 + 28.0

        @pytest.mark.autotune(candidates={"scribble": scribble, "tidy": tidy})
        def test_x(candidate, state):
            return candidate(state)

        def test_z_the_fixture_is_unchanged(state):
            assert state.buffer.sum() == 0.0
        """
    )


HANG = textwrap.dedent(
    """
    import time

    def hang(n):
        time.sleep(30)
        return n * 2

    @pytest.mark.autotune(candidates={"good": good, "hang": hang}, time_limit=0.3)
    @pytest.mark.parametrize("n", [1])
    def test_x(candidate, n):
        return candidate(n)
    """
)

FIXTURE = """
def make():
    return TunableSet(lambda n: n, tunables=(Tunable("good", good), Tunable("other", other)))

def make_grouped():
    g = TuneGroup("g", lambda key: None)
    return TunableSet(lambda n: n).with_(Tunable("good", good).group(g, lambda key: 1))

def test_x(autotune):
    autotune({call})
"""

# The fixture given a set whose second candidate hangs, with a limit of its own.
FIXTURE_HANG = HANG.split("@pytest.mark.autotune")[0] + FIXTURE.replace(
    'Tunable("other", other)', 'Tunable("hang", hang)'
).format(call="make(), 1, time_limit=0.3")

DEEP = "[" * 100_000 + "]" * 100_000

CASES = [
    # -- wrong candidates never pass
    Case(
        "body without return",
        "check",
        FAILED,
        ("returned None", "check_output=False"),
        marker("", "candidate(n)"),
    ),
    Case(
        "body without return, tuned",
        "tune",
        FAILED,
        ("candidate 'other' cannot be checked: ", "returned None", "nothing to compare"),
        marker("", "candidate(n)"),
        # As plain pytest says it: not "failed its check: cannot be checked: ...".
        check=lambda root, output: not_in(output, "failed its check: cannot be checked"),
    ),
    Case(
        "body without return, update",
        "update",
        FAILED,
        ("returned None",),
        marker("", "candidate(n)"),
        check=no_file(TARGET),
    ),
    Case(
        "body without return, opted out",
        "check",
        OK,
        ("passed",),
        marker("check_output=False", "candidate(n)"),
    ),
    Case(
        "two lambdas",
        "check",
        FAILED,
        ("both named '<lambda>'", "candidates 0"),
        textwrap.dedent(
            """
             @pytest.mark.autotune()
             @pytest.mark.parametrize("candidate", [lambda n: n * 2, lambda n: n * 3])
             def test_x(candidate):
                 return candidate(1)
             """
        ),
    ),
    # A row of candidate and size: the plugin parametrized `candidate` again, and pytest's
    # "duplicate parametrization" stopped the collection of every test of the session.
    Case(
        "candidate parametrized with another name",
        "check",
        FAILED,
        ("parametrize('candidate, n', ...) gives `candidate` with n", "of their own"),
        textwrap.dedent(
            """
             @pytest.mark.autotune()
             @pytest.mark.parametrize("candidate, n", [(good, 1), (other, 1)])
             def test_x(candidate, n):
                 return candidate(n)
             """
        ),
    ),
    Case(
        "candidate parametrized with another name, tuned",
        "tune",
        FAILED,
        ("parametrize('n, candidate', ...) gives `candidate` with n", "of their own"),
        textwrap.dedent(
            """
             @pytest.mark.autotune(candidates={"good": good, "other": other})
             @pytest.mark.parametrize(("n", "candidate"), [(1, good), (1, other)])
             def test_x(candidate, n):
                 return candidate(n)
             """
        ),
    ),
    Case(
        "two functions named alike",
        "check",
        FAILED,
        ("both named 'good'", "wrong"),
        "wrong.__name__ = 'good'\n"
        + textwrap.dedent(
            """
             @pytest.mark.autotune()
             @pytest.mark.parametrize("candidate", [good, wrong])
             def test_x(candidate):
                 return candidate(1)
             """
        ),
    ),
    Case(
        "empty candidate name",
        "check",
        FAILED,
        ("candidate 0 (test_x.good) has an empty name",),
        marked_test('candidates={"": good, "other": other}'),
    ),
    Case(
        "empty candidate name, tuned",
        "tune",
        FAILED,
        ("candidate 0 (test_x.good) has an empty name",),
        marked_test('candidates={"": good, "other": other}'),
    ),
    Case(
        "dict names 1 and '1'",
        "check",
        FAILED,
        ("both named '1'",),
        marked_test('candidates={1: good, "1": wrong}'),
    ),
    Case("rtol inf", "check", FAILED, ("rtol=inf", "cannot fail"), marker("rtol=math.inf")),
    Case("rtol -1", "check", FAILED, ("rtol=-1", "finite number >= 0"), marker("rtol=-1")),
    Case("atol nan", "check", FAILED, ("atol=nan",), marker("atol=math.nan")),
    Case(
        "rtol string",
        "check",
        FAILED,
        ("rtol='1e-3'", "expected a finite number"),
        marker("rtol='1e-3'"),
    ),
    Case("atol x", "tune", FAILED, ("atol='x'",), marker("atol='x'")),
    Case(
        "rtol an integer past a float's range",
        "check",
        FAILED,
        ("rtol=1000000", "expected a finite number"),
        marker("rtol=10**400"),
    ),
    Case(
        "max_regression negative",
        "tune",
        FAILED,
        ("max_regression=-0.5",),
        marker("max_regression=-0.5"),
    ),
    Case(
        "max_regression percent",
        "tune",
        FAILED,
        ("max_regression='10%'",),
        marker("max_regression='10%'"),
    ),
    Case(
        "max_regression as a whole percent",
        "check",
        FAILED,
        ("max_regression=10", "a fraction from 0 to 1, such as 0.1 for 10%"),
        marker("max_regression=10"),
    ),
    Case(
        "wrong candidate still fails",
        "check",
        FAILED,
        ("candidate 'wrong' differs",),
        marked_test('candidates={"good": good, "wrong": wrong}'),
    ),
    # -- marker values of the wrong kind
    Case(
        "thresholds float",
        "tune",
        FAILED,
        ("thresholds=0.5", "Thresholds("),
        marker("thresholds=0.5"),
    ),
    Case(
        "thresholds without work",
        "check",
        FAILED,
        ("thresholds=Thresholds(compute=1.0, memory=0.9)", "without work=", "no floor"),
        marker("thresholds=Thresholds(memory=0.9)"),
    ),
    Case(
        "thresholds without work, tuned",
        "tune",
        FAILED,
        ("thresholds=", "without work=", "no floor"),
        marker("thresholds=Thresholds(memory=0.9)"),
    ),
    Case(
        "thresholds memory string",
        "check",
        INTERRUPTED,
        ("Thresholds: memory must be a number", "'0.3'"),
        marker("thresholds=Thresholds(memory='0.3')"),
    ),
    Case(
        "thresholds negative",
        "check",
        INTERRUPTED,
        ("Thresholds: compute must be >= 0", "-1"),
        marker("thresholds=Thresholds(compute=-1)"),
    ),
    Case("work 42", "tune", FAILED, ("work=42", "Work("), marker("work=42")),
    Case(
        "work returning 42", "tune", FAILED, ("work=...) returned 42",), marker("work=lambda n: 42")
    ),
    Case(
        "work bytes string",
        "check",
        INTERRUPTED,
        ("Work: bytes must be a number", "'x'"),
        marker("work=Work(bytes='x')"),
    ),
    Case(
        "work asking for a missing fixture",
        "tune",
        FAILED,
        ("work=", "asks for ['m']"),
        marker("work=lambda m: Work(bytes=m)"),
    ),
    # What tuning would evaluate first fails plain pytest too (the run every CI job makes).
    Case(
        "work asking for a missing fixture, check",
        "check",
        FAILED,
        ("work=", "asks for ['m']"),
        marker("work=lambda m: Work(bytes=m)"),
    ),
    Case(
        "work returning 42, check",
        "check",
        FAILED,
        ("work=...) returned 42",),
        marker("work=lambda n: 42"),
    ),
    # One key and one work for a group's candidates: asking for the candidate made them
    # the first one's, and a `-k` run of another's test looked under another key.
    Case(
        "key asking for the candidate",
        "check",
        FAILED,
        ("key= asks for `candidate`", "may not depend on the candidate"),
        marker("key=lambda candidate, n: (candidate.__name__, n)"),
    ),
    Case(
        "work asking for the candidate, tuned",
        "tune",
        FAILED,
        ("work= asks for `candidate`", "available: ['n']"),
        marker("work=lambda candidate, n: Work(n, n)"),
    ),
    Case(
        # A key of a counter (or the time, or random draws) gave each test of the group
        # another key: all passed, and the group was filed under its first test's key,
        # which no later run made again, so every gate read "no baseline". This one moves
        # between tests only, as it is asked twice in the group's first test.
        "key that changes between the tests of a group, tuned",
        "tune",
        FAILED,
        ("test_x.py::test_x[other-1]: key= gave 2", "gave 1 in test_x.py::test_x[good-1]"),
        marker("key=lambda n, _calls=[]: _calls.append(n) or (len(_calls) + 1) // 2"),
    ),
    Case(
        "key that changes between the tests of a group, check",
        "check",
        FAILED,
        ("test_x.py::test_x[other-1]: key= gave 2", "must be the same each time"),
        marker("key=lambda n, _calls=[]: _calls.append(n) or (len(_calls) + 1) // 2"),
    ),
    Case(
        # Each checked call restores the global generators' states, the key's own draws
        # undone: every test of the group drew the same key, and the next run another.
        "key of random draws, tuned",
        "tune",
        FAILED,
        ("key= gave", "then", "when asked again", "must be the same each time"),
        marker("key=lambda n: __import__('random').random()"),
    ),
    Case(
        "key of random draws, check",
        "check",
        FAILED,
        ("key= gave", "then", "when asked again", "must be the same each time"),
        marker("key=lambda n: __import__('random').random()"),
    ),
    Case(
        "key NaN, check",
        "check",
        FAILED,
        ("key= returned an unusable key nan",),
        marker("key=lambda n: math.nan"),
    ),
    Case("groups [1]", "tune", FAILED, ("groups=[1]", "TuneGroup"), marker("groups=[1]")),
    Case(
        "groups priority string",
        "tune",
        FAILED,
        ("groups=", "int priority"),
        marker("groups=[(TuneGroup('g', lambda k: 1), {'good': 'high'})]"),
    ),
    Case(
        "groups unknown candidate",
        "tune",
        FAILED,
        ("groups= names no candidate 'nope'",),
        marker("groups=[(TuneGroup('g', lambda k: 1), {'nope': 1})]"),
    ),
    Case(
        "groups unknown candidate, plain run",
        "check",
        FAILED,
        ("groups= names no candidate 'nope'",),
        marker("groups=[(TuneGroup('g', lambda k: 1), {'nope': 1})]"),
    ),
    Case(
        "group priority returning None, tuned",
        "tune",
        FAILED,
        ("test_x.py::test_x: TuneGroup 'g': priority(", "returned None", "must return a number"),
        marker("groups=[(TuneGroup('g', lambda k: None), {'good': 1})]"),
    ),
    Case(
        # The plain run every CI job makes passed it; only --autotune evaluated the groups.
        "group priority returning None, plain run",
        "check",
        FAILED,
        ("test_x.py::test_x: TuneGroup 'g': priority(", "returned None", "must return a number"),
        marker("groups=[(TuneGroup('g', lambda k: None), {'good': 1})]"),
    ),
    Case(
        "intra-group priority returning a string, update",
        "update",
        FAILED,
        ("Tunable 'good' in group 'g': priority(", "returned 'high'"),
        marker("groups=[(TuneGroup('g', lambda k: 1), {'good': lambda k: 'high'})]"),
    ),
    Case(
        "fixture group priority returning None",
        "tune",
        FAILED,
        ("test_x.py::test_x: TuneGroup 'g': priority(", "returned None"),
        FIXTURE.format(call="make_grouped(), 3"),
    ),
    Case(
        "fixture group priority returning None, plain run",
        "check",
        FAILED,
        ("test_x.py::test_x: TuneGroup 'g': priority(", "returned None"),
        FIXTURE.format(call="make_grouped(), 3"),
    ),
    Case("device 123", "tune", FAILED, ("device=123", "device name"), marker("device=123")),
    Case("device path", "tune", FAILED, ("device='../../x'",), marker("device='../../x'")),
    Case(
        "device unknown",
        "tune",
        FAILED,
        ("device 'nope'", "no pytest_autotune_client"),
        marker("device='nope'"),
    ),
    Case(
        "reference unknown name",
        "check",
        FAILED,
        ("reference='missing'", "names no candidate"),
        marker("reference='missing'"),
    ),
    Case("reference 42", "check", FAILED, ("reference=42",), marker("reference=42")),
    Case("key not callable", "tune", FAILED, ("key='size'", "function"), marker("key='size'")),
    Case("time_limit zero", "check", FAILED, ("time_limit=0", "> 0"), marker("time_limit=0")),
    Case("time_limit string", "check", FAILED, ("time_limit='5'",), marker("time_limit='5'")),
    Case(
        "check_output string",
        "check",
        FAILED,
        ("check_output='no'", "True or False"),
        marker("check_output='no'"),
    ),
    Case(
        "unknown option",
        "check",
        FAILED,
        ("unknown option(s) ['rtoll']", "did you mean rtol?"),
        marker("rtoll=1"),
    ),
    Case(
        # A setting of the run given to one test (fewer samples for a slow one) read only
        # "unknown option" and the marker's list: nothing said where it can be set.
        "a setting of the run as a marker option",
        "check",
        FAILED,
        (
            "unknown option(s) ['max_samples']",
            "max_samples is a setting of the whole run, not of one test: set it in"
            " autotune.yaml (max_samples), the ini file (autotune_max_samples) or"
            " PYTEST_AUTOTUNE_MAX_SAMPLES",
        ),
        marker("max_samples=3"),
    ),
    Case(
        # The closer mark's candidates were taken and the other's dropped without a word:
        # its candidate ran in no test.
        "two autotune marks on one test giving one option",
        "check",
        FAILED,
        ("test_x.py::test_x: two @pytest.mark.autotune marks of the test give candidates=",),
        textwrap.dedent(
            """
             @pytest.mark.autotune(candidates={"good": good})
             @pytest.mark.autotune(candidates={"other": other}, rtol=1e-3)
             def test_x(candidate):
                 return candidate(1)
            """
        ),
    ),
    Case(
        "candidates as a list of names",
        "check",
        FAILED,
        ("must be a non-empty dict of name -> callable (or a list of functions), got list",),
        marked_test('candidates=["good", "other"]'),
    ),
    Case(
        # Refused as "must be a non-empty dict ... got list [ParameterSet(...)]", with no
        # word of where a candidate's marks go.
        "candidates as pytest.param items",
        "check",
        FAILED,
        (
            "autotune(candidates=...) takes functions, not pytest.param(...)",
            "@pytest.mark.parametrize('candidate', [fn, pytest.param(fn2, marks=...)])",
        ),
        textwrap.dedent(
            """
             @pytest.mark.autotune(
                 candidates=[good, pytest.param(other, marks=pytest.mark.xfail)]
             )
             def test_x(candidate):
                 return candidate(1)
            """
        ),
    ),
    Case(
        "candidates as a dict of pytest.param values",
        "tune",
        FAILED,
        ("autotune(candidates=...) takes functions, not pytest.param(...)",),
        marked_test('candidates={"good": good, "other": pytest.param(other)}'),
    ),
    Case(
        # Its test failed with "'int' object is not callable" from the body's call, naming
        # no option, and --autotune tuned the group around it as a candidate that raised.
        "candidates as a dict holding a value that is no function",
        "tune",
        FAILED,
        ("autotune(candidates=...)", "'other' is int 3", "callable"),
        marked_test('candidates={"good": good, "other": 3}'),
    ),
    Case(
        # Pytest stopped the whole collection at "duplicate parametrization of
        # 'candidate'", which named neither option, and no other test ran.
        "candidates and a parametrize of candidate on one test",
        "check",
        FAILED,
        ("autotune(candidates=...)", "parametrize('candidate'", "keep one"),
        textwrap.dedent(
            """
             @pytest.mark.autotune(candidates={"good": good, "other": other})
             @pytest.mark.parametrize("candidate", [good, other])
             def test_x(candidate):
                 return candidate(1)
            """
        ),
    ),
    Case(
        "positional argument",
        "check",
        FAILED,
        ("keyword options only",),
        marked_test("1"),
    ),
    Case(
        "async test",
        "check",
        FAILED,
        ("cannot be `async def`", "asyncio.run"),
        textwrap.dedent(
            """
             @pytest.mark.autotune(candidates={"good": good, "other": other})
             async def test_x(candidate):
                 return candidate(1)
             """
        ),
    ),
    Case(
        # Each candidate failed Hypothesis's health check ("should return None"), and
        # under --autotune "every candidate failed", with no word of why.
        "hypothesis test",
        "check",
        FAILED,
        ("cannot be Hypothesis's @given", "parametrize or fixtures"),
        textwrap.dedent(
            """
             from hypothesis import given, strategies as st

             @pytest.mark.autotune(candidates={"good": good, "other": other})
             @given(n=st.integers(1, 50))
             def test_x(candidate, n):
                 return candidate(n)
             """
        ),
    ),
    # -- candidates that return a call not yet run: it would be timed as free
    failing_beside_good(
        "async def candidate",
        "check",
        "coro",
        ("returned a coroutine", "asyncio.run(candidate("),
        UNRUN.format(first="good", second="coro"),
    ),
    failing_beside_good(
        "async def candidate first, tuned",
        "tune",
        "coro",
        ("returned a coroutine",),
        UNRUN.format(first="coro", second="good"),
    ),
    failing_beside_good(
        "generator candidate first",
        "check",
        "gen",
        ("returned a generator", "list(candidate("),
        UNRUN.format(first="gen", second="good"),
    ),
    failing_beside_good(
        "generator candidate, tuned",
        "tune",
        "gen",
        ("returned a generator",),
        UNRUN.format(first="good", second="gen"),
    ),
    failing_beside_good(
        "candidate calling sys.exit, tuned",
        "tune",
        "quit",
        ("raised SystemExit(3)",),
        "import sys\n" + BESIDE_GOOD.format(name="quit", body="sys.exit(3)"),
    ),
    # It went up through the tuning as pytest-timeout's alarm does: the first test, good's,
    # failed with it, its hint about a test timeout misleading.
    failing_beside_good(
        "candidate raising GeneratorExit, tuned",
        "tune",
        "close",
        ("raised GeneratorExit",),
        BESIDE_GOOD.format(name="close", body="raise GeneratorExit"),
    ),
    # -- keys that would make baselines collide or cannot be written
    Case(
        "key NaN",
        "tune",
        FAILED,
        ("key= returned an unusable key nan",),
        marker("key=lambda n: math.nan"),
    ),
    Case(
        "key inf, update",
        "update",
        FAILED,
        ("unusable key inf",),
        marker("key=lambda n: math.inf"),
        check=no_file(TARGET),
    ),
    Case(
        # Written, it made the file unreadable to every later run (over 40 digits).
        "key of a digest as an int, update",
        "update",
        FAILED,
        ("an integer of 49 digits",),
        marker("key=lambda n: int('f' * 40, 16)"),
        check=no_file(TARGET),
    ),
    Case(
        "key unhashable", "tune", FAILED, ("unusable key [1, 2]",), marker("key=lambda n: [1, 2]")
    ),
    Case(
        "key collision",
        "tune",
        FAILED,
        ("gives the key 0, as it does for", "test_x[1]"),
        marked_test('candidates={"good": good, "other": other}, key=lambda n: 0', sizes="[1, 2]"),
    ),
    Case(
        # True == 1 in Python: one key in memory, and so one entry in the file.
        "key collision of a flag and the number it equals",
        "update",
        FAILED,
        ("gives the key 1, as it does for", "test_x[True]"),
        textwrap.dedent(
            """
             @pytest.mark.autotune(candidates={"good": good, "other": other}, key=lambda n: n)
             @pytest.mark.parametrize("n", [True, 1])
             def test_x(candidate, n):
                 return candidate(n)
             """
        ),
    ),
    Case(
        "key collision, update",
        "update",
        FAILED,
        ("one cache entry cannot hold",),
        marked_test('candidates={"good": good, "other": other}, key=lambda n: 0', sizes="[1, 2]"),
        check=entries(TARGET),
    ),
    Case(
        "non-ASCII candidate names keep one group per size",
        "update",
        OK,
        ("passed",),
        marked_test('candidates={"é": good, "ü": other}', sizes="[1, 2]"),
        check=one_group_per_size,
    ),
    Case(
        "a cache file holding another test's name",
        "tune",
        OK,
        (TARGET.name, "'other.py::test_x'", "not of 'test_x.py::test_x'"),
        marker("key=lambda n: str(n)"),
        target=OTHER_TESTS_FILE,
    ),
    Case(
        "a cache file holding another test's name, update",
        "update",
        FAILED,
        (TARGET.name, "holds the cache of 'other.py::test_x'", "was not updated"),
        marker("key=lambda n: str(n)"),
        target=OTHER_TESTS_FILE,
    ),
    Case(
        "a journal's torn last line",
        "tune",
        OK,
        (f"{TARGET.name}.journal", "last line is cut short", "the 1 whole entry before it is read"),
        marker("key=lambda n: str(n)"),
        target=cache_text(),
        setup=torn_journal,
    ),
    Case(
        "a damaged journal line, update",
        "update",
        FAILED,
        (f"{TARGET.name}.journal", "line 2", "was not updated"),
        marker("key=lambda n: str(n)"),
        target=cache_text(),
        setup=damaged_journal,
    ),
    Case(
        "non-ASCII test names get two files",
        "update",
        OK,
        ("passed",),
        textwrap.dedent(
            """
             @pytest.mark.autotune(candidates={"good": good, "other": other})
             def test_é(candidate):
                 return candidate(1)

             @pytest.mark.autotune(candidates={"good": good, "other": other})
             def test_ü(candidate):
                 return candidate(1)
             """
        ),
        check=two_files_for_two_names,
    ),
    # -- names printed to the terminal
    Case(
        "escape in a candidate id",
        "tune",
        OK,
        ("\\x1b[31m",),
        textwrap.dedent(
            """
             @pytest.mark.autotune()
             @pytest.mark.parametrize("candidate", [pytest.param(good, id="red\\x1b[31m"), other])
             def test_x(candidate):
                 return candidate(1)
             """
        ),
        args=("-v",),
        check=no_raw_escape,
    ),
    Case(
        "bell in a candidate name",
        "tune",
        OK,
        ("\\x07",),
        marked_test('candidates={"ding\\x07": good, "other": other}'),
        args=("-v",),
        check=no_raw_escape,
    ),
    # -- the autotune fixture
    Case(
        "fixture given a function",
        "check",
        FAILED,
        ("takes a TunableSet first", "function good"),
        FIXTURE.format(call="good, 3"),
    ),
    # The function that builds the set, passed where its set goes (`mylib.make_set` for
    # `mylib.TUNER.init(mylib.make_set)`): told to call it, not to build a set afresh.
    Case(
        "fixture given the set's factory",
        "check",
        FAILED,
        ("takes a TunableSet first", "function make", "autotune(make(), ...)"),
        FIXTURE.format(call="make, 3"),
    ),
    # The inputs given as one tuple, as LocalTuner.execute takes them: the key generator's
    # own error ("can only concatenate tuple") named neither the fixture nor the fix.
    Case(
        "fixture given its inputs as one tuple",
        "check",
        FAILED,
        ("the set's key_gen raised TypeError", "a tuple of 1 value", "autotune(tunables, x, y)"),
        FIXTURE.format(call='TunableSet(lambda n: n + 1, tunables=(Tunable("good", good),)), (3,)'),
    ),
    # A set built with with_() whose result was dropped: skipped as "every candidate
    # declined:" (of none), CI stayed green.
    *(
        Case(
            f"fixture given an empty set, {mode}",
            mode,
            FAILED,
            ("the TunableSet has no candidates", "tunables = tunables.with_(...)"),
            FIXTURE.format(call="TunableSet(lambda n: n), 3"),
        )
        for mode in ("check", "tune")
    ),
    Case(
        "fixture rtol string",
        "check",
        FAILED,
        ("autotune(rtol='x')",),
        FIXTURE.format(call="make(), 3, rtol='x'"),
    ),
    Case(
        "fixture unknown keyword",
        "check",
        FAILED,
        ("autotune: unknown option(s) ['timelimit']; known: work,", "did you mean time_limit?"),
        FIXTURE.format(call="make(), 3, timelimit=5"),
    ),
    Case(
        "fixture time_limit zero",
        "check",
        FAILED,
        ("autotune(time_limit=0)", "seconds > 0"),
        FIXTURE.format(call="make(), 3, time_limit=0"),
    ),
    Case(
        "fixture level unknown",
        "tune",
        FAILED,
        ("autotune(level='ful')",),
        FIXTURE.format(call="make(), 3, level='ful'"),
    ),
    Case(
        "fixture level a list",
        "check",
        FAILED,
        ("autotune(level=['full'])", "an AutotuneLevel or minimal"),
        FIXTURE.format(call="make(), 3, level=['full']"),
    ),
    Case(
        "fixture thresholds without work",
        "tune",
        FAILED,
        ("autotune(thresholds=", "without work="),
        FIXTURE.format(call="make(), 3, thresholds=Thresholds(memory=0.9)"),
    ),
    Case(
        "fixture option misspelt",
        "check",
        FAILED,
        (
            "test_x.py::test_x: autotune: unknown option(s) ['rtl']; known: work,",
            "; did you mean rtol?; inputs go by position",
        ),
        FIXTURE.format(call="make(), 3, rtl=1e-3"),
    ),
    Case(
        "fixture given a setting of the run",
        "check",
        FAILED,
        (
            "unknown option(s) ['strict']",
            "strict is a setting of the whole run, not of one test: set it with"
            " --autotune-strict, in autotune.yaml (strict), the ini file (autotune_strict) or"
            " PYTEST_AUTOTUNE_STRICT",
        ),
        FIXTURE.format(call="make(), 3, strict=True"),
    ),
    # An input passed by keyword, as its key_gen names it, was only "unknown option(s)
    # ['n']": nothing said that inputs go by position.
    Case(
        "fixture input by keyword",
        "check",
        FAILED,
        ("unknown option(s) ['n']", "inputs go by position: autotune(tunable_set, *inputs)"),
        FIXTURE.format(call="make(), n=3"),
    ),
    Case(
        "fixture without inputs",
        "check",
        FAILED,
        ("test_x.py::test_x: the set's key_gen cannot be called with the 0 inputs given",),
        FIXTURE.format(call="make()"),
    ),
    Case(
        "fixture reference a number",
        "check",
        FAILED,
        ("test_x.py::test_x: autotune(reference=42): expected a candidate's name or a function",),
        FIXTURE.format(call="make(), 3, reference=42"),
    ),
    Case(
        "fixture tuner a number, tuned",
        "tune",
        FAILED,
        ("test_x.py::test_x: autotune(tuner=5): expected a LocalTuner or a tuner's name",),
        FIXTURE.format(call="make(), 3, tuner=5"),
    ),
    Case(
        # An empty name fell back to the test's name without a word: the user who named
        # the tuner found the library's cache file missing.
        "fixture tuner an empty name, tuned",
        "tune",
        FAILED,
        ("test_x.py::test_x: autotune(tuner=''): expected a LocalTuner or a tuner's name",),
        FIXTURE.format(call="make(), 3, tuner=''"),
    ),
    Case(
        "fixture thresholds float",
        "tune",
        FAILED,
        ("autotune(thresholds=0.5)",),
        FIXTURE.format(call="make(), 3, thresholds=0.5"),
    ),
    Case(
        "fixture work returning 42",
        "tune",
        FAILED,
        ("returned 42",),
        FIXTURE.format(call="make(), 3, work=lambda n: 42"),
    ),
    Case(
        "fixture key NaN",
        "tune",
        FAILED,
        ("unusable key nan",),
        FIXTURE.format(call="make(), math.nan"),
    ),
    Case(
        "fixture reference unknown name, check",
        "check",
        FAILED,
        ("test_x.py::test_x: reference='missing' names no candidate",),
        FIXTURE.format(call="make(), 3, reference='missing'"),
    ),
    Case(
        "fixture reference unknown name",
        "tune",
        FAILED,
        ("test_x.py::test_x: reference='missing' names no candidate",),
        FIXTURE.format(call="make(), 3, reference='missing'"),
    ),
    Case(
        "fixture set returning None",
        "tune",
        FAILED,
        ("returned None", "check_output=False"),
        "\ndef nothing(n):\n    spin(1e-4)\n\n"
        "def test_x(autotune):\n"
        "    autotune(TunableSet(lambda n: n, tunables=(Tunable('a', nothing),"
        " Tunable('b', nothing))), 3)\n",
    ),
    Case(
        "fixture set returning None, opted out",
        "check",
        OK,
        ("passed",),
        "\ndef nothing(n):\n    spin(1e-4)\n\n"
        "def test_x(autotune):\n"
        "    autotune(TunableSet(lambda n: n, tunables=(Tunable('a', nothing),"
        " Tunable('b', nothing))), 3, check_output=False)\n",
    ),
    # -- a candidate changing what later tests see
    Case(
        "candidate mutating an object holding an array",
        "check",
        OK,
        ("5 passed",),
        mutation_tests(),
    ),
    Case(
        "candidate mutating an object holding an array, tuned",
        "tune",
        OK,
        ("5 passed",),
        mutation_tests(),
    ),
    # -- a hung candidate
    Case(
        "hung candidate, marker limit",
        "tune",
        FAILED,
        # What stopped it, as plain pytest says it: not "failed its check: TimeLimitExceeded".
        ("candidate 'hang' ran past its time limit of 0.3 s and was stopped",),
        HANG,
        check=lambda root, output: not_in(output, "failed its check", "TimeLimitExceeded"),
    ),
    Case("hung candidate, check mode", "check", FAILED, ("candidate 'hang'", "0.3 s"), HANG),
    Case(
        "hung candidate, fixture limit",
        "check",
        FAILED,
        ("candidate 'hang'", "time limit of 0.3 s"),
        FIXTURE_HANG,
    ),
    Case(
        "hung candidate, fixture limit, tuned",
        "tune",
        FAILED,
        ("candidate 'hang' ran past its time limit of 0.3 s and was stopped",),
        FIXTURE_HANG,
        check=lambda root, output: not_in(output, "failed its check", "TimeLimitExceeded"),
    ),
    Case(
        "hung candidate, command line limit",
        "check",
        FAILED,
        ("'hang'", "time limit of 0.2 s"),
        HANG.replace(", time_limit=0.3", ""),
        args=("--autotune-time-limit=0.2",),
    ),
    Case(
        "hung candidate, ini limit",
        "check",
        FAILED,
        ("'hang'", "time limit of 0.2 s"),
        HANG.replace(", time_limit=0.3", ""),
        setup=lambda root: (root / "tox.ini").write_text(
            "[pytest]\nfilterwarnings = error\nautotune_time_limit = 0.2\n"
        ),
    ),
    Case(
        "time limit flag not a number",
        "check",
        USAGE,
        ("autotune_time_limit", "'abc'"),
        marker(""),
        args=("--autotune-time-limit=abc",),
    ),
    bad_variable(
        "time limit variable zero",
        "check",
        ("PYTEST_AUTOTUNE_TIME_LIMIT", "'0'"),
        PYTEST_AUTOTUNE_TIME_LIMIT="0",
    ),
    # -- settings
    bad_variable(
        "misspelt variable",
        "check",
        ("PYTEST_AUTOTUNE_MAX_SAMPLE: unknown setting", "did you mean PYTEST_AUTOTUNE_MAX_SAMPLES"),
        PYTEST_AUTOTUNE_MAX_SAMPLE="3",
    ),
    bad_variable(
        "misspelt variable, tuned",
        "tune",
        ("PYTEST_AUTOTUNE_RTLO: unknown setting", "did you mean PYTEST_AUTOTUNE_RTOL?"),
        PYTEST_AUTOTUNE_RTLO="1e-3",
    ),
    bad_variable(
        "variable of a setting no variable sets",
        "check",
        ("PYTEST_AUTOTUNE_CONFIG: unknown setting", "did you mean --autotune-config?"),
        PYTEST_AUTOTUNE_CONFIG="autotune.yaml",
    ),
    bad_variable(
        "variable not a number",
        "check",
        ("PYTEST_AUTOTUNE_RTOL", "'abc'"),
        PYTEST_AUTOTUNE_RTOL="abc",
    ),
    bad_variable(
        "variable inf", "check", ("PYTEST_AUTOTUNE_ATOL", "'inf'"), PYTEST_AUTOTUNE_ATOL="inf"
    ),
    bad_setting_file("yaml rtol inf", "tune", ("autotune.yaml", "rtol", "inf"), "rtol: .inf\n"),
    bad_setting_file(
        "yaml time_limit an integer past a float's range",
        "tune",
        ("autotune.yaml", "time_limit", "expected a number > 0"),
        f"time_limit: 1{'0' * 400}\n",
    ),
    bad_setting_file(
        "yaml 5000 digits",
        "tune",
        ("autotune.yaml", "invalid YAML", "5001 digits"),
        f"max_samples: 1{'0' * 5000}\n",
    ),
    bad_setting_file(
        "yaml nested 100000 deep",
        "tune",
        ("autotune.yaml", "invalid YAML", "nested too deeply"),
        f"rtol: {'[' * 100_000}{']' * 100_000}\n",
    ),
    bad_setting_file(
        "yaml a date that is no date",
        "check",
        ("autotune.yaml", "invalid YAML", "month must be in 1..12"),
        "cache_dir: 2024-13-01\n",
    ),
    bad_setting_file(
        "yaml not a mapping", "tune", ("autotune.yaml", "expected a mapping"), "- 1\n"
    ),
    Case(
        "device flag with a path",
        "tune",
        USAGE,
        ("autotune_device", "'../x'"),
        marker(""),
        args=("--autotune-device=../x",),
    ),
    Case("level unknown", "tune", USAGE, ("bogus",), marker(""), args=("--autotune-level=bogus",)),
    # -- cache files that cannot be read: one line naming the file, the run goes on
    unreadable_cache("cache 1e400", (TARGET.name, "1e400"), cache_text("[1e400]")),
    unreadable_cache(
        "cache 10**400", (TARGET.name, "401 digits"), cache_text("[1" + "0" * 400 + "]")
    ),
    unreadable_cache(
        "cache 5000 digits", (TARGET.name, "5000 digits"), cache_text("[" + "9" * 5000 + "]")
    ),
    unreadable_cache("cache nested 100000 deep", (TARGET.name, "nested deeper"), cache_text(DEEP)),
    unreadable_cache(
        "cache nested 100000 deep, update",
        (TARGET.name, "nested deeper", "was not updated"),
        cache_text(DEEP),
        mode="update",
    ),
    # A file's own noise, which the README says to set by hand: a typo made every entry
    # no baseline, the gate passed them all, and each update replaced them.
    unreadable_cache(
        "cache sigma_between 3%",
        (TARGET.name, "field 'sigma_between' is \"3%\", expected a number >= 0"),
        cache_text(top='"sigma_between": "3%", '),
    ),
    # 3 meant as 3%: read as 300%, every group of the file was "too noisy", and nothing
    # said that the field made it so.
    unreadable_cache(
        "cache sigma_between 3",
        (TARGET.name, "field 'sigma_between' is 3, expected a fraction from 0 to 1"),
        cache_text(top='"sigma_between": 3, '),
    ),
    unreadable_cache(
        "cache sigma_between 3%, update",
        (TARGET.name, "sigma_between", "was not updated"),
        cache_text(top='"sigma_between": "3%", '),
        mode="update",
    ),
    unreadable_cache(
        "cache device without id, update",
        (TARGET.name, "the device block's 'id' is null", "was not updated"),
        cache_text(top='"device": {"fingerprint": {}}, '),
        mode="update",
    ),
    unreadable_cache("cache samples 0", (TARGET.name, "samples_ns[0] is 0"), cache_text("[0]")),
    unreadable_cache(
        "cache samples string", (TARGET.name, 'samples_ns is "999"'), cache_text('"999"')
    ),
    unreadable_cache("cache samples negative", ("samples_ns[0] is -5",), cache_text("[-5]")),
    unreadable_cache("cache samples float", ("samples_ns[0] is 1.5",), cache_text("[1.5]")),
    unreadable_cache("cache NaN", (TARGET.name, "NaN is not a JSON number"), cache_text("[NaN]")),
    unreadable_cache(
        "cache Infinity", ("Infinity is not a JSON number",), cache_text("[Infinity]")
    ),
    Case(
        "cache not JSON",
        "tune",
        OK,
        (TARGET.name, "is not valid JSON"),
        marker(""),
        target="{not json\n",
    ),
    Case(
        "cache not UTF-8",
        "tune",
        OK,
        (TARGET.name, "not UTF-8"),
        marker(""),
        target=b"\xff\xfe{}",
    ),
    unreadable_cache(
        "cache newer schema", ("schema_version 99", "upgrade"), cache_text(version="99")
    ),
    unreadable_cache("cache schema string", ("schema_version", '"2"'), cache_text(version='"2"')),
    unreadable_cache("cache index -1", ("fastest_index", "-1"), cache_text(index="-1")),
    unreadable_cache("cache index true", ("fastest_index", "true"), cache_text(index="true")),
    Case("cache a list", "tune", OK, ("holds a JSON array",), marker(""), target="[]\n"),
    Case(
        "cache entries object",
        "tune",
        OK,
        ("field 'entries'",),
        marker(""),
        target='{"schema_version": 2, "entries": {}}\n',
    ),
    unreadable_cache(
        "cache unknown field",
        ("unknown fields ['extra']",),
        cache_text().replace('"bounds": null', '"bounds": null, "extra": 1'),
    ),
    Case(
        "cache a directory",
        "tune",
        OK,
        (TARGET.name, "cannot be read"),
        marker(""),
        setup=target_is_a_directory,
    ),
    # -- writers that cannot write: one line, a failing exit, nothing else lost
    Case(
        "update into a directory",
        "update",
        FAILED,
        (TARGET.name, "was not updated"),
        marker(""),
        setup=target_is_a_directory,
    ),
    Case(
        "update with the lock a directory",
        "update",
        FAILED,
        (TARGET.name, "cannot be written"),
        marker(""),
        setup=lock_is_a_directory,
    ),
    Case(
        "update into a cache dir that is a file",
        "update",
        USAGE,
        # Said at the start, in one line: every group's read warned with a full path, then
        # the update failed at the end, after all the tuning.
        ("command line: autotune_cache_dir: afile is a file; give the path of a folder",),
        marker(""),
        args=("--autotune-cache-dir=afile",),
        setup=cache_dir_is_a_file,
    ),
    Case(
        "a gate's cache dir below a file",
        "tune",
        USAGE,
        ("command line: autotune_cache_dir: afile is a file, where a folder of afile/sub",),
        marker(""),
        args=("--autotune-cache-dir=afile/sub",),
        setup=cache_dir_is_a_file,
    ),
    unreadable_cache(
        "update over an unreadable file",
        (TARGET.name, "1e400", "was not updated"),
        cache_text("[1e400]"),
        mode="update",
    ),
    Case(
        "records into a directory",
        "tune",
        USAGE,
        # Said at the start: the records are written after every group was tuned.
        ("command line: autotune_record:", "records is a folder; give the path of a file"),
        marker(""),
        args=("--autotune-record=records",),
        setup=record_is_a_directory,
    ),
    Case(
        "a report's file name past the file system's limit",
        "tune",
        USAGE,
        # Was a traceback from the check that the path is no folder.
        ("command line: autotune_html:", "File name too long", "r" * 20),
        marker(""),
        args=(f"--autotune-html={'r' * 300}.html",),
    ),
    Case(
        "a cache folder's name past the file system's limit",
        "update",
        USAGE,
        # Was an OSError traceback in every tuned test.
        ("command line: autotune_cache_dir:", "File name too long", "c" * 20),
        marker(""),
        args=(f"--autotune-cache-dir={'c' * 300}",),
    ),
]


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makeconftest(FAKE_CONFTEST)
    pytester.makeini("[pytest]\nfilterwarnings = error\n")
    pytester.makepyfile(test_keep=KEEP_TESTS)
    keep = PersistentCacheValue(
        key_to_json("default"),
        0,
        "good",
        (AutotuneOutcome("good", 0, (1e-4,) * 5), AutotuneOutcome("other", 1, (2e-4,) * 5)),
    )
    key = PersistentCacheKey(stable_key("default"), checksum_of(("good", "other")))
    PersistentCache(pytester.path / KEEP).save({key: keep})
    (pytester.path / "rec.jsonl").write_text(RECORD_SEED)
    return pytester


def test_the_matrix_has_a_row_for_every_bad_input_of_the_issue() -> None:
    assert len(CASES) >= 60
    assert len({case.id for case in CASES}) == len(CASES)


@pytest.mark.parametrize("case", CASES, ids=[case.id for case in CASES])
def test_a_bad_input_gets_one_line_and_loses_nothing(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, case: Case
) -> None:
    root = project.path
    project.makepyfile(test_x=PRELUDE + case.tests)
    if case.setup is not None:
        case.setup(root)
    if case.target is not None:
        (root / TARGET).parent.mkdir(parents=True, exist_ok=True)
        data = case.target.encode() if isinstance(case.target, str) else case.target
        (root / TARGET).write_bytes(data)
    for name, value in case.env.items():
        monkeypatch.setenv(name, value)
    keep_before = (root / KEEP).read_bytes()
    args = {
        "check": (),
        "tune": ("--autotune",),
        "update": ("--autotune-update",),
    }[case.mode]
    outputs = (
        ()
        if case.mode == "check"
        else ("--autotune-record=rec.jsonl", "--autotune-html=report.html")
    )
    if any(a.startswith("--autotune-record") for a in case.args):
        outputs = ("--autotune-html=report.html",)
    result = run(project, *args, *outputs, *case.args)
    output = "\n".join(result.outlines + result.errlines)

    assert result.ret == case.ret, output
    assert any(all(f in line for f in case.line) for line in output.splitlines()), (
        f"no line holds all of {case.line}:\n{output}"
    )
    assert "INTERNALERROR" not in output, output
    assert "pytest_autotune/" not in output.replace("pytest_autotune/tests", ""), output
    assert "Traceback" not in output, output
    # One line: not the error again above it, as a failure raised while handling it shows.
    assert "During handling of the above exception" not in output, output
    assert "test_x.py::test_x: test_x.py::test_x" not in output, output  # named once
    # Nothing that was there is lost or overwritten.
    keep = json.loads((root / KEEP).read_text(encoding="utf-8"))
    assert [e["key"] for e in keep["entries"]] == ["default"]
    if case.mode != "update":
        assert (root / KEEP).read_bytes() == keep_before
    assert (root / "rec.jsonl").read_text().startswith(RECORD_SEED)
    if case.target is not None:
        data = case.target.encode() if isinstance(case.target, str) else case.target
        assert (root / TARGET).read_bytes() == data
    if case.mode != "check" and case.ret in (OK, FAILED):
        assert (root / "report.html").is_file(), output
    if case.check is not None:
        case.check(root, output)


def run_tests_of_x(project: pytest.Pytester, mode: tuple[str, ...], tests: str) -> pytest.RunResult:
    """Runs test_x.py, the prelude and `tests`, in `mode`, beside the project's bystander."""
    project.makepyfile(test_x=PRELUDE + textwrap.dedent(tests))
    return run(project, "test_x.py", *mode)


def test_the_time_limit_works_beside_pytest_timeout(project: pytest.Pytester) -> None:
    """With pytest-timeout's limit on the whole test far above ours, ours names the hung
    candidate and the session goes on; pytest-timeout's own alarm is left to it."""
    pytest.importorskip("pytest_timeout")
    project.makepyfile(test_x=PRELUDE + HANG)
    result = run(project, "--autotune", "-p", "timeout", "--timeout=20")
    output = "\n".join(result.outlines)
    assert result.ret == FAILED, output
    result.stdout.fnmatch_lines(["*candidate 'hang'*time limit of 0.3 s*"])
    assert "Timeout" not in output
    assert "+ Timeout +" not in output


def test_pytest_timeouts_alarm_still_fires_inside_our_limit(project: pytest.Pytester) -> None:
    pytest.importorskip("pytest_timeout")
    project.makepyfile(test_x=PRELUDE + HANG.replace("time_limit=0.3", "time_limit=60"))
    result = run(project, "--autotune", "-p", "timeout", "--timeout=1")
    assert result.ret == FAILED
    result.stdout.fnmatch_lines(["*Failed: Timeout*1.0*s*"])


@BOTH_MODES
def test_a_work_function_that_raises_is_named_as_the_marker_option(
    project: pytest.Pytester, mode: tuple[str, ...]
) -> None:
    # work= raising failed with "ZeroDivisionError: division by zero" and a traceback into
    # the user's function, with no word that the plugin had called it as work=.
    result = run_tests_of_x(
        project,
        mode,
        """
        def work_of(n):
            return Work(n / 0, 8 * n)

        @pytest.mark.autotune(candidates={"good": good, "other": other}, work=work_of)
        @pytest.mark.parametrize("n", [1])
        def test_x(candidate, n):
            return candidate(n)
        """,
    )
    result.assert_outcomes(failed=2)
    result.stdout.fnmatch_lines(["*ZeroDivisionError*"])
    result.stdout.fnmatch_lines(noted("*test_x.py::test_x: raised by its work= callable*"))


@BOTH_MODES
def test_a_candidate_fixture_with_params_fails_its_test_not_the_session(
    project: pytest.Pytester, mode: tuple[str, ...]
) -> None:
    # A conftest's `candidate` fixture over params, and a bare marker (or one with
    # candidates): pytest's "duplicate parametrization of 'candidate'" stopped the
    # collection of every test, naming neither. The test's own parametrize overrides it.
    result = run_tests_of_x(
        project,
        mode,
        """
        @pytest.fixture(params=[good, other], ids=["good", "other"])
        def candidate(request):
            return request.param

        class TestOverridden:
            # An override that requests the fixture it overrides keeps its params.
            @pytest.fixture
            def candidate(self, candidate):
                return candidate

            @pytest.mark.autotune
            def test_overridden(self, candidate):
                return candidate(1)

        @pytest.mark.autotune
        def test_bare(candidate):
            return candidate(1)

        @pytest.mark.autotune(candidates={"good": good, "other": other})
        def test_given(candidate):
            return candidate(1)

        @pytest.mark.autotune
        @pytest.mark.parametrize("candidate", [good, other])
        def test_own(candidate):
            return candidate(1)

        def test_unrelated():
            pass
        """,
    )
    result.assert_outcomes(failed=6, passed=3)
    result.stdout.fnmatch_lines(
        [
            "*test_x.py::TestOverridden::test_overridden: `candidate` is a fixture with*",
            "*test_x.py::test_bare: `candidate` is a fixture with params here*",
            "*test_x.py::test_given: `candidate` is a fixture with params here*",
        ],
        consecutive=False,
    )


FIXTURES_OF_THE_CANDIDATE = [
    # A fixture set up from `candidate` (a kernel compiled from it) is set up once, for its
    # test's own candidate, while every candidate's body runs on that test's fixture
    # values: `wrong` was checked against its own output in its plain test, and tuned as
    # `good`'s fixture in the group's first test. Both modes passed a wrong candidate.
    pytest.param(
        """
        @pytest.fixture
        def compiled(candidate):
            return candidate

        @pytest.fixture
        def plan(compiled):
            return compiled

        @pytest.mark.autotune(candidates={"good": good, "wrong": wrong})
        def test_x(candidate, plan):
            return plan(1)

        @pytest.mark.autotune
        @pytest.mark.parametrize("candidate", [good, wrong], indirect=True)
        def test_indirect(candidate):
            return candidate(1)

        @pytest.fixture
        def candidate(request):
            return request.param
        """,
        {"failed": 3, "passed": 1},
        [
            "*test_x.py::test_x: fixture 'plan' requests `candidate`: a fixture is set up*",
            "FAILED test_x.py::test_indirect[[]wrong[]] - *",
        ],
        id="requests it",
    ),
    # `request.getfixturevalue("candidate")` in a fixture names no `candidate` in its
    # signature: every candidate ran the first test's, so the check compared `wrong` with
    # itself in its plain test, and tuning timed `good` under both names.
    pytest.param(
        """
        @pytest.fixture
        def sneaky(request):
            return request.getfixturevalue("candidate")

        @pytest.mark.autotune(candidates={"good": good, "wrong": wrong})
        def test_x(candidate, sneaky):
            return sneaky(1)

        @pytest.fixture
        def named(request):
            return request.getfixturevalue(argname="candidate")

        @pytest.mark.autotune(candidates={"good": good, "wrong": wrong})
        def test_named(candidate, named):
            return named(1)

        @pytest.fixture
        def folder(request):
            return request.getfixturevalue("tmp_path")

        @pytest.mark.autotune(candidates={"good": good, "other": other})
        def test_fine(candidate, folder):
            return candidate(1)
        """,
        {"failed": 4, "passed": 2},
        [
            "*test_x.py::test_x: fixture 'sneaky' requests `candidate`: a fixture is set up*",
            "*test_x.py::test_named: fixture 'named' requests*",
        ],
        id="gets it at run time",
    ),
]


@BOTH_MODES
@pytest.mark.parametrize(("tests", "outcomes", "lines"), FIXTURES_OF_THE_CANDIDATE)
def test_a_fixture_of_the_candidate_fails_its_tests_by_name(
    project: pytest.Pytester,
    mode: tuple[str, ...],
    tests: str,
    outcomes: dict[str, int],
    lines: list[str],
) -> None:
    result = run_tests_of_x(project, mode, tests)
    result.assert_outcomes(**outcomes)
    for line in lines:
        result.stdout.fnmatch_lines([line])


@BOTH_MODES
def test_a_marked_test_that_uses_the_autotune_fixture_fails_its_tests_by_name(
    project: pytest.Pytester, mode: tuple[str, ...]
) -> None:
    # The body is each candidate's timed call: the set the fixture was given was tuned again
    # in every timed call, for minutes, until the time limit stopped it; a plain run passed
    # every candidate's test without calling its candidate.
    result = run_tests_of_x(
        project,
        mode,
        """
        def make_set():
            return TunableSet(lambda n: n).with_(Tunable("good", good))

        @pytest.mark.autotune(candidates={"good": good, "wrong": wrong})
        def test_x(candidate, autotune):
            return autotune(make_set(), 1)
        """,
    )
    result.assert_outcomes(failed=2)
    result.stdout.fnmatch_lines(
        ["*test_x.py::test_x: a marked test (over `candidate`) cannot use the `autotune`*"]
    )
    assert "Traceback" not in result.stdout.str()
