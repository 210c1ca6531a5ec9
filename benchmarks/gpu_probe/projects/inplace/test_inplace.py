"""In-place candidates on device arrays.

test_scale_in_place: candidates that write into their input and return it; README: inputs
are copied for each call, so an in-place candidate changes nothing for the others (the
fixture's array stays as made: test_z_fixture_unchanged checks it), and under tuning a
candidate meets its own output again (x *= 2 grows to inf on the GPU, silently).

test_forgot_return: one candidate writes in place and returns None; README: "one that
returns None, its return forgotten, only where none returns an output, and otherwise fails
alone": its test fails by name, the other passes.

test_into_out: the `autotune` fixture with a set whose functions write into `out` and return
None (README, "A production TunableSet"): each is checked by what it wrote; the winner
fills the test's own `out`. test_into_wrong: a wrong in-place one fails."""

import cupy as cp
import pytest

from pytest_autotune import TunableSet

N = 1 << 22
_X = {}


@pytest.fixture(scope="module")
def x():
    arr = cp.arange(N, dtype=cp.float32)
    _X["made"] = arr
    _X["copy"] = arr.copy()
    return arr


def times_two_inplace(x):
    x *= 2
    return x


def multiply_out(x):
    cp.multiply(x, 2, out=x)
    return x


def slice_assign(x):
    x[...] = x + x
    return x


@pytest.mark.autotune(
    candidates={
        "imul": times_two_inplace,
        "multiply_out": multiply_out,
        "slice_assign": slice_assign,
    }
)
def test_scale_in_place(candidate, x):
    return candidate(x)


def forgot_return(x):
    x *= 2


@pytest.mark.autotune(candidates={"returns": multiply_out, "forgot_return": forgot_return})
def test_forgot_return(candidate, x):
    return candidate(x)


def test_z_fixture_unchanged(x):
    assert _X["made"] is x
    assert bool((x == _X["copy"]).all()), "a candidate's in-place write reached the fixture's array"


def twice_into(x, out):
    cp.multiply(x, 2, out=out)


def doubled_into(x, out):
    cp.add(x, x, out=out)


def tripled_into(x, out):
    cp.multiply(x, 3, out=out)


def _shared(pairs):
    return TunableSet(lambda x, out: x.size, lambda key, inputs: inputs, pairs)


def test_into_out(autotune):
    x = cp.arange(N, dtype=cp.float32)
    out = cp.zeros_like(x)
    assert autotune(_shared([("twice", twice_into), ("doubled", doubled_into)]), x, out) is None
    assert bool((out == 2 * x).all())


def test_into_wrong(autotune):
    """EXPECTED: FAILS, naming 'tripled' (its output[1] differs)."""
    x = cp.arange(N, dtype=cp.float32)
    autotune(_shared([("twice", twice_into), ("tripled", tripled_into)]), x, cp.zeros_like(x))
