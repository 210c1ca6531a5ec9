"""Whether a baseline can judge this run, and what a verdict says where it cannot: there is
none (and which devices have one), it measured something else (another device, candidate
list or work), or its winner failed or was skipped here.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from pytest_autotune.gate.baseline import Baseline
from pytest_autotune.gate.rules import device_kind
from pytest_autotune.tune.bounds import Bounds
from pytest_autotune.tune.errors import NOT_REACHED, AutotuneError, AutotuneErrorKind


def no_baseline_message(
    device_id: str,
    baseline_devices: Sequence[str],
    baseline: Baseline | None,
    unreadable: str | None = None,
    missing_file: str | None = None,
) -> str | None:
    """The message of a missing baseline, naming the other devices that have one, or
    `unreadable` where the baseline is there and does not read; None when there is a
    baseline. `missing_file` is the cache file looked in, where there is none: a test run
    under another root dir than its update's has another name and cache folder, and "no
    baseline" alone did not say where it was looked for. `--autotune-runner` is offered
    only for a device of this one's kind: it files baselines under `cpu-<runner>` or
    `cuda-<runner>` by this device's kind, so a GPU's baseline is out of a CPU's reach."""
    if baseline is not None:
        return None
    if unreadable is not None:
        return unreadable
    others = sorted(set(baseline_devices) - {device_id})
    same_kind = [d for d in others if device_kind(d) == device_kind(device_id)]
    runner = (
        ""
        if not same_kind
        else " (--autotune-runner names the one to use)"
        if same_kind == others
        else f" (--autotune-runner names the one to use of {', '.join(same_kind)})"
    )
    elsewhere = f"; baselines of this test exist for {', '.join(others)}{runner}" if others else ""
    looked = f" (no file {missing_file})" if missing_file is not None else ""
    return (
        f"no baseline for this key on {device_id}{looked}; --autotune-update records one{elsewhere}"
    )


def not_comparable(
    baseline: Baseline | None,
    device_id: str,
    checksum: str,
    candidates: Sequence[str] = (),
    bounds: Bounds | None = None,
    thread_env: Mapping[str, str] | None = None,
) -> str | None:
    """Why the baseline measured something else, None when it is comparable (or missing).
    `thread_env` is this run's thread caps (`Baseline.thread_env`), None where unknown."""
    if baseline is None:
        return None
    where = baseline.source or "the cache"
    if baseline.mismatch is not None:
        return baseline.mismatch
    if (device := _other_device(baseline, device_id, thread_env)) is not None:
        return device
    if baseline.checksum != checksum:
        change = candidate_change(baseline.candidates, candidates)
        if change is not None and change.startswith("reordered"):
            # A dict built over a set (or a list from one) takes its order from
            # PYTHONHASHSEED, drawn anew by each process: re-recording alone never helped,
            # and the test was never gated.
            change += "; a list built from a set changes order from run to run: sort it"
        return (
            f"the baseline in {where} was tuned over another candidate list"
            f" ({change or f'checksum {baseline.checksum}, now {checksum}'});"
            " --autotune-update re-records it"
        )
    if (work := baseline.other_work(bounds)) is not None:
        return (
            f"the baseline in {where} was measured for other work ({work}): the inputs"
            " changed under the same key, or the work= model did; --autotune-update"
            " re-records it"
        )
    return None


def _other_device(
    baseline: Baseline, device_id: str, thread_env: Mapping[str, str] | None
) -> str | None:
    """Why `baseline` was measured on another device than this run's, or on its CPUs under
    other thread caps; None where neither."""
    where = baseline.source or "the cache"
    if baseline.device_id != device_id:
        return (
            f"the baseline in {where} was measured on {baseline.device_id},"
            f" this run is on {device_id}"
        )
    caps = other_thread_caps(baseline.thread_env, thread_env)
    if caps is None:
        return None
    # A cap of BLAS threads (OMP_NUM_THREADS=1 in CI, unset where the baseline was
    # recorded) read as a +80% regression of an unchanged 256x256 matmul, the message
    # naming no cause: the two times are of two configurations, as two devices' are.
    return (
        f"the baseline in {where} was measured under other thread caps ({caps}), which set"
        " how many threads BLAS, OpenMP and Numba run on; run the gate under the"
        " baseline's, or --autotune-update re-records it"
    )


def other_thread_caps(
    before: Mapping[str, str] | None, now: Mapping[str, str] | None
) -> str | None:
    """How the thread caps of the baseline (`before`) and this run (`now`) differ
    ("OMP_NUM_THREADS unset there, 1 here"), None where they agree or either is unknown."""
    if before is None or now is None:
        return None
    changed = [
        f"{name} {before.get(name, 'unset')} there, {now.get(name, 'unset')} here"
        for name in sorted({*before, *now})
        if before.get(name) != now.get(name)
    ]
    return "; ".join(changed) or None


def candidate_change(before: Sequence[str], now: Sequence[str]) -> str | None:
    """What changed between two candidate lists, as a user would say it ("added 'c';
    removed 'a'", "reordered: now 'b', 'a'"); None where either list is unknown."""
    if not before or not now:
        return None
    added = [name for name in now if name not in before]
    removed = [name for name in before if name not in now]
    said = [
        f"{verb} {', '.join(map(repr, names))}"
        for verb, names in (("added", added), ("removed", removed))
        if names
    ]
    if not said:
        said = [f"reordered: now {', '.join(map(repr, now))}"]
    return "; ".join(said)


def winner_out(name: str, result: object) -> tuple[str, bool] | None:
    """What happened to the baseline's winner `name` in a run whose result for it is
    `result`, where that run did not measure it: it failed (raised, hung, or failed its
    check) or was skipped (declined the key, or its test is marked not to run there; not
    one a batch never reached). That says ("the baseline's winner fast is skipped here
    (needs 4 cores)"), and whether it was skipped; None otherwise."""
    if not isinstance(result, AutotuneError):
        return None
    if result.kind is AutotuneErrorKind.SKIP:
        if result.message.startswith(NOT_REACHED):
            return None
        return f"the baseline's winner {name} is skipped here ({result.message})", True
    return f"the baseline's winner {name} failed here ({result.message})", False


def not_judged_message(out: tuple[str, bool], judged: str) -> str:
    """Why `judged` is not judged against the baseline whose winner `winner_out` says
    what happened to: its time is of another kernel, slower because the faster one is
    broken or does not run here, and an error (or a skip) is never a regression."""
    why, skipped = out
    advice = "" if skipped else "fix it, or "
    return (
        f"{why}, and {judged} is not judged against its time;"
        f" {advice}--autotune-update{' here' if skipped else ''} records {judged}"
        " as the baseline"
    )
