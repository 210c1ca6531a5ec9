"""The key of a marked test's group: its parameters' ids, a numbered one by its value."""

from __future__ import annotations

import numpy as np
import pytest

from pytest_autotune.group_key import plain_text


@pytest.mark.parametrize(
    ("value", "text"),
    [
        ((1000,), "(1000,)"),
        ((64, 64), "(64, 64)"),
        ([1, 2.5, "x", None, True], "[1, 2.5, 'x', None, True]"),
        (np.int64(3), "3"),  # the same text under NumPy 1 and 2, whose reprs differ
        (np.float32(0.5), "0.5"),
        (np.dtype("float32"), "float32"),
        (((1, 2), (3, 4)), "((1, 2), (3, 4))"),
    ],
)
def test_a_plain_value_has_a_text_that_every_process_reads_the_same(value, text):
    assert plain_text(value) == text


@pytest.mark.parametrize(
    "value",
    [object(), {"n": 1}, np.ones(3), (object(),), tuple(range(40)), ((((1,),),),)],
    ids=["object", "dict", "array", "tuple of an object", "too long", "too deep"],
)
def test_a_value_that_is_not_plain_has_no_text(value):
    # Kept by pytest's numbered id: an object's repr holds its address, an array is data.
    assert plain_text(value) is None
