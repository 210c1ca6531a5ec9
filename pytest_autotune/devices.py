"""The devices of one session: each device name's client, made once (a
`pytest_autotune_client` hook's, else a built-in: `cpu`, `cuda`, `auto`), each device's block
for the records (its fingerprint, with what other plugins add), made once, and the
machine-wide lock on timing one device.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from filelock import FileLock, Timeout

from pytest_autotune.backends.tracing import unsuspended
from pytest_autotune.gate import runner_device_id
from pytest_autotune.input_devices import held_on_host
from pytest_autotune.plugin_settings import PluginSettings, is_builtin_device, unserved_device
from pytest_autotune.tune.client import protocol_gap
from pytest_autotune.tune.client_calls import client_fingerprint, client_peaks, unwritable
from pytest_autotune.tune.config import ConfigError
from pytest_autotune.tune.files import shared_lock
from pytest_autotune.tune.log import format_duration

if TYPE_CHECKING:
    from pytest_autotune.tune.client import Client


DEVICE_WAIT_S = 1800.0
"""The longest a group waits for another process's timing of its device: a run waits out
another run's tuning, however long, but not a process that hung holding the lock (a
fresh process that never returned once held it for good). Past it the group is timed
anyway, and the summary says so."""

NOTED_WAIT_S = 10.0
"""A wait for the device lock longer than this is said in the summary."""


def _device_lock(device_id: str, uuid: object = None) -> FileLock:
    """Timing on one device is serialized across processes (pytest-xdist workers): two
    candidates timed at once on one GPU would each read the other's load as their own.
    A GPU's UUID names it where known, so workers on two GPUs of one model time at once."""
    name = device_id if not isinstance(uuid, str) else f"{device_id}-{uuid}"
    return shared_lock(f"pytest-autotune-{name}")


class Devices:
    """The clients and device blocks of one session, and its waits for a device's lock."""

    def __init__(
        self,
        settings: PluginSettings,
        notes: list[str],
        worker_gpu: str | None = None,
        client_hook: Callable[[str], Client | None] | None = None,
        fingerprint_hook: Callable[[dict[str, Any]], object] | None = None,
    ) -> None:
        self.settings = settings
        self.notes = notes
        """The session's lines for the end of the summary (`SessionOutput.notes`)."""
        self.worker_gpu = worker_gpu
        """The `CUDA_VISIBLE_DEVICES` pytest_autotune.xdist gave this worker, None where it
        gave it none: one GPU or none, or a `--tx` spec that sets the variable itself (the
        worker then sees the devices the controller or the user chose)."""
        self._client_hook = client_hook
        """`pytest_autotune_client` (`SessionHooks.client`)."""
        self._fingerprint_hook = fingerprint_hook
        """`pytest_autotune_fingerprint` (`SessionHooks.fingerprint`)."""
        self._clients: dict[str, Client] = {}
        self._devices: dict[str, dict[str, Any]] = {}
        self._auto_gpu = False
        """Whether `auto` is the built-in CUDA client (no hook's): a GPU CuPy found."""
        self._host_groups: list[str] = []
        """The groups `auto` tuned on the CPU, their inputs being host arrays alone."""
        self.waiting_for: str | None = None
        """The lock a tuning waits for now (another process's timing of its device), said
        where a test timeout stops the tuning there: its traceback shows only a sleep."""

    def client(self, device: str | None) -> Client:
        name = device or self.settings.device
        if name not in self._clients:
            self._clients[name] = self._make_client(name)
        return self._clients[name]

    def _make_client(self, name: str) -> Client:
        try:
            client = self._client_hook(name) if self._client_hook is not None else None
        except Exception as error:
            # Said as a run's device is said before its first test
            # (`plugin_engine._refuse_an_unserved_device`): a marker's `device=` failed its
            # group's first test with a traceback through the session's frames and pluggy's.
            raise ConfigError(
                f"device {name!r}: its pytest_autotune_client hook raised"
                f" {type(error).__name__}: {error}"
            ) from error
        if client is not None:
            if isinstance(client, type):
                # The class in place of its instance reads as a client, its members being
                # there, and failed in the tuning: "fingerprint() missing ... 'self'".
                raise ConfigError(
                    f"device {name!r}: a pytest_autotune_client hook returned the class"
                    f" {client.__name__}, not a client; call it: {client.__name__}()"
                )
            if not hasattr(client, "device_id"):
                # A device's name, or the factory of a client in place of one (`cpu`),
                # read as "a client with the device id None".
                factory = getattr(client, "__name__", None) if callable(client) else None
                call = f"; call it: {factory}()" if factory else ""
                raise ConfigError(
                    f"device {name!r}: a pytest_autotune_client hook returned {client!r},"
                    f" not a client{call}: return a client (an object with device_id,"
                    " launch_overhead, fingerprint(), sync(), time() and peaks()) or None"
                )
            device_id = getattr(client, "device_id", None)
            if not isinstance(device_id, str) or not device_id:
                # Said here once, not as a traceback from the cache's file names (or the
                # gate's rules) in every test that tunes on it.
                raise ConfigError(
                    f"device {name!r}: the client of a pytest_autotune_client hook has the"
                    f" device id {device_id!r}: it names the folder of its baselines, so it"
                    " must be a non-empty str"
                )
            problem = protocol_gap(client)
            if problem is not None:
                raise ConfigError(
                    f"device {name!r}: the client of a pytest_autotune_client hook"
                    f" ({type(client).__name__}) {problem}"
                )
            return client
        from pytest_autotune.backends import cpu

        if name == "cpu":
            return cpu()
        from pytest_autotune.backends import CudaUnavailableError, cuda

        if name == "auto":
            try:
                gpu = cuda(self._gpu_index(None))
            except CudaUnavailableError as error:
                self._note_cpu_fallback(error)
                return cpu()
            self._auto_gpu = True
            return gpu
        if not is_builtin_device(name):
            raise ConfigError(unserved_device(name))
        index = int(name.split(":", 1)[1]) if ":" in name else None
        return cuda(self._gpu_index(index))

    def group_device(self, name: str, group: str, inputs: tuple[Any, ...]) -> str:
        """The device a group is tuned on where its settings name `name`: `auto` on a GPU
        tunes a group whose inputs are host arrays alone (`held_on_host`: NumPy, CPU
        tensors) on the CPU. Timed by the CUDA client, such host code read as a GPU call
        and was judged by a GPU's rules, its baselines filed under the GPU. A client hook
        that serves `auto` keeps every group, as does a device named."""
        if name != "auto" or not held_on_host(inputs):
            return name
        try:
            self.client(name)
        except Exception:
            return name  # the group's tuning says why
        if not self._auto_gpu:
            return name
        if group not in self._host_groups:
            self._note_host_group(group)
        return "cpu"

    def _note_host_group(self, group: str) -> None:
        """One line for every group `auto` moved to the CPU, rewritten as they come."""
        old = self._host_line()
        self._host_groups.append(group)
        line = self._host_line()
        if old in self.notes:
            self.notes[self.notes.index(old)] = line
        else:
            self.notes.append(line)

    def _host_line(self) -> str:
        groups = self._host_groups
        named = ", ".join(groups[:3]) + (f" and {len(groups) - 3} more" if len(groups) > 3 else "")
        return (
            f"note: device auto: {len(groups)} group{'s' if len(groups) != 1 else ''} of"
            f" host arrays (NumPy, CPU tensors) tuned on the CPU, not the GPU ({named}); give"
            " device='cuda' to time host code as a GPU call"
        )

    def _note_cpu_fallback(self, error: Exception) -> None:
        """Say why `auto` tuned on the CPU, where a GPU was meant: CuPy is installed, or
        `CUDA_VISIBLE_DEVICES` is set. A bad `CUDA_VISIBLE_DEVICES` ("7" on a host of one
        GPU) otherwise moved every baseline to the CPU's folder without a word. Without
        CuPy and the variable, the CPU is what the machine has, and nothing is said."""
        without_cupy = isinstance(error.__cause__, ImportError)
        if without_cupy and "CUDA_VISIBLE_DEVICES" not in os.environ:
            return
        self.notes.append(f"warning: device auto: tuned on the CPU, as {error}")

    def note_profiler(self) -> None:
        """Say once that the times carry a profiler's cost, where one that the timed loops
        cannot put aside runs (`backends.tracing`): `python -m cProfile -m pytest`."""
        profiler = unsuspended()
        if profiler is None:
            return
        line = (
            f"warning: timed under a profiler that cannot be put aside ({profiler}): every"
            " time carries its cost, so winners and verdicts may not hold"
        )
        if line not in self.notes:
            self.notes.append(line)

    def _gpu_index(self, explicit: int | None) -> int:
        """The GPU of `cuda`/`auto`: device 0, which under pytest-xdist is the worker's own
        (pytest_autotune.xdist sets each worker's CUDA_VISIBLE_DEVICES before it starts).

        An index is refused in a worker given one GPU: there `cuda:N` would name the worker's
        N-th device, not the host's, and a group goes to whichever worker is free, so the
        group would run on another GPU than it names, or fail, from run to run."""
        if explicit is not None and self.worker_gpu is not None:
            raise ConfigError(
                f"device cuda:{explicit}: this pytest-xdist worker sees one GPU alone"
                f" (CUDA_VISIBLE_DEVICES={self.worker_gpu}: pytest-autotune gives each worker"
                " a GPU of its own under the default --autotune-device, and a group goes to"
                " whichever worker is free); name a device for the whole run"
                f" (--autotune-device=cuda:{explicit}: every worker then sees every GPU), or"
                " leave the group's device to the worker (device='cuda')"
            )
        return 0 if explicit is None else explicit

    def device_id(self, client: Client) -> str:
        """The id a group's baselines are filed and compared under: the runner class's, when
        the settings name one, else the client's device id."""
        return runner_device_id(client.device_id, self.settings.engine.runner)

    def untuned_id(self, settings: PluginSettings) -> str:
        """The id of the device a group that was not tuned is filed under: the client's
        its tuning would have used (made here where the group is the session's first)."""
        try:
            return self.device_id(self.client(settings.device))
        except Exception:
            return settings.device or self.settings.device

    def device(self, client: Client, device_id: str) -> dict[str, Any]:
        """The device block a group's record carries (id, fingerprint, peaks), its
        fingerprint made once per device: other plugins add to it
        (`pytest_autotune_fingerprint`)."""
        self.fingerprint(client, device_id)
        # The peaks as they stand now: a winner above its roof has them probed again
        # (`gate_policy`), and the record's fraction of roof is of these.
        return {**self._devices[device_id], "peaks": client_peaks(client).to_json()}

    def fingerprint(self, client: Client, device_id: str) -> None:
        """Make the device block of `device_id` once, its fingerprint with what other
        plugins add (`pytest_autotune_fingerprint`), each addition one a file can hold."""
        if device_id in self._devices:
            return
        # A client of a pytest_autotune_client hook's, said as its own, not the hook's.
        fingerprint = client_fingerprint(client)
        if self._fingerprint_hook is not None:
            returned = self._fingerprint_hook(fingerprint)
            # pluggy's list of the implementations' non-None results; one that edits the
            # dict and returns it (`return fingerprint`, as such hooks are often written)
            # did what it is asked, and failed every test.
            others = [
                r
                for r in (returned if isinstance(returned, list) else [returned])
                if r is not None and r is not fingerprint
            ]
            if others:
                shown = others[0]
                raise ConfigError(
                    f"pytest_autotune_fingerprint returned {shown!r}: it adds to the"
                    " fingerprint it is given, in place, and returns None; what it returns"
                    " is not read"
                )
            problem = unwritable(fingerprint)
            if problem is not None:
                raise ConfigError(f"pytest_autotune_fingerprint set {problem}")
        device = {"id": device_id, "fingerprint": fingerprint}
        if device_id != client.device_id:
            device["measured_on"] = client.device_id
        self._devices[device_id] = device

    @contextmanager
    def held(self, device_id: str, uuid: object) -> Iterator[None]:
        """The machine-wide lock on timing this device, held for the block; waited for at
        most `DEVICE_WAIT_S`, a longer wait said in the summary."""
        lock = _device_lock(device_id, uuid)
        started = time.monotonic()
        self.waiting_for = f"another process's timing of {device_id} ({lock.lock_file})"
        try:
            lock.acquire(timeout=DEVICE_WAIT_S)
            self.waiting_for = None
        except KeyboardInterrupt:
            # "stopped early (interrupted): no group was tuned" did not say what the run had
            # hung on before the user pressed Ctrl-C.
            self.notes.append(f"interrupted while waiting for {self.waiting_for}")
            raise
        except Timeout:
            self.waiting_for = None
            self.notes.append(
                f"warning: timed {device_id} without its lock ({lock.lock_file}): another"
                f" process held it for {DEVICE_WAIT_S / 60:.0f} minutes, and both timings"
                " may have overlapped"
            )
            yield
            return
        waited = time.monotonic() - started
        if waited > NOTED_WAIT_S:
            self.notes.append(
                f"waited {format_duration(waited)} for another process's timing of"
                f" {device_id} ({lock.lock_file})"
            )
        try:
            yield
        finally:
            lock.release()


__all__ = ["DEVICE_WAIT_S", "NOTED_WAIT_S", "Devices"]
