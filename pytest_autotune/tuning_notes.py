"""The warnings a tuning test adds to the end of the summary, each said once however many
tests or workers say it: keys that number a parameter's values by their place, candidates
named by their place in the list, a test outside the root dir.
"""

from __future__ import annotations

from pytest_autotune.collection import ItemSpec
from pytest_autotune.session import AutotuneSession


def note_positional_key(session: AutotuneSession, spec: ItemSpec) -> None:
    """Say once per test where its groups' keys number a parameter's values by their place
    in its list (`ItemSpec.positional`): what the value's text would have kept apart, a
    reordered or inserted value mixes up, each group then judged against another's
    baseline (an array keyed `x0` read +1863%, a REGRESSION of unchanged code, once the
    two arrays of its list were swapped)."""
    if not spec.positional or spec.function.options.get("key") is not None:
        return
    first = spec.positional[0]
    # One line for every group and worker alike (the workers' lines are merged as equal).
    line = (
        f"warning: {spec.function.nodeid}: its groups' keys number the values of"
        f" {', '.join(spec.positional)} by their place in the list ({first}0, {first}1, ...):"
        " such a value (an array, an object, a str of over 100 characters) has no plain text"
        " to key by, so reordering the values, or inserting one before others, would judge a"
        " group against another's baseline; give the parameter ids= or the marker a key="
    )
    if line not in session.output.notes:
        session.note(line)


def note_once(session: AutotuneSession, line: str | None) -> None:
    """`line` at the end of the summary, once however many tests or workers say it."""
    if line is not None and line not in session.output.notes:
        session.note(line)


def note_numbered_candidates(session: AutotuneSession, spec: ItemSpec) -> None:
    """Say once per test where candidates are named by their place in the list
    (`candidate0`: a `functools.partial` or another callable of no `__name__`, in
    `candidates=[...]` or a parametrize without ids): the cache file knows them by those
    names, and its candidate-list checksum too, so reordering the list, or inserting one
    before others, silently gave each baseline to another function."""
    numbered = [
        name
        for i, (name, fn) in enumerate(spec.function.candidates)
        if name == f"candidate{i}" and not isinstance(getattr(fn, "__name__", None), str)
    ]
    if not numbered:
        return
    them = (
        f"candidates {', '.join(numbered)} are named by their place in the list (they have"
        " no __name__): reordering the list, or inserting a candidate before them, would give"
        " their baselines to other functions"
        if len(numbered) > 1
        else f"candidate {numbered[0]} is named by its place in the list (it has no"
        " __name__): reordering the list, or inserting a candidate before it, would give its"
        " baseline to another function"
    )
    line = (
        f"warning: {spec.function.nodeid}: {them};"
        " name them with autotune(candidates={name: function, ...}) or parametrize ids="
    )
    if line not in session.output.notes:
        session.note(line)
