"""Gate reliability on this CPU: no false failures on unchanged code, and a 25% slowdown caught.

DESIGN section 8 asks that 100 `pytest --autotune` runs of unchanged code give no gate
failure, and that an injected slowdown of 25% (on a CPU) fails at least 95 of 100 runs.
This script builds a small project in a temporary directory with three autotuned groups of
NumPy candidates on the real CPU client:

- `test_sum`: a float32 vector of 2**20 elements summed by `np.sum`, `np.add.reduce` and a
  dot with ones, each candidate making 4 passes over the vector;
- `test_transpose`: a 256x256 float32 transpose by `.T.copy()`, `np.ascontiguousarray`
  and a loop over 64x64 tiles;
- `test_matmul`: a 64x64 float32 matmul by `np.matmul`, `np.dot` and `np.einsum`.

It records the baseline with `--baseline-sessions` (5) `--autotune-update` sessions in a row,
which the cache keeps while they agree and the gate compares by their mean (a user on a
noisy machine does the same: run the update a few times), then runs `pytest --autotune` as a
subprocess (a new session with its own peak probe, as in CI) `--runs` times on unchanged
code and `--runs` times with `GATE_SLOWDOWN` set, interleaved and alternating which goes
first, so a slow phase of the machine lands on both. The slowdown is exact: every
candidate of `test_sum` makes `4 * (1 + slowdown)` passes over the vector instead of 4
(5 instead of 4 at 25%; a fractional pass runs over a prefix), so the winner does 25% more
of the same work and stays the winner, whichever of the equal-speed candidates it is.
The other two groups are unchanged in every run, and report false failures too.

Besides the verdicts, it prints the between-session spread of each winner's change
against the baseline (the standard deviation of d over the unchanged runs), raw, scaled
by the peak probes, and scaled by the calibration read measured beside it (the gate's rule
on a CPU, `pytest_autotune.calibration`): the `sigma_between` the gate's noise model
assumes (2% calibrated, 3% raw), and what the gate's terms were. To say which rule would
reach both targets, the project's `conftest.py` writes down every measurement the gate
judged and takes the re-measurement in every session (after the gate has judged when
the gate did not ask for it, so no verdict changes); the same two measurements of each
session are then judged again under other settings of the rule.

`--condition` runs the gate under one of the conditions of issue 9, each against a
baseline recorded as a project would record it:

- `module` (the default): the one test module above, baseline and gate alike;
- `suite`: the whole suite, a second module of ordinary tests (NumPy work that allocates
  and frees 100+ MiB) collected before the kernels, baseline and gate alike;
- `k`: the baseline recorded by the whole suite, the gate run on a `-k` subset (the three
  groups without the other module), as a developer reruns a selection;
- `xdist`: baseline and gate under `pytest -n 2`;
- `groups`: `test_sum` tuned with a `groups=` plan whose first batch (two of the three
  candidates) succeeds, so tuning stops before the third;
- `neighbour`: a process spinning on one core beside every gated session (not the
  baseline's), as on a shared runner;
- `small`: the module with `test_sum` over 2**15 floats (128 KiB) instead of 2**20: a
  kernel whose input stays in the caches, calibrated by a read repeated to cover 2 MiB
  (`calibration.read_repeats`);
- `bursty`: beside every gated session, bursts of two processes spinning (both cores
  busy) for 1-6 s, then 1-6 s idle (durations drawn at random), as other jobs' test
  suites starting and stopping on a shared runner: the load the 1-minute average lags.

Each measurement the gate judged carries the share of its wall time during which runnable
threads waited for a CPU (`Measurement.pressure`, Linux's pressure-stall counters over its
samples), and the report gives the spread of the change d by that share: the data
`gate.conditions.pressure_factor` is fitted to. The probe also keeps the kernel's own
10-second average (`some avg10`) when each measurement was judged, and each session's
stall share over its whole run (`runs/NNN-KIND.session.json`, and "stalled" in the
progress lines), to see whether a longer window says more than the samples' own.

`--pin CPU` runs every session (the baseline too) on one CPU only, as `taskset -c CPU`
would, to see how much of the between-session spread comes from which CPU a session gets.
A session takes about 4.5 s here, so the default 200 sessions take about 16 minutes.

    PYTHONPATH=. python benchmarks/gate_reliability.py [--runs N] [--slowdown 0.25]
        [--baseline-sessions 5] [--pin CPU] [--keep DIR]

Exits with status 1 when a target is missed.
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib.metadata
import itertools
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_autotune.backends.peaks import Peaks
from pytest_autotune.gate import (
    CALIBRATED_MAX_REGRESSION,
    CALIBRATED_SIGMA_BETWEEN,
    DEFAULT_MAX_REGRESSION,
    DEFAULT_SIGMA_BETWEEN,
    DEFAULT_Z,
    Baseline,
    Calibration,
    Comparison,
    Measurement,
    RegressionCheck,
    contention,
    format_interval,
)
from pytest_autotune.tune.cache import PersistentCache
from pytest_autotune.tune.log import format_duration

REPO = Path(__file__).resolve().parent.parent
FALSE_FAILURES_ALLOWED = 0
DETECTION_TARGET = 0.95
SLOWED_GROUP = "test_sum"
GROUPS = ("test_sum", "test_transpose", "test_matmul")
MODULE = "test_gate_kernels.py"
BUSY_LOAD = 1.5
"""A 1-minute load average from which this 2-core machine counts as busy with other work
when a session starts (one core's worth of it besides ours)."""

CONDITIONS = ("module", "suite", "k", "xdist", "groups", "neighbour", "bursty", "small")

BURSTS = textwrap.dedent(
    """
    # Bursts of load beside the gate (--condition bursty): two processes spinning for
    # 1-6 s, then 1-6 s idle, for ever; seeded, so a run's bursts can be drawn again.
    import multiprocessing
    import random
    import sys
    import time


    def spin(until):
        while time.monotonic() < until:
            pass


    if __name__ == "__main__":
        rng = random.Random(int(sys.argv[1]))
        while True:
            until = time.monotonic() + rng.uniform(1.0, 6.0)
            workers = [multiprocessing.Process(target=spin, args=(until,)) for _ in range(2)]
            for worker in workers:
                worker.start()
            for worker in workers:
                worker.join()
            time.sleep(rng.uniform(1.0, 6.0))
    """
)

PRESSURE_BUCKETS = (0.0, 0.02, 0.1, 0.25, 0.5, 0.75, 1.0)
"""Edges of the shares of a measurement during which threads waited for a CPU, by which
the report groups the changes d."""

OTHER_MODULE = textwrap.dedent(
    """
    # Ordinary tests of the suite, collected before the kernels: NumPy work that allocates
    # and frees well over 100 MiB, so the gated groups run in a process with a history.
    import numpy as np
    import pytest


    @pytest.mark.parametrize("n", [1 << 22, 1 << 23, 1 << 24])
    def test_sorting(n):
        values = np.random.default_rng(n).random(n)
        assert np.all(np.diff(np.sort(values)) >= 0)


    @pytest.mark.parametrize("n", [512, 1024])
    def test_solving(n):
        rng = np.random.default_rng(n)
        a = rng.random((n, n)) + n * np.eye(n)
        x = rng.random(n)
        assert np.allclose(a @ np.linalg.solve(a, x), x)
    """
)
OTHER = "test_a_other.py"
"""Named to be collected before the kernels' module."""

GROUPS_PLAN = textwrap.dedent(
    """
    from pytest_autotune import TuneGroup

    VECTOR = TuneGroup("vector", lambda key: 2)
    FALLBACK = TuneGroup("fallback", lambda key: 1)
    PLAN = [(VECTOR, {"pairwise": 1, "add_reduce": 1}), (FALLBACK, {"dot_ones": 1})]
    """
)

TEST_MODULE = textwrap.dedent(
    '''
    import os

    import numpy as np
    import pytest

    from pytest_autotune import Work

    PASSES = 4
    SLOWDOWN = float(os.environ.get("GATE_SLOWDOWN", "0"))


    def passes(fn, x):
        """PASSES calls of fn over x; with GATE_SLOWDOWN=s, PASSES * (1 + s) (a fraction of
        a pass runs over a prefix of x): the same work, exactly that much more of it."""
        total = PASSES * (1 + SLOWDOWN)
        whole = int(total)
        part = round((total - whole) * x.size)
        for _ in range(whole):
            out = fn(x)
        if part:
            fn(x[:part])
        return out


    def dot_ones(x):
        return np.float32(np.dot(x, np.ones_like(x)))


    @pytest.fixture(scope="module")
    def x():
        return np.random.default_rng(0).random(1 << 20, dtype=np.float32)


    @pytest.mark.autotune(
        candidates={"pairwise": np.sum, "add_reduce": np.add.reduce, "dot_ones": dot_ones},
        work=lambda x: Work(compute_ops=PASSES * x.size, bytes=PASSES * x.nbytes),
        rtol=1e-3,
    )
    def test_sum(candidate, x):
        return passes(candidate, x)


    def copy_t(a):
        return a.T.copy()


    def contiguous_t(a):
        return np.ascontiguousarray(a.T)


    def tiled_t(a, tile=64):
        n = a.shape[0]
        out = np.empty_like(a)
        for i in range(0, n, tile):
            for j in range(0, n, tile):
                out[j : j + tile, i : i + tile] = a[i : i + tile, j : j + tile].T
        return out


    @pytest.fixture(scope="module")
    def square():
        return np.random.default_rng(1).random((256, 256), dtype=np.float32)


    @pytest.mark.autotune(
        candidates={"copy": copy_t, "ascontiguousarray": contiguous_t, "tiled": tiled_t},
        work=lambda square: Work(bytes=2 * square.nbytes),
    )
    def test_transpose(candidate, square):
        return candidate(square)


    def einsum_mm(a, b):
        return np.einsum("ij,jk->ik", a, b)


    @pytest.fixture(scope="module")
    def pair():
        rng = np.random.default_rng(2)
        return rng.random((64, 64), dtype=np.float32), rng.random((64, 64), dtype=np.float32)


    @pytest.mark.autotune(
        candidates={"matmul": np.matmul, "dot": np.dot, "einsum": einsum_mm},
        work=lambda pair: Work(compute_ops=2 * 64**3, bytes=3 * pair[0].nbytes),
        rtol=1e-4,
    )
    def test_matmul(candidate, pair):
        return candidate(*pair)
    '''
)

CONFTEST = textwrap.dedent(
    """
    # A probe of benchmarks/gate_reliability.py, not a part of the gate: it writes down every
    # measurement the gate judged (the records keep only the one the verdict rests on) and
    # takes the re-measurement in every session, after the gate has judged when the gate
    # did not ask for it, so that no verdict depends on it.
    import json
    import os

    import pytest_autotune.gate_policy as gate_policy

    _judge = gate_policy.judge


    def _avg10():
        # The kernel's own 10-second average of the CPU stall share, now (`some avg10`).
        try:
            with open("/proc/pressure/cpu", encoding="utf-8") as psi:
                line = psi.readline().split()
            return float(line[1].split("=")[1]) / 100
        except (OSError, IndexError, ValueError):
            return None


    def _ns(measurement):
        calibration = measurement.calibration
        return {
            "samples_ns": [round(s * 1e9) for s in measurement.samples],
            "calibration": None if calibration is None else calibration.to_json(),
            "load": measurement.load,
            "pressure": getattr(measurement, "pressure", None),
        }


    def judge(current, baseline, **options):
        remeasure = options.get("remeasure")
        diag = os.environ.get("GATE_DIAG")
        if diag is None or current is None or remeasure is None:
            return _judge(current, baseline, **options)
        taken = []
        recent = [_avg10()]

        def again():
            taken.append(remeasure())
            recent.append(_avg10())
            return taken[-1]

        options["remeasure"] = again
        verdict = _judge(current, baseline, **options)
        asked = bool(taken)
        if not asked:
            try:
                again()
            except Exception:  # a failing winner is the gate's business, not the probe's
                pass
        with open(diag, "a", encoding="utf-8") as out:
            line = {
                "checksum": options["checksum"],
                "gate_remeasured": asked,
                "measurements": [_ns(m) for m in (current, *taken)],
                "avg10": recent,
            }
            out.write(json.dumps(line) + "\\n")
        return verdict


    gate_policy.judge = judge
    """
)


# -- one session --------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class GroupRun:
    """One group in one session: the gate's verdict and both measurements of its winner."""

    group: str
    winner: str
    verdict: str
    failed: bool
    comparison: Comparison | None
    """What the gate reported, as fractions."""
    peak_ratio: float
    first: Measurement
    second: Measurement | None
    gate_remeasured: bool


@dataclass(frozen=True, slots=True)
class Session:
    kind: str
    """"unchanged" or "slowed"."""
    index: int
    returncode: int
    wall: float
    load: float
    """The 1-minute load average when the session started."""
    peaks: Peaks
    """What the session's peak probe measured."""
    groups: dict[str, GroupRun]
    pressure: float | None = None
    """The share of the whole session's wall time during which runnable threads waited
    for a CPU (None without PSI, or for a kept run)."""


def plugin_args() -> list[str]:
    """`-p pytest_autotune.plugin` unless an installed entry point already loads it (with
    the repository on the path, its egg-info may provide one)."""
    installed = any(
        ep.value.startswith("pytest_autotune")
        for ep in importlib.metadata.entry_points(group="pytest11")
    )
    return [] if installed else ["-p", "pytest_autotune.plugin"]


def pytest_command(*args: str) -> list[str]:
    return [sys.executable, "-m", "pytest", *plugin_args(), "-p", "no:cacheprovider", *args]


def child_env(slowdown: float, diag: Path | None) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), env.get("PYTHONPATH")) if p)
    env["GATE_SLOWDOWN"] = repr(slowdown)
    if diag is not None:
        env["GATE_DIAG"] = str(diag)
    else:
        env.pop("GATE_DIAG", None)
    return env


def pinned(cpu: int | None) -> Callable[[], None] | None:
    """What a child runs before pytest to stay on one CPU (`--pin`), as `taskset -c` would."""
    if cpu is None:
        return None
    return lambda: os.sched_setaffinity(0, {cpu})


def make_project(root: Path, condition: str) -> None:
    (root / "pytest.ini").write_text("[pytest]\n")
    module = TEST_MODULE.lstrip()
    if condition == "groups":
        module = GROUPS_PLAN.lstrip() + module.replace(
            "    rtol=1e-3,\n)\ndef test_sum",
            "    rtol=1e-3,\n    groups=PLAN,\n)\ndef test_sum",
        )
        assert "groups=PLAN" in module
    if condition == "small":
        module = module.replace("random(1 << 20, dtype", "random(1 << 15, dtype")
        assert "1 << 15" in module
    (root / MODULE).write_text(module)
    if condition in ("suite", "k"):
        (root / OTHER).write_text(OTHER_MODULE.lstrip())
    (root / "conftest.py").write_text(CONFTEST.lstrip())


def selection(condition: str, gate: bool) -> list[str]:
    """What pytest is asked to run under `condition`: by the gate (`gate`) or the baseline."""
    if condition == "suite" or (condition == "k" and not gate):
        return []
    if condition == "k":
        return ["-k", "test_sum or test_transpose or test_matmul"]
    if condition == "xdist":
        return ["-n", "2", MODULE]
    return [MODULE]


def short_group(name: str) -> str:
    return name.split("::")[-1].split("[")[0]


def load_baselines(root: Path) -> tuple[dict[str, Baseline], Peaks]:
    """The baseline of each group, and the peaks the baseline session measured."""
    baselines = {}
    peaks: Peaks | None = None
    for path in sorted((root / ".autotune").glob("*/*.json")):
        if path.name == "peaks.json":
            continue
        cache = PersistentCache(path)
        entries = cache.load()
        device = cache.device()
        if device is not None:
            peaks = Peaks.from_json(device["peaks"])
        for pk, value in entries.items():
            # The file stores its tuner's exact name; its file name may carry a hash.
            group = short_group(str(cache.metadata().get("tuner") or path.stem))
            baselines[group] = Baseline.from_cache_entry(
                value,
                pk.checksum,
                device=cache.device(),
                metadata=cache.metadata(),
                source=str(path.relative_to(root)),
            )
    if peaks is None or set(baselines) != set(GROUPS):
        raise SystemExit(f"the baseline in {root / '.autotune'} lacks groups or peaks")
    return baselines, peaks


def measurement(data: dict[str, Any]) -> Measurement:
    calibration = data["calibration"]
    return Measurement(
        tuple(s / 1e9 for s in data["samples_ns"]),
        None if calibration is None else Calibration.from_json(calibration),
        load=data.get("load"),
        pressure=data.get("pressure"),
    )


def background(condition: str) -> subprocess.Popen[bytes] | None:
    """The load beside the gated sessions under `condition` (its own process group, so
    that stopping it stops the spinning children too), None where there is none."""
    if condition == "neighbour":
        code = "while True: pass"
    elif condition == "bursty":
        code = BURSTS
    else:
        return None
    return subprocess.Popen(
        [sys.executable, "-c", code, str(time.time_ns())], start_new_session=True
    )


def stop(process: subprocess.Popen[bytes] | None) -> None:
    if process is not None:
        os.killpg(process.pid, 9)
        process.wait()


def run_session(
    root: Path,
    kind: str,
    index: int,
    slowdown: float,
    baselines: dict[str, Baseline],
    pin: int | None,
    condition: str,
) -> Session:
    record = root / "runs" / f"{index:03d}-{kind}.jsonl"
    diag = root / "runs" / f"{index:03d}-{kind}.diag.jsonl"
    record.parent.mkdir(exist_ok=True)
    load = os.getloadavg()[0]
    stalls = contention.stall_reading()
    start = time.perf_counter()
    done = subprocess.run(
        pytest_command(
            "-q", "--autotune", f"--autotune-record={record}", *selection(condition, gate=True)
        ),
        cwd=root,
        env=child_env(slowdown, diag),
        capture_output=True,
        text=True,
        check=False,
        preexec_fn=pinned(pin),
    )
    wall = time.perf_counter() - start
    share = contention.pressure_share(stalls, contention.stall_reading())
    if done.returncode not in (0, 1) or not record.exists():
        raise SystemExit(
            f"run {index} ({kind}): pytest exited {done.returncode}\n{done.stdout}\n{done.stderr}"
        )
    (root / "runs" / f"{index:03d}-{kind}.session.json").write_text(
        json.dumps({"load": load, "wall": wall, "pressure": share})
    )
    session = read_session(root, kind, index, baselines, done.returncode, wall, load)
    return dataclasses.replace(session, pressure=share)


def read_session(
    root: Path,
    kind: str,
    index: int,
    baselines: dict[str, Baseline],
    returncode: int,
    wall: float,
    load: float,
) -> Session:
    """One session from the records and measurements it left in `root/runs`."""
    record = root / "runs" / f"{index:03d}-{kind}.jsonl"
    diag = root / "runs" / f"{index:03d}-{kind}.diag.jsonl"
    by_checksum = {}
    if diag.exists():
        for line in diag.read_text().splitlines():
            entry = json.loads(line)
            by_checksum[entry["checksum"]] = entry
    groups = {}
    peaks: Peaks | None = None
    for line in record.read_text().splitlines():
        data = json.loads(line)
        extra = data["extra"]
        group = short_group(extra["group"])
        baseline = baselines[group]
        peaks = Peaks.from_json(extra["device"]["peaks"])
        probe = by_checksum[data["checksum"]]
        taken = [measurement(m) for m in probe["measurements"]]
        comparison = extra["comparison"]
        groups[group] = GroupRun(
            group=group,
            winner=data["fastest_name"],
            verdict=extra["verdict"],
            failed=extra["verdict"] in ("regression", "floor", "error"),
            comparison=None if comparison is None else Comparison.from_json(comparison),
            peak_ratio=baseline.peak_ratio(peaks),
            first=taken[0],
            second=taken[1] if len(taken) > 1 else None,
            gate_remeasured=probe["gate_remeasured"],
        )
    if peaks is None:
        raise SystemExit(f"run {index} ({kind}): no records in {record}")
    return Session(kind, index, returncode, wall, load, peaks, groups)


def report_kept(root: Path, args: argparse.Namespace) -> int:
    """The report of a run kept with `--keep`, from its files alone: a session failed when
    one of its groups did; its wall time and load were not kept."""
    baselines, base_peaks = load_baselines(root)
    sessions: dict[str, list[Session]] = {"unchanged": [], "slowed": []}
    for record in sorted((root / "runs").glob("*.jsonl")):
        if record.name.endswith(".diag.jsonl"):
            continue
        index, kind = record.stem.split("-")
        if kind not in sessions:
            continue
        session = read_session(root, kind, int(index), baselines, 0, math.nan, math.nan)
        failed = any(run.failed for run in session.groups.values())
        sessions[kind].append(dataclasses.replace(session, returncode=int(failed)))
    if not sessions["unchanged"] or not sessions["slowed"]:
        raise SystemExit(f"{root}: no kept sessions of both kinds")
    return report(sessions, baselines, base_peaks, args, math.nan)


# -- judging the same measurements under other rules -----------------------------------------

MODES = ("raw", "peaks", "calibrated")
"""How a time is normalised before it is compared: not at all, by the peak probes (the
design's first rule), or by the calibration read measured beside it (the gate's rule on a
CPU since it reads both sides' calibration)."""


def as_mode(m: Measurement, mode: str) -> Measurement:
    return m if mode == "calibrated" else dataclasses.replace(m, calibration=None)


def base_as_mode(b: Baseline, mode: str) -> Baseline:
    return b if mode == "calibrated" else dataclasses.replace(b, calibration=None)


@dataclass(frozen=True, slots=True)
class Rule:
    """The gate's regression rule with its settings spelled out, to judge recorded
    measurements again."""

    name: str
    max_regression: float | None
    """None: the gate's default (3% for a calibrated comparison, 10% for a raw one)."""
    sigma_between: float | None
    """None: as the gate takes it, its default pooled with the baseline's measured spread."""
    mode: str = "calibrated"
    z: float = DEFAULT_Z
    confirm: bool = True
    newest_only: bool = False
    """Compare with the baseline's newest session alone, as if it had been recorded once."""

    def fails(self, run: GroupRun, baseline: Baseline) -> bool:
        ratio = run.peak_ratio if self.mode == "peaks" else 1.0
        base = base_as_mode(baseline, self.mode)
        if self.newest_only:
            base = dataclasses.replace(base, history=())
        calibrated = as_mode(run.first, self.mode).calibrated_against(base)
        check = RegressionCheck.for_device(
            base.device_id,
            self.max_regression,
            self.sigma_between,
            calibrated=calibrated,
            measured=base.spread(calibrated),
        )
        check = dataclasses.replace(check, z=self.z)

        def one(current: Measurement) -> bool:
            return check.delta(as_mode(current, self.mode), base, ratio).failed

        if not one(run.first):
            return False
        if not self.confirm:
            return True
        return run.second is not None and one(run.second)


def tally(
    rule: Rule,
    sessions: Iterable[Session],
    groups: Iterable[str],
    baselines: dict[str, Baseline],
) -> int:
    """Sessions in which any of `groups` fails under `rule`."""
    wanted = tuple(groups)
    return sum(any(rule.fails(s.groups[g], baselines[g]) for g in wanted) for s in sessions)


# -- statistics -------------------------------------------------------------------------------


Which = Callable[[GroupRun], "Measurement | None"]


def FIRST(run: GroupRun) -> Measurement | None:
    return run.first


def SECOND(run: GroupRun) -> Measurement | None:
    return run.second


PROBES: dict[str, Callable[[Peaks], float]] = {
    "copy B/s": lambda p: p.memory.get("copy", math.nan),
    "read B/s": lambda p: p.memory.get("read", math.nan),
    "fp32 op/s": lambda p: p.compute_peak("fp32"),
}


def measured(run: GroupRun, which: Which) -> Measurement:
    m = which(run)
    assert m is not None
    return m


def log_change(run: GroupRun, baseline: Baseline, which: Which, mode: str) -> float:
    """ln of the change the gate compares under `mode` (with sigma_between 0)."""
    check = RegressionCheck(0.0, 0.0)
    ratio = run.peak_ratio if mode == "peaks" else 1.0
    change = check.delta(
        as_mode(measured(run, which), mode), base_as_mode(baseline, mode), ratio
    ).delta
    return math.log1p(change)


def se_of(run: GroupRun, baseline: Baseline, which: Which, mode: str) -> float:
    """The within-session error of the compared ln: the gate's sigma with sigma_between 0."""
    check = RegressionCheck(0.0, 0.0, z=1.0)
    c = check.delta(as_mode(measured(run, which), mode), base_as_mode(baseline, mode))
    return math.log1p(c.high) - math.log1p(c.delta)


def std(values: Sequence[float]) -> float:
    return statistics.stdev(values) if len(values) > 1 else math.nan


def rms(values: Sequence[float]) -> float:
    return math.sqrt(statistics.fmean(v * v for v in values)) if values else math.nan


def correlation(xs: Sequence[float], ys: Sequence[float]) -> float:
    """Pearson's r, NaN where either side does not vary."""
    try:
        return statistics.correlation(xs, ys)
    except statistics.StatisticsError:
        return math.nan


def pct(value: float) -> str:
    return f"{value * 100:+.2f}%"


def failure_summary(session: Session) -> str:
    """The failed groups of a session on one line: how much, and against what."""
    parts = []
    for run in session.groups.values():
        if not run.failed:
            continue
        change = format_interval(run.comparison) if run.comparison else "-"
        parts.append(
            f"{run.group} (winner {run.winner}) {run.verdict} {change},"
            f" median {format_duration(run.first.median)}"
            f"{'' if run.second is None else ' then ' + format_duration(run.second.median)}"
        )
    return "; ".join(parts)


def describe_run(session: Session) -> str:
    cells = []
    for group in GROUPS:
        run = session.groups.get(group)
        if run is None:
            cells.append(f"{group[5:]} -")
            continue
        delta = "-" if run.comparison is None else f"{run.comparison.delta * 100:+.1f}%"
        again = "*" if run.gate_remeasured else ""
        cells.append(f"{group[5:]} {delta} {run.verdict}{again}")
    return "  ".join(cells)


def show(share: float | None) -> str:
    return "-" if share is None else f"{share:.0%}"


def show_share(run: GroupRun) -> str:
    return show(run.first.pressure)


def bucket_of(share: float) -> int:
    """The index of the pressure bucket `share` falls in (`PRESSURE_BUCKETS`)."""
    for i, edge in enumerate(PRESSURE_BUCKETS[1:-1]):
        if share < edge:
            return i
    return len(PRESSURE_BUCKETS) - 2


def pressure_table(
    unchanged: Sequence[Session],
    slowed: Sequence[Session],
    baselines: dict[str, Baseline],
    slowdown: float,
) -> None:
    """The spread of d (the calibrated change, ln) by the share of its measurement during
    which threads waited for a CPU: every measurement of every group in the unchanged
    runs, and of the unchanged groups in the slowed ones, with the slowed group's d less
    ln(1 + slowdown); the re-measurements too. `rms` is about the quiet bucket's mean,
    the shift a verdict sees against a baseline recorded quiet."""
    points: list[tuple[float, float, float]] = []
    for session in (*unchanged, *slowed):
        for group, run in session.groups.items():
            base = baselines[group]
            shift = (
                math.log1p(slowdown) if session.kind == "slowed" and group == SLOWED_GROUP else 0
            )
            for which in (FIRST, SECOND):
                m = which(run)
                if m is None or m.pressure is None:
                    continue
                d = log_change(run, base, which, "calibrated") - shift
                points.append((m.pressure, d, se_of(run, base, which, "calibrated")))
    if not points:
        print("no measurement carries a pressure share (no PSI here)")
        return
    quiet = [d for share, d, _ in points if bucket_of(share) == 0]
    centre = statistics.fmean(quiet) if quiet else 0.0
    print()
    print(
        "the change d (calibrated, ln, the slowdown taken out) by the share of its measurement"
        " during which runnable threads waited for a CPU (pressure), every group and"
        f" measurement; rms about the quietest bucket's mean {pct(centre)}:"
    )
    print(
        f"  {'pressure':>11} {'n':>4} {'mean d':>7} {'sd d':>6} {'rms':>6} {'rms se':>6}"
        f" {'max |d|':>7}"
    )
    for i, (low, high) in enumerate(itertools.pairwise(PRESSURE_BUCKETS)):
        cell = [(d, se) for share, d, se in points if bucket_of(share) == i]
        if not cell:
            continue
        ds = [d for d, _ in cell]
        print(
            f"  {low:4.0%}-{high:4.0%} {len(ds):>5} {pct(statistics.fmean(ds)):>7}"
            f" {std(ds) * 100:5.2f}% {rms([d - centre for d in ds]) * 100:5.2f}%"
            f" {rms([se for _, se in cell]) * 100:5.2f}%"
            f" {max(abs(d - centre) for d in ds) * 100:6.2f}%"
        )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=100, help="runs of each kind")
    parser.add_argument("--slowdown", type=float, default=0.25, help="injected slowdown")
    parser.add_argument("--keep", type=Path, default=None, help="build the project here, keep it")
    parser.add_argument(
        "--report",
        type=Path,
        default=None,
        metavar="DIR",
        help="print the report of a run kept in DIR again (with this script's rules), run nothing",
    )
    parser.add_argument(
        "--baseline-sessions",
        type=int,
        default=5,
        help="record the baseline with this many --autotune-update sessions (default 5)",
    )
    parser.add_argument(
        "--condition",
        choices=CONDITIONS,
        default="module",
        help="the condition to gate under (see the module docstring)",
    )
    parser.add_argument(
        "--pin",
        type=int,
        default=None,
        metavar="CPU",
        help="run every pytest session on this one CPU only, as `taskset -c CPU` would",
    )
    args = parser.parse_args(argv)
    if args.runs < 2 or not (0 < args.slowdown < 10) or args.baseline_sessions < 1:
        parser.error(
            "--runs must be at least 2, --slowdown in (0, 10), --baseline-sessions at least 1"
        )

    if args.report is not None:
        return report_kept(args.report, args)
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="gate-reliability-") as scratch:
        root = args.keep or Path(scratch)
        root.mkdir(parents=True, exist_ok=True)
        make_project(root, args.condition)
        for _ in range(args.baseline_sessions):
            update = subprocess.run(
                pytest_command("-q", "--autotune-update", *selection(args.condition, gate=False)),
                cwd=root,
                env=child_env(0.0, None),
                capture_output=True,
                text=True,
                check=False,
                preexec_fn=pinned(args.pin),
            )
            if update.returncode != 0:
                print(update.stdout, update.stderr)
                return 1
        baselines, base_peaks = load_baselines(root)
        print(f"baseline ({time.perf_counter() - started:.1f} s) in {root}:")
        for group in GROUPS:
            b = baselines[group]
            print(
                f"  {group:15} {b.fastest_name:18} median {b.median * 1e6:9.2f} us"
                f"  se {b.se_log * 100:.2f}%  n {len(b.samples)}  sessions {len(b.sessions())}"
                f"  peak {b.peak_resource} {b.peak:.3g}"
            )
        print(
            f"runs: {args.runs} unchanged and {args.runs} with {SLOWED_GROUP} slowed by"
            f" {args.slowdown:.0%}, interleaved"
            f"{'' if args.pin is None else f', every session on CPU {args.pin} only'};"
            " '*' = the gate re-measured"
        )
        sessions: dict[str, list[Session]] = {"unchanged": [], "slowed": []}
        neighbour = background(args.condition)
        try:
            for index in range(args.runs):
                order = [("unchanged", 0.0), ("slowed", args.slowdown)]
                for kind, slowdown in order if index % 2 == 0 else order[::-1]:
                    session = run_session(
                        root, kind, index, slowdown, baselines, args.pin, args.condition
                    )
                    sessions[kind].append(session)
                    print(
                        f"[{index + 1:3d}/{args.runs}] {kind:9} rc={session.returncode}"
                        f"  {describe_run(session)}  ({session.wall:.1f} s,"
                        f" load {session.load:.1f}, stalled {show(session.pressure)},"
                        f" {(time.perf_counter() - started) / 60:.1f} min)",
                        flush=True,
                    )
        finally:
            stop(neighbour)
        wall = time.perf_counter() - started
        return report(sessions, baselines, base_peaks, args, wall)


def report(
    sessions: dict[str, list[Session]],
    baselines: dict[str, Baseline],
    base_peaks: Peaks,
    args: argparse.Namespace,
    wall: float,
) -> int:
    unchanged, slowed = sessions["unchanged"], sessions["slowed"]
    everything = unchanged + slowed
    device_id = next(iter(baselines.values())).device_id
    busy = sum(s.load >= BUSY_LOAD for s in everything)
    print()
    print(
        f"=== gate reliability ({getattr(args, 'condition', 'module')}):"
        f" {len(unchanged)} unchanged + {len(slowed)} slowed sessions on"
        f" {device_id}; wall {wall / 60:.1f} min, median session"
        f" {statistics.median(s.wall for s in everything):.1f} s; sessions started at a 1-min"
        f" load average >= {BUSY_LOAD}: {busy}/{len(everything)}"
    )

    false_failures = [s for s in unchanged if s.returncode != 0]
    print(f"unchanged runs that failed the gate: {len(false_failures)}/{len(unchanged)}")
    for s in false_failures:
        print(f"  run {s.index} (load {s.load:.1f}): {failure_summary(s)}")
    detected = [
        s for s in slowed if s.returncode != 0 and s.groups[SLOWED_GROUP].verdict == "regression"
    ]
    print(
        f"slowed runs ({SLOWED_GROUP} +{args.slowdown:.0%}) that failed on it:"
        f" {len(detected)}/{len(slowed)}"
    )
    others = [(s, g) for s in slowed for g in GROUPS if g != SLOWED_GROUP and s.groups[g].failed]
    print(
        f"unchanged groups (transpose, matmul) failing inside the slowed runs:"
        f" {len(others)}/{len(slowed) * (len(GROUPS) - 1)}"
    )
    noisy_unchanged = [
        s for s in unchanged if any(r.verdict == "too noisy" for r in s.groups.values())
    ]
    noisy_slowed = [s for s in slowed if s.groups[SLOWED_GROUP].verdict == "too noisy"]
    print(
        f"'too noisy' verdicts: unchanged runs with one {len(noisy_unchanged)}/{len(unchanged)};"
        f" slowed runs where {SLOWED_GROUP} was too noisy {len(noisy_slowed)}/{len(slowed)}"
        f" (neither caught nor passed)"
    )
    silent = [s for s in slowed if s.groups[SLOWED_GROUP].verdict == "pass"]
    print(
        f"slowed runs where {SLOWED_GROUP} passed silently: {len(silent)}/{len(slowed)}"
        + "".join(
            f"; run {s.index} {describe_run(s)} (pressure {show_share(s.groups[SLOWED_GROUP])})"
            for s in silent
        )
    )
    pressure_table(unchanged, slowed, baselines, args.slowdown)

    print()
    print(
        "between-session spread over the unchanged runs: d = ln of the change the gate"
        " compares, first measurement of each session, under each normalisation"
    )
    print(
        f"  {'group':15} {'mode':10} {'mean d':>7} {'sd d':>6} {'max d':>7} {'rms se':>6}"
        f" {'sb':>6} {'corr2':>5}  winners"
    )
    between: dict[str, list[float]] = {mode: [] for mode in MODES}
    offsets: dict[str, list[float]] = {}
    for group in GROUPS:
        base = baselines[group]
        runs = [s.groups[group] for s in unchanged]
        count = {w: sum(r.winner == w for r in runs) for w in sorted({r.winner for r in runs})}
        for mode in MODES:
            d = [log_change(r, base, FIRST, mode) for r in runs]
            se = [se_of(r, base, FIRST, mode) for r in runs]
            sb = math.sqrt(max(0.0, std(d) ** 2 - rms(se) ** 2))
            between[mode].append(sb)
            if mode == "raw":
                offsets[group] = d
            pairs = [r for r in runs if r.second is not None]
            again = correlation(
                [log_change(r, base, FIRST, mode) for r in pairs],
                [log_change(r, base, SECOND, mode) for r in pairs],
            )
            print(
                f"  {group:15} {mode:10} {pct(statistics.fmean(d)):>7} {std(d) * 100:5.2f}%"
                f" {pct(max(d)):>7} {rms(se) * 100:5.2f}% {sb * 100:5.2f}% {again:+5.2f}"
                f"  {count if mode == 'raw' else ''}"
            )
    print(
        "  (mean d: the baseline session's own offset, which every comparison against this"
        " one baseline carries; rms se: the within-session error of d the gate uses, the"
        " calibration's included; sb = sqrt(sd^2 - rms se^2): sigma_between measured;"
        " corr2: of d in the first measurement with d in the re-measurement of a session)"
    )
    between_groups = ", ".join(
        f"{a[5:]}~{b[5:]} {correlation(offsets[a], offsets[b]):+.2f}"
        for i, a in enumerate(GROUPS)
        for b in GROUPS[i + 1 :]
    )
    print(f"  correlation of the groups' raw d within a session: {between_groups}")
    sigma = {mode: max(values) for mode, values in between.items()}
    print(
        "sigma_between measured on this CPU (largest of the groups): "
        + ", ".join(f"{mode} {value * 100:.2f}%" for mode, value in sigma.items())
        + f"; the gate assumes {CALIBRATED_SIGMA_BETWEEN:.1%} calibrated,"
        f" {DEFAULT_SIGMA_BETWEEN['cpu']:.1%} otherwise"
    )

    print()
    print("peak probes (one per session) against the baseline's:")
    for name, read in PROBES.items():
        values = [read(s.peaks) for s in everything]
        print(
            f"  {name:12} baseline {read(base_peaks):.3g}; sessions min {min(values):.3g}"
            f" median {statistics.median(values):.3g} max {max(values):.3g}"
            f" (sd of ln {std([math.log(v) for v in values]) * 100:.1f}%)"
        )

    base = baselines[SLOWED_GROUP]
    runs = [s.groups[SLOWED_GROUP] for s in slowed]
    print()
    print(
        f"{SLOWED_GROUP} slowed by {args.slowdown:.0%} (ln {math.log1p(args.slowdown):.4f}):"
        f" the gate fails it when d - {DEFAULT_Z} sigma > ln(1 + max_regression),"
        f" max_regression {CALIBRATED_MAX_REGRESSION:.0%} calibrated,"
        f" {DEFAULT_MAX_REGRESSION['cpu']:.0%} raw"
    )
    for label, which in (("first measurement", FIRST), ("re-measurement", SECOND)):
        usable = [r for r in runs if which(r) is not None]
        for mode in MODES:
            d = [log_change(r, base, which, mode) for r in usable]
            print(
                f"  {label:17} {mode:10} d mean {statistics.fmean(d):.4f} sd {std(d):.4f}"
                f" min {min(d):.4f}"
            )
    print(f"  the gate re-measured {sum(r.gate_remeasured for r in runs)}/{len(runs)} slowed runs")
    suspected = [s for s in unchanged if any(r.gate_remeasured for r in s.groups.values())]
    print(
        f"  unchanged sessions with a suspected failure: {len(suspected)}; the re-measurement"
        f" cleared {sum(s.returncode == 0 for s in suspected)} of them"
    )

    mr = DEFAULT_MAX_REGRESSION["cpu"]
    raw_sigma = DEFAULT_SIGMA_BETWEEN["cpu"]
    rules = [
        Rule("the gate's defaults now (calibrated)", None, None),
        Rule("calibrated, without the re-measurement", None, None, confirm=False),
        Rule("calibrated, the newest baseline session only", None, None, newest_only=True),
        Rule("calibrated, 10% tolerance", mr, None),
        Rule("calibrated, 5% tolerance", 0.05, None),
        Rule("raw, every baseline session, 10%", None, None, mode="raw"),
        Rule("raw, the newest session only (run D's rule)", mr, raw_sigma, "raw", newest_only=True),
        Rule(
            "peak-normalised, newest session (design's first)",
            mr,
            raw_sigma,
            "peaks",
            newest_only=True,
        ),
    ]
    need = math.ceil(DETECTION_TARGET * len(slowed))
    print()
    print(
        "the same two measurements of every session judged under other rules (a rule fails a"
        " group when both fail it; sessions counted):"
    )
    print(f"  {'rule':58} {'unchanged':>9} {'others':>7} {'detected':>8}")
    for rule in rules:
        fa = tally(rule, unchanged, GROUPS, baselines)
        fo = tally(rule, slowed, [g for g in GROUPS if g != SLOWED_GROUP], baselines)
        det = tally(rule, slowed, [SLOWED_GROUP], baselines)
        ok = fa <= FALSE_FAILURES_ALLOWED and fo <= FALSE_FAILURES_ALLOWED and det >= need
        print(
            f"  {rule.name:58} {fa:>5}/{len(unchanged):<3} {fo:>3}/{len(slowed):<3}"
            f" {det:>4}/{len(slowed):<3} {'both targets' if ok else ''}"
        )
    print(
        "  (unchanged: unchanged sessions failing; others: slowed sessions whose unchanged"
        " groups fail; detected: slowed sessions failing on the slowed group)"
    )
    print(
        "max_regression values (0% to 20%, in steps of 0.5%) that reach both targets on these"
        " sessions, by normalisation and sigma_between (fitted to these sessions: an upper"
        " bound on what the rule can do here, not a setting to adopt as is):"
    )
    for mode in MODES:
        cells = []
        for allowance in (0.0, 0.01, 0.015, 0.02, 0.03, 0.04):
            good = []
            for half_points in range(41):
                rule = Rule("", half_points / 200, allowance, mode=mode)
                fa = tally(rule, unchanged, GROUPS, baselines)
                fo = tally(rule, slowed, [g for g in GROUPS if g != SLOWED_GROUP], baselines)
                det = tally(rule, slowed, [SLOWED_GROUP], baselines)
                if fa <= FALSE_FAILURES_ALLOWED and fo <= FALSE_FAILURES_ALLOWED and det >= need:
                    good.append(half_points / 2)
            found = f"{min(good):g}-{max(good):g}%" if good else "none"
            cells.append(f"{allowance:.1%}: {found}")
        print(f"  {mode:10} " + ", ".join(cells))

    met_false = len(false_failures) <= FALSE_FAILURES_ALLOWED
    met_detect = len(detected) >= need
    print()
    print(
        f"target: no gate failure in {len(unchanged)} unchanged runs ->"
        f" {'met' if met_false else 'MISSED'}"
    )
    print(
        f"target: at least {need}/{len(slowed)} slowed runs fail ->"
        f" {'met' if met_detect else 'MISSED'}"
    )
    return 0 if met_false and met_detect else 1


if __name__ == "__main__":
    sys.exit(main())
