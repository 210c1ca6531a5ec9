"""A library's `LocalTuner`: shipped caches read only, new keys in the user's cache, and the
nearest shipped device class standing in for a device nothing was tuned on."""

from __future__ import annotations

import hashlib
import importlib
import itertools
import json
import logging
import os
import re
import sys
import warnings
from pathlib import Path
from typing import Any

import pytest

from pytest_autotune.backends import cpu
from pytest_autotune.tune.cache import PersistentCache, cache_path
from pytest_autotune.tune.client_calls import ClientError
from pytest_autotune.tune.config import AutotuneConfig, ConfigError, resolve
from pytest_autotune.tune.device_class import DeviceClass, device_class, isa_level, nearest
from pytest_autotune.tune.errors import AutotuneSkip, CacheFileWarning
from pytest_autotune.tune.journal import journal_path
from pytest_autotune.tune.local import LocalTuner, local_tuner
from pytest_autotune.tune.shipped import user_cache_dir
from pytest_autotune.tune.tunable_set import TunableSet
from tests.fakes import FakeClient, candidate, failing

_packages = itertools.count()

AVX2 = {"model": "AMD EPYC 7B13 64-Core Processor", "isa": "x86-64-v3"}
AVX512 = {"model": "AMD EPYC 9654 96-Core Processor", "isa": "x86-64-v4"}


class Device(FakeClient):
    """A fake client on a device of our choosing."""

    def __init__(self, device_id: str, fingerprint: dict[str, Any] | None = None) -> None:
        super().__init__()
        self.device_id = device_id  # type: ignore[misc]
        self._fingerprint = fingerprint or {}
        self.fingerprints = 0

    def fingerprint(self) -> dict[str, Any]:
        self.fingerprints += 1
        return self._fingerprint


@pytest.fixture
def user_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    for name in list(os.environ):
        if name.startswith("PYTEST_AUTOTUNE_"):
            monkeypatch.delenv(name)
    return tmp_path / "xdg" / "pytest-autotune"


@pytest.fixture
def package(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[str, Path]:
    """An importable package of its own name (imports are cached per process). Its import
    writes no bytecode beside it: the tests look for files the tuner wrote there, and
    Python's own __pycache__ is not one (a run without PYTHONDONTWRITEBYTECODE found it)."""
    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    name = f"shipping_lib_{next(_packages)}"
    folder = tmp_path / "site" / name
    folder.mkdir(parents=True)
    (folder / "__init__.py").write_text("")
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    return name, folder


def candidates(client: FakeClient, **times: float) -> tuple[TunableSet, dict[str, Any]]:
    fns = {name: candidate(client.clock, t, name, result=name) for name, t in times.items()}
    return TunableSet.of(len, fns), fns


def ship(
    folder: Path, device_id: str, fingerprint: dict[str, Any], winner: str, key_size: int = 3
) -> None:
    """Ship, as the plugin writes it, a cache where `winner` is the fastest for one key."""
    client = Device(device_id)
    times = {"a": 2e-3, "b": 2e-3, "c": 2e-3, winner: 1e-3}
    tunables, _ = candidates(client, **times)
    config = AutotuneConfig(cache_dir=folder / ".autotune")
    LocalTuner("lib.ops", config).execute(device_id, client, tunables, ([0] * key_size,))
    cache = PersistentCache(cache_path(folder / ".autotune", device_id, "lib.ops"))
    cache.load()
    cache.save({}, device={"id": device_id, "fingerprint": {**fingerprint, "threads": 2}})


def files_under(path: Path) -> dict[Path, bytes]:
    return {p: p.read_bytes() for p in sorted(path.rglob("*")) if p.is_file()}


# -- where decisions are read and written -----------------------------------------------------


def test_the_user_cache_directory_follows_the_platform_convention(user_cache: Path) -> None:
    assert user_cache_dir() == user_cache


def test_a_local_tuner_reads_the_shipped_cache_of_its_top_level_package() -> None:
    assert local_tuner().package == "tests"
    assert local_tuner(package="sigkit").package == "sigkit"


def test_a_module_whose_name_imports_nothing_has_no_package_and_no_warning() -> None:
    # pytest's --import-mode=importlib names a test file's module after its path, a name
    # that imports nothing: its tuner ships nothing, and no typo is to be reported.
    names = {"__name__": "ghost_package_not_installed.test_ops"}
    exec("from pytest_autotune import local_tuner\nTUNER = local_tuner()", names)
    assert names["TUNER"].package is None
    assert names["TUNER"].name == "ghost_package_not_installed.test_ops"


def test_a_plain_top_level_module_ships_nothing(tmp_path, monkeypatch) -> None:
    """`helpers.py` beside a notebook, `TUNER = local_tuner()`: no package holds it, where
    Python 3.12's `importlib.resources` read the folder it lies in (the project, whose
    `.autotune` holds its tests' caches) as its shipped caches, and 3.11 read nothing."""
    name = f"plain_helpers_{next(_packages)}"
    (tmp_path / f"{name}.py").write_text(
        "from pytest_autotune import local_tuner\nTUNER = local_tuner()\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    helpers = importlib.import_module(name)
    assert helpers.TUNER.name == name
    assert helpers.TUNER.package is None


def test_below_a_namespace_package_the_shipped_caches_are_the_first_regular_packages(
    tmp_path, monkeypatch
) -> None:
    """`acme` is a namespace several distributions share (no `__init__.py`); the library is
    `acme.mylib`, whose `.autotune` its tests write and its wheel ships."""
    namespace = f"shipping_ns_{next(_packages)}"
    library = tmp_path / "site" / namespace / "mylib"
    library.mkdir(parents=True)
    (library / "__init__.py").write_text("")
    (library / "ops.py").write_text(
        "from pytest_autotune import local_tuner\nTUNER = local_tuner()\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    ops = importlib.import_module(f"{namespace}.mylib.ops")
    assert ops.TUNER.package == f"{namespace}.mylib"


def test_a_tuner_built_in_a_namespaced_librarys_init_reads_that_librarys_caches(
    tmp_path, monkeypatch
) -> None:
    """`TUNER = local_tuner()` in `acme/mylib/__init__.py`: the calling module is the
    library itself, not a module below it, and the namespace above it holds no data."""
    namespace = f"shipping_ns_{next(_packages)}"
    library = tmp_path / "site" / namespace / "mylib"
    library.mkdir(parents=True)
    (library / "__init__.py").write_text(
        "from pytest_autotune import local_tuner\nTUNER = local_tuner()\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path / "site"))
    mylib = importlib.import_module(f"{namespace}.mylib")
    assert mylib.TUNER.package == f"{namespace}.mylib"


def test_a_shipped_winner_is_served_without_benchmarking(user_cache, package) -> None:
    name, folder = package
    ship(folder, "cpu-lib-2t", AVX2, winner="b")
    client = Device("cpu-lib-2t")
    tunables, fns = candidates(client, a=1e-3, b=3e-3, c=2e-3)
    local = LocalTuner("lib.ops", package=name)
    assert local.execute(client.device_id, client, tunables, ([1, 2, 3],)) == "b"
    assert [f.calls for f in fns.values()] == [0, 1, 0]
    assert client.timed == []
    assert not user_cache.exists()


def test_a_new_key_is_tuned_into_the_user_cache_and_nowhere_else(
    user_cache, package, tmp_path, monkeypatch
) -> None:
    name, folder = package
    ship(folder, "cpu-lib-2t", AVX2, winner="b")
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    shipped = files_under(folder)
    client = Device("cpu-lib-2t")
    tunables, _ = candidates(client, a=1e-3, b=3e-3, c=2e-3)

    local = LocalTuner("lib.ops", package=name)
    assert local.execute(client.device_id, client, tunables, ([1] * 50,)) == "a"
    assert client.timed
    assert files_under(folder) == shipped
    assert list(work.iterdir()) == []
    user_file = user_cache / "cpu-lib-2t" / "lib.ops.json"
    assert [e["key"] for e in json.loads(user_file.read_text())["entries"]] == [50]

    again = Device("cpu-lib-2t")
    tunables, _fns = candidates(again, a=1e-3, b=3e-3, c=2e-3)
    fresh = LocalTuner("lib.ops", package=name)
    assert fresh.execute(again.device_id, again, tunables, ([1] * 50,)) == "a"
    assert fresh.execute(again.device_id, again, tunables, ([1, 2, 3],)) == "b"
    assert again.timed == []


def test_without_a_home_directory_the_shipped_winner_is_served_and_new_keys_tuned_in_memory(
    user_cache, package, monkeypatch, tmp_path
) -> None:
    """A process with neither HOME nor XDG_CACHE_HOME set, under a user id with no passwd
    entry (a container run as an arbitrary uid), has no per-user cache folder: platformdirs
    raised "could not determine the home directory" out of the library's first call, a
    shipped key's too."""
    name, folder = package
    ship(folder, "cpu-lib-2t", AVX2, winner="b")
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.delenv("HOME", raising=False)
    monkeypatch.setattr(os.path, "expanduser", lambda path: path)  # no passwd entry either
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    client = Device("cpu-lib-2t")
    tunables, _ = candidates(client, a=1e-3, b=3e-3, c=2e-3)
    local = LocalTuner("lib.ops", package=name)
    with pytest.warns(CacheFileWarning) as caught:
        assert local.execute(client.device_id, client, tunables, ([1, 2, 3],)) == "b"
    # platformdirs names '~/.cache'; before 4 (3.0 is the floor) it gave the path
    # unexpanded, '~/.cache/pytest-autotune', which was made in the working directory.
    # The advice in parentheses is platformdirs's own, and its wording changed: "set HOME
    # or an absolute XDG variable" in 4.12.4 (the newest pip installs on Python 3.10, as
    # 4.13 on need 3.11), "set an absolute HOME or XDG variable" in 4.14.9; before 4 it is
    # `user_cache_dir`'s, which reads as the newer one.
    (message,) = [str(w.message) for w in caught]
    assert re.fullmatch(
        r"no per-user cache folder \(could not determine the home directory for"
        r" '~/\.cache(/pytest-autotune)?', set (an absolute HOME or|HOME or an absolute) XDG"
        r" variable\): keys the shipped caches lack are tuned in each process, and kept in"
        r" memory only",
        message,
    ), message
    assert client.timed == []
    assert local.execute(client.device_id, client, tunables, ([1] * 50,)) == "a"
    assert local.execute(client.device_id, client, tunables, ([1] * 50,)) == "a"
    assert list(work.iterdir()) == []


def test_a_users_own_entry_wins_over_the_shipped_one(user_cache, package) -> None:
    name, folder = package
    ship(folder, "cpu-lib-2t", AVX2, winner="b")
    client = Device("cpu-lib-2t")
    tunables, _ = candidates(client, a=1e-3, b=3e-3, c=2e-3)
    user = LocalTuner("lib.ops", AutotuneConfig(cache_dir=user_cache))
    user.tuner(client.device_id).tune(3, tunables, ([1, 2, 3],), client)

    client = Device("cpu-lib-2t")
    tunables, _fns = candidates(client, a=1e-3, b=3e-3, c=2e-3)
    local = LocalTuner("lib.ops", package=name)
    assert local.execute(client.device_id, client, tunables, ([1, 2, 3],)) == "a"
    assert client.timed == []


@pytest.mark.parametrize("call", ["execute", "bind"])
def test_a_shipped_winner_that_declines_on_the_users_machine_is_tuned_again_there(
    user_cache, package, call
) -> None:
    """The library's CI had the optional dependency of its shipped winner; the user has not,
    and that candidate declines every key: served as shipped, each call raised its
    `AutotuneSkip`. The key is tuned here without it, and the next process reads the
    user's own winner."""
    name, folder = package
    ship(folder, "cpu-lib-2t", AVX2, winner="b")
    client = Device("cpu-lib-2t")
    fns = {
        "a": candidate(client.clock, 2e-3, "a", result="a"),
        "b": failing("b", AutotuneSkip("the accelerator is not installed")),
        "c": candidate(client.clock, 1e-3, "c", result="c"),
    }
    tunables = TunableSet.of(len, fns)
    local = LocalTuner("lib.ops", package=name)
    if call == "bind":
        operation = local.bind(client.device_id, client, tunables)
        assert [operation([1, 2, 3]), operation([4, 5, 6])] == ["c", "c"]
    else:
        run = [local.execute(client.device_id, client, tunables, ([k, 2, 3],)) for k in (1, 4)]
        assert run == ["c", "c"]
    assert client.timed
    user_file = user_cache / "cpu-lib-2t" / "lib.ops.json"
    saved = PersistentCache(user_file, journal=True).load()
    assert [(v.key, v.fastest_name) for v in saved.values()] == [(3, "c")]

    again = Device("cpu-lib-2t")
    tunables = TunableSet.of(len, {**fns, "a": candidate(again.clock, 2e-3, "a", result="a")})
    fresh = LocalTuner("lib.ops", package=name)
    assert fresh.execute(again.device_id, again, tunables, ([1, 2, 3],)) == "c"
    assert again.timed == []


def test_a_shipped_winner_for_the_current_candidates_beats_the_users_entry_for_older_ones(
    user_cache, package
) -> None:
    """The library was upgraded: the user tuned a key for its old candidate list, and the new
    version ships a winner for that key tuned over its new list. The shipped one is served."""
    name, folder = package
    ship(folder, "cpu-lib-2t", AVX2, winner="b")
    client = Device("cpu-lib-2t")
    older, _ = candidates(client, a=1e-3, b=3e-3)
    user = LocalTuner("lib.ops", AutotuneConfig(cache_dir=user_cache))
    user.tuner(client.device_id).tune(3, older, ([1, 2, 3],), client)

    client = Device("cpu-lib-2t")
    tunables, _ = candidates(client, a=1e-3, b=3e-3, c=2e-3)
    local = LocalTuner("lib.ops", package=name)
    assert local.execute(client.device_id, client, tunables, ([1, 2, 3],)) == "b"
    assert client.timed == []


def test_a_near_devices_winner_for_the_current_candidates_beats_a_stale_shipped_one(
    user_cache, package
) -> None:
    """This device's shipped file was tuned for an older candidate list, the near device's
    for the current one: the near device's winner is served, not a tuning."""
    name, folder = package
    ship(folder, "cpu-amd-epyc-7b13-2t", AVX2, winner="c")
    stale = Device("cpu-amd-epyc-7b13-8t")
    older, _ = candidates(stale, a=1e-3, b=3e-3)
    config = AutotuneConfig(cache_dir=folder / ".autotune")
    LocalTuner("lib.ops", config).execute(stale.device_id, stale, older, ([0] * 3,))

    client = Device("cpu-amd-epyc-7b13-8t", {**AVX2, "threads": 8})
    tunables, _ = candidates(client, a=1e-3, b=3e-3, c=2e-3)
    local = LocalTuner("lib.ops", package=name)
    assert local.execute(client.device_id, client, tunables, ([1, 2, 3],)) == "c"
    assert client.timed == []


def test_an_explicit_cache_dir_replaces_the_shipped_and_the_user_cache(
    user_cache, package, tmp_path
) -> None:
    name, folder = package
    ship(folder, "cpu-lib-2t", AVX2, winner="b")
    client = Device("cpu-lib-2t")
    tunables, _ = candidates(client, a=1e-3, b=3e-3, c=2e-3)
    local = LocalTuner("lib.ops", AutotuneConfig(cache_dir=tmp_path / "mine"), package=name)
    assert local.execute(client.device_id, client, tunables, ([1, 2, 3],)) == "a"
    assert client.timed
    assert (tmp_path / "mine" / "cpu-lib-2t" / "lib.ops.json").is_file()
    assert not user_cache.exists()


def test_an_unreadable_shipped_cache_warns_and_the_key_is_tuned(user_cache, package) -> None:
    name, folder = package
    broken = folder / ".autotune" / "cpu-lib-2t" / "lib.ops.json"
    broken.parent.mkdir(parents=True)
    broken.write_text("{not json")
    client = Device("cpu-lib-2t")
    tunables, _ = candidates(client, a=1e-3, b=3e-3)
    local = LocalTuner("lib.ops", package=name)
    with pytest.warns(
        CacheFileWarning, match=r"lib\.ops\.json.*this shipped cache is ignored"
    ) as caught:
        assert local.execute(client.device_id, client, tunables, ([1],)) == "a"
    assert broken.read_text() == "{not json"
    # Said at the library's call, not at the line of this package that found it.
    assert {warning.filename for warning in caught} == {__file__}


def test_a_shipped_file_storing_another_tuners_name_warns_and_is_not_served(
    user_cache, package
) -> None:
    name, folder = package
    ship(folder, "cpu-lib-2t", AVX2, winner="b")
    path = folder / ".autotune" / "cpu-lib-2t" / "lib.ops.json"
    path.write_text(path.read_text().replace('"tuner": "lib.ops"', '"tuner": "other.ops"'))
    client = Device("cpu-lib-2t")
    tunables, _ = candidates(client, a=1e-3, b=3e-3)
    local = LocalTuner("lib.ops", package=name)
    with pytest.warns(CacheFileWarning, match=r"holds the cache of 'other.ops', not of 'lib.ops'"):
        assert local.execute(client.device_id, client, tunables, ([1],)) == "a"
    assert client.timed


def test_a_shipped_winner_past_the_end_of_its_candidate_list_warns_and_is_tuned_again(
    user_cache, package
) -> None:
    # A hand edit (or a bad merge) of the index: the entry was quietly tuned again.
    name, folder = package
    ship(folder, "cpu-lib-2t", AVX2, winner="b")
    path = folder / ".autotune" / "cpu-lib-2t" / "lib.ops.json"
    document = json.loads(path.read_text())
    [entry] = document["entries"]
    entry["fastest_index"] = 7
    path.write_text(json.dumps(document))
    client = Device("cpu-lib-2t")
    tunables, _ = candidates(client, a=1e-3, b=3e-3, c=2e-3)
    local = LocalTuner("lib.ops", package=name)
    with pytest.warns(
        CacheFileWarning,
        match=r"^lib\.ops: the cached entry of key .* names candidate 7 as the winner, of 3"
        r" candidates \(a, b, c\); the entry is not used, and the key is tuned again$",
    ):
        assert local.execute(client.device_id, client, tunables, ([0] * 3,)) == "a"
    assert client.timed


def shipped_as_0_1(folder: Path, file_name: str) -> Path:
    """The shipped folder of a library whose winner "b" 0.1.0 filed as `file_name`, with no
    tuner name stored, as it wrote its files."""
    ship(folder, "cpu-lib-2t", AVX2, winner="b")
    shipped = folder / ".autotune" / "cpu-lib-2t"
    document = json.loads((shipped / "lib.ops.json").read_text())
    del document["tuner"]
    (shipped / "lib.ops.json").unlink()
    (shipped / file_name).write_text(json.dumps(document))
    return shipped


def test_a_file_shipped_under_its_0_1_name_is_served(user_cache, package) -> None:
    """`Lib.Ops` was filed as `Lib.Ops.json`; it is `Lib.Ops-<hash>.json` now."""
    name, folder = package
    shipped_as_0_1(folder, "Lib.Ops.json")
    assert cache_path(folder / ".autotune", "cpu-lib-2t", "Lib.Ops").name != "Lib.Ops.json"
    client = Device("cpu-lib-2t")
    tunables, _ = candidates(client, a=1e-3, b=3e-3, c=2e-3)
    local = LocalTuner("Lib.Ops", package=name)
    assert local.execute(client.device_id, client, tunables, ([1, 2, 3],)) == "b"
    assert client.timed == []


def test_a_file_shipped_under_0_1s_first_name_is_served(user_cache, package) -> None:
    """0.1.0's first releases filed `lib ops` as `lib_ops.json`, with no hash for the space
    (later ones as `lib_ops-<hash>.json`); it is `lib_ops-<other hash>.json` now."""
    name, folder = package
    shipped_as_0_1(folder, "lib_ops.json")
    client = Device("cpu-lib-2t")
    tunables, _ = candidates(client, a=1e-3, b=3e-3, c=2e-3)
    local = LocalTuner("lib ops", package=name)
    assert local.execute(client.device_id, client, tunables, ([1, 2, 3],)) == "b"
    assert client.timed == []


def test_a_tuner_of_a_package_that_ships_nothing_tunes_into_the_user_cache(user_cache) -> None:
    client = Device("cpu-lib-2t")
    tunables, _ = candidates(client, a=1e-3, b=3e-3)
    local = LocalTuner("lib.ops", package="json")  # a package, with no .autotune folder
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert local.execute(client.device_id, client, tunables, ([1],)) == "a"
    assert (user_cache / "cpu-lib-2t" / "lib.ops.json").is_file()


def test_a_tuner_of_a_script_run_by_runpy_run_path_tunes_into_the_user_cache(
    user_cache, tmp_path
) -> None:
    # While `runpy.run_path` runs a script, its module is `sys.modules["<run_path>"]`, of
    # no spec: the tuner's first call failed in importlib.resources with an AttributeError.
    import runpy

    script = tmp_path / "script.py"
    script.write_text(
        "from pytest_autotune import local_tuner\n"
        "from pytest_autotune.tune.tunable_set import TunableSet\n"
        "from tests.fakes import candidate\n"
        "TUNER = local_tuner()\n"
        "tunables = TunableSet.of(len, {n: candidate(client.clock, t, n, result=n)"
        " for n, t in (('a', 1e-3), ('b', 3e-3))})\n"
        "out = TUNER.execute(client.device_id, client, tunables, ([1],))\n"
    )
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ran = runpy.run_path(str(script), {"client": Device("cpu-lib-2t")})
    assert ran["out"] == "a"
    assert ran["TUNER"].name == "<run_path>"
    assert cache_path(user_cache, "cpu-lib-2t", "<run_path>").is_file()


def test_a_package_that_cannot_be_imported_is_named_and_the_key_is_tuned(user_cache) -> None:
    # `package="mylib"` misspelt served no shipped winner, and said nothing.
    client = Device("cpu-lib-2t")
    tunables, _ = candidates(client, a=1e-3, b=3e-3)
    local = LocalTuner("lib.ops", package="no_such_package_here")
    with pytest.warns(CacheFileWarning, match="package 'no_such_package_here' of a LocalTuner"):
        assert local.execute(client.device_id, client, tunables, ([1],)) == "a"
    assert (user_cache / "cpu-lib-2t" / "lib.ops.json").is_file()


def test_a_damaged_user_cache_is_set_aside_and_the_next_process_is_served(user_cache) -> None:
    # A user's cache is written by tuning alone: kept as it was, a damaged one would make
    # every process on this machine retune every key and never save one.
    user_file = user_cache / "cpu-lib-2t" / "lib.ops.json"
    user_file.parent.mkdir(parents=True)
    user_file.write_text('{"schema_version": 2, "entries": [')
    client = Device("cpu-lib-2t")
    tunables, _ = candidates(client, a=1e-3, b=3e-3)
    local = LocalTuner("lib.ops", package="json")
    with pytest.warns(CacheFileWarning, match=r"set aside as lib\.ops\.json\.damaged-1"):
        assert local.execute(client.device_id, client, tunables, ([1],)) == "a"
    assert (user_file.parent / "lib.ops.json.damaged-1").read_text() == (
        '{"schema_version": 2, "entries": ['
    )
    assert [e["key"] for e in json.loads(user_file.read_text())["entries"]] == [1]

    again = Device("cpu-lib-2t")
    tunables, _ = candidates(again, a=1e-3, b=3e-3)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        fresh = LocalTuner("lib.ops", package="json")
        assert fresh.execute(again.device_id, again, tunables, ([1],)) == "a"
    assert again.timed == []


def test_a_user_cache_damaged_while_a_program_runs_is_set_aside_at_its_next_save(
    user_cache,
) -> None:
    # A service runs for weeks: a file damaged after its start (a disk error, a hand edit)
    # was set aside only by the next process, and until then every key it tuned was kept
    # in memory only, each save refused with "is not valid JSON".
    client = Device("cpu-lib-2t")
    tunables, _ = candidates(client, a=1e-3, b=3e-3)
    local = LocalTuner("lib.ops", package="json")
    assert local.execute(client.device_id, client, tunables, ([1],)) == "a"
    user_file = user_cache / "cpu-lib-2t" / "lib.ops.json"
    user_file.write_text('{"schema_version": 2, "entries": [')
    with pytest.warns(CacheFileWarning, match=r"set aside as lib\.ops\.json\.damaged-1") as caught:
        assert local.execute(client.device_id, client, tunables, ([1, 2],)) == "a"
    assert not any("memory only" in str(w.message) for w in caught)
    assert (user_file.parent / "lib.ops.json.damaged-1").read_text() == (
        '{"schema_version": 2, "entries": ['
    )
    assert [e["key"] for e in json.loads(user_file.read_text())["entries"]] == [2]


def test_a_damaged_journal_sets_aside_its_file_too_and_keeps_earlier_damaged_copies(
    user_cache,
) -> None:
    folder = user_cache / "cpu-lib-2t"
    folder.mkdir(parents=True)
    (folder / "lib.ops.json.damaged-1").write_text("older")
    client = Device("cpu-lib-2t")
    tunables, _ = candidates(client, a=1e-3, b=3e-3)
    LocalTuner("lib.ops", package="json").execute(client.device_id, client, tunables, ([1],))
    whole = (folder / "lib.ops.json").read_text()
    (folder / "lib.ops.json.journal").write_text("not a journal line\n")
    client = Device("cpu-lib-2t")
    tunables, _ = candidates(client, a=1e-3, b=3e-3)
    with pytest.warns(CacheFileWarning, match=r"journal.*set aside as lib\.ops\.json\.damaged-2"):
        LocalTuner("lib.ops", package="json").execute(client.device_id, client, tunables, ([1],))
    assert (folder / "lib.ops.json.damaged-1").read_text() == "older"
    assert (folder / "lib.ops.json.damaged-2").read_text() == whole
    assert (folder / "lib.ops.json.damaged-2.journal").read_text() == "not a journal line\n"


def test_a_user_cache_of_a_newer_pytest_autotune_is_left_for_it(user_cache) -> None:
    # Two environments on one machine, the other with a newer version: its file is whole.
    user_file = user_cache / "cpu-lib-2t" / "lib.ops.json"
    user_file.parent.mkdir(parents=True)
    user_file.write_text('{"schema_version": 99, "entries": []}')
    client = Device("cpu-lib-2t")
    tunables, _ = candidates(client, a=1e-3, b=3e-3)
    local = LocalTuner("lib.ops", package="json")
    with pytest.warns(CacheFileWarning, match="newer pytest-autotune") as caught:
        assert local.execute(client.device_id, client, tunables, ([1],)) == "a"
    assert not any("set aside" in str(w.message) for w in caught)
    assert user_file.read_text() == '{"schema_version": 99, "entries": []}'
    assert sorted(p.name for p in user_file.parent.iterdir() if "damaged" in p.name) == []


def test_a_user_cache_whose_journal_a_newer_pytest_autotune_wrote_is_left_for_it(
    user_cache,
) -> None:
    # The other environment's version appends journal lines of a format this one does not
    # know: its file and journal are whole, and must not be set aside as damaged.
    client = Device("cpu-lib-2t")
    tunables, _ = candidates(client, a=1e-3, b=3e-3)
    LocalTuner("lib.ops", package="json").execute(client.device_id, client, tunables, ([1],))
    user_file = user_cache / "cpu-lib-2t" / "lib.ops.json"
    newer = journal_path(user_file)
    digest = hashlib.sha256(user_file.read_bytes()).hexdigest()
    newer.write_text(json.dumps({"journal_of": digest, "journal_version": 2}) + "\n{}\n")
    before = user_file.read_bytes(), newer.read_bytes()
    with pytest.warns(CacheFileWarning, match="newer pytest-autotune") as caught:
        assert (
            LocalTuner("lib.ops", package="json").execute(
                client.device_id, client, tunables, ([1, 2],)
            )
            == "a"
        )
    assert not any("set aside" in str(w.message) for w in caught)
    assert (user_file.read_bytes(), newer.read_bytes()) == before
    assert sorted(p.name for p in user_file.parent.iterdir() if "damaged" in p.name) == []


def test_a_file_in_place_of_the_user_cache_folder_is_not_answered_with_a_cache_dir(
    user_cache, package
) -> None:
    # The advice a pytest run gets, to point PYTEST_AUTOTUNE_CACHE_DIR elsewhere, would cost
    # a library's user every winner its package ships: a cache_dir replaces them too.
    name, folder = package
    ship(folder, "cpu-lib-2t", AVX2, winner="b")
    user_cache.parent.write_text("not a folder")
    client = Device("cpu-lib-2t", AVX2)
    tunables, _ = candidates(client, a=1e-3, b=3e-3, c=2e-3)
    with pytest.warns(CacheFileWarning) as caught:
        local = LocalTuner("lib.ops", package=name)
        assert local.execute(client.device_id, client, tunables, ([1, 2, 3],)) == "b"
    (said,) = [
        str(w.message) for w in caught if "where a folder of caches belongs" in str(w.message)
    ]
    assert "PYTEST_AUTOTUNE_CACHE_DIR) elsewhere" not in said
    assert said.endswith(
        "move it aside (a cache_dir, PYTEST_AUTOTUNE_CACHE_DIR, would replace the"
        f" winners {name} ships as well)"
    )


def test_a_damaged_cache_in_an_explicit_cache_dir_is_left_alone(user_cache, tmp_path) -> None:
    # A folder the user named may be committed: only a person throws its files away.
    folder = tmp_path / "named"
    broken = cache_path(folder, "cpu-lib-2t", "lib.ops")
    broken.parent.mkdir(parents=True)
    broken.write_text("{not json")
    client = Device("cpu-lib-2t")
    tunables, _ = candidates(client, a=1e-3, b=3e-3)
    local = LocalTuner("lib.ops", AutotuneConfig(cache_dir=folder))
    with pytest.warns(CacheFileWarning) as caught:
        assert local.execute(client.device_id, client, tunables, ([1],)) == "a"
    assert "will not overwrite the file" in str(caught[0].message)
    assert not any("set aside" in str(w.message) for w in caught)
    assert broken.read_text() == "{not json"
    assert [p.name for p in broken.parent.iterdir() if not p.name.startswith(".")] == [broken.name]


# -- a device nothing was shipped for ---------------------------------------------------------


def test_a_device_of_a_shipped_class_gets_the_winners_of_the_nearest_device(
    user_cache, package
) -> None:
    name, folder = package
    ship(folder, "cpu-amd-epyc-7b13-2t", {**AVX2, "threads": 2}, winner="b")
    ship(folder, "cpu-amd-epyc-7b13-64t", {**AVX2}, winner="c")
    ship(folder, "cpu-amd-epyc-9654-8t", AVX512, winner="a")
    data = json.loads((folder / ".autotune/cpu-amd-epyc-7b13-64t/lib.ops.json").read_text())
    data["device"]["fingerprint"]["threads"] = 64
    (folder / ".autotune/cpu-amd-epyc-7b13-64t/lib.ops.json").write_text(json.dumps(data))

    client = Device("cpu-amd-epyc-7763-8t", {**AVX2, "threads": 8})
    tunables, fns = candidates(client, a=1e-3, b=3e-3, c=2e-3)
    local = LocalTuner("lib.ops", package=name)
    assert local.execute(client.device_id, client, tunables, ([1, 2, 3],)) == "b"
    assert client.timed == []
    assert [f.calls for f in fns.values()] == [0, 1, 0]
    assert not user_cache.exists()


def test_a_device_of_another_class_tunes_its_own_winners(user_cache, package) -> None:
    name, folder = package
    ship(folder, "cpu-amd-epyc-9654-8t", AVX512, winner="b")
    client = Device("cpu-intel-xeon-8t", {"model": "Intel(R) Xeon(R)", "isa": "x86-64-v4"})
    tunables, _ = candidates(client, a=1e-3, b=3e-3, c=2e-3)
    local = LocalTuner("lib.ops", package=name)
    assert local.execute(client.device_id, client, tunables, ([1, 2, 3],)) == "a"
    assert client.timed
    assert (user_cache / "cpu-intel-xeon-8t" / "lib.ops.json").is_file()


def test_a_device_of_no_shipped_class_is_told_why_its_keys_are_tuned(
    user_cache, package, caplog
) -> None:
    # The nearest class's winners were logged, but a device no shipped class serves tuned
    # every key without a word: a library's author could not tell which users pay for it.
    name, folder = package
    ship(folder, "cpu-amd-epyc-9654-8t", AVX512, winner="b")
    client = Device("cpu-intel-xeon-8t", {"model": "Intel(R) Xeon(R)", "isa": "x86-64-v4"})
    tunables, _ = candidates(client, a=1e-3, b=3e-3)
    caplog.set_level(logging.INFO, logger="pytest_autotune")
    LocalTuner("lib.ops", package=name).execute(client.device_id, client, tunables, ([1],))
    (line,) = [r.getMessage() for r in caplog.records if "ships no winner" in r.getMessage()]
    assert line == (
        f"lib.ops: {name} ships no winner for cpu-intel-xeon-8t (class cpu-intel-x86-64-v4)"
        " nor its class, only for cpu-amd-epyc-9654-8t (class cpu-amd-x86-64-v4): its keys"
        " are tuned on this machine"
    )


def test_a_shipped_device_of_no_other_shipped_class_says_nothing_of_it(
    user_cache, package, caplog
) -> None:
    name, folder = package
    ship(folder, "cpu-amd-epyc-9654-8t", AVX512, winner="b")
    ship(folder, "cpu-intel-xeon-8t", {"model": "Intel(R) Xeon(R)", "isa": "x86-64-v4"}, "a")
    client = Device("cpu-intel-xeon-8t", {"model": "Intel(R) Xeon(R)", "isa": "x86-64-v4"})
    tunables, _ = candidates(client, a=1e-3, b=3e-3)
    caplog.set_level(logging.INFO, logger="pytest_autotune")
    LocalTuner("lib.ops", package=name).execute(client.device_id, client, tunables, ([1],))
    assert not [r for r in caplog.records if "ships no winner" in r.getMessage()]


def test_with_shipped_match_exact_a_near_device_tunes_its_own_winners(user_cache, package) -> None:
    name, folder = package
    ship(folder, "cpu-amd-epyc-7b13-2t", AVX2, winner="b")
    client = Device("cpu-amd-epyc-7763-8t", {**AVX2, "threads": 8})
    tunables, _ = candidates(client, a=1e-3, b=3e-3, c=2e-3)
    local = LocalTuner("lib.ops", AutotuneConfig(shipped_match="exact"), package=name)
    assert local.execute(client.device_id, client, tunables, ([1, 2, 3],)) == "a"
    assert client.timed
    # Once, for the device block of the user's cache file; the shipped lookup took none.
    assert client.fingerprints == 1


def test_the_fingerprint_is_not_taken_when_only_this_device_is_shipped(user_cache, package) -> None:
    name, folder = package
    ship(folder, "cpu-lib-2t", AVX2, winner="b")
    client = Device("cpu-lib-2t", AVX2)
    tunables, _ = candidates(client, a=1e-3, b=3e-3)
    LocalTuner("lib.ops", package=name).execute(client.device_id, client, tunables, ([1],))
    # Once, for the device block of the user's cache file; the shipped lookup took none.
    assert client.fingerprints == 1


def test_a_client_fingerprint_of_no_dict_is_named_where_another_device_is_shipped(
    user_cache, package
) -> None:
    # The nearest class is read from the fingerprint: a client's None there raised
    # "'NoneType' object has no attribute 'get'" from device_class, out of the first call.
    name, folder = package
    ship(folder, "cpu-amd-epyc-7b13-2t", AVX2, winner="b")
    client = Device("cpu-amd-epyc-7763-8t")
    client._fingerprint = None  # type: ignore[assignment]
    tunables, _ = candidates(client, a=1e-3, b=3e-3)
    local = LocalTuner("lib.ops", package=name)
    with pytest.raises(ClientError, match=r"fingerprint\(\) returned None, not a dict"):
        local.execute(client.device_id, client, tunables, ([1],))


def test_shipped_match_accepts_exact_or_class_only() -> None:
    assert resolve([("", {"PYTEST_AUTOTUNE_SHIPPED_MATCH": "exact"})]).shipped_match == "exact"
    with pytest.raises(ConfigError, match="PYTEST_AUTOTUNE_SHIPPED_MATCH: expected exact or class"):
        resolve([("", {"PYTEST_AUTOTUNE_SHIPPED_MATCH": "nearest"})])


# -- device classes ---------------------------------------------------------------------------

V2 = {"cx16", "lahf_lm", "popcnt", "sse4_1", "sse4_2", "ssse3"}
V3 = V2 | {"avx", "avx2", "bmi1", "bmi2", "f16c", "fma", "abm", "movbe", "xsave"}
V4 = V3 | {"avx512f", "avx512bw", "avx512cd", "avx512dq", "avx512vl"}


@pytest.mark.parametrize(
    ("machine", "flags", "level"),
    [
        ("x86_64", {"sse2"}, "x86-64"),
        ("x86_64", V2, "x86-64-v2"),
        ("x86_64", V3, "x86-64-v3"),
        ("x86_64", V4, "x86-64-v4"),
        ("x86_64", V4 - {"avx2"}, "x86-64-v2"),  # AVX-512 without AVX2 is not v4
        ("aarch64", {"fp", "asimd"}, "aarch64"),
        ("aarch64", {"asimd", "sve", "sve2"}, "aarch64-sve2"),
        ("arm64", set(), "aarch64"),
        ("riscv64", set(), "riscv64"),
    ],
)
def test_the_isa_level_is_the_highest_whose_flags_are_all_present(machine, flags, level) -> None:
    assert isa_level(machine, flags) == level


def test_a_cpu_class_is_its_vendor_and_isa_level_and_a_gpu_class_its_compute_capability() -> None:
    cpu = device_class(
        "cpu-intel-xeon-8t", {"model": "Intel(R) Xeon(R) Gold", "isa": "x86-64-v4", "threads": 8}
    )
    assert cpu == DeviceClass("cpu-intel-x86-64-v4", 8)
    gpu = device_class("cuda-nvidia-h100", {"compute_capability": "90", "sm_count": 132})
    assert gpu == DeviceClass("cuda-sm90", 132)
    assert device_class("cpu-old-2t", {"model": "Old"}) is None  # a file without the ISA
    assert device_class("fake-device", {"fake": True}) is None


@pytest.mark.parametrize(
    "model",
    [
        "11th Gen Intel(R) Core(TM) i7-1165G7 @ 2.80GHz",
        "12th Gen Intel(R) Core(TM) i7-1260P",
        "Intel(R) Core(TM) Ultra 7 155H",
    ],
)
def test_a_cpu_class_names_its_vendor_where_the_model_begins_with_a_generation(
    model: str,
) -> None:
    """Intel's laptop CPUs of the 11th to 14th generations name it first: their classes were
    `cpu-11th-...`, `cpu-12th-...`, and a winner shipped from one served none of the others."""
    found = device_class("cpu-x-8t", {"model": model, "isa": "x86-64-v3", "threads": 8})
    assert found == DeviceClass("cpu-intel-x86-64-v3", 8)


def test_the_nearest_device_of_a_class_is_the_nearest_in_size_the_larger_on_a_tie() -> None:
    mine = DeviceClass("cpu-amd-x86-64-v3", 8)
    others = {
        "cpu-a-4t": DeviceClass("cpu-amd-x86-64-v3", 4),
        "cpu-a-12t": DeviceClass("cpu-amd-x86-64-v3", 12),
        "cpu-a-7t": DeviceClass("cpu-amd-x86-64-v4", 7),
        "cpu-b": None,
    }
    assert nearest(mine, others) == "cpu-a-12t"
    assert nearest(DeviceClass("cpu-intel-x86-64-v3", 8), others) is None


def test_a_warning_free_default_tuner_never_writes_to_the_working_directory(
    user_cache, tmp_path, monkeypatch
) -> None:
    monkeypatch.chdir(tmp_path)
    client = Device("cpu-lib-2t")
    tunables, _ = candidates(client, a=1e-3, b=3e-3)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        local_tuner("w").execute(client.device_id, client, tunables, ([1],))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["xdg"]


def test_the_set_a_local_tuner_builds_carries_the_tuners_name() -> None:
    tunables = LocalTuner("lib.ops").init(lambda: TunableSet(len))
    assert tunables.tuner == "lib.ops"
    assert TunableSet(len).tuner is None


def test_this_machines_cpu_has_a_class() -> None:
    client = cpu()
    found = device_class(client.device_id, client.fingerprint())
    assert found is not None
    assert found.name.startswith("cpu-")
    assert found.size == client.fingerprint()["threads"]


def test_a_key_this_devices_shipped_file_lacks_takes_the_near_devices_winner(
    user_cache, package
) -> None:
    name, folder = package
    ship(folder, "cpu-amd-epyc-7763-8t", AVX2, winner="b", key_size=3)
    ship(folder, "cpu-amd-epyc-7b13-2t", AVX2, winner="c", key_size=50)
    client = Device("cpu-amd-epyc-7763-8t", {**AVX2, "threads": 8})
    tunables, _ = candidates(client, a=1e-3, b=3e-3, c=2e-3)
    local = LocalTuner("lib.ops", package=name)
    assert local.execute(client.device_id, client, tunables, ([1, 2, 3],)) == "b"
    assert local.execute(client.device_id, client, tunables, ([1] * 50,)) == "c"
    assert client.timed == []


def test_a_damaged_user_cache_another_process_set_aside_first_is_read_again(
    user_cache, monkeypatch
) -> None:
    # Two workers of one machine load the damaged file at once: the second finds, under the
    # lock, that the first moved it and saved a new one; it reads that, and saves too.
    user_file = user_cache / "cpu-lib-2t" / "lib.ops.json"
    user_file.parent.mkdir(parents=True)
    user_file.write_text("{not json")

    def first_worker_did_it(self, error):
        user_file.rename(user_file.with_name("lib.ops.json.damaged-1"))

    monkeypatch.setattr(PersistentCache, "_set_aside", first_worker_did_it)
    client = Device("cpu-lib-2t")
    tunables, _ = candidates(client, a=1e-3, b=3e-3)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        local = LocalTuner("lib.ops", package="json")
        assert local.execute(client.device_id, client, tunables, ([1],)) == "a"
    assert [e["key"] for e in json.loads(user_file.read_text())["entries"]] == [1]
