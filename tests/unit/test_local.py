"""`LocalTuner`: its name, the set built once, and the winner persisted for the next process."""

import array
import collections
import gc
import io
import json
import os
import pickle
import sqlite3
import subprocess
import sys
import textwrap
import threading
import time
import types
import unittest.mock
import warnings
import weakref
from dataclasses import dataclass, replace
from pathlib import Path

import pytest

from pytest_autotune.tune import local as local_module
from pytest_autotune.tune.bounds import Work
from pytest_autotune.tune.cache import (
    LOCK_TIMEOUT_S,
    PROGRAM_LOCK_TIMEOUT_S,
    PersistentCache,
    cache_path,
)
from pytest_autotune.tune.client_calls import ClientError
from pytest_autotune.tune.config import AutotuneConfig
from pytest_autotune.tune.errors import (
    AutotuneError,
    AutotuneSkip,
    CacheFileWarning,
    ConfigWarning,
)
from pytest_autotune.tune.key import AutotuneKey
from pytest_autotune.tune.local import LocalTuner, local_tuner
from pytest_autotune.tune.tunable import Tunable
from pytest_autotune.tune.tunable_set import TunableSet
from tests.fakes import FakeClient, candidate

REPO = Path(__file__).resolve().parents[2]


def run_python(
    args: list[str], cwd: Path, environ: dict[str, str]
) -> subprocess.CompletedProcess[str]:
    """A Python process run to its end in `cwd`, which must succeed (its stderr shown if not)."""
    done = subprocess.run(
        [sys.executable, *args], check=False, env=environ, cwd=cwd, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    return done


@dataclass
class UnfrozenKey(AutotuneKey):
    """A key class declared without frozen=True: equal by value, but not hashable."""

    n: int


TIMES = {"slow": 3e-3, "fast": 1e-3, "renamed": 1e-3, "mid": 2e-3, "quick": 0.5e-3}
"""Seconds per call on the fake clock, by candidate name, here and in the script below."""

SCRIPT = textwrap.dedent(
    """
    # A program outside pytest: its cache is configured by PYTEST_AUTOTUNE_* variables.
    import sys

    from pytest_autotune import LocalTuner, TunableSet
    from tests.fakes import FakeClient

    ran_log, names = sys.argv[1], sys.argv[2].split(",")
    times = {times!r}
    client = FakeClient()

    def make(name):
        def fn(x):
            with open(ran_log, "a") as log:
                log.write(name + "\\n")
            client.clock.advance(times[name])
            return name

        return fn

    TUNER = LocalTuner("demo.sum")

    def make_set():
        return TunableSet.of(len, {{name: make(name) for name in names}})

    print(TUNER.execute(client.device_id, client, TUNER.init(make_set), ([1, 2, 3],)))
    """
).format(times=TIMES)


def run_program(tmp_path, names, **env):
    """Run the program in a new process; what it printed and the candidates it called."""
    ran_log = tmp_path / f"ran-{len(list(tmp_path.glob('ran-*')))}.txt"
    ran_log.touch()
    environ = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_AUTOTUNE_")}
    environ.update(PYTHONPATH=str(REPO), **env)
    work = tmp_path / "cwd"  # no autotune.yaml there: the variables alone configure it
    work.mkdir(exist_ok=True)
    done = run_python(["-c", SCRIPT, str(ran_log), ",".join(names)], work, environ)
    return done.stdout.strip(), set(ran_log.read_text().split())


def make_set(client, **times):
    return TunableSet.of(
        len, {n: candidate(client.clock, t, n, result=n) for n, t in times.items()}
    )


@pytest.fixture
def cache_dir(tmp_path):
    return tmp_path / "cache"


def variables_only_of_this_test(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No `PYTEST_AUTOTUNE_*` variable but those the test sets, run from an empty folder (no
    `autotune.yaml` of the working directory read)."""
    monkeypatch.chdir(tmp_path)
    for name in [n for n in os.environ if n.startswith("PYTEST_AUTOTUNE_")]:
        monkeypatch.delenv(name)


# -- names ----------------------------------------------------------------------------------


def test_a_local_tuner_is_named_after_the_calling_module():
    assert local_tuner().name == __name__ == "tests.unit.test_local"


@pytest.mark.parametrize("name", ["", 3, None])
def test_a_local_tuner_without_a_name_is_refused_where_it_is_made(name):
    # `LocalTuner("")` was made, and its first `execute` failed deep in the cache with
    # "an empty name cannot name a cache file", far from the line that made it.
    with pytest.raises(ValueError, match=r"^LocalTuner: the name names its cache file"):
        LocalTuner(name)


def test_a_module_run_with_python_m_names_its_tuner_after_itself(tmp_path):
    """`python -m mylib.ops` runs the module as `__main__`: its tuner is still the one its
    tests tuned (`mylib.ops`), reading the caches its package ships."""
    library = tmp_path / "mylib_run_as_main"
    library.mkdir()
    (library / "__init__.py").write_text("")
    (library / "ops.py").write_text(
        "from pytest_autotune import local_tuner\n"
        "TUNER = local_tuner()\n"
        "print(TUNER.name, TUNER.package)\n"
    )
    environ = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO), str(tmp_path)])}
    done = run_python(["-m", "mylib_run_as_main.ops"], tmp_path, environ)
    assert done.stdout.split() == ["mylib_run_as_main.ops", "mylib_run_as_main"]


def test_a_top_level_module_run_with_python_m_is_run_once(tmp_path):
    """`python -m tool` of a module in no package: no package ships its caches, and looking
    for one by its name would import it, and run it, a second time."""
    (tmp_path / "tool_run_as_main.py").write_text(
        "print('run as', __name__)\n"
        "from pytest_autotune import TunableSet, local_tuner\n"
        "from tests.fakes import FakeClient\n"
        "TUNER = local_tuner()\n"
        "client = FakeClient()\n"
        "TUNER.execute(client.device_id, client, TunableSet.of(len, {'a': len}), ([1],))\n"
        "print(TUNER.name, TUNER.package)\n"
    )
    environ = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_AUTOTUNE_")}
    environ.update(
        PYTHONPATH=os.pathsep.join([str(REPO), str(tmp_path)]),
        XDG_CACHE_HOME=str(tmp_path / "xdg"),
    )
    done = run_python(["-m", "tool_run_as_main"], tmp_path, environ)
    assert done.stdout.splitlines() == ["run as __main__", "tool_run_as_main None"]


@pytest.mark.parametrize("pseudo_file", ["<stdin>", "<string>"])
def test_a_program_of_no_file_is_named_as_an_interactive_session_is(pseudo_file):
    # `python - < prog.py` runs with `__file__` "<stdin>", which names no file: its tuner was
    # "<stdin>" (cache file `_stdin_-<hash>.json`), where `python -c` and a notebook give
    # `__main__`.
    namespace = {"__name__": "__main__", "__file__": pseudo_file, "local_tuner": local_tuner}
    exec("TUNER = local_tuner()", namespace)
    assert (namespace["TUNER"].name, namespace["TUNER"].package) == ("__main__", None)


def test_a_named_local_tuner_adds_its_name_to_the_module():
    assert local_tuner("x").name == "tests.unit.test_local-x"


def test_a_local_tuner_keeps_an_explicit_config():
    config = AutotuneConfig(disable_cache=True)
    assert local_tuner("x", config).config is config


# -- config ---------------------------------------------------------------------------------


def test_without_a_config_the_environment_configures_the_tuner(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PYTEST_AUTOTUNE_CACHE_DIR", str(tmp_path / "elsewhere"))
    monkeypatch.setenv("PYTEST_AUTOTUNE_MAX_SAMPLES", "4")
    config = LocalTuner("t").config
    assert config.cache_dir == tmp_path / "elsewhere"
    assert config.bench.max_samples == 4


def test_a_variable_that_does_not_read_is_left_out_with_a_warning_naming_it(tmp_path, monkeypatch):
    # The environment of a library's user, who may not know this package: a typo of a
    # name, or a value out of range, failed every call of the library, the miss's KeyError
    # shown as the cause.
    variables_only_of_this_test(monkeypatch, tmp_path)
    monkeypatch.setenv("PYTEST_AUTOTUNE_LEVL", "full")
    monkeypatch.setenv("PYTEST_AUTOTUNE_SHIPPED_MATCH", "exactly")
    monkeypatch.setenv("PYTEST_AUTOTUNE_MAX_SAMPLES", "4")
    monkeypatch.setenv("PYTEST_AUTOTUNE_DISABLE_CACHE", "1")
    client = FakeClient()
    local = LocalTuner("t")
    with pytest.warns(ConfigWarning) as caught:
        assert (
            local.execute(client.device_id, client, make_set(client, slow=3e-3, fast=1e-3), ([1],))
            == "fast"
        )
    [warning] = caught
    said = str(warning.message)
    assert said.startswith("LocalTuner 't': PYTEST_AUTOTUNE_LEVL: unknown setting; ")
    assert "did you mean PYTEST_AUTOTUNE_LEVEL?" in said
    assert "PYTEST_AUTOTUNE_SHIPPED_MATCH: expected exact or class, got 'exactly'" in said
    assert said.endswith(
        "left out, the tuner runs with the others"
        " (PYTEST_AUTOTUNE_DISABLE_CACHE, PYTEST_AUTOTUNE_MAX_SAMPLES)"
    )
    assert warning.filename == __file__  # the library's call, not this package's line
    assert local.config.bench.max_samples == 4 and local.config.disable_cache
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # read once: said once
        local.execute(client.device_id, client, make_set(client, slow=3e-3, fast=1e-3), ([1, 2],))


def test_a_level_in_the_config_that_anchor_does_not_use_is_said_once(monkeypatch):
    # The tuner opens no level scope (its hot path would pay for it), so its key generator's
    # `anchor` uses the process's level: AutotuneConfig(level="full") was dropped without a
    # word, and every size anchored at balanced.
    monkeypatch.delenv("PYTEST_AUTOTUNE_LEVEL", raising=False)
    client = FakeClient()
    local = LocalTuner("t", AutotuneConfig(level="full", disable_cache=True))
    with pytest.warns(ConfigWarning) as caught:
        local.execute(client.device_id, client, make_set(client, slow=3e-3, fast=1e-3), ([1],))
    [warning] = caught
    assert str(warning.message) == (
        "LocalTuner 't': its config's level (full) does not reach anchor in its key"
        " generator, which anchors at the process's level (balanced): set that with"
        " set_autotune_level('full') or PYTEST_AUTOTUNE_LEVEL"
    )
    assert warning.filename == __file__
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # said once
        local.execute(client.device_id, client, make_set(client, slow=3e-3, fast=1e-3), ([1, 2],))


def test_a_level_in_the_config_that_the_process_uses_too_is_not_warned_of(monkeypatch):
    monkeypatch.setenv("PYTEST_AUTOTUNE_LEVEL", "full")
    monkeypatch.setenv("PYTEST_AUTOTUNE_DISABLE_CACHE", "1")
    monkeypatch.setattr("pytest_autotune.tune.key._level", None)  # read the variable again
    client = FakeClient()
    local = LocalTuner("t", AutotuneConfig.from_env(project_file=False))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        local.execute(client.device_id, client, make_set(client, slow=3e-3, fast=1e-3), ([1],))


def test_variables_that_read_alone_and_not_together_leave_the_defaults(tmp_path, monkeypatch):
    variables_only_of_this_test(monkeypatch, tmp_path)
    monkeypatch.setenv("PYTEST_AUTOTUNE_MIN_SAMPLES", "8")
    monkeypatch.setenv("PYTEST_AUTOTUNE_MAX_SAMPLES", "5")
    with pytest.warns(
        ConfigWarning,
        match=r"max_samples \(5, from PYTEST_AUTOTUNE_MAX_SAMPLES\)"
        r" is below min_samples \(8, from PYTEST_AUTOTUNE_MIN_SAMPLES\); left out,"
        r" the tuner runs with its defaults$",
    ):
        config = LocalTuner("t").config
    assert config == AutotuneConfig()


def test_a_sample_range_that_does_not_read_leaves_the_other_variables_in_force(
    tmp_path, monkeypatch
):
    # MIN_SAMPLES=8 with MAX_SAMPLES=5 dropped every variable: the user's DISABLE_CACHE=1
    # was ignored, and the library read its shipped caches and wrote the user's cache folder.
    variables_only_of_this_test(monkeypatch, tmp_path)
    monkeypatch.setenv("PYTEST_AUTOTUNE_MIN_SAMPLES", "8")
    monkeypatch.setenv("PYTEST_AUTOTUNE_MAX_SAMPLES", "5")
    monkeypatch.setenv("PYTEST_AUTOTUNE_DISABLE_CACHE", "1")
    with pytest.warns(
        ConfigWarning,
        match=r"max_samples \(5, from PYTEST_AUTOTUNE_MAX_SAMPLES\)"
        r" is below min_samples \(8, from PYTEST_AUTOTUNE_MIN_SAMPLES\); left out,"
        r" the tuner runs with the others \(PYTEST_AUTOTUNE_DISABLE_CACHE\)$",
    ):
        config = LocalTuner("t").config
    assert config == AutotuneConfig(disable_cache=True)


def test_a_refused_sample_bound_is_said_against_the_other_bound_the_user_set(tmp_path, monkeypatch):
    # MIN_SAMPLES=20 with MAX_SAMPLES=15 was refused as "max_samples (10, the default) is
    # below min_samples (20, ...)": each variable was checked against the defaults alone,
    # so the message named a bound the user had replaced.
    variables_only_of_this_test(monkeypatch, tmp_path)
    monkeypatch.setenv("PYTEST_AUTOTUNE_MIN_SAMPLES", "20")
    monkeypatch.setenv("PYTEST_AUTOTUNE_MAX_SAMPLES", "15")
    with pytest.warns(ConfigWarning) as caught:
        config = LocalTuner("t").config
    assert config == AutotuneConfig()
    [warning] = caught
    assert str(warning.message) == (
        "LocalTuner 't': max_samples (15, from PYTEST_AUTOTUNE_MAX_SAMPLES) is below"
        " min_samples (20, from PYTEST_AUTOTUNE_MIN_SAMPLES); left out, the tuner runs with"
        " its defaults"
    )


def test_the_projects_autotune_yaml_does_not_configure_a_librarys_tuner(tmp_path, monkeypatch):
    # `autotune.yaml` is the pytest configuration of the project in the working directory;
    # an installed library's tuner read it too, so a project's `cache_dir: .autotune` made
    # the library write into the working directory and ignore the winners it ships, and a
    # setting the library's tuner refuses failed the library's first call.
    variables_only_of_this_test(monkeypatch, tmp_path)
    (tmp_path / "autotune.yaml").write_text("cache_dir: .autotune\nmax_samples: 4\n")
    config = LocalTuner("t").config
    assert config.cache_dir is None
    assert config.bench.max_samples != 4


def test_a_relative_cache_dir_stays_where_it_was_when_the_program_changes_directory(
    tmp_path, monkeypatch
):
    # `PYTEST_AUTOTUNE_CACHE_DIR=.autotune`, then an os.chdir: the keys tuned after it were
    # saved under the new directory, and the next run, started where the first was, tuned
    # them again.
    start, later = tmp_path / "start", tmp_path / "later"
    start.mkdir()
    later.mkdir()
    monkeypatch.chdir(start)
    monkeypatch.setenv("PYTEST_AUTOTUNE_CACHE_DIR", ".autotune")
    client = FakeClient()
    local = LocalTuner("t")
    tunables = make_set(client, slow=3e-3, fast=1e-3)
    local.execute(client.device_id, client, tunables, ([1],))
    monkeypatch.chdir(later)
    local.execute(client.device_id, client, tunables, ([1, 2],))
    assert not (later / ".autotune").exists()
    again = LocalTuner("t", AutotuneConfig(cache_dir=start / ".autotune"))
    assert [again.tuner(client.device_id).fastest(n).kind for n in (1, 2)] == ["unchecked"] * 2


# -- init -----------------------------------------------------------------------------------


def test_init_builds_the_set_on_the_first_call_only():
    tuner = LocalTuner("t")
    built = []

    def factory():
        built.append(1)
        return TunableSet(len)

    first = tuner.init(factory)
    assert tuner.init(factory) is first
    assert built == [1]


def test_init_of_a_function_that_returns_no_set_names_it_and_what_it_returned():
    tuner = LocalTuner("t")

    def make_set():  # the set is built, but the `return` was forgotten
        TunableSet(len, tunables=[Tunable("a", len)])

    with pytest.raises(TypeError) as info:
        tuner.init(make_set)
    assert str(info.value) == (
        "LocalTuner 't': init(make_set): make_set() must return a TunableSet, got None"
    )


def test_init_given_a_set_instead_of_the_function_that_builds_it_says_so():
    tuner = LocalTuner("t")
    with pytest.raises(TypeError) as info:
        tuner.init(TunableSet(len, tunables=[Tunable("a", len)]))
    assert str(info.value) == (
        "LocalTuner 't': init takes the function that builds the set, init(make_set),"
        " got TunableSet"
    )


def test_init_whose_function_returns_something_else_names_its_type():
    # Said as the other "got <type>" messages are: it read "got a int".
    tuner = LocalTuner("t")
    with pytest.raises(TypeError) as info:
        tuner.init(lambda: 3)
    assert str(info.value).endswith("must return a TunableSet, got int")


def test_init_builds_a_lambda_written_in_the_tuned_function_once():
    # The seed's own example, ported: `TUNER.init(lambda: TunableSet(...))` in the body of
    # the tuned function makes a new lambda at each call, where the seed's closure has one
    # type per site. Built at every call, the sets piled up in the tuner for ever.
    tuner = LocalTuner("t")
    built = []

    def make(name):
        built.append(1)
        return TunableSet(len, tunables=[Tunable(name, len)])

    def tuned():
        return tuner.init(lambda: make("a"))

    first = tuned()
    assert all(tuned() is first for _ in range(3))
    assert built == [1]


def test_init_builds_a_lambda_calling_a_function_of_the_tuned_function_once():
    # `def make(size)` in the tuned function is new at each call too, and the lambda captures
    # it: the site differed at every call, and a set was built and kept for each.
    tuner = LocalTuner("t")
    built = collections.Counter()
    log = unittest.mock.NonCallableMock(built=built)  # hashed by identity, as most objects

    def tuned(name):
        def make(size):
            log.built[name] += 1
            return TunableSet(len, tunables=[Tunable(f"{name}{size}", len)])

        return tuner.init(lambda: make(1))

    first = tuned("a")
    assert all(tuned("a") is first for _ in range(3))
    assert tuned("b").names == ("b1",)  # what `make` captures still tells sites apart
    assert built == {"a": 1, "b": 1}
    assert len(tuner._codes) == 2  # the lambda's code and make's, kept once


def test_init_keeps_lambdas_of_one_site_apart_where_they_capture_other_values():
    tuner = LocalTuner("t")

    def tuned(n):
        return tuner.init(lambda: TunableSet(len, tunables=[Tunable(f"c{n}", len)]))

    assert tuned(1).names == ("c1",)
    assert tuned(2).names == ("c2",)


def make_module_set() -> TunableSet:
    # A candidate of its own, made with the set: gone with it (a set takes no weak reference).
    def size(x):
        return len(x)

    return TunableSet(len, tunables=[Tunable("a", size), Tunable("b", len)])


def cloudpickled(fn):
    """A function of a module as cloudpickle loads one it sent by value (a function of
    `__main__`, for each batch of joblib's loky workers): another function object, that no
    module names, with globals of its own, which hold it (and the functions it makes)."""
    copied_globals = dict(fn.__globals__)
    copy = types.FunctionType(fn.__code__, copied_globals, fn.__name__, fn.__defaults__)
    copy.__qualname__ = fn.__qualname__
    copied_globals[fn.__name__] = copy
    return copy


def test_init_keeps_the_set_of_a_function_sent_by_value_only_while_the_function_lives():
    """A worker that gets `make_set` by value with each batch of tasks builds a set for each
    copy, and kept them all: a joblib worker grew by 55 MB over 20,000 tasks."""
    tuner = LocalTuner("t")
    copy = cloudpickled(make_module_set)
    first = tuner.init(copy)
    assert tuner.init(copy) is first
    built = weakref.ref(first.fns[0])
    del copy, first
    gc.collect()
    assert built() is None
    kept = weakref.ref(tuner.init(make_module_set).fns[0])  # a module's own function: kept
    gc.collect()
    assert kept() is tuner.init(make_module_set).fns[0]


def test_init_of_a_function_sent_by_value_reads_its_set_from_the_function_after_the_first(
    monkeypatch: pytest.MonkeyPatch,
):
    # Each call of the tuned function inits its copy again: asking the modules whether one
    # names it (an AttributeError a module) took microseconds a call, 30 times a hit's.
    tuner = LocalTuner("t")
    copy = cloudpickled(make_module_set)
    first = tuner.init(copy)
    asked = []
    monkeypatch.setattr(local_module, "_named_by_no_module", asked.append)
    assert tuner.init(copy) is first
    assert asked == []
    assert LocalTuner("u").init(copy) is not first  # another tuner's set is its own
    assert asked == [copy]


def test_init_builds_the_set_once_when_threads_call_it_together():
    tuner = LocalTuner("t")
    threads = 8
    start = threading.Barrier(threads)
    built = []
    got = []

    def factory():
        built.append(1)
        time.sleep(0.01)  # hold the door open, so the other threads arrive meanwhile
        return TunableSet(len)

    def call():
        start.wait()
        got.append(tuner.init(factory))

    workers = [threading.Thread(target=call) for _ in range(threads)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join()
    assert built == [1]
    assert len(got) == threads
    assert all(s is got[0] for s in got)


def test_a_set_whose_init_function_inits_another_set_of_the_same_tuner_is_built():
    """A set composed of another set of its tuner (its candidate dispatches to the inner
    operation) inits that set while its own is built: the second init waited for ever on
    the lock the first held."""
    tuner = LocalTuner("t")

    def make_inner() -> TunableSet:
        return TunableSet.of(len, {"inner": len})

    def make_outer() -> TunableSet:
        inner = tuner.init(make_inner)
        return TunableSet.of(len, {"outer": inner.fns[0]})

    got = []
    # A daemon thread, so a deadlock fails this test rather than hanging the suite.
    thread = threading.Thread(target=lambda: got.append(tuner.init(make_outer)), daemon=True)
    thread.start()
    thread.join(timeout=60)
    assert not thread.is_alive(), "init of a set that inits another set never returned"
    assert got[0].names == ("outer",)
    assert tuner.init(make_inner).names == ("inner",)


def run_cell(namespace: dict, source: str, number: int) -> None:
    """`source` run as a notebook cell: IPython compiles each cell under a file name of its
    own and runs it in the namespace of `__main__`, its user module, so a cell run again
    defines its functions again, under the same module and name."""
    code = compile(textwrap.dedent(source), f"<ipython-input-{number}-0123456789ab>", "exec")
    exec(code, namespace)


@pytest.fixture
def cells(monkeypatch: pytest.MonkeyPatch, cache_dir: Path) -> dict:
    """The namespace of a notebook whose first cell made `TUNER` and `client`: a module's,
    registered as IPython registers its user module, so that its functions are named by it."""
    module = types.ModuleType("notebook_main")
    monkeypatch.setitem(sys.modules, module.__name__, module)
    client = FakeClient()
    module.__dict__.update(
        TUNER=LocalTuner("t", AutotuneConfig(cache_dir=cache_dir)),
        client=client,
        TunableSet=TunableSet,
        candidate=candidate,
        TIMES=TIMES,
    )
    return module.__dict__


def test_a_set_whose_cell_is_run_again_with_a_candidate_added_is_tuned_again(cells):
    # The index the first list's tuning chose was served to the new list: `slow`, at that
    # index now, ran and `quick`, added first, was never measured, until the kernel restarted.
    run_cell(
        cells,
        """
        def make_set():
            return TunableSet.of(len, {
                "slow": candidate(client.clock, 3e-3, result="slow"),
                "fast": candidate(client.clock, 1e-3, result="fast"),
            })
        out = TUNER.execute(client.device_id, client, TUNER.init(make_set), ([1],))
        """,
        1,
    )
    assert cells["out"] == "fast"
    run_cell(
        cells,
        """
        def make_set():
            return TunableSet.of(len, {
                "quick": candidate(client.clock, 0.5e-3, result="quick"),
                "slow": candidate(client.clock, 3e-3, result="slow"),
                "fast": candidate(client.clock, 1e-3, result="fast"),
            })
        out = TUNER.execute(client.device_id, client, TUNER.init(make_set), ([1],))
        """,
        2,
    )
    assert cells["out"] == "quick"


def test_a_set_whose_cell_is_run_again_with_fewer_candidates_is_tuned_again(cells):
    # It failed with "sets that share a tuner share its keys": the index of the first list's
    # winner lay past the end of the new list, and the user had only one set.
    source = """
        def make_set():
            return TunableSet.of(len, {{
                name: candidate(client.clock, TIMES[name], result=name) for name in {names}
            }})
        out = TUNER.execute(client.device_id, client, TUNER.init(make_set), ([1],))
        """
    run_cell(cells, source.format(names=["mid", "slow", "fast"]), 1)
    assert cells["out"] == "fast"
    run_cell(cells, source.format(names=["mid", "slow"]), 2)
    assert cells["out"] == "mid"


def test_a_key_every_candidate_failed_is_tried_again_once_its_cell_is_fixed(cells):
    # The failure of the first definition was raised again without tuning: the NameError
    # the user had just fixed, until the kernel restarted.
    source = """
        def a(x):
            return {body}

        def make_set():
            return TunableSet.of(len, {{"a": a, "b": a}})
        out = TUNER.execute(client.device_id, client, TUNER.init(make_set), ([1],))
        """
    with pytest.raises(AutotuneError, match="NameError: name 'y' is not defined"):
        run_cell(cells, source.format(body="y"), 1)
    run_cell(cells, source.format(body="x"), 2)
    assert cells["out"] == [1]


def test_a_set_whose_cell_is_run_again_unchanged_keeps_its_winner_without_tuning(cells):
    source = """
        calls = []

        def fast(x):
            calls.append("fast")
            client.clock.advance(1e-3)
            return "fast"

        def make_set():
            return TunableSet.of(len, {
                "slow": candidate(client.clock, 3e-3, result="slow"), "fast": fast
            })
        out = TUNER.execute(client.device_id, client, TUNER.init(make_set), ([1],))
        """
    run_cell(cells, source, 1)
    run_cell(cells, source, 1)
    assert (cells["out"], cells["calls"]) == ("fast", ["fast"])  # served, not tuned


def test_init_functions_of_other_names_keep_each_others_decisions():
    # Only a function defined again under its own name replaces a set: two sets, and two
    # lambdas at module level (each `<lambda>`), are sets side by side.
    client = FakeClient()
    local = LocalTuner("t", AutotuneConfig(disable_cache=True))
    first = make_set(client, slow=3e-3, fast=1e-3)
    local.execute(client.device_id, client, local.init(lambda: first), ([1],))
    local.init(lambda: TunableSet.of(len, {"other": len}))
    calls = [fn.calls for fn in first.fns]
    assert local.execute(client.device_id, client, local.init(lambda: first), ([1],)) == "fast"
    assert [fn.calls for fn in first.fns] == [calls[0], calls[1] + 1]


def test_one_tuner_serves_each_device(cache_dir):
    local = LocalTuner("t", AutotuneConfig(cache_dir=cache_dir))
    assert local.tuner("a") is local.tuner("a")
    assert local.tuner("a") is not local.tuner("b")
    assert (local.tuner("a").name, local.tuner("a").device_id) == ("t", "a")


# -- persistence ----------------------------------------------------------------------------


def test_the_winner_is_written_to_the_cache_dir_under_device_and_name(cache_dir):
    client = FakeClient()
    local = LocalTuner("ops.sum", AutotuneConfig(cache_dir=cache_dir))
    tunables = make_set(client, slow=3e-3, fast=1e-3, mid=2e-3)
    assert local.execute(client.device_id, client, tunables, ([1, 2, 3],)) == "fast"

    path = cache_dir / "fake-device" / "ops.sum.json"
    assert path == cache_path(cache_dir, client.device_id, "ops.sum")
    document = json.loads(path.read_text())
    (entry,) = document["entries"]
    assert (entry["key"], entry["fastest_index"], entry["fastest_name"]) == (3, 1, "fast")
    assert entry["checksum"] == tunables.checksum
    assert document["device"]["id"] == "fake-device"
    # The device as the plugin's files describe it: a file a library ships serves users of
    # the same class of device only where its fingerprint says which class it is.
    assert document["device"]["fingerprint"] == {"fake": True}


def test_a_programs_cache_files_wait_seconds_for_their_lock_where_test_runs_wait_minutes(
    cache_dir, tmp_path, monkeypatch
):
    # Five minutes (LOCK_TIMEOUT_S) suit pytest workers that save one after another into
    # one file; a program waited them for a process stopped holding the lock, at each new
    # key's lookup and save, its call stalled meanwhile.
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    named = LocalTuner("t", AutotuneConfig(cache_dir=cache_dir)).tuner("a").persistent
    users = LocalTuner("t", AutotuneConfig()).tuner("a").persistent
    assert named is not None and users is not None
    assert users.path.is_relative_to(tmp_path / "xdg")
    assert named.lock_timeout == users.lock_timeout == PROGRAM_LOCK_TIMEOUT_S < LOCK_TIMEOUT_S


def test_a_nan_key_is_refused_for_a_set_of_one_candidate_too(cache_dir):
    # One candidate skipped the key's stored form: a NaN key (never equal to itself) was
    # kept as a new hit at every call, and the tuner's memory grew with every call.
    client = FakeClient()
    local = LocalTuner("t", AutotuneConfig(cache_dir=cache_dir))
    tunables = TunableSet.of(lambda x: float("nan"), {"only": len})
    with pytest.raises(ValueError, match="not finite"):
        local.execute(client.device_id, client, tunables, ([1],))


def test_a_key_too_long_for_a_cache_file_is_refused_before_it_poisons_the_file(cache_dir):
    # A key of a SHA-1 digest as an int (48 digits) was written, but no reader takes an
    # integer of over 40 digits: every later process read the file as damaged, went on
    # without a cache and never saved another key to it.
    import hashlib

    client = FakeClient()
    local = LocalTuner("t", AutotuneConfig(cache_dir=cache_dir))
    local.execute(client.device_id, client, make_set(client, slow=3e-3, fast=1e-3), ([1],))
    digest = int(hashlib.sha1(b"weights").hexdigest(), 16)
    tunables = TunableSet.of(
        lambda x: ("op", digest), {"slow": candidate(client.clock, 3e-3), "fast": len}
    )
    with pytest.raises(ValueError, match=r"holds an integer of 48 digits.*str\(\)"):
        local.execute(client.device_id, client, tunables, ([1],))
    again = LocalTuner("t", AutotuneConfig(cache_dir=cache_dir))
    assert (
        again.execute(client.device_id, client, make_set(client, slow=3e-3, fast=1e-3), ([1],))
        == "fast"
    )


@pytest.mark.skipif(not hasattr(os, "fork"), reason="a POSIX fork")
@pytest.mark.filterwarnings("ignore:.*multi-threaded.*fork:DeprecationWarning")
def test_a_process_forked_while_a_thread_builds_a_set_builds_its_own(cache_dir):
    """`init` builds a set under the tuner's lock; a process forked meanwhile (a fork pool of
    a program whose other thread makes its first call) had no thread to release it."""
    from tests.forking import run_forked

    local = LocalTuner("t", AutotuneConfig(cache_dir=cache_dir))
    entered, release = threading.Event(), threading.Event()

    def slow_make() -> TunableSet:
        entered.set()
        release.wait()
        return TunableSet.of(len, {"a": len})

    def other_make() -> TunableSet:
        return TunableSet.of(len, {"b": len})

    thread = threading.Thread(target=local.init, args=(slow_make,))
    thread.start()
    entered.wait()
    try:
        became = run_forked(lambda: local.init(other_make).names == ("b",))
    finally:
        release.set()
        thread.join()
    assert became == "ok"


def test_a_pickled_local_tuner_loads_as_the_tuner_of_its_name(cache_dir, tmp_path):
    """A pool pickles what it sends to its workers, and an object holding a tuner (or a
    `partial` of `TUNER.execute`) failed on the tuner's lock, "cannot pickle
    '_thread.RLock' object". It is sent as its name, config and package: the process that
    loads it uses its own tuner of that name, or makes one."""
    local = LocalTuner("t", AutotuneConfig(cache_dir=cache_dir))
    assert pickle.loads(pickle.dumps(local)) is local
    sent = tmp_path / "tuner.pickle"
    sent.write_bytes(pickle.dumps(local))
    program = textwrap.dedent(
        """
        import pickle, sys

        from pytest_autotune import TunableSet
        from tests.fakes import FakeClient, candidate

        with open(sys.argv[1], "rb") as file:
            local = pickle.load(file)
        again = pickle.loads(pickle.dumps(local))
        client = FakeClient()
        tunables = TunableSet.of(
            len,
            {
                "a": candidate(client.clock, 2e-3, "a", result="a"),
                "b": candidate(client.clock, 1e-3, "b", result="b"),
            },
        )
        out = local.execute(client.device_id, client, tunables, ([1, 2],))
        print(local.name, again is local, out)
        """
    )
    done = run_python(["-c", program, str(sent)], tmp_path, {**os.environ, "PYTHONPATH": str(REPO)})
    assert done.stdout.split() == ["t", "True", "b"]
    assert cache_path(cache_dir, FakeClient.device_id, "t").is_file()  # its config came along


def test_a_hit_calls_only_the_winner(cache_dir):
    client = FakeClient()
    local = LocalTuner("t", AutotuneConfig(cache_dir=cache_dir))
    tunables = make_set(client, slow=3e-3, fast=1e-3)
    local.execute(client.device_id, client, tunables, ([1],))
    calls = [fn.calls for fn in tunables.fns]
    assert local.execute(client.device_id, client, tunables, ([2],)) == "fast"
    assert [fn.calls for fn in tunables.fns] == [calls[0], calls[1] + 1]


def test_a_winner_that_raises_on_a_hit_is_called_once_and_its_error_reaches_the_caller(
    cache_dir,
):
    client = FakeClient()
    local = LocalTuner("t", AutotuneConfig(cache_dir=cache_dir))
    calls = []

    def picky(x):
        client.clock.advance(1e-3)
        calls.append(x)
        if x == ["bad"]:
            raise KeyError("bad")
        return "picky"

    tunables = TunableSet.of(len, {"picky": picky, "slow": candidate(client.clock, 2e-3, "slow")})
    local.execute(client.device_id, client, tunables, (["ok"],))
    calls.clear()
    with pytest.raises(KeyError, match="bad"):
        local.execute(client.device_id, client, tunables, (["bad"],))
    assert calls == [["bad"]]


def test_a_key_generator_that_raises_reaches_the_caller(cache_dir):
    def no_key(x):
        raise KeyError("no key for this input")

    client = FakeClient()
    local = LocalTuner("t", AutotuneConfig(cache_dir=cache_dir))
    tunables = TunableSet.of(no_key, {"a": candidate(client.clock, 1e-3, "a")})
    with pytest.raises(KeyError, match="no key for this input"):
        local.execute(client.device_id, client, tunables, ([1],))


def summing(clock, seconds, name):
    """A candidate that sums what it is given, taking `seconds` on the fake clock."""

    def fn(items):
        clock.advance(seconds)
        return sum(items)

    fn.__name__ = name
    return fn


def test_a_generator_given_for_a_new_key_is_refused_before_any_candidate_uses_it(cache_dir):
    """Tuning calls every candidate on the inputs, and a generator cannot be copied: the
    first call used it up, and the call that returned got it empty, a wrong answer (0 for
    the sum of 0..9) with no word."""
    client = FakeClient()
    local = LocalTuner("t", AutotuneConfig(cache_dir=cache_dir))
    tunables = TunableSet.of(
        lambda items: "sum",
        {"a": summing(client.clock, 2e-3, "a"), "b": summing(client.clock, 1e-3, "b")},
    )
    items = (i for i in range(10))
    with pytest.raises(TypeError) as info:
        local.execute(client.device_id, client, tunables, (items,))
    assert str(info.value) == (
        "t: input 0 is an iterator (generator), which tuning would use up: every candidate"
        " is called on it, and the first would leave it empty for the others and for the"
        " call that returns; pass a list or a tuple (list(it))"
    )
    assert next(items) == 0  # untouched
    assert local.execute(client.device_id, client, tunables, (list(range(10)),)) == 45
    # Once the key is decided, an iterator is called with as it is: one call uses it.
    assert local.execute(client.device_id, client, tunables, (iter(range(10)),)) == 45


def test_an_iterator_inside_a_dict_input_is_refused_not_summed_empty(cache_dir):
    """The copy of a dict or list input shares an iterator in it: the first candidate
    tuned emptied it, and the call returned 0 for the sum of 0..9 without a word."""
    client = FakeClient()
    local = LocalTuner("t", AutotuneConfig(cache_dir=cache_dir))

    def rows_summing(seconds, name):
        inner = summing(client.clock, seconds, name)

        def fn(batch):
            return inner(batch["parts"][1])

        fn.__name__ = name
        return fn

    tunables = TunableSet.of(
        lambda batch: "sum", {"a": rows_summing(2e-3, "a"), "b": rows_summing(1e-3, "b")}
    )
    rows = (i for i in range(10))
    with pytest.raises(TypeError) as info:
        local.execute(client.device_id, client, tunables, ({"parts": [None, rows]},))
    assert str(info.value).startswith(
        "t: input 0 holds an iterator (generator) at ['parts'][1], which tuning would use up"
    )
    assert next(rows) == 0  # untouched
    given = {"parts": [None, list(range(10))]}
    assert local.execute(client.device_id, client, tunables, (given,)) == 45


def test_a_mock_given_as_an_input_is_tuned_on_not_refused_as_an_iterator(cache_dir):
    """A `MagicMock` has `__iter__` and `__next__`: a fake logger or client that a test's
    fixture made (pytest-mock's `mocker.MagicMock()`) was refused as an iterator "which
    tuning would use up", failing the group, where a plain run passed every candidate."""
    client = FakeClient()
    local = LocalTuner("t", AutotuneConfig(cache_dir=cache_dir))

    def logging_(seconds, name):
        def fn(log):
            client.clock.advance(seconds)
            log.info(name)
            return 1

        fn.__name__ = name
        return fn

    tunables = TunableSet.of(
        lambda log: "log", {"a": logging_(2e-3, "a"), "b": logging_(1e-3, "b")}
    )
    log = unittest.mock.MagicMock()
    assert local.execute(client.device_id, client, tunables, (log,)) == 1
    assert log.info.called


def test_a_stream_its_candidates_rewind_is_tuned_on(cache_dir):
    client = FakeClient()
    local = LocalTuner("t", AutotuneConfig(cache_dir=cache_dir))

    def reading(seconds, name):
        def fn(stream):
            client.clock.advance(seconds)
            stream.seek(0)
            return stream.read()

        fn.__name__ = name
        return fn

    tunables = TunableSet.of(lambda s: "read", {"a": reading(2e-3, "a"), "b": reading(1e-3, "b")})
    assert local.execute(client.device_id, client, tunables, (io.BytesIO(b"abc"),)) == b"abc"


def test_a_database_cursor_its_candidates_query_is_tuned_on(cache_dir):
    """A DB-API cursor has `__iter__` and `__next__`, but each call runs its own query
    (`execute`): it was refused as an iterator "which tuning would use up"."""
    client = FakeClient()
    local = LocalTuner("t", AutotuneConfig(cache_dir=cache_dir))

    def querying(seconds, name):
        def fn(cursor):
            client.clock.advance(seconds)
            return cursor.execute("select 6 * 7").fetchone()[0]

        fn.__name__ = name
        return fn

    tunables = TunableSet.of(lambda c: "q", {"a": querying(2e-3, "a"), "b": querying(1e-3, "b")})
    connection = sqlite3.connect(":memory:")
    try:
        assert local.execute(client.device_id, client, tunables, (connection.cursor(),)) == 42
    finally:
        connection.close()  # left open, Python 3.13 warns of it wherever it is collected


def append_zero(b):
    b.append(0)
    return list(b)


def add_size(s):
    s.add(len(s))
    return len(s)


def count_new(d):
    d["new"] += 1
    return dict(d)


@pytest.mark.parametrize(
    ("value", "write", "out", "after"),
    [
        (bytearray(b"ab"), append_zero, [97, 98, 0], bytearray(b"ab\0")),
        (array.array("i", [1, 2]), append_zero, [1, 2, 0], array.array("i", [1, 2, 0])),
        (collections.deque([1, 2]), append_zero, [1, 2, 0], collections.deque([1, 2, 0])),
        ({0}, add_size, 2, {0, 1}),
        (collections.defaultdict(int), count_new, {"new": 1}, {"new": 1}),
    ],
    ids=["bytearray", "array", "deque", "set", "defaultdict"],
)
def test_a_candidate_writing_into_a_container_writes_the_callers_once(
    cache_dir, value, write, out, after
):
    """Tuning calls every candidate many times, each on its own copy of the inputs; these
    containers were shared, so each call of the tuning wrote into the caller's (a set or a
    buffer grew by one element a call), and a defaultdict
    was copied as a plain dict, where its candidates failed with a KeyError."""
    client = FakeClient()
    local = LocalTuner("t", AutotuneConfig(cache_dir=cache_dir))

    def timed(seconds, name):
        def fn(v):
            client.clock.advance(seconds)
            return write(v)

        fn.__name__ = name
        return fn

    tunables = TunableSet.of(lambda v: "op", {"a": timed(2e-3, "a"), "b": timed(1e-3, "b")})
    assert local.execute(client.device_id, client, tunables, (value,)) == out
    assert value == after


def test_a_candidate_that_writes_into_a_read_only_input_fails_in_tuning_not_after(cache_dir):
    """The copies tuning runs on were writable whatever the caller's array was: a candidate
    sorting its input in place won on them, then raised on the caller's read-only array
    (`np.frombuffer` of bytes) at every call that followed."""
    import numpy as np

    client = FakeClient()
    local = LocalTuner("t", AutotuneConfig(cache_dir=cache_dir))

    def in_place(x):
        x.sort()
        client.clock.advance(1e-3)
        return float(x[0])

    def copying(x):
        client.clock.advance(2e-3)
        return float(np.sort(x)[0])

    tunables = TunableSet.of(len, {"in_place": in_place, "copying": copying})
    x = np.frombuffer(np.array([3.0, 1.0, 2.0]).tobytes())
    assert local.execute(client.device_id, client, tunables, (x,)) == 1.0
    decision = local.tuner(client.device_id).decision(3)
    assert decision is not None
    assert decision.fastest_name == "copying"
    assert "read-only" in str(decision.results[0])


def test_a_candidate_that_needs_a_contiguous_input_fails_in_tuning_on_a_strided_view(cache_dir):
    """A strided view was copied contiguous for the tuning: a candidate hashing its input's
    buffer (which must be contiguous) won on the copies, then raised on the caller's view at
    every call that followed."""
    import hashlib

    import numpy as np

    client = FakeClient()
    local = LocalTuner("t", AutotuneConfig(cache_dir=cache_dir))

    def buffer(x):
        client.clock.advance(1e-3)
        return hashlib.sha256(x).hexdigest()

    def via_bytes(x):
        client.clock.advance(2e-3)
        return hashlib.sha256(x.tobytes()).hexdigest()

    tunables = TunableSet.of(lambda x: x.shape, {"buffer": buffer, "via_bytes": via_bytes})
    x = np.arange(32.0).reshape(4, 8)[:, ::2]
    expected = hashlib.sha256(x.tobytes()).hexdigest()
    assert local.execute(client.device_id, client, tunables, (x,)) == expected
    decision = local.tuner(client.device_id).decision((4, 4))
    assert decision is not None
    assert decision.fastest_name == "via_bytes"


def test_after_clear_the_winner_comes_back_from_the_file_without_tuning(cache_dir):
    client = FakeClient()
    local = LocalTuner("t", AutotuneConfig(cache_dir=cache_dir))
    tunables = make_set(client, slow=3e-3, fast=1e-3)
    local.execute(client.device_id, client, tunables, ([1],))
    local.clear()
    fresh = make_set(client, slow=3e-3, fast=1e-3)
    assert local.execute(client.device_id, client, fresh, ([1],)) == "fast"
    assert [fn.calls for fn in fresh.fns] == [0, 1]


class SubNanosecondClient(FakeClient):
    """A client whose timings are under half a nanosecond (a cost model's figures)."""

    def time(self, fn, inputs):
        fn(*inputs)
        return {"model_a": 1e-10, "model_b": 3e-10}[fn.__name__]


def test_a_winner_timed_under_a_nanosecond_is_served_from_the_file_it_was_saved_to(cache_dir):
    client = SubNanosecondClient()

    def model_a(x):
        return "a"

    def model_b(x):
        return "b"

    def sub_ns_set():
        return TunableSet.of(len, {"model_a": model_a, "model_b": model_b})

    config = AutotuneConfig(cache_dir=cache_dir)
    assert LocalTuner("t", config).execute(client.device_id, client, sub_ns_set(), ([1],)) == "a"
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the file its own tuner wrote reads back
        later = LocalTuner("t", config)
        assert later.execute(client.device_id, client, sub_ns_set(), ([1],)) == "a"
    assert later.tuner(client.device_id).decision(1) is None  # served, not tuned again


def test_a_cache_that_cannot_be_written_warns_as_a_cache_file_problem_only(tmp_path):
    """A program that silences `CacheFileWarning` (its user's cache folder is read only)
    must not meet another category for the same file when the decision is not saved."""
    blocked = tmp_path / "a-file"
    blocked.write_text("")
    client = FakeClient()
    local = LocalTuner("t", AutotuneConfig(cache_dir=blocked))
    with pytest.warns(Warning) as caught:
        assert local.execute(client.device_id, client, make_set(client, a=2e-3, b=1e-3), ([1],))
    assert {type(w.message) for w in caught} == {CacheFileWarning}
    assert "kept in memory only" in str(caught[-1].message)


class _NoFingerprint(FakeClient):
    def fingerprint(self):
        raise RuntimeError("no sensors")


class _NoneFingerprint(FakeClient):
    def fingerprint(self):
        return None


@pytest.mark.parametrize(
    ("client_type", "said"),
    [
        (_NoFingerprint, "its client's fingerprint() raised RuntimeError: no sensors"),
        (_NoneFingerprint, "its client's fingerprint() returned None, not a dict"),
    ],
)
def test_a_client_whose_fingerprint_fails_leaves_the_cache_unwritten_saying_why(
    cache_dir, client_type, said
):
    """The program ran on with "'NoneType' object is not iterable" or the client's own
    error raised from the cache file's device block: its winner is served from memory,
    and the warning names the client's method."""
    client = client_type()
    local = LocalTuner("t", AutotuneConfig(cache_dir=cache_dir))
    with pytest.warns(CacheFileWarning) as caught:
        tunables = make_set(client, slow=3e-3, fast=1e-3)
        assert local.execute(client.device_id, client, tunables, ([1],)) == "fast"
    assert f"device 'fake-device': {said}; the decision is kept in memory only" in str(
        caught[-1].message
    )
    assert not list(cache_dir.rglob("*.json"))


class _StickyClient(FakeClient):
    """A device that one call leaves in error for good, as CUDA's sticky errors do (a kernel's
    illegal address): every later call on it fails, its `sync()` too."""

    broken = False

    def sync(self):
        if self.broken:
            raise RuntimeError("CUDA_ERROR_ILLEGAL_ADDRESS: an illegal memory access")

    def time(self, fn, inputs):
        self.sync()
        seconds = super().time(fn, inputs)
        self.sync()  # as CUDA's events are waited for: a call's own error surfaces here
        return seconds

    def peaks(self):
        if self.broken:
            raise RuntimeError("CURAND_STATUS_INITIALIZATION_FAILED")
        return super().peaks()


def test_a_candidate_that_leaves_the_device_in_error_is_named_by_what_fails_after_it(cache_dir):
    # On an H100 a kernel writing 4 TiB out of bounds failed its check with the illegal
    # address, and then every test of its group, and every group after it, read "its
    # client's peaks() raised CURANDError: CURAND_STATUS_INITIALIZATION_FAILED".
    client = _StickyClient()

    def breaks(x):
        client.broken = True
        return "breaks"

    local = LocalTuner("t", AutotuneConfig(cache_dir=cache_dir))
    tunables = TunableSet.of(
        len, {"good": candidate(client.clock, 1e-3, "good", result=1), "breaks": breaks}
    )
    with pytest.raises(AutotuneError, match=r"breaks.*CUDA_ERROR_ILLEGAL_ADDRESS"):
        local.execute(client.device_id, client, tunables, ([1],))
    later = LocalTuner("u", AutotuneConfig(cache_dir=cache_dir))
    worked = make_set(client, slow=3e-3, fast=1e-3).with_work(lambda x: Work(len(x), 8))
    since = (
        r"device 'fake-device' is unusable since candidate 'breaks' \(key 1\) raised"
        r" RuntimeError: CUDA_ERROR_ILLEGAL_ADDRESS"
    )
    with pytest.raises(ClientError, match=since):  # its peaks asked first
        later.execute(client.device_id, client, worked, ([1],))
    with pytest.raises(ClientError, match=since):  # its checks first
        later.execute(client.device_id, client, make_set(client, slow=3e-3, fast=1e-3), ([1],))
    # A device whose sync() recovers after a call's error is not called unusable.
    fine = _StickyClient()

    def raises(x):
        raise ValueError("not mine")

    other = LocalTuner("v", AutotuneConfig(cache_dir=cache_dir))
    with pytest.raises(AutotuneError, match="not mine"):
        other.execute(fine.device_id, fine, TunableSet.of(len, {"a": raises, "b": raises}), ([1],))
    assert (
        other.execute(fine.device_id, fine, make_set(fine, slow=3e-3, fast=1e-3), ([2, 3],))
        == "fast"
    )


def test_a_device_whose_sync_recovers_after_a_candidate_is_tuned_again(cache_dir):
    # A client's sync() that raised for a while after a candidate's error (a test suite's
    # fake device put right) refused every later tuning of the process, naming it.
    client = _StickyClient()

    def breaks(x):
        client.broken = True
        raise RuntimeError("for a while")

    local = LocalTuner("t", AutotuneConfig(cache_dir=cache_dir))
    tunables = TunableSet.of(
        len, {"good": candidate(client.clock, 1e-3, "good", result=1), "breaks": breaks}
    )
    with pytest.raises(AutotuneError, match="for a while"):
        local.execute(client.device_id, client, tunables, ([1],))
    client.broken = False
    later = LocalTuner("u", AutotuneConfig(cache_dir=cache_dir))
    worked = make_set(client, slow=3e-3, fast=1e-3)
    assert later.execute(client.device_id, client, worked, ([1],)) == "fast"


def test_a_device_in_error_before_a_tuning_blames_none_of_its_candidates(cache_dir):
    # Left in error by what ran before (a program's own kernel), the device failed the
    # tuning's first candidate, and every later tuning said the device was unusable since
    # that candidate, and to fix it.
    client = _StickyClient()
    client.broken = True
    local = LocalTuner("t", AutotuneConfig(cache_dir=cache_dir))
    before = r"device 'fake-device': its client's sync\(\) raised RuntimeError: CUDA_ERROR_ILLEGAL"
    for key in ([1], [2, 3]):
        with pytest.raises(ClientError, match=before) as raised:
            local.execute(client.device_id, client, make_set(client, slow=3e-3, fast=1e-3), (key,))
        assert "slow" not in str(raised.value)


class _NonePeaks(FakeClient):
    def peaks(self):
        return None


def test_a_client_whose_peaks_are_none_fails_the_call_naming_its_peaks(cache_dir):
    # A set with a work model failed in the roofline: "'NoneType' object has no attribute
    # 'memory_roof'".
    client = _NonePeaks()
    local = LocalTuner("t", AutotuneConfig(cache_dir=cache_dir))
    tunables = make_set(client, slow=3e-3, fast=1e-3).with_work(lambda x: Work(len(x), 8))
    with pytest.raises(ClientError, match=r"its client's peaks\(\) returned None, not a Peaks"):
        local.execute(client.device_id, client, tunables, ([1],))
    assert not list(cache_dir.rglob("*.json"))


def test_a_damaged_cache_file_is_not_reported_again_at_each_key_tuned_after(cache_dir):
    """A file in the configured cache folder that cannot be read is left as it is, and its
    load says so; each key tuned after it said it again, "(when loaded); not overwriting
    it", once per key: a program tuning its keys one call site at a time read the same
    warning at each. The first key's says its decision is kept in memory only."""
    client = FakeClient()
    path = cache_path(cache_dir, client.device_id, "t")
    path.parent.mkdir(parents=True)
    path.write_text('{"schema_version": 2, "entries": [')
    local = LocalTuner("t", AutotuneConfig(cache_dir=cache_dir))
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for n in range(1, 4):
            tunables = make_set(client, slow=3e-3, fast=1e-3)
            assert local.execute(client.device_id, client, tunables, ([1] * n,)) == "fast"
    assert [type(w.message) for w in caught] == [CacheFileWarning] * 2
    assert all(str(path) in str(w.message) for w in caught)
    assert "will not overwrite the file" in str(caught[0].message)
    assert "kept in memory only" in str(caught[1].message)
    assert path.read_text() == '{"schema_version": 2, "entries": ['


def test_a_records_file_that_cannot_be_written_warns_and_the_winner_is_still_saved(tmp_path):
    """`PYTEST_AUTOTUNE_RECORD` (or `record=`) naming a file that cannot be written raised
    the OSError out of the program's first call of a tuned function; one that could no
    longer be written later raised it out of a tuning, before its winner was saved."""
    blocked = tmp_path / "a-file"
    blocked.write_text("")
    client = FakeClient()
    config = AutotuneConfig(cache_dir=tmp_path / "cache", record=blocked / "records.jsonl")
    local = LocalTuner("t", config)
    # The file in the folder's place named: mkdir's own word for it, "File exists", read as
    # the records file existing.
    with pytest.warns(
        ConfigWarning,
        match=r"^t: the records cannot be written to .*records\.jsonl \(.*a-file is a file, not"
        r" a folder\).*the `record` setting: AutotuneConfig\(record=\.\.\.\)",
    ):
        out = local.execute(
            client.device_id, client, make_set(client, slow=3e-3, fast=1e-3), ([1],)
        )
    assert out == "fast"
    assert cache_path(tmp_path / "cache", client.device_id, "t").is_file()

    records = tmp_path / "records.jsonl"
    later = LocalTuner("u", replace(config, record=records))
    assert later.execute(client.device_id, client, make_set(client, a=2e-3, b=1e-3), ([1],)) == "b"
    records.unlink()
    records.mkdir()  # where the records were, a folder now
    with pytest.warns(
        ConfigWarning, match=r"^u: the records cannot be written to .*records\.jsonl"
    ):
        out = later.execute(client.device_id, client, make_set(client, a=2e-3, b=1e-3), ([1, 2],))
    assert out == "b"
    saved = PersistentCache(cache_path(tmp_path / "cache", client.device_id, "u"), journal=True)
    assert sorted(k.key for k in saved.load()) == ["1", "2"]


@pytest.mark.parametrize("stream", ["stdout", "stderr"])
@pytest.mark.parametrize("state", ["none", "closed"])
def test_records_to_a_stream_the_process_lacks_warn_and_the_winner_is_still_saved(
    tmp_path, monkeypatch, stream, state
):
    """`PYTEST_AUTOTUNE_RECORD=stdout` in a service started with its stdout closed (`>&-`,
    where Python's `sys.stdout` is None, as a Windows GUI program's is) raised an
    AttributeError out of the program's tuned call, and a stream the program closed a
    ValueError, both before the winner's save."""
    if state == "none":
        monkeypatch.setattr(sys, stream, None)
    else:
        closed = io.StringIO()
        closed.close()
        monkeypatch.setattr(sys, stream, closed)
    client = FakeClient()
    local = LocalTuner("t", AutotuneConfig(cache_dir=tmp_path / "cache", record=stream))
    with pytest.warns(
        ConfigWarning, match=rf"^t: the records cannot be written to {stream} \(.*{stream}.*\)"
    ):
        out = local.execute(client.device_id, client, make_set(client, a=2e-3, b=1e-3), ([1],))
    assert out == "b"
    assert cache_path(tmp_path / "cache", client.device_id, "t").is_file()


def test_with_the_cache_disabled_nothing_is_written(tmp_path):
    client = FakeClient()
    cache_dir = tmp_path / "cache"
    local = LocalTuner("t", AutotuneConfig(cache_dir=cache_dir, disable_cache=True))
    assert local.execute(client.device_id, client, make_set(client, a=2e-3, b=1e-3), ([1],)) == "b"
    assert not cache_dir.exists()


def caller(local, client, tunables, call, arity):
    """A call of `tunables` on `x` through `local`, as `execute` or a bound operation, with
    one input or two (the second a constant the key ignores)."""
    operation = local.bind(client.device_id, client, tunables)

    def run(x):
        inputs = (x,) if arity == 1 else (x, 0)
        if call == "bind":
            return operation(*inputs)
        return local.execute(client.device_id, client, tunables, inputs)

    return run


@pytest.mark.parametrize("call", ["execute", "bind"])
@pytest.mark.parametrize("arity", [1, 2])
def test_a_winner_that_declines_its_key_when_called_is_replaced_by_tuning_again(
    cache_dir, call, arity
):
    """A candidate may decline a key (`AutotuneSkip`) for some inputs of it only: the winner
    served from memory raised its `AutotuneSkip` out of the caller's call. The key is tuned
    again on those inputs, and its new winner serves them and the next calls."""
    client = FakeClient()

    def b(x, *rest):
        if x[0] == 4:
            raise AutotuneSkip("b does not take a 4 first")
        client.clock.advance(1e-3)
        return "b"

    fns = {"a": candidate(client.clock, 3e-3, "a", result="a"), "b": b}
    fns["c"] = candidate(client.clock, 2e-3, "c", result="c")
    tunables = TunableSet.of(len if arity == 1 else (lambda x, y: len(x)), fns)
    run = caller(
        LocalTuner("t", AutotuneConfig(cache_dir=cache_dir)), client, tunables, call, arity
    )
    assert [run([1, 2, 3]), run([1, 2, 3])] == ["b", "b"]
    assert [run([4, 5, 6]), run([4, 5, 6]), run([1, 2, 3])] == ["c", "c", "c"]
    saved = PersistentCache(cache_path(cache_dir, client.device_id, "t"), journal=True).load()
    assert [(v.key, v.fastest_name) for v in saved.values()] == [(3, "c")]


@pytest.mark.parametrize("call", ["execute", "bind"])
@pytest.mark.parametrize("arity", [1, 2])
def test_a_sets_only_candidate_that_declines_is_called_once_and_its_skip_raised(
    cache_dir, call, arity
):
    """With one candidate nothing is tuned, so a decline is not tuned away either: the
    candidate was served, declined, served again and called a second time to raise the same
    `AutotuneSkip` (twice the call's cost and side effects, on every call of such a key)."""
    client = FakeClient()
    calls = []

    def only(x, *rest):
        calls.append(x[0])
        if x[0] == 4:
            raise AutotuneSkip("only does not take a 4 first")
        return "only"

    tunables = TunableSet.of(len if arity == 1 else (lambda x, y: len(x)), {"only": only})
    run = caller(
        LocalTuner("t", AutotuneConfig(cache_dir=cache_dir)), client, tunables, call, arity
    )
    assert run([1, 2, 3]) == "only"
    for _ in range(2):  # a miss of the key's first call, then a hit
        with pytest.raises(AutotuneSkip, match="does not take a 4"):
            run([4, 5, 6])
    assert run([1, 2, 3]) == "only"
    assert calls == [1, 4, 4, 1]


# -- a new process --------------------------------------------------------------------------


def test_a_new_process_uses_the_persisted_winner_without_running_the_others(tmp_path):
    cache = str(tmp_path / "cache")
    printed, ran = run_program(tmp_path, ["slow", "fast", "mid"], PYTEST_AUTOTUNE_CACHE_DIR=cache)
    assert printed == "fast"
    assert ran == {"slow", "fast", "mid"}
    assert (tmp_path / "cache" / "fake-device" / "demo.sum.json").is_file()

    printed, ran = run_program(tmp_path, ["slow", "fast", "mid"], PYTEST_AUTOTUNE_CACHE_DIR=cache)
    assert printed == "fast"
    assert ran == {"fast"}


def test_a_new_process_uses_a_winner_persisted_by_this_one(tmp_path):
    client = FakeClient()
    cache_dir = tmp_path / "cache"
    local = LocalTuner("demo.sum", AutotuneConfig(cache_dir=cache_dir))
    local.execute(client.device_id, client, make_set(client, slow=3e-3, mid=2e-3), ([1, 2, 3],))

    printed, ran = run_program(tmp_path, ["slow", "mid"], PYTEST_AUTOTUNE_CACHE_DIR=str(cache_dir))
    assert (printed, ran) == ("mid", {"mid"})


def test_a_flag_key_is_served_to_the_number_it_equals_by_a_new_process(tmp_path):
    # One key_gen gives `x.flags.c_contiguous`, another `int(...)` of it: True == 1, one
    # tuning in memory; a new process read the file's `true` and tuned `1` again.
    client = FakeClient()
    config = AutotuneConfig(cache_dir=tmp_path / "cache")
    flagged = TunableSet.of(
        lambda x: (len(x), True),
        {
            "slow": candidate(client.clock, 3e-3, "slow", "slow"),
            "fast": candidate(client.clock, 1e-3, "fast", "fast"),
        },
    )
    first = LocalTuner("demo.flags", config)
    assert first.execute(client.device_id, client, first.init(lambda: flagged), ([1, 2],)) == "fast"
    path = cache_path(tmp_path / "cache", client.device_id, "demo.flags")
    assert [e["key"] for e in json.loads(path.read_text())["entries"]] == [[2, True]]

    counted = TunableSet.of(
        lambda x: (len(x), 1),
        {
            "slow": candidate(client.clock, 3e-3, "slow", "slow"),
            "fast": candidate(client.clock, 1e-3, "fast", "fast"),
        },
    )
    again = LocalTuner("demo.flags", config)
    assert again.execute(client.device_id, client, again.init(lambda: counted), ([1, 2],)) == "fast"
    assert [fn.calls for fn in counted.fns] == [0, 1]


@pytest.mark.parametrize(
    ("changed", "winner"),
    [
        (["slow", "renamed", "mid"], "renamed"),  # "fast" renamed, as fast as before
        (["mid", "fast", "slow"], "fast"),  # the same names in another order
        (["slow", "fast", "mid", "quick"], "quick"),  # one more candidate
    ],
)
def test_a_new_process_with_another_candidate_list_tunes_again(tmp_path, changed, winner):
    cache = str(tmp_path / "cache")
    run_program(tmp_path, ["slow", "fast", "mid"], PYTEST_AUTOTUNE_CACHE_DIR=cache)

    printed, ran = run_program(tmp_path, changed, PYTEST_AUTOTUNE_CACHE_DIR=cache)
    assert printed == winner
    assert ran == set(changed)

    printed, ran = run_program(tmp_path, changed, PYTEST_AUTOTUNE_CACHE_DIR=cache)
    assert (printed, ran) == (winner, {winner})


def test_with_the_cache_disabled_a_new_process_neither_reads_nor_writes_it(tmp_path):
    cache = tmp_path / "cache"
    run_program(tmp_path, ["slow", "fast", "mid"], PYTEST_AUTOTUNE_CACHE_DIR=str(cache))
    path = cache / "fake-device" / "demo.sum.json"
    written = path.read_bytes()
    files = sorted(cache.rglob("*"))

    for _ in range(2):
        printed, ran = run_program(
            tmp_path,
            ["slow", "fast", "mid", "quick"],
            PYTEST_AUTOTUNE_CACHE_DIR=str(cache),
            PYTEST_AUTOTUNE_DISABLE_CACHE="1",
        )
        assert printed == "quick"
        assert ran == {"slow", "fast", "mid", "quick"}
    assert path.read_bytes() == written
    assert sorted(cache.rglob("*")) == files


def test_with_the_cache_disabled_a_file_left_by_an_earlier_run_is_not_used(tmp_path):
    cache = tmp_path / "cache"
    run_program(tmp_path, ["slow", "fast", "mid"], PYTEST_AUTOTUNE_CACHE_DIR=str(cache))
    printed, ran = run_program(
        tmp_path,
        ["slow", "fast", "mid"],
        PYTEST_AUTOTUNE_CACHE_DIR=str(cache),
        PYTEST_AUTOTUNE_DISABLE_CACHE="1",
    )
    assert (printed, ran) == ("fast", {"slow", "fast", "mid"})


POOL_PROGRAM = textwrap.dedent(
    """
    # A program whose main script builds its tuner and hands work to a pool of spawned
    # processes (multiprocessing's default on macOS and Windows), which import the script
    # again as `__mp_main__`.
    import multiprocessing

    from pytest_autotune import TunableSet, local_tuner
    from tests.fakes import FakeClient

    TUNER = local_tuner()
    CLIENT = FakeClient()

    def a(x):
        CLIENT.clock.advance(2e-3)

    def b(x):
        CLIENT.clock.advance(1e-3)

    SET = TunableSet.of(len, {"a": a, "b": b})

    def work(n):
        TUNER.execute(CLIENT.device_id, CLIENT, SET, ([0] * n,))
        return TUNER.name, TUNER.package

    if __name__ == "__main__":
        with multiprocessing.get_context("spawn").Pool(1) as pool:
            print([work(1), *pool.map(work, [2])])
    """
)


def test_a_main_scripts_tuner_is_the_same_tuner_in_a_spawned_worker(tmp_path):
    script = tmp_path / "program.py"
    script.write_text(POOL_PROGRAM)
    environ = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_AUTOTUNE_")}
    environ.update(PYTHONPATH=str(REPO), XDG_CACHE_HOME=str(tmp_path / "xdg"))
    done = run_python([str(script)], tmp_path, environ)
    assert done.stdout.strip() == str([("program", None)] * 2)
    files = sorted(p.name for p in (tmp_path / "xdg").rglob("*.json"))
    assert files == ["program.json"]


def test_two_scripts_keep_two_files(tmp_path):
    # Every script's tuner was `__main__`: two scripts whose keys read alike (`x.size`)
    # and whose candidates differ replaced each other's entries in one file, and each run
    # tuned again. A script's tuner is named as importing it would name it.
    program = (
        "from pytest_autotune import TunableSet, local_tuner\n"
        "from tests.fakes import FakeClient\n"
        "TUNER = local_tuner()\n"
        "client = FakeClient()\n"
        "def slow(x):\n"
        "    client.clock.advance(2e-3)\n"
        "def fast(x):\n"
        "    client.clock.advance(1e-3)\n"
        "TUNER.execute(client.device_id, client, TunableSet.of(len, {NAMES}), ([1],))\n"
        "print(TUNER.name)\n"
    )
    (tmp_path / "train.py").write_text(program.replace("{NAMES}", "{'a': slow, 'b': fast}"))
    (tmp_path / "bench.py").write_text(program.replace("{NAMES}", "{'c': fast, 'd': slow}"))
    environ = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_AUTOTUNE_")}
    environ.update(PYTHONPATH=str(REPO), XDG_CACHE_HOME=str(tmp_path / "xdg"))
    names = []
    for script in ("train.py", "bench.py"):
        done = run_python([script], tmp_path, environ)
        names.append(done.stdout.strip())
    assert names == ["train", "bench"]
    files = sorted(p.name for p in (tmp_path / "xdg").rglob("*.json"))
    assert files == ["bench.json", "train.json"]


def test_a_hit_with_the_wrong_number_of_inputs_raises_what_the_key_generator_raises() -> None:
    # The one-input hit path unpacks without a length test; two inputs given to a set whose
    # key generator takes one must still fail as the key generator fails, not as an unpack.
    tuner = LocalTuner("wrong-count", AutotuneConfig(disable_cache=True))
    client = FakeClient()
    tunables = tuner.init(lambda: TunableSet.of(len, {"a": lambda x: x, "b": lambda x: x}))
    assert tuner.execute(client.device_id, client, tunables, ([1, 2],)) == [1, 2]
    assert tuner.execute(client.device_id, client, tunables, ([1, 2],)) == [1, 2]  # a hit
    with pytest.raises(TypeError, match="len"):
        tuner.execute(client.device_id, client, tunables, ([1, 2], [3]))


def test_inputs_that_are_not_a_tuple_are_refused_with_how_to_pass_them() -> None:
    # `execute(..., x)` for `execute(..., (x,))` would call the key generator with the
    # array's rows as arguments and fail with a message about its arity.
    tuner = LocalTuner("not-a-tuple", AutotuneConfig(disable_cache=True))
    client = FakeClient()
    tunables = tuner.init(lambda: TunableSet.of(len, {"a": lambda x: x, "b": lambda x: x}))
    for _ in range(2):  # a miss, then on a device that already holds a hit
        with pytest.raises(TypeError, match=r"inputs must be a tuple .* got str; pass \(x,\)"):
            tuner.execute(client.device_id, client, tunables, "abc")
        tuner.execute(client.device_id, client, tunables, ([1, 2],))


def test_inputs_given_bare_are_refused_on_a_hit_too() -> None:
    # Unpacking takes any iterable: an array of one row given for `(x,)`, or of two rows to
    # a set of two inputs, unpacked into its rows on the hit path, and where a row's key was
    # decided the winner ran on the rows and returned their result, with no word.
    import numpy as np

    tuner = LocalTuner("bare-on-a-hit", AutotuneConfig(disable_cache=True))
    client = FakeClient()
    unary = tuner.init(lambda: TunableSet.of(len, {"a": np.sum, "b": np.sum}))
    binary = tuner.init(
        lambda: TunableSet(lambda x, y: ("add", len(x))).with_(("a", np.add)).with_(("b", np.add))
    )
    assert tuner.execute(client.device_id, client, unary, (np.ones(5),)) == 5.0
    assert tuner.execute(client.device_id, client, binary, (np.ones(3), np.ones(3))).sum() == 6
    for tunables, bare in ((unary, np.ones((1, 5))), (binary, np.ones((2, 3)))):
        with pytest.raises(TypeError, match=r"inputs must be a tuple .* got ndarray"):
            tuner.execute(client.device_id, client, tunables, bare)
    assert tuner.execute(client.device_id, client, unary, [np.ones(5)]) == 5.0  # as the tuner


def test_the_init_function_given_for_its_set_is_refused_with_how_to_pass_the_set() -> None:
    tuner = LocalTuner("not-a-set", AutotuneConfig(disable_cache=True))
    client = FakeClient()

    def make_set():
        return TunableSet.of(len, {"a": lambda x: x, "b": lambda x: x})

    with pytest.raises(TypeError) as info:
        tuner.execute(client.device_id, client, make_set, ([1, 2],))
    assert str(info.value) == (
        "LocalTuner 'not-a-set': execute takes a TunableSet, got a function;"
        " pass the set, tunables = TUNER.init(make_set)"
    )
    with pytest.raises(TypeError, match=r"^LocalTuner 'not-a-set': bind takes a TunableSet, got a"):
        tuner.bind(client.device_id, client, make_set)


def test_a_set_another_tuner_built_is_refused_naming_both_tuners(tmp_path) -> None:
    # Served and saved under this tuner's name, while the `autotune` fixture writes the
    # set's winners under its own tuner's: the shipped winners were never read.
    config = AutotuneConfig(cache_dir=str(tmp_path))
    ours, theirs = LocalTuner("ours", config), LocalTuner("theirs", config)
    client = FakeClient()
    tunables = theirs.init(lambda: TunableSet.of(len, {"a": lambda x: x, "b": lambda x: x}))
    said = (
        r"^LocalTuner 'ours': {} got the set of LocalTuner 'theirs' \(built by its init\),"
        r" .*; pass this tuner's own, tunables = TUNER.init\(make_set\)$"
    )
    with pytest.raises(ValueError, match=said.format("execute")):
        ours.execute(client.device_id, client, tunables, ([1, 2],))
    with pytest.raises(ValueError, match=said.format("bind")):
        ours.bind(client.device_id, client, tunables)
    assert not list(tmp_path.rglob("ours.json"))
    assert theirs.execute(client.device_id, client, tunables, ([1, 2],)) == [1, 2]


def test_the_client_and_its_device_id_swapped_are_refused_with_the_order() -> None:
    tuner = LocalTuner("swapped", AutotuneConfig(disable_cache=True))
    client = FakeClient()
    tunables = tuner.init(lambda: TunableSet.of(len, {"a": lambda x: x, "b": lambda x: x}))
    with pytest.raises(TypeError) as info:
        tuner.execute(client, client.device_id, tunables, ([1, 2],))
    assert str(info.value) == (
        "LocalTuner 'swapped': the device id must be a str, got a FakeClient;"
        " call execute(client.device_id, client, tunables, inputs)"
    )


def test_a_client_given_as_its_device_id_or_its_class_is_refused_by_name() -> None:
    # With the shipped caches read (no cache_dir), the device id given twice failed with
    # "AttributeError: 'str' object has no attribute 'fingerprint'" from our frames, and the
    # client's class failed every candidate, the key then refused even with a client.
    client = FakeClient()
    tunables = TunableSet.of(len, {"a": lambda x: x, "b": lambda x: x})
    for wrong, said in (
        (client.device_id, r"got str 'fake-device'; a str is a device id: pass the client"),
        (FakeClient, r"got the class FakeClient: pass an instance"),
    ):
        tuner = LocalTuner("wrong-client")
        with pytest.raises(
            TypeError, match=r"^LocalTuner 'wrong-client': the client must be .*" + said
        ):
            tuner.execute(client.device_id, wrong, tunables, ([1, 2],))
        assert tuner.execute(client.device_id, client, tunables, ([1, 2],)) == [1, 2]


@pytest.mark.parametrize(
    ("key_gen", "shown"), [(lambda x: [len(x)], r"\[2\]"), (lambda x: UnfrozenKey(len(x)), "n=2")]
)
def test_a_key_that_cannot_be_hashed_is_named_with_what_to_make_it(key_gen, shown) -> None:
    tuner = LocalTuner("unhashable", AutotuneConfig(disable_cache=True))
    client = FakeClient()
    plain = TunableSet.of(len, {"a": lambda x: x, "b": lambda x: x})
    tuner.execute(client.device_id, client, plain, ([1],))  # the device now holds a hit
    tunables = TunableSet.of(key_gen, {"a": lambda x: x, "b": lambda x: x})
    op = tuner.bind(client.device_id, client, tunables)
    for call in (
        lambda: tuner.execute(client.device_id, client, tunables, ([1, 2],)),
        lambda: op([1, 2]),
    ):
        with pytest.raises(TypeError, match=f"autotune key .*{shown}.* is not hashable") as error:
            call()
        assert "AutotuneKey @dataclass(frozen=True), a str, an int or a tuple" in str(error.value)


# -- bound operations ----------------------------------------------------------------------


def test_a_bound_operation_tunes_on_a_new_key_then_calls_only_the_winner(cache_dir):
    client = FakeClient()
    local = LocalTuner("t", AutotuneConfig(cache_dir=cache_dir))
    tunables = make_set(client, slow=3e-3, fast=1e-3)
    op = local.bind(client.device_id, client, tunables)
    assert op([1]) == "fast"
    calls = [fn.calls for fn in tunables.fns]
    assert calls[0] > 0  # the first call tuned: every candidate ran
    assert op([2]) == "fast"
    assert [fn.calls for fn in tunables.fns] == [calls[0], calls[1] + 1]


def test_a_bound_operation_and_execute_share_their_decisions(cache_dir):
    client = FakeClient()
    local = LocalTuner("t", AutotuneConfig(cache_dir=cache_dir))
    tunables = make_set(client, slow=3e-3, fast=1e-3)
    assert local.execute(client.device_id, client, tunables, ([1],)) == "fast"
    calls = [fn.calls for fn in tunables.fns]
    assert local.bind(client.device_id, client, tunables)([1]) == "fast"
    assert [fn.calls for fn in tunables.fns] == [calls[0], calls[1] + 1]


def test_a_bound_operation_of_several_inputs_takes_them_positionally(cache_dir):
    client = FakeClient()
    local = LocalTuner("t", AutotuneConfig(cache_dir=cache_dir))

    def add(x, y):
        client.clock.advance(1e-3)
        return x + y

    def add_slowly(x, y):
        client.clock.advance(3e-3)
        return x + y

    tunables = TunableSet.of(lambda x, y: (len(x), len(y)), {"slow": add_slowly, "add": add})
    op = local.bind(client.device_id, client, tunables)
    assert op([1], [2]) == [1, 2]
    assert op([3], [4]) == [3, 4]  # a hit
    with pytest.raises(TypeError):
        op([1])


def test_after_clear_a_bound_operation_goes_back_to_the_tuner(cache_dir):
    client = FakeClient()
    local = LocalTuner("t", AutotuneConfig(cache_dir=cache_dir, disable_cache=True))
    tunables = make_set(client, slow=3e-3, fast=1e-3)
    op = local.bind(client.device_id, client, tunables)
    op([1])
    local.clear()
    calls = [fn.calls for fn in tunables.fns]
    assert op([1]) == "fast"
    # With nothing on file, the key is tuned again: both candidates ran.
    after = [fn.calls for fn in tunables.fns]
    assert all(a > b for a, b in zip(after, calls, strict=True))


def test_a_bound_operations_key_error_reaches_the_caller(cache_dir):
    def no_key(x):
        raise KeyError("no key for this input")

    client = FakeClient()
    local = LocalTuner("t", AutotuneConfig(cache_dir=cache_dir))
    op = local.bind(client.device_id, client, TunableSet.of(no_key, {"a": lambda x: x}))
    with pytest.raises(KeyError, match="no key for this input"):
        op([1])


def test_a_records_file_lost_mid_run_under_warnings_as_errors_still_saves_the_winner(tmp_path):
    # A project's `filterwarnings = error` turned the records warning into an exception
    # raised before the winner's save: the warning's own guard lost the save it was for.
    records = tmp_path / "records.jsonl"
    client = FakeClient()
    config = AutotuneConfig(cache_dir=tmp_path / "cache", record=records)
    local = LocalTuner("t", config)
    assert local.execute(client.device_id, client, make_set(client, a=2e-3, b=1e-3), ([1],)) == "b"
    records.unlink()
    records.mkdir()  # where the records were, a folder now
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(ConfigWarning, match=r"^t: the records cannot be written to "):
            local.execute(client.device_id, client, make_set(client, a=2e-3, b=1e-3), ([1, 2],))
    saved = PersistentCache(cache_path(tmp_path / "cache", client.device_id, "t"), journal=True)
    assert sorted(k.key for k in saved.load()) == ["1", "2"]


# -- in-place candidates --------------------------------------------------------------------


def scale_in_place(client: FakeClient, seconds: float):
    """An in-place candidate whose values grow with each call on the same array: its second
    call overflows float64, where one call on its caller's inputs never does."""
    import numpy as np

    def scale(x):
        client.clock.advance(seconds)
        np.multiply(x, 1e200, out=x)

    return scale


@pytest.mark.parametrize("errors", ["warnings as errors", "np.seterr raise"])
def test_an_in_place_candidate_overflowing_only_when_timed_again_is_tuned_not_failed(errors):
    # A library's in-place op in a program whose warnings are errors (a test suite's
    # `filterwarnings = error`): the timed calls meet their own output, overflow, and
    # every candidate failed, the program's call raising AutotuneError for an overflow
    # its one call on its own array never has.
    import numpy as np

    client = FakeClient()
    tuner = LocalTuner("scale", AutotuneConfig(disable_cache=True))
    candidates = {"slow": scale_in_place(client, 2e-3), "fast": scale_in_place(client, 1e-3)}
    tunables = tuner.init(lambda: TunableSet.of(len, candidates))
    x = np.ones(4)
    with warnings.catch_warnings(), np.errstate(all="warn"):
        warnings.simplefilter("error")
        if errors == "np.seterr raise":
            warnings.simplefilter("default")
            np.seterr(all="raise")  # inside the errstate block: put back when it ends
        tuner.execute(client.device_id, client, tunables, (x,))
    assert list(x) == [1e200] * 4  # the winner's one call on the caller's array
    decision = tuner.tuner(client.device_id, client).decision(4)
    assert decision is not None and decision.fastest_name == "fast"
    assert not any(isinstance(r, AutotuneError) for r in decision.results.values())


def test_a_candidate_whose_one_call_raises_a_floating_point_error_still_fails():
    # Only errors of calls meeting their own output are let by: a candidate whose call on
    # the caller's inputs overflows fails as before, and the one that does not wins.
    import numpy as np

    client = FakeClient()

    def overflowing(x):
        client.clock.advance(1e-3)
        return x * 1e308 * 10

    def clipped(x):
        client.clock.advance(2e-3)
        return np.minimum(x, 1.0) * 1e308

    tuner = LocalTuner("overflow", AutotuneConfig(disable_cache=True))
    tunables = tuner.init(
        lambda: TunableSet.of(len, {"overflowing": overflowing, "clipped": clipped})
    )
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = tuner.execute(client.device_id, client, tunables, (np.ones(3),))
    assert list(out) == [1e308] * 3
    decision = tuner.tuner(client.device_id, client).decision(3)
    assert decision is not None and decision.fastest_name == "clipped"
    assert "overflow" in str(decision.results[0])


@pytest.mark.parametrize("config", [{"checks": True}, "autotune.yaml", 3])
def test_a_config_that_is_no_autotune_config_is_refused_where_the_tuner_is_made(config):
    # It was taken, and the first execute failed deep in the tuner: "'dict' object has no
    # attribute 'cache_dir'".
    with pytest.raises(TypeError, match="config must be an AutotuneConfig or None, got"):
        local_tuner("cfg", config)


@pytest.mark.parametrize("package", [1, ""])
def test_a_package_that_is_no_name_is_refused_where_the_tuner_is_made(package):
    with pytest.raises(TypeError, match="package must be the name of the package"):
        local_tuner("pkg", package=package)


def test_a_local_tuner_name_that_is_no_str_is_refused():
    # `local_tuner(1)` was named "<module>-1" without a word.
    with pytest.raises(TypeError, match="local_tuner: name must be a str or None, got 1"):
        local_tuner(1)


def test_bind_with_the_client_and_its_device_id_swapped_is_refused_at_bind() -> None:
    # It was taken, and the bound operation failed at its first call, far from this line.
    tuner = LocalTuner("bind-swapped", AutotuneConfig(disable_cache=True))
    client = FakeClient()
    tunables = tuner.init(lambda: TunableSet.of(len, {"a": lambda x: x, "b": lambda x: x}))
    with pytest.raises(TypeError) as info:
        tuner.bind(client, client.device_id, tunables)
    assert str(info.value) == (
        "LocalTuner 'bind-swapped': bind takes a device id (a str) and a client, got"
        " FakeClient and str; call bind(client.device_id, client, tunables)"
    )


def test_a_bound_operation_of_one_input_called_with_two_names_its_tuner() -> None:
    # It read "LocalTuner.bind.<locals>.call_one() takes 1 positional argument but 2 were
    # given": a name of our internals, for a mistake in the user's call.
    tuner = LocalTuner("bind-arity", AutotuneConfig(disable_cache=True))
    client = FakeClient()
    tunables = tuner.init(lambda: TunableSet.of(len, {"a": lambda x: 1, "b": lambda x: 2}))
    operation = tuner.bind(client.device_id, client, tunables)
    with pytest.raises(TypeError) as info:
        operation([1], [2])
    assert str(info.value) == (
        "LocalTuner 'bind-arity': bound operation() takes 1 positional argument but 2 were given"
    )


def test_a_key_that_is_an_input_array_is_named_cut_short() -> None:
    # `TunableSet.of(lambda x: x, ...)`, the input itself for a key: the message printed
    # the whole array (6,800 characters for 1,000 floats).
    import numpy

    tuner = LocalTuner("array-key", AutotuneConfig(disable_cache=True))
    client = FakeClient()
    tunables = TunableSet.of(lambda x: x, {"a": lambda x: x, "b": lambda x: x})
    with pytest.raises(TypeError, match="is not hashable") as error:
        tuner.execute(client.device_id, client, tunables, (numpy.arange(1000.0),))
    assert len(str(error.value)) < 500
    assert "characters)" in str(error.value)


def test_an_init_function_that_takes_arguments_is_refused_with_what_init_takes() -> None:
    # `init(lambda key: ...)` raised "<lambda>() missing 1 required positional argument"
    # from inside the tuner.
    tuner = LocalTuner("init-args", AutotuneConfig(disable_cache=True))

    def make_set(key):
        return TunableSet.of(len, {"a": len, "b": len})

    with pytest.raises(TypeError, match=r"init\(make_set\): init takes a function of no") as error:
        tuner.init(make_set)
    assert "(key)" in str(error.value)

    # A make_set whose own body raises TypeError keeps its error.
    def broken():
        raise TypeError("inside make_set")

    with pytest.raises(TypeError, match="inside make_set"):
        tuner.init(broken)
