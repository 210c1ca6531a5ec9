"""What the engine makes of the collected items (`plugin_engine`'s collection hooks).

A group whose items two sets of parameters share fails in each of them; a test of the
`autotune` fixture whose node id another file's test has too is told so; and an update
learns what its stale entries are judged by: the names each collected module defines and
the groups each marked test makes.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from pytest_autotune.collection import (
    FUNCTIONS,
    GROUP_ITEMS,
    ITEM,
    SHARED_NODEID,
    item_function_nodeid,
    shared_nodeid_error,
    tuner_of_test,
)
from pytest_autotune.item_groups import item_group, merged_group_error
from pytest_autotune.stale import Collected, defined_names
from pytest_autotune.tune.tunable_set import checksum_of


def fail_merged_groups(config: pytest.Config) -> None:
    """Each item of a group that two sets of parameters share by their ids
    (`merged_group_error`) fails saying so, rather than be tuned on another's inputs."""
    for group, grouped in config.stash.get(GROUP_ITEMS, {}).items():
        error = merged_group_error(group, grouped)
        for item in grouped if error is not None else ():
            spec = item.stash[ITEM]
            failing = replace(spec.function, error=spec.function.error or error)
            item.stash[ITEM] = replace(spec, function=failing)


def mark_shared_nodeids(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Each test of the `autotune` fixture whose node id another file's test has too (see
    `shared_nodeid_error`): a set of no tuner is filed after the node id, so the second
    test's set was served the first's winner, never tuned nor judged."""
    users = [item for item in items if "autotune" in getattr(item, "fixturenames", ())]
    files: dict[str, set[Path]] = {}
    for item in users:
        files.setdefault(item_function_nodeid(item), set()).add(item.path)
    for item in users:
        nodeid = item_function_nodeid(item)
        if len(files[nodeid]) > 1:
            first, second, *_ = sorted(files[nodeid])
            item.stash[SHARED_NODEID] = shared_nodeid_error(config, nodeid, first, second)


def collected(config: pytest.Config, items: list[pytest.Item]) -> Collected:
    """What an update's stale entries are judged by (`pytest_autotune.stale`): the names
    each collected module defines, every group of each marked test where collection chose
    no items by itself (`items`: every item collected, before any deselection), and the
    checksum of each marked test's candidate list."""
    defined: dict[str, frozenset[str]] = {}
    rooted = True
    for item in items:
        module = item.nodeid.split("::", 1)[0]
        if tuner_of_test(module) not in defined and isinstance(item, pytest.Function):
            defined[tuner_of_test(module)] = defined_names(item.module)  # as tuners name it
            rooted = rooted and item.path == config.rootpath / module
    chosen = config.getoption("lf", False) or any("[" in str(arg) for arg in config.args)
    groups: dict[str, frozenset[str]] = {}
    functions = config.stash.get(FUNCTIONS, {})
    for spec in () if chosen else (item_group(functions, item) for item in items):
        if spec is not None:
            test = tuner_of_test(spec.function.nodeid)
            groups[test] = groups.get(test, frozenset()) | {spec.group}
    # Every marked function of the modules collected, those `-k`, `--lf` or a node id left
    # out included: a test gone whose file holds one's candidate list may be it, moved.
    checksums = {
        tuner_of_test(spec.nodeid): checksum_of(tuple(name for name, _ in spec.candidates))
        for spec in functions.values()
        if spec.error is None and spec.candidates
    }
    return Collected(defined, groups, rooted, checksums)
