"""What a candidate's test body sees of its own test under --autotune, where the group's
first test tunes every candidate, and what its test shows when it fails."""

from __future__ import annotations

import textwrap

import pytest

from tests.plugin.harness import BOTH_MODES, add_to_conftest, run


def print_the_properties_of_each_call(
    pytester: pytest.Pytester, properties: str = "report.user_properties"
) -> None:
    """Adds a conftest hook that prints `PROPS <node id> <properties>` for each test's call,
    `properties` an expression of its `report`, for the test to match in the output."""
    add_to_conftest(
        pytester,
        "\n\ndef pytest_runtest_logreport(report):\n"
        "    if report.when == 'call':\n"
        f"        print('PROPS', report.nodeid, {properties})\n",
    )


def two_candidates(first: str = "a", second: str = "b", arg: str = "n") -> str:
    """Two candidates that return their argument `arg`, `first` at 100 us a call on the fake
    clock and `second` at 200 us, for a test module or a conftest (which has `spin`)."""
    return textwrap.dedent(
        f"""
        def {first}({arg}):
            spin(1e-4)
            return {arg}

        def {second}({arg}):
            spin(2e-4)
            return {arg}
        """
    )


def module_of(body: str, first: str = "a", second: str = "b", arg: str = "n") -> str:
    """A test module of `two_candidates` and then `body`."""
    return (
        "import pytest\nfrom conftest import spin\n"
        + two_candidates(first, second, arg)
        + textwrap.dedent(body)
    )


@BOTH_MODES
def test_a_candidates_body_reads_and_writes_its_own_test_item(
    autotune_pytester: pytest.Pytester, mode: tuple[str, ...]
) -> None:
    # The group is tuned inside its first test (a's): b's body read a's item, its
    # parameters, marks and properties, though pytest had given it b's; in a plain run,
    # a's body, run as the reference in b's test, read b's. And `request` was copied
    # with the inputs, as it reaches the test's array: what the body added to
    # `request.node.user_properties` never reached the report.
    autotune_pytester.makepyfile(
        test_own=module_of(
            """
            import numpy as np

            @pytest.fixture
            def x():
                return np.ones(4)

            @pytest.mark.autotune(candidates={"a": a, "b": b})
            def test_own(candidate, x, request, record_property):
                request.node.user_properties.append(("ran", candidate.__name__))
                record_property("recorded", candidate.__name__)
                own = request.node.callspec.params["candidate"] is candidate
                return candidate(x) if own else f"ran in {request.node.name}"
            """,
            arg="x",
        )
    )
    print_the_properties_of_each_call(autotune_pytester, "sorted(set(report.user_properties))")
    result = run(autotune_pytester, "-s", *mode)
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(
        [
            "*PROPS test_own.py::test_own[[]a[]] [[]('ran', 'a'), ('recorded', 'a')[]]",
            "*PROPS test_own.py::test_own[[]b[]] [[]('ran', 'b'), ('recorded', 'b')[]]",
        ]
    )


@BOTH_MODES
def test_a_property_the_body_records_reaches_the_report_once(
    autotune_pytester: pytest.Pytester, mode: tuple[str, ...]
) -> None:
    # Under --autotune the body is the timed call, made thousands of times: each call's
    # `record_property` reached the report (8317 copies of one property in the JUnit XML),
    # where a plain run, one call, records it once. A list value does not hash, and an
    # array's `==` has no one truth: each call's copy of it reached the report.
    autotune_pytester.makepyfile(
        test_props=module_of(
            """
            import numpy as np

            @pytest.mark.autotune(candidates={"a": a, "b": b})
            def test_props(candidate, record_property):
                record_property("candidate", candidate.__name__)
                record_property("shape", [4])
                record_property("ones", np.ones(2))
                return candidate(np.ones(4))
            """,
            arg="x",
        )
    )
    print_the_properties_of_each_call(autotune_pytester)
    result = run(autotune_pytester, "-s", "-p", "no:randomly", *mode)
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(
        [
            "*PROPS test_props.py::test_props[[]a[]] [[]('candidate', 'a'), ('shape', [[]4[]]),"
            " ('ones', array([[]1., 1.[]]))[]]",
            "*PROPS test_props.py::test_props[[]b[]] [[]('candidate', 'b'), ('shape', [[]4[]]),"
            " ('ones', array([[]1., 1.[]]))[]]",
        ]
    )


@BOTH_MODES
def test_a_body_marking_its_own_candidate_xfail_makes_that_test_an_expected_failure(
    autotune_pytester: pytest.Pytester, mode: tuple[str, ...]
) -> None:
    # `request.applymarker` reached a copy of the item (copied with the inputs), and under
    # --autotune the group's first test: `off`'s test failed its check in either run.
    autotune_pytester.makepyfile(
        test_marking="""
        import numpy as np
        import pytest
        from conftest import spin

        def exact(x):
            spin(1e-4)
            return x.sum()

        def off(x):
            spin(2e-4)
            return x.sum() + 1

        @pytest.fixture
        def x():
            return np.ones(4)

        @pytest.mark.autotune(candidates={"exact": exact, "off": off})
        def test_marking(candidate, x, request):
            if candidate is off:
                request.applymarker(pytest.mark.xfail(reason="off by one", strict=True))
            return candidate(x)
        """
    )
    run(autotune_pytester, *mode).assert_outcomes(passed=1, xfailed=1)


CRASHING = """
import pytest
from conftest import spin

def deep(n):
    return [n][n]

def crashing(n):
    spin(1e-4)
    return deep(n) + 1

def fast(n):
    spin(2e-4)
    return n

def slow(n):
    spin(3e-4)
    return n

@pytest.mark.autotune(candidates={"fast": fast, "crashing": crashing, "slow": slow})
def test_crash(candidate):
    return candidate(3)
"""


def test_a_crashing_candidate_shows_its_traceback_as_in_a_plain_run(
    autotune_pytester: pytest.Pytester,
) -> None:
    # Its test said "candidate 'crashing' failed its check: IndexError: ..." alone: no
    # line of the user's code, where a plain run shows the traceback to `deep`.
    autotune_pytester.makepyfile(test_crash=CRASHING)
    result = run(autotune_pytester, "--autotune")
    result.assert_outcomes(passed=2, failed=1)
    result.stdout.fnmatch_lines(
        [
            "*_ test_crash[[]crashing[]] _*",
            ">*return candidate(3)",
            "test_crash.py:*: in crashing",
            "*return deep(n) + 1",
            ">*return [[]n[]][[]n[]]",
            "E*IndexError: list index out of range",
            "test_crash.py:5: IndexError",
        ]
    )
    # The others are still tuned: fast wins.
    result.stdout.fnmatch_lines(["*test_crash.py::test_crash*fast*200 us*"])
    # --tb is pytest's, as in a plain run.
    short = run(autotune_pytester, "--autotune", "--tb=line")
    short.stdout.fnmatch_lines(["*test_crash.py:5: IndexError: list index out of range"])


@BOTH_MODES
def test_a_candidate_expected_to_raise_its_exception_is_an_expected_failure_when_tuned(
    autotune_pytester: pytest.Pytester, mode: tuple[str, ...]
) -> None:
    # Its test failed with pytest's Failed, the tuning's message, which is no IndexError:
    # `xfail(raises=IndexError, strict=True)` then failed it under --autotune alone.
    autotune_pytester.makepyfile(
        test_expected="""
        import pytest
        from conftest import spin

        def fast(n):
            spin(1e-4)
            return n

        EXPECTED = pytest.mark.xfail(raises=IndexError, strict=True)

        def unwritten(n):
            return [n][n]

        @pytest.mark.autotune
        @pytest.mark.parametrize(
            "candidate",
            [fast, pytest.param(unwritten, marks=EXPECTED)],
        )
        def test_expected(candidate):
            return candidate(3)
        """
    )
    run(autotune_pytester, *mode).assert_outcomes(passed=1, xfailed=1)


# pytest-repeat's way of running a test `--count` times, as its plugin does it: a name the
# test does not ask for, added to its fixtures and parametrized with ids "1-2", "2-2".
REPEAT_CONFTEST = """

import pytest

@pytest.fixture
def __repeat_step(request):
    return request.param

@pytest.hookimpl(trylast=True)
def pytest_generate_tests(metafunc):
    metafunc.fixturenames.append("__repeat_step")
    metafunc.parametrize(
        "__repeat_step", range(2), indirect=True, ids=lambda i: f"{i + 1}-2"
    )
"""


def tune_repeated_after_an_update(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    """Writes the baselines of a run without repetitions, then tunes with each test run
    twice (REPEAT_CONFTEST): the repetitions must find the baselines of their one group."""
    assert run(pytester, "--autotune-update").ret == pytest.ExitCode.OK
    add_to_conftest(pytester, REPEAT_CONFTEST)
    return run(pytester, "--autotune", *args)


def test_a_repeated_test_is_one_group_at_the_key_of_its_own_parameters(
    autotune_pytester: pytest.Pytester,
) -> None:
    # Each repetition was a group of its own, at the key "1-1-2" then "1-2-2": no
    # baseline of the plain run's key "1" was ever found, nor one written for it.
    autotune_pytester.makepyfile(
        test_rep=module_of(
            """
            @pytest.mark.autotune(candidates={"a": a, "b": b})
            @pytest.mark.parametrize("n", [1])
            def test_rep(candidate, n):
                return candidate(n)
            """
        )
    )
    result = tune_repeated_after_an_update(autotune_pytester, "-v")
    result.assert_outcomes(passed=4)
    result.stdout.fnmatch_lines(
        ["*test_rep[[]a-1-1-2[]] PASSED*", "*test_rep[[]b-1-2-2[]] PASSED*"]
    )
    result.stdout.fnmatch_lines(["test_rep.py::test_rep[[]1[]]  1  *a*100 us*+0.0%*pass*"])
    assert "1-2" not in result.stdout.str().split("= autotune =")[1]


CRASHING_SET = """
from conftest import spin
from pytest_autotune import Tunable, TunableSet

def deep(n):
    return [n][n]

def crashing(n):
    return deep(n) + 1

def fast(n):
    spin(1e-4)
    return n

def make_set():
    return TunableSet(lambda n: n).with_(Tunable("fast", fast)).with_(
        Tunable("crashing", crashing)
    )

def test_set(autotune):
    autotune(make_set(), 3)
"""
"""A test of the `autotune` fixture whose set's second candidate raises an IndexError, a
frame below its own."""


@BOTH_MODES
def test_a_crashing_candidate_of_a_production_set_shows_its_traceback_when_tuned(
    autotune_pytester: pytest.Pytester, mode: tuple[str, ...]
) -> None:
    # The `autotune` fixture's test said "candidate 'crashing' failed its check:
    # IndexError: ..." alone under --autotune, where a plain run shows the traceback.
    autotune_pytester.makepyfile(test_set=CRASHING_SET)
    result = run(autotune_pytester, *mode)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        ["test_set.py:*: in crashing", ">*return [[]n[]][[]n[]]", "E*IndexError: list*"]
    )
    # From the test's line to the candidate's: no frame of the plugin between them.
    assert "pytest_autotune/" not in result.stdout.str().split("= FAILURES =")[1]


@BOTH_MODES
def test_a_crash_of_a_production_set_shows_its_traceback_beside_a_candidate_that_declines(
    autotune_pytester: pytest.Pytester, mode: tuple[str, ...]
) -> None:
    # A decline (`AutotuneSkip`) was kept as a candidate that raised: listed before the
    # crashing one, it was the one called again, declined again, and the crash showed
    # "candidate 'crashing' failed its check: IndexError: ..." alone under --autotune.
    autotune_pytester.makepyfile(
        test_set="""
        from conftest import spin
        from pytest_autotune import AutotuneSkip, Tunable, TunableSet

        def declines(n):
            raise AutotuneSkip("not this key")

        def crashing(n):
            return [n][n]

        def fast(n):
            spin(1e-4)
            return n

        def make_set():
            return (
                TunableSet(lambda n: n)
                .with_(Tunable("declines", declines))
                .with_(Tunable("fast", fast))
                .with_(Tunable("crashing", crashing))
            )

        def test_set(autotune):
            autotune(make_set(), 3)
        """
    )
    result = run(autotune_pytester, *mode)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [">*return [[]n[]][[]n[]]", "E*IndexError: list*", "test_set.py:*: IndexError"]
    )


@BOTH_MODES
def test_a_repeated_tests_body_reads_and_writes_its_own_repetitions_item(
    autotune_pytester: pytest.Pytester, mode: tuple[str, ...]
) -> None:
    # The repetitions are tests of one group, and each candidate's body was given the
    # item its group listed last: the first repetition of a read the second's
    # `request.node` (its name, its callspec) and wrote its properties to that report.
    autotune_pytester.makepyfile(
        test_rep=module_of(
            """
            @pytest.mark.autotune(candidates={"a": a, "b": b})
            def test_rep(candidate, request, record_property):
                record_property("node", request.node.name)
                return candidate(1)
            """
        )
    )
    add_to_conftest(autotune_pytester, REPEAT_CONFTEST)
    print_the_properties_of_each_call(autotune_pytester)
    result = run(autotune_pytester, "-s", "-p", "no:randomly", *mode)
    result.assert_outcomes(passed=4)
    # Tuning runs every body in the group's first test, the first repetition's.
    repetitions = ("1-2", "2-2") if not mode else ("1-2",)
    result.stdout.fnmatch_lines(
        [
            f"*PROPS test_rep.py::test_rep[[]{c}-{r}[]] [[]('node', 'test_rep[[]{c}-{r}[]]')[]]"
            for c in "ab"
            for r in repetitions
        ],
        consecutive=False,
    )
    if mode:
        result.stdout.fnmatch_lines(["*PROPS test_rep.py::test_rep[[]a-2-2[]] [[][]]"])


def test_a_repeated_test_of_the_autotune_fixture_is_one_group(
    autotune_pytester: pytest.Pytester,
) -> None:
    # Each repetition's call was a group named by its node id ("test_set[1-2]"), and the
    # second failed: "the set's key_gen gives the key 3, as it does for test_set[1-2]".
    autotune_pytester.makepyfile(
        test_set=module_of(
            """
            from pytest_autotune import Tunable, TunableSet

            def make_set():
                fast_one = Tunable("fast", fast)
                return TunableSet(lambda n: n).with_(fast_one).with_(Tunable("slow", slow))

            def test_set(autotune):
                assert autotune(make_set(), 3) == 3
            """,
            "fast",
            "slow",
        )
    )
    result = tune_repeated_after_an_update(autotune_pytester)
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["test_set.py::test_set  3  *fast*100 us*+0.0%*pass*"])
    assert "1-2" not in result.stdout.str().split("= autotune =")[1]


def test_each_repetition_of_a_production_sets_test_shows_its_crashing_candidates_traceback(
    autotune_pytester: pytest.Pytester,
) -> None:
    # The group is tuned in the first repetition, which kept the names of the candidates
    # that raised for itself: the second said "candidate 'crashing' failed its check:
    # IndexError: ..." alone, where the first showed the traceback.
    autotune_pytester.makepyfile(test_set=CRASHING_SET)
    add_to_conftest(autotune_pytester, REPEAT_CONFTEST)
    result = run(autotune_pytester, "--autotune", "-p", "no:randomly")
    result.assert_outcomes(failed=2)
    failures = result.stdout.str().split("= FAILURES =")[1].split("= autotune =")[0]
    assert failures.count("E       IndexError: list index out of range") == 2, failures


def test_the_properties_kept_are_each_distinct_one_once_in_their_first_order() -> None:
    # Called on every autotune test's report: values that do not hash are known by their
    # pickle (a list that differs at each timed call is kept whole, an array recorded at
    # each call once), and one that neither hashes nor pickles is kept as it is.
    import threading
    import types

    import numpy as np

    from pytest_autotune.item_reports import distinct_properties

    lock = threading.Lock()  # in a list: neither hashes nor pickles
    props = [("n", 1), ("times", [1.0]), ("a", np.arange(3)), ("n", 1), ("times", [2.0])]
    props += [("a", np.arange(3)), ("lock", [lock]), ("lock", [lock]), ("times", [1.0])]
    item = types.SimpleNamespace(user_properties=list(props))
    distinct_properties(item)  # type: ignore[arg-type]
    kept = item.user_properties
    assert [name for name, _ in kept] == ["n", "times", "a", "times", "lock", "lock"]
    assert kept[1][1] == [1.0] and kept[3][1] == [2.0]


@BOTH_MODES
def test_one_function_under_two_names_records_to_each_names_own_test(
    autotune_pytester: pytest.Pytester, mode: tuple[str, ...]
) -> None:
    # Two configurations that share one function (`{"a": f, "b": f}`) are two candidates,
    # but each body was given its own test's fixtures by the function, which names the
    # last of them: a's body read and wrote b's item, in either run.
    autotune_pytester.makepyfile(
        test_shared="""
        import pytest
        from conftest import spin

        def f(n):
            spin(1e-4)
            return n

        @pytest.mark.autotune(candidates={"a": f, "b": f})
        def test_shared(candidate, request, record_property):
            record_property("node", request.node.name)
            return candidate(1)
        """
    )
    print_the_properties_of_each_call(autotune_pytester)
    result = run(autotune_pytester, "-s", "-p", "no:randomly", *mode)
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(
        [
            "*PROPS test_shared.py::test_shared[[]a[]] [[]('node', 'test_shared[[]a[]]')[]]",
            "*PROPS test_shared.py::test_shared[[]b[]] [[]('node', 'test_shared[[]b[]]')[]]",
        ]
    )


@BOTH_MODES
def test_an_xml_attribute_the_body_records_reaches_its_own_tests_testcase(
    autotune_pytester: pytest.Pytester, mode: tuple[str, ...]
) -> None:
    # `record_xml_attribute` wrote to the running test's <testcase>: in a plain run the
    # reference's body, run last in b's test, gave it impl="a"; under --autotune b's body
    # wrote to a's, and b's had none.
    autotune_pytester.makepyfile(
        test_xml=module_of(
            """
            @pytest.mark.autotune(candidates={"a": a, "b": b})
            def test_xml(candidate, record_xml_attribute):
                record_xml_attribute("impl", candidate.__name__)
                return candidate(1)
            """
        )
    )
    autotune_pytester.makeini(
        "[pytest]\nfilterwarnings =\n    error\n"
        "    ignore::pytest.PytestExperimentalApiWarning\njunit_family = xunit1\n"
    )
    result = run(autotune_pytester, "-p", "no:randomly", "--junitxml=out.xml", *mode)
    result.assert_outcomes(passed=2)
    xml = (autotune_pytester.path / "out.xml").read_text()
    assert 'name="test_xml[a]"' in xml
    for name in "ab":
        (testcase,) = [t for t in xml.split("<testcase")[1:] if f'name="test_xml[{name}]"' in t]
        assert f'impl="{name}"' in testcase.split(">", 1)[0]


def test_a_parametrize_of_names_the_body_dispatches_on_is_one_group_of_those_candidates(
    autotune_pytester: pytest.Pytester,
) -> None:
    # A value that is no function was named `candidate0`, a name in no item's id: each
    # item was a group of its own (`test_kind[quick]`, `test_kind[slow]`), whose one
    # candidate `candidate0` was tuned alone and never compared with the other.
    autotune_pytester.makepyfile(
        test_kind="""
        import pytest
        from conftest import spin

        COST = {"quick": 1e-4, "slow": 2e-4, 7: 3e-4}

        @pytest.mark.autotune
        @pytest.mark.parametrize("candidate", ["quick", "slow", 7])
        def test_kind(candidate):
            spin(COST[candidate])
            return 1
        """
    )
    result = run(autotune_pytester, "--autotune", "-v")
    result.assert_outcomes(passed=3)
    result.stdout.fnmatch_lines(
        ["autotune: tuning test_kind.py::test_kind on *", "test_kind.py::test_kind * quick *"]
    )
    result.stdout.no_fnmatch_line("*candidate0*")


@BOTH_MODES
def test_a_parametrize_of_candidates_given_by_keyword_is_read_as_one_given_by_position(
    autotune_pytester: pytest.Pytester, mode: tuple[str, ...]
) -> None:
    # `parametrize(argnames=..., argvalues=...)` makes a mark of no positional arguments:
    # the candidates were read from `args[0]`, and an IndexError from the plugin stopped
    # the collection of the whole session.
    autotune_pytester.makepyfile(
        test_kw=module_of(
            """
            @pytest.mark.autotune
            @pytest.mark.parametrize(argnames="candidate", argvalues=[fast, slow], ids=["f", "s"])
            @pytest.mark.parametrize(argnames="n", argvalues=[1])
            def test_kw(candidate, n):
                return candidate(n)
            """,
            "fast",
            "slow",
        )
    )
    result = run(autotune_pytester, "-v", *mode)
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["test_kw.py::test_kw[[]1-f[]] PASSED*"])
    if mode:
        result.stdout.fnmatch_lines(["test_kw.py::test_kw[[]1[]] * f *"])


@BOTH_MODES
def test_a_parametrize_of_candidates_given_as_a_generator_fails_its_items_saying_so(
    autotune_pytester: pytest.Pytester, mode: tuple[str, ...]
) -> None:
    # The plugin and pytest both read a parametrize mark's values and ids, and a generator
    # serves one reading: the plugin read the values first, and pytest skipped the test as
    # "got empty parameter set", no candidate run; generated ids it did not read, naming
    # the candidates by __name__, and each item was tuned as a group of its own.
    autotune_pytester.makepyfile(
        test_gen=module_of(
            """
            @pytest.mark.autotune
            @pytest.mark.parametrize("candidate", (f for f in [fast, slow]))
            def test_values(candidate):
                return candidate(1)

            @pytest.mark.autotune
            @pytest.mark.parametrize("candidate", [fast, slow], ids=(i for i in ["f", "s"]))
            def test_ids(candidate):
                return candidate(1)

            @pytest.mark.autotune
            @pytest.mark.parametrize("candidate", [fast, slow], ids=["f", "s"])
            def test_list(candidate):
                return candidate(1)
            """,
            "fast",
            "slow",
        )
    )
    # pytest deprecates a generator of values itself (PytestRemovedIn10Warning, pytest 9.1).
    result = run(autotune_pytester, "-W", "ignore::DeprecationWarning", *mode)
    result.assert_outcomes(passed=2, failed=4)
    result.stdout.fnmatch_lines(
        [
            "test_gen.py::test_values: @pytest.mark.parametrize('candidate', ...) gives its"
            " values as a generator, which only one reading can use*: give a list (or a tuple)",
            "test_gen.py::test_ids: @pytest.mark.parametrize('candidate', ...) gives its ids="
            " as a generator*",
        ]
    )


HOOK_CONFTEST = """

def pytest_generate_tests(metafunc):
    name = metafunc.function.__name__
    if name in ("test_hooked", "test_both"):
        metafunc.parametrize("candidate", [fast, slow], ids=["f", "s"])
    if name == "test_rows":
        metafunc.parametrize(("candidate", "n"), [(fast, 1), (slow, 2)], ids=["f1", "s2"])
    if name == "test_indirect":
        metafunc.parametrize("candidate", [fast, slow], ids=["f", "s"], indirect=True)
""" + two_candidates("fast", "slow")


@BOTH_MODES
def test_candidates_a_conftests_generate_hook_gives_are_one_group_named_by_their_ids(
    autotune_pytester: pytest.Pytester, mode: tuple[str, ...]
) -> None:
    # The plugin parametrized `candidate` again (to fail with "give the candidates"), and
    # pytest's "duplicate parametrization of 'candidate'" stopped the whole session.
    add_to_conftest(autotune_pytester, HOOK_CONFTEST)
    autotune_pytester.makepyfile(
        test_hooked="""
        import pytest

        @pytest.fixture(params=[1, 2], ids=lambda n: f"n{n}")
        def n(request):
            return request.param

        @pytest.mark.autotune
        def test_hooked(candidate, n):
            return candidate(n)
        """
    )
    result = run(autotune_pytester, "-v", *mode)
    result.assert_outcomes(passed=4)
    result.stdout.fnmatch_lines(["test_hooked.py::test_hooked[[]n1-f[]] PASSED*"])
    if mode:
        result.stdout.fnmatch_lines(
            [
                "test_hooked.py::test_hooked[[]n1[]] * f *",
                "test_hooked.py::test_hooked[[]n2[]] * f *",
            ]
        )
        result.stdout.fnmatch_lines(["verdicts: 2 no baseline"])


def test_a_generate_hook_whose_rows_differ_within_a_group_fails_its_items_not_the_session(
    autotune_pytester: pytest.Pytester,
) -> None:
    add_to_conftest(autotune_pytester, HOOK_CONFTEST)
    autotune_pytester.makepyfile(
        test_rows="""
        import pytest

        @pytest.mark.autotune
        def test_rows(candidate, n):
            return candidate(n)

        @pytest.mark.autotune(candidates={"g": abs})
        def test_both(candidate):
            return candidate(1)

        class TestIndirect:
            @pytest.fixture
            def candidate(self, request):
                return request.param

            @pytest.mark.autotune
            def test_indirect(self, candidate):
                return candidate(1)

        def test_plain():
            pass
        """
    )
    result = run(autotune_pytester)
    result.assert_outcomes(passed=1, failed=6)
    result.stdout.fnmatch_lines(
        [
            "*test_rows.py::test_rows: a pytest_generate_tests hook parametrizes `candidate`"
            " together with other names, whose values then differ within a group*",
            "*test_rows.py::test_both: a pytest_generate_tests hook and the marker's"
            " candidates= both parametrize `candidate`, which pytest refuses*; give the"
            " candidates in one place",
            "*test_rows.py::TestIndirect::test_indirect: a pytest_generate_tests hook"
            " parametrizes `candidate` indirectly*",
        ],
        consecutive=False,
    )


LATE_HOOK = (
    two_candidates("fast", "slow")
    + """

import pytest


@pytest.hookimpl(trylast=True)
def pytest_generate_tests(metafunc):
    if metafunc.function.__name__ in ("test_registry", "test_marker_too"):
        metafunc.parametrize("candidate", [fast, slow], ids=["f", "s"])
"""
)


@BOTH_MODES
def test_candidates_a_hook_called_after_the_plugins_gives_are_one_group(
    autotune_pytester: pytest.Pytester, mode: tuple[str, ...]
) -> None:
    # A trylast hook is called after this plugin's (as is a plugin's given with -p, which
    # is registered before this one): the plugin parametrized `candidate` to fail with
    # "give the candidates", the hook's parametrize then met pytest's "duplicate
    # parametrization", and the collection error stopped the session.
    add_to_conftest(autotune_pytester, LATE_HOOK)
    autotune_pytester.makepyfile(
        test_late="""
        import pytest

        @pytest.mark.autotune
        @pytest.mark.parametrize("n", [1, 2])
        def test_registry(candidate, n):
            return candidate(n)

        def test_plain():
            pass
        """,
    )
    result = run(autotune_pytester, "-v", *mode)
    result.assert_outcomes(passed=5)
    result.stdout.fnmatch_lines(["test_late.py::test_registry[[]1-f[]] PASSED*"])
    if mode:
        result.stdout.fnmatch_lines(
            ["test_late.py::test_registry[[]1[]] * f *", "verdicts: 2 no baseline"],
            consecutive=False,
        )


def test_candidates_parametrized_twice_fail_their_test_not_the_session(
    autotune_pytester: pytest.Pytester,
) -> None:
    # A hook's parametrize of `candidate` together with another name is refused as a
    # whole: the other name was then given by nothing, and the test's items failed at set-up
    # with "fixture 'n' not found", never saying why.
    add_to_conftest(autotune_pytester, LATE_HOOK)
    deeper = autotune_pytester.mkpydir("deeper")
    deeper.joinpath("conftest.py").write_text(
        textwrap.dedent(
            """
            import pytest

            @pytest.hookimpl(trylast=True)
            def pytest_generate_tests(metafunc):
                if "n" in metafunc.fixturenames:
                    metafunc.parametrize(("candidate", "n"), [(abs, 1), (abs, 2)])
            """
        )
    )
    deeper.joinpath("test_with_n.py").write_text(
        textwrap.dedent(
            """
            import pytest

            @pytest.mark.autotune(candidates={"g": abs, "h": abs})
            def test_with_n(candidate, n):
                return candidate(n)
            """
        )
    )
    autotune_pytester.makepyfile(
        test_twice="""
        import pytest

        @pytest.mark.autotune(candidates={"g": abs})
        def test_marker_too(candidate):
            return candidate(1)

        @pytest.mark.autotune
        @pytest.mark.parametrize("candidate", [abs])
        def test_registry(candidate):
            return candidate(1)

        def test_plain():
            pass
        """,
    )
    result = run(autotune_pytester)
    result.assert_outcomes(passed=1, failed=4)
    # One at a time: pytest 7 collects the subfolder after the module, pytest 8 before.
    for line in (
        "*test_with_n.py::test_with_n: the marker's candidates= and a"
        " pytest_generate_tests hook both parametrize `candidate`*",
        "*test_twice.py::test_marker_too: the marker's candidates= and a"
        " pytest_generate_tests hook both parametrize `candidate`, which pytest refuses*",
        "*test_twice.py::test_registry: @pytest.mark.parametrize('candidate', ...) and a"
        " pytest_generate_tests hook both parametrize `candidate`*",
    ):
        result.stdout.fnmatch_lines([line])


def test_a_refused_mark_of_candidate_and_other_names_leaves_the_marks_ids_to_its_other_tests(
    autotune_pytester: pytest.Pytester,
) -> None:
    # A module's `pytestmark` parametrizing `candidate` and `n`, refused in the test a hook
    # gives candidates: its one row of `n` was parametrized as the mark's, and pytest kept
    # that row's single id on the mark for the module's other test, whose collection then
    # failed, stopping the whole session ("2 parameter sets specified, with different
    # number of ids: 1").
    add_to_conftest(
        autotune_pytester,
        textwrap.dedent(
            """
            def pytest_generate_tests(metafunc):
                if metafunc.function.__name__ == "test_hooked":
                    metafunc.parametrize("candidate", [abs, round])
            """
        ),
    )
    autotune_pytester.makepyfile(
        test_marked="""
        import pytest

        pytestmark = pytest.mark.parametrize(
            "candidate, n", [(abs, 1), (round, 2)], ids=["abs1", "round2"]
        )

        @pytest.mark.autotune
        def test_hooked(candidate, n):
            return candidate(n)

        def test_plain(candidate, n):
            assert candidate(n) == n
        """
    )
    result = run(autotune_pytester, "-v")
    result.assert_outcomes(passed=2, failed=2)
    result.stdout.fnmatch_lines(
        [
            "*test_marked.py::test_hooked?abs-1? FAILED*",
            "*test_marked.py::test_hooked?round-1? FAILED*",
            "*test_marked.py::test_plain?abs1? PASSED*",
            "*test_marked.py::test_plain?round2? PASSED*",
        ]
    )
    assert "different number of ids" not in result.stdout.str()


@BOTH_MODES
def test_one_function_a_hook_lists_under_two_ids_is_two_candidates(
    autotune_pytester: pytest.Pytester, mode: tuple[str, ...]
) -> None:
    # A registry's alias (`{"fast": f, "fast_again": f}`) given through a hook: known by
    # the function alone, the candidate had two ids, read as another parameter's, and
    # every item failed with "parametrizes `candidate` together with other names", where
    # a parametrize mark of the same list tunes three candidates.
    add_to_conftest(
        autotune_pytester,
        two_candidates("fast", "slow")
        + """

REGISTRY = {"fast": fast, "fast_again": fast, "slow": slow}


def pytest_generate_tests(metafunc):
    if metafunc.function.__name__ == "test_aliased":
        metafunc.parametrize("candidate", list(REGISTRY.values()), ids=list(REGISTRY))
""",
    )
    autotune_pytester.makepyfile(
        test_aliased="""
        import pytest

        @pytest.mark.autotune
        @pytest.mark.parametrize("n", [1, 2])
        def test_aliased(candidate, n):
            return candidate(n)
        """
    )
    result = run(autotune_pytester, "-v", *mode)
    result.assert_outcomes(passed=6)
    result.stdout.fnmatch_lines(["test_aliased.py::test_aliased[[]fast_again-1[]] PASSED*"])
    if mode:
        result.stdout.fnmatch_lines(["verdicts: 2 no baseline"])


def test_a_refused_hook_row_pytest_could_not_read_raises_nothing_of_ours(
    autotune_pytester: pytest.Pytester,
) -> None:
    # A row that is no sequence of the names' values, refused beside `candidates=`: reading
    # its other names' values raised our TypeError out of the collection.
    add_to_conftest(
        autotune_pytester,
        textwrap.dedent(
            """

            import pytest

            @pytest.hookimpl(trylast=True)
            def pytest_generate_tests(metafunc):
                if "n" in metafunc.fixturenames:
                    metafunc.parametrize(("candidate", "n"), [abs])
            """
        ),
    )
    autotune_pytester.makepyfile(
        test_row="""
        import pytest

        @pytest.mark.autotune(candidates={"g": abs})
        def test_x(candidate, n):
            return candidate(n)
        """
    )
    result = run(autotune_pytester)
    assert "TypeError" not in result.stdout.str()
    assert result.ret != pytest.ExitCode.INTERNAL_ERROR
