"""Properties of the merge driver (`pytest-autotune merge`) over three versions of one cache
file, checked with Hypothesis: derandomized and without a database, so CI sees the same
examples on every run."""

from __future__ import annotations

from typing import Any

import pytest

# In the dev extra (CI's install); a host without it (the lent GPU's) skips these.
pytest.importorskip("hypothesis")

from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_autotune.cli.merge import _sessions_of, merge_documents
from pytest_autotune.tune.cache_format import entry_order, parse_contents
from pytest_autotune.tune.files import dumps, loads_strict
from pytest_autotune.tune.key import serialize_key_json

FIXED = settings(derandomize=True, database=None, deadline=None, max_examples=200)

# -- the merge driver: three versions of one cache file, merged entry by entry ---------------

GROUP_KEYS = ("n1", "n2", "n3", "n4")
LISTS = ("a-b", "a-b-c")
times = st.lists(st.integers(1_000, 9_000), min_size=1, max_size=5)


def merge_entry(key: str, checksum: str, samples: list[int], winner: int = 0) -> dict[str, Any]:
    names = checksum.split("-")
    results = [
        {
            "index": i,
            "name": n,
            "samples_ns": [s + 100 * i for s in samples],
            "dropped_first": False,
        }
        for i, n in enumerate(names)
    ]
    return {
        "key": key,
        "checksum": checksum,
        "fastest_index": winner,
        "fastest_name": names[winner],
        "bounds": None,
        "results": results,
    }


def cache_document(entries: Any, peak: int = 1) -> dict[str, Any]:
    device = {"id": "cpu-x", "fingerprint": {}, "peaks": {"copy": peak}}
    ordered = sorted(entries, key=lambda e: (serialize_key_json(e["key"]), e["checksum"]))
    return {"schema_version": 2, "device": device, "tuner": "t.py::t", "entries": ordered}


@st.composite
def ancestors(draw: st.DrawFn) -> dict[str, Any]:
    held = draw(st.dictionaries(st.sampled_from(GROUP_KEYS), st.sampled_from(LISTS), max_size=4))
    return cache_document(merge_entry(k, c, draw(times)) for k, c in held.items())


@st.composite
def updates(draw: st.DrawFn, base: dict[str, Any]) -> dict[str, Any]:
    """What a branch's updates make of `base`: each entry kept, joined (a session added),
    restarted (a new baseline), pruned or tuned over another candidate list, and new keys."""
    out = {}
    for old in base["entries"]:
        key, checksum = old["key"], old["checksum"]
        change = draw(st.sampled_from(["keep", "join", "restart", "prune", "relist"]))
        if change == "keep":
            out[key] = old
        elif change == "join":
            out[key] = merge_entry(key, checksum, draw(times), old["fastest_index"])
            sessions = _sessions_of(old) or []
            out[key]["sessions"] = [{"median_ns": m, "read_ns": None} for m in sessions]
        elif change == "restart":
            out[key] = merge_entry(key, checksum, draw(times), draw(st.integers(0, 1)))
        elif change == "relist":
            out[key] = merge_entry(key, LISTS[1 - LISTS.index(checksum)], draw(times))
    for key in draw(st.sets(st.sampled_from(GROUP_KEYS), max_size=2)) - out.keys():
        if not any(e["key"] == key for e in base["entries"]):
            out[key] = merge_entry(key, draw(st.sampled_from(LISTS)), draw(times))
    return cache_document(out.values(), peak=draw(st.integers(1, 3)))


def identities(document: dict[str, Any]) -> set[tuple[str, str]]:
    return {(serialize_key_json(e["key"]), e["checksum"]) for e in document["entries"]}


@FIXED
@given(st.data())
def test_a_merge_with_one_side_unchanged_gives_the_other_side_byte_for_byte(data) -> None:
    base = data.draw(ancestors())
    changed = data.draw(updates(base))
    for sides in [(changed, changed, changed), (base, changed, changed)]:
        assert merge_documents(*sides) == (changed, [], [])
    for sides in [(base, changed, base), (base, base, changed)]:
        merged, conflicts, notes = merge_documents(*sides)
        assert (dumps(merged), conflicts, notes) == (dumps(changed), [], [])


@FIXED
@given(st.data())
def test_a_merge_keeps_every_entry_either_side_added_and_reads_as_a_cache_file(data) -> None:
    base = data.draw(ancestors())
    ours, theirs = data.draw(updates(base)), data.draw(updates(base))
    merged, conflicts, _ = merge_documents(base, ours, theirs)
    added = (identities(ours) | identities(theirs)) - identities(base)
    assert added <= identities(merged)
    contents = parse_contents(loads_strict(dumps(merged)))
    written = [(k.key, k.checksum) for k, _ in sorted(contents.entries.items(), key=entry_order)]
    assert [(serialize_key_json(e["key"]), e["checksum"]) for e in merged["entries"]] == written
    swapped, conflicts_swapped, _ = merge_documents(base, theirs, ours)
    if not conflicts and not conflicts_swapped:
        # Which entries a merge keeps is not a matter of which branch merges which; only
        # where both added a session to one baseline (or both changed the device block)
        # is this branch's kept.
        assert identities(merged) == identities(swapped)
