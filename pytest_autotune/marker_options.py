"""The checks of `@pytest.mark.autotune(...)`'s values, each failing with one line that
names the option and the value, where a wrong type used to end in an internal
AttributeError or TypeError far from the marker (issue 15)."""

from __future__ import annotations

import difflib
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from pytest_autotune.tune.bounds import Thresholds, Work
from pytest_autotune.tune.key import AutotuneLevel
from pytest_autotune.tune.local import LocalTuner
from pytest_autotune.tune.parse import DEVICE
from pytest_autotune.tune.plain_numbers import finite, real_number
from pytest_autotune.tune.settings import BY_NAME
from pytest_autotune.tune.tunable import TuneGroup


def _number(value: Any, *, positive: bool = False) -> bool:
    plain = real_number(value)  # `np.finfo(np.float32).eps` is a number too
    if plain is None:
        return False
    return finite(plain) and (plain > 0 if positive else plain >= 0)


def _groups(value: Any) -> bool:
    if not isinstance(value, (list, tuple)):
        return False
    return all(
        isinstance(entry, tuple)
        and len(entry) == 2
        and isinstance(entry[0], TuneGroup)
        and isinstance(entry[1], Mapping)
        and all(
            isinstance(name, str) and (callable(p) or real_number(p) is not None)
            for name, p in entry[1].items()
        )
        for entry in value
    )


_CHECKS: dict[str, tuple[Callable[[Any], bool], str]] = {
    "rtol": (_number, "a finite number >= 0 (a tolerance that cannot fail checks nothing)"),
    "atol": (_number, "a finite number >= 0 (a tolerance that cannot fail checks nothing)"),
    "max_regression": (
        lambda v: _number(v) and v <= 1,
        "a fraction from 0 to 1, such as 0.1 for 10%",
    ),
    "time_limit": (
        lambda v: _number(v, positive=True),
        "a finite number of seconds > 0",
    ),
    "thresholds": (lambda v: isinstance(v, Thresholds), "a Thresholds(compute=..., memory=...)"),
    "work": (
        lambda v: isinstance(v, Work) or callable(v),
        "a Work(compute_ops=..., bytes=...) or a function of the fixtures returning one",
    ),
    "key": (callable, "a function of the fixtures returning the key"),
    "reference": (
        lambda v: isinstance(v, str) or callable(v),
        "a candidate's name or a function",
    ),
    "groups": (_groups, "a list of (TuneGroup, {candidate name: int priority}) pairs"),
    "device": (
        lambda v: isinstance(v, str) and bool(DEVICE.match(v.strip().lower())),
        "a device name: cpu, cuda, cuda:N or a pytest_autotune_client's",
    ),
    "check_output": (lambda v: isinstance(v, bool), "True or False"),
    "tuner": (
        # An empty name fell back to the test's name without a word, as `None` does.
        lambda v: isinstance(v, LocalTuner) or (isinstance(v, str) and v.strip() != ""),
        "a LocalTuner or a tuner's name (a non-empty str)",
    ),
    "level": (
        lambda v: (
            isinstance(v, AutotuneLevel)
            # Any case, as `--autotune-level` and PYTEST_AUTOTUNE_LEVEL take it.
            or (
                isinstance(v, str) and v.strip().lower() in {level.value for level in AutotuneLevel}
            )
        ),
        "an AutotuneLevel or minimal, balanced, extensive or full",
    ),
}


def option_error(options: Mapping[str, Any]) -> str | None:
    """The first option of a marker or an `autotune` fixture call whose value is of the
    wrong kind, or that needs another option it lacks (`thresholds=` without `work=`), as
    one line; None if all are fine. None means "not set" for every option."""
    for name, value in options.items():
        if value is None or name not in _CHECKS:
            continue
        check, expected = _CHECKS[name]
        if not check(value):
            return f"@pytest.mark.autotune({name}={_short(value)}): expected {expected}"
    thresholds = options.get("thresholds")
    if thresholds is not None and options.get("work") is None:
        # The floor is a fraction of the roofline time of the test's work: without a work
        # the gate had nothing to judge it on, and passed the group without a word.
        return (
            f"@pytest.mark.autotune(thresholds={_short(thresholds)}) without work=: the"
            " floor is a fraction of the roofline of the test's work, so no floor would be"
            " checked; give work=Work(compute_ops=..., bytes=...) or a function of the"
            " fixtures returning one"
        )
    return None


def work_error(value: Any, what: str = "@pytest.mark.autotune(work=...)") -> str | None:
    """What a `work=` function (or `what`) returned, when it is not a `Work`."""
    if isinstance(value, Work) or value is None:
        return None
    return f"{what} returned {_short(value)}, expected a Work(...)"


def near_names_hint(unknown: Iterable[str], known: Iterable[str]) -> str:
    """ "; did you mean rtol?" for the `unknown` options of a marker or a fixture call that
    are near a `known` one, or "": a misspelt option is the most common of them."""
    choices = list(known)
    near = [m for u in unknown for m in difflib.get_close_matches(u, choices, 1, 0.6)]
    return f"; did you mean {', '.join(near)}?" if near else ""


def run_setting_hint(unknown: Iterable[str]) -> str:
    """Where each setting of the whole run among the `unknown` options of a marker or a
    fixture call is set ("; max_samples is a setting of the whole run, ..."), or "".
    Given to one test (fewer samples for a slow one, `strict=True`), it read "unknown
    option" and the marker's list alone, which do not say where it goes. The plugin's own
    settings (what a run does and writes: `candidates`, `html`) are no option of a test."""
    hints = []
    for name in unknown:
        setting = BY_NAME.get(name)
        if setting is None or "marker" in setting.sources or setting.owner == "plugin":
            continue
        flag = f"with {setting.flag}, " if "command line" in setting.sources else ""
        hints.append(
            f"; {name} is a setting of the whole run, not of one test: set it {flag}in"
            f" autotune.yaml ({name}), the ini file ({setting.ini}) or {setting.env}"
        )
    return "".join(hints)


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else f"{text[:60]}...{text[-10:]}"
