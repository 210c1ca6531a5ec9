"""The Tuner: cache lookups, the plan's batches, checks, persistence and threads."""

import contextlib
import json
import os
import random
import threading
import time
import traceback
import warnings
import weakref
from collections.abc import Iterator
from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import pytest

from pytest_autotune.tune import call_scope, persisted
from pytest_autotune.tune.benchmark import AutotuneOutcome
from pytest_autotune.tune.bounds import Work
from pytest_autotune.tune.cache import PersistentCache
from pytest_autotune.tune.config import AutotuneConfig, BenchConfig
from pytest_autotune.tune.errors import (
    AutotuneError,
    AutotuneErrorKind,
    AutotuneSkip,
    CacheFileWarning,
    InputGeneratorError,
)
from pytest_autotune.tune.files import lock_beside
from pytest_autotune.tune.key import AutotuneKey
from pytest_autotune.tune.log import Eliminated, Preferred
from pytest_autotune.tune.records import Recorder, read_records
from pytest_autotune.tune.tunable import Tunable, TuneGroup
from pytest_autotune.tune.tunable_set import TunableSet
from pytest_autotune.tune.tuner import Tuner
from tests.fakes import FakeClient, FakeClock, candidate, failing
from tests.forking import run_forked


def by_size(x):
    return len(x)


def make(clock, **times):
    return TunableSet.of(by_size, {n: candidate(clock, t, n, result=n) for n, t in times.items()})


@pytest.fixture
def client():
    return FakeClient()


def test_a_set_of_one_candidate_is_a_hit_without_benchmarking(client):
    tunables = make(client.clock, only=1e-3)
    tuner = Tuner("t", client.device_id)
    assert tuner.execute(tunables, ([1, 2],), client) == "only"
    assert client.timed == []
    assert tuner.fastest(2).kind == "hit"


def test_a_new_key_is_tuned_once_then_served_from_memory(client):
    tunables = make(client.clock, slow=3e-3, fast=1e-3, mid=2e-3)
    tuner = Tuner("t", client.device_id)
    assert tuner.fastest(2).kind == "miss"
    assert tuner.execute(tunables, ([1, 2],), client) == "fast"
    calls = [fn.calls for fn in tunables.fns]
    assert tuner.execute(tunables, ([3, 4],), client) == "fast"
    assert [fn.calls for fn in tunables.fns] == [calls[0], calls[1] + 1, calls[2]]
    assert tuner.fastest(2).fastest_index == 1


def test_another_key_is_tuned_on_its_own(client):
    clock = client.clock
    a = candidate(clock, [1e-3], "a", "a")
    b = candidate(clock, [2e-3], "b", "b")
    tunables = TunableSet.of(by_size, {"a": a, "b": b})
    tuner = Tuner("t", client.device_id)
    tuner.execute(tunables, ([1],), client)
    assert tuner.fastest(2).kind == "miss"


def test_tuning_stops_at_the_first_batch_with_a_success(client):
    clock = client.clock
    first = TuneGroup("first", lambda key: 2)
    second = TuneGroup("second", lambda key: 1)
    later = candidate(clock, 1e-4, "later")
    tunables = (
        TunableSet(by_size)
        .with_(Tunable("a", candidate(clock, 1e-3, "a")).group(first, lambda k: 0))
        .with_(Tunable("later", later).group(second, lambda k: 0))
    )
    decision = Tuner("t", client.device_id).tune(2, tunables, ([1, 2],), client)
    assert decision.fastest_name == "a"
    assert later.calls == 0
    skipped = decision.results[1]
    assert (skipped.kind, skipped.name) == (AutotuneErrorKind.SKIP, "later")
    assert skipped.message == "not reached: batch 0 found a winner first"


def test_a_lower_group_is_only_the_fallback_of_the_ungrouped_when_the_top_group_skips(client):
    # As in the seed: the top group declines the key at every level, so the ungrouped
    # candidate is the first batch alone, and the faster lower group is never timed.
    clock = client.clock
    top = TuneGroup("top", lambda key: 2)
    low = TuneGroup("low", lambda key: 1)
    lower = candidate(clock, 1e-4, "lower")
    tunables = (
        TunableSet(by_size)
        .with_(Tunable("default", candidate(clock, 1e-3, "default")))
        .with_(Tunable("declined", candidate(clock, 1e-5, "declined")).group(top, lambda k: -1))
        .with_(Tunable("lower", lower).group(low, lambda k: 0))
    )
    decision = Tuner("t", client.device_id).tune(2, tunables, ([1, 2],), client)
    assert decision.fastest_name == "default"
    assert lower.calls == 0


def test_every_candidate_has_a_result_at_its_own_index(client, tmp_path):
    # The first batch holds the candidates at indices 1 and 2; the one at 0 is never
    # reached, yet the file and the record keep one result per candidate, in index order.
    clock = client.clock
    big = TuneGroup("big", lambda key: 1)
    small = TuneGroup("small", lambda key: 0)
    tunables = (
        TunableSet(by_size)
        .with_(Tunable("alt", candidate(clock, 1.2e-3, "alt")).group(small, lambda k: 0))
        .with_(Tunable("fast", candidate(clock, 1e-3, "fast")).group(big, lambda k: 0))
        .with_(Tunable("slow", candidate(clock, 3e-3, "slow")).group(big, lambda k: 0))
    )
    cache = PersistentCache(tmp_path / "t.json")
    decision = Tuner("t", client.device_id, persistent=cache).tune(2, tunables, ([1, 2],), client)
    (value,) = cache.load().values()
    assert value.fastest_index == 1
    assert [r.name for r in value.results] == ["alt", "fast", "slow"]
    assert value.results[value.fastest_index].name == "fast"
    assert [r["index"] for r in decision.result_list()] == [0, 1, 2]


def test_when_a_whole_batch_fails_the_next_batch_is_tried(client):
    clock = client.clock
    first = TuneGroup("first", lambda key: 2)
    second = TuneGroup("second", lambda key: 1)
    tunables = (
        TunableSet(by_size)
        .with_(Tunable("broken", failing("broken")).group(first, lambda k: 0))
        .with_(Tunable("works", candidate(clock, 1e-3, "works")).group(second, lambda k: 0))
    )
    decision = Tuner("t", client.device_id).tune(2, tunables, ([1, 2],), client)
    assert decision.fastest_name == "works"
    assert decision.measured
    assert "broken exploded" in str(decision.results[0])


def test_a_candidate_may_decline_a_key_with_autotune_skip(client):
    def declines(x):
        raise AutotuneSkip("only even sizes")

    tunables = TunableSet.of(by_size, {"picky": declines, "any": candidate(client.clock, 1e-3)})
    decision = Tuner("t", client.device_id).tune(1, tunables, ([1],), client)
    assert decision.fastest_name == "any"
    assert decision.results[0].kind.value == "skip"


def test_a_set_built_without_keeping_what_with_returns_is_refused_saying_why(client):
    # A set is immutable: `tunables.with_(...)` returns a new set and leaves this one empty.
    tunables = TunableSet(by_size)
    tunables.with_(Tunable("a", len))
    with pytest.raises(ValueError, match=r"no candidates \(with_\(\) returns a new set"):
        Tuner("t", client.device_id).execute(tunables, ([1],), client)


@pytest.mark.parametrize("wrong", [None, "fake-device", FakeClient])
def test_a_client_that_cannot_time_calls_is_refused_not_blamed_on_every_candidate(client, wrong):
    # `execute(tunables, inputs, device_id)` (or None) failed every candidate with
    # "AttributeError: ... has no attribute 'time'", and the key was remembered as one no
    # candidate can run, even once a client was given. The client's class given for one
    # failed each with "time() missing 1 required positional argument".
    tunables = make(client.clock, a=2e-3, b=1e-3)
    tuner = Tuner("t", client.device_id)
    with pytest.raises(TypeError, match=r"t: the client must be a Client .* got "):
        tuner.execute(tunables, ([1],), wrong)
    assert tuner.execute(tunables, ([1],), client) == "b"


def test_a_call_from_a_signal_handler_in_the_thread_holding_the_lock_runs(client):
    # A handler runs in the thread it interrupts, which may be inside the tuner's lock (a
    # miss's lookup); the handler's own miss then waited for that thread, itself, for ever.
    # Modelled without a signal, in a thread of its own that the test can leave behind.
    tuner = Tuner("t", client.device_id)
    tunables = make(client.clock, a=2e-3, b=1e-3)
    served: list[object] = []

    def interrupted() -> None:
        with tuner._lock:
            served.append(tuner.execute(tunables, ([1],), client))

    thread = threading.Thread(target=interrupted, daemon=True)
    thread.start()
    thread.join(timeout=10)
    assert served == ["b"]


def test_an_all_failed_decision_is_kept_in_memory_only(client, tmp_path):
    cache = PersistentCache(tmp_path / "t.json")
    tunables = TunableSet.of(by_size, {"x": failing("x"), "y": failing("y")})
    tuner = Tuner("t", client.device_id, persistent=cache)
    decision = tuner.tune(1, tunables, ([1],), client)
    assert not decision.measured
    assert not (tmp_path / "t.json").exists()


def test_when_every_candidate_fails_execute_raises_no_valid_kernel_found_naming_each_error(
    client,
):
    def declines(x):
        raise AutotuneSkip("only even sizes")

    tunables = TunableSet.of(by_size, {"x": failing("x"), "picky": declines, "y": failing("y")})
    tuner = Tuner("t", client.device_id)
    with pytest.raises(AutotuneError) as raised:
        tuner.execute(tunables, ([1],), client)
    error = raised.value
    assert error.kind is AutotuneErrorKind.NO_VALID_KERNEL_FOUND
    assert "x: unknown: RuntimeError: x exploded" in error.message
    assert "picky: skip: only even sizes" in error.message
    assert "y: unknown: RuntimeError: y exploded" in error.message
    # The next call raises the same error without tuning again.
    with pytest.raises(AutotuneError, match="no candidate succeeded"):
        tuner.execute(tunables, ([2],), client)


def test_no_valid_kernel_names_each_candidate_in_the_first_line_of_its_error(client):
    # Numba's TypingError runs to 30 lines: joined whole, the message named the second
    # candidate mid-line, 30 lines down. The raised error's cause holds each traceback whole.
    typed = TypeError("Failed in nopython mode pipeline\nNo implementation of add\n  (int64)")
    tunables = TunableSet.of(by_size, {"x": failing("x", typed), "y": failing("y")})
    tuner = Tuner("t", client.device_id)
    with pytest.raises(AutotuneError) as raised:
        tuner.execute(tunables, ([1],), client)
    assert str(raised.value) == (
        "no_valid_kernel_found: no candidate succeeded for key 1:"
        " x: unknown: TypeError: Failed in nopython mode pipeline"
        " (2 more lines in its traceback, the cause of this error);"
        " y: unknown: RuntimeError: y exploded"
    )
    assert "  (int64)" in str(raised.value.__cause__)


def test_a_key_that_keeps_failing_raises_a_fresh_error_each_call_holding_no_earlier_call(client):
    # An application retrying a key no candidate can run (once per request) must not see the
    # traceback grow with each call, nor keep the first call's frames, and their input
    # arrays, alive in the error the tuner remembers.
    tunables = TunableSet.of(by_size, {"x": failing("x"), "y": failing("y")})
    tuner = Tuner("t", client.device_id)
    raised = []
    for _ in range(3):
        with pytest.raises(AutotuneError) as info:
            tuner.execute(tunables, ([1],), client)
        raised.append(info.value)
    depths = [len(traceback.extract_tb(error.__traceback__)) for error in raised]
    assert depths[0] == depths[1] == depths[2]
    assert raised[0] is not raised[1] is not raised[2]
    assert raised[0] == raised[2]  # the same kind and message, naming each candidate


def test_execute_given_its_arguments_in_local_tuners_order_says_its_own(client):
    tunables = TunableSet.of(by_size, {"a": np.sum, "b": np.add.reduce})
    tuner = Tuner("t", client.device_id)
    said = r"^t: execute\(tunables, inputs, client\) takes a TunableSet first, got FakeClient$"
    with pytest.raises(TypeError, match=said):
        tuner.execute(client, tunables, (np.ones(3),))


def test_inputs_the_key_generator_cannot_take_are_named_by_the_tuner(client):
    def size(x):
        return len(x)

    tunables = TunableSet.of(size, {"a": np.sum, "b": np.add.reduce})
    tuner = Tuner("t", client.device_id)
    said = (
        r"^t: the key generator cannot take the 2 inputs given \(.*takes 1 positional argument"
        r" but 2 were given\): it is called as key_gen\(\*inputs\)"
    )
    with pytest.raises(TypeError, match=said):
        tuner.execute(tunables, (np.ones(3), 2), client)

    def mistyped(x):
        return len(x) + "1"  # the key generator's own TypeError stays its own

    with pytest.raises(TypeError, match=r"^unsupported operand"):
        tuner.execute(TunableSet.of(mistyped, {"a": np.sum, "b": np.add.reduce}), ([1],), client)


@pytest.mark.parametrize("checks", [False, True], ids=["timed", "checked"])
def test_a_candidate_written_over_one_tuple_as_the_seeds_is_told_how_it_is_called(client, checks):
    # The seed's multi-input kernels take one tuple, `|(lhs, rhs)| ...`; ported as
    # `lambda inputs: ...`, every candidate failed with Python's "takes 1 positional
    # argument but 2 were given", which named neither the convention nor the fix.
    def add(lhs, rhs):
        return lhs + rhs

    tunables = (
        TunableSet(lambda lhs, rhs: ("add", len(lhs)))
        .with_(Tunable("tuple", lambda inputs: add(*inputs)))
        .with_(Tunable("also_tuple", lambda inputs: add(*inputs)))
    )
    tuner = Tuner("t", client.device_id, AutotuneConfig(checks=checks))
    said = (
        r"tuple: unknown: (raised )?TypeError: the candidate cannot take the 2 inputs given"
        r" \(.*takes 1 positional argument but 2 were given\): it is called as fn\(\*inputs\)"
    )
    with pytest.raises(AutotuneError, match=said):
        tuner.execute(tunables, (np.ones(3), np.ones(3)), client)

    def mistyped(lhs, rhs):
        return len(lhs) + "1"  # the candidate's own TypeError stays its own

    tunables = TunableSet.of(lambda lhs, rhs: ("own", len(lhs)), {"a": mistyped, "b": mistyped})
    own = r"a: unknown: (raised )?TypeError: unsupported operand"
    with pytest.raises(AutotuneError, match=own):
        tuner.execute(tunables, (np.ones(3), np.ones(3)), client)


def test_a_reference_named_by_candidate_is_its_checks_reference_and_a_typo_is_one_error(
    client,
):
    def off(x):
        return np.sum(x) + 1

    tunables = TunableSet.of(by_size, {"off": off, "exact": np.sum})
    tuner = Tuner("t", client.device_id, AutotuneConfig(checks=True), reference="exact")
    decision = tuner.tune(3, tunables, (np.ones(3),), client)
    assert decision.fastest_name == "exact"
    assert "differs from the reference 'exact'" in str(decision.results[0])
    typo = Tuner("t", client.device_id, AutotuneConfig(checks=True), reference="exakt")
    with pytest.raises(
        ValueError, match=r"^t: reference 'exakt' names no candidate: \['exact', 'off'\]$"
    ):
        typo.tune(3, tunables, (np.ones(3),), client)


@pytest.mark.parametrize("checks", [False, True])
def test_no_valid_kernel_found_is_raised_from_each_candidates_traceback(client, checks):
    # Every candidate failing said only "IndexError: index 999 is out of bounds": no line
    # of the user's code, whether the failure came in the checks or in the timing.
    def out_of_bounds(x):
        return x[999]

    tunables = TunableSet.of(by_size, {"bad": out_of_bounds, "y": failing("y")})
    tuner = Tuner("t", client.device_id, AutotuneConfig(checks=checks))
    for _ in range(2):  # the first call, which tunes, and one that finds the key failed
        with pytest.raises(AutotuneError) as raised:
            tuner.execute(tunables, ([1],), client)
        cause = raised.value.__cause__
        assert cause is not None and type(cause).__name__ == "CandidateTracebacks"
        text = str(cause)
        assert "candidate 'bad':" in text and "return x[999]" in text
        assert "in out_of_bounds" in text and "IndexError" in text
        assert "candidate 'y':" in text and "RuntimeError: y exploded" in text
        assert "pytest_autotune" not in text  # the user's frames, not the tuner's


@pytest.mark.parametrize("checks", [False, True])
def test_an_input_generator_returning_a_bare_input_is_one_error_before_any_candidate(
    client, checks
):
    # Ported as `lambda key, inputs: inputs[0].copy()`, it would have each candidate called
    # with the array's rows as arguments, failing each with its own unrelated message.
    tunables = TunableSet(len, lambda key, inputs: inputs[0].copy()).with_(("a", np.sum))
    tunables = tunables.with_(("b", np.add.reduce))
    tuner = Tuner("t", client.device_id, AutotuneConfig(checks=checks))
    with pytest.raises(InputGeneratorError) as raised:
        tuner.execute(tunables, (np.ones((3, 4)),), client)
    why = "the input generator returned ndarray, not a tuple of the candidates' arguments"
    assert str(raised.value).count(why) == 1


@pytest.mark.parametrize("checks", [False, True])
def test_an_input_generator_that_raises_is_named_with_its_traceback_and_no_candidate_blamed(
    client, checks
):
    # It was recorded as each candidate's error ("no candidate succeeded for key 3: a:
    # ValueError ..."), though none ran, with its traceback dropped, and the key was
    # remembered as one no candidate can run. The key is the length, 6.
    calls = []

    def reshaped(key, inputs):
        return (inputs[0].reshape(key + 1, -1),)  # the user's bug: 6 elements into 7 rows

    def counted(name):
        def call(x):
            calls.append(name)
            return x.sum()

        return call

    tunables = TunableSet(len, reshaped).with_(("a", counted("a"))).with_(("b", counted("b")))
    tuner = Tuner("t", client.device_id, AutotuneConfig(checks=checks))
    for _ in range(2):  # the key is not remembered as failed: the generator runs again
        with pytest.raises(InputGeneratorError) as raised:
            tuner.execute(tunables, (np.ones(6),), client)
        assert str(raised.value) == (
            "t: for key 6, the input generator raised ValueError: cannot reshape array of size"
            " 6 into shape (7,newaxis); no candidate was run"
        )
        assert isinstance(raised.value.__cause__, ValueError)
        frames = traceback.extract_tb(raised.value.__cause__.__traceback__)
        assert frames[-1].name == "reshaped"  # the user's line, where it went wrong
    assert calls == []


def test_an_input_generator_may_return_a_list():
    tunables = TunableSet(len, lambda key, inputs: list(inputs)).with_(("a", np.sum))
    assert tunables.generate_inputs(3, ([1, 2, 3],)) == ([1, 2, 3],)


def test_when_nothing_could_be_measured_the_fallback_is_the_first_candidate_that_ran(client):
    # "picky" declines and "broken" fails: neither may run for the caller. "untimed" runs,
    # but its timer gives no valid duration, so it is the fallback.
    def declines(x):
        raise AutotuneSkip("not this key")

    untimed = candidate(client.clock, 0.0, "untimed", result="untimed")
    tunables = TunableSet.of(
        by_size, {"picky": declines, "broken": failing("broken"), "untimed": untimed}
    )
    tuner = Tuner("t", client.device_id)
    assert tuner.execute(tunables, ([1],), client) == "untimed"
    decision = tuner.decision(1)
    assert (decision.fastest_name, decision.measured) == ("untimed", False)


def test_a_persisted_winner_is_used_without_benchmarking(client, tmp_path):
    path = tmp_path / "t.json"
    tunables = make(client.clock, slow=3e-3, fast=1e-3)
    Tuner("t", client.device_id, persistent=PersistentCache(path)).execute(tunables, ([1],), client)
    assert path.exists()

    again = make(client.clock, slow=3e-3, fast=1e-3)
    tuner = Tuner("t", client.device_id, persistent=PersistentCache(path))
    assert tuner.fastest(1).kind == "unchecked"
    assert tuner.execute(again, ([1],), client) == "fast"
    assert [fn.calls for fn in again.fns] == [0, 1]


@pytest.mark.parametrize(
    ("written", "read"),
    [(1.0, 1), (1, 1.0), (np.float32(2.0), np.int64(2)), ((4, 1.0), (np.int32(4), 1))],
)
def test_a_key_equal_to_the_one_a_file_holds_is_served_from_it(client, tmp_path, written, read):
    # 1, 1.0 and np.float32(1.0) are one key in memory, but a file written with `1.0`
    # was a miss for `1` (stored forms `1.0` and `1`): the next process tuned it again.
    path = tmp_path / "t.json"
    first = replace(make(client.clock, slow=3e-3, fast=1e-3), key_gen=lambda x: written)
    Tuner("t", client.device_id, persistent=PersistentCache(path)).execute(first, ([1],), client)

    again = replace(make(client.clock, slow=3e-3, fast=1e-3), key_gen=lambda x: read)
    tuner = Tuner("t", client.device_id, persistent=PersistentCache(path))
    assert tuner.fastest(read).kind == "unchecked"
    assert tuner.execute(again, ([1],), client) == "fast"
    assert [fn.calls for fn in again.fns] == [0, 1]


@pytest.mark.parametrize(
    ("written", "read"),
    [(True, 1), (1, True), (np.bool_(True), 1.0), ((4, False), (4, np.int64(0)))],
)
def test_a_flag_and_the_number_python_holds_it_equal_to_are_one_key_in_memory_and_on_disk(
    client, tmp_path, written, read
):
    # A key_gen returning `x.flags.c_contiguous` where another returns `int(...)`: the
    # in-memory cache serves the one tuning to both (True == 1); the file read by the next
    # process did not (`true` is not `1`), and that process tuned the key again.
    path = tmp_path / "t.json"
    first = replace(make(client.clock, slow=3e-3, fast=1e-3), key_gen=lambda x: written)
    tuner = Tuner("t", client.device_id, persistent=PersistentCache(path))
    tuner.execute(first, ([1],), client)
    same = replace(make(client.clock, slow=3e-3, fast=1e-3), key_gen=lambda x: read)
    assert tuner.execute(same, ([1],), client) == "fast"
    assert [fn.calls for fn in same.fns] == [0, 1]  # served from memory

    again = replace(make(client.clock, slow=3e-3, fast=1e-3), key_gen=lambda x: read)
    tuner = Tuner("t", client.device_id, persistent=PersistentCache(path))
    assert tuner.fastest(read).kind == "unchecked"
    assert tuner.execute(again, ([1],), client) == "fast"
    assert [fn.calls for fn in again.fns] == [0, 1]  # served from the file


def test_a_key_saved_after_another_process_rewrote_the_device_block_keeps_its_block(
    client, tmp_path
):
    # A long-running program's tuner read the file; an `--autotune-update` beside it then
    # wrote the device's peaks and its plugins' fingerprint. The program's next key was
    # saved with the block it had read: the peaks and the fingerprint were gone.
    path = tmp_path / "t.json"
    tuner = Tuner("t", client.device_id, persistent=PersistentCache(path))
    tuner.execute(make(client.clock, slow=3e-3, fast=1e-3), ([1],), client)
    other = PersistentCache(path)
    other.load()
    block = {"id": client.device_id, "fingerprint": {"fake": True, "driver": "9"}, "peaks": {}}
    other.save({}, device=block)

    tuner.execute(make(client.clock, slow=3e-3, fast=1e-3), ([1, 2],), client)
    written = json.loads(path.read_text())
    assert written["device"] == block
    assert [e["key"] for e in written["entries"]] == [1, 2]


def test_a_key_another_process_saved_since_this_one_read_the_file_is_not_tuned_again(
    client, tmp_path
):
    # Two worker processes of one server, each with its tuner: the first to meet a shape
    # tuned and saved it, and the other, which had read the file at its start, tuned the
    # same key again (and overwrote the first's entry) instead of reading it.
    path = tmp_path / "t.json"
    early = Tuner("t", client.device_id, persistent=PersistentCache(path))
    early.execute(make(client.clock, slow=3e-3, fast=1e-3), ([1],), client)
    other = Tuner("t", client.device_id, persistent=PersistentCache(path))
    other.execute(make(client.clock, slow=3e-3, fast=1e-3), ([1, 2],), client)

    again = make(client.clock, slow=3e-3, fast=1e-3)
    assert early.execute(again, ([1, 2],), client) == "fast"
    assert [fn.calls for fn in again.fns] == [0, 1]


def test_new_keys_are_served_while_another_process_holds_the_cache_file_lock_and_saved_after(
    client, tmp_path
):
    # A process stopped (SIGSTOP) or hung holding the cache file's lock: a long-running
    # program's every new key waited out the lock in its lookup and again at its save (5
    # minutes each), and every call of one said so again. Served without the file, said
    # once; the first save that gets the lock writes the keys decided meanwhile.
    tuner, path, held, said = held_back(client, tmp_path)
    assert [str(w.message) for w in said] == [
        f"{path}: {held.lock_file} still locked"
        + (f" by process {os.getpid()} (this one)" if os.path.exists("/proc/locks") else "")
        + " after 0.01 s; this program goes on without waiting for it: new keys are tuned"
        " here and kept in memory, and the first later save that gets the lock writes them,"
        " else this program's exit (a process stopped or hung holding a lock holds it until"
        " it goes on or ends)"
    ]
    assert [json.loads(pk.key) for pk in PersistentCache(path).load()] == [1]

    tuner.execute(make(client.clock, slow=3e-3, fast=1e-3), ([1, 2, 3, 4],), client)
    assert sorted(json.loads(pk.key) for pk in PersistentCache(path).load()) == [1, 2, 3, 4]


def held_back(client, tmp_path):
    """A tuner that decided keys [1, 2] and [1, 2, 3] while another process held its file's
    lock, the file holding key [1] alone, that lock, released, and what was said."""
    path = tmp_path / "t.json"
    Tuner("t", client.device_id, persistent=PersistentCache(path)).execute(
        make(client.clock, slow=3e-3, fast=1e-3), ([1],), client
    )
    tuner = Tuner("t", client.device_id, persistent=PersistentCache(path, lock_timeout=0.01))
    held = lock_beside(path, timeout=0)
    held.acquire()
    try:
        with pytest.warns(CacheFileWarning) as said:
            for inputs in ([1, 2], [1, 2, 3]):
                assert tuner.execute(make(client.clock, slow=3e-3, fast=1e-3), (inputs,), client)
    finally:
        held.release()
    return tuner, path, held, said


def test_decisions_held_back_by_another_processs_lock_are_saved_at_the_programs_exit(
    client, tmp_path
):
    # A program that decided its keys while another process held the file's lock, and
    # ended before a later save got it, lost them without a word, though the lock was free
    # by then (the other process's update done): each run tuned them again.
    tuner, path, _, _ = held_back(client, tmp_path)
    assert [json.loads(pk.key) for pk in PersistentCache(path).load()] == [1]
    # What the exit saves (`_save_held_back_at_exit`), this tuner's alone: other tests'
    # tuners may hold decisions back too.
    assert tuner._persisted in persisted._HELD_BACK
    tuner._persisted.save_held_back()
    assert sorted(json.loads(pk.key) for pk in PersistentCache(path).load()) == [1, 2, 3]


def test_decisions_still_held_back_at_the_programs_exit_are_named(client, tmp_path):
    tuner, path, held, _ = held_back(client, tmp_path)
    held.acquire()
    try:
        with pytest.warns(
            CacheFileWarning, match="ends without saving its decisions for keys"
        ) as said:
            tuner._persisted.save_held_back()
    finally:
        held.release()
    assert str(said[0].message).endswith("keys 2, 3, which the next run tunes again")
    assert [json.loads(pk.key) for pk in PersistentCache(path).load()] == [1]


def test_the_exit_says_in_one_line_what_it_could_not_save_under_warnings_as_errors(
    client, tmp_path, monkeypatch, capsys
):
    # Under -W error the exit's warning was an exception in an atexit callback: printed as
    # "Exception ignored in atexit callback" and its traceback.
    tuner, path, held, _ = held_back(client, tmp_path)
    monkeypatch.setattr(persisted, "_HELD_BACK", weakref.WeakSet([tuner._persisted]))
    held.acquire()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            persisted._save_held_back_at_exit()
    finally:
        held.release()
    said = capsys.readouterr().err.splitlines()
    assert len(said) == 1
    assert said[0].startswith(f"pytest-autotune: {path}: ")
    assert said[0].endswith("keys 2, 3, which the next run tunes again")


def test_a_bug_met_in_the_exits_save_keeps_its_traceback(client, tmp_path, monkeypatch) -> None:
    # The exit's one line is for its warning under -W error: every exception was cut to a
    # line "pytest-autotune: <message>", a KeyError of ours to "pytest-autotune: 'x'".
    tuner, _, _, _ = held_back(client, tmp_path)
    monkeypatch.setattr(persisted, "_HELD_BACK", weakref.WeakSet([tuner._persisted]))

    def broken() -> None:
        raise KeyError("x")

    monkeypatch.setattr(tuner._persisted, "save_held_back", broken)
    with pytest.raises(KeyError):
        persisted._save_held_back_at_exit()


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_a_forked_child_leaves_the_decisions_its_parent_held_back_to_the_parent(client, tmp_path):
    # A child of os.fork() that exits normally saved them again at its exit, waiting for the
    # lock once more; the parent saves them at its own.
    tuner, _, _, _ = held_back(client, tmp_path)
    assert tuner._persisted in persisted._HELD_BACK
    child = os.fork()
    if child == 0:  # pragma: no cover - the child's
        os._exit(0 if not persisted._HELD_BACK else 1)
    _, status = os.waitpid(child, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert tuner._persisted in persisted._HELD_BACK


def test_a_key_the_file_holds_is_served_while_another_thread_waits_for_the_file_lock(
    client, tmp_path
):
    # A new key's lookup of the file waited for its lock under the tuner's own lock: every
    # other thread's call that was not a hit yet (a key read from the file, another new
    # key) queued behind it until the wait ran out.
    path = tmp_path / "t.json"
    Tuner("t", client.device_id, persistent=PersistentCache(path)).execute(
        make(client.clock, slow=3e-3, fast=1e-3), ([1],), client
    )
    events: list[str] = []
    waiting = threading.Event()

    class Watched(PersistentCache):
        def saved_since(self, key):
            waiting.set()
            try:
                return super().saved_since(key)
            finally:
                events.append("lookup of the new key done")

    tuner = Tuner("t", client.device_id, persistent=Watched(path, lock_timeout=60))
    held = lock_beside(path, timeout=0)
    held.acquire()
    new_key = threading.Thread(
        target=tuner.execute, args=(make(client.clock, slow=3e-3, fast=1e-3), ([1, 2],), client)
    )
    try:
        new_key.start()
        waiting.wait()
        known = make(client.clock, slow=3e-3, fast=1e-3)
        assert tuner.execute(known, ([1],), client) == "fast"
        events.append("key read from the file served")
    finally:
        held.release()
        new_key.join()
    assert events == ["key read from the file served", "lookup of the new key done"]
    assert [fn.calls for fn in known.fns] == [0, 1]


def test_a_changed_candidate_list_re_tunes(client, tmp_path):
    path = tmp_path / "t.json"
    Tuner("t", client.device_id, persistent=PersistentCache(path)).execute(
        make(client.clock, slow=3e-3, fast=1e-3), ([1],), client
    )
    renamed = make(client.clock, slow=3e-3, quick=1e-3)
    tuner = Tuner("t", client.device_id, persistent=PersistentCache(path))
    assert tuner.execute(renamed, ([1],), client) == "quick"
    assert renamed.fns[0].calls > 0


def limited(clock, config=None, **times):
    """A set whose bounds give a time limit of 1 ms on the fake client."""
    return make(clock, **times).with_work(lambda x: Work(bytes=1e6))


def test_a_candidate_under_the_time_limit_ends_tuning_before_later_candidates_run(client):
    tunables = limited(client.clock, b=2e-3, a=0.5e-3, c=0.4e-3)
    decision = Tuner("t", client.device_id).tune(1, tunables, ([1],), client)
    assert decision.fastest_name == "a"
    assert [fn.calls for fn in tunables.fns] == [2, 3, 0]
    assert decision.results[2].kind is AutotuneErrorKind.SKIP


def test_the_tuning_time_leaves_out_the_devices_peak_probe(client, monkeypatch):
    # A client probes its peaks when the first bounds ask for them (seconds on a CPU, once
    # per process and device): the device's cost, not the key's. Counted in, the first
    # group with work= read as tuned in 9 s in the report, its batches taking 3 ms.
    now = [0.0]
    monkeypatch.setattr(time, "perf_counter", lambda: now[0])

    class Probing(FakeClient):
        def peaks(self):
            now[0] += 100.0
            return super().peaks()

    probing = Probing(client.clock)
    decision = Tuner("t", probing.device_id).tune(
        1, limited(probing.clock, a=2e-3), ([1],), probing
    )
    assert decision.bounds is not None
    assert decision.duration == 0.0


def test_with_short_circuit_false_samples_every_candidate_whatever_the_limit(client):
    tunables = limited(client.clock, a=0.5e-3, b=2e-3, c=0.4e-3).with_short_circuit(False)
    decision = Tuner("t", client.device_id).tune(1, tunables, ([1],), client)
    assert decision.fastest_name == "c"
    assert all(isinstance(r, AutotuneOutcome) for r in decision.results.values())


def test_a_config_setting_turns_the_short_circuit_off(client):
    config = AutotuneConfig(bench=BenchConfig(short_circuit=False))
    tunables = limited(client.clock, a=0.5e-3, b=2e-3, c=0.4e-3)
    decision = Tuner("t", client.device_id, config).tune(1, tunables, ([1],), client)
    assert decision.fastest_name == "c"


def test_with_short_circuit_true_keeps_the_configured_samples_not_one(client):
    config = AutotuneConfig(bench=BenchConfig(short_circuit_samples=3))
    tunables = limited(client.clock, a=0.5e-3, b=2e-3).with_short_circuit(True)
    Tuner("t", client.device_id, config).tune(1, tunables, ([1],), client)
    # One warm-up, then three samples under the limit end the batch.
    assert [fn.calls for fn in tunables.fns] == [4, 0]


@pytest.mark.parametrize("enabled", [True, 2])
def test_the_config_turning_the_short_circuit_off_wins_over_the_sets_with_short_circuit(
    client, enabled
):
    # As the seed's disable_short_circuit: a run that asks for every candidate measured
    # gets them, whatever a library's set says.
    config = AutotuneConfig(bench=BenchConfig(short_circuit=False))
    tunables = limited(client.clock, a=0.5e-3, b=2e-3, c=0.4e-3).with_short_circuit(enabled)
    decision = Tuner("t", client.device_id, config).tune(1, tunables, ([1],), client)
    assert decision.fastest_name == "c"
    assert all(isinstance(r, AutotuneOutcome) for r in decision.results.values())


def test_a_wrong_candidate_is_caught_by_the_checks_and_never_wins(client):
    clock = client.clock
    tunables = TunableSet.of(
        by_size,
        {
            "right": candidate(clock, 2e-3, "right", result=np.arange(4.0)),
            "wrong_but_fast": candidate(clock, 1e-4, "wrong", result=np.arange(4.0) + 1),
        },
    )
    tuner = Tuner("t", client.device_id, AutotuneConfig(checks=True))
    decision = tuner.tune(4, tunables, ([0] * 4,), client)
    assert decision.fastest_name == "right"
    assert [c.passed for c in decision.checks] == [True, False]
    assert "failed its check" in str(decision.results[1])


def test_a_wrong_in_place_candidate_returning_none_is_caught_by_the_checks(client):
    # A kernel launched into an output buffer returns None; None equals None, so every
    # candidate passed its check, a fast wrong one won, and the caller's buffer held its
    # wrong answer. What a candidate wrote into its copy of the inputs is its output.
    def right(a, x, y):
        client.clock.advance(2e-3)
        y += a * x

    def wrong_but_fast(a, x, y):
        client.clock.advance(1e-4)
        y[:] = a * x

    tunables = TunableSet.of(lambda a, x, y: len(x), {"right": right, "wrong": wrong_but_fast})
    for reference in (None, right):
        tuner = Tuner("t", client.device_id, AutotuneConfig(checks=True), reference=reference)
        y = np.ones(4)
        assert tuner.execute(tunables, (2.0, np.ones(4), y), client) is None
        decision = tuner.decision(4)
        assert decision is not None
        assert decision.fastest_name == "right"
        assert [c.passed for c in decision.checks] == [True, False]
        assert "expected 3.0, got 2.0" in decision.checks[1].message
        assert y.tolist() == [3.0] * 4


def test_a_wrong_in_place_candidate_on_the_same_arrays_each_call_fails_where_output_is_required(
    client,
):
    # The plugin's checks (an output required, written inputs judged) with a set whose
    # input generator hands every call the caller's arrays: the reference's written
    # inputs were kept uncopied, the wrong candidate wrote into them, and passed.
    def right(x, out):
        np.add(x, 1.0, out=out)

    def wrong(x, out):
        out[...] = x * 3.0

    tunables = TunableSet(
        lambda x, out: len(x),
        lambda key, inputs: inputs,
        [Tunable("right", right), Tunable("wrong", wrong)],
    )
    tuner = Tuner(
        "t",
        client.device_id,
        AutotuneConfig(checks=True),
        require_output=True,
        written_inputs=True,
    )
    tuner.execute(tunables, (np.arange(4.0), np.zeros(4)), client)
    decision = tuner.decision(4)
    assert decision is not None
    assert [c.passed for c in decision.checks] == [True, False]
    assert "differs from the reference 'right'" in decision.checks[1].message


@pytest.mark.parametrize(
    "make",
    [np.random.default_rng, np.random.RandomState, np.random.PCG64, random.Random],
    ids=["Generator", "RandomState", "BitGenerator", "random.Random"],
)
def test_an_in_place_candidate_given_a_random_generator_is_judged_by_its_draws(client, make):
    # Each check's call gets its own copy of the generator: compared by identity, as the
    # in-place kernel's output (its inputs), every right candidate "differed" from the
    # reference ("expected Generator(PCG64) at 0x..., got Generator(PCG64) at 0x...").
    def draw(gen: Any, n: int) -> Any:
        source = np.random.Generator(gen) if isinstance(gen, np.random.BitGenerator) else gen
        return [source.random() for _ in range(n)]

    def noise(x, gen):
        x[:] = draw(gen, len(x))

    def noise_again(x, gen):
        x[:] = np.asarray(draw(gen, len(x)))

    def noise_drawing_more(x, gen):
        x[:] = draw(gen, len(x) + 1)[:-1]

    tunables = TunableSet.of(
        lambda x, gen: len(x),
        {"noise": noise, "noise_again": noise_again, "more": noise_drawing_more},
    )
    tuner = Tuner("t", client.device_id, AutotuneConfig(checks=True))
    tuner.execute(tunables, (np.zeros(4), make(1)), client)
    decision = tuner.decision(4)
    assert decision is not None
    assert [c.passed for c in decision.checks] == [True, True, False]
    assert "state differs: the candidate drew other numbers" in decision.checks[2].message


def test_a_candidate_that_declines_in_its_check_is_recorded_as_declining_and_never_timed(client):
    # With checks on, every candidate runs once before tuning. One that declines the key
    # there would decline it again when timed; where the plan never reached it, its result
    # read "not reached", and the plugin passed its test under --autotune while plain
    # pytest skipped it.
    calls = []

    def picky(x):
        calls.append("picky")
        raise AutotuneSkip("too small")

    high = TuneGroup("high", lambda key: 2)
    low = TuneGroup("low", lambda key: 1)
    tunables = (
        TunableSet(by_size)
        .with_(
            Tunable("fast", candidate(client.clock, 1e-3, "fast", result=1)).group(
                high, lambda k: 0
            )
        )
        .with_(Tunable("picky", picky).group(low, lambda k: 0))
    )
    tuner = Tuner("t", client.device_id, AutotuneConfig(checks=True))
    decision = tuner.tune(2, tunables, ([0, 0],), client)
    assert decision.fastest_name == "fast"
    assert decision.checks[1].skipped
    assert decision.results[1] == AutotuneError(AutotuneErrorKind.SKIP, "too small", "picky")
    assert calls == ["picky"]


def test_an_explicit_reference_judges_every_candidate(client):
    clock = client.clock
    tunables = TunableSet.of(
        by_size,
        {
            "off": candidate(clock, 1e-4, "off", result=np.zeros(2)),
            "ok": candidate(clock, 2e-3, "ok", result=np.ones(2)),
        },
    )
    tuner = Tuner(
        "t", client.device_id, AutotuneConfig(checks=True), reference=lambda x: np.ones(2)
    )
    decision = tuner.tune(2, tunables, ([0, 0],), client)
    assert [c.passed for c in decision.checks] == [False, True]
    assert decision.fastest_name == "ok"


def test_an_in_place_candidate_corrupts_neither_the_callers_arrays_nor_another_candidates(client):
    seen = []

    def in_place(x):
        client.clock.advance(1e-4)
        x += 1
        return x

    def reader(x):
        client.clock.advance(2e-3)
        seen.append(x.copy())
        return x

    x = np.zeros(8)
    tunables = TunableSet.of(len, {"in_place": in_place, "reader": reader})
    Tuner("t", client.device_id).tune(8, tunables, (x,), client)
    assert np.all(x == 0)
    assert seen and all(np.all(s == 0) for s in seen)


def test_each_decision_is_recorded(client, tmp_path):
    path = tmp_path / "records.jsonl"
    tunables = make(client.clock, slow=3e-3, fast=1e-3)
    tuner = Tuner("t", client.device_id, recorder=Recorder(path))
    tuner.execute(tunables, ([1],), client)
    tuner.execute(tunables, ([1, 2],), client)
    records = read_records(path)
    assert [(r.key, r.fastest_name) for r in records] == [(1, "fast"), (2, "fast")]
    assert records[0].checksum == tunables.checksum


def test_two_threads_meeting_a_new_key_tune_it_once():
    started = threading.Barrier(2)
    tunings = []

    class SlowClient(FakeClient):
        def time(self, fn, inputs):
            time.sleep(0.01)  # long enough for the other thread to arrive while pending
            return super().time(fn, inputs)

    client = SlowClient()
    tunables = make(client.clock, a=1e-3, b=2e-3)
    tuner = Tuner("t", client.device_id)
    original = tuner.tune

    def counting_tune(*args, **kwargs):
        tunings.append(1)
        return original(*args, **kwargs)

    tuner.tune = counting_tune
    out = []

    def work():
        started.wait()
        out.append(tuner.execute(tunables, ([1],), client))

    threads = [threading.Thread(target=work) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert out == ["a", "a"]
    assert len(tunings) == 1


@pytest.mark.skipif(not hasattr(os, "fork"), reason="a POSIX fork")
@pytest.mark.filterwarnings("ignore:.*multi-threaded.*fork:DeprecationWarning")
def test_a_process_forked_while_a_thread_tunes_a_key_tunes_that_key_itself(client):
    """A library's program forks (a multiprocessing pool) while one of its threads tunes a
    key: the child has no such thread, so waiting for that tuning would hang it forever."""
    parent = os.getpid()
    entered, release = threading.Event(), threading.Event()

    def held(x):
        if os.getpid() == parent:
            entered.set()
            release.wait()
        client.clock.advance(1e-3)
        return "held"

    tunables = TunableSet.of(by_size, {"held": held, "other": candidate(client.clock, 2e-3)})
    tuner = Tuner("t", client.device_id)
    thread = threading.Thread(target=tuner.execute, args=(tunables, ([1],), client))
    thread.start()
    entered.wait()
    try:
        became = run_forked(lambda: tuner.execute(tunables, ([1],), client) == "held")
    finally:
        release.set()
        thread.join()
    assert became == "ok"


@pytest.mark.skipif(not hasattr(os, "fork"), reason="a POSIX fork")
@pytest.mark.filterwarnings("ignore:.*multi-threaded.*fork:DeprecationWarning")
def test_a_process_forked_while_a_thread_writes_a_record_records_its_own(client, monkeypatch):
    """A program with records on forks (a multiprocessing pool) while one of its threads
    writes a record under the recorder's lock: the child has no such thread to release
    it, and its first tuning waited for it for ever."""
    parent = os.getpid()
    entered, release = threading.Event(), threading.Event()

    class Stream:
        def write(self, text: str) -> None:
            if os.getpid() == parent and not release.is_set():
                entered.set()
                release.wait()

        def flush(self) -> None:
            pass

    monkeypatch.setattr("sys.stdout", Stream())
    tuner = Tuner("t", client.device_id, recorder=Recorder("stdout"))
    tunables = make(client.clock, a=1e-3, b=2e-3)
    thread = threading.Thread(target=tuner.execute, args=(tunables, ([1],), client))
    thread.start()
    entered.wait()
    try:
        became = run_forked(lambda: tuner.execute(tunables, ([1, 2],), client) == "a")
    finally:
        release.set()
        thread.join()
    assert became == "ok"


def test_concurrent_tuners_on_one_file_lose_no_entry(client, tmp_path):
    path = tmp_path / "t.json"

    def work(n):
        c = FakeClient()
        Tuner("t", c.device_id, persistent=PersistentCache(path)).execute(
            make(c.clock, a=1e-3, b=2e-3), ([0] * n,), c
        )

    threads = [threading.Thread(target=work, args=(n,)) for n in range(1, 9)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(PersistentCache(path).load()) == 8


def test_a_candidate_calling_its_own_tuner_while_tuned_runs_the_first_planned_candidate(client):
    tuner = Tuner("t", client.device_id)
    inner = []

    def reentrant(x):
        client.clock.advance(2e-3)
        inner.append(tuner.execute(tunables, (x,), client))
        return "reentrant"

    def plain(x):
        client.clock.advance(1e-3)
        return "plain"

    tunables = TunableSet.of(by_size, {"plain": plain, "reentrant": reentrant})
    assert tuner.execute(tunables, ([1],), client) == "plain"
    assert inner and set(inner) == {"plain"}


def test_a_set_whose_plan_skips_every_candidate_has_no_valid_kernel(client):
    never = TuneGroup("never", lambda key: -1)
    tunables = (
        TunableSet(by_size)
        .with_(Tunable("a", candidate(client.clock, 1e-3, "a", "a")).group(never, lambda k: 0))
        .with_(Tunable("b", candidate(client.clock, 1e-3, "b", "b")).group(never, lambda k: 0))
    )
    tuner = Tuner("t", client.device_id)
    decision = tuner.tune(1, tunables, ([1],), client)
    assert (decision.fastest_index, decision.measured) == (0, False)
    assert [r.message for r in decision.results.values()] == [
        "not reached: no group prioritized for this key holds it"
    ] * 2
    with pytest.raises(AutotuneError, match="no candidate succeeded"):
        tuner.execute(tunables, ([1],), client)


@pytest.mark.parametrize(("warm", "slow_calls"), [(False, 2), (True, 1)])
def test_a_client_that_says_its_first_timing_is_warm_lets_a_hopeless_warm_up_end_a_candidate(
    warm: bool, slow_calls: int
) -> None:
    class Client(FakeClient):
        warm_first_sample = warm

    client = Client()
    tunables = make(client.clock, fast=43e-6, hopeless=17e-3, other=50e-6)
    decision = Tuner("t", client.device_id).tune(1, tunables, ([1],), client)
    assert decision.fastest_name == "fast"
    assert client.timed.count("hopeless") == slow_calls


class WarmClient(FakeClient):
    """A client whose first timing of a call is warm, with a hopeless margin of its own and
    its first timing of a call of 2 ms or more kept as a sample (as the CUDA client)."""

    warm_first_sample = True
    hopeless_factor = 4.0
    long_call = 2e-3


@pytest.mark.parametrize(
    ("client_type", "config", "naive_calls", "reason"),
    [
        (WarmClient, AutotuneConfig(), 1, "hopeless"),
        (FakeClient, AutotuneConfig(), 4, "best"),
        (WarmClient, AutotuneConfig(bench=BenchConfig(hopeless_factor=10)), 2, "best"),
        (WarmClient, AutotuneConfig.from_env({"PYTEST_AUTOTUNE_HOPELESS_FACTOR": "10"}), 2, "best"),
    ],
    ids=["warm-client-default", "cold-client", "set-in-code", "set-in-environment"],
)
def test_the_clients_hopeless_factor_applies_where_its_first_sample_is_warm_unless_one_is_set(
    client_type: type[FakeClient], config: AutotuneConfig, naive_calls: int, reason: str
) -> None:
    # matmul: cuBLAS 2.7 ms, naive 25.5 ms (9.4x). The client's margin of 4 cuts naive as
    # hopeless on its first call; under the default margin of 10, or one set, it is only
    # outclassed (`speed_factor`): a warm client judges a long call so on its second sample
    # (its long warm-up the first), a cold one after min_samples and a warm-up.
    client = client_type()
    tunables = make(client.clock, cublas=2.7e-3, reg4x4=5.8e-3, naive=25.5e-3)
    decision = Tuner("t", client.device_id, config).tune(1, tunables, ([1],), client)
    assert decision.fastest_name == "cublas"
    assert client.timed.count("naive") == naive_calls
    (cut,) = [e for e in decision.context.events if isinstance(e, Eliminated) and e.name == "naive"]
    assert cut.reason.startswith(reason)


class WarmClientOfNoLongCall(WarmClient):
    long_call = None


@pytest.mark.parametrize(("client_type", "calls"), [(WarmClient, 1), (WarmClientOfNoLongCall, 2)])
def test_a_long_first_candidate_costs_one_call_on_a_client_that_keeps_long_first_timings(
    client_type: type[FakeClient], calls: int
) -> None:
    # The sum family's atomic_naive (0.47 s) first: no leader yet, yet one call, where a
    # client without `long_call` pays its warm-up and a first sample.
    client = client_type()
    tunables = make(client.clock, atomic_naive=0.47, float4=0.25e-3, tree=0.32e-3)
    decision = Tuner("t", client.device_id).tune(1, tunables, ([1],), client)
    assert decision.fastest_name == "float4"
    assert client.timed.count("atomic_naive") == calls


def test_a_client_that_names_a_candidates_statistic_has_it_scored_so_and_kept_in_files(
    client, tmp_path
):
    # "lucky" is 5% slower but for one fast sample: scored by its median (the client says
    # its samples' noise runs both ways), it loses; the cache file keeps how it was scored.
    clock = client.clock
    lucky = candidate(clock, [1.05e-3] * 5 + [0.8e-3] + [1.05e-3] * 20, "lucky", "lucky")
    steady = candidate(clock, [1e-3], "steady", "steady")
    tunables = TunableSet.of(by_size, {"lucky": lucky, "steady": steady})
    client.sample_statistic = lambda fn: "median" if fn is lucky else "score"
    cache = PersistentCache(tmp_path / "t.json")
    decision = Tuner("t", client.device_id, persistent=cache).tune(2, tunables, ([1, 2],), client)
    assert decision.fastest_name == "steady"
    assert [r.statistic for r in decision.results.values()] == ["median", "score"]
    (value,) = cache.load().values()
    assert value.fastest_index == 1
    assert [r.statistic for r in value.results] == ["median", "score"]


def test_a_client_naming_a_statistic_there_is_not_is_told_so_by_its_name(client):
    tunables = TunableSet.of(
        by_size,
        {"a": candidate(client.clock, 1e-3, "a", 0), "b": candidate(client.clock, 2e-3, "b", 0)},
    )
    client.sample_statistic = lambda fn: "mean"
    with pytest.raises(
        ValueError, match=r"FakeClient.sample_statistic returned 'mean': expected one of score,"
    ):
        Tuner("t", client.device_id).tune(1, tunables, ([1],), client)


def test_a_client_that_prefers_a_live_candidate_has_it_win_given_each_ones_score_in_seconds(
    client,
):
    clock = client.clock
    fns = {
        "slow": candidate(clock, 3e-3, "slow", 0),
        "fast": candidate(clock, 1.00e-3, "fast", 1),
        "close": candidate(clock, 1.02e-3, "close", 2),
    }
    asked = []

    def preferred(scored):
        asked.append([(fn, round(score, 6)) for fn, score in scored])
        return [fn for fn, _ in scored].index(fns["close"])

    client.preferred = preferred
    decision = Tuner("t", client.device_id).tune(1, TunableSet.of(by_size, fns), ([1],), client)
    assert decision.fastest_name == "close" and decision.fastest_index == 2
    # Once, when the batch is over, with the live candidates only ("slow", candidate 0, was
    # eliminated), by position in what it was given, not by candidate index.
    ((first, second),) = asked
    assert first == (fns["fast"], 1e-3) and second == (fns["close"], 1.02e-3)
    # The log says why the winner's score is not the lowest.
    logged = [e for e in decision.context.events if isinstance(e, Preferred)]
    assert logged == [Preferred("close", 2, "fast", 1)]
    assert "close [#2] wins over fast [#1], whose score is lower" in str(logged[0])


@pytest.mark.parametrize("answer", [2, -1, "fast", None])
def test_a_preference_that_names_no_candidate_it_was_given_is_a_clear_error(client, answer):
    client.preferred = lambda scored: answer
    tunables = make(client.clock, fast=1e-3, close=1.02e-3)
    with pytest.raises(TypeError, match=r"preferred returned .*: expected the position of one of"):
        Tuner("t", client.device_id).tune(1, tunables, ([1],), client)


@dataclass(frozen=True)
class SumKey(AutotuneKey):
    n: int


@dataclass(frozen=True)
class MaxKey(AutotuneKey):
    n: int


def sum_and_max_sets(clock):
    """Two sets for one tuner, keyed by two dataclasses with the same fields, with the same
    candidate names and opposite winners: "one" for the sums, "two" for the maxima."""
    sums = TunableSet.of(
        lambda x: SumKey(len(x)),
        {"one": candidate(clock, 1e-3, "one", 1), "two": candidate(clock, 3e-3, "two", 2)},
    )
    maxes = TunableSet.of(
        lambda x: MaxKey(len(x)),
        {"one": candidate(clock, 3e-3, "one", 1), "two": candidate(clock, 1e-3, "two", 2)},
    )
    return sums, maxes


def test_a_key_of_another_type_with_the_same_stored_form_is_refused_not_served(client, tmp_path):
    # Two sets on one tuner, keyed by two dataclasses with the same fields: the keys differ
    # in Python but not in the cache file, so the second set would run the first's winner.
    sums, maxes = sum_and_max_sets(client.clock)
    tuner = Tuner("t", client.device_id, persistent=PersistentCache(tmp_path / "t.json"))
    assert tuner.execute(sums, ([1, 2],), client) == 1
    with pytest.raises(
        TypeError,
        match=r"MaxKey\(n=2\) has the stored form \{\"n\":2\}, as a"
        r" .*SumKey key this tuner looked up before it.*its own LocalTuner",
    ):
        tuner.execute(maxes, ([1, 2],), client)
    # A key of the same type is still served from the file's entry.
    assert tuner.execute(sums, ([3, 4],), client) == 1


def test_a_key_of_another_type_is_refused_also_after_a_key_served_from_the_cache_file(
    client, tmp_path
):
    # The next process: the first set's key is served from the file, never tuned here, and
    # the second set, with the same candidate names, would be served its winner.
    sums, maxes = sum_and_max_sets(client.clock)
    path = tmp_path / "t.json"
    assert (
        Tuner("t", client.device_id, persistent=PersistentCache(path)).execute(
            sums, ([1, 2],), client
        )
        == 1
    )
    tuner = Tuner("t", client.device_id, persistent=PersistentCache(path))
    assert tuner.execute(sums, ([1, 2],), client) == 1
    with pytest.raises(TypeError, match=r"MaxKey\(n=2\) has the stored form"):
        tuner.execute(maxes, ([1, 2],), client)


def test_an_equal_key_of_another_type_meeting_its_tuning_under_way_waits_for_it(client):
    # `1` and `np.int64(1)` are one key, served one winner once it is decided; the second,
    # met in another thread while the first one's tuning was under way, raised TypeError
    # ("has the stored form 1, as a builtins.int key ...") instead of waiting for it.
    entered, release = threading.Event(), threading.Event()

    def held(n):
        entered.set()
        release.wait()
        client.clock.advance(1e-3)
        return "held"

    tunables = TunableSet.of(lambda n: n, {"held": held, "other": candidate(client.clock, 2e-3)})
    tuner = Tuner("t", client.device_id)
    first = threading.Thread(target=tuner.execute, args=(tunables, (1,), client))
    first.start()
    entered.wait()
    got: list[object] = []

    def second() -> None:
        try:
            got.append(tuner.execute(tunables, (np.int64(1),), client))
        except Exception as error:
            got.append(error)

    other = threading.Thread(target=second)
    other.start()
    other.join(timeout=0.2)  # long enough to meet the tuning under way
    release.set()
    first.join()
    other.join()
    assert got == ["held"]


def test_the_inputs_are_copied_and_the_checks_run_in_the_clients_context(client):
    # CuPy copies an array to the current device: under cuda(device=1) the copies, and the
    # checks' calls, must be made on device 1, where `time` runs the candidates.
    entered = []

    class Device:
        def __enter__(self):
            entered.append(True)

        def __exit__(self, *exc):
            entered.pop()

    client.context = Device()
    copied, called = [], []

    def copies(key, inputs):
        copied.append(bool(entered))
        return tuple(list(x) for x in inputs)

    def traced(name, seconds):
        fn = candidate(client.clock, seconds, name, result=1)
        return lambda x: (called.append(bool(entered)), fn(x))[1]

    tunables = replace(
        TunableSet.of(by_size, {"a": traced("a", 1e-3), "b": traced("b", 2e-3)}), input_gen=copies
    )
    tuner = Tuner("t", client.device_id, AutotuneConfig(checks=True))
    decision = tuner.tune(2, tunables, ([1, 2],), client)
    assert decision.fastest_name == "a"
    assert copied and all(copied)
    assert called[:2] == [True, True]  # the checks; `time` enters the context itself


def test_a_candidates_scope_is_entered_around_each_timed_call_outside_the_timer() -> None:
    # The plugin's warning filters of a candidate's own test: entered inside the timed
    # call they cost a short candidate about 11 us a call, and moved its rank.
    clock = FakeClock()
    seen: list[str] = []

    @contextlib.contextmanager
    def scope() -> Iterator[None]:
        seen.append("enter")
        clock.advance(1.0)  # a scope as slow as that would swamp any sample inside the timer
        yield
        seen.append("exit")

    fast, slow = candidate(clock, 1e-3, "fast"), candidate(clock, 2e-3, "slow")

    def scoped(*inputs: Any) -> Any:
        seen.append(f"call entered={call_scope.entered()}")
        return fast(*inputs)

    scoped.autotune_scope = scope  # type: ignore[attr-defined]
    tunables = TunableSet.of(lambda x: x, {"fast": scoped, "slow": slow})
    tuner = Tuner("scoped", "fake-device", AutotuneConfig(disable_cache=True))
    decision = tuner.tune(1, tunables, (1,), FakeClient(clock))
    assert decision.fastest_name == "fast"
    timed = decision.results[0]
    assert isinstance(timed, AutotuneOutcome) and max(timed.samples) < 0.5
    calls = [event for event in seen if event.startswith("call")]
    assert calls and set(calls) == {"call entered=True"}
    assert seen[:3] == ["enter", "call entered=True", "exit"]
    assert not call_scope.entered()


def test_a_candidate_out_of_memory_for_the_others_copies_is_timed_once_they_are_dropped(client):
    # The round robin keeps a copy of the inputs for every candidate of the batch: a device
    # with room for two copies beside the caller's made the third and fourth candidates fail
    # "out of memory", and the fastest of them could never win, though each one runs alone.
    clock = client.clock
    alive: weakref.WeakValueDictionary[int, np.ndarray] = weakref.WeakValueDictionary()
    failures: list[str] = []

    def needing_room(name: str, seconds: float):
        def fn(x):
            alive[id(x)] = x
            if len(alive) > 2:
                failures.append(name)
                raise MemoryError(f"{name}: out of memory ({len(alive)} copies held)")
            clock.advance(seconds)
            return name

        fn.__name__ = name
        return fn

    times = {"a": 4e-3, "b": 3e-3, "c": 2e-3, "d": 1e-3}
    tunables = TunableSet.of(by_size, {n: needing_room(n, t) for n, t in times.items()})
    decision = Tuner("t", client.device_id).tune(4, tunables, (np.zeros(4),), client)
    assert decision.fastest_name == "d"
    assert all(isinstance(r, AutotuneOutcome) for r in decision.results.values())
    assert failures  # the copies did run out, and each was retried after the others' dropped


def test_a_candidate_out_of_memory_on_its_own_fails_as_ever(client):
    def greedy(x):
        raise MemoryError("greedy: out of memory")

    tunables = TunableSet.of(
        by_size, {"greedy": greedy, "fine": candidate(client.clock, 1e-3, "fine", result=1)}
    )
    decision = Tuner("t", client.device_id).tune(1, tunables, (np.zeros(1),), client)
    assert decision.fastest_name == "fine"
    assert "greedy: out of memory" in str(decision.results[0])


def test_a_decision_without_its_winner_takes_the_next_fastest_or_none(client):
    # The gate measured the winner and it raised: the next fastest measured candidate
    # stands, by its samples' score; with none left the decision is not measured; a
    # candidate that declined then says so, not "failed".
    slow = candidate(client.clock, 3e-3, "slow")
    mid = candidate(client.clock, 2e-3, "mid")
    fast = candidate(client.clock, 1e-3, "fast")
    tunables = TunableSet.of(by_size, {"slow": slow, "mid": mid, "fast": fast})
    decision = Tuner("t", client.device_id).tune(1, tunables, ([1],), client)
    assert decision.fastest_name == "fast"

    worn = AutotuneError(AutotuneErrorKind.UNKNOWN, "RuntimeError: worn out", "fast")
    after = decision.without_winner(worn)
    assert (after.fastest_index, after.fastest_name, after.measured) == (1, "mid", True)
    assert after.results[2] == AutotuneError(
        AutotuneErrorKind.UNKNOWN, "failed while measured: RuntimeError: worn out", "fast"
    )
    declined = AutotuneError(AutotuneErrorKind.SKIP, "only ten", "mid")
    last = after.without_winner(declined)
    assert last.fastest_name == "slow"
    assert last.results[1].message == "declined while measured: only ten"
    slow_worn = AutotuneError(AutotuneErrorKind.UNKNOWN, "RuntimeError: worn out", "slow")
    assert not last.without_winner(slow_worn).measured
    # An error of a candidate that is not the winner (the baseline's winner, judged in its
    # place) fails that one and leaves the winner.
    other = decision.without_winner(slow_worn)
    assert (other.fastest_name, other.results[0].message) == (
        "fast",
        "failed while measured: RuntimeError: worn out",
    )


def test_a_client_given_for_the_device_id_is_refused_where_the_tuner_is_made() -> None:
    # `Tuner("t", client)` was taken: its cache folder was named after the client's repr.
    client = FakeClient()
    with pytest.raises(TypeError, match="the device id must be a non-empty str, got FakeClient"):
        Tuner("t", client)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("argument", "message"),
    [
        ({"persistent": "cache.json"}, "persistent must be a PersistentCache or None, got str"),
        ({"recorder": "records.jsonl"}, "recorder must be a Recorder or None, got str"),
        ({"config": {"checks": True}}, "config must be an AutotuneConfig or None, got dict"),
    ],
)
def test_a_path_given_for_the_cache_or_the_recorder_is_refused_where_the_tuner_is_made(
    argument: dict[str, Any], message: str
) -> None:
    # A path for the cache failed at the tuner's first call ("'str' object has no attribute
    # 'load'"); one for the recorder at its first record.
    with pytest.raises(TypeError, match=message):
        Tuner("t", "cpu-test", **argument)


def test_a_candidate_raising_an_autotune_error_of_a_message_alone_fails_it_not_the_tuning() -> None:
    # `raise AutotuneError("bad shape")` was taken with the message for the kind: the
    # tuning crashed on it ("'str' object has no attribute 'value'").
    clock = FakeClock()
    client = FakeClient(clock)

    def bad_shape(*inputs: Any) -> Any:
        raise AutotuneError("bad shape")  # type: ignore[arg-type]

    tunables = TunableSet(len).with_(Tunable("bad", bad_shape))
    tunables = tunables.with_(Tunable("good", candidate(clock, 1e-3, result=3)))
    decision = Tuner("t", client.device_id).tune(2, tunables, ([1, 2],), client)
    assert decision.fastest_name == "good"
    failure = decision.results[0]
    assert isinstance(failure, AutotuneError)
    assert "the kind must be an AutotuneErrorKind" in failure.message
    assert "got 'bad shape'" in failure.message


def test_an_autotune_error_takes_the_name_of_its_kind() -> None:
    assert AutotuneError("skip", "declined").kind is AutotuneErrorKind.SKIP  # type: ignore[arg-type]


def test_a_client_that_times_in_nanoseconds_is_said_to_return_seconds(client, caplog):
    # `time.perf_counter_ns()` differences returned as they are: a call of 1 ms read as
    # 1,000,000 s, and was tuned on (gated, and written as a baseline) as such. Its
    # samples are invalid, as a timer's NaN is: the tuning falls back, saying why.
    class NanosecondClient(FakeClient):
        def time(self, fn, inputs):
            return super().time(fn, inputs) * 1e9

    client = NanosecondClient()
    tuner = Tuner("t", client.device_id)
    assert tuner.execute(make(client.clock, a=1e-3, b=2e-3), ([1],), client) == "a"
    said = [r.getMessage() for r in caplog.records if "falling back to a" in r.getMessage()]
    assert len(said) == 1, caplog.records
    assert "a: invalid_samples: the client's time() returned 1e+06 for a call that took" in said[0]
    assert "it must return seconds" in said[0]


def test_a_client_timing_by_a_model_may_read_more_than_the_wall_clock():
    # A cost model's figures need not be the host's time: a 10 ms figure for a call that
    # returns at once is a sample as any other.
    class ModelClient(FakeClient):
        def time(self, fn, inputs):
            fn(*inputs)
            return {"a": 10e-3, "b": 20e-3}[fn.__name__]

    client = ModelClient()
    tuner = Tuner("t", client.device_id)
    assert tuner.execute(make(client.clock, a=0.0, b=0.0), ([1],), client) == "a"
