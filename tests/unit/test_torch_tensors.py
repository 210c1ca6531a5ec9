"""PyTorch tensors as a candidate's inputs and outputs: copied for each call, compared by value.

torch is a 5 GB install that CI does not make: these tests skip without it, and run where it
is installed (a venv of the workstation's, the GPU machine's Python, whose CUDA tensors
`tests/gpu/test_torch_cuda.py` covers)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from pytest_autotune import AutotuneConfig, LocalTuner, TunableSet, Work, compare_outputs
from pytest_autotune.backends.cpu import cpu
from pytest_autotune.tune.clone import clone_value

torch = pytest.importorskip("torch")


def test_an_in_place_candidate_changes_neither_the_callers_tensor_nor_the_next_candidates_input():
    first_seen: dict[str, float] = {}

    def add_one_in_place(x: Any) -> Any:
        first_seen.setdefault("inplace", float(x[0]))
        return x.add_(1.0)

    def add_one(x: Any) -> Any:
        first_seen.setdefault("add", float(x[0]))
        return x + 1.0

    tuner = LocalTuner("torch-inplace", AutotuneConfig(disable_cache=True))
    tunables = tuner.init(
        lambda: TunableSet.of(lambda x: x.shape[0], {"inplace": add_one_in_place, "add": add_one})
    )
    client = cpu()
    x = torch.zeros(1000)
    out = tuner.execute(client.device_id, client, tunables, (x,))

    # Each candidate's copy held the caller's values (it is timed over many calls on it, so
    # an in-place one meets its own output again: README, "Each candidate gets its own copy").
    assert first_seen == {"inplace": 0.0, "add": 0.0}
    assert float(out[0]) == 1.0
    # Then the winner ran once on the caller's own tensor: in place, if it is the one that won.
    assert torch.equal(x, torch.full_like(x, 1.0 if out is x else 0.0))


def test_a_copy_keeps_the_tensors_values_dtype_and_strides_in_memory_of_its_own():
    matrix = torch.arange(48.0, dtype=torch.float64).reshape(6, 8)
    for view in (matrix, matrix.t(), matrix[:, ::2], matrix[1:4, 2:]):
        copied = clone_value(view)
        assert copied.data_ptr() != view.data_ptr()
        assert copied.dtype == view.dtype and copied.shape == view.shape
        assert copied.stride() == view.stride()  # the caller's layout, not a contiguous one
        assert torch.equal(copied, view)
        copied.fill_(-1.0)
        assert float(view.min()) >= 0.0


def test_a_broadcast_or_widely_spread_view_is_copied_contiguous():
    column = torch.arange(10.0).reshape(10, 1).expand(10, 4)
    copied = clone_value(column)
    assert torch.equal(copied, column) and copied.is_contiguous()
    sparse_column = torch.zeros(100, 100)[:, 0]
    assert clone_value(sparse_column).is_contiguous()  # its view spans 99x its elements


def test_a_copy_of_a_parameter_is_a_parameter_and_a_leaf_whose_backward_leaves_the_callers_grad():
    weight = torch.nn.Parameter(torch.ones(5))
    copied = clone_value(weight)
    assert isinstance(copied, torch.nn.Parameter)
    assert copied.is_leaf and copied.requires_grad

    (copied * 3).sum().backward()

    assert torch.equal(copied.grad, torch.full((5,), 3.0))
    assert weight.grad is None


def test_a_copy_of_an_inference_tensor_is_one_so_an_in_place_write_fails_as_on_the_callers():
    with torch.inference_mode():
        x = torch.ones(4)
    copied = clone_value(x)
    assert copied.is_inference()
    assert torch.equal(copied, x) and copied.data_ptr() != x.data_ptr()
    with pytest.raises(RuntimeError, match="inference tensor"):
        copied.add_(1.0)


def test_a_copy_of_a_tensor_computed_with_its_gradient_takes_in_place_writes_as_the_callers_does():
    weight = torch.ones(4, requires_grad=True)
    activations = weight * 2  # no leaf: torch lets `relu_` write into it
    copied = clone_value(activations)
    assert not copied.is_leaf and copied.requires_grad

    torch.relu_(copied).sum().backward()

    assert torch.equal(copied.detach(), activations.detach())
    assert weight.grad is None  # the copy's graph is its own


def test_one_tensor_passed_twice_is_copied_once():
    x = torch.ones(4)
    first, second = clone_value((x, x))
    assert first is second and first is not x


def test_tensors_that_agree_within_the_tolerances_compare_equal():
    reference = torch.linspace(0.0, 1.0, 100)
    assert compare_outputs(reference, reference * (1 + 1e-7)) is None
    assert compare_outputs(torch.tensor(3.0), 3.0) is None  # a 0-d tensor against its item
    assert compare_outputs(reference.requires_grad_(), reference.detach().clone()) is None
    half = torch.ones(8, dtype=torch.bfloat16)  # no NumPy dtype: compared as float32
    assert compare_outputs(half, half.clone()) is None


def test_tensors_that_differ_name_the_first_bad_element():
    reference = torch.zeros(10)
    actual = reference.clone()
    actual[7] = 0.5

    message = compare_outputs(reference, actual)

    assert message is not None
    assert "1 of 10 elements differ" in message and "first at [7]" in message
    assert "cannot compare" not in message


def test_tensors_of_other_dtypes_differ_by_their_torch_dtypes():
    message = compare_outputs(torch.ones(3), torch.ones(3, dtype=torch.bfloat16))
    assert message == "output: dtype differs: expected torch.float32, got torch.bfloat16"
    assert compare_outputs(torch.ones(3), torch.ones(3, dtype=torch.int64)) is not None


def test_a_sparse_or_conjugate_tensor_compares_by_its_values():
    dense = torch.tensor([[0.0, 2.0], [3.0, 0.0]])
    assert compare_outputs(dense, dense.to_sparse()) is None
    z = torch.tensor([1 + 2j, 3 - 1j])
    assert compare_outputs(torch.tensor([1 - 2j, 3 + 1j]), z.conj()) is None


def test_a_tensor_output_and_a_numpy_one_compare_by_value():
    assert compare_outputs(np.arange(4.0, dtype=np.float32), torch.arange(4.0)) is None


def test_an_in_place_set_drawing_from_a_torch_generator_compares_it_by_its_state():
    reference = torch.Generator().manual_seed(1)
    drew_alike = clone_value(reference)
    assert drew_alike is not reference
    assert compare_outputs(reference, drew_alike) is None
    torch.randn(3, generator=reference)
    assert compare_outputs(reference, clone_value(reference)) is None

    drew_more = clone_value(reference)
    torch.randn(1, generator=drew_more)
    message = compare_outputs(reference, drew_more)
    assert message is not None and "state differs" in message


def test_a_bfloat16_output_that_rounds_otherwise_says_the_default_rtol_is_finer_than_it_holds():
    values = torch.linspace(1.0, 2.0, 100)
    rounded_once = (values * 3).to(torch.bfloat16)
    rounded_twice = values.to(torch.bfloat16) * 3

    message = compare_outputs(rounded_once, rounded_twice)

    assert message is not None
    assert "rtol=1e-05 is finer than torch.bfloat16 can hold (its eps is 0.00781)" in message
    assert compare_outputs(rounded_once, rounded_twice, rtol=1e-2) is None


def test_an_optimizer_copied_after_its_model_keeps_its_state_for_the_copied_parameters():
    # Copied as other objects are, Adam's moments stayed keyed by the caller's parameters:
    # a candidate's step on the copies found no state and began its moments afresh.
    model = torch.nn.Linear(3, 2)
    optimizer = torch.optim.Adam(model.parameters(), lr=0.1)
    model(torch.ones(1, 3)).sum().backward()
    optimizer.step()  # the fixture's optimizer has taken a step: it has state

    copied_model, copied_optimizer = clone_value((model, optimizer))
    copied_optimizer_first, copied_model_after = clone_value((optimizer, model))

    first = copied_optimizer_first.param_groups[0]["params"]
    assert first == list(copied_model_after.parameters())  # either order: one set of copies
    copied_params = list(copied_model.parameters())
    assert copied_optimizer.param_groups[0]["params"] == copied_params
    assert set(map(id, copied_optimizer.state)) == set(map(id, copied_params))
    for original, twin in zip(model.parameters(), copied_params, strict=True):
        moments, copied_moments = optimizer.state[original], copied_optimizer.state[twin]
        assert torch.equal(moments["exp_avg"], copied_moments["exp_avg"])
        assert moments["exp_avg"].data_ptr() != copied_moments["exp_avg"].data_ptr()


def test_models_and_optimizers_compare_by_their_state():
    # Compared by `==`, which is identity for a module: a right candidate returning the
    # model it trained failed with "expected Linear(...), got Linear(...)".
    model = torch.nn.Sequential(torch.nn.Linear(3, 2), torch.nn.BatchNorm1d(2))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    model(torch.ones(4, 3)).sum().backward()
    optimizer.step()
    trained_alike = clone_value((model, optimizer))
    assert compare_outputs((model, optimizer), trained_alike) is None

    nudged, nudged_optimizer = clone_value((model, optimizer))
    with torch.no_grad():
        nudged[0].bias[1] += 0.5
    message = compare_outputs(model, nudged)
    assert message is not None
    assert message.startswith("output.state_dict()['0.bias']: 1 of 2 elements differ")
    nudged_optimizer.param_groups[0]["lr"] = 0.2
    message = compare_outputs(optimizer, nudged_optimizer)
    assert message is not None and "['lr']: expected 0.1, got 0.2" in message


@pytest.mark.parametrize("layout", [torch.strided, torch.jagged], ids=["strided", "jagged"])
@pytest.mark.filterwarnings("ignore:The PyTorch API of nested tensors:UserWarning")
def test_nested_tensors_compare_row_by_row(layout: Any):
    # They have no dense values to read: the check raised torch's "to_dense does not support
    # layout Jagged" out of every candidate's test, the reference's own included.
    def nested(*rows: list[float]) -> Any:
        return torch.nested.nested_tensor([torch.tensor(row) for row in rows], layout=layout)

    reference = nested([1.0, 2.0], [3.0, 4.0, 5.0])
    assert compare_outputs(reference, nested([1.0, 2.0], [3.0, 4.0, 5.0])) is None
    message = compare_outputs(reference, nested([1.0, 2.0], [3.0, 4.5, 5.0]))
    assert message is not None and message.startswith("output[1]: 1 of 3 elements differ")
    message = compare_outputs(reference, torch.ones(2, 3))
    assert message is not None and "nested" in message


def test_tensors_of_one_storage_are_copied_as_views_of_one_copy_of_it():
    # A fixture's `cache` and its view `slot` were copied apart, as NumPy's were: a candidate
    # writing into `slot` left the copy of `cache` the body returned as it was, and a wrong
    # candidate that wrote nothing passed its check.
    cache = torch.zeros(4, 8)
    slot = cache[:, :2]
    for given, (cache_at, slot_at) in (((cache, slot), (0, 1)), ((slot, cache), (1, 0))):
        copies = clone_value(given)
        copies[slot_at][:] = 1
        assert float(copies[cache_at][:, :2].sum()) == 8
        assert float(copies[cache_at][:, 2:].sum()) == 0
        assert copies[slot_at].stride() == slot.stride()
        assert copies[cache_at].untyped_storage().data_ptr() != cache.untyped_storage().data_ptr()
    assert float(cache.sum()) == 0  # the caller's untouched


def test_tensors_of_one_address_with_storages_of_their_own_sizes_keep_every_value():
    # `torch.from_numpy` of an array and of a prefix of it makes two storages starting at one
    # address: the prefix's, met first, was the one copied, and the whole tensor's copy,
    # made over it, read past its end values the caller never gave.
    values = np.arange(6.0)
    head, whole = clone_value((torch.from_numpy(values[:3]), torch.from_numpy(values)))
    assert whole.tolist() == values.tolist() and head.tolist() == values[:3].tolist()
    head[0] = 9
    assert float(whole[0]) == 9 and values[0] == 0


def test_a_tensor_and_a_numpy_array_of_one_memory_are_copied_as_views_of_one_copy():
    # Each kind keyed by its own allocation, `torch.from_numpy(a)` given beside `a` was
    # copied apart: a candidate writing into the tensor left the copy of `a` the body
    # returned as it was, and a wrong candidate that wrote nothing passed its check.
    array = np.zeros((4, 6), dtype=np.float32)
    for given in ((array, torch.from_numpy(array)[:, 2]), (torch.from_numpy(array).t(), array)):
        copies = clone_value(given)
        array_copy, tensor_copy = copies if isinstance(copies[0], np.ndarray) else copies[::-1]
        tensor_copy[(1,) * tensor_copy.dim()] = 7
        assert array_copy.sum() == 7 and array.sum() == 0
        assert tensor_copy.stride() == next(v for v in given if torch.is_tensor(v)).stride()
    tensor = torch.zeros(3, 4)
    tensor_copy, array_copy = clone_value((tensor, tensor.numpy()[1:]))
    array_copy[0, 0] = 5
    assert float(tensor_copy[1, 0]) == 5 and float(tensor.sum()) == 0


def test_tensors_over_overlapping_storages_of_their_own_are_copied_as_views_of_one_copy():
    # `torch.from_numpy(a[2:])` beside `torch.from_numpy(a)`, `a` no input, are two storages
    # at their own addresses over one memory: keyed by storage, they were copied apart, and
    # a candidate writing into one left the other's copy as it was.
    array = np.arange(8.0)
    whole, tail = clone_value((torch.from_numpy(array), torch.from_numpy(array[2:])))
    assert whole.tolist() == array.tolist() and tail.tolist() == array[2:].tolist()
    tail[0] = -1
    assert float(whole[2]) == -1 and array[2] == 2
    # A NumPy array and a tensor over one bytearray, each of its own.
    buffer = bytearray(np.arange(4, dtype=np.float32).tobytes())
    tensor = torch.frombuffer(buffer, dtype=torch.float32, offset=4)
    tensor_copy, array_copy = clone_value((tensor, np.frombuffer(buffer, np.float32)))
    array_copy[1] = 9
    assert float(tensor_copy[0]) == 9 and tensor_copy.stride() == tensor.stride()
    # Storages of one memory that do not overlap are copied apart, as each alone is.
    head, tail = clone_value((torch.from_numpy(array[:2]), torch.from_numpy(array[2:])))
    head += 1
    assert tail.tolist() == array[2:].tolist()
    assert head.untyped_storage().nbytes() == 16


def test_a_tensor_at_an_offset_of_no_whole_element_in_a_numpy_input_is_made_in_its_copy():
    # A float64 tensor 4 bytes into a float32 array: no storage offset of whole elements
    # places it in the array's copy, and it was copied apart, so a write through the array
    # was not seen in the tensor's copy.
    array = np.arange(8, dtype=np.float32)
    tensor = torch.frombuffer(array, dtype=torch.float64, offset=4, count=2)
    array_copy, tensor_copy = clone_value((array, tensor))
    assert tensor_copy.tolist() == tensor.tolist() and tensor_copy.stride() == (1,)
    assert tensor_copy.data_ptr() - array_copy.__array_interface__["data"][0] == 4
    array_copy[1:3] = np.array([1.5]).view(np.float32)
    assert float(tensor_copy[0]) == 1.5 and array[1] == 1


def test_a_tensor_past_the_arrays_looked_at_is_copied_apart_from_their_copy():
    # A tensor of the storage that the look for views passed over (in an object array) lay
    # outside the NumPy array its storage's other tensor lies in, or past the span of the
    # borrowed memory the others overlap: made in that copy, it raised RuntimeError, which
    # failed every candidate as its own.
    buffer = bytearray(np.arange(1024, dtype=np.float32).tobytes())
    tensor = torch.from_numpy(np.frombuffer(buffer, np.float32))
    batch = np.empty(1, dtype=object)
    for start, array_at, passed_over in ((500, 500, 0), (0, 2, 100)):
        array = np.frombuffer(buffer, np.float32, offset=4 * array_at)
        batch[0] = tensor[passed_over : passed_over + 4]
        head, window, copied = clone_value((tensor[start : start + 4], array[0:4], batch))
        head[array_at - start] = -1
        assert window[0] == -1 and array[0] == array_at
        assert copied[0].tolist() == list(range(passed_over, passed_over + 4))


def test_tensors_beside_numpy_arrays_have_each_address_read_once(addresses_read):
    # Looking for the NumPy array a tensor lies in read every owner's address again for
    # every tensor: a call of 100 arrays and 100 tensors, none sharing memory, took 170 ms
    # to copy (2 ms before the look) on a 2-core VM.
    arrays = [np.zeros(8) for _ in range(20)]
    tensors = [torch.zeros(8) for _ in range(20)]
    clone_value([*arrays, *tensors])
    assert len(addresses_read) == len(arrays) + len(tensors)
    del addresses_read[:]
    clone_value(tensors)  # no NumPy array to lie in
    assert not addresses_read
    array = np.zeros(8)
    copies = clone_value([*arrays, array, torch.from_numpy(array)[2:]])
    copies[-1][0] = 1  # still found in the array's memory
    assert copies[-2][2] == 1 and array[2] == 0


def test_tensors_of_one_storage_that_do_not_overlap_are_copied_apart_as_each_alone_is():
    big = torch.zeros(1000)
    first, second = clone_value((big[:500], big[500:]))
    assert first.untyped_storage().nbytes() == second.untyped_storage().nbytes() == 2000
    first += 1
    assert float(second.sum()) == 0


def test_a_tensor_that_records_its_gradient_and_its_view_are_copied_apart_as_before():
    # A view made over a copied storage would be no leaf, and lose its gradient's graph.
    weight = torch.zeros(4, 8, requires_grad=True)
    copied, view = clone_value((weight, weight[:, :2].detach()))
    assert copied.is_leaf and copied.requires_grad and not view.requires_grad


@pytest.mark.parametrize(
    ("dtype", "unit"),
    [("float64", "fp64"), ("float32", "fp32"), ("bfloat16", "bf16"), ("int32", "int32")],
)
def test_a_works_dtype_may_be_a_tensors_own(dtype: str, unit: str) -> None:
    # `Work(dtype=x.dtype)` of a tensor x, as the README writes it of an array, failed its
    # test: "dtype torch.float64 is neither a NumPy dtype nor a unit the peaks measure".
    work = Work(compute_ops=1e6, bytes=1e6, dtype=getattr(torch, dtype))
    assert work.unit == unit
