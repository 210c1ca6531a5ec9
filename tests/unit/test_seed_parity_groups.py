"""Seed parity of grouped sets: what a user of `TuneGroup` priorities meets at run time."""

import numpy as np

from pytest_autotune import AutotuneConfig, LocalTuner, Tunable, TunableSet, TuneGroup
from pytest_autotune.tune.errors import UNPLANNED
from tests.fakes import FakeClient


def vec4_set(clock):
    """A kernel for sizes that are multiples of 4, which its group skips for the others
    (where it would compute something else), listed first, and two plain sums."""

    def vec4(x):
        clock.advance(1e-4)
        return np.float64(0.0) if x.size % 4 else x.reshape(-1, 4).sum()

    def plain(x):
        clock.advance(1e-3)
        return x.sum()

    def pairwise(x):
        clock.advance(2e-3)
        return np.add.reduce(x)

    fourable = TuneGroup("vec4", lambda n: 1 if n % 4 == 0 else -1)
    return (
        TunableSet(lambda x: x.size)
        .with_(Tunable("vec4", vec4).group(fourable, lambda n: 1))
        .with_(Tunable("plain", plain))
        .with_(Tunable("pairwise", pairwise))
    )


def test_a_candidate_its_group_skips_for_a_key_is_not_run_by_the_checks():
    # The seed's checks never change its decision: it tunes the planned candidates and runs
    # the fastest. Here the skipped kernel was the reference (the first that succeeds), both
    # right candidates failed their checks against its answer, and execute raised
    # NoValidKernelFound for a key two candidates compute right.
    client = FakeClient()
    local = LocalTuner("sums", AutotuneConfig(disable_cache=True, checks=True))
    tunables = vec4_set(client.clock)
    assert local.execute(client.device_id, client, tunables, (np.arange(5.0),)) == 10.0
    decision = local.tuner(client.device_id).decision(5)
    assert decision is not None
    assert decision.fastest_name == "plain"
    checks = {c.name: (c.passed, c.skipped, c.message) for c in decision.checks}
    assert checks["vec4"] == (True, True, f"skipped: {UNPLANNED}")
    assert checks["plain"] == (True, False, "reference")
    assert decision.results[0].message == UNPLANNED
    assert local.execute(client.device_id, client, tunables, (np.arange(8.0),)) == 28.0
    assert local.tuner(client.device_id).decision(8).fastest_name == "vec4"


def test_a_candidate_its_group_skips_for_a_key_is_recorded_as_never_planned():
    # Without the checks (a library's tuner), the skipped kernel read "not reached: batch 0
    # found a winner first" in the decision and its record, as if a later batch held it.
    client = FakeClient()
    local = LocalTuner("sums", AutotuneConfig(disable_cache=True))
    tunables = vec4_set(client.clock)
    assert local.execute(client.device_id, client, tunables, (np.arange(5.0),)) == 10.0
    decision = local.tuner(client.device_id).decision(5)
    assert decision is not None
    assert decision.fastest_name == "plain"
    assert "vec4" not in client.timed
    assert decision.results[0].message == UNPLANNED
