"""Copies of a call's inputs: what a call may move is copied."""

from __future__ import annotations

import ctypes
import random
import sys
import types
import unittest.mock

import numpy as np
import pytest

from pytest_autotune.tune import shared_memory
from pytest_autotune.tune.clone import clone_value


def test_a_random_generator_is_copied_so_each_call_draws_what_the_first_did() -> None:
    for make, draw in (
        (lambda: np.random.default_rng(0), lambda g: g.random(3).tolist()),
        (lambda: np.random.RandomState(0), lambda g: g.rand(3).tolist()),
        (lambda: random.Random(0), lambda g: [g.random() for _ in range(3)]),
    ):
        rng = make()
        first = draw(clone_value(rng))
        assert draw(clone_value(rng)) == first
        assert draw(rng) == first  # the caller's own, unmoved by the copies' draws
        (inside,) = clone_value((rng,))
        assert inside is not rng


class _Memory:
    def __init__(self, owner: _FakeArray) -> None:
        self.owner = owner
        self.ptr = id(owner)  # an allocation of its own
        self.mem = self

    def copy_from_device_async(self, source: _Memory, nbytes: int) -> None:
        self.owner.copied_from = (source.owner, nbytes)


class _FakeArray:
    """What `clone` reads of a CuPy array: its device, contiguity, size and memory."""

    def __init__(self, device: int, contiguous: bool = True, nbytes: int = 64) -> None:
        self.device = types.SimpleNamespace(id=device)
        self.flags = types.SimpleNamespace(c_contiguous=contiguous, f_contiguous=False)
        self.nbytes = nbytes
        self.data = _Memory(self)
        self.copied_from: tuple[_FakeArray, int] | None = None
        self.copy_kernel = False
        self.shape = (nbytes // 4,)
        self.size, self.strides, self.itemsize = nbytes // 4, (4,), 4

    def __array__(self) -> np.ndarray:
        raise AssertionError("a CuPy array is never made a NumPy one here")

    def copy(self, order: str = "C") -> _FakeArray:
        made = _FakeArray(fake_cupy.current)  # on the current device, as CuPy's copy
        made.copy_kernel = True
        return made


fake_cupy = types.SimpleNamespace(current=0, ndarray=_FakeArray)
fake_cupy.empty_like = lambda value, order="K": _FakeArray(fake_cupy.current)
runtime = types.SimpleNamespace(getDevice=lambda: fake_cupy.current)
fake_cupy.cuda = types.SimpleNamespace(runtime=runtime)


@pytest.fixture
def cupy_module(monkeypatch: pytest.MonkeyPatch) -> types.SimpleNamespace:
    monkeypatch.setitem(sys.modules, "cupy", fake_cupy)
    monkeypatch.setattr(fake_cupy, "current", 0)
    return fake_cupy


def test_a_contiguous_cupy_array_of_the_current_device_is_copied_by_one_memcpy(cupy_module):
    # CuPy's copy kernel is compiled per dtype on first use: 80-160 ms of a fresh host's
    # first tuning on an H200.
    x = _FakeArray(0)
    copied = clone_value(x)
    assert copied.copied_from == (x, 64) and not copied.copy_kernel
    empty = clone_value(_FakeArray(0, nbytes=0))
    assert empty.copied_from is None and not empty.copy_kernel


def test_a_cupy_array_of_another_device_is_copied_onto_the_current_one(cupy_module):
    # A client of GPU 1 tunes on copies on GPU 1 of GPU 0's arrays (README): the memcpy
    # path copied onto the array's own device, and every candidate then failed.
    cupy_module.current = 1
    copied = clone_value(_FakeArray(0))
    assert copied.copy_kernel and copied.device.id == 1


class _CupyLike(np.ndarray):
    """A CuPy array as `clone._strided_device_copy` makes one, over NumPy's memory: built from
    a `memptr` (a buffer and an offset into it) and strides."""

    device = types.SimpleNamespace(id=0)

    def __new__(cls, shape, dtype=float, memptr=None, strides=None):
        return np.ndarray.__new__(cls, shape, dtype, memptr.buffer, memptr.offset, strides)

    @property
    def data(self) -> _Pointer:
        return _Pointer(self, 0)


class _Pointer:
    def __init__(self, buffer: np.ndarray, offset: int) -> None:
        self.buffer, self.offset = buffer, offset

    def __add__(self, offset: int) -> _Pointer:
        return _Pointer(self.buffer, self.offset + offset)


def test_a_strided_cupy_view_is_copied_with_its_own_strides(monkeypatch: pytest.MonkeyPatch):
    # Copied contiguous by CuPy's `copy`, a kernel reading every other column was timed on
    # coalesced loads the caller's view never gives it.
    cupy_like = types.SimpleNamespace(
        ndarray=_CupyLike,
        uint8=np.uint8,
        empty=lambda n, dtype: np.empty(n, dtype).view(_CupyLike),
        cuda=types.SimpleNamespace(runtime=types.SimpleNamespace(getDevice=lambda: 0)),
    )
    monkeypatch.setitem(sys.modules, "cupy", cupy_like)
    matrix = np.arange(48.0).reshape(6, 8).view(_CupyLike)
    for view in (matrix[:, ::2], matrix[::-1, ::-3]):
        copied = clone_value(view)
        assert copied.strides == view.strides
        assert not np.shares_memory(copied, view)
        np.testing.assert_array_equal(copied, view)


class _Device:
    """`cupy.cuda.Device(i)` as a context: the current device while inside."""

    def __init__(self, cupy: types.SimpleNamespace, index: int) -> None:
        self.cupy, self.index = cupy, index

    def __enter__(self) -> None:
        self.cupy.entered.append(self.cupy.current)
        self.cupy.current = self.index

    def __exit__(self, *exc: object) -> None:
        self.cupy.current = self.cupy.entered.pop()


class _Address:
    """A `MemoryPointer` over NumPy memory: a buffer, an offset into it, and the memcpy."""

    def __init__(self, buffer: np.ndarray, offset: int) -> None:
        self.buffer, self.offset = buffer, offset

    def __add__(self, offset: int) -> _Address:
        return _Address(self.buffer, self.offset + offset)

    def __sub__(self, offset: int) -> _Address:
        return self + -offset

    @property
    def ptr(self) -> int:
        return self._at()

    @property
    def mem(self) -> types.SimpleNamespace:
        """The allocation: the NumPy memory its buffer views."""
        owner = shared_memory.numpy_owner(self.buffer)
        return types.SimpleNamespace(ptr=owner.__array_interface__["data"][0])

    def copy_from_device_async(self, source: _Address, nbytes: int) -> None:
        ctypes.memmove(self._at(), source._at(), nbytes)

    def _at(self) -> int:
        return int(self.buffer.__array_interface__["data"][0]) + self.offset


class _OnDevice(np.ndarray):
    """A CuPy array of a device (`on`), over NumPy's memory; its `copy` refuses a strided
    one of another device than the current, as CuPy's does."""

    cupy: types.SimpleNamespace

    def __new__(cls, shape, dtype=float, memptr=None, strides=None):
        made = np.ndarray.__new__(cls, shape, dtype, memptr.buffer, memptr.offset, strides)
        made.on = cls.cupy.current
        return made

    def __array_finalize__(self, obj: object) -> None:
        self.on = getattr(obj, "on", self.cupy.current)

    @property
    def device(self) -> types.SimpleNamespace:
        return types.SimpleNamespace(id=self.on)

    @property
    def data(self) -> _Address:
        return _Address(self, 0)

    def copy(self, order: str = "C") -> _OnDevice:
        contiguous = self.flags.c_contiguous or self.flags.f_contiguous
        if self.on != self.cupy.current and not contiguous:
            raise NotImplementedError("CuPy cannot copy non-contiguous array between devices.")
        made = np.array(self, order=order).view(_OnDevice)
        made.on = self.cupy.current
        return made


@pytest.fixture
def two_gpus(monkeypatch: pytest.MonkeyPatch) -> types.SimpleNamespace:
    cupy = types.SimpleNamespace(current=0, entered=[], ndarray=_OnDevice, uint8=np.uint8)
    cupy.empty = lambda n, dtype: np.empty(n, dtype).view(_OnDevice)
    cupy.cuda = types.SimpleNamespace(
        runtime=types.SimpleNamespace(getDevice=lambda: cupy.current),
        Device=lambda index: _Device(cupy, index),
    )
    monkeypatch.setattr(_OnDevice, "cupy", cupy, raising=False)
    monkeypatch.setitem(sys.modules, "cupy", cupy)
    return cupy


@pytest.mark.parametrize(
    ("make", "kept"),
    [
        (lambda m: m[:, ::2], True),
        (lambda m: m[::-1, ::-3], True),
        (lambda m: np.zeros((4096, 1024)).view(_OnDevice)[:, 0], False),  # spread wide
        # Spread wide, and in neither C nor Fortran order once made contiguous at home.
        (lambda m: np.zeros((2, 3, 1 << 20)).view(_OnDevice)[:, :, :4].transpose(1, 0, 2), False),
    ],
    ids=["every-other-column", "both-reversed", "spread-wide", "spread-wide-permuted"],
)
def test_a_strided_cupy_view_of_another_device_is_copied_onto_the_current_one(
    two_gpus: types.SimpleNamespace, make, kept: bool
) -> None:
    # `cuda(device=1)` on arrays of GPU 0 times copies on GPU 1 (README); CuPy's `copy`
    # refuses a strided view across devices, and the tuning failed as "the input generator
    # raised NotImplementedError" for every key.
    view = make(np.arange(48.0).reshape(6, 8).view(_OnDevice))
    two_gpus.current = 1
    copied = clone_value(view)
    assert copied.device.id == 1 and two_gpus.current == 1
    assert not np.shares_memory(copied, view)
    np.testing.assert_array_equal(copied, view)
    assert (copied.strides == view.strides) is kept


def test_cupy_views_of_one_allocation_keep_their_alignment_in_its_copy(two_gpus) -> None:
    # The copy of the bytes they span started where the allocator's alignment does: given
    # `x[1:]` beside `x[4:]` (float32), `x[4:]`'s copy lay 12 bytes past a 16-byte boundary
    # its caller's lies on, and a kernel loading it as float4 faulted on a misaligned address.
    x = np.arange(64, dtype=np.float32).view(_OnDevice)
    given = (x[1:], x[4:], x.view(np.float64)[3:])
    copies = clone_value(given)
    for view, copied in zip(given, copies, strict=True):
        assert copied.data.ptr % 256 == view.data.ptr % 256
        np.testing.assert_array_equal(copied, view)
    copies[0][3] = -1  # x[4], the second's first
    assert copies[1][0] == -1 and x[4] == 4


def test_a_cupy_view_spread_wide_keeps_cupys_contiguous_copy(cupy_module):
    column = _FakeArray(0, contiguous=False)  # 16 elements a row of 8 MiB apart
    column.strides, column.itemsize = (8 << 20,), 4
    copied = clone_value(column)
    assert copied.copy_kernel


def test_a_read_only_array_is_copied_read_only_and_a_writable_one_writable() -> None:
    read_only = np.arange(4.0)
    read_only.flags.writeable = False
    copied, writable = clone_value((read_only, np.arange(4.0)))
    assert not copied.flags.writeable
    assert not np.shares_memory(copied, read_only)
    np.testing.assert_array_equal(copied, read_only)
    assert writable.flags.writeable


def test_the_arrays_in_an_object_array_are_copied_as_a_lists_are() -> None:
    # A ragged batch: rows an in-place candidate writes into reached the next candidate.
    shared = np.ones(2)
    rows = np.empty((2, 2), dtype=object, order="F")
    rows[0, 0], rows[1, 0], rows[0, 1], rows[1, 1] = shared, [np.ones(3)], 1.5, None
    rows.flags.writeable = False
    given, copied = clone_value((shared, rows))
    assert copied[0, 0] is given  # one value met twice is copied once
    assert not np.shares_memory(copied[0, 0], shared)
    assert not np.shares_memory(copied[1, 0][0], rows[1, 0][0])
    assert (copied[0, 1], copied[1, 1]) == (1.5, None)
    assert copied.flags.f_contiguous and not copied.flags.writeable


def test_an_object_array_of_values_that_hold_nothing_is_copied_without_visiting_each(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Each element through `clone_value`: a million dates or decimals took some 5 s a copy.
    import datetime
    import decimal
    import fractions

    from pytest_autotune.tune import clone

    class State:
        def __init__(self) -> None:
            self.buffer = np.zeros(2)

    values = [datetime.date(2020, 1, 1), decimal.Decimal(1), fractions.Fraction(1, 3)]
    rows = np.array([*values * 1000, State()], dtype=object)
    calls = 0
    visit = clone.clone_value

    def counting(*args: object, **kwargs: object) -> object:
        nonlocal calls
        calls += 1
        return visit(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(clone, "clone_value", counting)
    copied = visit(rows)
    assert calls < 10
    assert all(c is r for c, r in zip(copied[:-1], rows[:-1], strict=True))
    assert not np.shares_memory(copied[-1].buffer, rows[-1].buffer)


@pytest.mark.parametrize(
    "make",
    [
        lambda m: m[:, ::2],
        lambda m: m[::-1],
        lambda m: m[::-1, ::-3],
        lambda m: np.broadcast_to(m[0], m.shape),
        lambda m: m.T[::2],
    ],
    ids=["every-other-column", "rows-reversed", "both-reversed", "broadcast", "transposed-rows"],
)
def test_a_strided_view_is_copied_with_its_own_strides(make) -> None:
    # Copied contiguous, candidates were timed on a layout the caller never passes, and one
    # needing a contiguous buffer won on the copies and raised on the caller's view.
    view = make(np.arange(48.0).reshape(6, 8))
    copied = clone_value(view)
    assert copied.strides == view.strides
    assert not np.shares_memory(copied, view)
    np.testing.assert_array_equal(copied, view)


def test_a_strided_view_of_a_memmap_is_copied_with_its_own_strides(tmp_path) -> None:
    # Every other row of a file's matrix was copied contiguous: timed on another layout.
    mapped = np.memmap(tmp_path / "m.bin", dtype=np.float64, mode="w+", shape=(6, 8))
    mapped[:] = np.arange(48.0).reshape(6, 8)
    view = mapped[::2, ::3]
    copied = clone_value(view)
    assert copied.strides == view.strides
    assert isinstance(copied, np.memmap)
    assert not np.shares_memory(copied, view)
    np.testing.assert_array_equal(copied, view)
    copied *= 2
    np.testing.assert_array_equal(view, np.arange(48.0).reshape(6, 8)[::2, ::3])


def test_a_view_spread_far_wider_than_its_elements_is_copied_contiguous() -> None:
    column = np.zeros((4096, 1024))[:, 0]  # spans 32 MiB for 32 KiB of elements
    copied = clone_value(column)
    assert copied.flags.c_contiguous
    np.testing.assert_array_equal(copied, column)


def test_a_mock_is_never_copied_being_the_tests_record_of_its_calls() -> None:
    """A fixture's `mocker.patch(...)` returned the mock patched into the code under test;
    the body got a copy (its child mocks are a dict in its `__dict__`), so the calls were
    recorded on the patched one and the body's `fetch.assert_called_once()` saw none."""
    for mock in (unittest.mock.MagicMock(), unittest.mock.Mock()):
        mock.child.method()
        assert clone_value(mock) is mock
        x = np.zeros(3)
        copied = clone_value((x, mock))
        assert copied[0] is not x
        assert copied[1] is mock


def test_a_sparse_matrix_input_is_copied_whatever_its_format() -> None:
    # A DOK matrix is a dict that keeps its entries in an attribute: copied as a dict, its
    # copy shared them, and a candidate's `x[0, 0] += 1` changed the caller's matrix and
    # the next candidate's input.
    sparse = pytest.importorskip("scipy.sparse")

    def write_entry(matrix):
        matrix[0, 0] += 1

    def scale_stored(matrix):
        matrix.data *= 2

    for make, write in (
        (sparse.dok_matrix, write_entry),
        (sparse.dok_array, write_entry),
        (sparse.csr_matrix, scale_stored),
        (sparse.coo_array, scale_stored),
    ):
        matrix = make(np.eye(3))
        copied = clone_value(matrix)
        write(copied)
        assert type(copied) is type(matrix)
        assert (copied.toarray() != np.eye(3)).any()
        assert (matrix.toarray() == np.eye(3)).all(), make.__name__


def test_arrays_that_view_one_buffer_are_copied_as_views_of_one_copy_of_it() -> None:
    # A fixture's `cache` and its view `slot` were copied apart: a candidate writing into
    # `slot` left the copy of `cache` the body returned as it was, and a wrong candidate that
    # wrote nothing passed its check.
    cache = np.zeros((4, 8))
    slot = cache[:, :2]
    for given, (cache_at, slot_at) in (((cache, slot), (0, 1)), ((slot, cache), (1, 0))):
        copies = clone_value(given)
        copies[slot_at][:] = 1
        assert copies[cache_at][:, :2].sum() == 8 and copies[cache_at][:, 2:].sum() == 0
    assert cache.sum() == 0  # the caller's untouched

    class State:
        pass

    state = State()
    state.cache, state.slot = np.asfortranarray(cache), None
    state.slot = state.cache[1:3, ::-2]  # a Fortran-ordered owner, a reversed strided view
    copied = clone_value(state)
    copied.slot[:] = 5
    assert copied.cache[1:3, ::-2].sum() == 5 * 8 and state.cache.sum() == 0
    assert copied.slot.strides == state.slot.strides

    frozen = np.frombuffer(bytes(64), dtype=np.float64)
    owner, view = clone_value((frozen, frozen[2:4]))
    assert not view.flags.writeable and np.shares_memory(owner, view)


def test_an_as_strided_view_and_its_array_are_copied_as_views_of_one_copy() -> None:
    # `as_strided` (and `sliding_window_view`, made by it) views its array through NumPy's
    # helper object, not the array: the view was copied apart, and a wrong candidate
    # writing nothing into it passed its check on the array the body returned.
    base = np.zeros(16)
    strided = np.lib.stride_tricks.as_strided(base, shape=(4,), strides=(32,))
    base_copy, strided_copy = clone_value((base, strided))
    strided_copy[:] = 1
    assert base_copy.sum() == 4 and base.sum() == 0
    assert strided_copy.strides == strided.strides

    windows = np.lib.stride_tricks.sliding_window_view(base[1:], 3)
    base_copy, windows_copy = clone_value((base, windows))
    base_copy[2] = 7
    assert windows_copy[0, 1] == 7 and not windows_copy.flags.writeable


def test_only_arrays_of_one_allocation_have_their_addresses_read(
    addresses_read: list[int],
) -> None:
    # Reading a NumPy array's address (`__array_interface__`) for every input made a call's
    # copy of 200 arrays of their own three times as slow (2.5 ms against 0.7 ms on a 2-core
    # VM): only arrays that view one allocation with another can overlap.
    cache = np.zeros((4, 8))
    slot = cache[:, :2]
    given = [np.zeros(8) for _ in range(200)] + [cache, slot]
    copies = clone_value(given)
    copies[-1][:] = 1
    assert copies[-2][:, :2].sum() == 8
    assert sorted(addresses_read) == sorted([id(cache), id(slot)])


def test_overlapping_views_of_an_array_no_input_holds_copy_only_the_bytes_they_span() -> None:
    # Made over a copy of their owner, two small views of a ring buffer's 8 MB pool copied
    # the whole pool at every call.
    pool = np.arange(1_000_000, dtype=np.float64)

    class Ring:
        pass

    ring = Ring()
    ring.head, ring.window = pool[10:20], pool[15:35:2]
    copied = clone_value(ring)
    assert copied.head.base is not None and copied.head.base.nbytes < 1024
    assert copied.window.strides == ring.window.strides
    assert copied.window.tolist() == ring.window.tolist()
    copied.head[5] = -1  # pool[15], the window's first
    assert copied.window[0] == -1 and pool[15] == 15

    matrix = np.zeros((4, 6))
    even, odd = clone_value((matrix[:, ::2], matrix[:, 1::2]))
    assert np.may_share_memory(even, odd) and even.strides == odd.strides == (48, 16)

    # An empty view holds no byte of the pool: it is copied alone, not over the pool's copy.
    head, window, empty = clone_value((pool[10:20], pool[15:35], pool[0:0]))
    assert empty.base is None and head.base is window.base

    # Past the arrays looked at for views, an owner may be an input all the same.
    many = [np.zeros(1) for _ in range(300)]
    head, window, *_, owner = clone_value([pool[10:20], pool[15:35], *many, pool])
    head[5] = -1
    assert window[0] == owner[15] == -1


def test_an_owner_the_look_for_views_passes_over_is_still_copied_with_its_views() -> None:
    # The look for views stops where the copy does not (an object array's elements, a
    # fourth container down): its owner taken for no input, the views were made over a copy
    # of their span, and the owner's own copy, made apart, missed what they wrote.
    pool = np.arange(100.0)

    class State:
        def __init__(self, pool: np.ndarray) -> None:
            self.pool = pool

    batch = np.empty(1, dtype=object)
    batch[0] = pool
    for holder, owner_of in (
        (batch, lambda copied: copied[0]),
        ([{"state": State(pool)}], lambda copied: copied[0]["state"].pool),
    ):
        head, window, copied = clone_value((pool[0:10], pool[5:15], holder))
        head[7] = -1
        assert window[2] == owner_of(copied)[7] == -1 and pool[7] == 7


def test_arrays_over_one_buffer_each_their_own_owner_are_copied_as_views_of_one_copy() -> None:
    # Two `np.frombuffer` arrays over one bytearray are each their own owner (their base a
    # memoryview of it): keyed by owner, they were copied apart, and a candidate writing
    # through one left the other's copy as it was.
    buffer = bytearray(np.arange(8, dtype=np.float32).tobytes())
    whole = np.frombuffer(buffer, np.float32)
    tail = np.frombuffer(buffer, np.float32, offset=8)
    for given, (whole_at, tail_at) in (((whole, tail), (0, 1)), ((tail, whole), (1, 0))):
        copies = clone_value(given)
        assert copies[whole_at].tolist() == whole.tolist()
        copies[tail_at][0] = -1
        assert copies[whole_at][2] == -1 and whole[2] == 2
    # Bytes of one buffer that neither shares are copied apart, as each given alone is.
    head = np.frombuffer(buffer, np.float32, count=2)
    head_copy, tail_copy = clone_value((head, tail))
    assert not np.shares_memory(head_copy, tail_copy) and head_copy.tolist() == [0, 1]
    frozen = bytes(buffer)
    given = (np.frombuffer(frozen, np.float32), np.frombuffer(frozen, np.float32, 4, 8))
    owner, view = clone_value(given)
    assert np.shares_memory(owner, view) and not owner.flags.writeable


def test_a_view_past_the_arrays_looked_at_is_copied_apart_from_their_span() -> None:
    # A view of the same memory that the look for views passed over (in an object array,
    # past its first 256 arrays) lay outside the copy of the span made for those it looked
    # at: placing it there raised ValueError, which failed every candidate as its own.
    buffer = bytearray(np.arange(1024, dtype=np.float32).tobytes())
    whole = np.frombuffer(buffer, np.float32)
    tail = np.frombuffer(buffer, np.float32, offset=8)
    batch = np.empty(1, dtype=object)
    batch[0] = whole[100:104]
    head, window, copied = clone_value((whole[0:4], tail[0:4], batch))
    head[2] = -1
    assert window[0] == -1 and copied[0].tolist() == [100, 101, 102, 103]
    pool = np.arange(1024, dtype=np.float32)
    views = clone_value([pool[i : i + 2] for i in range(300)])
    views[0][1] = -1
    assert views[1][0] == -1 and views[299].tolist() == [299, 300] and pool[1] == 1


def test_views_of_one_buffer_that_do_not_overlap_are_copied_apart_as_each_alone_is() -> None:
    # Two halves of a large array share no element: each copy holds only what it spans.
    big = np.zeros(1000)
    first, second = clone_value((big[:500], big[500:]))
    assert first.nbytes == second.nbytes == 4000
    assert not np.shares_memory(first, second)
    alone = clone_value((big[10:20],))[0]
    assert alone.base is None and alone.size == 10
