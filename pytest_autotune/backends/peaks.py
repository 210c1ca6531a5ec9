"""A device's peak rates measured by probes on the device, and their per-device cache.

The value itself (`Peaks`, its levels and JSON form) lives in `pytest_autotune.tune.peaks`,
below the engine that reads it; it is re-exported here for the code that imports it from
the clients.

Roofline bounds are only as good as the peaks they divide by, so peaks are measured, never
taken from a data sheet: a data sheet knows neither the clocks this machine runs at nor the
thread count this process may use. Probing costs seconds, so the result is kept for the
process, and in `<cache_dir>/<device_id>/peaks.json` when a cache folder is given.
"""

from __future__ import annotations

import os
import threading
import warnings
from collections.abc import Callable
from pathlib import Path

from pytest_autotune.tune.cache_names import PEAKS_FILE
from pytest_autotune.tune.errors import CacheFileWarning, caller_level
from pytest_autotune.tune.files import dumps, json_kind, read_json, write_atomically
from pytest_autotune.tune.peaks import ROOF_PATTERNS, MemoryLevel, MemoryRoof, Peaks

__all__ = [
    "PEAKS_FILE",
    "ROOF_PATTERNS",
    "SCHEMA_VERSION",
    "MemoryLevel",
    "MemoryRoof",
    "Peaks",
    "load_or_probe",
    "peaks_path",
    "probe_again",
]

SCHEMA_VERSION = 1


_lock = threading.Lock()
"""Held through a probe, for seconds."""

_measured: dict[str, Peaks] = {}
"""Peaks probed in this process, by device: a probe loads the device for seconds, so it
runs once per device per process, whatever asks for it."""
_probed_again: set[str] = set()
"""The devices `probe_again` has probed a second time in this process."""
_resolved: dict[Path, Peaks] = {}
"""What each peaks file resolved to (its peaks, or the probe that stood in for it), so a
bad file is warned about once, not on every tuning."""


def _release_in_forked_child() -> None:
    """A process forked while another thread probed has no thread to release the lock:
    its own first probe would wait for ever (a pool forked by a program whose other thread
    tunes a set with roofline bounds)."""
    global _lock  # noqa: PLW0603 - the module's lock, made anew in the child
    _lock = threading.Lock()


if hasattr(os, "register_at_fork"):  # POSIX: multiprocessing's fork, os.fork
    os.register_at_fork(after_in_child=_release_in_forked_child)


def peaks_path(cache_dir: str | os.PathLike[str], device_id: str) -> Path:
    """Beside the device's tuner caches, so the folder of one hardware class holds it all."""
    return Path(cache_dir) / device_id / PEAKS_FILE


def load_or_probe(
    device_id: str, probe: Callable[[], Peaks], cache_dir: str | os.PathLike[str] | None = None
) -> Peaks:
    """The peaks of `device_id`: from its cache file, else from `probe` (run once per device
    per process).

    Without `cache_dir`, the peaks are this process's own measurement: what the CI gate
    needs to judge this run's machine state. With it, a readable file wins, so a program
    does not pay for probes at every start; a missing file is written after probing. A
    file that cannot be read is warned about (`CacheFileWarning`, naming it) and left as
    it is, since someone may have committed it; the fresh probe serves this process.
    """
    with _lock:
        if cache_dir is None:
            return _probe_once(device_id, probe)
        path = peaks_path(cache_dir, device_id).absolute()
        if path not in _resolved:
            _resolved[path] = _load_or_probe_file(path, device_id, probe)
        return _resolved[path]


def probe_again(device_id: str, probe: Callable[[], Peaks]) -> Peaks:
    """This process's peaks of `device_id` probed once more, each rate the larger of the two
    reads (`Peaks.at_least`), kept for the rest of the process; probed again only once per
    device per process.

    For a probe that read low: on CPUs shared with other processes, the one probe of a
    process may run while a neighbour holds a core, and a kernel timed later in a quiet
    moment then reads above its roof (a 256-matmul at 242% of the fp32 roof beside five
    busy test runs on the 2-core VM). A peaks file is a project's own and is not probed
    again."""
    with _lock:
        if device_id in _probed_again:  # once: a probe costs seconds, a group's work= may
            return _measured[device_id]  # overcount, and then every group would ask again
        measured = probe()
        known = _measured.get(device_id)
        _measured[device_id] = measured if known is None else known.at_least(measured)
        _probed_again.add(device_id)
        return _measured[device_id]


def _probe_once(device_id: str, probe: Callable[[], Peaks]) -> Peaks:
    if device_id not in _measured:
        _measured[device_id] = probe()
    return _measured[device_id]


def _load_or_probe_file(path: Path, device_id: str, probe: Callable[[], Peaks]) -> Peaks:
    try:
        peaks = _read(path, device_id)
        if not _older_probe(device_id, peaks):
            return peaks
    except FileNotFoundError:
        peaks = _probe_once(device_id, probe)
        _write(path, device_id, peaks)
        return peaks
    except (OSError, ValueError, TypeError) as error:
        reason = error.strerror if isinstance(error, OSError) and error.strerror else str(error)
        warnings.warn(
            CacheFileWarning(
                f"{path}: cannot be read: {reason}; the peaks are probed again for this"
                " process and the file is left as it is (each process pays the probe while"
                " it is there): repair it, or remove it to have the next probe written there"
            ),
            stacklevel=caller_level(),
        )
        return _probe_once(device_id, probe)
    # Outside the `try`: a probe that raises is not the file's fault ("cannot be read").
    warnings.warn(
        CacheFileWarning(
            f"{path}: written by an older pytest-autotune, whose probes measured no"
            " update-in-place ('add') rate nor a CPU's cache levels, so its roofs bounded"
            " every size by main memory: probed again and written over"
        ),
        stacklevel=caller_level(),
    )
    peaks = _probe_once(device_id, probe)
    _write(path, device_id, peaks)
    return peaks


def _older_probe(device_id: str, peaks: Peaks) -> bool:
    """Whether the built-in CPU or CUDA client's `peaks` (by their device id's kind) came
    from the probes of a version before the 'add' rate and the cache levels, which kept the
    same `SCHEMA_VERSION`: a file is probed only where it is missing, so such a file's
    roofs stayed for good. Another client's peaks may measure what they will."""
    return device_id.startswith(("cpu-", "cuda-")) and "add" not in peaks.memory


def _read(path: Path, device_id: str) -> Peaks:
    data = read_json(path)
    if not isinstance(data, dict):
        raise TypeError(f"holds {json_kind(data)}, expected a JSON object")
    if "schema_version" not in data or "peaks" not in data:
        # Another program's JSON read "schema_version is None".
        raise ValueError("not a peaks file: it holds no schema_version and peaks")
    if data.get("schema_version") != SCHEMA_VERSION:
        raise ValueError(
            f"schema_version is {data.get('schema_version')!r}, this version reads {SCHEMA_VERSION}"
        )
    if data.get("device_id") != device_id:
        raise ValueError(f"holds the peaks of {data.get('device_id')!r}, not of {device_id!r}")
    return Peaks.from_json(data.get("peaks"))


def _write(path: Path, device_id: str, peaks: Peaks) -> None:
    """Write atomically (a temporary file renamed over the target), so a process reading
    the file meanwhile sees all of it or none; a unique temporary name, because two
    processes probing the same device may write at once and neither holds a lock."""
    document = {"schema_version": SCHEMA_VERSION, "device_id": device_id, "peaks": peaks.to_json()}
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        write_atomically(path, dumps(document))
    except OSError as error:
        warnings.warn(
            CacheFileWarning(
                f"{path}: cannot be written: {error.strerror or error}; the probed peaks"
                " serve this process only"
            ),
            stacklevel=caller_level(),
        )
