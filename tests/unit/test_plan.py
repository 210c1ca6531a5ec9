"""The order candidates are tried in (the seed's tune plan)."""

import re

import numpy as np
import pytest

from pytest_autotune.tune.tunable import Tunable, TuneGroup, tune_plan


def fn(*_):
    return None


def plain(name):
    return Tunable(name, fn)


def test_ungrouped_candidates_form_one_batch_when_there_are_no_groups():
    assert tune_plan(0, [plain("a"), plain("b"), plain("c")]) == [(0, 1, 2)]


def test_ungrouped_candidates_join_the_first_batch():
    big = TuneGroup("big", lambda key: 1)
    tunables = [plain("a"), plain("b").group(big, lambda key: 0), plain("c")]
    assert tune_plan(0, tunables) == [(0, 2, 1)]


def test_groups_go_from_the_highest_priority_down():
    low = TuneGroup("low", lambda key: 1)
    high = TuneGroup("high", lambda key: 5)
    tunables = [plain("a").group(low, lambda k: 0), plain("b").group(high, lambda k: 0)]
    assert tune_plan(0, tunables) == [(1,), (0,)]


def test_group_priority_is_computed_from_the_key():
    big = TuneGroup("big", lambda key: 2 if key >= 100 else 0)
    small = TuneGroup("small", lambda key: 1)
    tunables = [plain("s").group(small, lambda k: 0), plain("b").group(big, lambda k: 0)]
    assert tune_plan(1000, tunables) == [(1,), (0,)]
    assert tune_plan(10, tunables) == [(0,), (1,)]


def test_one_intra_group_priority_level_makes_one_batch():
    g = TuneGroup("g", lambda key: 0)
    tunables = [
        plain("a").group(g, lambda k: 1),
        plain("b").group(g, lambda k: 3),
        plain("c").group(g, lambda k: 1),
    ]
    assert tune_plan(0, tunables) == [(1,), (0, 2)]


def test_a_negative_intra_group_priority_skips_the_candidate():
    g = TuneGroup("g", lambda key: 0)
    tunables = [plain("a").group(g, lambda k: -1), plain("b").group(g, lambda k: 0)]
    assert tune_plan(0, tunables) == [(1,)]


def test_a_negative_group_priority_skips_the_whole_group():
    skipped = TuneGroup("skipped", lambda key: -1)
    kept = TuneGroup("kept", lambda key: 0)
    tunables = [plain("a").group(skipped, lambda k: 5), plain("b").group(kept, lambda k: 0)]
    assert tune_plan(0, tunables) == [(1,)]


def test_an_all_negative_group_passes_to_the_next_group():
    first = TuneGroup("first", lambda key: 9)
    second = TuneGroup("second", lambda key: 1)
    tunables = [
        plain("a").group(first, lambda k: -1),
        plain("b").group(first, lambda k: -2),
        plain("c").group(second, lambda k: 0),
    ]
    assert tune_plan(0, tunables) == [(2,)]


def test_ungrouped_candidates_are_the_first_batch_alone_when_the_top_group_is_all_negative():
    # The seed's plan takes one level of the highest group with the ungrouped candidates;
    # that level skips the key, so they form the first batch alone and the lower group is
    # only their fallback: it does not compete with them.
    first = TuneGroup("first", lambda key: 9)
    second = TuneGroup("second", lambda key: 1)
    tunables = [
        plain("u"),
        plain("a").group(first, lambda k: -1),
        plain("c").group(second, lambda k: 0),
    ]
    assert tune_plan(0, tunables) == [(0,), (2,)]


def test_ungrouped_candidates_join_the_top_groups_first_level_that_does_not_skip():
    first = TuneGroup("first", lambda key: 9)
    tunables = [
        plain("u"),
        plain("a").group(first, lambda k: -1),
        plain("b").group(first, lambda k: 0),
    ]
    assert tune_plan(0, tunables) == [(0, 2)]


def test_a_candidate_in_two_groups_is_tried_once_through_its_highest_group():
    high = TuneGroup("high", lambda key: 2)
    low = TuneGroup("low", lambda key: 1)
    tunables = [
        plain("both").group(low, lambda k: 7).group(high, lambda k: 0),
        plain("h").group(high, lambda k: 1),
        plain("l").group(low, lambda k: 0),
    ]
    assert tune_plan(0, tunables) == [(1,), (0,), (2,)]


def test_a_candidate_its_highest_group_skips_is_never_tried_through_a_lower_one():
    # The seed's plan removes each level it reaches from every later group, a skipped level
    # too: "negative priorities ensure the entry is never tuned for this key". The kernel
    # its highest group rules out for the key was tried through the lower group instead.
    high = TuneGroup("high", lambda key: 2)
    low = TuneGroup("low", lambda key: 1)
    tunables = [
        plain("h").group(high, lambda k: 1),
        plain("ruled_out").group(high, lambda k: -1).group(low, lambda k: 3),
        plain("l").group(low, lambda k: 0),
    ]
    assert tune_plan(0, tunables) == [(0,), (2,)]


def test_a_candidate_skipped_at_one_level_of_a_group_is_tried_at_its_higher_level():
    # Its first place decides: the group's level 1 comes before its skipped level.
    g = TuneGroup("g", lambda key: 1)
    low = TuneGroup("low", lambda key: 0)
    tunables = [
        plain("a").group(g, lambda k: -1).group(g, lambda k: 1),
        plain("b").group(low, lambda k: 0),
    ]
    assert tune_plan(0, tunables) == [(0,), (1,)]


def test_a_batch_of_already_tried_candidates_is_passed_over():
    high = TuneGroup("high", lambda key: 2)
    low = TuneGroup("low", lambda key: 1)
    tunables = [
        plain("a").group(high, lambda k: 0).group(low, lambda k: 5),
        plain("b").group(low, lambda k: 0),
    ]
    # low's level 5 holds only "a", already tried through "high": no batch repeats it.
    assert tune_plan(0, tunables) == [(0,), (1,)]


def test_groups_of_equal_priority_share_their_levels():
    g1 = TuneGroup("g1", lambda key: 1)
    g2 = TuneGroup("g2", lambda key: 1)
    tunables = [plain("a").group(g1, lambda k: 0), plain("b").group(g2, lambda k: 0)]
    assert tune_plan(0, tunables) == [(0, 1)]


def test_a_set_whose_every_candidate_is_skipped_has_no_batch():
    g = TuneGroup("g", lambda key: -1)
    assert tune_plan(0, [plain("a").group(g, lambda k: 0)]) == []


def test_a_priority_that_returns_no_number_is_named_with_its_group_and_key():
    def big_only(key):
        if key >= 100:
            return 1

    g = TuneGroup("big", big_only)
    with pytest.raises(TypeError, match=r"TuneGroup 'big': priority\(3\) returned None; it must"):
        tune_plan(3, [plain("a").group(g, lambda k: 0)])
    ok = TuneGroup("ok", lambda key: 0)
    with pytest.raises(TypeError, match=r"Tunable 'a' in group 'ok': priority\(3\) returned '1'"):
        tune_plan(3, [plain("a").group(ok, lambda k: "1")])


def test_a_priority_of_nan_is_no_number():
    # NaN is not negative (so the candidate was tried) and orders nowhere among the others.
    g = TuneGroup("logs", lambda key: float("nan"))
    with pytest.raises(TypeError, match=r"TuneGroup 'logs': priority\(3\) returned nan; it must"):
        tune_plan(3, [plain("a").group(g, lambda k: 0)])


def test_a_priority_computed_with_numpy_is_a_number():
    # `lambda key: np.log2(key)` or an np.int64 from an array was refused as returning
    # no int, though it orders the groups as its value does.
    big = TuneGroup("big", lambda key: np.int64(2) if key >= 100 else np.int64(0))
    small = TuneGroup("small", lambda key: np.float32(1))
    tunables = [plain("b").group(big, lambda k: np.int64(0)), plain("s").group(small, lambda k: 0)]
    assert tune_plan(100, tunables) == [(0,), (1,)]
    assert tune_plan(3, tunables) == [(1,), (0,)]
    # Named as NumPy writes it: `np.True_` since NumPy 2, `True` before.
    with pytest.raises(TypeError, match=re.escape(f"priority(3) returned {np.True_!r};")):
        tune_plan(3, [plain("a").group(TuneGroup("g", lambda k: np.bool_(True)), lambda k: 0)])


# The seed's own tests of its plan (`TunePlan` in the seed's tune module), one for one.


def seed_fake(*memberships):
    tunable = plain("fake")
    for group, priority in memberships:
        tunable = tunable.group(group, lambda k, p=priority: p)
    return tunable


def test_plan_order():
    group0 = TuneGroup("group0", lambda key: 2)
    group1 = TuneGroup("group1", lambda key: 1)
    tunables = [seed_fake(), seed_fake((group0, 1)), seed_fake((group0, 2)), seed_fake((group1, 2))]
    assert tune_plan(0, tunables) == [(0, 2), (1,), (3,)]


def test_plan_order_multi_groups_same_priority():
    group0 = TuneGroup("group0", lambda key: 2)
    group1 = TuneGroup("group1", lambda key: 1)
    group2 = TuneGroup("group2", lambda key: 1)
    tunables = [
        seed_fake(),
        seed_fake((group0, 1)),
        seed_fake((group0, 2)),
        seed_fake((group1, 2)),
        seed_fake((group2, 2)),
    ]
    assert tune_plan(0, tunables) == [(0, 2), (1,), (3, 4)]


def test_plan_order_tunable_multiple_groups():
    group0 = TuneGroup("group0", lambda key: 1)
    group1 = TuneGroup("group1", lambda key: 2)
    tunables = [
        seed_fake(),
        seed_fake((group0, 1), (group1, 2)),
        seed_fake((group0, 2)),
        seed_fake((group1, 3)),
    ]
    assert tune_plan(0, tunables) == [(0, 3), (1,), (2,)]


def test_plan_negative_priority():
    group0 = TuneGroup("group0", lambda key: 2)
    group1 = TuneGroup("group1", lambda key: 1)
    tunables = [
        seed_fake(),
        seed_fake((group0, -1)),
        seed_fake((group0, 2)),
        seed_fake((group1, 2)),
    ]
    assert tune_plan(0, tunables) == [(0, 2), (3,)]


def test_plan_no_group():
    assert tune_plan(0, [seed_fake(), seed_fake()]) == [(0, 1)]


def test_plan_falls_through_when_all_group_tunables_fail():
    group0 = TuneGroup("group0", lambda key: 2)
    group1 = TuneGroup("group1", lambda key: 1)
    tunables = [
        seed_fake((group0, 1)),
        seed_fake((group0, 2)),
        seed_fake((group1, 1)),
        seed_fake((group1, 2)),
    ]
    assert [i for batch in tune_plan(0, tunables) for i in batch] == [1, 0, 3, 2]


def test_plan_single_group_exhausts_all_intra_priorities():
    group0 = TuneGroup("group0", lambda key: 0)
    tunables = [seed_fake((group0, 1)), seed_fake((group0, 2)), seed_fake((group0, 3))]
    assert tune_plan(0, tunables) == [(2,), (1,), (0,)]


def test_plan_all_negative_group_advances_to_next_group():
    group0 = TuneGroup("group0", lambda key: 2)
    group1 = TuneGroup("group1", lambda key: 1)
    tunables = [seed_fake((group0, -1)), seed_fake((group0, -2)), seed_fake((group1, 1))]
    assert tune_plan(0, tunables) == [(2,)]


def test_plan_no_group_tunables_only_emitted_once_even_on_failures():
    group0 = TuneGroup("group0", lambda key: 2)
    group1 = TuneGroup("group1", lambda key: 1)
    tunables = [seed_fake(), seed_fake((group0, 1)), seed_fake((group1, 1))]
    assert tune_plan(0, tunables) == [(0, 1), (2,)]


def test_plan_multi_group_tunable_not_duplicated_across_failed_groups():
    group0 = TuneGroup("group0", lambda key: 1)
    group1 = TuneGroup("group1", lambda key: 2)
    tunables = [seed_fake((group0, 1), (group1, 1)), seed_fake((group0, 2))]
    assert [i for batch in tune_plan(0, tunables) for i in batch] == [0, 1]


def test_plan_recurses_when_batch_is_fully_already_returned():
    group_hi = TuneGroup("hi", lambda key: 2)
    group_lo = TuneGroup("lo", lambda key: 1)
    tunables = [seed_fake((group_hi, 1), (group_lo, 2)), seed_fake((group_lo, 1))]
    assert tune_plan(0, tunables) == [(0,), (1,)]
