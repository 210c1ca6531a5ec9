"""Under pytest-xdist, the other workers' tests pause while a device is measured.

pytest-benchmark turns itself off under xdist: workers time their code while the others
run theirs, on the same CPUs, caches and memory bus. The device lock
(`devices._device_lock`) keeps two workers from timing one device at once, but not a
worker's ordinary tests from running beside another's measurement: on a 2-core runner
with `-n 2`, the suite's NumPy tests then share the machine with every timed sample.

So each ordinary test of a worker holds a shared lock on the machine's CPUs and on its
worker's GPU (the `CUDA_VISIBLE_DEVICES` the plugin gave it, or every GPU the worker sees),
and a worker that tunes a group holds its device's lock exclusively for the tuning and the
gate's measurement: the other workers finish the test they are in, wait at the start of
the next one, and go on once the group is measured. A GPU's lock is its own, so workers on
two GPUs of one host keep running beside each other's measurements; a CPU measurement
pauses every worker. Tests that tune (the marker's, and those using the `autotune`
fixture) take no shared lock: they wait for the device lock instead.

The locks are filelock's `ReadWriteLock` (SQLite transactions in a file under the run's
base temporary folder): a waiting measurement keeps new tests from starting (SQLite's
pending lock), so a worker running many short tests cannot starve it (two workers looping
over 1 ms tests held one back for 2.5 ms). Both waits end after `WAIT_S` at the latest,
the run going on unpaused, so a test that runs for an hour, or a lock that cannot be made,
delays or disturbs a measurement and never hangs a run. The shared holds cost a test about
0.6 ms (two SQLite transactions, on the 2-core VM), only under `--autotune` with workers.

The run folder also holds the file of the tests a worker crashed in (`note_crashed`),
which the controller writes and the workers read before tuning a group, and each worker's
hand-back file (`hand_back`), the controller's copy of what a worker that crashed had
tuned.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from filelock import Timeout

_LOCK_ERRORS: tuple[type[Exception], ...] = (OSError, RuntimeError, ValueError, ImportError)
"""What making or taking a lock raises where it cannot be had: the run goes on unpaused.
sqlite3's own errors are no OSError: a database path over SQLite's limit (a base temporary
folder of some 480 characters) raised "unable to open database file" out of every test of
`-n 2 --autotune`."""
try:
    import sqlite3

    _LOCK_ERRORS += (sqlite3.Error,)
except ImportError:  # a build without it: the lock's own import fails, an ImportError
    pass

WAIT_S = 300.0
"""The longest a measurement waits for the other workers' tests, or a test for a
measurement, before it goes on regardless."""

CPU = "cpu"
"""The key of the machine's CPUs, which every worker's tests share."""


def gpu_key(environ: Mapping[str, str] = os.environ) -> str:
    """The key of this worker's GPU: the `CUDA_VISIBLE_DEVICES` it was started with (the
    plugin gives each worker its own on a host of several GPUs), or every GPU it sees."""
    visible = environ.get("CUDA_VISIBLE_DEVICES")
    return f"gpu-{visible.strip() or 'none'}" if visible is not None else "gpu-all"


@dataclass
class Quiet:
    """The locks of one pytest-xdist run, in `folder`, as one worker holds them."""

    folder: Path
    gpu: str = field(default_factory=gpu_key)
    timeout: float = WAIT_S
    _locks: dict[str, Any] = field(default_factory=dict, init=False, repr=False)
    _testing: bool = field(default=False, init=False, repr=False)

    def lock(self, key: str) -> Any:
        """The read-write lock of `key`, made on first use."""
        if key not in self._locks:
            # Imported here: it needs Python's sqlite3, which a few builds lack; without it
            # `_hold` gives up and the run goes on unpaused.
            from filelock import ReadWriteLock

            self.folder.mkdir(parents=True, exist_ok=True)
            # One instance per key and process (not the path's singleton): its read and
            # write holds are this worker's alone.
            self._locks[key] = ReadWriteLock(
                self.folder / f"{key}.db", timeout=self.timeout, is_singleton=False
            )
        return self._locks[key]

    @contextlib.contextmanager
    def testing(self) -> Iterator[None]:
        """Around an ordinary test: shared holds on the CPUs and this worker's GPU."""
        with contextlib.ExitStack() as stack:
            for key in (CPU, self.gpu):
                self._hold(stack, key, "read")
            self._testing = True
            try:
                yield
            finally:
                self._testing = False

    @contextlib.contextmanager
    def measuring(self, gpu: bool) -> Iterator[str | None]:
        """Around a group's tuning and measurement on a GPU (`gpu`) or the CPU: an exclusive
        hold on that device's key. Yields None where the other workers are paused, else why
        they are not: the group is tuned inside an ordinary test of this worker (one that
        tunes from a fixture it does not mark), whose own shared hold would wait for itself;
        the others' tests outlasted `timeout`; or the lock could not be made."""
        if self._testing:
            yield (
                "tuned from inside an ordinary test of this worker: pausing the others would"
                " wait on that test's own hold"
            )
            return
        with contextlib.ExitStack() as stack:
            yield self._hold(stack, self.gpu if gpu else CPU, "write")

    def _hold(self, stack: contextlib.ExitStack, key: str, mode: str) -> str | None:
        """Enter `key`'s hold in `mode` on `stack`; None once held, else why nothing is held:
        the lock could not be taken within the timeout, or could not be made."""
        try:
            lock = self.lock(key)
            stack.enter_context(lock.read_lock() if mode == "read" else lock.write_lock())
        except Timeout:
            return f"they did not pause within {self.timeout:g} s"
        except _LOCK_ERRORS as error:
            return f"the lock in {self.folder} could not be made: {error}"
        return None


CRASHED = "crashed-tests"
"""The file in the run folder that names, a line each, the tests a worker crashed in."""

_NODE_IDS = "surrogatepass"
"""How the run folder's files hold node ids: a test file named beyond ASCII under the C
locale without UTF-8 mode (`test_caf\\udcc3\\udca9.py`) raised UnicodeEncodeError out of
the worker's tuning and the controller's scheduler; read back, each id is as it was."""


def note_crashed(folder: Path, nodeid: str) -> None:
    """Name `nodeid` as a test a worker crashed in (the controller's scheduler, before it
    hands the rest of that worker's tests to others)."""
    with contextlib.suppress(OSError):  # without it, the group is tuned again, as before
        folder.mkdir(parents=True, exist_ok=True)
        with (folder / CRASHED).open("a", encoding="utf-8", errors=_NODE_IDS) as file:
            file.write(nodeid + "\n")


@contextlib.contextmanager
def tuning_noted(folder: Path | None, group: str, nodeid: str) -> Iterator[None]:
    """A file in the run folder that names the test (`nodeid`) tuning `group` while this
    worker tunes it, removed once the tuning returns or raises: one left behind by a
    worker that crashed says the crash came while that test tuned the group, in any of its
    candidates (`tuning_test`). Without a run folder, nothing is noted."""
    path = None
    if folder is not None:
        path = _tuning_path(folder, group)
        with contextlib.suppress(OSError):
            folder.mkdir(parents=True, exist_ok=True)
            path.write_text(nodeid, encoding="utf-8", errors=_NODE_IDS)
    try:
        yield
    finally:
        if path is not None:
            with contextlib.suppress(OSError):
                path.unlink()


def tuning_test(folder: Path, group: str) -> str | None:
    """The test in which a worker's tuning of `group` ended without returning (it crashed
    there), None where none did."""
    try:
        return _tuning_path(folder, group).read_text(encoding="utf-8", errors=_NODE_IDS) or None
    except OSError:
        return None


def _tuning_path(folder: Path, group: str) -> Path:
    digest = hashlib.sha256(group.encode("utf-8", "surrogatepass")).hexdigest()[:20]
    return folder / f"tuning-{digest}"


def crashed_tests(folder: Path) -> frozenset[str]:
    """The tests a worker of this run crashed in so far."""
    try:
        text = (folder / CRASHED).read_text(encoding="utf-8", errors=_NODE_IDS)
        return frozenset(text.splitlines())
    except OSError:
        return frozenset()


def hand_back_path(folder: Path, worker: str) -> Path:
    """The file in the run folder where worker `worker` (`gw0`) notes each thing it will
    hand back at the end of its session, as it goes (`hand_back`)."""
    return folder / f"hand-back-{worker}.jsonl"


def hand_back(path: Path, entry: Mapping[str, Any]) -> None:
    """Append `entry` (a group's record, a test failure) to a worker's hand-back file, a
    JSON object a line. A worker hands its output back at the end of its session, and one
    that crashed (a candidate that calls os._exit) took every group it had tuned with it:
    the controller reads them from here instead (`handed_back`)."""
    with contextlib.suppress(OSError):  # without it, a crash loses them, as before
        path.parent.mkdir(parents=True, exist_ok=True)
        with path.open("a", encoding="utf-8") as file:
            file.write(json.dumps(entry) + "\n")


def handed_back(path: Path) -> list[dict[str, Any]]:
    """The entries of a worker's hand-back file, but a last line its crash cut short."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except OSError:
        return []
    entries = []
    for line in lines:
        try:
            entry = json.loads(line)
        except ValueError:
            continue
        if isinstance(entry, dict):
            entries.append(entry)
    return entries


def controller_run_folder(config: Any) -> Path | None:
    """`run_folder` as the controller finds it: its own base temporary folder, whose
    folders pytest-xdist makes its workers' (`--basetemp=<it>/popen-gw0`)."""
    factory = getattr(config, "_tmp_path_factory", None)
    if factory is None:
        return None
    with contextlib.suppress(OSError):
        return Path(factory.getbasetemp()) / "autotune-quiet"
    return None


def run_folder(config: Any) -> Path | None:
    """Where a pytest-xdist worker's run keeps its locks: the controller's base temporary
    folder (each worker's `--basetemp` is a folder of it, as pytest-xdist sets it), which
    pytest cleans with its other runs; None outside a worker, or where the worker has no
    base temporary folder of its controller's."""
    worker_input = getattr(config, "workerinput", None)
    basetemp = getattr(config.option, "basetemp", None)
    if worker_input is None or not basetemp:
        return None
    return Path(basetemp).parent / "autotune-quiet"


__all__ = [
    "CPU",
    "CRASHED",
    "WAIT_S",
    "Quiet",
    "controller_run_folder",
    "crashed_tests",
    "gpu_key",
    "hand_back",
    "hand_back_path",
    "handed_back",
    "note_crashed",
    "run_folder",
    "tuning_noted",
    "tuning_test",
]
