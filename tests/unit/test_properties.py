"""Properties of the engine's pure parts that any user's data must keep, checked with
Hypothesis over keys, cache files and their names, and the gate's rule. Derandomized and
without a database, so CI sees the same examples on every run."""

from __future__ import annotations

import math
import re
import tempfile
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest

# In the dev extra (CI's install); a host without it (the lent GPU's) skips these.
pytest.importorskip("hypothesis")

from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_autotune.gate.baseline import Baseline
from pytest_autotune.gate.rules import RegressionCheck
from pytest_autotune.gate.samples import Measurement
from pytest_autotune.tune.benchmark import AutotuneOutcome
from pytest_autotune.tune.cache import PersistentCache, PersistentCacheKey, PersistentCacheValue
from pytest_autotune.tune.cache_names import cache_file_parts
from pytest_autotune.tune.errors import AutotuneError, AutotuneErrorKind
from pytest_autotune.tune.files import dumps, loads_strict
from pytest_autotune.tune.key import (
    AutotuneKey,
    AutotuneLevel,
    anchor,
    key_to_json,
    serialize_key_json,
    stable_key,
)

FIXED = settings(derandomize=True, database=None, deadline=None, max_examples=200)

sizes = st.integers(0, 2**64)
levels = st.sampled_from(list(AutotuneLevel))
bases = st.one_of(st.none(), st.integers(2, 10), st.floats(1.0001, 16))


@dataclass(frozen=True)
class Shape(AutotuneKey):
    n: int
    dtype: str
    scale: float
    dims: tuple[Any, ...] = ()


atoms = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(10**39), 10**39),
    st.floats(allow_nan=False, allow_infinity=False),
    st.text(),
)
tuple_keys = st.recursive(
    atoms, lambda parts: st.lists(parts, max_size=4).map(tuple), max_leaves=12
)
shapes = st.builds(
    Shape,
    st.integers(-(10**39), 10**39),
    st.text(),
    st.floats(allow_nan=False, allow_infinity=False),
    st.lists(atoms, max_size=3).map(tuple),
)
keys = st.one_of(tuple_keys, shapes, st.lists(shapes, min_size=1, max_size=2).map(tuple))


@FIXED
@given(sizes, sizes, bases, levels)
def test_anchor_never_orders_two_sizes_the_other_way(a: int, b: int, base, level) -> None:
    low, high = sorted((a, b))
    assert anchor(low, base=base, level=level) <= anchor(high, base=base, level=level)


@FIXED
@given(sizes, bases, levels)
def test_anchor_rounds_up_and_an_anchor_of_a_whole_base_anchors_to_itself(x, base, level) -> None:
    anchored = anchor(x, base=base, level=level)
    assert anchored >= x
    # A fractional base's anchors are powers rounded up to whole numbers, as in the seed,
    # and such a rounded power may anchor to the next one: idempotent for whole bases only.
    if level is AutotuneLevel.FULL or (level is AutotuneLevel.BALANCED and base in (None, 2, 3)):
        assert anchor(anchored, base=base, level=level) == anchored


@FIXED
@given(
    st.sampled_from([np.int8, np.int16, np.int32, np.int64, np.uint32, np.uint64]), sizes, levels
)
def test_anchor_of_a_numpy_integer_is_the_anchor_of_the_int_it_equals(kind, x, level) -> None:
    size = kind(x % (int(np.iinfo(kind).max) + 1))
    assert anchor(size, level=level) == anchor(int(size), level=level)


@FIXED
@given(sizes, sizes, sizes, bases, levels)
def test_anchor_stays_within_its_min_and_max(x, a, b, base, level) -> None:
    low, high = sorted((a, b))
    assert low <= anchor(x, min=low, max=high, base=base, level=level) <= high


@FIXED
@given(keys)
def test_a_key_read_back_from_a_cache_file_has_the_stable_form_it_was_written_with(key) -> None:
    text = dumps({"key": key_to_json(key)})
    assert serialize_key_json(loads_strict(text)["key"]) == stable_key(key)


@FIXED
@given(keys, keys)
def test_two_keys_share_a_stable_form_exactly_when_they_are_equal(a, b) -> None:
    assert (stable_key(a) == stable_key(b)) == (a == b)


@FIXED
@given(shapes)
def test_a_dataclass_key_read_back_from_its_json_equals_and_hashes_as_it_was(key) -> None:
    back = Shape.from_json(loads_strict(dumps(key.to_json())))
    assert back == key and hash(back) == hash(key)


names = st.one_of(
    st.text(min_size=1),
    st.text(st.characters(codec="utf-8"), min_size=1),
    # A file name that is not UTF-8 reads with lone surrogates, and so does its node id.
    st.text(st.characters(min_codepoint=0xD800, max_codepoint=0xDFFF), min_size=1),
    st.from_regex(r"[a-z0-9._-]{1,130}", fullmatch=True),
    st.from_regex(r"(?i)(con|nul|aux|com1|lpt9)[. a-z]{0,5}", fullmatch=True),
)
_WINDOWS_DEVICE = re.compile(r"(con|prn|aux|nul|com[0-9]|lpt[0-9])", re.IGNORECASE)


def portable(name: str) -> bool:
    """A file name Linux, macOS and Windows all take, as itself."""
    return (
        0 < len(name.encode()) <= 255
        and not re.search(r'[<>:"/\\|?*\x00-\x1f]', name)
        and not name.endswith((".", " "))
        and not _WINDOWS_DEVICE.fullmatch(name.split(".")[0].rstrip())
    )


@settings(FIXED, max_examples=1000)
@given(names, names)
def test_cache_file_names_are_portable_and_never_shared_even_ignoring_case(a, b) -> None:
    folder_a, file_a = cache_file_parts(a, a)
    folder_b, file_b = cache_file_parts(b, b)
    assert all(map(portable, (folder_a, file_a, folder_b, file_b)))
    for other in (b, a.swapcase()):
        if other != a:
            folder, file = cache_file_parts(other, other)
            assert (folder.casefold(), file.casefold()) != (folder_a.casefold(), file_a.casefold())


@st.composite
def entries(draw: st.DrawFn) -> tuple[PersistentCacheKey, PersistentCacheValue]:
    key = draw(tuple_keys)
    results: list[AutotuneOutcome | AutotuneError] = []
    for i in range(draw(st.integers(1, 3))):
        samples = draw(st.lists(st.integers(1, 10**12), min_size=1, max_size=4))
        results.append(
            AutotuneOutcome(f"c{i}", i, tuple(ns / 1e9 for ns in samples))
            if draw(st.booleans())
            else AutotuneError(AutotuneErrorKind.UNKNOWN, draw(st.text(max_size=20)), f"c{i}")
        )
    index = draw(st.integers(0, len(results) - 1))
    value = PersistentCacheValue(key_to_json(key), index, f"c{index}", tuple(results))
    return PersistentCacheKey(stable_key(key), draw(st.sampled_from(["c1", "c2"]))), value


# One decision a key in each save, as a tuner saves them.
saves = st.lists(
    st.lists(entries(), max_size=4, unique_by=lambda entry: entry[0].key).map(dict),
    min_size=1,
    max_size=5,
)


def after(
    batches: list[dict[PersistentCacheKey, PersistentCacheValue]],
) -> dict[PersistentCacheKey, PersistentCacheValue]:
    """What a file holds after `batches` were saved in turn: a save replaces every entry
    of its keys, whatever their checksum."""
    held: dict[PersistentCacheKey, PersistentCacheValue] = {}
    for batch in batches:
        saved = {key.key for key in batch}
        held = {key: value for key, value in held.items() if key.key not in saved}
        held.update(batch)
    return held


def loaded(path: Path) -> dict[PersistentCacheKey, PersistentCacheValue]:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        return PersistentCache(path, "t").load()


@settings(FIXED, max_examples=40)
@given(saves, st.lists(st.booleans(), min_size=5, max_size=5))
def test_journal_saves_read_as_one_whole_file_save_of_their_entries(batches, reads) -> None:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "journaled.json"
        for done, (batch, read_between) in enumerate(zip(batches, reads, strict=False), 1):
            cache = PersistentCache(path, "t", journal=True)
            cache.load()
            cache.save(batch)
            if read_between:
                assert loaded(path) == after(batches[:done])
        whole = Path(folder) / "whole.json"
        PersistentCache(whole, "t").save(after(batches))
        assert loaded(path) == loaded(whole) == after(batches)


@settings(FIXED, max_examples=10)
@given(st.lists(entries(), min_size=1, max_size=3, unique_by=lambda entry: entry[0].key).map(dict))
def test_a_cache_file_cut_at_any_byte_is_read_whole_or_refused_by_name(held) -> None:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "t.json"
        PersistentCache(path, "t").save(held)
        data = path.read_bytes()
        for end in range(len(data)):
            path.write_bytes(data[:end])
            cache = PersistentCache(path, "t")
            with warnings.catch_warnings(record=True) as said:
                warnings.simplefilter("always")
                read = cache.load()
            assert read == held or (read == {} and cache.unreadable() is not None and said)


samples = st.lists(st.floats(1e-7, 1.0), min_size=1, max_size=30)
checks = st.builds(RegressionCheck, st.floats(0, 0.5), st.floats(0, 0.2))


def compared(check: RegressionCheck, current: list[float], baseline: list[float]) -> Any:
    return check.delta(Measurement(tuple(current)), Baseline("cuda-x", "c", "w", tuple(baseline)))


@FIXED
@given(checks, samples, samples, st.randoms(use_true_random=False))
def test_a_verdict_does_not_depend_on_the_order_of_the_samples(check, now, then, rng) -> None:
    before = compared(check, now, then)
    rng.shuffle(now)
    rng.shuffle(then)
    after = compared(check, now, then)
    assert after.failed == before.failed
    assert math.isclose(after.delta, before.delta, rel_tol=1e-9, abs_tol=1e-12)


@FIXED
@given(checks, samples, samples, st.floats(1e-2, 1e2))
def test_scaling_both_sides_changes_neither_the_change_nor_the_verdict(check, now, then, c) -> None:
    before = compared(check, now, then)
    scaled = compared(check, [s * c for s in now], [s * c for s in then])
    assert scaled.failed == before.failed
    assert math.isclose(scaled.delta, before.delta, rel_tol=1e-6, abs_tol=1e-9)


@FIXED
@given(checks, samples, samples, st.floats(0.1, 10))
def test_scaling_this_runs_samples_scales_the_reported_ratio_alike(check, now, then, c) -> None:
    before = compared(check, now, then)
    scaled = compared(check, [s * c for s in now], then)
    assert math.isclose(1 + scaled.delta, (1 + before.delta) * c, rel_tol=1e-6)
