"""Keys: `anchor`, the autotune level, and the forms a key may take in memory and in files."""

import json
import os
import subprocess
import sys
import textwrap
import threading
from dataclasses import dataclass
from pathlib import Path

import pytest

from pytest_autotune.tune.key import (
    AutotuneKey,
    AutotuneLevel,
    anchor,
    autotune_level,
    autotune_level_scope,
    key_to_json,
    set_autotune_level,
    stable_key,
)

REPO = Path(__file__).resolve().parents[2]

BALANCED = AutotuneLevel.BALANCED
MINIMAL = AutotuneLevel.MINIMAL
EXTENSIVE = AutotuneLevel.EXTENSIVE
FULL = AutotuneLevel.FULL


@dataclass(frozen=True)
class SumKey(AutotuneKey):
    n: int
    dtype: str


@dataclass(frozen=True)
class ShapeKey(AutotuneKey):
    rows: int
    cols: int
    transposed: bool = False
    scale: float | None = None


@pytest.fixture
def process_level():
    """The process-wide level, restored to the environment's after the test."""
    yield
    set_autotune_level(None)


# -- anchor ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("x", "anchored"),
    [(1, 1), (2, 2), (3, 4), (4, 4), (5, 8), (1000, 1024), (1024, 1024), (1025, 2048)],
)
def test_anchor_rounds_up_to_the_next_power_of_two(x, anchored):
    assert anchor(x, level=BALANCED) == anchored


def test_anchor_keeps_a_power_of_two_as_it_is():
    assert [anchor(1 << k, level=BALANCED) for k in range(40)] == [1 << k for k in range(40)]


def test_anchor_is_never_below_its_input():
    for level in (MINIMAL, BALANCED, EXTENSIVE, FULL):
        for base in (None, 1.5, 2, 3, 4, 10):
            if level is EXTENSIVE and base == 1.5:
                continue  # 0.75 x 1.5 is not a base
            for x in range(1, 3000):
                assert anchor(x, base=base, level=level) >= x, (level, base, x)


def test_nearby_sizes_share_one_anchor():
    assert {anchor(x, level=BALANCED) for x in range(513, 1025)} == {1024}


def test_anchor_of_zero_or_one_is_one():
    assert anchor(0, level=BALANCED) == 1
    assert anchor(1, level=BALANCED) == 1


def test_anchor_clamps_to_max():
    assert anchor(100, max=64, level=BALANCED) == 64
    assert anchor(50, max=64, level=BALANCED) == 64
    assert anchor(30, max=64, level=BALANCED) == 32


def test_anchor_clamps_to_min():
    assert anchor(3, min=16, level=BALANCED) == 16
    assert anchor(17, min=16, level=BALANCED) == 32


def test_anchor_clamps_to_min_after_max_when_they_cross():
    assert anchor(100, max=8, min=16, level=BALANCED) == 16


@pytest.mark.parametrize(("x", "anchored"), [(2, 4), (3, 4), (4, 4), (5, 16), (17, 64), (65, 256)])
def test_anchor_rounds_up_to_a_power_of_the_base(x, anchored):
    assert anchor(x, base=4, level=BALANCED) == anchored


@pytest.mark.parametrize(("x", "anchored"), [(2, 3), (3, 7), (7, 16), (16, 40), (17, 40)])
def test_the_minimal_level_anchors_to_powers_of_one_and_a_quarter_times_the_base(x, anchored):
    # Powers of 2.5, rounded up: 1, 2.5, 6.25, 15.625, 39.0625.
    assert anchor(x, level=MINIMAL) == anchored


@pytest.mark.parametrize(("x", "anchored"), [(2, 3), (3, 4), (4, 6), (5, 6), (6, 8), (17, 18)])
def test_the_extensive_level_anchors_to_powers_of_three_quarters_of_the_base(x, anchored):
    # Powers of 1.5, rounded up: 1, 1.5, 2.25, 3.375, 5.0625, 7.59375, 11.39, 17.09.
    assert anchor(x, level=EXTENSIVE) == anchored


def test_the_minimal_level_scales_a_given_base_too():
    # base 4 x 1.25 = 5: powers 1, 5, 25, 125.
    assert [anchor(x, base=4, level=MINIMAL) for x in (2, 6, 26)] == [5, 25, 125]


def test_the_full_level_does_not_anchor():
    assert [anchor(x, level=FULL) for x in (1, 3, 5, 1000, 1025)] == [1, 3, 5, 1000, 1025]


def test_the_full_level_still_clamps():
    assert anchor(1000, max=512, level=FULL) == 512
    assert anchor(3, min=8, level=FULL) == 8


def test_coarser_levels_give_fewer_distinct_keys():
    def keys(level):
        return len({anchor(x, level=level) for x in range(1, 100_000)})

    assert keys(MINIMAL) < keys(BALANCED) < keys(EXTENSIVE) < keys(FULL)


def test_a_base_that_the_level_scales_to_one_or_below_is_refused():
    with pytest.raises(ValueError, match="anchor base must be above 1"):
        anchor(10, base=1.2, level=EXTENSIVE)
    with pytest.raises(ValueError, match="anchor base must be above 1"):
        anchor(10, base=1, level=BALANCED)


def test_anchor_follows_the_process_level_when_none_is_given(process_level):
    set_autotune_level(FULL)
    assert anchor(1000) == 1000
    set_autotune_level(BALANCED)
    assert anchor(1000) == 1024


# -- the level ------------------------------------------------------------------------------


def test_the_level_defaults_to_balanced(process_level, monkeypatch):
    monkeypatch.delenv("PYTEST_AUTOTUNE_LEVEL", raising=False)
    set_autotune_level(None)
    assert autotune_level() is BALANCED


def test_the_level_comes_from_the_environment(process_level, monkeypatch):
    monkeypatch.setenv("PYTEST_AUTOTUNE_LEVEL", " Extensive ")
    set_autotune_level(None)
    assert autotune_level() is EXTENSIVE


def test_a_level_set_in_code_wins_over_the_environment(process_level, monkeypatch):
    monkeypatch.setenv("PYTEST_AUTOTUNE_LEVEL", "extensive")
    set_autotune_level(MINIMAL)
    assert autotune_level() is MINIMAL


def test_a_bad_level_in_the_environment_names_the_variable(process_level, monkeypatch):
    monkeypatch.setenv("PYTEST_AUTOTUNE_LEVEL", "turbo")
    set_autotune_level(None)
    with pytest.raises(ValueError, match=r"^PYTEST_AUTOTUNE_LEVEL: autotune level must be one of"):
        autotune_level()


def test_a_scope_sets_the_level_inside_it_and_restores_the_one_before_after_it(process_level):
    set_autotune_level(MINIMAL)
    with autotune_level_scope(FULL):
        assert (autotune_level(), anchor(1000)) == (FULL, 1000)
        with autotune_level_scope(EXTENSIVE):
            assert autotune_level() is EXTENSIVE
        with autotune_level_scope(None):
            assert autotune_level() is FULL
        assert autotune_level() is FULL
    assert autotune_level() is MINIMAL


def test_a_scope_left_by_an_exception_restores_the_level(process_level):
    set_autotune_level(BALANCED)
    with pytest.raises(RuntimeError), autotune_level_scope(FULL):
        raise RuntimeError
    assert autotune_level() is BALANCED


def test_a_scope_wins_over_the_process_level_set_inside_it(process_level):
    with autotune_level_scope(FULL):
        set_autotune_level(MINIMAL)
        assert autotune_level() is FULL
    assert autotune_level() is MINIMAL


def test_a_scope_is_its_own_threads_and_another_thread_sees_the_process_level(process_level):
    set_autotune_level(MINIMAL)
    seen = []
    with autotune_level_scope(FULL):
        thread = threading.Thread(target=lambda: seen.append(autotune_level()))
        thread.start()
        thread.join()
    assert seen == [MINIMAL]


def test_parsing_a_level_ignores_case_and_spaces():
    assert AutotuneLevel.parse("  FULL\n", "here") is FULL


def test_a_bad_level_names_its_source_the_choices_and_the_value():
    with pytest.raises(ValueError) as error:
        AutotuneLevel.parse("turbo", "autotune.yaml: level")
    assert str(error.value) == (
        "autotune.yaml: level: autotune level must be one of"
        " minimal, balanced, extensive, full, got 'turbo'"
    )


# -- AutotuneKey ----------------------------------------------------------------------------


def test_a_dataclass_key_is_hashable_and_compares_by_value():
    assert SumKey(1024, "float32") == SumKey(1024, "float32")
    assert hash(SumKey(1024, "float32")) == hash(SumKey(1024, "float32"))
    assert SumKey(1024, "float32") != SumKey(1024, "float64")
    cache = {SumKey(1024, "float32"): 1}
    assert cache[SumKey(1024, "float32")] == 1


def test_a_dataclass_key_reads_as_its_class_and_fields():
    assert str(SumKey(1024, "float32")) == "SumKey(n=1024, dtype=float32)"
    assert str(ShapeKey(2, 3)) == "ShapeKey(rows=2, cols=3, transposed=False, scale=None)"


def test_a_dataclass_key_survives_a_json_round_trip():
    for key in (SumKey(1024, "float32"), ShapeKey(2, 3), ShapeKey(2, 3, True, 0.5)):
        text = json.dumps(key.to_json())
        assert type(key).from_json(json.loads(text)) == key


def test_a_dataclass_key_is_a_json_object_of_its_fields():
    assert SumKey(8, "int8").to_json() == {"n": 8, "dtype": "int8"}


def test_reading_a_key_with_an_unknown_field_names_the_class_and_the_field():
    with pytest.raises(ValueError, match=r"SumKey: unknown fields \['size'\]"):
        SumKey.from_json({"n": 8, "dtype": "int8", "size": 3})


# -- stable_key -----------------------------------------------------------------------------


def test_equal_keys_have_the_same_stable_form():
    assert stable_key(SumKey(1024, "float32")) == stable_key(SumKey(1024, "float32"))


def test_different_keys_have_different_stable_forms():
    forms = {
        stable_key(key)
        for key in (
            SumKey(1024, "float32"),
            SumKey(1024, "float64"),
            SumKey(2048, "float32"),
            "1024",
            1024,
            (1024,),
            (1024, "float32"),
            ("float32", 1024),
            ((1024,), "float32"),
        )
    }
    assert len(forms) == 9


def test_the_stable_form_is_compact_sorted_json():
    assert stable_key(SumKey(1024, "float32")) == '{"dtype":"float32","n":1024}'
    assert stable_key((1, ("a", 2))) == '[1,["a",2]]'
    assert stable_key("x") == '"x"'
    assert stable_key(7) == "7"


def test_the_stable_form_does_not_depend_on_the_order_fields_are_declared_in():
    @dataclass(frozen=True)
    class Reordered(AutotuneKey):
        dtype: str
        n: int

    assert stable_key(Reordered("float32", 1024)) == stable_key(SumKey(1024, "float32"))


def test_the_stable_form_is_the_same_in_another_process():
    # Another process hashes strings with another seed and declares the fields in
    # another order; the cache file must still find the key.
    script = textwrap.dedent(
        """
        from dataclasses import dataclass
        from pytest_autotune.tune.key import AutotuneKey, stable_key

        @dataclass(frozen=True)
        class SumKey(AutotuneKey):
            dtype: str
            n: int

        print(stable_key(SumKey("float32", 1024)))
        print(stable_key(("float32", 1024, ("nested", 3))))
        print(stable_key("float32"))
        """
    )
    env = {**os.environ, "PYTHONPATH": str(REPO), "PYTHONHASHSEED": "12345"}
    out = subprocess.run(
        [sys.executable, "-c", script], env=env, capture_output=True, text=True, check=True
    ).stdout.splitlines()
    assert out == [
        stable_key(SumKey(1024, "float32")),
        stable_key(("float32", 1024, ("nested", 3))),
        stable_key("float32"),
    ]


# -- plain keys -----------------------------------------------------------------------------


def test_plain_str_int_and_tuple_keys_are_accepted():
    assert key_to_json("sum") == "sum"
    assert key_to_json(1024) == 1024
    assert key_to_json((1024, "float32", (2, 3))) == [1024, "float32", [2, 3]]


def test_a_tuple_may_hold_dataclass_keys():
    assert key_to_json((SumKey(1, "a"), 2)) == [{"n": 1, "dtype": "a"}, 2]


@pytest.mark.parametrize("bad", [[1, 2], {"n": 1}, object(), b"bytes", (1, [2])])
def test_a_key_of_another_type_is_a_type_error_naming_the_key_and_its_type(bad):
    inner = [2] if bad == (1, [2]) else bad
    with pytest.raises(TypeError) as error:
        stable_key(bad)
    message = str(error.value)
    assert repr(inner) in message
    assert type(inner).__name__ in message
    assert "is not an AutotuneKey, str, int or tuple" in message
