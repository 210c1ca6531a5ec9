"""Every public name of the seed's module has a home in `pytest_autotune`, as the README's
table "The seed's names in Python" promises: a user porting code imports them from there."""

import inspect
import subprocess
import sys
import typing
from pathlib import Path

import pytest

import pytest_autotune

SEED_NAMES = {
    # The seed's macro, structs, enums, traits and functions, and their Python names.
    "local_tuner": "local_tuner",
    "AutotuneBound": "AutotuneBound",
    "AutotuneLogContext": "AutotuneLogContext",
    "AutotuneOutcome": "AutotuneOutcome",
    "AutotuneRecord": "AutotuneRecord",
    "AutotuneResult": "AutotuneResult",
    "Bounds": "Bounds",
    "CheckResult": "CheckResult",
    "CloneInputGenerator": "CloneInputGenerator",
    "LocalTuner": "LocalTuner",
    "PersistentCacheKey": "PersistentCacheKey",
    "PersistentCacheValue": "PersistentCacheValue",
    "Thresholds": "Thresholds",
    "Tunable": "Tunable",
    "TunableSet": "TunableSet",
    "TuneFn": "TuneFn",
    "TuneGroup": "TuneGroup",
    "Tuner": "Tuner",
    "Work": "Work",
    "AutotuneError": "AutotuneError",
    "AutotuneLogEvent": "AutotuneLogEvent",
    "TuneCacheResult": "TuneCacheResult",
    "AutotuneKey": "AutotuneKey",
    "AutotuneLoggerExt": "log_event",
    "AutotuneOutput": "AutotuneOutput",
    "BoundsGenerator": "BoundsGenerator",
    "InputGenerator": "InputGenerator",
    "KeyGenerator": "KeyGenerator",
    "TimeBound": "TimeBound",
    "TuneInputs": "TuneInputs",
    "anchor": "anchor",
    "calculate_bounds": "calculate_bounds",
    "tune_benchmark": "tune_benchmark",
}


@pytest.mark.parametrize(("seed", "python"), sorted(SEED_NAMES.items()))
def test_each_seed_name_is_exported_from_the_package(seed, python):
    assert python in pytest_autotune.__all__, f"the seed's {seed} is not in __all__"
    assert getattr(pytest_autotune, python, None) is not None


def _instances(tmp_path):
    from pytest_autotune.tune.cache import PersistentCache
    from pytest_autotune.tune.records import Recorder

    return {
        "LocalTuner": pytest_autotune.LocalTuner("mylib-sum"),
        "Tuner": pytest_autotune.Tuner("mylib-sum", "cpu-test"),
        "PersistentCache": PersistentCache(tmp_path / "mylib-sum.json", "mylib-sum"),
        "Recorder": Recorder(tmp_path / "records.jsonl"),
        "CloneInputGenerator": pytest_autotune.CloneInputGenerator(),
    }


@pytest.mark.parametrize(
    "name", ["LocalTuner", "Tuner", "PersistentCache", "Recorder", "CloneInputGenerator"]
)
def test_a_public_object_shows_what_it_is_in_its_repr(name, tmp_path):
    # A tuner in a debugger or a log line read `<...LocalTuner object at 0x7f...>`: which
    # tuner, device or file it was could not be told.
    shown = repr(_instances(tmp_path)[name])
    assert shown.startswith(f"{name}(")
    assert " object at 0x" not in shown


def test_the_warnings_the_readme_names_are_the_packages_own(tmp_path):
    # The README names `ConfigWarning` and `CacheFileWarning` as what a library's user
    # sees; `CacheFileWarning` was importable only from a private module, so a project
    # could not filter it by category from the package
    # (`filterwarnings = ignore::pytest_autotune.CacheFileWarning`).
    (tmp_path / "tuner.json").write_text("{broken")
    cache = pytest_autotune.PersistentCache(tmp_path / "tuner.json")
    with pytest.warns(pytest_autotune.CacheFileWarning, match="is not valid JSON"):
        assert cache.load() == {}
    assert {"ConfigWarning", "CacheFileWarning"} <= set(pytest_autotune.__all__)


def test_the_package_imports_its_names_when_first_asked_for() -> None:
    # pytest's plugin imports the package at the start of every run, one that tests
    # nothing of ours included: NumPy and the tuner wait until a name needs them.
    program = (
        "import sys, pytest_autotune\n"
        "assert 'numpy' not in sys.modules, 'numpy'\n"
        "assert 'pytest_autotune.tune.tuner' not in sys.modules, 'tuner'\n"
        "assert set(pytest_autotune.__all__) <= set(dir(pytest_autotune))\n"
        # The package's own imports are no public names (`pytest_autotune.Any`).
        "own = {'Any', 'TYPE_CHECKING', 'importlib', 'annotations'}\n"
        "assert not own & set(dir(pytest_autotune))\n"
        "from pytest_autotune import Tuner\n"
        "from pytest_autotune.tune.tuner import Tuner as home\n"
        "assert Tuner is home and pytest_autotune.Tuner is home\n"
        "assert all(getattr(pytest_autotune, n) is not None for n in pytest_autotune.__all__)\n"
    )
    _runs_clean(program)


def test_the_decisions_types_still_import_from_the_tuners_module() -> None:
    # `TuneDecision` and `TuneCacheResult` lived in `tune/tuner.py` before it was split by
    # concern: a program that imported them from there gets the same classes.
    from pytest_autotune.tune.tuner import TuneCacheResult, TuneDecision

    assert TuneDecision is pytest_autotune.TuneDecision
    assert TuneCacheResult is pytest_autotune.TuneCacheResult


def test_a_strategys_types_and_a_cache_texts_reader_still_import_from_their_old_modules() -> None:
    # `tune/schedule.py` and `tune/cache.py` were split by concern: a program that imported
    # a strategy's arguments and result, or the reader of a cache file's text, from there
    # gets the same objects.
    from pytest_autotune.tune import batch, cache_read
    from pytest_autotune.tune.cache import CacheContents, parse_cache
    from pytest_autotune.tune.schedule import (
        BatchResult,
        LongCalls,
        Preference,
        Sampler,
        Statistic,
    )

    assert BatchResult is batch.BatchResult
    assert LongCalls is batch.LongCalls
    assert (Preference, Sampler, Statistic) == (batch.Preference, batch.Sampler, batch.Statistic)
    assert CacheContents is cache_read.CacheContents
    assert parse_cache is cache_read.parse_cache


def test_the_cpus_name_and_peak_probe_still_import_from_the_cpu_clients_module() -> None:
    # `backends/cpu.py` was split by concern: a program that imported the CPU's name, its
    # thread count, its device id or its peak probe from there gets the same objects.
    import importlib

    from pytest_autotune.backends import cpu_device, cpu_peaks

    cpu_module = importlib.import_module("pytest_autotune.backends.cpu")
    for name in ("cpu_model_name", "cpu_threads", "device_id_from"):
        assert getattr(cpu_module, name) is getattr(cpu_device, name)
        assert name in cpu_module.__all__
    assert cpu_module.probe_cpu_peaks is cpu_peaks.probe_cpu_peaks
    assert "probe_cpu_peaks" in cpu_module.__all__


def test_the_comparisons_error_and_the_reports_summary_still_import_from_their_modules() -> None:
    # `report/compare.py` and `report/__init__.py` were split by concern: a program that
    # catches `CompareError` from `compare_records`, or types a `pytest_autotune_verdict`
    # hook's summary, imports them where it did.
    from pytest_autotune import report
    from pytest_autotune.report import compare, compare_sides

    assert compare.CompareError is compare_sides.CompareError
    assert "CompareError" in compare.__all__
    assert {"GroupSummary", "CandidateRow"} <= set(report.__all__)


def test_the_type_checkers_imports_and_the_lazy_homes_name_the_same_modules() -> None:
    # `__init__` says each public name three times: imported for type checkers, in
    # `__all__`, and in `_HOMES`, where `__getattr__` finds it. A name in one and not the
    # others is one a user's `from pytest_autotune import X` fails at run time, or mypy.
    import ast

    tree = ast.parse(Path(pytest_autotune.__file__).read_text(encoding="utf-8"))
    (checking,) = (
        n for n in tree.body if isinstance(n, ast.If) and ast.unparse(n.test) == "TYPE_CHECKING"
    )
    imported = {
        (node.module, alias.name)
        for node in checking.body
        if isinstance(node, ast.ImportFrom)
        for alias in node.names
    }
    homes = {
        (f"pytest_autotune.{module}", name)
        for module, names in pytest_autotune._HOMES.items()
        for name in names
    }
    assert imported == homes
    assert {name for _, name in homes} == set(pytest_autotune.__all__)


@pytest.mark.parametrize(
    "first",
    [
        pytest.param("import pytest_autotune", id="package"),
        # In a pytest run, whose plugin imports `tune` and a few of its modules.
        pytest.param("import pytest_autotune.plugin", id="plugin"),
    ],
)
def test_the_engines_modules_are_reached_from_the_package_as_before(first: str) -> None:
    # The package imported its names at once, `tune` and its modules with them: code that
    # reached one through the package (`pytest_autotune.tune.key.AutotuneLevel`) met
    # "module 'pytest_autotune' has no attribute 'tune'" once they were imported lazily.
    program = (
        f"import sys\n{first}\nimport pytest_autotune\n"
        "assert 'numpy' not in sys.modules, 'numpy'\n"
        "assert 'tune' in dir(pytest_autotune)\n"
        "assert pytest_autotune.tune.key.AutotuneLevel is pytest_autotune.AutotuneLevel\n"
        "assert pytest_autotune.tune.tunable_set.TunableSet is pytest_autotune.TunableSet\n"
        "assert not hasattr(pytest_autotune.tune, 'nothing')\n"
    )
    _runs_clean(program)


def _runs_clean(program: str) -> None:
    """`program` run by a fresh interpreter from the repository's root, which exits 0."""
    root = Path(pytest_autotune.__file__).parent.parent
    done = subprocess.run(
        [sys.executable, "-c", program], cwd=root, capture_output=True, text=True, check=False
    )
    assert done.returncode == 0, done.stderr


def _annotated(obj: object) -> list[object]:
    """The public class or function and, for a class, its own functions and methods."""
    if not inspect.isclass(obj):
        return [obj]
    own = [m for m in vars(obj).values() if inspect.isfunction(m)]
    own += [m.__func__ for m in vars(obj).values() if isinstance(m, (classmethod, staticmethod))]
    return [obj, *own]


# `AutotuneFixture` is left out: a protocol for annotating the fixture in tests, read by
# type checkers only; resolving it at run time would import the engine, and with it NumPy,
# wherever a test module names it.
@pytest.mark.parametrize("name", sorted(set(pytest_autotune.__all__) - {"AutotuneFixture"}))
def test_the_annotations_of_a_public_name_resolve_at_run_time(name: str) -> None:
    """`typing.get_type_hints` (what pydantic, cattrs, Sphinx's type hints and
    `dataclasses`-driven tools call) resolves every annotation of a public class or
    function: names imported only for type checkers made it raise NameError (`Work`'s
    `DTypeLike`, `TunableSet`'s `Client`, `AutotuneLogContext`'s `CheckResult`)."""
    for each in _annotated(getattr(pytest_autotune, name)):
        if inspect.isclass(each) or inspect.isfunction(each):
            typing.get_type_hints(each)


def test_the_log_event_offers_each_variant_as_the_seeds_enum_does() -> None:
    # The seed's `AutotuneLogEvent` is an enum a porter writes as `AutotuneLogEvent::X`; ours
    # was a union of classes, which offered no attribute per variant, and `log_event(ctx,
    # event)` and a filter of `ctx.events` by kind need them.
    from pytest_autotune.tune import log

    event = pytest_autotune.AutotuneLogEvent
    assert {v.__name__ for v in log.VARIANTS} >= {
        "TuningStep", "Eliminated", "ShortCircuit", "Converged", "ChecksDone",
    }  # fmt: skip
    for variant in log.VARIANTS:
        assert getattr(event, variant.__name__) is variant
        assert issubclass(variant, event)
    short = event.ShortCircuit("k1", 0, 3, 0.5)
    assert isinstance(short, event)
    assert log.event_from_json(short.to_json()) == short
    context = pytest_autotune.AutotuneLogContext()
    pytest_autotune.log_event(context, short)
    assert [e for e in context.events if isinstance(e, event.ShortCircuit)] == [short]
    # The repository's README, beside `tests`: an installed wheel has none beside the package.
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text("utf-8")
    (row,) = [line for line in readme.splitlines() if line.startswith("| `AutotuneLogContext`")]
    for variant in log.VARIANTS:
        assert f"`{variant.__name__}`" in row
