"""polars outputs compared by value: a DataFrame's `==` gives a frame, which read as
uncomparable, and every candidate returning one failed, the reference included. Skipped
without polars (not a dependency)."""

from __future__ import annotations

import pytest

from pytest_autotune import compare_outputs

pl = pytest.importorskip("polars")


def test_frames_that_agree_within_the_tolerances_compare_equal() -> None:
    reference = pl.DataFrame({"x": [1.0, 2.0, 3.0], "y": ["a", None, "c"], "n": [1, None, 3]})
    close = pl.DataFrame({"x": [1.0, 2.0, 3.0000001], "y": ["a", None, "c"], "n": [1, None, 3]})
    assert compare_outputs(reference, close) is None


def test_frames_that_differ_name_the_column_and_the_element() -> None:
    reference = pl.DataFrame({"x": [1.0, 2.0, 3.0], "y": ["a", "b", "c"]})

    values = compare_outputs(reference, pl.DataFrame({"x": [1.0, 2.5, 3.0], "y": ["a", "b", "c"]}))
    assert values is not None and values.startswith("output['x']: 1 of 3 elements differ")
    assert "first at [1]" in values
    renamed = compare_outputs(reference, reference.rename({"y": "z"}))
    assert renamed == "output.columns[1]: expected 'y', got 'z'"
    cast = compare_outputs(reference, reference.with_columns(pl.col("x").cast(pl.Float32)))
    assert cast == "output['x']: dtype differs: expected Float64, got Float32"


def test_a_series_compares_its_name_its_nulls_and_its_values() -> None:
    series = pl.Series("v", [1.0, None, 3.0])
    assert compare_outputs(series, pl.Series("w", [1.0, None, 3.0])) == (
        "output.name: expected 'v', got 'w'"
    )
    nulls = compare_outputs(series, pl.Series("v", [1.0, 2.0, None]))
    assert nulls is not None and nulls.startswith("output (where null)")
    assert compare_outputs(series, pl.Series("v", [1.0, None, 3.5])) is not None


def test_a_lazy_frame_is_said_to_be_a_query_whose_result_compares() -> None:
    frame = pl.DataFrame({"x": [1.0, 2.0]})
    message = compare_outputs(frame.lazy(), frame.lazy())
    assert message is not None and "return its .collect()" in message
    assert "autotune_compare" not in message
