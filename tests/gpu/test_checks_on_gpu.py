"""The checks on real CuPy outputs and inputs: in-place kernels judged by what they wrote,
a ragged batch of device rows, and a cupyx sparse output."""

from __future__ import annotations

import importlib
from typing import Any

import numpy as np
import pytest

from pytest_autotune import AutotuneConfig, TunableSet, Tuner, compare_outputs
from pytest_autotune.backends import CudaClient
from tests.plugin.harness import run


def _outcomes(decision: Any) -> dict[str, bool]:
    return {check.name: check.passed for check in decision.checks}


def test_in_place_kernels_handed_the_callers_own_arrays_are_judged_by_what_they_wrote(
    cp: Any, client: CudaClient
) -> None:
    # A set whose input generator hands every call the caller's arrays (no copy of a large
    # buffer): the reference's output, the arrays it wrote, is copied when kept, so the
    # next kernel writing into the same `out` does not write over it, and a wrong one
    # fails (1818781; the copies are made on the client's device, f21a7dd).
    def twice(x: Any, out: Any) -> None:
        cp.multiply(x, 2, out=out)

    def tripled(x: Any, out: Any) -> None:
        cp.multiply(x, 3, out=out)

    def doubled(x: Any, out: Any) -> None:
        cp.add(x, x, out=out)

    shared = TunableSet(
        lambda x, out: x.size,
        lambda key, inputs: inputs,
        [("twice", twice), ("tripled", tripled), ("doubled", doubled)],
    )
    x = cp.arange(1 << 16, dtype=cp.float32)
    out = cp.zeros_like(x)
    tuner = Tuner("gpu-in-place-shared", "d", AutotuneConfig(disable_cache=True, checks=True))
    decision = tuner.tune(x.size, shared, (x, out), client)
    assert _outcomes(decision) == {"twice": True, "tripled": False, "doubled": True}
    assert decision.fastest_name in ("twice", "doubled")


def test_a_ragged_batch_of_device_rows_is_copied_row_by_row_for_each_candidate(
    cp: Any, client: CudaClient
) -> None:
    # A NumPy object array of CuPy rows: its rows were shared by every copy (68c8b36), so
    # an in-place candidate scaling them changed the next one's input and the reference's
    # kept output, a wrong one passed, and the caller's rows came back scaled.
    rows = np.empty(2, dtype=object)
    rows[0] = cp.ones(3, dtype=cp.float32)
    rows[1] = cp.ones(5, dtype=cp.float32)

    def scaled(batch: Any) -> None:
        for row in batch:
            row[...] = row * 2

    def wrong(batch: Any) -> None:
        for row in batch:
            cp.multiply(row, 3, out=row)

    def scaled_too(batch: Any) -> None:
        for row in batch:
            cp.multiply(row, 2, out=row)

    tunables = TunableSet.of(
        lambda batch: batch.size, {"scaled": scaled, "wrong": wrong, "scaled_too": scaled_too}
    )
    tuner = Tuner("gpu-ragged", "d", AutotuneConfig(disable_cache=True, checks=True))
    decision = tuner.tune(len(rows), tunables, (rows,), client)
    assert _outcomes(decision) == {"scaled": True, "wrong": False, "scaled_too": True}
    assert [row.get().tolist() for row in rows] == [[1.0] * 3, [1.0] * 5]


def test_a_cupyx_sparse_output_asks_for_autotune_compare(cp: Any) -> None:
    # Taken for a CuPy array by its module, it went through `cupy.asnumpy` (a 0-d object
    # array holding it) and was compared again at each level until a RecursionError
    # (d37afa4): here with cupyx's own class and NumPy's own coercion of it.
    sparse = importlib.import_module("cupyx.scipy.sparse")
    dense = cp.eye(4, dtype=cp.float32)
    message = compare_outputs(sparse.csr_matrix(dense), sparse.csr_matrix(dense))
    assert message is not None
    assert "cannot compare values of type csr_matrix" in message
    assert "autotune_compare" in message


IN_PLACE_FIXTURE = """
import cupy as cp
from pytest_autotune import TunableSet

def twice(x, out):
    cp.multiply(x, 2, out=out)

def doubled(x, out):
    cp.add(x, x, out=out)

def tripled(x, out):
    cp.multiply(x, 3, out=out)

def shared(candidates):
    return TunableSet(lambda x, out: x.size, lambda key, inputs: inputs, candidates)

def test_into(autotune):
    x = cp.arange(1 << 16, dtype=cp.float32)
    out = cp.zeros_like(x)
    assert autotune(shared([("twice", twice), ("doubled", doubled)]), x, out) is None
    assert bool((out == 2 * x).all())

def test_wrong(autotune):
    x = cp.arange(1 << 16, dtype=cp.float32)
    autotune(shared([("twice", twice), ("tripled", tripled)]), x, cp.zeros_like(x))
"""


@pytest.mark.parametrize("mode", [(), ("--autotune",)], ids=["check", "tune"])
def test_a_fixture_set_of_in_place_cupy_kernels_on_the_callers_arrays_is_judged_by_what_they_wrote(
    cp: Any, pytester: pytest.Pytester, mode: tuple[str, ...]
) -> None:
    # The autotune fixture's in-place kernels whose set hands every call the caller's own
    # arrays: under --autotune every kernel but the first "wrote nothing" (8f62b44), and
    # a wrong one could pass against a reference written over (1818781).
    pytester.makeini("[pytest]\nfilterwarnings = error\n")
    pytester.makepyfile(test_in_place=IN_PLACE_FIXTURE)
    result = run(pytester, *mode)
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(["*FAILED*test_wrong*"])
    result.stdout.no_fnmatch_line("*returned None*")
    result.stdout.no_fnmatch_line("*wrote nothing*")


def test_an_infinite_output_is_close_only_to_itself_on_the_device_whatever_the_tolerance(
    cp: Any,
) -> None:
    # float16's rtol=2 of 40000 is inf in the dtype, which `isclose` computes it in: a
    # candidate's inf passed "within inf" on the host, and CuPy's isclose is the device's.
    reference = cp.asarray([40000.0, 1.0], dtype=cp.float16)
    wrong = cp.asarray([np.inf, 1.0], dtype=cp.float16)
    said = compare_outputs(reference, wrong, rtol=2.0)
    assert said is not None and "got inf" in said
    assert compare_outputs(reference, reference.copy(), rtol=2.0) is None
    both = cp.asarray([np.inf, 1.0], dtype=cp.float16)
    assert compare_outputs(both, both.copy(), rtol=2.0) is None


def test_cupy_arrays_of_one_allocation_are_copied_as_views_of_one_copy(cp: Any) -> None:
    # A cache and its view given apart were copied apart, as NumPy's were: a kernel writing
    # into the view's copy left the cache's copy as it was.
    from pytest_autotune.tune.clone import clone_value

    cache = cp.zeros((4, 8), dtype=cp.float32)
    for slot in (cache[:, :2], cache[::-1, 1:3], cache[1:3, ::-2]):
        for given, (cache_at, slot_at) in (((cache, slot), (0, 1)), ((slot, cache), (1, 0))):
            copies = clone_value(given)
            copies[slot_at][...] = 1
            assert copies[slot_at].strides == slot.strides
            assert int(copies[cache_at].sum()) == slot.size
            assert copies[cache_at].data.ptr != cache.data.ptr
            written = cp.zeros_like(cache)  # what the write does to the caller's arrays
            written_slot = _same_view(written, cache, slot)
            written_slot[...] = 1
            assert bool((copies[cache_at] == written).all())
    assert int(cache.sum()) == 0  # the caller's untouched
    first, second = clone_value((cache[:2], cache[2:]))  # no element shared: copied apart
    assert first.data.mem.ptr != second.data.mem.ptr


def test_cupy_views_of_one_allocation_keep_their_callers_alignment(cp: Any) -> None:
    # Their span's copy started where the allocator's block did: `x[4:]` given beside
    # `x[1:]` lay 12 bytes past the 16-byte boundary the caller's lies on, where a kernel's
    # float4 loads fault.
    from pytest_autotune.tune.clone import clone_value

    x = cp.arange(1024, dtype=cp.float32)
    given = (x[1:], x[4:], x[8:100].view(cp.float64))
    copies = clone_value(given)
    for view, copied in zip(given, copies, strict=True):
        assert copied.data.ptr % 256 == view.data.ptr % 256
        assert bool((copied == view).all())
    copies[1][0] = -1  # x[4]: the first view's fourth element, as the caller's
    assert float(copies[0][3]) == -1 and float(x[4]) == 4


def _same_view(array: Any, owner: Any, view: Any) -> Any:
    """The view of `array` that `view` is of `owner` (same offset, shape and strides)."""
    cp = importlib.import_module("cupy")
    return cp.ndarray(
        view.shape,
        view.dtype,
        memptr=array.data + (view.data.ptr - owner.data.ptr),
        strides=view.strides,
    )


CACHE_AND_SLOT = """
import cupy as cp
import pytest

def fill(slot):
    slot[...] = 1

def fill_rows(slot):
    for row in range(slot.shape[0]):
        slot[row] = 1

def lazy(slot):
    pass

@pytest.fixture
def cache():
    return cp.zeros((64, 256), dtype=cp.float32)

@pytest.fixture
def slot(cache):
    return cache[:, :32]

@pytest.mark.autotune(candidates={"fill": fill, "fill_rows": fill_rows, "lazy": lazy})
def test_fill(candidate, cache, slot):
    candidate(slot)
    return cache
"""


@pytest.mark.parametrize("mode", [(), ("--autotune",)], ids=["check", "tune"])
def test_a_kernel_writing_into_a_view_of_the_array_the_body_returns_is_checked_on_it(
    cp: Any, pytester: pytest.Pytester, mode: tuple[str, ...]
) -> None:
    pytester.makeini("[pytest]\nfilterwarnings = error\n")
    pytester.makepyfile(test_views=CACHE_AND_SLOT)
    result = run(pytester, "-p", "no:randomly", *mode)
    result.assert_outcomes(passed=2, failed=1)
    result.stdout.fnmatch_lines(["FAILED test_views.py::test_fill[[]lazy[]] - *"])
