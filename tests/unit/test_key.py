"""Keys: `anchor`, the autotune level, and the forms a key may take in memory and in files."""

import json
import math
import os
import subprocess
import sys
import textwrap
import threading
import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

from pytest_autotune.tune.errors import ConfigWarning
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


def test_anchor_of_a_huge_size_in_a_whole_base_is_an_exact_power_of_it():
    # Float powers are not powers of the base past 2**53 (3**35 anchored to 1.5e17, above
    # 3**36), and past 1e308 they overflowed.
    for base, k in ((3, 35), (3, 40), (10, 23), (7, 30), (2, 1100)):
        assert anchor(base**k, base=base, level=BALANCED) == base**k
        assert anchor(base**k + 1, base=base, level=BALANCED) == base ** (k + 1)
    assert anchor(2**1100 - 1, level=BALANCED) == 2**1100
    assert anchor(2**1100 - 1, base=4, level=MINIMAL) == 5**474  # 5**473 < 2**1100


def test_anchor_of_a_size_past_the_largest_float_in_a_fractional_base_is_a_power_of_it():
    # The float power 1.5**n overflowed (OverflowError: Numerical result out of range) for
    # 10**400 at base 1.5, and at base 2 under MINIMAL (2.5); an integer base already worked.
    from fractions import Fraction

    scaled_bases = ((1.5, BALANCED, 1.5), (None, MINIMAL, 2.5), (1.5, EXTENSIVE, 1.125))
    for base, level, scaled in scaled_bases:
        b = Fraction(scaled)
        result = anchor(10**400, base=base, level=level)
        assert result >= 10**400
        power = b
        while power < 10**400:  # the first power of the base at or above the size
            power *= b
        assert result == math.ceil(power)
    assert int(1.7e308) <= anchor(1.7e308, base=1.5, level=BALANCED) <= int(1.7e308) * 3 // 2


def test_nearby_sizes_share_one_anchor():
    assert {anchor(x, level=BALANCED) for x in range(513, 1025)} == {1024}


def test_anchor_of_one_is_one_and_of_zero_is_zero_as_in_the_seed():
    # An empty dimension keeps a key of its own: a winner tuned for one element is not
    # served to an empty input that it may not handle.
    for level in (MINIMAL, BALANCED, EXTENSIVE, FULL):
        assert anchor(1, level=level) == 1
        assert anchor(0, level=level) == 0
    assert anchor(0, min=16, level=BALANCED) == 16


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


def test_at_the_full_level_a_float_size_rounds_up_as_at_every_level():
    # 5.5 gave 5, below the size, where every other level rounds up.
    assert anchor(5.5, level=FULL) == 6
    assert anchor(5.0, level=FULL) == 5
    assert anchor(5.5, level="balanced") == 8


def test_at_the_full_level_a_numpy_integer_is_its_own_whole_value():
    # It went through a float: np.int64(2**62 + 1) came back 2**62, below the size, and
    # np.uint64(2**64 - 1) came back 2**64.
    for size in (2**62 + 1, 2**53 + 1):
        assert anchor(np.int64(size), level=FULL) == size
    assert anchor(np.uint64(2**64 - 1), level=FULL) == 2**64 - 1
    assert type(anchor(np.int64(7), level=FULL)) is int


def test_the_full_level_still_clamps():
    assert anchor(1000, max=512, level=FULL) == 512
    assert anchor(3, min=8, level=FULL) == 8


def test_anchor_takes_a_level_by_name_as_set_autotune_level_does():
    # `anchor(n, level="full")` raised KeyError: 'full', far from saying what was wrong.
    assert anchor(1000, level="full") == 1000
    assert anchor(1000, level="Balanced") == 1024
    with pytest.raises(ValueError, match=r"anchor: autotune level must be one of .*'fast'"):
        anchor(1000, level="fast")


def test_coarser_levels_give_fewer_distinct_keys():
    def keys(level):
        return len({anchor(x, level=level) for x in range(1, 100_000)})

    assert keys(MINIMAL) < keys(BALANCED) < keys(EXTENSIVE) < keys(FULL)


@pytest.mark.parametrize(
    ("size", "error", "said"),
    [
        (float("nan"), ValueError, "expected a finite size >= 0, got nan"),
        (float("inf"), ValueError, "expected a finite size >= 0, got inf"),
        (-5, ValueError, "expected a finite size >= 0, got -5"),
        ("100", TypeError, "expected a size (a number >= 0), got '100'"),
        (None, TypeError, "expected a size (a number >= 0), got None"),
    ],
)
def test_what_is_not_a_size_is_refused_in_one_line(size, error, said):
    # NaN raised "cannot convert float NaN to integer" from inside the arithmetic, a string
    # "'<=' not supported", and a negative size anchored to 0 without a word.
    for level in (MINIMAL, FULL):
        with pytest.raises(error) as info:
            anchor(size, level=level)
        assert str(info.value) == f"anchor: {said}"


def test_a_negative_int_too_large_for_a_float_is_refused_as_a_size():
    with pytest.raises(ValueError, match=r"^anchor: expected a finite size >= 0, got -1000"):
        anchor(-(10**400))


def test_numpy_sizes_anchor_as_python_numbers():
    assert anchor(np.int64(100)) == anchor(100) == 128
    assert anchor(np.float32(3.5)) == anchor(3.5) == 4
    assert anchor(np.int32(0)) == 0


def test_a_base_of_one_or_below_is_refused_at_every_level():
    for level in (MINIMAL, BALANCED, EXTENSIVE, FULL):
        with pytest.raises(ValueError, match="anchor base must be above 1, got 1"):
            anchor(10, base=1, level=level)


def test_a_base_the_level_scales_below_one_point_one_anchors_to_powers_of_one_point_one():
    # The seed's floor: a key generator written with base=1.2 works at every level the
    # process may be set to, extensive (0.9) included, rather than raising there only.
    for base in (1.2, 1.4):
        assert anchor(2, base=base, level=EXTENSIVE) == 3  # ceil(1.1**8) = ceil(2.14)
        assert anchor(10, base=base, level=EXTENSIVE) == 11  # ceil(1.1**25) = ceil(10.83)
    assert anchor(10, base=1.05, level=BALANCED) == 11


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


def test_a_bad_level_in_the_environment_is_left_out_with_a_warning_naming_it(
    process_level, monkeypatch
):
    # Raised, it failed every `anchor` of every call of a library, whose tuner left the
    # same variable out with a ConfigWarning.
    monkeypatch.setenv("PYTEST_AUTOTUNE_LEVEL", "turbo")
    set_autotune_level(None)
    with pytest.warns(
        ConfigWarning,
        match=r"^PYTEST_AUTOTUNE_LEVEL: autotune level must be one of minimal, balanced,"
        r" extensive, full, got 'turbo'; left out, keys are anchored at the balanced level$",
    ) as caught:
        assert anchor(1000) == 1024
    assert [w.filename for w in caught] == [__file__]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # said once
        assert autotune_level() is BALANCED


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


def test_a_level_may_be_set_by_its_name_as_the_marker_and_the_environment_take_it(
    process_level,
):
    set_autotune_level("full")
    assert (autotune_level(), anchor(1000)) == (FULL, 1000)
    with autotune_level_scope(" Minimal "):
        assert autotune_level() is MINIMAL
    assert autotune_level() is FULL


def test_a_bad_level_name_fails_where_it_is_set_not_in_a_later_anchor(process_level):
    set_autotune_level(BALANCED)
    with pytest.raises(ValueError, match=r"^set_autotune_level: .* got 'turbo'$"):
        set_autotune_level("turbo")
    scope = autotune_level_scope("turbo")
    with pytest.raises(ValueError, match=r"^autotune_level_scope: .* got 'turbo'$"):
        scope.__enter__()
    assert (autotune_level(), anchor(1000)) == (BALANCED, 1024)


@pytest.mark.parametrize("level", [5, 1.0, object()])
def test_a_level_that_is_no_level_fails_where_it_is_set(process_level, level):
    # Kept as given, 5 failed as `KeyError: 5` in a later anchor.
    set_autotune_level(BALANCED)
    said = r" expected an AutotuneLevel or its name \('minimal', .*\), got "
    with pytest.raises(TypeError, match=r"^set_autotune_level:" + said):
        set_autotune_level(level)
    with pytest.raises(TypeError, match=r"^autotune_level_scope:" + said):
        autotune_level_scope(level).__enter__()
    with pytest.raises(TypeError, match=r"^anchor:" + said):
        anchor(100, level=level)
    assert (autotune_level(), anchor(1000)) == (BALANCED, 1024)


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


@dataclass(frozen=True)
class TiledKey(AutotuneKey):
    shape: tuple[int, ...]
    tiles: tuple[tuple[int, int], ...] = ()


def test_a_dataclass_key_with_tuple_fields_survives_a_json_round_trip_hashable():
    # JSON has no tuple: the fields came back as lists, a key unequal to the one written
    # and unhashable ("unhashable type: 'list'" at its first lookup).
    key = TiledKey((64, 128), ((8, 8), (16, 4)))
    read = TiledKey.from_json(json.loads(json.dumps(key.to_json())))
    assert read == key
    assert {read: 1}[key] == 1


class UndecoratedKey(AutotuneKey):
    """A key written without @dataclass, as the seed's `#[derive(AutotuneKey)]` suggests."""

    def __init__(self, n):
        self.n = n

    def __hash__(self):
        return hash(self.n)

    def __eq__(self, other):
        return isinstance(other, UndecoratedKey) and self.n == other.n


def test_a_key_class_without_dataclass_is_named_with_the_decorator_it_lacks():
    # Its first lookup failed in dataclasses.fields: "must be called with a dataclass type
    # or instance", naming neither the key nor what to do.
    message = r"autotune key class UndecoratedKey is not a dataclass: decorate it with @data"
    with pytest.raises(TypeError, match=message):
        stable_key(UndecoratedKey(8))
    with pytest.raises(TypeError, match=message):
        str(UndecoratedKey(8))
    with pytest.raises(TypeError, match=message):
        UndecoratedKey.from_json({"n": 8})


def test_a_dataclass_key_is_a_json_object_of_its_fields():
    assert SumKey(8, "int8").to_json() == {"n": 8, "dtype": "int8"}


def test_reading_a_key_with_an_unknown_field_names_the_class_and_the_field():
    with pytest.raises(ValueError, match=r"SumKey: unknown fields \['size'\]"):
        SumKey.from_json({"n": 8, "dtype": "int8", "size": 3})


def test_reading_a_key_of_another_form_or_with_a_missing_field_names_the_class():
    # A record's key read back with the wrong class: a tuple key's list read as "unknown
    # fields [8, 'int8']", a missing field as the dataclass's own `__init__() missing 1
    # required positional argument`, naming no JSON.
    with pytest.raises(TypeError, match=r"^SumKey: expected a JSON object of its fields"):
        SumKey.from_json([8, "int8"])
    with pytest.raises(ValueError, match=r"^SumKey: missing fields \['dtype'\]"):
        SumKey.from_json({"n": 8})


@pytest.mark.parametrize(
    ("value", "kind"),
    [
        # Float32DType from NumPy 1.25, dtype[float32] before (pyproject.toml allows 1.24).
        (np.dtype("float32"), type(np.dtype("float32")).__name__),
        ((2, np.dtype("int32")), type(np.dtype("int32")).__name__),
    ],
)
def test_a_key_field_json_cannot_hold_is_named_with_the_key_and_its_type(value, kind):
    key = SumKey(value, "float32")
    with pytest.raises(TypeError) as error:
        stable_key(key)
    message = str(error.value)
    assert message.startswith(f"autotune key {key}: field 'n' holds ")
    assert f"of type {kind}; a key field must be a str, int, float, bool or None" in message


def test_an_enum_key_field_is_refused_with_the_fix_for_an_enum():
    import enum

    class Layout(enum.Enum):
        ROW = "row"

    with pytest.raises(TypeError, match=r"store its \.name \('ROW'\) or \.value") as error:
        stable_key(SumKey(8, Layout.ROW))  # type: ignore[arg-type]
    assert "str(dtype)" not in str(error.value)


def test_a_key_field_may_be_a_tuple_of_plain_values():
    assert stable_key(SumKey((2, 3), "float32")) == '{"dtype":"float32","n":[2,3]}'


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


def test_numbers_python_holds_equal_have_one_stable_form():
    # They equal and hash alike, so the in-memory cache serves one tuning to them all; the
    # file must too, or a key written as 1.0 is tuned again by the next process as 1.
    assert stable_key(1.0) == stable_key(1) == stable_key(np.float32(1.0)) == "1"
    assert stable_key(SumKey(np.float64(8.0), "f4")) == stable_key(SumKey(8, "f4"))
    assert stable_key((2.0, (3.0, "a"))) == stable_key((2, (3, "a")))
    assert stable_key(0.5) == "0.5"
    assert stable_key(-0.0) == stable_key(0)


def test_a_bool_has_the_stable_form_of_the_number_python_holds_it_equal_to():
    # True == 1 and hash(True) == hash(1): the in-memory cache serves one tuning to both,
    # so the file must find one entry for both, or the next process tunes `1` again.
    assert stable_key(True) == stable_key(1) == stable_key(np.bool_(True)) == "1"
    assert stable_key(np.int64(1)) == stable_key(1.0) == "1"
    assert stable_key(False) == stable_key(0) == "0"
    assert stable_key(SumKey(True, "f4")) == stable_key(SumKey(1, "f4"))
    assert stable_key((4, np.bool_(False))) == stable_key((4, 0))
    # The file still shows a flag as a flag: only its identity is the number's.
    assert key_to_json(SumKey(True, "f4")) == {"n": True, "dtype": "f4"}


def test_a_numpy_bool_is_the_bool_it_equals_as_a_key_and_in_a_field():
    assert key_to_json(np.bool_(True)) is True
    assert stable_key((np.bool_(False), 2)) == stable_key((False, 2))
    assert key_to_json(SumKey(np.bool_(True), "f4")) == {"n": True, "dtype": "f4"}


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


@dataclass(frozen=True)
class PlainKey:
    n: int


@pytest.mark.parametrize("key", [PlainKey(128), (PlainKey(128), "f4")])
def test_a_plain_dataclass_key_is_told_to_derive_from_autotune_key(key) -> None:
    # `@dataclass(frozen=True) class Key:` without the base, the first key class many write:
    # it was refused as "not an AutotuneKey, str, int or tuple; convert it, as str(x.dtype)".
    with pytest.raises(TypeError) as error:
        stable_key(key)
    assert str(error.value) == (
        f"autotune key {key!r}: PlainKey is a dataclass but not an AutotuneKey; derive it"
        " from AutotuneKey (class PlainKey(AutotuneKey)), which gives the cache file its JSON"
        " round trip"
    )


def test_a_tuple_key_holding_a_dtype_names_the_key_and_how_to_convert_it() -> None:
    # `lambda x: (x.shape, x.dtype)`, the first key many write: the message named the
    # dtype alone as the key, "not an AutotuneKey, str, int or tuple", of a key that is a
    # tuple, and said nothing of the conversion.
    import numpy as np

    dtype = np.dtype("float64")
    with pytest.raises(TypeError) as error:
        stable_key(((4,), dtype))
    # Float64DType from NumPy 1.25, dtype[float64] before.
    assert str(error.value) == (
        "autotune key ((4,), dtype('float64')) holds dtype('float64') of type"
        f" {type(dtype).__name__},"
        " which is not an AutotuneKey, str, int or tuple; convert it, as str(x.dtype) or"
        " tuple(x.shape) do"
    )


def test_a_dtype_key_says_how_to_convert_it() -> None:
    # `key=lambda x: x.dtype` said it "is not an AutotuneKey, str, int or tuple" and no more.
    import numpy as np

    with pytest.raises(TypeError, match=r"; convert it, as str\(x.dtype\) or tuple\(x.shape\) do$"):
        stable_key(np.dtype("float32"))


def test_a_key_of_a_subclass_of_float_int_or_str_is_written_as_the_plain_value() -> None:
    # np.float64 is a float, np.str_ a str and an IntEnum member an int, and each was kept
    # as it was: pytest-xdist's workers could not hand back a record holding one.
    import enum

    import numpy as np

    class Mode(enum.IntEnum):
        FAST = 1

    @dataclass(frozen=True)
    class ScaleKey(AutotuneKey):
        scale: float
        mode: int
        name: str

    for value, plain in ((np.float64(0.5), float), (Mode.FAST, int), (np.str_("k"), str)):
        assert type(key_to_json(value)) is plain
        assert type(key_to_json((value,))[0]) is plain
    fields = key_to_json(ScaleKey(np.float64(0.5), Mode.FAST, np.str_("k")))
    assert fields == {"scale": 0.5, "mode": 1, "name": "k"}
    assert [type(v) for v in fields.values()] == [float, int, str]
    assert key_to_json(True) is True
    assert stable_key(Mode.FAST) == stable_key(1)


def test_a_numpy_integer_key_is_the_int_it_equals() -> None:
    # `key=lambda a: np.prod(a.shape)` gives an np.int64: it was refused as "not an
    # AutotuneKey, str, int or tuple". It equals and hashes as its int, so the entry a
    # file holds for 64 is the entry of np.int64(64).
    import numpy as np

    assert key_to_json(np.int64(64)) == 64
    assert type(key_to_json(np.uint8(3))) is int
    assert stable_key((np.int32(2), "f4")) == stable_key((2, "f4"))
    assert {64: "hit"}[np.int64(64)] == "hit"


def test_a_key_field_holding_numpy_numbers_is_written_as_the_python_numbers_it_equals() -> None:
    # `SumKey(np.prod(shape), ...)` was refused, where a bare np.int64 key was taken: both
    # are the numbers they equal and hash as, so the key read back finds the same entry.
    key = SumKey(np.int64(1024), "float32")
    assert key_to_json(key) == {"n": 1024, "dtype": "float32"}
    assert type(key_to_json(key)["n"]) is int
    assert stable_key(key) == stable_key(SumKey(1024, "float32"))
    assert SumKey.from_json(key_to_json(key)) == key
    assert hash(SumKey.from_json(key_to_json(key))) == hash(key)
    assert key_to_json(SumKey((2, np.int32(3)), "f4"))["n"] == (2, 3)
    assert key_to_json(np.float32(0.5)) == 0.5


def test_a_key_holding_numpy_numbers_round_trips_through_json_by_its_own_to_json() -> None:
    # The tuner took and wrote such a key, but its public `to_json` returned the np.int64
    # as it was, which `json.dumps` refused: the documented JSON round trip failed.
    key = SumKey(np.int64(1024), "float32")
    text = json.dumps(key.to_json())
    assert text == '{"n": 1024, "dtype": "float32"}'
    assert SumKey.from_json(json.loads(text)) == key


@pytest.mark.parametrize("number", [math.nan, math.inf, -math.inf])
def test_a_key_that_is_not_finite_is_refused_by_name(number: float) -> None:
    # A NaN key equals nothing, itself included: it was tuned again at every call, and
    # neither it nor an infinity could be saved ("Out of range float values", no key named).
    @dataclass(frozen=True)
    class Size(AutotuneKey):
        n: float

    for key in (number, np.float64(number), Size(number), ("op", number)):
        with pytest.raises(ValueError, match="not finite"):
            stable_key(key)
    # A part of a key is named with the whole key it belongs to.
    with pytest.raises(ValueError, match=r"key \('op', -?(nan|inf)\) holds"):
        stable_key(("op", number))


def test_a_key_of_an_int_too_long_to_print_is_refused_by_our_message() -> None:
    # Python prints no int past 4300 digits: the message itself raised Python's
    # "Exceeds the limit (4300 digits) for integer string conversion".
    with pytest.raises(ValueError, match="an integer of over 4000 digits, and a cache file"):
        stable_key(10**5000)


@pytest.mark.parametrize("limit", ["8", True, -1, math.nan, math.inf, None])
@pytest.mark.parametrize("name", ["max", "min"])
def test_a_max_or_min_that_is_no_size_is_refused_by_name(name, limit):
    # A string failed in a comparison ("'>' not supported"), NaN clamped nothing, True was
    # 1 and a negative max gave a negative key.
    if limit is None:
        assert anchor(100, **{name: limit}, level=BALANCED) == 128
        return
    with pytest.raises(ValueError, match=rf"^anchor: {name} must be a size .*, got {limit!r}$"):
        anchor(100, **{name: limit}, level=BALANCED)


def test_a_max_or_min_of_numpy_sizes_clamps_as_its_ints_do():
    assert anchor(100, max=np.int64(64), min=np.int32(8), level=BALANCED) == 64


@pytest.mark.parametrize("base", ["2", math.inf, True])
def test_a_base_that_is_no_finite_number_is_refused_as_one_below_one_is(base):
    # A string failed in a comparison, and infinity deep in `fractions` (OverflowError).
    with pytest.raises(ValueError, match=r"^anchor base must be above 1, got "):
        anchor(100, base=base, level=BALANCED)
