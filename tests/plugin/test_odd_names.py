"""Names users give tests, parameters and candidates (`::`, `[`, `/`, Unicode, markup) and
where they end up: the outputs of a tuning run, which must neither break nor mangle them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pytest_autotune.tune.cache_names import cache_path
from tests.plugin.harness import BOTH_MODES, add_to_conftest, replace_in_conftest, run
from tests.plugin.test_tune_mode import SCALE_TESTS

ROOT = Path(".autotune")
DEVICE = "cpu-fake-1t"


def update(project: pytest.Pytester, *args: str) -> pytest.RunResult:
    """An --autotune-update run of `project`, which must pass."""
    result = run(project, "--autotune-update", *args)
    assert result.ret == pytest.ExitCode.OK, result.outlines
    return result


def filed(project: pytest.Pytester, tuner: str) -> Any:
    """The cache file of `tuner` on the fake client's device, as a document."""
    return json.loads(cache_path(project.path / ROOT, DEVICE, tuner).read_text())


def filed_keys(project: pytest.Pytester, tuner: str) -> list[str]:
    """The keys of the entries of `tuner`'s cache file, sorted."""
    return sorted(entry["key"] for entry in filed(project, tuner)["entries"])


def run_with_a_broken_client(project: pytest.Pytester, *args: str) -> pytest.RunResult:
    """A run of SCALE_TESTS under a client the test broke, which must fail its tests, each
    with a message, not a traceback from the tuning's frames."""
    project.makepyfile(test_scale=SCALE_TESTS)
    result = run(project, *args)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    assert "Traceback" not in result.stdout.str()
    return result


ODD_IDS = SCALE_TESTS.replace(
    '@pytest.mark.parametrize("n", [1, 2])',
    '@pytest.mark.parametrize("n", [1, 2], ids=["a::b", "c[d]"])',
)


def test_benchmark_json_names_a_candidate_whose_parameter_id_holds_a_double_colon(
    autotune_pytester: pytest.Pytester,
) -> None:
    # An id with `::` (`a::b`) ended the run in an INTERNALERROR `substring not found`:
    # the item's name was cut at the id's `::`, not at the test's.
    autotune_pytester.makepyfile(test_scale=ODD_IDS)
    result = run(autotune_pytester, "--autotune", "--autotune-benchmark-json=bench.json")
    assert result.ret == pytest.ExitCode.OK, result.outlines
    data = json.loads((autotune_pytester.path / "bench.json").read_text())
    by_name = {b["name"]: b for b in data["benchmarks"]}
    assert {"test_scale[fast-a::b]", "test_scale[fast-c[d]]"} <= set(by_name)
    assert by_name["test_scale[fast-a::b]"]["fullname"] == "test_scale.py::test_scale[fast-a::b]"
    assert by_name["test_scale[fast-a::b]"]["param"] == "fast-a::b"


def test_a_client_with_a_long_odd_device_id_tunes_and_files_its_baselines(
    autotune_pytester: pytest.Pytester,
) -> None:
    # A client hook's device id of 300 characters failed every test with `OSError: File
    # name too long` from the device's timing lock in the temp folder.
    device_id = "My DSP/v2 ü " + "x" * 300
    replace_in_conftest(
        autotune_pytester, 'device_id = "cpu-fake-1t"', f"device_id = {device_id!r}"
    )
    autotune_pytester.makepyfile(test_scale=SCALE_TESTS)
    update(autotune_pytester)
    path = autotune_pytester.path / cache_path(ROOT, device_id, "test_scale.py::test_scale")
    assert json.loads(path.read_text())["device"]["id"] == device_id
    assert len(path.parent.name) <= 120


OBJECT_KEYS = """
import pytest
from conftest import spin

class Shape:
    def __init__(self, n):
        self.n = n

def slow(s):
    spin(300e-6)
    return s.n

def fast(s):
    spin(100e-6)
    return s.n

@pytest.mark.autotune(candidates={"slow": slow, "fast": fast})
@pytest.mark.parametrize("s", [Shape(1)], ids=repr)
def test_ids(candidate, s):
    return candidate(s)

@pytest.mark.autotune(candidates={"slow": slow, "fast": fast}, key=lambda s: str(s))
@pytest.mark.parametrize("s", [Shape(1)])
def test_key(candidate, s):
    return candidate(s)

@pytest.mark.autotune(candidates={"slow": slow, "fast": fast})
@pytest.mark.parametrize("s", [Shape(1)])
def test_stable(candidate, s):
    return candidate(s)
"""

OBJECT_NAMES = """
import pytest
from conftest import spin

def slow(n):
    spin(300e-6)
    return n

def fast(n):
    spin(100e-6)
    return n

@pytest.mark.autotune
@pytest.mark.parametrize("candidate", [slow, fast], ids=str)
def test_ids(candidate):
    return candidate(1)

@pytest.mark.autotune(candidates={repr(slow): slow, "fast": fast})
def test_dict(candidate):
    return candidate(1)

@pytest.mark.autotune
@pytest.mark.parametrize("candidate", [slow, fast])
def test_stable(candidate):
    return candidate(1)
"""


@pytest.mark.parametrize("mode", [(), ("--autotune-update",)], ids=["check", "update"])
@pytest.mark.parametrize(
    ("program", "said", "unfiled"),
    [
        # A key made of an object's default repr (`ids=repr`, `key=lambda s: str(s)`)
        # holds its address, new in every process: each update added an entry nothing
        # would read again, and each gate said "no baseline", with no word of why.
        pytest.param(
            OBJECT_KEYS,
            [
                "test_obj.py::test_ids: the key '<test_obj.Shape object at 0x*>' (the"
                " parameters' ids) holds a memory address, which changes with every process:"
                " no later run would find its baseline; give the parameters ids= or the"
                " marker a key=",
                "test_obj.py::test_key: key= returned the key '<test_obj.Shape object at"
                " 0x*>', which holds a memory address*",
            ],
            ("test_ids", "test_key"),
            id="key",
        ),
        # `ids=str` over the functions names each `<function slow at 0x7f...>`, new in
        # every process: an update recorded a winner of that name, and every later gate
        # said "not comparable", listing the same functions as added and removed.
        pytest.param(
            OBJECT_NAMES,
            [
                "test_obj.py::test_ids: candidate 0 (test_obj.slow) is named"
                " '<function slow at 0x*>', which holds a memory address that changes with"
                " every process: no later run would find its baseline; name it by its"
                " __name__*",
                "test_obj.py::test_dict: candidate 0 (test_obj.slow) is named '<function slow at*",
            ],
            ("test_ids", "test_dict"),
            id="candidate-name",
        ),
    ],
)
def test_a_key_or_candidate_name_holding_a_memory_address_fails_by_name(
    autotune_pytester: pytest.Pytester,
    mode: tuple[str, ...],
    program: str,
    said: list[str],
    unfiled: tuple[str, ...],
) -> None:
    autotune_pytester.makepyfile(test_obj=program)
    result = run(autotune_pytester, *mode)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.assert_outcomes(passed=2, failed=4)
    result.stdout.fnmatch_lines(said)
    root = autotune_pytester.path / ROOT
    for test in unfiled:
        assert not cache_path(root, DEVICE, f"test_obj.py::{test}").exists()


NAMED_TUNER = """
from conftest import spin
from pytest_autotune import TunableSet, Tunable

def slow(n):
    spin(300e-6)
    return n * 2

def fast(n):
    spin(100e-6)
    return n * 2

def make():
    return TunableSet(lambda n: str(n)).with_(Tunable("slow", slow)).with_(Tunable("fast", fast))

def test_lib(autotune):
    assert autotune(make(), 3, tuner="mylib::sum") == 6
"""


def test_prune_keeps_the_file_of_a_tuner_named_with_a_double_colon(
    autotune_pytester: pytest.Pytester,
) -> None:
    # `tuner="mylib::sum"` was read as the node id of a test in a file `mylib`: the update
    # called the file it had just written "stale: mylib is gone", and the prune deleted it.
    autotune_pytester.makepyfile(test_lib=NAMED_TUNER)
    result = run(autotune_pytester, "--autotune-prune")
    assert result.ret == pytest.ExitCode.OK, result.outlines
    assert filed(autotune_pytester, "mylib::sum")["tuner"] == "mylib::sum"
    assert not [line for line in result.outlines if line.startswith(("stale:", "pruned"))]


def test_tests_under_a_folder_with_brackets_keep_a_baseline_each(
    autotune_pytester: pytest.Pytester,
) -> None:
    # A path with `[` (`tests/[gpu]/test_a.py`) was cut there as if the test's parameters
    # began: every test under it was the tuner `tests/`, one file, and their keys merged.
    project = autotune_pytester
    folder = project.mkdir("[gpu]")
    (folder / "test_a.py").write_text(SCALE_TESTS)
    (folder / "test_b.py").write_text(SCALE_TESTS.replace("[1, 2]", "[1, 3]"))
    result = update(project)
    for test, keys in (("test_a", ["1", "2"]), ("test_b", ["1", "3"])):
        tuner = f"[gpu]/{test}.py::test_scale"
        assert filed(project, tuner)["tuner"] == tuner
        assert filed_keys(project, tuner) == keys
    result.stdout.fnmatch_lines(["[[]gpu]/test_a.py::test_scale[[]1]  1 *"])
    gated = run(project, "--autotune", "--autotune-strict", "--autotune-benchmark-json=b.json")
    assert gated.ret == pytest.ExitCode.OK, gated.outlines


@pytest.mark.parametrize(
    ("returned", "said"),
    [
        # A device name, or the factory in place of its client, was said to have "the
        # device id None", which read as a client with a bad id.
        pytest.param(
            '"cpu"',
            "returned 'cpu', not a client: return a client (an object with device_id,"
            " launch_overhead, fingerprint(), sync(), time() and peaks()) or None*",
            id="a-name",
        ),
        pytest.param(
            "cpu",
            "returned <function cpu at *>, not a client; call it: cpu(): return a client (an"
            " object with device_id, launch_overhead, fingerprint(), sync(), time() and"
            " peaks()) or None*",
            id="a-factory",
        ),
        # The class has every member, so it read as a client, and the tuning failed on
        # "FakeClient.fingerprint() missing 1 required positional argument: 'self'".
        pytest.param(
            "FakeClient",
            "returned the class FakeClient, not a client; call it: FakeClient()",
            id="the-class",
        ),
    ],
)
def test_a_client_hook_that_returns_no_client_fails_by_name(
    autotune_pytester: pytest.Pytester, returned: str, said: str
) -> None:
    add_to_conftest(
        autotune_pytester,
        "\nfrom pytest_autotune.backends import cpu\n\n"
        "def pytest_autotune_client(config, device):\n"
        f"    return {returned}\n",
    )
    result = run_with_a_broken_client(autotune_pytester, "--autotune")
    result.stdout.fnmatch_lines(
        [f"test_scale.py::test_scale: device 'auto': a pytest_autotune_client hook {said}"]
    )


CLIENT_MISTAKES = [
    # Each failed only where the tuning first used it: a traceback from the tuner's or the
    # session's frames, or (`sync`) every candidate failed as if it had raised it.
    pytest.param(
        "FakeClient.time = None",
        "(FakeClient) has no method time(): it must have fingerprint(), sync(), time() and peaks()",
        id="no-time",
    ),
    pytest.param("del FakeClient.sync", "(FakeClient) has no method sync(): *", id="no-sync"),
    pytest.param(
        "del FakeClient.peaks, FakeClient.fingerprint",
        "(FakeClient) has no method fingerprint(), peaks(): *",
        id="no-peaks",
    ),
    pytest.param(
        "del FakeClient.launch_overhead",
        "(FakeClient) has no launch_overhead: the seconds a call costs beyond its work*",
        id="no-overhead",
    ),
    pytest.param(
        "FakeClient.launch_overhead = '1us'",
        "(FakeClient) has the launch_overhead '1us': it is the seconds a call costs beyond its"
        " work, a finite number >= 0*",
        id="overhead-text",
    ),
]


@pytest.mark.parametrize(("mistake", "said"), CLIENT_MISTAKES)
def test_a_client_hook_whose_client_lacks_part_of_the_protocol_fails_by_name(
    autotune_pytester: pytest.Pytester, mistake: str, said: str
) -> None:
    add_to_conftest(autotune_pytester, f"\n{mistake}\n")
    result = run_with_a_broken_client(autotune_pytester, "--autotune")
    result.stdout.fnmatch_lines(
        [
            "test_scale.py::test_scale: device 'auto': the client of a"
            f" pytest_autotune_client hook {said}"
        ]
    )
    output = result.stdout.str()
    assert "Error:" not in output
    assert "candidate 'slow' raised" not in output


@pytest.mark.parametrize(
    ("fingerprint", "said"),
    [
        ("None", "fingerprint() returned None, not a dict"),
        (
            '{"when": __import__("datetime").date(2026, 1, 2)}',
            "fingerprint['when'] = datetime.date(2026, 1, 2), which a cache file cannot hold",
        ),
    ],
)
def test_a_client_whose_fingerprint_no_file_can_hold_fails_by_name(
    autotune_pytester: pytest.Pytester, fingerprint: str, said: str
) -> None:
    # None failed with "'NoneType' object is not iterable" from the session's code; a
    # value JSON cannot hold was blamed on the pytest_autotune_fingerprint hook.
    replace_in_conftest(autotune_pytester, 'return {"fake": True}', f"return {fingerprint}")
    result = run_with_a_broken_client(autotune_pytester, "--autotune")
    said = said.replace("[", "[[]")  # fnmatch's classes
    result.stdout.fnmatch_lines(
        [f"test_scale.py::test_scale: device 'cpu-fake-1t': its client's {said}*"]
    )


@pytest.mark.parametrize("device_id", ["", None, 3])
def test_a_client_whose_device_id_is_no_name_fails_by_name(
    autotune_pytester: pytest.Pytester, device_id: object
) -> None:
    # A hook's client with an empty device id failed each test with a traceback from the
    # cache's file names ("an empty name cannot name a cache file"), None with an
    # AttributeError from the gate's rules.
    replace_in_conftest(
        autotune_pytester, 'device_id = "cpu-fake-1t"', f"device_id = {device_id!r}"
    )
    result = run_with_a_broken_client(autotune_pytester, "--autotune-update")
    result.stdout.fnmatch_lines(
        [
            "test_scale.py::test_scale: device 'auto': the client of a pytest_autotune_client"
            f" hook has the device id"
            f" {device_id!r}: it names the folder of its baselines, so it must be a non-empty"
            " str",
        ]
    )
    output = result.stdout.str()
    assert "Error:" not in output
    assert "pytest-timeout" not in output  # not said to be a tuning stopped by a timeout


SHAPES = """
import pytest
from conftest import spin

def slow(shape):
    spin(300e-6 * shape[0])
    return shape[0]

def fast(shape):
    spin(100e-6 * shape[0])
    return shape[0]

@pytest.mark.autotune(candidates={"slow": slow, "fast": fast})
@pytest.mark.parametrize("shape", [(1,), (4,)])
def test_shapes(candidate, shape):
    return candidate(shape)
"""


def test_a_key_of_tuple_parameters_is_their_values_so_reordering_them_keeps_each_baseline(
    autotune_pytester: pytest.Pytester,
) -> None:
    # pytest names a tuple parameter by its position (`shape0`): keyed by it, swapping
    # the values compared a 1,000-element sum with the 400,000-element one's baseline and
    # failed unchanged code at +3586%.
    autotune_pytester.makepyfile(test_shapes=SHAPES)
    update(autotune_pytester)
    assert filed_keys(autotune_pytester, "test_shapes.py::test_shapes") == ["(1,)", "(4,)"]

    autotune_pytester.makepyfile(test_shapes=SHAPES.replace("[(1,), (4,)]", "[(4,), (1,)]"))
    result = run(autotune_pytester, "--autotune", "-rA")
    assert result.ret == pytest.ExitCode.OK, result.outlines
    result.stdout.fnmatch_lines(
        [
            "test_shapes.py::test_shapes[[]shape0[]]  *(4,)  *fast *400 us*+0.0%*pass",
            "test_shapes.py::test_shapes[[]shape1[]]  *(1,)  *fast *100 us*+0.0%*pass",
        ],
        consecutive=False,
    )


def test_a_tuple_holding_a_numpy_scalar_type_is_keyed_by_its_values(
    autotune_pytester: pytest.Pytester,
) -> None:
    # `(1000, np.float32)`, a size and the type a dtype is most often written as, kept its
    # numbered id (`shape0`) with a warning that reordering would mix up the baselines,
    # while a dtype object in its place, and the type alone, were keyed as `float32`.
    test = SHAPES.replace("[(1,), (4,)]", "[(1, np.float32), (4, np.dtype('float64'))]").replace(
        "import pytest", "import numpy as np\nimport pytest"
    )
    autotune_pytester.makepyfile(test_shapes=test)
    result = update(autotune_pytester)
    assert "warning:" not in result.stdout.str(), result.outlines
    keys = filed_keys(autotune_pytester, "test_shapes.py::test_shapes")
    assert keys == ["(1, float32)", "(4, float64)"]


STACKED = """
import pytest
from conftest import spin

def slow(shape, scale):
    spin(300e-6 * shape[0] * scale[0])
    return shape[0]

def fast(shape, scale):
    spin(100e-6 * shape[0] * scale[0])
    return shape[0]

@pytest.mark.autotune(candidates={"slow": slow, "fast": fast})
@pytest.mark.parametrize("shape", [(1,), (4,)])
@pytest.mark.parametrize("scale", [(1, 2), (3, 4)])
def test_stacked(candidate, shape, scale):
    return candidate(shape, scale)
"""


def test_stacked_parametrizations_key_every_group_by_its_values(
    autotune_pytester: pytest.Pytester,
) -> None:
    # pytest 8 renumbers a direct parameter's `callspec.indices` as the test's place among
    # all its calls: with two parametrizations, half the keys kept their numbered ids
    # (`(1, 2)-shape0`), and swapping the shapes failed unchanged code at +3308%.
    autotune_pytester.makepyfile(test_stacked=STACKED)
    update(autotune_pytester)
    keys = filed_keys(autotune_pytester, "test_stacked.py::test_stacked")
    assert keys == ["(1, 2)-(1,)", "(1, 2)-(4,)", "(3, 4)-(1,)", "(3, 4)-(4,)"]

    swapped = STACKED.replace("[(1,), (4,)]", "[(4,), (1,)]").replace(
        "[(1, 2), (3, 4)]", "[(3, 4), (1, 2)]"
    )
    autotune_pytester.makepyfile(test_stacked=swapped)
    result = run(autotune_pytester, "--autotune", "-rA")
    assert result.ret == pytest.ExitCode.OK, result.outlines
    result.stdout.fnmatch_lines(
        [
            "test_stacked.py::test_stacked[[]scale0-shape0[]]  *(3, 4)-(4,) *fast *1.20 ms*pass",
            "test_stacked.py::test_stacked[[]scale1-shape1[]]  *(1, 2)-(1,) *fast *100 us*pass",
        ],
        consecutive=False,
    )
    assert "warning:" not in result.stdout.str()


ARRAYS = """
import numpy as np
import pytest
from conftest import spin

def slow(x):
    spin(300e-6 * x.size)
    return x.sum()

def fast(x):
    spin(100e-6 * x.size)
    return x.sum()

@pytest.mark.autotune(candidates={"slow": slow, "fast": fast})
@pytest.mark.parametrize("x", [np.ones(1), np.ones(4)]IDS)
def test_arrays(candidate, x):
    return candidate(x)
"""


def test_a_key_that_numbers_arrays_by_their_place_is_said_once(
    autotune_pytester: pytest.Pytester,
) -> None:
    # An array has no text to key by: its key stays `x0`, `x1`, and swapping the two arrays
    # judged each against the other's baseline (+1863%, a REGRESSION of unchanged code)
    # without a word about why.
    autotune_pytester.makepyfile(test_arrays=ARRAYS.replace("IDS", ""))
    result = update(autotune_pytester)
    warning = (
        "warning: test_arrays.py::test_arrays: its groups' keys number the values of x by"
        " their place in the list (x0, x1, ...): such a value (an array, an object, a str of"
        " over 100 characters) has no plain text to key by, so reordering the values, or"
        " inserting one before others, would judge a group against another's baseline; give"
        " the parameter ids= or the marker a key="
    )
    assert result.stdout.str().count(warning) == 1, result.outlines
    named = ARRAYS.replace("IDS", ', ids=["one", "four"]')
    autotune_pytester.makepyfile(test_arrays=named)
    assert "warning:" not in update(autotune_pytester).stdout.str()
    # Nor said in plain pytest, where no key is filed.
    autotune_pytester.makepyfile(test_arrays=ARRAYS.replace("IDS", ""))
    result = run(autotune_pytester)
    assert result.ret == pytest.ExitCode.OK, result.outlines
    assert "warning:" not in result.stdout.str()


LONG_STRINGS = """
import pytest
from conftest import spin

def slow(query):
    spin(300e-6 * len(query) / 101)
    return query

def fast(query):
    spin(100e-6 * len(query) / 101)
    return query

@pytest.mark.autotune(candidates={"slow": slow, "fast": fast})
@pytest.mark.parametrize("query", ["a" * 101, "b" * 404])
def test_queries(candidate, query):
    return candidate(query)
"""


def test_a_key_that_numbers_long_strings_by_their_place_is_said(
    autotune_pytester: pytest.Pytester,
) -> None:
    # pytest 9 ids a str of over 100 characters by its place (`query0`), not its text: the
    # key was taken for the user's own id, and swapping the two queries judged each
    # against the other's baseline without a word.
    # pytest before 9 ids such a str by its text, which keys it as well as any: no warning.
    autotune_pytester.makepyfile(test_queries=LONG_STRINGS)
    result = update(autotune_pytester)
    warning = (
        "warning: test_queries.py::test_queries: its groups' keys number the values of"
        " query by their place in the list (query0, query1, ...): such a value (an array,"
        " an object, a str of over 100 characters) has no plain text to key by*"
    )
    if "test_queries[query0]" in result.stdout.str():
        result.stdout.fnmatch_lines([warning])
    else:
        result.stdout.fnmatch_lines(["test_queries.py::test_queries[[]aaaaaaaaaa*"])
        assert "warning:" not in result.stdout.str(), result.outlines


INT_ENUMS = """
import enum
import pytest
from conftest import spin

class Mode(enum.IntEnum):
    FAST = 1
    SLOW = 3
    STR

def slow(mode):
    spin(300e-6 * mode)
    return int(mode)

def fast(mode):
    spin(100e-6 * mode)
    return int(mode)

@pytest.mark.autotune(candidates={"slow": slow, "fast": fast})
@pytest.mark.parametrize("mode", [Mode.FAST, Mode.SLOW])
def test_modes(candidate, mode):
    return candidate(mode)
"""

PYTHON_3_10_STR = """
    def __str__(self):
        return f"{type(self).__name__}.{self.name}"
"""


def test_an_int_enum_parameter_keys_its_group_alike_in_every_python_version(
    autotune_pytester: pytest.Pytester,
) -> None:
    # pytest ids an IntEnum member by str(), `Mode.FAST` under Python 3.10 and `1` from
    # 3.11 on: baselines recorded under one version read "no baseline" under the other.
    # The __str__ of 3.10 is written out, to run its side under any version.
    autotune_pytester.makepyfile(test_modes=INT_ENUMS.replace("    STR", PYTHON_3_10_STR))
    update(autotune_pytester)
    assert filed_keys(autotune_pytester, "test_modes.py::test_modes") == ["1", "3"]

    autotune_pytester.makepyfile(test_modes=INT_ENUMS.replace("    STR", ""))
    result = run(autotune_pytester, "--autotune")
    assert result.ret == pytest.ExitCode.OK, result.outlines
    result.stdout.fnmatch_lines(
        [
            # The group is named by pytest's id (`Mode.FAST` under 3.10), keyed by value.
            "test_modes.py::test_modes[[]*[]]  *1  *fast *100 us*+0.0%*pass",
            "test_modes.py::test_modes[[]*[]]  *3  *fast *300 us*+0.0%*pass",
        ],
        consecutive=False,
    )


@pytest.mark.parametrize(
    "ids",
    [', ids=["x1", "x0"]', ", ids=lambda x: f'x{x.size}'", ""],
    ids=["list", "function", "params"],
)
def test_ids_of_their_own_that_read_as_numbered_ones_are_not_warned_of(
    autotune_pytester: pytest.Pytester, ids: str
) -> None:
    # The user's own ids `x1` and `x0` (or `x1`, `x4` from an ids function) read as pytest's
    # numbered ones, and the summary asked for the `ids=` the test gives.
    test = ARRAYS.replace("IDS", ids)
    if not ids:
        test = test.replace(
            "[np.ones(1), np.ones(4)]",
            '[pytest.param(np.ones(1), id="x1"), pytest.param(np.ones(4), id="x0")]',
        )
    autotune_pytester.makepyfile(test_arrays=test)
    result = run(autotune_pytester, "-v", "--autotune")
    assert result.ret == pytest.ExitCode.OK, result.outlines
    result.stdout.fnmatch_lines(["test_arrays.py::test_arrays[[]x1[]] *"])
    assert "warning:" not in result.stdout.str(), result.outlines


PARTIALS = """
import functools
import pytest
from conftest import spin

def run(n, t):
    spin(t * 1e-4)
    return n

@pytest.mark.autotune(candidates=CANDIDATES)
def test_partials(candidate):
    return candidate(3)
"""


def test_candidates_named_by_their_place_are_said_once(
    autotune_pytester: pytest.Pytester,
) -> None:
    # `functools.partial`s have no __name__: named candidate0, candidate1 by place, the
    # cache file knows them so, and swapping the two gave each the other's baseline.
    partials = "[functools.partial(run, t=1), functools.partial(run, t=3)]"
    autotune_pytester.makepyfile(test_partials=PARTIALS.replace("CANDIDATES", partials))
    result = update(autotune_pytester, "-n", "2")
    warning = (
        "warning: test_partials.py::test_partials: candidates candidate0, candidate1 are"
        " named by their place in the list (they have no __name__): reordering the list, or"
        " inserting a candidate before them, would give their baselines to other functions;"
        " name them with autotune(candidates={name: function, ...}) or parametrize ids="
    )
    assert result.stdout.str().count(warning) == 1, result.outlines
    named = '{"one": functools.partial(run, t=1), "three": functools.partial(run, t=3)}'
    autotune_pytester.makepyfile(test_partials=PARTIALS.replace("CANDIDATES", named))
    assert "warning:" not in update(autotune_pytester).stdout.str()


def test_a_device_no_client_can_serve_fails_plain_pytest(pytester: pytest.Pytester) -> None:
    # `device="tpu"` (a typo of a hook's name, or of "cuda") passed every plain run and failed
    # only the tuning job; with no pytest_autotune_client hook registered nothing can serve
    # it, so the plain run says so as it does for the marker's other bad values.
    pytester.makeini("[pytest]\nfilterwarnings = error\n")
    test = """
import pytest

def one(x):
    return x + 1

def two(x):
    return 1 + x

@pytest.mark.autotune(candidates=[one, two], device="tpu")
def test_device(candidate):
    return candidate(1)
"""
    pytester.makepyfile(test_device=test)
    result = run(pytester)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(
        [
            "test_device.py::test_device: device 'tpu': no pytest_autotune_client hook"
            " provides it, and it is not auto, cpu, cuda or cuda:N",
        ]
        * 2
    )
    # A registered hook may serve it: only tuning, which calls the hook, can tell.
    pytester.makeconftest("def pytest_autotune_client(config, device):\n    return None\n")
    assert run(pytester).ret == pytest.ExitCode.OK


def test_a_hook_in_a_conftest_collected_after_the_test_may_serve_its_device(
    pytester: pytest.Pytester,
) -> None:
    # Asked at collection, the check saw only the conftests collected so far: b/'s hook,
    # registered after a/test_a.py was collected, was not there, and a plain run failed a
    # device that tuning, which calls every registered hook, can serve.
    pytester.makeini("[pytest]\nfilterwarnings = error\n")
    pytester.mkdir("a")
    pytester.mkdir("b")
    (pytester.path / "a" / "test_a.py").write_text(
        "import pytest\n\n"
        "def one(x):\n    return x + 1\n\n"
        "def two(x):\n    return 1 + x\n\n"
        "@pytest.mark.autotune(candidates=[one, two], device='tpu')\n"
        "def test_a(candidate):\n    return candidate(1)\n"
    )
    (pytester.path / "b" / "conftest.py").write_text(
        "def pytest_autotune_client(config, device):\n    return None\n"
    )
    (pytester.path / "b" / "test_b.py").write_text("def test_b():\n    pass\n")
    result = run(pytester)
    assert result.ret == pytest.ExitCode.OK, result.outlines


PREFIXED = """
import numpy as np
import pytest
from conftest import spin

def slow(x, x2):
    spin(300e-6 * x[0])
    return x[0]

def fast(x, x2):
    spin(100e-6 * x[0])
    return x[0]

@pytest.mark.autotune(candidates={"slow": slow, "fast": fast})
@pytest.mark.parametrize("x", [(1,), (2,)])
@pytest.mark.parametrize("x2", [np.ones(2), np.ones(3)])
def test_prefixed(candidate, x, x2):
    return candidate(x, x2)
"""


def test_a_parameter_whose_name_begins_another_keeps_its_own_id(
    autotune_pytester: pytest.Pytester,
) -> None:
    # `x20` reads as x's 21st value or x2's first: x's value took x2's place, two groups
    # shared one key, and both failed naming a key= the user never gave.
    autotune_pytester.makepyfile(test_prefixed=PREFIXED)
    result = update(autotune_pytester)
    keys = filed_keys(autotune_pytester, "test_prefixed.py::test_prefixed")
    assert keys == ["x20-(1,)", "x20-(2,)", "x21-(1,)", "x21-(2,)"]
    result.stdout.fnmatch_lines(["warning: test_prefixed.py::test_prefixed: *values of x2 by*"])


DASHED = """
import pytest
from conftest import spin

def fast(n):
    spin(100e-6)
    return n

def slow(n):
    spin(300e-6)
    return n

@pytest.fixture(params=["fast-path", "other"])
def mode(request):
    return len(request.param)

@pytest.mark.autotune(candidates={"fast": fast, "slow": slow})
def test_dashed(candidate, mode):
    return candidate(mode)
"""


def test_a_parameter_id_holding_a_candidates_name_between_dashes_keeps_one_group(
    autotune_pytester: pytest.Pytester,
) -> None:
    # `test_dashed[fast-path-fast]`: the candidate's name was cut from the id where it
    # first stood, the parameter's `fast-path`, so fast's key read `path-fast` and each
    # candidate of that group was tuned alone, under a key neither had.
    autotune_pytester.makepyfile(test_dashed=DASHED)
    update(autotune_pytester, "-p", "no:randomly")
    entries = filed(autotune_pytester, "test_dashed.py::test_dashed")["entries"]
    assert sorted(entry["key"] for entry in entries) == ["fast-path", "other"]
    assert {entry["fastest_name"] for entry in entries} == {"fast"}


SIZES_NAMED = """
import pytest
from conftest import spin

def slow(n):
    spin(300e-6)
    return n

def fast(n):
    spin(100e-6)
    return n

@pytest.mark.autotune(candidates={"slow": slow, "fast": fast})
@pytest.mark.parametrize("n", [10, 1000], ids=lambda n: f"n{n}")
def test_sizes(candidate, n):
    return candidate(n)
"""


def test_a_users_own_id_of_a_number_is_the_key_even_where_it_reads_as_a_numbered_one(
    autotune_pytester: pytest.Pytester,
) -> None:
    # `ids=lambda n: f"n{n}"` of a parameter named `n` gave ids of the form pytest numbers
    # a value by (`n10`), and the key became the value (`10`): a group priority written as
    # `key == "n1000"`, as README's keys by id say, never matched. pytest ids a number by
    # its own text, never by its place: such an id is the user's.
    autotune_pytester.makepyfile(test_sizes=SIZES_NAMED)
    update(autotune_pytester)
    assert filed_keys(autotune_pytester, "test_sizes.py::test_sizes") == ["n10", "n1000"]


COLLIDING = """
import pytest
from conftest import spin

def right(n):
    spin(300e-6)
    return n

def wrong_on_short(n):
    spin(100e-6)
    return n + 1 if n == 4 else n

@pytest.mark.autotune(candidates={"right": right, "wrong_on_short": wrong_on_short})
@pytest.mark.parametrize("q", ["c", "b-c"])
@pytest.mark.parametrize("p", ["a-b", "a"])
def test_collide(candidate, p, q):
    return candidate(len(p) + len(q))
"""


@BOTH_MODES
def test_two_parameter_sets_of_one_id_fail_rather_than_share_a_group(
    autotune_pytester: pytest.Pytester, mode: tuple[str, ...]
) -> None:
    # pytest joins stacked parameters' ids with '-', so p="a-b", q="c" and p="a", q="b-c"
    # both read `a-b-c`: their items made one group, tuned on the first one's inputs, and
    # under --autotune a candidate wrong only on the second's (n = 4) passed.
    autotune_pytester.makepyfile(test_collide=COLLIDING)
    result = run(autotune_pytester, *mode)
    result.assert_outcomes(passed=4, failed=4)
    result.stdout.fnmatch_lines(
        [
            "test_collide.py::test_collide[[]a-b-c[]]: two sets of parameters have this id"
            " (p='a-b', q='c'; p='a', q='b-c'), since pytest joins parameter ids with '-'*"
        ]
    )
