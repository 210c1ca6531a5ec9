"""PyTorch tensors among a candidate's inputs and outputs, handled as arrays are.

A tensor has `__array__` and `shape` but no `copy`, and its `==` gives a tensor: it was
shared between candidates, as an object holding no array, so an in-place candidate
(`x.add_(1)`) changed the caller's tensor and every later candidate's input during a
tuning; and compared by `==`, every candidate returning one failed its check with "cannot
compare values of type Tensor", the reference against its own output included. Here a
tensor is copied for each call, keeping its strides, device, dtype and `requires_grad`,
and compared through NumPy (on the GPU through CuPy, `as_cupy`, where both tensors' values
have a CuPy dtype). torch is never imported here: a tensor exists only where the program
imported it.
"""

from __future__ import annotations

import contextlib
import copy
import itertools
import sys
from collections.abc import Callable, Iterable
from typing import Any

import numpy.typing as npt

from pytest_autotune.tune.loaded import instance_of, loaded_type

WIDEST_SPAN = 8
"""How many times its elements a strided view may span and keep its strides in a copy (as
`clone._WIDEST_SPAN` for NumPy views); a view spread wider is copied contiguous."""


def real_torch() -> Any:
    """The torch module where the program imported PyTorch itself, else None: a test suite
    that puts a `MagicMock` in `sys.modules["torch"]` has no tensors, and its mock's
    answers (a mock for `torch.cuda.device_count()`) are no device's."""
    return sys.modules["torch"] if loaded_type("torch", "Tensor") is not None else None


def is_tensor(value: object) -> bool:
    """Whether `value` is a PyTorch tensor (an `nn.Parameter` and other subclasses too)."""
    return instance_of(value, "torch", "Tensor")


def is_nested(tensor: Any) -> bool:
    """Whether a tensor is nested (`torch.nested`: rows of their own lengths)."""
    return bool(tensor.is_nested)


def is_generator(value: object) -> bool:
    """Whether `value` is a PyTorch random generator (`torch.Generator`)."""
    return instance_of(value, "torch", "Generator")


def is_dtype(value: object) -> bool:
    """Whether `value` is a PyTorch dtype (`torch.float32`), whose text (`torch.float32`) is
    the same in every process."""
    return instance_of(value, "torch", "dtype")


def is_module(value: object) -> bool:
    """Whether `value` is a PyTorch module (`nn.Module`: a model, a layer)."""
    return instance_of(value, "torch", "nn.Module")


def is_optimizer(value: object) -> bool:
    """Whether `value` is a PyTorch optimizer (`torch.optim.Optimizer`: SGD, Adam, ...)."""
    return instance_of(value, "torch", "optim.Optimizer")


def copy_optimizer(value: Any, memo: dict[int, tuple[Any, Any]]) -> Any:
    """A deep copy of an optimizer whose parameters, and the keys of its state (Adam's
    moments, SGD's momentum buffers, one entry per parameter), are the copies `memo` holds
    (`clone.clone_value`'s: the model passed before it), or None where it does not copy.
    Copied as other objects are, its state stayed keyed by the caller's parameters: a
    candidate's step found no state for the copies and began its moments afresh. Passed
    before its model, the model's copy is then made of the same copied parameters."""
    return _deep_copy(value, memo, _optimizer_parameters)


def copy_module(value: Any, memo: dict[int, tuple[Any, Any]]) -> Any:
    """A deep copy of a module, every submodule's parameters and buffers copied however
    deeply it nests, or None where it does not copy. Copied as other objects are, three
    objects deep, a model's blocks (`Model.blocks[0].mlp[0].weight`) were shared: a candidate
    taking an optimizer step trained the caller's model, and every later candidate ran on
    it. A tensor already copied (the same weight passed beside the model) is the copy's,
    and the copy's parameters are found in `memo` by an optimizer passed after it."""
    return _deep_copy(value, memo, _module_tensors)


def _deep_copy(
    value: Any,
    memo: dict[int, tuple[Any, Any]],
    tensors: Callable[[Any, Any], Iterable[tuple[Any, Any]]],
) -> Any:
    """`copy.deepcopy(value)` reusing the copies `memo` (`clone.clone_value`'s) holds, then
    each (original, copy) pair of its tensors that `tensors` lists added to `memo`, so that
    the objects passed after it share them; None where it does not copy."""
    deep_memo: dict[int, Any] = {key: copied for key, (_, copied) in memo.items()}
    try:
        copied = copy.deepcopy(value, deep_memo)
    except Exception:
        return None
    for original, twin in tensors(value, copied):
        memo.setdefault(id(original), (original, twin))
    return copied


def _optimizer_parameters(value: Any, copied: Any) -> Iterable[tuple[Any, Any]]:
    for group, twin_group in zip(value.param_groups, copied.param_groups, strict=False):
        yield from zip(group["params"], twin_group["params"], strict=False)


def _module_tensors(value: Any, copied: Any) -> Iterable[tuple[Any, Any]]:
    return itertools.chain(
        zip(value.parameters(), copied.parameters(), strict=False),
        zip(value.buffers(), copied.buffers(), strict=False),
    )


def copy_tensor(value: Any) -> Any:
    """A copy of a tensor on its device, with its dtype, strides (a transposed or strided view
    keeps its layout, so that a candidate that needs a contiguous input is timed and checked
    on the layout the caller passes), class and `requires_grad`. A copy of a tensor that
    requires its gradient is a leaf of its own, or computed from one where the caller's is
    computed (`_computed_copy`): a candidate's `backward()` fills the copy's `.grad`, never
    the caller's, and no candidate's gradient adds to the next one's."""
    torch = sys.modules["torch"]
    # An inference tensor's copy is made in inference mode, an inference tensor too: made
    # outside it, the copy was a normal tensor, so an in-place candidate (`x.mul_(2)`)
    # passed its check and won its tuning, then raised on the caller's tensor ("Inplace
    # update to inference tensor outside InferenceMode") at every call that followed.
    mode = torch.inference_mode() if value.is_inference() else torch.no_grad()
    with mode:
        copied = _strided_clone(torch, value)
        if type(copied) is not type(value):
            with contextlib.suppress(TypeError, RuntimeError):
                copied = copied.as_subclass(type(value))  # nn.Parameter, a user's subclass
    # Set last: made to require its gradient before `as_subclass`, a Parameter's copy was a
    # view (`AliasBackward0`) whose `.grad` stayed None.
    if value.requires_grad:
        copied.requires_grad_(True)
        if not value.is_leaf:
            copied = _computed_copy(torch, copied)
    return copied


def _computed_copy(torch: Any, leaf: Any) -> Any:
    """A copy of a tensor computed with its gradient (a layer's activations, `w * 2`),
    itself computed from `leaf`, its copy made a leaf of its own, so that it is no leaf
    either. A leaf that requires its gradient refuses in-place writes: a right in-place
    candidate (`torch.relu_(h)`), which the caller's tensor takes, failed its check with
    "a leaf Variable that requires grad is being used in an in-place operation"."""
    with torch.enable_grad():
        return _strided_clone(torch, leaf)


def _strided_clone(torch: Any, value: Any) -> Any:
    """`value` cloned with its own strides where they leave no gap (torch's
    `preserve_format`), or over a new buffer of the elements it spans where that is at most
    `WIDEST_SPAN` times its size (every other column of a matrix); else contiguous."""
    if value.layout != torch.strided or value.is_quantized:
        return value.clone()
    if value.is_contiguous() or _dense(value):
        return value.clone(memory_format=torch.preserve_format)
    sizes, strides = value.shape, value.stride()
    if any(n > 1 and s == 0 for n, s in zip(sizes, strides, strict=True)):
        return value.clone()  # a broadcast (`expand`): no copy can write into one element twice
    span = 1 + sum((n - 1) * s for n, s in zip(sizes, strides, strict=True) if n > 0)
    if span > WIDEST_SPAN * value.numel():
        return value.clone()
    base = torch.empty(span, dtype=value.dtype, device=value.device)
    copied = base.as_strided(sizes, strides)
    copied.copy_(value)
    return copied


def _dense(value: Any) -> bool:
    """Whether a tensor's elements fill its span with no gap (any order of its axes)."""
    pairs = sorted((s, n) for n, s in zip(value.shape, value.stride(), strict=True) if n != 1)
    expected = 1
    for stride, size in pairs:
        if stride != expected:
            return False
        expected *= size
    return True


def tensor_on_host(value: Any) -> npt.NDArray[Any] | None:
    """A NumPy copy of a tensor's values (from any device, without its autograd graph); a
    dtype NumPy lacks is widened exactly (bfloat16 and float8 to float32, complex32 to
    complex64); None where no NumPy array can hold them."""
    torch = sys.modules["torch"]
    tensor = value.detach()
    if tensor.layout != torch.strided:
        tensor = tensor.to_dense()  # a sparse tensor compares by value, as scipy.sparse does
    if tensor.is_quantized:
        tensor = tensor.dequantize()
    tensor = tensor.cpu().resolve_conj().resolve_neg()
    try:
        host: npt.NDArray[Any] = tensor.numpy()
        return host
    except (TypeError, RuntimeError):
        pass
    widened = _widened(torch, tensor)
    return None if widened is None else widened.numpy()


def widened_precision(value: Any) -> tuple[str, float] | None:
    """The name and eps of a tensor's floating point dtype where `tensor_on_host` widens it
    (bfloat16: "torch.bfloat16", 0.0078125), whose float32 copy's eps would judge `rtol`;
    None for any other tensor."""
    torch = sys.modules["torch"]
    if not (value.is_floating_point() or value.is_complex()):
        return None
    numpy_has = (torch.float16, torch.float32, torch.float64, torch.complex64, torch.complex128)
    if value.dtype in numpy_has:
        return None
    try:
        return str(value.dtype), float(torch.finfo(value.dtype).eps)
    except (TypeError, RuntimeError):
        return None


def _widened(torch: Any, tensor: Any) -> Any:
    """`tensor` in the narrowest dtype NumPy has that holds its values exactly, or None."""
    if tensor.is_complex():
        return tensor.to(torch.complex64)
    if tensor.is_floating_point():
        return tensor.to(torch.float32 if tensor.element_size() <= 2 else torch.float64)
    return None


def dtype_difference(reference: Any, actual: Any) -> str | None:
    """Why two tensors' dtypes differ ("expected torch.bfloat16, got torch.float32"), else None.
    Their NumPy copies cannot tell: a bfloat16 output and a float32 one both read float32."""
    if reference.dtype == actual.dtype:
        return None
    return f"dtype differs: expected {reference.dtype}, got {actual.dtype}"


def as_cupy(value: Any) -> Any:
    """A CuPy view of a CUDA tensor's values (no copy; DLPack orders the streams), or None:
    for a tensor on the CPU, of a dtype CuPy lacks (bfloat16), with a conjugate or negative
    bit, or where CuPy is not imported."""
    cupy = sys.modules.get("cupy")
    if cupy is None or not value.is_cuda or value.layout != sys.modules["torch"].strided:
        return None
    tensor = value.detach()
    if tensor.is_conj() or tensor.is_neg():
        return None
    try:
        return cupy.from_dlpack(tensor)
    except (TypeError, ValueError, RuntimeError, BufferError):
        return None


def torch_stream(cp: Any, device: int) -> contextlib.AbstractContextManager[Any]:
    """Torch's current stream on `device` made CuPy's current one, where the program set one
    of its own (`with torch.cuda.stream(s):` around its calls); else nothing. Torch's kernels
    go to torch's current stream, and a sample's hold and events go to CuPy's: torch's
    streams are created non-blocking, unordered with CuPy's default (legacy) one, so such a
    call read a fraction of its time (an H100: 131 us for 2,574 us of work) and won.
    Torch's own default is the legacy stream, CuPy's too: nothing to do there. Where CUDA
    is not initialized in torch, no tensor of it is on a GPU."""
    cuda = getattr(real_torch(), "cuda", None)
    if cuda is None or not cuda.is_initialized() or device >= cuda.device_count():
        # A device torch does not see (CUDA_VISIBLE_DEVICES set for it alone): none of its
        # tensors can be there.
        return contextlib.nullcontext()
    pointer = cuda.current_stream(device).cuda_stream
    if pointer == 0 or pointer == cp.cuda.get_current_stream().ptr:
        return contextlib.nullcontext()
    from_external = getattr(cp.cuda.Stream, "from_external", None)
    if from_external is None:  # CuPy before 14
        stream: contextlib.AbstractContextManager[Any] = cp.cuda.ExternalStream(pointer, device)
        return stream
    # CuPy 14 deprecates ExternalStream (a DeprecationWarning, an error under a suite's
    # `filterwarnings = error`) for any object of the CUDA stream protocol.
    external: contextlib.AbstractContextManager[Any] = from_external(_StreamHandle(pointer))
    return external


class _StreamHandle:
    """A raw `cudaStream_t` under the CUDA stream protocol (`__cuda_stream__`: version 0 and
    the handle), which every torch version's stream does not implement."""

    def __init__(self, pointer: int) -> None:
        self._pointer = pointer

    def __cuda_stream__(self) -> tuple[int, int]:
        return 0, self._pointer


def tensor_device(value: Any) -> int | None:
    """The GPU a tensor lives on, None for one on the host."""
    return value.device.index if value.is_cuda else None


__all__ = [
    "as_cupy",
    "copy_module",
    "copy_optimizer",
    "copy_tensor",
    "dtype_difference",
    "is_dtype",
    "is_generator",
    "is_module",
    "is_nested",
    "is_optimizer",
    "is_tensor",
    "real_torch",
    "tensor_device",
    "tensor_on_host",
    "torch_stream",
    "widened_precision",
]
