"""pytest's own fixtures that hold a test's state (`monkeypatch`, `caplog`, `recwarn`,
`capsys`, ...) in a candidate's test body: given to each call as pytest made them, never
copied with the inputs.

The inputs are copied for each call, and an object holding a list is copied with it: the
body's `monkeypatch` was a copy whose patches the test's teardown never undid (a variable
set in the body stayed set for the rest of the session), `caplog.set_level` left the
logger's level changed, and `recwarn` recorded nothing.

And each call has them as the single call of a plain test does (`EachCall`): a patch is
undone, and the log records and warnings cleared, before the next call. The body is
called for each candidate (the reference in every other candidate's test) and thousands
of times when tuned: the next candidate's body saw the last one's patch, and under
--autotune `caplog.records` held every timed call's records.
"""

from __future__ import annotations

import contextlib
import io
import itertools
import logging
import os
import shutil
import types
import warnings
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from pytest_autotune.tune.clone import is_kept, is_mocker


def fresh_patcher(value: Any, config: pytest.Config | None) -> tuple[Any, Callable[[], object]]:
    """A patcher of one call's own in place of `value`, a `monkeypatch` or a `mocker`
    (`is_mocker`), and what undoes its patches when the call ends. The test's own kept
    each call's patches for the next call and the next candidate: under --autotune a
    body's `mocker.spy(mod, "f")` spied on the last call's spy, and its second call failed
    "Cannot spec a Mock object", as `mocker.patch` stacked a patch per timed call.
    pytest-mock makes its fixture as `MockerFixture(pytestconfig)` and undoes it with
    `stopall()`; this does the same. Its `resetall()` also resets the test's mocks: a body
    calls it to start each call from fresh counts on a mock its fixture patched, which
    the call's own `mocker` does not hold."""
    if isinstance(value, pytest.MonkeyPatch):
        patch = pytest.MonkeyPatch()
        return patch, patch.undo
    mocker = type(value)(config)
    own_resetall = mocker.resetall

    def resetall(**kwargs: Any) -> None:
        value.resetall(**kwargs)
        own_resetall(**kwargs)

    mocker.resetall = resetall
    return mocker, mocker.stopall


def kept_fixtures(arguments: Mapping[str, Any]) -> dict[str, Any]:
    """The arguments that are pytest's stateful fixtures (`is_kept`), by name: `monkeypatch`
    itself, or a fixture of the user's that returns it."""
    return {name: value for name, value in arguments.items() if is_kept(value)}


@dataclass(frozen=True)
class SetUpFolder:
    """The test's `tmp_path` as its fixtures left it: the names in each of its folders.

    Every call of the body had the one folder of the group's first test (and a plain run
    the running test's for the reference too), so a body that makes `tmp_path / "out"` or
    opens a file with mode "x" passed a plain run and failed its second call under
    --autotune. `restore` takes away what earlier calls added, so each call starts from
    the folder as set up; the fixtures' own files stay for the body to read. A file the
    body changed in place stays changed, as an in-place candidate's input would."""

    entries: Mapping[str, frozenset[str]]

    @classmethod
    def of(cls, root: Path) -> SetUpFolder:
        entries = {
            folder: frozenset(dirnames + filenames) for folder, dirnames, filenames in os.walk(root)
        }
        return cls(entries)

    def restore(self) -> None:
        """Remove what is new in the folders of the set-up tree. Inside the timed call: a
        look into a folder of a few entries costs a few microseconds; what a call wrote is
        removed by the next, whose time counts it, as it counts the writing."""
        for folder, names in self.entries.items():
            try:
                with os.scandir(folder) as found:
                    added = [entry for entry in found if entry.name not in names]
            except FileNotFoundError:  # the body removed a folder of its fixtures
                continue
            for entry in added:
                if entry.is_dir(follow_symlinks=False):
                    shutil.rmtree(entry.path)
                else:
                    os.unlink(entry.path)


@dataclass(frozen=True)
class EachCall:
    """The test function, each call of it with a `monkeypatch` and a `mocker` of its own
    (`fresh_patches`: undone when the call ends; what fixtures patched before the test
    stays) and `caplog`
    and `recwarn` cleared: `patches` and `cleared` name those arguments. Where it takes `recwarn`
    (`warned`), each call also has warning filters of its own: `recwarn` records a
    warning once where it is raised (the "default" action), and from the second call on
    the body's warning went unrecorded. Where the body is given a path in its test's
    `tmp_path` (`folder`), each call starts from that folder as set up. It pickles where
    the test function does."""

    test: Callable[..., Any]
    patches: Mapping[str, Any]
    """The arguments that are patchers (`monkeypatch`, `mocker`), by name, and the test's."""
    cleared: tuple[str, ...]
    warned: bool
    config: pytest.Config | None
    """The test's, which a `mocker` of each call's own is made from (`fresh_patcher`); None
    where the test takes no `mocker`."""
    folder: SetUpFolder | None = None

    def fresh_patches(self, arguments: dict[str, Any]) -> list[Callable[[], object]]:
        """A patcher of this call's own in `arguments` for each of `patches`, and what
        undoes each, for the caller to call when the call ends. Put in the caller's dict,
        not in the copy `__call__` gets: the body's `request.getfixturevalue("monkeypatch")`
        reads that dict (`own_request.BodyRequest`), and gave the test's own, whose patches
        leaked into the next call. A plain MonkeyPatch and try/finally cost about 2 us a
        call on the 2-core VM, `monkeypatch.context()` in an ExitStack 4.7 us."""
        undo: list[Callable[[], object]] = []
        for name, value in self.patches.items():
            arguments[name], undone = fresh_patcher(value, self.config)
            undo.append(undone)
        return undo

    def __call__(self, /, **arguments: Any) -> Any:
        # Its own instance positional only: a method's body takes `self` among `arguments`,
        # and each of its calls raised "got multiple values for argument 'self'".
        if self.folder is not None:
            self.folder.restore()
        for name in self.cleared:
            arguments[name].clear()
        # The call's own `monkeypatch` is in `arguments` already (`fresh_patches`, by
        # `candidate_run.CandidateRun`, the one caller), and undone by it.
        if self.warned:
            # Entered, it makes Python forget which warnings it has shown.
            with warnings.catch_warnings():
                return self.test(**arguments)
        return self.test(**arguments)


def folder_given(arguments: Mapping[str, Any], tmp_path: object) -> Path | None:
    """The test's `tmp_path` where the body is given a path in it (`tmp_path` or `tmpdir`
    itself, or a fixture's path under it, a string's too, or one a fixture's dict, list or
    object holds: `_paths_held`), for each call to start from it as set up
    (`SetUpFolder`); else None. Looking into the folder costs each call some microseconds
    (5 to 16 on the 2-core VM), which a body that writes files pays beside the writing,
    but a test whose fixtures used `tmp_path` only to make its inputs must not."""
    if not isinstance(tmp_path, Path):
        return None
    root = os.fspath(tmp_path)
    for value in _paths_held(arguments.values()):
        text = os.fspath(value)
        if isinstance(text, str) and text.startswith(root):
            path = Path(text)
            if path == tmp_path or tmp_path in path.parents:
                return tmp_path
    return None


_HELD_DEPTH = 3
"""How deep `_paths_held` looks: a fixture's helper holding a dict of paths."""

_HELD_LENGTH = 64
"""How many values of each container or object `_paths_held` looks at: a fixture's data
(`list(array)` of a million NumPy floats took 1.3 s a test, 200 000 small objects 0.5 s)
holds no path worth looking for past its first items."""

_NUMBERS = frozenset({int, float, complex, bool, bytes, type(None)})


def _paths_held(values: Iterable[Any], depth: int = 0) -> Iterator[str | os.PathLike[str]]:
    """The paths and strings among `values`, and in the dicts, lists, tuples and objects'
    attributes they hold, `_HELD_DEPTH` deep, the first `_HELD_LENGTH` of each. Only a path
    given as the argument itself was seen: a fixture's `{"out": tmp_path / "out.npy"}`, or
    its helper holding that path, left every call the folder the last call wrote into, and
    under --autotune the body's `open(out, "x")` failed from its second call on, which a
    plain run passed. The objects of pytest and its plugins (`request`, `monkeypatch`, a
    `mocker`) are passed over: they hold the test's whole state, its `tmp_path` among it,
    and no path the body writes into."""
    for value in values:
        if type(value) in _NUMBERS:  # a long list of them costs a look each, no more
            continue
        if isinstance(value, (str, os.PathLike)):
            yield value
        elif depth >= _HELD_DEPTH or isinstance(value, (type, types.ModuleType)):
            continue
        elif type(value).__module__.startswith(("_pytest", "pytest")):
            continue  # pytest's own, or a plugin's
        elif isinstance(value, Mapping):
            yield from _paths_held(_first(value.values()), depth + 1)
        elif isinstance(value, (list, tuple)):
            yield from _paths_held(_first(value), depth + 1)
        elif isinstance(getattr(value, "__dict__", None), dict):
            yield from _paths_held(_first(vars(value).values()), depth + 1)


def _first(values: Iterable[Any]) -> Iterator[Any]:
    """The first `_HELD_LENGTH` of `values`."""
    return itertools.islice(values, _HELD_LENGTH)


def each_call(
    test: Callable[..., Any],
    kept: Mapping[str, Any],
    config: pytest.Config,
    tmp_path: Path | None = None,
) -> Callable[..., Any]:
    """`test` as `EachCall` where it takes a fixture each call needs fresh, or a folder
    that each call starts from as set up (`tmp_path`, from `folder_given`), else itself
    (most tests: their calls pay nothing). `config`: the test's."""
    patches = {n: v for n, v in kept.items() if isinstance(v, pytest.MonkeyPatch) or is_mocker(v)}
    records = (pytest.LogCaptureFixture, pytest.WarningsRecorder)
    cleared = tuple(n for n, v in kept.items() if isinstance(v, records))
    warned = any(isinstance(v, pytest.WarningsRecorder) for v in kept.values())
    folder = SetUpFolder.of(tmp_path) if tmp_path is not None else None
    if patches or cleared or folder is not None:
        # The config only where a `mocker` is made from it: it does not pickle, and a body
        # given `tmp_path` alone pickles to be measured again in a fresh process.
        needs = any(is_mocker(v) for v in patches.values())
        return EachCall(test, patches, cleared, warned, config if needs else None, folder)
    return test


class _Discarded(io.TextIOBase):
    """A text stream that keeps nothing: entered around every sample, it replaces an
    `open(os.devnull)` per entry, which cost most of the scope's 24 us a sample."""

    def writable(self) -> bool:
        return True

    def write(self, text: str) -> int:
        return len(text)


_DISCARDED = _Discarded()


def _dropped(record: logging.LogRecord) -> bool:
    return False


@contextlib.contextmanager
def timed_calls_quiet(kept: Mapping[str, Any]) -> Iterator[None]:
    """Around a candidate's timed calls (outside the timer): what they print
    (`sys.stdout`, `sys.stderr`) discarded, and what they log kept from the handlers of
    the root logger, pytest's own among them. Each timed call printed and logged into the
    running test's capture: thousands of lines on the terminal with `-s`, and in the
    test's failure report, where a plain run shows each candidate's once (its check, which
    still prints and logs). The record is still made, in the timed call; only the
    handlers pass it over. Not where the body reads its own output (`capsys`, `capfd`),
    which it would find empty; a body that reads its records (`caplog`) has them reach
    `caplog`'s own handler alone: let through to every handler, they were printed by live
    logging and filled the test's report with thousands of lines. What a C extension or a
    subprocess writes to the file descriptors is not discarded."""
    reads_output = any(isinstance(v, pytest.CaptureFixture) for v in kept.values())
    read = [v.handler for v in kept.values() if isinstance(v, pytest.LogCaptureFixture)]
    with contextlib.ExitStack() as stack:
        if not reads_output:
            stack.enter_context(contextlib.redirect_stdout(_DISCARDED))
            stack.enter_context(contextlib.redirect_stderr(_DISCARDED))
        for handler in logging.getLogger().handlers:
            if handler not in read:
                handler.addFilter(_dropped)
                stack.callback(handler.removeFilter, _dropped)
        yield


__all__ = [
    "EachCall",
    "SetUpFolder",
    "each_call",
    "folder_given",
    "fresh_patcher",
    "is_kept",
    "is_mocker",
    "kept_fixtures",
    "timed_calls_quiet",
]
