"""`LocalTuner`: its name, the set built once, and the winner persisted for the next process."""

import json
import os
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

from pytest_autotune.tune.cache import cache_path
from pytest_autotune.tune.config import AutotuneConfig
from pytest_autotune.tune.local import LocalTuner, local_tuner
from pytest_autotune.tune.tunable_set import TunableSet
from tests.fakes import FakeClient, candidate

REPO = Path(__file__).resolve().parents[2]

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
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(ran_log), ",".join(names)],
        check=False,
        env=environ,
        cwd=work,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip(), set(ran_log.read_text().split())


def make_set(client, **times):
    return TunableSet.of(
        len, {n: candidate(client.clock, t, n, result=n) for n, t in times.items()}
    )


@pytest.fixture
def cache_dir(tmp_path):
    return tmp_path / "cache"


# -- names ----------------------------------------------------------------------------------


def test_a_local_tuner_is_named_after_the_calling_module():
    assert local_tuner().name == __name__ == "tests.unit.test_local"


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


def test_after_clear_the_winner_comes_back_from_the_file_without_tuning(cache_dir):
    client = FakeClient()
    local = LocalTuner("t", AutotuneConfig(cache_dir=cache_dir))
    tunables = make_set(client, slow=3e-3, fast=1e-3)
    local.execute(client.device_id, client, tunables, ([1],))
    local.clear()
    fresh = make_set(client, slow=3e-3, fast=1e-3)
    assert local.execute(client.device_id, client, fresh, ([1],)) == "fast"
    assert [fn.calls for fn in fresh.fns] == [0, 1]


def test_with_the_cache_disabled_nothing_is_written(tmp_path):
    client = FakeClient()
    cache_dir = tmp_path / "cache"
    local = LocalTuner("t", AutotuneConfig(cache_dir=cache_dir, disable_cache=True))
    assert local.execute(client.device_id, client, make_set(client, a=2e-3, b=1e-3), ([1],)) == "b"
    assert not cache_dir.exists()


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
