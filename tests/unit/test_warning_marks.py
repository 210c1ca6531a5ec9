"""A `filterwarnings` mark's filter read as pytest reads it, for another test to apply."""

import warnings

import pytest

from pytest_autotune.tune.errors import CacheFileWarning
from pytest_autotune.warning_marks import applied, parse_filter, parse_filters, project_filters


def test_a_filter_reads_as_the_arguments_of_filterwarnings():
    assert parse_filter("ignore::DeprecationWarning") == ("ignore", "", DeprecationWarning, "", 0)
    assert parse_filter("error:bad.*:pytest_autotune.tune.errors.CacheFileWarning:mod:7") == (
        "error",
        "bad.*",
        CacheFileWarning,
        "mod",
        7,
    )
    assert parse_filter("i") == ("ignore", "", Warning, "", 0)


@pytest.mark.parametrize(
    "bad",
    ["bogus", "ignore::NoSuchWarning", "ignore::int", "a:b:c:d:e:f", "ignore::Warning:m:-1"],
)
def test_a_filter_pytest_would_refuse_is_left_out(bad):
    assert parse_filters((bad, "ignore")) == (("ignore", "", Warning, "", 0),)


def test_the_filters_apply_inside_the_block_only():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with applied(parse_filters(("ignore:going away",))):
            warnings.warn("going away", UserWarning, stacklevel=1)
        with pytest.raises(UserWarning):
            warnings.warn("going away", UserWarning, stacklevel=1)


def test_the_running_tests_own_filters_are_taken_away_inside_the_block():
    own = parse_filters(("ignore:going away",))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        warnings.filterwarnings("ignore", "going away")  # as pytest applies the running test's
        with applied((), instead_of=own), pytest.raises(UserWarning):
            warnings.warn("going away", UserWarning, stacklevel=1)
        warnings.warn("going away", UserWarning, stacklevel=1)


def test_a_w_option_reads_as_pytest_reads_it_matched_as_written():
    assert parse_filter("ignore:a.b (c):UserWarning:pkg.mod", escape=True) == (
        "ignore",
        r"a\.b\ \(c\)",
        UserWarning,
        r"pkg\.mod\Z",
        0,
    )
    assert project_filters(["ignore:a.b"], ["error::UserWarning"]) == {
        ("ignore", "a.b", Warning, "", 0),
        ("error", "", UserWarning, "", 0),
    }
