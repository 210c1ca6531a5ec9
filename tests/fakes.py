"""A fake clock and client: unit tests about tuning logic are exact and never flaky."""

from __future__ import annotations

import functools
import os
import tempfile
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from filelock import FileLock

from pytest_autotune.backends.peaks import Peaks


class FakeClock:
    """Time that passes only when a fake candidate says so."""

    def __init__(self) -> None:
        self.now_ns = 0

    def __call__(self) -> int:
        return self.now_ns

    def advance(self, seconds: float) -> None:
        self.now_ns += round(seconds * 1e9)


class FakeClient:
    """A Client whose `time` reads the fake clock around the call."""

    device_id = "fake-device"
    launch_overhead = 0.0

    def __init__(self, clock: FakeClock | None = None, peaks: Peaks | None = None) -> None:
        self.clock = clock or FakeClock()
        self._peaks = peaks or Peaks(
            memory={"copy": 1e9, "read": 1e9, "write": 1e9}, compute={"fp32": 1e9}, threads=1
        )
        self.timed: list[str] = []

    def fingerprint(self) -> dict[str, Any]:
        return {"fake": True}

    def sync(self) -> None:
        pass

    def time(self, fn: Callable[..., object], inputs: tuple[Any, ...]) -> float:
        start = self.clock()
        fn(*inputs)
        self.timed.append(getattr(fn, "__name__", "?"))
        return (self.clock() - start) / 1e9

    def peaks(self) -> Peaks:
        return self._peaks


def candidate(
    clock: FakeClock, times: float | Sequence[float], name: str = "fake", result: Any = None
) -> Callable[..., Any]:
    """A candidate that takes `times` seconds per call (a sequence: one per call, the last
    repeating) and returns `result`; its `calls` attribute counts the calls."""
    seq = [times] if isinstance(times, (int, float)) else list(times)

    def fn(*inputs: Any) -> Any:
        clock.advance(seq[min(fn.calls, len(seq) - 1)])  # type: ignore[attr-defined]
        fn.calls += 1  # type: ignore[attr-defined]
        return result

    fn.calls = 0  # type: ignore[attr-defined]
    fn.__name__ = name
    return fn


def failing(name: str = "boom", exc: Exception | None = None) -> Callable[..., Any]:
    def fn(*inputs: Any) -> Any:
        raise exc or RuntimeError(f"{name} exploded")

    fn.__name__ = name
    return fn


@functools.cache
def _released_lock_file_remains() -> bool:
    with tempfile.TemporaryDirectory() as folder:
        lock = os.path.join(folder, "probe.lock")
        with FileLock(lock):
            pass
        return os.path.exists(lock)


def released_lock(name: str) -> list[str]:
    """`[name]`, a released lock's file, where filelock leaves it (4.x); [] where it removes
    the file on release (3.x, which pyproject.toml allows): what a folder lists after a
    write is otherwise the same."""
    return [name] if _released_lock_file_remains() else []


def texts_read_while_written(path: Path, writes: Sequence[Callable[[], object]]) -> set[str]:
    """Every text a reader found at `path` while another thread ran `writes`, one
    after another: what a browser, an artifact upload or a second run meets when it reads
    a report that a run is writing."""
    done = threading.Event()

    def write_all() -> None:
        try:
            for write in writes:
                write()
        finally:
            done.set()

    writer = threading.Thread(target=write_all)
    writer.start()
    seen = set()
    while not done.is_set():
        seen.add(path.read_text(encoding="utf-8"))
    writer.join()
    return seen


def text_mode_opens(monkeypatch: Any) -> list[str]:
    """Give `os` Windows' `O_BINARY` (a bit Linux does not use, taken off again before the
    real `os.open`) and list the files opened without it: on Windows, where a descriptor is
    in text mode unless opened with it, each LF written there became CRLF."""
    binary = 1 << 30
    monkeypatch.setattr(os, "O_BINARY", binary, raising=False)
    real_open = os.open
    text: list[str] = []

    def open_(path: Any, flags: int, mode: int = 0o777, *, dir_fd: Any = None) -> int:
        if not flags & binary:
            text.append(os.fspath(path))
        return real_open(path, flags & ~binary, mode, dir_fd=dir_fd)

    monkeypatch.setattr(os, "open", open_)
    return text


class Script:
    """A scheduler's sampler: candidate `i` takes its listed seconds in order (the first
    call being its warm-up), the last value repeating; an exception listed is raised
    instead. `calls` counts each candidate's calls."""

    def __init__(self, *times: Any) -> None:
        self.times = [list(t) if isinstance(t, (list, tuple)) else [t] for t in times]
        self.calls = [0] * len(times)

    def __call__(self, index: int) -> Any:
        seq = self.times[index]
        value = seq[min(self.calls[index], len(seq) - 1)]
        self.calls[index] += 1
        if isinstance(value, Exception):
            raise value
        return value
