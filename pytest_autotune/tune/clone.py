"""Copies of a candidate's inputs and outputs: arrays copied, the containers and objects
holding them rebuilt, every other value shared. Its own module, importing nothing of the
package but the tensor copy (`torch_tensors`): the output checks (`checks`) keep a copy of
the reference's output, and the tunable sets (`tunable_set`) copy the inputs of each call."""

from __future__ import annotations

import array
import collections
import copy
import dataclasses
import functools
import itertools
import numbers
import random
import sys
import types
from collections.abc import Callable
from typing import Any

import numpy as np

from pytest_autotune.tune.loaded import instance_of, loaded_type
from pytest_autotune.tune.shared_memory import (
    MemoryKey,
    SharedMemory,
    byte_extent,
    memory_key,
    numpy_owner,
    numpy_view,
    overlapping_keyed,
    tensor_view,
)
from pytest_autotune.tune.torch_tensors import (
    copy_module,
    copy_optimizer,
    copy_tensor,
    is_generator,
    is_module,
    is_optimizer,
    is_tensor,
)


def clone_value(value: Any, _depth: int = 0, _memo: dict[int, Any] | None = None) -> Any:
    """A copy of an array (NumPy, CuPy, a PyTorch tensor, anything with `__array__` and
    `copy`), recursing into
    tuples, lists and dicts (a dict of its own type), the elements of a NumPy object array
    (a ragged batch's rows), and into the attributes of an object
    that holds an array (a shallow copy of the object with its arrays copied): a candidate
    writing into `state.buffer` must not change the fixture for later tests. A set,
    bytearray, `array.array` or deque is copied too, and a random generator (the standard
    library's, NumPy's). Other values are shared.

    One value met twice is copied once, as `copy.deepcopy` does: `op(x, x)` gets one copy
    twice, so an in-place candidate writing its second argument changes its first, as it
    would on the caller's arrays, and the copies take no more memory than the inputs. So
    are NumPy arrays of one buffer whose memory overlaps (a cache and a view of it given
    apart, `candidate(slot)` writing what the body returns as `cache`): their copies are
    views of one copy of it, and CuPy arrays and PyTorch tensors of one allocation, and
    arrays and CPU tensors of owners of their own over one memory (two `np.frombuffer`
    arrays of one bytearray, `shared_memory`)."""
    if _memo is not None:
        return _memoized(value, _depth, _memo)
    if _is_array(value):  # one array alone shares with nothing
        return _memoized(value, _depth, {})
    arrays: dict[int, tuple[Any, MemoryKey]] = {}
    _arrays_within(value, arrays, 0)
    shared = overlapping_keyed(arrays.values()) if len(arrays) > 1 else None
    if shared is None:
        return _memoized(value, _depth, {})
    memo: dict[int, Any] = {_SHARED_MEMORY: (None, shared)}
    cloned = _memoized(value, _depth, memo)
    if any(owner_id in memo for _, owner_id in shared.unowned):
        # An owner the look for views passed over (past its first arrays, in an object
        # array, deeper than it looks) was an input all the same, copied apart from the
        # views made over their span's copy: copied again, the views over the owner's copy.
        shared = dataclasses.replace(shared, unowned=set(), copies={})
        cloned = _memoized(value, _depth, {_SHARED_MEMORY: (None, shared)})
    return cloned


def _memoized(value: Any, depth: int, memo: dict[int, Any]) -> Any:
    """`value` copied once however often the walk meets it (`clone_value`)."""
    key = id(value)
    if key in memo:
        return memo[key][1]
    cloned = _clone(value, depth, memo)
    if cloned is not value:
        # Only what was copied: an object met first below the depth limit is shared there,
        # and met again nearer the top it is still copied, as it was before the memo.
        # The original is kept beside its copy: an id is unique only while its object lives.
        memo[key] = (value, cloned)
    return cloned


_ATOMS = frozenset({int, float, complex, bool, str, bytes, type(None)})
"""Types of values nothing can write into: a list of them needs a new list, not a visit to
each item (some 3.5 us each: a 100 000-float list took 0.35 s a copy)."""


def _clone(value: Any, depth: int, memo: dict[int, Any]) -> Any:
    if isinstance(value, (tuple, list)):
        return _clone_sequence(value, depth, memo)
    if isinstance(value, dict):
        return _clone_dict(value, depth, memo)
    if _is_array(value):
        copied = _view_of_shared(value, depth, memo)
        if copied is None:
            copied = _copy_array(value)
        if type(copied) is np.ndarray and copied.dtype == object:
            _clone_elements(copied, depth, memo)
        return copied
    if isinstance(value, _WRITABLE_CONTAINERS) or is_random_state(value):
        # Shared as other objects are (they hold no `__dict__`), a candidate's writes
        # reached the caller's at each call of a tuning: a set grew by an element a call.
        return _clone_container(value, depth, memo)
    if depth < _MAX_OBJECT_DEPTH or is_module(value) or is_optimizer(value):
        return _clone_object(value, depth + 1, memo)
    return value


def _is_array(value: Any) -> bool:
    """Whether `value` is an array `_copy_array` copies."""
    if type(value) is np.ndarray:  # the most inputs: asked first, no lookups
        return True
    # A class (`np.float32` given as a dtype) has these attributes too, unbound. A PyTorch
    # tensor has no `copy`: it was shared, and written by in-place candidates.
    tensor = is_tensor(value) and not isinstance(value, mock_types())  # a spec'd mock too
    is_array = tensor or (
        hasattr(value, "__array__") and hasattr(value, "copy") and hasattr(value, "shape")
    )
    return is_array and not isinstance(value, type)


_SHARED_MEMORY = -1
"""The memo's entry (no object's id is negative) of the allocations two of the inputs'
arrays view overlapping parts of (`shared_memory.SharedMemory`)."""

_LOOKED_FOR_VIEWS = 256
"""Arrays `_arrays_within` looks at: inputs of more rarely alias, and looking costs each copy."""


def _arrays_within(value: Any, arrays: dict[int, tuple[Any, MemoryKey]], depth: int) -> None:
    """The plain arrays that `value` is or holds, as `clone_value` walks it, into `arrays`
    by id with their `shared_memory.memory_key`, up to `_LOOKED_FOR_VIEWS` of them."""
    if len(arrays) >= _LOOKED_FOR_VIEWS or type(value) in _ATOMS or id(value) in arrays:
        return
    if isinstance(value, (tuple, list)):
        items: Any = value
    elif isinstance(value, dict):
        items = value.values()
    elif (key := memory_key(value)) is not None:
        arrays[id(value)] = (value, key)
        return
    elif isinstance(value, np.ndarray):  # an array of objects, or a subclass: not looked into
        return
    elif depth < _MAX_OBJECT_DEPTH and isinstance(getattr(value, "__dict__", None), dict):
        items = list(vars(value).values())
    else:
        return
    # The first items of each: a list of a million floats is looked at no further.
    for item in itertools.islice(items, _LOOKED_FOR_VIEWS):
        _arrays_within(item, arrays, depth + 1)


def _view_of_shared(value: Any, depth: int, memo: dict[int, Any]) -> Any:
    """`value`'s copy as a view of its memory's one copy, where another input views
    overlapping memory of the same allocation (`shared_memory`); None for any other value,
    and for the NumPy array that owns the memory, which is copied as any array is and which
    the NumPy views are made of."""
    entry = memo.get(_SHARED_MEMORY)
    if entry is None or (key := memory_key(value)) is None:
        return None
    shared: SharedMemory = entry[1]
    host_key = shared.merged.get(key)
    if host_key is not None:  # of owners over borrowed memory, overlapping another's
        return shared.view(host_key, value)
    host = shared.hosts.get(key)
    if host is not None:  # a CPU tensor lying in a NumPy input's memory
        return tensor_view(value, host, clone_value(host, depth, memo))
    owner = numpy_owner(value) if key[0] == "numpy" else None
    if key not in shared.spans or owner is value:
        # The NumPy owner is copied as any array is; so is one that the look for views
        # passed over, whose views are then over their span's copy (`clone_value` copies
        # all again).
        return None
    if owner is None or key in shared.unowned:
        return shared.view(key, value)
    return numpy_view(value, owner, clone_value(owner, depth, memo))


def _clone_sequence(value: tuple[Any, ...] | list[Any], depth: int, memo: dict[int, Any]) -> Any:
    if type(value) in (list, tuple) and all(type(v) in _ATOMS for v in value):
        return list(value) if type(value) is list else value
    if isinstance(value, list):
        return [clone_value(v, depth, memo) for v in value]
    items = tuple(clone_value(v, depth, memo) for v in value)
    # A NamedTuple is kept one: as a plain tuple, `params.scale` raised AttributeError in
    # the candidate, and a reference output lost its own `autotune_compare`.
    return type(value)(*items) if hasattr(value, "_fields") else items


def _clone_elements(copied: np.ndarray[Any, Any], depth: int, memo: dict[int, Any]) -> None:
    """The elements of an object array's copy cloned in it, as a list's are: `copy()` shares
    them, so a ragged batch's rows (an object array of arrays) that an in-place candidate
    scaled were the next candidate's input, and the kept reference output too, which then
    equalled a wrong candidate's. Values nothing can write into are passed over."""
    writeable = copied.flags.writeable  # a read-only input's copy is read-only
    copied.flags.writeable = True
    flat = copied.reshape(-1, order="A")  # a view: the copy is C- or Fortran-contiguous
    for i, item in enumerate(flat):
        kind = type(item)
        # NumPy scalars, dates and decimals hold nothing to copy either: visited one by
        # one, a million took some 5 s a copy.
        if kind not in _ATOMS and not issubclass(kind, np.generic) and _may_hold_values(kind):
            cloned = clone_value(item, depth, memo)
            if cloned is not item:
                flat[i] = cloned
    copied.flags.writeable = writeable


def _may_hold_values(kind: type) -> bool:
    """Whether an object of type `kind` may hold a value `clone_value` copies: it is an
    array or container, or has attributes of its own (a `__dict__` or `__slots__`) and is
    no number (a `Fraction` keeps its two ints in slots)."""
    known = _MAY_HOLD_VALUES.get(kind)
    if known is None:
        known = (
            issubclass(kind, (tuple, list, dict, *_WRITABLE_CONTAINERS))
            or hasattr(kind, "__array__")
            or (
                not issubclass(kind, numbers.Number)
                and (
                    getattr(kind, "__dictoffset__", 1) != 0
                    or any(cls.__dict__.get("__slots__") for cls in kind.__mro__)
                )
            )
        )
        _MAY_HOLD_VALUES[kind] = known
    return known


_MAY_HOLD_VALUES: dict[type, bool] = {}


RANDOM_STATES = (random.Random, np.random.Generator, np.random.RandomState, np.random.BitGenerator)
"""Random generators, whose state each draw moves: copied whole."""


def is_random_state(value: object) -> bool:
    """Whether `value` is a random generator (`RANDOM_STATES`, or a `torch.Generator`, a C
    type of no attributes that is otherwise shared as one)."""
    return isinstance(value, RANDOM_STATES) or is_generator(value)


_WRITABLE_CONTAINERS = (set, bytearray, array.array, collections.deque, *RANDOM_STATES)
"""The standard library's other containers a candidate may write into, and the random
generators a body draws its inputs from."""


def _clone_container(value: Any, depth: int, memo: dict[int, Any]) -> Any:
    if is_random_state(value):
        # A seeded generator given to the body (an `rng` fixture): shared, the reference's
        # draws moved the state the candidate's call then drew from, and every correct
        # candidate differed from the reference. Copied, each call draws what the first did.
        return copy.deepcopy(value)
    if isinstance(value, collections.deque):
        items = [clone_value(v, depth, memo) for v in value]
        try:
            return type(value)(items, maxlen=value.maxlen)
        except TypeError:
            # A subclass whose constructor takes other arguments (deque's own copy makes
            # one the same way): shared, as any object this cannot copy.
            return value
    # A set holds hashable values, a bytearray and an array numbers: a shallow copy.
    return copy.copy(value)


def _clone_dict(value: dict[Any, Any], depth: int, memo: dict[int, Any]) -> dict[Any, Any]:
    """A dict with its values cloned, of its own type: a `defaultdict` copied as a plain
    dict failed its candidates with a KeyError where the caller's would have made the key;
    an `OrderedDict` or `Counter` lost its methods."""
    if type(value) is dict:
        return {k: clone_value(v, depth, memo) for k, v in value.items()}
    sparse = sys.modules.get("scipy.sparse")
    if sparse is not None and sparse.issparse(value):
        # A DOK matrix is a dict that keeps its entries in an attribute (`_dict`): copied
        # as a dict, its copy shared them, and a candidate's `x[i, j] += 1` wrote into the
        # caller's matrix and every later candidate's input.
        return value.copy()
    try:
        copied = copy.copy(value)  # a defaultdict keeps its default factory
    except Exception:
        return {k: clone_value(v, depth, memo) for k, v in value.items()}
    for k, v in value.items():
        dict.__setitem__(copied, k, clone_value(v, depth, memo))
    return copied


def _copy_array(value: Any) -> Any:
    """A copy in the memory order of `value`: NumPy's and CuPy's `copy()` make C order, so a
    Fortran-ordered input was timed, and checked, in a layout the caller never passes (a
    column-wise kernel winning a tuning it loses in use). An array type whose `copy` takes
    no order keeps its own.

    A read-only NumPy array (`np.frombuffer` of bytes, a read-only memmap) gives a read-only
    copy: a writable one let a candidate that writes into its input (`x.sort()`) run in the
    tuning and win it, and then raise on the caller's array at every call that followed."""
    # A plain NumPy array (the most inputs) is neither a tensor nor CuPy's: the lookups of
    # their classes, 9 a call of three arrays, were half of its copy's cost.
    if type(value) is np.ndarray:
        copied = None
    elif is_tensor(value):
        return copy_tensor(value)
    else:
        copied = device_copy(sys.modules.get("cupy"), value)
    if copied is None:
        copied = _strided_copy(value)
    if copied is None:
        try:
            copied = value.copy(order="K")
        except TypeError:
            copied = value.copy()
    read_only = isinstance(value, np.ndarray) and not value.flags.writeable
    if read_only and isinstance(copied, np.ndarray):
        copied.flags.writeable = False
    return copied


_WIDEST_SPAN = 8
"""How many times its elements' bytes a view may span and keep its strides in a copy (every
other column spans 2 times, every eighth 8); a view spread wider (a column of a large
matrix) is copied contiguous, as a copy of it would otherwise hold its whole matrix's span."""

_SMALL_SPAN = 16 << 20
"""A view spanning at most this many bytes keeps its strides however sparse it is."""


def _strided_copy(value: Any) -> Any:
    """A copy of a NumPy view that is neither C- nor Fortran-ordered (every other column, rows
    reversed, a broadcast) with the view's own strides, in a buffer of the bytes it spans;
    None for anything else. `copy(order="K")` makes such a view contiguous, so candidates
    were timed and checked on a layout the caller never passes, and one that needs a
    contiguous buffer (`hashlib.sha256(x)`, `x.view(np.complex128)`) won the tuning on the
    copies and raised on the caller's view at every call that followed."""
    # A memmap's view too (every other row of a file's matrix), made a memmap as its `copy`
    # makes one; a masked array's mask would need copying beside it.
    if type(value) not in (np.ndarray, np.memmap):
        return None
    if value.flags.c_contiguous or value.flags.f_contiguous:
        return None
    if value.dtype.hasobject:  # no array of references is made over raw bytes
        return None
    return _keeping_strides(
        value,
        lambda span, offset: np.ndarray(
            value.shape, value.dtype, np.empty(span, np.uint8), offset, value.strides
        ).view(type(value)),
    )


def _keeping_strides(value: Any, view_in_span: Callable[[int, int], Any]) -> Any:
    """`value` copied into the view `view_in_span(span, offset)` makes over a new buffer of
    the bytes it spans (its first element at `offset`), so that the copy has its strides;
    None where the span is too wide to copy whole: over `_WIDEST_SPAN` times its elements'
    bytes and over `_SMALL_SPAN`."""
    spanned = _span(value)
    if spanned is None:
        return None
    copied = view_in_span(*spanned)
    copied[...] = value
    return copied


def _span(value: Any) -> tuple[int, int] | None:
    """The bytes a view spans and the offset of its first element in them, None where that
    is too wide to copy whole (`_keeping_strides`)."""
    low, high = byte_extent(value.shape, value.strides, value.itemsize)
    span = high - low
    if span > max(_WIDEST_SPAN * value.nbytes, _SMALL_SPAN):
        return None
    return span, -low


def device_copy(cp: Any, value: Any) -> Any:
    """A CuPy array (`cp`, the CuPy module, None without it) of the current device copied
    into an array from the current allocator: a contiguous one by one device-to-device
    memcpy, a strided one with its own strides where its span allows
    (`_strided_device_copy`); a strided one of another device onto this one
    (`_strided_copy_across`); None for anything else. CuPy's `copy` runs an elementwise
    kernel compiled per dtype on its first use: on a fresh H200 host its compilation was
    80-160 ms of a family's first tuning (saxpy 123 against 39 ms, the 256-bin histogram
    292 against 127 ms; `benchmarks/gpu_first_compiles.py`), which no later process paid.
    The tuner's copies of each candidate's inputs and the gate's placements
    (`cuda_graphs.Placement.copies`) both copy this way."""
    if cp is None or not isinstance(value, cp.ndarray):
        return None
    # CuPy's `copy` makes its copy on the current device, which the tuner sets to its
    # client's (`client_context`): a client of GPU 1 times copies of GPU 0's arrays on GPU
    # 1. It copies a contiguous array of another device (one memcpy), not a strided one.
    contiguous = value.flags.c_contiguous or value.flags.f_contiguous
    if value.device.id != cp.cuda.runtime.getDevice():
        return None if contiguous else _strided_copy_across(cp, value)
    if not contiguous:
        return _strided_device_copy(cp, value)
    copied = cp.empty_like(value, order="K")
    if value.nbytes:
        copied.data.copy_from_device_async(value.data, value.nbytes)
    return copied


def _strided_device_copy(cp: Any, value: Any) -> Any:
    """A strided CuPy view copied with its own strides, as `_strided_copy` does a NumPy
    one; None where its span is too wide (CuPy's `copy` then makes it contiguous). Copied
    contiguous, a kernel reading every other column was timed on coalesced loads it never
    gets from the caller's view."""
    return _keeping_strides(
        value,
        lambda span, offset: cp.ndarray(
            value.shape,
            value.dtype,
            memptr=cp.empty(span, dtype=cp.uint8).data + offset,
            strides=value.strides,
        ),
    )


def _strided_copy_across(cp: Any, value: Any) -> Any:
    """A strided view of another device's CuPy array copied onto the current device with its
    own strides: the bytes it spans, by one memcpy from that device. CuPy's `copy` refuses
    it ("CuPy cannot copy non-contiguous array between devices", NotImplementedError): a
    client of GPU 1 given every other column of a matrix of GPU 0 failed every tuning as
    its "input generator raised". A view spread too wide to copy whole is made contiguous
    on its own device first (in C order where its own order is neither), and that copied
    across."""
    spanned = _span(value)
    if spanned is None:
        with cp.cuda.Device(value.device.id):
            home = value.copy(order="K")
            if not (home.flags.c_contiguous or home.flags.f_contiguous):
                home = home.copy(order="C")
        return home.copy(order="K")
    span, offset = spanned
    buffer = cp.empty(span, dtype=cp.uint8)
    buffer.data.copy_from_device_async(value.data - offset, span)
    return cp.ndarray(value.shape, value.dtype, memptr=buffer.data + offset, strides=value.strides)


_MAX_OBJECT_DEPTH = 3
"""Objects inside objects inside objects: deep enough for a state holding a buffer, shallow
enough that a cyclic object graph ends and the cost per call stays small."""

_NEVER_COPIED = (
    type,
    types.ModuleType,
    types.FunctionType,
    types.BuiltinFunctionType,
    types.MethodType,
    functools.partial,
)


_MOCK_MODULES = ("unittest.mock", "mock")


def mock_types() -> tuple[type, ...]:
    """The base classes of `unittest.mock`'s objects (and the standalone `mock` package's,
    which pytest-mock can be told to use), where imported; looked up, not imported: a
    program that never imported them holds none. A mock is never copied: it is the test's
    record of the calls made, often the one a fixture patched into the code under test
    (`mocker.patch(...)`), and a copy recorded the body's calls where the body's
    `assert_called_once()` never looked."""
    found = (loaded_type(name, "NonCallableMock") for name in _MOCK_MODULES)
    return tuple(base for base in found if base is not None)


_PYTEST_STATE = (
    "MonkeyPatch",
    "LogCaptureFixture",
    "WarningsRecorder",
    "CaptureFixture",
    "TempPathFactory",
    "Config",
)
"""pytest's classes of the fixtures that hold a test's state (`monkeypatch`, `caplog`,
`recwarn`, `capsys`, `tmp_path_factory`, `pytestconfig`), never an input."""


def is_mocker(value: object) -> bool:
    """Whether `value` is pytest-mock's `mocker` (or its class, module, package and session
    kin), told by its class, so that pytest-mock is never imported."""
    cls = type(value)
    return cls.__name__ == "MockerFixture" and cls.__module__.startswith("pytest_mock")


def is_kept(value: object) -> bool:
    """Whether `value` is a fixture that holds the test's state (`_PYTEST_STATE`, looked up
    where pytest is imported), or pytest-mock's `mocker`, whose patches its teardown undoes
    as `monkeypatch`'s. Never copied, wherever an input holds it: copied, its patches were
    never undone (a fixture's helper built on `monkeypatch` left the variable its body set
    set for every later test), and a `mocker`'s copy walked into `unittest.mock.sentinel`,
    whose every attribute exists, and failed every candidate calling its `copy`."""
    return is_mocker(value) or any(instance_of(value, "pytest", n) for n in _PYTEST_STATE)


def _clone_object(value: Any, depth: int, memo: dict[int, Any]) -> Any:
    if isinstance(value, (*_NEVER_COPIED, *mock_types())) or is_kept(value):
        return value
    if is_module(value) or is_optimizer(value):
        # A PyTorch model, copied whole however deeply its layers nest (`copy_module`); an
        # optimizer with its state keyed by the copied parameters (`copy_optimizer`).
        copied_whole = (copy_module if is_module(value) else copy_optimizer)(value, memo)
        if copied_whole is not None:
            return copied_whole
    attributes = dict(getattr(value, "__dict__", None) or {})
    if dataclasses.is_dataclass(value):
        attributes.update((f.name, getattr(value, f.name)) for f in dataclasses.fields(value))
    else:
        # A class declared with __slots__ keeps its attributes there, not in a __dict__:
        # it was shared, and a candidate's writes into its buffer reached the caller's.
        attributes.update(_slot_values(value))
    cloned = {name: clone_value(v, depth, memo) for name, v in attributes.items()}
    if all(cloned[name] is attributes[name] for name in attributes):
        return value  # holds no array: shared, as before
    try:
        copied = copy.copy(value)
        for name, v in cloned.items():
            object.__setattr__(copied, name, v)
    except Exception:
        return value
    return copied


def _slot_values(value: Any) -> dict[str, Any]:
    """The attributes `value` holds in the `__slots__` of its class and its bases (those
    set: a slot never assigned has no value to copy)."""
    values: dict[str, Any] = {}
    for cls in type(value).__mro__:
        slots = cls.__dict__.get("__slots__", ())
        for slot in (slots,) if isinstance(slots, str) else slots:
            if slot in ("__dict__", "__weakref__"):
                continue
            name = slot
            if slot.startswith("__") and not slot.endswith("__"):
                name = f"_{cls.__name__.lstrip('_')}{slot}"  # a private slot, mangled
            if name in values:
                continue
            try:
                values[name] = getattr(value, name)
            except AttributeError:
                continue
    return values


__all__ = ["clone_value", "is_kept", "is_mocker", "is_random_state", "mock_types"]
