"""Inputs whose memory overlaps, found before a call's inputs are copied, so that their
copies overlap alike (`clone.clone_value`). A fixture's `cache` and its view `slot =
cache[:, :2]`, given apart, were copied apart: a candidate writing into `slot` left the copy
of `cache` the body returned as it was, and a wrong candidate that wrote nothing passed its
check. NumPy arrays, CuPy arrays and PyTorch tensors, each kind in its own way (a NumPy
view is made of its owner's copy, which `clone` makes; a CuPy array of a copy of the bytes
its group spans; a tensor of a copy of its storage, or of its NumPy array's where a NumPy
input views the memory it lies in; arrays and CPU tensors over memory none of them owns,
two `np.frombuffer` arrays of one bytearray, of a copy of the bytes they span). Arrays of
one buffer that do not overlap (two halves of one array) are copied apart, as each given
alone is: a copy holds only what it spans."""

from __future__ import annotations

import bisect
import dataclasses
import itertools
import sys
from collections.abc import Hashable, Iterable
from typing import Any

import numpy as np

from pytest_autotune.tune.loaded import loaded_type

MemoryKey = tuple[Hashable, ...]
"""The kind of an array and the allocation it views: ("numpy", the owner's id), ("cupy",
the device, the allocation's address), ("torch", the device's index or -1 for the CPU, the
storage's address); and ("host", the first byte) of the NumPy and CPU tensor keys over
borrowed memory whose arrays overlap (`_borrowed_memory`)."""


@dataclasses.dataclass
class SharedMemory:
    """The allocations two or more of a call's inputs view overlapping parts of, by key, with
    the address range their arrays span together (CuPy copies that range, as it does a
    "host" key's), the largest storage of each tensor key (the one copied), and the one
    copy of each as its first array is copied (of a CuPy key, the pointer to the range's
    first byte in it)."""

    spans: dict[MemoryKey, tuple[int, int]]
    storages: dict[MemoryKey, Any] = dataclasses.field(default_factory=dict)
    copies: dict[MemoryKey, Any] = dataclasses.field(default_factory=dict)
    hosts: dict[MemoryKey, np.ndarray[Any, Any]] = dataclasses.field(default_factory=dict)
    """The NumPy array whose memory the tensors of a CPU key lie in, where they overlap a
    NumPy input's view of it (`_host_tensors`): they are made over that array's copy."""
    unowned: set[MemoryKey] = dataclasses.field(default_factory=set)
    """The NumPy keys whose owner is no input (two views of a pool a ring buffer holds): their
    views are made over a copy of the bytes they span, as CuPy's are. Made over a copy of
    the owner, a 64 MB pool's two views of 8 KB took 10 ms a call to copy, not 20 us."""
    merged: dict[MemoryKey, MemoryKey] = dataclasses.field(default_factory=dict)
    """The "host" key that each key over borrowed memory was merged into (`_borrowed_memory`),
    where its arrays overlap another's: made over the copy of the bytes the host key spans."""

    def view(self, key: MemoryKey, value: Any) -> Any:
        """`value`, an array of `key` (its `memory_key`, in `spans`), copied as a view of the
        one copy of the bytes its key's arrays span: a CuPy array, a tensor, or a NumPy
        array whose owner is no input (`unowned`; one whose owner is an input is made over
        the owner's copy, by `numpy_view`). None where a NumPy view has no layout to be
        placed in (`numpy_view`), and for an array lying past the span: one the look
        for views passed over (`clone._arrays_within`: past its first arrays, in an object
        array), of the memory of those it looked at. Placed in the span's copy, it raised
        ValueError, which failed every candidate as its own; it is copied apart, as the
        look took it to be."""
        if key[0] == "host":
            return self._host_view(key, value)
        if key[0] == "numpy":
            return self._numpy_view(key, value)
        if key[0] == "cupy":
            return self._cupy_view(sys.modules["cupy"], key, value)
        return self._tensor_view(sys.modules["torch"], key, value)

    def _cupy_view(self, cp: Any, key: MemoryKey, value: Any) -> Any:
        low, high = self.spans[key]
        if not _lies_within(value, low, high):  # past the span (`view`)
            # CuPy checks no memptr against its allocation: placed there, the array read
            # past the copy, bytes of another allocation, and wrote over them.
            return None
        copied = self.copies.get(key)
        if copied is None:
            # The bytes the group spans, on the current device (the client's, as
            # `clone.device_copy` copies), by one memcpy from wherever they lie; at the
            # caller's place in cudaMalloc's 256-byte alignment. Started at the allocator's,
            # `x[4:]` given beside `x[1:]` (float32) lay 12 bytes past the 16-byte boundary
            # its caller's lies on, where a kernel's float4 loads fault.
            block = cp.empty(high - low + _DEVICE_ALIGNMENT, dtype=cp.uint8).data
            copied = self.copies[key] = block + (low - block.ptr) % _DEVICE_ALIGNMENT
            copied.copy_from_device_async(value.data + (low - value.data.ptr), high - low)
        memptr = copied + (value.data.ptr - low)
        return cp.ndarray(value.shape, value.dtype, memptr=memptr, strides=value.strides)

    def _numpy_view(self, key: MemoryKey, value: np.ndarray[Any, Any]) -> Any:
        low, high = self.spans[key]
        copied = self.copies.get(key)
        if copied is None:
            owner = numpy_owner(value)
            source = _owner_bytes(owner, owner)
            if source is None:
                return None
            first = owner.__array_interface__["data"][0]
            copied = self.copies[key] = _host_block(low, high)
            copied[...] = source[low - first : high - first]
        offset = value.__array_interface__["data"][0] - low
        try:
            view = np.ndarray(value.shape, value.dtype, copied, offset, value.strides)
        except ValueError:  # past the span (`view`)
            return None
        if not value.flags.writeable:
            view.flags.writeable = False
        return view

    def _host_view(self, key: MemoryKey, value: Any) -> Any:
        # Each array copies its own elements into the block: its arrays' owners differ, so
        # no one of them holds the bytes they span, and a byte no array holds is read by none.
        low, high = self.spans[key]
        block = self.copies.get(key)
        if block is None:
            block = self.copies[key] = _host_block(low, high)
        if type(value) is np.ndarray:
            offset = value.__array_interface__["data"][0] - low
            try:
                view = np.ndarray(value.shape, value.dtype, block, offset, value.strides)
            except ValueError:  # past the span (`view`)
                return None
            view[...] = value
            if not value.flags.writeable:
                view.flags.writeable = False
            return view
        # From the tensor's first byte: its offset in the block may be no whole number of
        # its elements (a float64 tensor 4 bytes past a float32 one).
        if not _lies_within(value, low, high):  # past the span (`view`)
            return None
        made = _tensor_over(block[value.data_ptr() - low :], 0, value)
        with sys.modules["torch"].no_grad():
            return made.copy_(value)

    def _tensor_view(self, torch: Any, key: MemoryKey, value: Any) -> Any:
        storage = self.copies.get(key)
        if storage is None:
            storage = self.copies[key] = self.storages[key].clone()
        with torch.no_grad():
            made = torch.empty(0, dtype=value.dtype, device=value.device)
            return made.set_(storage, value.storage_offset(), value.shape, value.stride())


_DEVICE_ALIGNMENT = 256
"""Bytes that cudaMalloc aligns each allocation to (CuPy's pool to 512, a multiple)."""


def _host_block(low: int, high: int) -> np.ndarray[Any, Any]:
    """A new buffer of the bytes from address `low` to `high`, at the caller's place in a
    cache line, so that the copy's alignment is its."""
    block = np.empty(high - low + 64, dtype=np.uint8)
    start = (low - block.__array_interface__["data"][0]) % 64
    return block[start : start + high - low]


def overlapping(values: Iterable[Any]) -> SharedMemory | None:
    """The allocations two of `values` (arrays; any other value is passed over) view
    overlapping bytes of, None where none do. Overlap is read from the address ranges, as
    `np.may_share_memory` reads it: two interleaved views (even and odd columns) count as
    overlapping, and are copied as views of one copy, which is never wrong."""
    return overlapping_keyed((value, memory_key(value)) for value in values)


def overlapping_keyed(keyed: Iterable[tuple[Any, MemoryKey | None]]) -> SharedMemory | None:
    """`overlapping` of arrays whose `memory_key` the caller has read already (`clone`'s
    look for views reads it to know an array): read again, a call of three tensors paid
    some 8 us more to copy."""
    groups: dict[MemoryKey, list[Any]] = {}
    # The keys that may be of borrowed memory (`_borrowed_memory`): of a NumPy array whose
    # `base` is set (a plain array's is None), of a CPU tensor. Told apart here, where each
    # array is met anyway: looked for group by group, a call's copy of 3 plain arrays paid
    # 0.55 us more (of 13), and of a tensor and its view 1.4 us (of 33).
    may_borrow: set[MemoryKey] = set()
    for value, key in keyed:
        if key is not None:
            groups.setdefault(key, []).append(value)
            if key[:2] == ("torch", _CPU) or (key[0] == "numpy" and value.base is not None):
                may_borrow.add(key)
    hosts = _host_tensors(groups)
    merged = _borrowed_memory(groups, may_borrow, hosts) if len(may_borrow) > 1 else {}
    spans: dict[MemoryKey, tuple[int, int]] = {}
    storages: dict[MemoryKey, Any] = {}
    for key, arrays in groups.items():
        # Only an allocation two arrays view is measured: reading a NumPy array's address
        # (`__array_interface__`) for every input made a call's copy of 200 arrays of their
        # own three times as slow.
        if len(arrays) < 2:
            continue
        ranges = [address_range(array) for array in arrays]
        if not _any_overlap(ranges):
            continue
        spans[key] = (min(low for low, _ in ranges), max(high for _, high in ranges))
        if key[0] == "torch":
            # Tensors of one address may hold storages of their own sizes (`torch.from_numpy`
            # of an array and of a prefix of it): a view made over a copy of the smaller
            # grew it, and read values past its end that the caller never gave. The largest
            # holds every tensor of the key, each starting at its first byte.
            storages[key] = max((t.untyped_storage() for t in arrays), key=lambda s: s.nbytes())
    hosts = {key: host for key, host in hosts.items() if ("numpy", id(host)) in spans}
    unowned = {
        key
        for key in spans
        if key[0] == "numpy"
        # Made over the owner's copy: the owner given, and a tensor lying in it (`hosts`).
        and not any(type(a) is not np.ndarray or a is numpy_owner(a) for a in groups[key])
    }
    if not spans:
        return None
    if merged:
        merged = {key: host_key for key, host_key in merged.items() if host_key in spans}
    return SharedMemory(spans, storages, hosts=hosts, unowned=unowned, merged=merged)


def _host_tensors(groups: dict[MemoryKey, list[Any]]) -> dict[MemoryKey, np.ndarray[Any, Any]]:
    """The CPU tensors that lie in the memory of a NumPy input's owner (`torch.from_numpy(a)`
    given beside `a`, or `x.numpy()` beside `x`), their group moved into the owner's, and
    the owner by their key. Keyed apart, each kind by its own allocation, they were copied
    apart: a candidate writing into the tensor left the copy of the array the body returned
    as it was, and a wrong candidate that wrote nothing passed its check."""
    hosts: dict[MemoryKey, np.ndarray[Any, Any]] = {}
    tensor_keys = [key for key in groups if key[:2] == ("torch", _CPU)]
    if not tensor_keys or not any(key[0] == "numpy" for key in groups):
        return hosts
    # Each owner's range read once, in order of its first byte: read again for each tensor,
    # a call of 100 arrays and 100 tensors took 170 ms to copy, not 2 ms.
    numpy_owners = [(key, numpy_owner(a[0])) for key, a in groups.items() if key[0] == "numpy"]
    owners = sorted(
        ((address_range(owner), key, owner) for key, owner in numpy_owners), key=lambda o: o[0]
    )
    starts = [low for (low, _), _, _ in owners]
    for tensor_key in tensor_keys:
        ranges = [address_range(tensor) for tensor in groups[tensor_key]]
        low, high = min(start for start, _ in ranges), max(end for _, end in ranges)
        # The owner starting last at or before the tensors' first byte.
        at = bisect.bisect_right(starts, low) - 1
        if at >= 0 and high <= owners[at][0][1]:
            _, numpy_key, owner = owners[at]
            groups[numpy_key].extend(groups.pop(tensor_key))
            hosts[tensor_key] = owner
    return hosts


def _borrowed_memory(
    groups: dict[MemoryKey, list[Any]],
    may_borrow: set[MemoryKey],
    hosts: dict[MemoryKey, np.ndarray[Any, Any]],
) -> dict[MemoryKey, MemoryKey]:
    """The groups over memory their owner borrows (a NumPy array whose base is no array, a
    tensor of a storage torch did not allocate) merged where their address ranges overlap,
    into one group under a ("host", first byte) key, and that key by each key merged (a
    tensor's that `_host_tensors` moved too). Keyed by owner, two `np.frombuffer` arrays of
    one bytearray, or `torch.from_numpy(a)` and `torch.from_numpy(a[2:])` without `a`, were
    copied apart: a candidate writing into one left the other's copy as it was, and a wrong
    candidate that wrote nothing passed its check. Memory an array or storage allocated is
    its own alone, so only the borrowed (of `may_borrow`) have their addresses read."""
    # A tensor key that `_host_tensors` moved into its NumPy array's is no group of its own.
    borrowed = [key for key in may_borrow if key in groups and _borrows(key, groups[key][0])]
    if len(borrowed) < 2:
        return {}
    extents = []
    for key in borrowed:
        ranges = [address_range(array) for array in groups[key]]
        extents.append((min(low for low, _ in ranges), max(high for _, high in ranges), key))
    # Runs of extents each starting before the one before it ends, in order of first byte.
    runs: list[tuple[int, int, list[MemoryKey]]] = []
    for low, high, key in sorted(extents, key=lambda extent: extent[0]):
        if runs and low < runs[-1][1]:
            first, end, keys = runs[-1]
            runs[-1] = (first, max(end, high), [*keys, key])
        else:
            runs.append((low, high, [key]))
    merged: dict[MemoryKey, MemoryKey] = {}
    for first, _, keys in runs:
        if len(keys) > 1:
            host_key: MemoryKey = ("host", first)
            groups[host_key] = [array for key in keys for array in groups.pop(key)]
            merged.update((key, host_key) for key in keys)
    for tensor_key, owner in hosts.items():
        moved_to = merged.get(("numpy", id(owner)))
        if moved_to is not None:
            merged[tensor_key] = moved_to
    return merged


def _borrows(key: MemoryKey, first: Any) -> bool:
    """Whether the arrays of `key`, `first` among them, lie in memory their owner did not
    allocate, which an owner of its own may lie in too."""
    if key[0] == "numpy":  # an owner whose `base` is None allocated its memory
        return numpy_owner(first).base is not None
    return not first.untyped_storage().resizable()  # a CPU tensor's (`may_borrow`)


def _any_overlap(ranges: list[tuple[int, int]]) -> bool:
    # Sorted by their first byte, two overlap where any two next to each other do.
    ordered = sorted(ranges)
    return any(later[0] < earlier[1] for earlier, later in itertools.pairwise(ordered))


def memory_key(value: Any) -> MemoryKey | None:
    """The allocation a plain array views; None for any other value, an empty array, and
    arrays whose copy is made otherwise: an array of objects (references, which `clone`
    copies one by one), a NumPy subclass (a masked array's view would lose its mask, a
    memmap its file), a tensor that records its gradient, an inference tensor, a lazily
    conjugated or negated one (a view made over its storage's copy would lose that), or one
    of a device other than the CPU and CUDA's (HIP's too)."""
    if type(value) is np.ndarray:
        owner = numpy_owner(value)
        plain = not value.dtype.hasobject and value.size and type(owner) is np.ndarray
        return ("numpy", id(owner)) if plain else None
    cupy_array = loaded_type("cupy", "ndarray")
    if cupy_array is not None and type(value) is cupy_array:
        return _cupy_key(value)
    if _is_tensor(value):
        return _tensor_key(value)
    return None


def _cupy_key(value: Any) -> MemoryKey | None:
    # The allocation's address, not its object: two arrays made over one pointer (each
    # imported from a tensor by `__cuda_array_interface__`) hold memory objects of their own.
    return ("cupy", value.device.id, value.data.mem.ptr) if value.size else None


def _tensor_key(value: Any) -> MemoryKey | None:
    plain = (
        value.layout is sys.modules["torch"].strided
        and not value.requires_grad
        and not value.is_inference()
        and not value.is_quantized
        and not value.is_conj()
        and not value.is_neg()
        # Where a tensor has an address: an XLA or meta tensor's `data_ptr()` raises. (Read
        # by flags: `value.device` makes a device object, 0.4 us of each input's copy.)
        and (value.is_cpu or value.is_cuda)
    )
    if not plain or not value.numel():
        return None
    return ("torch", value.get_device(), value.untyped_storage().data_ptr())


_CPU = -1
"""A CPU tensor's `get_device()`, its device in its `MemoryKey` (a CUDA one's is its index)."""


def address_range(value: Any) -> tuple[int, int]:
    """The first byte and one past the last byte of the elements of an array `memory_key`
    keys (negative strides reach below its first element)."""
    if type(value) is np.ndarray:
        start, strides = value.__array_interface__["data"][0], value.strides
    elif _is_tensor(value):  # its strides count elements
        start = value.data_ptr()
        strides = tuple(stride * value.element_size() for stride in value.stride())
    else:
        start, strides = value.data.ptr, value.strides
    low, high = byte_extent(value.shape, strides, _itemsize(value))
    return start + low, start + high


def _lies_within(value: Any, low: int, high: int) -> bool:
    """Whether every byte of `value`'s elements lies from address `low` to `high`: a copy of
    those bytes can hold it. Asked of a CuPy array and a tensor, which nothing else checks
    against the copy they are made over; a NumPy view's constructor checks its own."""
    first, end = address_range(value)
    return low <= first and end <= high


def byte_extent(shape: tuple[int, ...], strides: tuple[int, ...], itemsize: int) -> tuple[int, int]:
    """The first byte and one past the last byte of a view's elements, from its first
    element's (negative strides reach below it): what a copy keeping its strides spans
    (`clone._span`), and where it lies (`address_range`)."""
    extents = [(n - 1) * stride for n, stride in zip(shape, strides, strict=True)]
    low = sum(e for e in extents if e < 0)
    return low, sum(e for e in extents if e > 0) + itemsize


def _is_tensor(value: Any) -> bool:
    return type(value) is loaded_type("torch", "Tensor")


def _itemsize(value: Any) -> int:
    return int(value.element_size() if _is_tensor(value) else value.itemsize)


def numpy_owner(array: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
    """The NumPy array whose memory `array` views (itself where it owns its memory)."""
    while True:
        base = array.base
        if not isinstance(base, np.ndarray) and hasattr(base, "__array_interface__"):
            # `as_strided` (and `sliding_window_view`, made by it) views its array through
            # a helper object of NumPy's that holds the array as its `base`: the view was
            # taken for an owner of its own, and copied apart from the array it views.
            base = getattr(base, "base", None)
        if not isinstance(base, np.ndarray):
            return array
        array = base


def numpy_view(
    value: np.ndarray[Any, Any], owner: np.ndarray[Any, Any], owner_copy: np.ndarray[Any, Any]
) -> Any:
    """`value`, a view of memory another input views too, made over `owner_copy`, the copy
    of `owner`, the array that owns that memory (`numpy_owner`); None where that copy has
    no layout to place the view in (it is then copied apart, as an array given alone is)."""
    buffer = _owner_bytes(owner, owner_copy)
    if buffer is None:
        return None
    offset = value.__array_interface__["data"][0] - owner.__array_interface__["data"][0]
    view = np.ndarray(value.shape, value.dtype, buffer, offset, value.strides)
    if not value.flags.writeable:
        view.flags.writeable = False
    return view


def tensor_view(value: Any, owner: np.ndarray[Any, Any], owner_copy: np.ndarray[Any, Any]) -> Any:
    """`value`, a CPU tensor lying in the memory of the NumPy array `owner`
    (`SharedMemory.hosts`), made over `owner_copy` as `numpy_view` makes a NumPy view; None
    where it cannot be placed there (it is then copied apart, as a tensor given alone is):
    a read-only copy, which torch would share writable, and a tensor of the storage that
    lies outside `owner` (one the look for views passed over, `SharedMemory.view`)."""
    buffer = _owner_bytes(owner, owner_copy)
    if buffer is None or not buffer.flags.writeable:
        return None
    first = owner.__array_interface__["data"][0]
    if not _lies_within(value, first, first + buffer.nbytes):
        return None
    offset = value.data_ptr() - first
    size = value.element_size()
    if offset % size:
        # No whole number of its elements in (a float64 tensor 4 bytes into a float32
        # array): over a storage starting at its first byte, as `_host_view` makes one.
        # Copied apart, a write through the array was not seen in the tensor's copy.
        return _tensor_over(buffer[offset:], 0, value)
    return _tensor_over(buffer, offset // size, value)


def _tensor_over(buffer: np.ndarray[Any, Any], offset: int, value: Any) -> Any:
    """A CPU tensor of `value`'s dtype, shape and strides over the bytes `buffer` (writable,
    uint8), `offset` of its elements past their first."""
    torch = sys.modules["torch"]
    storage = torch.from_numpy(buffer).untyped_storage()
    with torch.no_grad():
        made = torch.empty(0, dtype=value.dtype)
        return made.set_(storage, offset, value.shape, value.stride())


def _owner_bytes(
    owner: np.ndarray[Any, Any], owner_copy: np.ndarray[Any, Any]
) -> np.ndarray[Any, Any] | None:
    """The bytes of `owner_copy`, laid out as `owner`'s; None where they are not."""
    contiguous = owner_copy.flags.c_contiguous or owner_copy.flags.f_contiguous
    if not contiguous or owner_copy.strides != owner.strides:
        return None
    return owner_copy.reshape(-1, order="A").view(np.uint8)  # a view: it is contiguous


__all__ = [
    "MemoryKey",
    "SharedMemory",
    "address_range",
    "byte_extent",
    "memory_key",
    "numpy_owner",
    "numpy_view",
    "overlapping",
    "overlapping_keyed",
    "tensor_view",
]
