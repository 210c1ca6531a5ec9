"""Collection's records: what an autotune test function's marker says (`FunctionSpec`),
which candidate and group each collected item is (`ItemSpec`), the parametrizations a test
does not ask for (`Unrequested`), the stash keys the run keeps them under, and the node ids
pytest gives the tests.

The modules that fill them: `function_spec` (a marked function's spec), `generate_tests`
(the plugin's wrappers of `pytest_generate_tests`), `parametrized_candidates` (candidates
pytest parametrizes, not the marker), `item_groups` with `group_key` (each item's group
and its key), `group_marks` (a group's candidates marked not to run, to fail, or with
warning filters) and `parameter_ids` (pytest's parametrize arguments and ids as it writes
them)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from pytest_autotune.parameter_ids import escaped, id_of
from pytest_autotune.plugin_settings import PluginSettings, shown_from

FUNCTIONS = pytest.StashKey[dict[str, "FunctionSpec"]]()
ITEM = pytest.StashKey["ItemSpec"]()
GROUP_ITEMS = pytest.StashKey[dict[str, list[pytest.Item]]]()
"""Every collected item of each group, deselected ones included (a group is tuned whole)."""
COLLECTED = pytest.StashKey[list[pytest.Item]]()
"""Every item an update's collection made, before any plugin's `pytest_collection_modifyitems`
(one `tryfirst`, registered after this plugin, runs before its own): what its stale entries
are judged by (`pytest_autotune.stale`)."""
FUNCTION_PATHS = pytest.StashKey[dict[str, Path]]()
"""The file of each autotune test function (marked, or of the `autotune` fixture), by its
node id: where two files' tests share one (`shared_nodeid_error`)."""
SHARED_NODEID = pytest.StashKey[str]()
"""On a test of the `autotune` fixture, why it fails: its node id is another file's too."""
UNREQUESTED = pytest.StashKey[dict[str, tuple["Unrequested", ...]]]()
"""The parametrizations of names each autotune test function (marked, or of the `autotune`
fixture) does not ask for (`Unrequested`), by the function's node id."""
AWAITING = pytest.StashKey[set[str]]()
"""The marked test functions whose candidates no hook had given when this plugin's
`pytest_generate_tests` ran: `generate_tests.CandidatesOfEveryHook` reads them once every
hook has."""
NOT_RUN = pytest.StashKey[dict[str, dict[str, str]]]()
"""The candidates of each group whose items are marked not to run, and why
(`group_marks.not_run`), once read."""
CANDIDATE_PLACES = pytest.StashKey[dict[str, int]]()
"""Where each marked test function's candidate id stands among its items' parameter ids
(`generate_tests.candidate_place`), by the function's node id."""
SKIPPED_AT_SETUP = pytest.StashKey[dict[str, dict[str, str]]]()
"""The candidates of each group whose tests a fixture skipped (or xfailed) at their setup,
and why (`group_marks.note_skipped_at_setup`), as they are met."""


@dataclass(frozen=True)
class FunctionSpec:
    """What the marker of one test function says, with its candidates in order."""

    nodeid: str
    candidates: tuple[tuple[str, Callable[..., Any]], ...]
    options: Mapping[str, Any]
    error: str | None = None
    """A bad marker value, failing each of the function's tests with this line (the rest of
    the session runs, and writes its files)."""
    marks: Mapping[str, tuple[pytest.Mark, ...]] = field(default_factory=dict)
    """The marks of each candidate's own `pytest.param`, by name: what keeps a candidate
    out of its group where its item is not collected (`group_marks.not_run`)."""


@dataclass(frozen=True)
class Unrequested:
    """The parametrization of a name that the test function asks for neither as an argument
    nor through its fixtures: a plugin added it to the test's fixtures to run the test
    several times (pytest-repeat's `__pytest_repeat_step_number`, ids "1-2", "2-2"). It
    says which run of the test an item is, not which problem, so it is no part of the
    item's group nor of the group's key: each repetition is a test of the same group, and
    the group is tuned once, at the key its baseline is recorded under."""

    name: str
    ids: Any

    def component(self, callspec: Any) -> str | None:
        """Its part of an item's id, as pytest writes it (an `ids=` list's or function's,
        else pytest's own id of a plain value); None where it cannot be told."""
        index = callspec.indices.get(self.name)
        if index is None:
            return None
        value = callspec.params.get(self.name)
        given: object = None
        if callable(self.ids):
            given = id_of(self.ids, value)
        elif isinstance(self.ids, (list, tuple)) and index < len(self.ids):
            given = self.ids[index]
        if given is None:
            plain = value is None or isinstance(value, (str, int, float, complex))
            given = value if plain else f"{self.name}{index}"
        return escaped(str(given))


@dataclass(frozen=True)
class ItemSpec:
    """One collected item: which candidate it runs, in which group."""

    function: FunctionSpec
    candidate: str
    group: str
    group_key: str
    positional: tuple[str, ...] = ()
    """The parameters that `group_key` numbers by place
    (`group_key.positional_parameters`)."""


def function_nodeid(definition: Any) -> str:
    return str(definition.nodeid)


def tuner_of_test(nodeid: str) -> str:
    """The tuner a test of node id `nodeid` is filed under: the node id as text, the bytes
    of a file name Python could not decode read as UTF-8. Under the C locale without UTF-8
    mode (`LC_ALL=C PYTHONUTF8=0`, a bare container's shell) pytest names `test_café.py`
    `test_caf\\udcc3\\udca9.py`, whose cache was another file than a UTF-8 run's, and an
    update there called the committed one's test gone (and pruned it). A lone surrogate of
    no undecoded byte (a Windows file name may hold one) is kept as it is."""
    try:
        return nodeid.encode("utf-8", "surrogateescape").decode("utf-8", "surrogateescape")
    except UnicodeEncodeError:
        return nodeid


def item_function_nodeid(item: pytest.Item) -> str:
    """The node id of an item's test function, without its parameters' ids. Not the node
    id cut at its first `[`: a folder's name may hold one (`tests[v2]/test_a.py`), and every
    test under it was named `tests`, one function and one cache file to the plugin."""
    name = getattr(item, "originalname", None)
    return f"{item.parent.nodeid}::{name}" if item.parent is not None and name else item.nodeid


def shared_nodeid_error(config: pytest.Config, nodeid: str, first: Path, path: Path) -> str:
    """Why the tests of two files that pytest gives one node id fail. A test outside the root
    dir is named from the folder given on the command line, so `--rootdir=src tests/a
    tests/b` names `tests/a/test_x.py` and `tests/b/test_x.py` both `test_x.py`; their
    groups and cache file, named after the node id, would be one."""
    here = config.invocation_params.dir
    return (
        f"{nodeid}: the node id of both {shown_from(first, here)} and"
        f" {shown_from(path, here)}: pytest names a test outside the root dir"
        f" {config.rootpath} from the folder given on the command line, and the two would"
        " share one cache file: give a --rootdir above both"
    )


def outside_rootdir(item: pytest.Item, nodeid: str, settings: PluginSettings) -> str | None:
    """The warning for a test, named `nodeid`, whose file is outside the root dir (one for
    all the file's tests); None for one inside. pytest names it from the folder given on
    the command line, so its cache file's name depends on how pytest was called (`pytest
    pkg_a/tests pkg_b/tests` in a monorepo takes `pkg_a`'s configuration and names
    `pkg_b/tests/test_ops.py` `test_ops.py`), and it is filed in another project's cache
    directory: its baselines were written where a run of its own project never looked,
    without a word."""
    rootpath = item.config.rootpath
    if item.path.is_relative_to(rootpath):
        return None
    # One line a file, however many of its tests tune (a line a test filled the summary).
    module = nodeid.partition("::")[0]
    return (
        f"warning: {settings.relative(item.path)} is outside the root dir {rootpath}, so"
        f" pytest names its tests from the folder given on the command line ({module}::...),"
        " and their baselines are filed under those names in"
        f" {settings.relative(settings.cache_dir)}, where a run given another folder, or run"
        f" from their own project, does not look: {_rooting_advice(item.config, item.path)}"
    )


def _rooting_advice(config: pytest.Config, path: Path) -> str:
    """How to run a test outside the root dir under a root dir above it. An ini file given
    with `-c` makes its folder the root dir wherever pytest runs (`pytest -c ci/pytest.ini`
    from the project's top), so there only a --rootdir with it helps, not a `cd`."""
    ini = config.getoption("inifilename", None)
    if ini is None or config.getoption("rootdir", None):
        return "run them from their project (`cd` there) or with a --rootdir above them"
    here = config.invocation_params.dir
    rootdir = f"--rootdir={here}" if path.is_relative_to(here) else "a --rootdir above them"
    return f"-c makes the folder of the file it names the root dir: give {rootdir} with -c {ini}"
