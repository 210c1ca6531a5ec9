"""Where a tuner's cache file lives: a folder per device and a file per tuner, both named
so that two names never share a file (`cache_path`), and the names 0.1.0 gave them, which
are still read (`legacy_cache_file_parts`, `legacy_tuner_files`); the cache files under a
folder (`cache_files`)."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

_UNSAFE = re.compile(r"[^A-Za-z0-9._-]")
_SEPARATORS = re.compile(r"[/:\[\]]")
_PLAIN = re.compile(r"[a-z0-9_][a-z0-9._-]*")
_DIGEST = 10
"""Hex digits of the name's hash a stem ends with: two names must share a stem and these
40 bits to share a file, and then the name stored inside reports it."""


_HASHED = re.compile(rf"-[0-9a-f]{{{_DIGEST}}}$")
_WINDOWS_DEVICE = re.compile(r"(con|prn|aux|nul|com[0-9]|lpt[0-9])(\..*)?", re.IGNORECASE)
"""A name Windows keeps for a device, alone or before a dot (`aux.json`): a file of that name
is the device there, and Git for Windows refuses to check out a commit that holds one."""


_MAX_STEM = 120


def cache_path(cache_dir: Path, device_id: str, tuner_name: str) -> Path:
    """Where the cache of `tuner_name` on `device_id` lives."""
    folder, name = cache_file_parts(device_id, tuner_name)
    return cache_dir / folder / name


def device_folder(device_id: str) -> str:
    """The folder of `device_id`'s caches under a cache root (`cuda_0-<hash>` of `cuda:0`)."""
    return _file_stem(device_id)


def device_folders(device_id: str) -> tuple[str, str]:
    """The names of the folders `device_id`'s caches may be in: its own, and 0.1.0's."""
    return device_folder(device_id), _legacy_stem(device_id)


def misplaced(path: Path, device: Mapping[str, Any] | None) -> str | None:
    """Why the cache file `path` is not read in the device's folder it is in, where its
    device block (`device`) names another device (a file copied or moved by hand): a run
    refuses it (`cache_format.other_device`). None for a file in its device's folder, or in
    a folder that is no device's (device ids begin with their kind, `cpu-` or `cuda-`),
    which only the command line reads."""
    device_id = device.get("id") if device else None
    folder = path.parent.name
    if not isinstance(device_id, str) or not folder.startswith(("cpu-", "cuda-")):
        return None
    if folder in device_folders(device_id):
        return None
    return (
        f"{path}: holds the cache of device {device_id!r}, in the folder {folder!r} of"
        f" another, where a run does not read it (a file copied or moved by hand?): move it"
        f" to the folder {device_folder(device_id)!r}"
    )


def cache_file_parts(device_id: str, tuner_name: str) -> tuple[str, str]:
    """The folder and file name of a cache under its root, for roots that are not a `Path`
    (a package's data, read through `importlib.resources`)."""
    return _file_stem(device_id), _tuner_file(tuner_name, _file_stem(tuner_name))


PEAKS_FILE = "peaks.json"
"""A device's probed peaks, kept beside its tuner caches when a client is given the cache
folder (`backends.peaks`): in the device's folder, and not a cache file."""


def _tuner_file(tuner_name: str, stem: str) -> str:
    """`stem`'s file, but for a tuner named as the peaks file is (`peaks`, a script
    `peaks.py`'s tuner), which takes the hashed form: the two would share a file, and the
    commands that skip the peaks file would skip its cache."""
    name = f"{stem}.json"
    return f"{_hashed_stem(tuner_name)}.json" if name == PEAKS_FILE else name


def cache_files(folder: Path) -> list[Path]:
    """The cache files under `folder`, sorted: a cache root (`<device>/<tuner>.json`) or one
    device's folder, so that commands comparing two folders take either, as long as both
    are of one kind (the files are matched by their path below each). Files only: a
    device's folder may end in `.json` itself (`--autotune-runner=gh.json`)."""
    return sorted(p for p in folder.rglob("*.json") if p.name != PEAKS_FILE and p.is_file())


def legacy_cache_file_parts(device_id: str, tuner_name: str) -> tuple[str, str]:
    """The folder and file name pytest-autotune 0.1.0 gave the same cache: read when the
    injective name has no file yet, never written, so baselines committed under it are
    still found (the first save writes the injective name; the old file can then go)."""
    return _legacy_stem(device_id), legacy_tuner_files(tuner_name)[0]


def legacy_tuner_files(tuner_name: str) -> tuple[str, ...]:
    """Every file name 0.1.0 gave the cache of `tuner_name`, its later rule's first (that
    of `legacy_cache_file_parts`). Its first rule hashed only an over-long name, so a node
    id with a space or a non-ASCII letter (`tests/unit tests/a.py::t`) was filed with no
    hash (`tests_unit_tests_a.py__t.json`): read by the later rule's name alone, such a
    test's baselines read "no baseline" after an upgrade, the file never named."""
    later = _tuner_file(tuner_name, _legacy_stem(tuner_name))
    first = _tuner_file(tuner_name, _legacy_stem(tuner_name, hash_replaced=False))
    return (later,) if first == later else (later, first)


def legacy_cache_file(folder: Path, tuner_name: str) -> Path:
    """The file of 0.1.0's name for `tuner_name`'s cache in the device folder `folder`: the
    first of `legacy_tuner_files` that is there, else its later rule's name."""
    names = legacy_tuner_files(tuner_name)
    return next((folder / n for n in names if (folder / n).exists()), folder / names[0])


def _file_stem(name: str) -> str:
    """A readable file name for `name`, different for every two names (issue 15).

    A name made only of lower-case letters, digits, `.`, `_` and `-` (not starting with a
    dot or a dash, not ending the way a hashed stem ends) is its own file name. Any other
    name (a node id `tests/test_a.py::test_sum`, a name with upper case, which a macOS or
    Windows file system would not tell from lower case, a non-ASCII or over-long one, one
    Windows keeps for a device, `aux` or `nul.x`, or one ending in a dot) keeps
    a readable start with every other character made `_`, and ends with a hash of the exact
    name: `tests/a.py::t` and `tests_a.py::t` were one file before and are two now. Files
    also store the name itself, so a hash collision is reported, never merged.
    """
    if not name:
        raise ValueError("an empty name cannot name a cache file")
    if (
        _PLAIN.fullmatch(name)
        and len(name) <= _MAX_STEM
        and not _HASHED.search(name)
        and not _WINDOWS_DEVICE.fullmatch(name)
        and not name.endswith(".")  # Windows drops it from a folder's name
    ):
        return name
    return _hashed_stem(name)


def _hashed_stem(name: str) -> str:
    """A readable start of `name` and a hash of all of it (see `_file_stem`)."""
    stem = _UNSAFE.sub("_", name)
    if stem.startswith("."):
        stem = "_" + stem[1:]
    elif _WINDOWS_DEVICE.fullmatch(stem.partition(".")[0]) and "." in stem:
        stem = "_" + stem  # `con.py::t`: `con.py__t-<hash>.json` is the device `con`
    digest = _name_digest(name)[:_DIGEST]
    return f"{stem[: _MAX_STEM - _DIGEST - 1]}-{digest}"


def _name_digest(name: str) -> str:
    """The SHA-256 of the bytes `name` stands for: its UTF-8, where it holds the bytes of a
    file name Python could not decode (`surrogateescape`) those bytes, and a lone surrogate
    of any other kind as UTF-8 writes it (`surrogatepass`). Strict UTF-8 raised out of
    every `--autotune-update` of a test file named in Latin-1 (`caf\\xe9.py`); and under
    the C locale without UTF-8 mode (`LC_ALL=C PYTHONUTF8=0`) pytest names `test_café.py`
    `test_caf\\udcc3\\udca9.py`, whose bytes are those of `test_café.py`, so its file is the
    one a UTF-8 run names. The bytes of every other name, and so its digest, are as before."""
    try:
        data = name.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:
        data = name.encode("utf-8", "surrogatepass")
    return hashlib.sha256(data).hexdigest()


def _legacy_stem(name: str, *, hash_replaced: bool = True) -> str:
    """The earlier, not injective, rule: characters outside `[A-Za-z0-9._-]` became `_`
    (a long name, or, with `hash_replaced`, one with characters other than a node id's
    separators, got a hash; 0.1.0's first releases hashed only a long one)."""
    stem = _UNSAFE.sub("_", name)
    if stem.startswith("."):
        stem = "_" + stem[1:]
    digest = _name_digest(name)[:16]
    if (hash_replaced and _UNSAFE.search(_SEPARATORS.sub("", name))) or len(stem) > _MAX_STEM:
        stem = f"{stem[: _MAX_STEM - len(digest) - 1]}-{digest}"
    return stem
