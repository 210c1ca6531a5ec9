"""The README's options, ini keys and variables are the settings table's: a name it gives
that the code does not read, or a setting it leaves out, is a user's run that does not do
what the page said."""

from __future__ import annotations

import re
from pathlib import Path

from pytest_autotune.tune.settings import SETTINGS, setting_named

README = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")

# The README's examples of a misspelt name, each with the error it gets.
TYPOS = {"PYTEST_AUTOTUNE_LEVL", "autotune_levl"}
# Names of the package spelt like an ini key that are no setting.
NOT_SETTINGS = {"autotune_compare", "autotune_level_scope"}


def _paragraph_after(opening: str) -> str:
    return README.split(opening, 1)[1].split("\n\n", 1)[0]


def test_the_readme_names_every_option_and_no_other() -> None:
    named = set(re.findall(r"--autotune(?:-[a-z]+)*", README))

    assert named == {s.flag for s in SETTINGS if "command line" in s.sources}


def test_the_options_table_gives_each_option_its_value_as_help_does_and_its_ini_key() -> None:
    # `pytest --help` read `--autotune-cache-dir=VALUE` where the table reads `=DIR`.
    table = _paragraph_after("| option | ini key | meaning |\n")
    rows = re.findall(r"^\| `(--[a-z-]+)(?:=([A-Z]+))?` \| `(\w+)` \|", table, re.MULTILINE)

    assert sorted(rows) == sorted(
        (s.flag, "" if s.kind == "bool" else s.metavar, s.ini)
        for s in SETTINGS
        if "command line" in s.sources
    )


def test_the_readme_lists_each_setting_without_an_option() -> None:
    table = _paragraph_after("| setting | what it sets |\n")
    named = set(re.findall(r"^\| `(\w+)`(?:, `(\w+)`)?", table, re.MULTILINE))

    assert {name for row in named for name in row if name} == {
        s.name for s in SETTINGS if "command line" not in s.sources
    }


def test_the_options_only_tuning_reads_are_those_the_readme_names() -> None:
    sentence = README.split("**Options only tuning reads** (", 1)[1].split(")", 1)[0]

    assert set(re.findall(r"`(--[a-z-]+)`", sentence)) == {
        s.flag for s in SETTINGS if s.tuning_only
    }


def test_every_variable_and_ini_key_the_readme_names_is_a_setting() -> None:
    variables = set(re.findall(r"PYTEST_AUTOTUNE_[A-Z_]*[A-Z]", README))
    ini_keys = set(re.findall(r"\bautotune_[a-z_]*[a-z]", README)) - NOT_SETTINGS

    unknown = {
        name
        for name in variables | ini_keys
        if (setting := setting_named(name)) is None or name not in (setting.env, setting.ini)
    }
    assert unknown == TYPOS
