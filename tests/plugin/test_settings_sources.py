"""The plugin's own settings from autotune.yaml and the environment, as from the ini file."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pytest_autotune import plugin_settings
from tests.plugin.harness import run
from tests.plugin.test_tune_mode import CACHE, SCALE_TESTS


def refused(pytester: pytest.Pytester, line: str, *args: str) -> None:
    """A run of `args`, which must stop at its start with a usage error saying `line`."""
    result = run(pytester, *args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([line])


def test_autotune_yaml_turns_on_tuning_and_writes_the_report_it_names(
    autotune_pytester: pytest.Pytester,
) -> None:
    autotune_pytester.makepyfile(test_scale=SCALE_TESTS)
    (autotune_pytester.path / "autotune.yaml").write_text(
        "update: true\ndevice: fake\nhtml: out/report.html\ncandidates: true\n"
    )
    result = run(autotune_pytester)
    assert result.ret == pytest.ExitCode.OK
    assert (autotune_pytester.path / "out/report.html").is_file()
    cache = autotune_pytester.path / CACHE
    assert json.loads(cache.read_text())["device"]["id"] == "cpu-fake-1t"
    result.stdout.fnmatch_lines(["*report: out*report.html*"])


def test_an_environment_variable_sets_a_plugin_option(
    autotune_pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    autotune_pytester.makepyfile(test_scale=SCALE_TESTS)
    monkeypatch.setenv("PYTEST_AUTOTUNE_UPDATE", "1")
    monkeypatch.setenv("PYTEST_AUTOTUNE_BENCHMARK_JSON", "bench.json")
    assert run(autotune_pytester).ret == pytest.ExitCode.OK
    assert (autotune_pytester.path / "bench.json").is_file()


@pytest.mark.parametrize(
    ("where", "named"),
    [
        (
            "yaml",
            "*autotune.yaml: autotune_html: unknown setting; known settings: *did you mean html?",
        ),
        (
            "environment",
            "*pytest-autotune: PYTEST_AUTOTUNE_LEVL: unknown setting; known settings: *"
            "did you mean PYTEST_AUTOTUNE_LEVEL?",
        ),
    ],
)
def test_a_misspelt_setting_stops_the_run_with_the_nearest_name(
    autotune_pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, where: str, named: str
) -> None:
    autotune_pytester.makepyfile(test_scale=SCALE_TESTS)
    if where == "yaml":
        (autotune_pytester.path / "autotune.yaml").write_text("autotune_html: report.html\n")
    else:
        monkeypatch.setenv("PYTEST_AUTOTUNE_LEVL", "full")
    refused(autotune_pytester, named, "-q")


def test_an_ini_key_given_with_dash_o_wins_over_the_environment_and_autotune_yaml(
    autotune_pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    # `-o autotune_html=...` was ranked as the ini file it overrides: a variable or
    # autotune.yaml beat the value typed for the run, which did nothing without a word.
    autotune_pytester.makepyfile(test_scale=SCALE_TESTS)
    (autotune_pytester.path / "autotune.yaml").write_text("html: yaml.html\n")
    monkeypatch.setenv("PYTEST_AUTOTUNE_RECORD", "env.jsonl")
    result = run(
        autotune_pytester,
        "--autotune-update",
        "--autotune-device=fake",
        "-o",
        "autotune_html=typed.html",
        "-o",
        "autotune_record=typed.jsonl",
    )
    assert result.ret == pytest.ExitCode.OK
    written = {p.name for p in autotune_pytester.path.iterdir()}
    assert {"typed.html", "typed.jsonl"} <= written
    assert not {"yaml.html", "env.jsonl"} & written


@pytest.mark.parametrize(
    ("given", "named"),
    [
        ("autotune_level=finest", "command line -o: autotune_level: *'finest'"),
        ("autotune_strict=maybe", "command line -o: autotune_strict: invalid truth value*"),
    ],
)
def test_a_bad_value_given_with_dash_o_is_named_as_typed_not_as_the_ini_files(
    autotune_pytester: pytest.Pytester, given: str, named: str
) -> None:
    # It read "tox.ini: autotune_level: ...", sending the user to a file without the key.
    autotune_pytester.makepyfile(test_scale=SCALE_TESTS)
    refused(autotune_pytester, f"ERROR: pytest-autotune: {named}", "-o", given)


@pytest.mark.parametrize("verbosity", ["-q", "-v"])
def test_records_sent_to_stdout_are_json_lines_of_their_own(
    autotune_pytester: pytest.Pytester, verbosity: str
) -> None:
    # The first record began on the line of the last test's progress ("..  [100%]{...")
    # where a reader of JSON lines, or `grep '^{'`, found it no record.
    autotune_pytester.makepyfile(test_scale=SCALE_TESTS)
    result = run(
        autotune_pytester,
        verbosity,
        "--autotune",
        "--autotune-device=fake",
        "--autotune-record=stdout",
    )
    assert result.ret == pytest.ExitCode.OK
    records = [line for line in result.outlines if "schema_version" in line]
    assert records
    assert all(json.loads(line)["tuner"] for line in records)


# Every path setting, as the command line and the environment spell it.
PATHS = {
    "html": "r.html",
    "record": "r.jsonl",
    "benchmark_json": "b.json",
    "cache_dir": "mycache",
}


@pytest.fixture
def below(autotune_pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A project whose tests are in tests/sub, run from tests/sub (`cd tests/sub; pytest`)."""
    sub = autotune_pytester.mkdir("tests") / "sub"
    sub.mkdir()
    (sub / "test_scale.py").write_text(SCALE_TESTS)
    monkeypatch.chdir(sub)
    return sub


@pytest.mark.parametrize("source", ["command line", "environment"])
def test_a_relative_path_from_the_command_line_or_the_environment_is_from_where_pytest_ran(
    autotune_pytester: pytest.Pytester,
    below: Path,
    monkeypatch: pytest.MonkeyPatch,
    source: str,
) -> None:
    pytest.importorskip("pytest_benchmark")  # for benchmark_json
    args = ["--autotune-update"]
    for name, path in PATHS.items():
        if source == "command line":
            args.append(f"--autotune-{name.replace('_', '-')}={path}")
        else:
            monkeypatch.setenv(f"PYTEST_AUTOTUNE_{name.upper()}", path)
    result = run(autotune_pytester, *args, "--junitxml=j.xml")
    assert result.ret == pytest.ExitCode.OK
    assert sorted(p.name for p in below.iterdir() if p.name != "__pycache__") == sorted(
        ["b.json", "j.xml", "mycache", "r.html", "r.jsonl", "test_scale.py"]
    )
    assert list((below / "mycache").glob("*/*.json"))
    result.stdout.fnmatch_lines(["updated mycache*test_scale*.json*", "report: r.html"])


def test_a_relative_path_from_the_ini_file_or_autotune_yaml_is_from_the_root_dir(
    autotune_pytester: pytest.Pytester, below: Path
) -> None:
    root = autotune_pytester.path
    autotune_pytester.makeini(
        "[pytest]\nfilterwarnings = error\nautotune_html = out/r.html\n"
        "autotune_config = conf/settings.yaml\n"
    )
    (root / "conf").mkdir()
    (root / "conf/settings.yaml").write_text("update: true\nrecord: out/r.jsonl\n")
    result = run(autotune_pytester)
    assert result.ret == pytest.ExitCode.OK
    assert (root / "out/r.html").is_file()
    assert (root / "out/r.jsonl").is_file()
    assert list((root / ".autotune").glob("*/*.json"))
    # From tests/sub, the report is not below: shown whole, so that it opens from there.
    result.stdout.fnmatch_lines([f"report: {root / 'out/r.html'}"])


def test_the_config_file_named_on_the_command_line_is_from_where_pytest_ran(
    autotune_pytester: pytest.Pytester, below: Path
) -> None:
    (below / "here.yaml").write_text("update: true\n")
    result = run(autotune_pytester, "--autotune-config=here.yaml")
    assert result.ret == pytest.ExitCode.OK
    assert list((autotune_pytester.path / ".autotune").glob("*/*.json"))


@pytest.mark.parametrize(
    ("given", "named"),
    [
        (
            ("--autotune-config=nope.yaml",),
            "command line: autotune_config: nope.yaml: no such file",
        ),
        (
            ("-o", "autotune_config=conf"),
            "command line -o: autotune_config: conf: is a folder; give the path of a file",
        ),
    ],
)
def test_a_settings_file_that_is_not_one_is_named_with_the_option_that_named_it(
    autotune_pytester: pytest.Pytester, given: tuple[str, ...], named: str
) -> None:
    # It read "nope.yaml: no such config file" (a folder: "cannot read: [Errno 21] ..."),
    # naming neither the option nor where it was set.
    autotune_pytester.makepyfile(test_scale=SCALE_TESTS)
    autotune_pytester.mkdir("conf")
    refused(autotune_pytester, f"ERROR: pytest-autotune: {named}", *given)


def test_a_bad_boolean_in_the_ini_file_stops_the_run_naming_its_key(
    autotune_pytester: pytest.Pytester,
) -> None:
    # pytest parses a bool ini key itself, and its error names neither key nor file, nor
    # the words it takes; "ini: autotune_strict" named the key, not the file.
    autotune_pytester.makepyfile(test_scale=SCALE_TESTS)
    autotune_pytester.makeini("[pytest]\nfilterwarnings = error\nautotune_strict = maybe\n")
    refused(
        autotune_pytester,
        "ERROR: pytest-autotune: tox.ini: autotune_strict: invalid truth value 'maybe'"
        " (true or false: yes/no, on/off, 1/0)",
    )


def test_ini_keys_left_unset_read_as_unset_on_every_supported_pytest(
    autotune_pytester: pytest.Pytester,
) -> None:
    # pytest 7 gives an unset bool key of no default as [], which stopped every run of a
    # project that sets none of them ("ini: autotune: expected a boolean ..., got []").
    # An unset bool is None (pytest 8 and later) or [] (pytest 7), not False, which an
    # `autotune_adaptive = false` must be read as.
    from pytest_autotune.plugin_options import _ini_value

    config = autotune_pytester.parseconfigure()
    assert config.getini("autotune") in (None, [])
    assert _ini_value(config, "autotune") is None
    assert _ini_value(config, "autotune_adaptive") is None
    assert config.getini("autotune_html") == ""
    autotune_pytester.makepyfile(test_scale=SCALE_TESTS)
    assert run(autotune_pytester).ret == pytest.ExitCode.OK


def test_the_help_shows_the_options_even_with_a_bad_setting(
    autotune_pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Where the user looks to fix the setting; pytest shows its help whatever else is wrong.
    monkeypatch.setenv("PYTEST_AUTOTUNE_LEVEL", "finest")
    (autotune_pytester.path / "autotune.yaml").write_text("levl: full\n")
    result = run(autotune_pytester, "--help")
    assert result.ret == pytest.ExitCode.OK
    result.stdout.fnmatch_lines(["autotune: tune, check and gate*", "*--autotune-level=*"])
    assert "pytest-autotune:" not in result.stderr.str()


def test_the_help_says_what_readme_says_of_the_device_the_cache_root_and_the_benchmark_json(
    autotune_pytester: pytest.Pytester,
) -> None:
    # It offered only auto, cpu, cuda and cuda:N for --autotune-device (a hook's device is
    # one too), a cache root of `.autotune` from nowhere said, and no word of the extra.
    result = run(autotune_pytester, "--help")
    assert result.ret == pytest.ExitCode.OK
    text = " ".join(" ".join(result.outlines).split())
    assert "auto (default), cpu, cuda, cuda:N, or a device a pytest_autotune_client hook" in text
    assert "cache root (default: .autotune in the root dir)" in text
    assert "JSON format to this path (needs the [benchmark] extra)" in text


@pytest.mark.parametrize(
    ("where", "named"),
    [
        ("command line", "command line: autotune_device: 'tpu'"),
        ("environment", "PYTEST_AUTOTUNE_DEVICE: 'tpu'"),
        ("yaml", "autotune.yaml: device: 'tpu'"),
        ("ini", "tox.ini: autotune_device: 'tpu'"),
    ],
)
def test_a_device_no_hook_provides_is_named_with_the_source_that_set_it(
    autotune_pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, where: str, named: str
) -> None:
    # It read "--autotune-device=tpu" whichever source had set it.
    autotune_pytester.makepyfile(test_scale=SCALE_TESTS)
    args = ["--autotune"]
    if where == "command line":
        args.append("--autotune-device=tpu")
    elif where == "environment":
        monkeypatch.setenv("PYTEST_AUTOTUNE_DEVICE", "tpu")
    elif where == "yaml":
        (autotune_pytester.path / "autotune.yaml").write_text("device: tpu\n")
    else:
        autotune_pytester.makeini("[pytest]\nfilterwarnings = error\nautotune_device = tpu\n")
    refused(
        autotune_pytester, f"ERROR: pytest-autotune: {named}: no pytest_autotune_client*", *args
    )


def test_a_device_served_by_the_hook_of_a_conftest_below_the_root_dir_is_not_refused(
    autotune_pytester: pytest.Pytester,
) -> None:
    # `--autotune-device=fake` stopped the run at its start, "no pytest_autotune_client
    # hook provides it", when the hook was in tests/fake/conftest.py: loaded with its
    # tests, after the check. The marker's `device="fake"` worked there.
    conftest = autotune_pytester.path / "conftest.py"
    below = autotune_pytester.mkpydir("tests") / "fake"
    below.mkdir()
    (below / "conftest.py").write_text(conftest.read_text())
    conftest.unlink()
    (below / "test_scale.py").write_text(SCALE_TESTS)
    result = run(autotune_pytester, "--autotune-update", "--autotune-device=fake")
    assert result.ret == pytest.ExitCode.OK, result.outlines
    assert list((autotune_pytester.path / ".autotune/cpu-fake-1t").glob("*.json"))
    typo = run(autotune_pytester, "--autotune", "--autotune-device=faek")
    assert typo.ret == pytest.ExitCode.USAGE_ERROR
    typo.stderr.fnmatch_lines(
        ["ERROR: pytest-autotune: command line: autotune_device: 'faek': no pytest_autotune*"]
    )
    typo.assert_outcomes()  # stopped before its first test


def test_a_client_hook_that_raises_for_the_runs_device_stops_it_in_one_line(
    autotune_pytester: pytest.Pytester,
) -> None:
    # The hook, asked whether it serves the device before the first test, raised through
    # pytest: a traceback of pluggy's frames (an INTERNALERROR once asked after collection).
    conftest = autotune_pytester.path / "conftest.py"
    conftest.write_text(
        conftest.read_text() + "\n_fake_client = pytest_autotune_client\n\n"
        "def pytest_autotune_client(config, device):\n"
        "    if device == 'dsp':\n"
        "        raise RuntimeError('dsp driver not loaded')\n"
        "    return _fake_client(config, device)\n"
    )
    autotune_pytester.makepyfile(test_scale=SCALE_TESTS)
    result = run(autotune_pytester, "--autotune", "--autotune-device=dsp")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        [
            "ERROR: pytest-autotune: command line: autotune_device: 'dsp': its"
            " pytest_autotune_client hook raised RuntimeError: dsp driver not loaded"
        ]
    )
    assert "INTERNALERROR" not in result.stdout.str() + result.stderr.str()


NO_EFFECT = "autotune: {} no effect without --autotune or --autotune-update"


@pytest.mark.parametrize("workers", [(), ("-n", "2")], ids=["alone", "xdist"])
def test_a_tuning_option_typed_for_a_plain_run_says_once_that_it_did_nothing(
    autotune_pytester: pytest.Pytester, workers: tuple[str, ...]
) -> None:
    autotune_pytester.makepyfile(test_scale=SCALE_TESTS)
    result = run(autotune_pytester, *workers, "--autotune-html=r.html", "--autotune-strict")
    assert result.ret == pytest.ExitCode.OK
    assert not (autotune_pytester.path / "r.html").exists()
    said = [line for line in result.outlines if "no effect" in line]
    assert said == [NO_EFFECT.format("--autotune-html and --autotune-strict have")]
    one = run(autotune_pytester, *workers, "--autotune-record=r.jsonl")
    assert [line for line in one.outlines if "no effect" in line] == [
        NO_EFFECT.format("--autotune-record has")
    ]


def test_tuning_settings_a_project_keeps_in_its_files_or_environment_stay_silent_in_a_plain_run(
    autotune_pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    autotune_pytester.makepyfile(test_scale=SCALE_TESTS)
    autotune_pytester.makeini("[pytest]\nfilterwarnings = error\nautotune_html = r.html\n")
    (autotune_pytester.path / "autotune.yaml").write_text("strict: true\n")
    monkeypatch.setenv("PYTEST_AUTOTUNE_RECORD", "r.jsonl")
    result = run(autotune_pytester, "--autotune-level=full", "--autotune-time-limit=5")
    assert result.ret == pytest.ExitCode.OK
    assert "no effect" not in result.stdout.str()
    # Nor do options a project puts in addopts or PYTEST_ADDOPTS for every run.
    autotune_pytester.makeini(
        "[pytest]\nfilterwarnings = error\naddopts = --autotune-html=r.html\n"
    )
    monkeypatch.setenv("PYTEST_ADDOPTS", "--autotune-strict")
    result = run(autotune_pytester)
    assert result.ret == pytest.ExitCode.OK
    assert "no effect" not in result.stdout.str()


@pytest.mark.parametrize(
    ("line", "named"),
    [
        ("autotune_max_samples = 0", "autotune_max_samples: expected an integer >= 1, got '0'"),
        (
            "autotune_max_regression = 10",
            "autotune_max_regression: expected a fraction from 0 to 1 (0.1 for 10%), got '10'",
        ),
    ],
)
def test_a_bad_number_in_the_ini_file_is_quoted_as_written(
    autotune_pytester: pytest.Pytester, line: str, named: str
) -> None:
    # pytest 9.2 read a number key's text as a float first: "got 0.0" for a 0 typed
    # where an integer is asked for.
    autotune_pytester.makepyfile(test_scale=SCALE_TESTS)
    autotune_pytester.makeini(f"[pytest]\nfilterwarnings = error\n{line}\n")
    refused(autotune_pytester, f"ERROR: pytest-autotune: tox.ini: {named}")


NATIVE_TOML = pytest.mark.skipif(
    pytest.version_tuple < (9, 2), reason="a native [tool.pytest] number needs pytest 9.2"
)


def run_with_a_native_table(pytester: pytest.Pytester, setting: str) -> pytest.RunResult:
    """The scale tests run with `setting` (a TOML line) in pytest 9's `[tool.pytest]`."""
    pytester.makepyfile(test_scale=SCALE_TESTS)
    (pytester.path / "tox.ini").unlink()  # the fixture's ini, found after this one
    pytester.makepyprojecttoml(f'[tool.pytest]\nfilterwarnings = ["error"]\n{setting}\n')
    return run(pytester)


@NATIVE_TOML
@pytest.mark.parametrize("value", ["5", "2.5", '"5"'])
def test_a_native_toml_table_gives_the_time_limit_as_a_number_or_a_string(
    autotune_pytester: pytest.Pytester, value: str
) -> None:
    # `[tool.pytest]` (pytest 9) keeps TOML's types: an unquoted 5 was refused as "expects
    # a string", and a quoted one, which older pytest needed, must still read.
    result = run_with_a_native_table(autotune_pytester, f"autotune_time_limit = {value}")
    assert result.ret == pytest.ExitCode.OK, result.stdout.str() + result.stderr.str()


@NATIVE_TOML
def test_a_native_toml_time_limit_of_zero_is_refused_by_name(
    autotune_pytester: pytest.Pytester,
) -> None:
    result = run_with_a_native_table(autotune_pytester, "autotune_time_limit = 0")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        [
            "ERROR: pytest-autotune: pyproject.toml: autotune_time_limit:"
            " expected a number > 0, got 0"
        ]
    )


@pytest.mark.skipif(pytest.version_tuple < (9,), reason="a native [tool.pytest] is pytest 9's")
def test_a_native_toml_value_of_another_type_stops_the_run_in_one_line(
    autotune_pytester: pytest.Pytester,
) -> None:
    # pytest 9.0 and 9.1 refuse it with a TypeError, which reached the user as a traceback
    # through this plugin; 9.2 with a usage error of the same words.
    result = run_with_a_native_table(autotune_pytester, 'autotune_strict = "true"')
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        ["ERROR: *pyproject.toml: config option 'autotune_strict' expects a bool, got str: 'true'"]
    )
    assert "Traceback" not in result.stderr.str()


TIGHT_TEST = """
import pytest
from conftest import spin, slowdown

def fast(n):
    spin(100e-6 * slowdown("fast"))

def slow(n):
    spin(300e-6)

@pytest.mark.autotune(candidates=[fast, slow], check_output=False)
@pytest.mark.parametrize("n", [1])
def test_tight(candidate, n):
    candidate(n)
"""


@pytest.mark.parametrize(
    "ini",
    [
        pytest.param(("pytest.ini", "[pytest]\nautotune_max_regression = 0.05\n"), id="ini"),
        pytest.param(
            ("pyproject.toml", "[tool.pytest]\nautotune_max_regression = 0.05\n"),
            id="native-toml",
            marks=NATIVE_TOML,
        ),
        pytest.param(
            ("pyproject.toml", '[tool.pytest.ini_options]\nautotune_max_regression = "0.05"\n'),
            id="ini-options",
        ),
    ],
)
def test_the_gates_tolerance_set_in_the_ini_file_judges_every_group(
    autotune_pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, ini: tuple[str, str]
) -> None:
    # A project that keeps its pytest settings in one file sets the tolerance there, as it
    # sets `autotune_strict`: the key was unknown (a warning, an error under
    # `filterwarnings = error`) and the 20% slowdown passed against the default 10%.
    name, text = ini
    (autotune_pytester.path / "tox.ini").unlink()  # the fixture's ini, found after this one
    filterwarnings = (
        'filterwarnings = ["error"]\n' if "toml" in name else "filterwarnings = error\n"
    )
    header, rest = text.split("\n", 1)
    (autotune_pytester.path / name).write_text(f"{header}\n{filterwarnings}{rest}")
    autotune_pytester.makepyfile(test_tight=TIGHT_TEST)
    assert run(autotune_pytester, "--autotune-update").ret == pytest.ExitCode.OK
    monkeypatch.setenv("SLOWDOWN_FAST", "1.2")
    gated = run(autotune_pytester, "--autotune")
    assert gated.ret == pytest.ExitCode.TESTS_FAILED, gated.stdout.str() + gated.stderr.str()
    gated.stdout.fnmatch_lines(["*regression of +2*tolerated 5.0%; measured 3 times: +2*"])


SHOW_BENCH = """
from pytest_autotune.fixture import SESSION

def pytest_sessionstart(session):
    s = session.config.stash[SESSION].settings
    bench = s.engine.bench
    print("BENCH", bench.adaptive, bench.short_circuit, bench.min_samples, s.engine.max_regression)
"""


@pytest.mark.parametrize(
    ("name", "text"),
    [
        pytest.param(
            "pytest.ini",
            "[pytest]\nautotune_adaptive = false\nautotune_short_circuit = false\n"
            "autotune_min_samples = 4\nautotune_max_regression = 0.05\n",
            id="ini",
        ),
        pytest.param(
            "pyproject.toml",
            '[tool.pytest.ini_options]\nautotune_adaptive = "false"\n'
            'autotune_short_circuit = "false"\nautotune_min_samples = "4"\n'
            'autotune_max_regression = "0.05"\n',
            id="ini-options",
        ),
        pytest.param(
            "pyproject.toml",
            "[tool.pytest]\nautotune_adaptive = false\nautotune_short_circuit = false\n"
            "autotune_min_samples = 4\nautotune_max_regression = 0.05\n",
            id="native-toml",
            marks=NATIVE_TOML,
        ),
    ],
)
def test_a_setting_whose_default_is_true_is_turned_off_in_the_ini_file(
    autotune_pytester: pytest.Pytester, name: str, text: str
) -> None:
    # An unset bool key read as False, and False as unset: `autotune_adaptive = false`
    # left the adaptive schedule on.
    (autotune_pytester.path / "tox.ini").unlink()  # the fixture's ini, found after this one
    (autotune_pytester.path / name).write_text(text)
    (autotune_pytester.path / "conftest.py").write_text(
        (autotune_pytester.path / "conftest.py").read_text() + SHOW_BENCH
    )
    autotune_pytester.makepyfile(test_x="def test_x():\n    pass\n")
    result = run(autotune_pytester, "-s", "-W", "error")
    assert result.ret == pytest.ExitCode.OK, result.stdout.str() + result.stderr.str()
    result.stdout.fnmatch_lines(["BENCH False False 4 0.05"])


TWO_MARKERS = """
import numpy as np
import pytest

def exact(n):
    return np.full(n, 1.0)

def off(n):
    return np.full(n, 1.0 + 1e-6)

@pytest.mark.autotune(candidates=[exact, off], rtol=1e-3)
@pytest.mark.parametrize("n", [1, 2, 3, 4, 5])
def test_loose(candidate, n):
    return candidate(n)

@pytest.mark.autotune(candidates=[exact, off], rtol=1e-9)
@pytest.mark.parametrize("n", [1, 2, 3, 4, 5])
def test_tight(candidate, n):
    return candidate(n)
"""


def test_a_markers_settings_are_resolved_once_for_all_its_tests(
    autotune_pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Every test of a plain run asked for its marker's settings three times, each time
    # parsing every setting again: the largest part of what the plugin added to a call.
    resolved: list[object] = []
    resolve = plugin_settings.settings_from_layers

    def counted(layers: Any, rootpath: Path, invocation_dir: Path) -> Any:
        if layers[0][0] == plugin_settings.MARKER:
            resolved.append(layers[0][1])
        return resolve(layers, rootpath, invocation_dir)

    monkeypatch.setattr(plugin_settings, "settings_from_layers", counted)
    autotune_pytester.makepyfile(test_markers=TWO_MARKERS)
    result = run(autotune_pytester)
    # Each marker's own tolerance still judges its tests: `off` passes only the loose one.
    result.assert_outcomes(passed=15, failed=5)
    result.stdout.fnmatch_lines(["FAILED *test_tight[[]off-1[]]*"])
    assert resolved == [{"rtol": 1e-3}, {"rtol": 1e-9}]
