"""The order candidates are tried in (the seed's tune plan)."""

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


def test_ungrouped_candidates_still_come_first_when_the_top_group_is_all_negative():
    first = TuneGroup("first", lambda key: 9)
    second = TuneGroup("second", lambda key: 1)
    tunables = [
        plain("u"),
        plain("a").group(first, lambda k: -1),
        plain("c").group(second, lambda k: 0),
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
