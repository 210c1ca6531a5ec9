"""A candidate's test in place of its body (`plugin_engine.pytest_pyfunc_call`): with
--autotune its group is tuned at its first test and judged, each test then ending as its
candidate did; in a plain run its candidate is called once and checked against the
reference, and what tuning would call or ask first (`work=`, `key=`, `groups=`, `device=`)
is asked too, so that the plain run every CI job makes fails on it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

import pytest

from pytest_autotune.body_arguments import used_up_input_error
from pytest_autotune.candidate_run import RAISED, CandidateRun, called_again
from pytest_autotune.check_mode import check_candidate
from pytest_autotune.collection import ItemSpec, outside_rootdir, tuner_of_test
from pytest_autotune.failing import fail, raise_again, raised_only_when_tuned
from pytest_autotune.function_spec import unprovided_device
from pytest_autotune.group_marks import expected_to_fail, not_run
from pytest_autotune.group_request import GroupRequest, check_groups
from pytest_autotune.item_groups import candidate_nodeids
from pytest_autotune.marker_callables import Named, evaluated_options, group_key, kept_if_raising
from pytest_autotune.session import AutotuneSession
from pytest_autotune.tune.errors import UNPLANNED, AutotuneSkip
from pytest_autotune.tune.key import stable_key
from pytest_autotune.tuning_notes import note_numbered_candidates, note_once, note_positional_key


def fail_if_the_fixture_changed_the_candidate(item: pytest.Function, spec: ItemSpec) -> None:
    """A `candidate` parametrized indirectly reaches the test through a fixture of the
    user's, which may turn it into another callable (a kernel compiled, an axis bound).
    The group's candidates are checked and tuned at its first test, before the others'
    fixtures are set up, so the plugin calls the parametrized values themselves: one the
    fixture changed would be checked and timed as a function the test never runs."""
    given = item.funcargs.get("candidate")
    if given is item.callspec.params.get("candidate"):
        return
    fail(
        f"{spec.function.nodeid}: the `candidate` fixture turned candidate"
        f" {spec.candidate!r} into {given!r}; the plugin checks and times the parametrized"
        " callables themselves, so parametrize `candidate` directly with the callables to"
        " run (prepare them, a kernel compiled, before the parametrize)"
    )


def options_here(config: pytest.Config, spec: ItemSpec) -> Mapping[str, Any]:
    """The marker's options for a run on this machine. `reference="gpu"` with the gpu
    candidate skipped on this runner: it was called all the same, and its error failed
    every other candidate. A skipped candidate is never called, so the others are checked
    as without a reference: against the first that succeeds."""
    options = spec.function.options
    reference = options.get("reference")
    if isinstance(reference, str) and reference in not_run(config, spec.group):
        return {**options, "reference": None}
    return options


def fail_if_used_up(spec: ItemSpec, named: Named) -> None:
    """Fail the test in one line where an argument is one that a call uses up (a
    generator), in either mode: a plain run's reference found it emptied by the candidate
    ("differs from the reference"), and the tuner's refusal showed its TypeError with a
    traceback through this plugin in the group's first test."""
    used_up = used_up_input_error(spec.function.nodeid, named.arguments)
    if used_up is not None:
        pytest.fail(used_up, pytrace=False)


GROUP_KEYS = pytest.StashKey[dict[str, tuple[Any, str]]]()
"""The key each group's first test got from its `key=` callable, and that test's id."""


def stable_group_key(item: pytest.Function, spec: ItemSpec, named: Named) -> Any:
    """The group's key for this test, which must be the one its first test got. A `key=`
    of a counter, the time or random draws gave each test of a group another key: all
    passed, and the group was tuned and filed under its first test's key, which no later
    run made again, so every gate read "no baseline" and never said why."""
    key = group_key(spec, named)
    keys = item.config.stash.setdefault(GROUP_KEYS, {})
    if spec.group not in keys:
        # Asked twice in the group's first test: each checked call restores the global
        # random generators (`GlobalDraws`), undoing the key's own draws, so a key of
        # random draws gave every test of its group the same key, and the next run another.
        again = group_key(spec, named)
        if stable_key(again) != stable_key(key):
            fail(
                f"{item.nodeid}: key= gave {key!r}, then {again!r} when asked again in the"
                f" same test; {_SAME_KEY}"
            )
    first, first_test = keys.setdefault(spec.group, (key, item.nodeid))
    # Compared as the cache file identifies a key: a key class of no `__eq__` of its own
    # compares by identity, and each test's equal key would read as another.
    if stable_key(key) != stable_key(first):
        fail(
            f"{item.nodeid}: key= gave {key!r}, where it gave {first!r} in {first_test},"
            f" a test of the same group; {_SAME_KEY}"
        )
    return key


_SAME_KEY = (
    "a key must be the same each time it is asked (made of the inputs' sizes and dtypes,"
    " not of a counter, the time or random draws), or no later run finds the baseline"
    " filed under it"
)


def tuned(
    item: pytest.Function,
    spec: ItemSpec,
    session: AutotuneSession,
    run: CandidateRun,
    inputs: tuple[Any, ...],
    options: Mapping[str, Any],
    named: Named,
) -> str | None:
    """The candidate's failure in a tuning run, or None: its group tuned at the group's first
    test (`AutotuneSession.candidate_outcome`), then what its candidate ends with. A
    candidate whose call raised is called again in its own test, for its traceback
    (`raise_again`); one that declined the group's key is skipped (`AutotuneSkip`)."""
    note_positional_key(session, spec)
    note_numbered_candidates(session, spec)
    note_once(session, outside_rootdir(item, spec.function.nodeid, session.settings))
    request = GroupRequest(
        group=spec.group,
        tuner_name=tuner_of_test(spec.function.nodeid),
        key=spec.group_key or "default",  # until its key= callable gives it
        candidates=spec.function.candidates,
        run=run,
        inputs=inputs,
        options={k: v for k, v in options.items() if k != "work"},
        not_run=not_run(item.config, spec.group),
        test_ids=candidate_nodeids(item.config, spec.group),
        expected_to_fail=expected_to_fail(item.config, spec.group),
    )
    # Each test of the group fails with its `key=` or `work=` callable's error;
    # the report and the records keep the group too, as an ERROR (its tests'
    # failures alone left a report that read "2 no baseline" over a failed run).
    with kept_if_raising(session, replace(request, key_known=False), "key="):
        request = replace(request, key=stable_group_key(item, spec, named))
    with kept_if_raising(session, request, "work="):
        evaluated = evaluated_options(options, named, spec.function.nodeid)
        request = replace(request, options=evaluated)
    failure = session.candidate_outcome(request, spec.candidate)
    fn = dict(spec.function.candidates)[spec.candidate]
    if (
        failure
        and id(fn) in item.config.stash[RAISED][spec.group]
        and raise_again(called_again(run, spec, inputs), failure)
    ):
        failure = raised_only_when_tuned(failure)
    declined = None if failure else session.declined(spec.group, spec.candidate)
    if declined is not None:
        raise AutotuneSkip(declined)
    return failure


def checked(
    item: pytest.Function,
    spec: ItemSpec,
    session: AutotuneSession,
    run: CandidateRun,
    inputs: tuple[Any, ...],
    options: Mapping[str, Any],
    named: Named,
) -> str | None:
    """The candidate's failure in a plain run, or None: called once and compared with the
    reference (`check_candidate`)."""
    unplanned = _fail_what_tuning_would(item, spec, options, named)
    return check_candidate(
        spec.candidate,
        spec.function.candidates,
        run,
        inputs,
        reference=options.get("reference"),
        config=session.settings.for_marker(options).engine,
        check_output=options.get("check_output") is not False,
        not_run={*not_run(item.config, spec.group), *unplanned},
        expected_to_fail=expected_to_fail(item.config, spec.group),
    )


def _fail_what_tuning_would(
    item: pytest.Function, spec: ItemSpec, options: Mapping[str, Any], named: Named
) -> frozenset[str]:
    """What tuning would call or ask first, asked in a plain run too, so that a bad `work=`,
    `key=`, group priority or `device=` fails the plain run every CI job makes, not only
    --autotune. The candidates `groups=` never tries for the group's key, which decline it
    as in tuning: this test's own is skipped."""
    evaluated_options(options, named, spec.function.nodeid)
    unprovided = unprovided_device(item.config, options.get("device"))
    if unprovided is not None:
        pytest.fail(f"{spec.function.nodeid}: {unprovided}", pytrace=False)
    unplanned = check_groups(
        spec.function.candidates,
        options.get("groups"),
        not_run(item.config, spec.group),
        stable_group_key(item, spec, named),
    )
    if spec.candidate in unplanned:
        raise AutotuneSkip(UNPLANNED)
    return unplanned
