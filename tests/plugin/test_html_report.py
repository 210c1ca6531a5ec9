"""`--autotune-html`: the report a run writes, the same report re-rendered from its records,
and the page as headless Chromium renders it."""

from __future__ import annotations

import shutil
import struct
import subprocess
from pathlib import Path

import pytest

from pytest_autotune.cli import main
from pytest_autotune.report.html import render_html
from pytest_autotune.tune.log import read_records
from tests.plugin.harness import run

SCRIPT_NAME = "<script>alert(1)</script>"

TESTS = """
import pytest
from conftest import spin
from pytest_autotune import Work

def slow(n):
    spin(300e-6)
    return n * 2

def fast(n):
    spin(100e-6)
    return n * 2

def medium(n):
    spin(150e-6)
    return n * 2

def script_named(n):
    raise RuntimeError("boom <b>not bold</b>")

@pytest.mark.autotune(
    candidates={
        "slow": slow, "fast": fast, "medium": medium, "<script>alert(1)</script>": script_named
    },
    work=lambda n: Work(compute_ops=1e4, bytes=1e5),
)
@pytest.mark.parametrize("n", [1, 2])
def test_scale(candidate, n):
    return candidate(n)
"""

CHROMIUM = next(
    (
        found
        for name in ("chromium", "chromium-browser", "google-chrome")
        if (found := shutil.which(name))
    ),
    None,
)
"""Debian's package names it chromium; Ubuntu's chromium-browser; GitHub's runners ship Chrome."""

CHROMIUM_FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--window-size=1280,2000",
)


@pytest.fixture
def report(autotune_pytester: pytest.Pytester) -> tuple[Path, Path]:
    """A tuned run that wrote its records and its report: (records, report)."""
    autotune_pytester.makepyfile(test_scale=TESTS)
    result = run(
        autotune_pytester,
        "--autotune",
        "--autotune-record=out/records.jsonl",
        "--autotune-html=out/report.html",
    )
    # The script-named candidate raises, so its two items fail by name; the rest pass.
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.assert_outcomes(passed=6, failed=2)
    return autotune_pytester.path / "out/records.jsonl", autotune_pytester.path / "out/report.html"


def test_the_report_of_a_run_is_rendered_again_from_its_records(
    report: tuple[Path, Path], tmp_path: Path
) -> None:
    records, html = report
    written = html.read_text(encoding="utf-8")
    assert render_html(read_records(records)) == written
    again = tmp_path / "again.html"
    assert main(["report", str(records), "-o", str(again)]) == 0
    assert again.read_text(encoding="utf-8") == written


def test_the_report_carries_the_run_the_groups_and_both_charts(report: tuple[Path, Path]) -> None:
    _, html = report
    text = html.read_text(encoding="utf-8")
    assert "cpu-fake-1t" in text and "1.00 GB/s" in text
    assert text.count('<svg class="chart bars"') == 2
    assert text.count('<svg class="chart roofline"') == 2
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in text
    assert "boom &lt;b&gt;not bold&lt;/b&gt;" in text


def chromium(*args: str, profile: Path) -> subprocess.CompletedProcess[str]:
    assert CHROMIUM is not None
    return subprocess.run(
        [CHROMIUM, *CHROMIUM_FLAGS, f"--user-data-dir={profile}", *args],
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )


@pytest.mark.skipif(CHROMIUM is None, reason="no chromium (or chrome) binary on PATH")
def test_chromium_renders_the_charts_and_tables_and_shows_the_script_name_as_text(
    report: tuple[Path, Path], tmp_path: Path
) -> None:
    _, html = report
    url = html.resolve().as_uri()
    dumped = chromium("--dump-dom", url, profile=tmp_path / "profile")
    assert dumped.returncode == 0, dumped.stderr[-2000:]
    dom = dumped.stdout
    assert dom.count('<svg class="chart roofline"') == 2
    assert dom.count('<svg class="chart bars"') == 2
    assert '<table class="summary sortable">' in dom
    assert dom.count('<table class="candidates sortable">') == 2
    # The report's own script ran (the policy admits it by its hash): it wrote this count.
    assert "2 of 2 decisions shown" in dom
    # The candidate named like a script is text in the page, and no script but ours exists.
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in dom
    assert dom.count("<script") == 1
    assert "<b>not bold</b>" not in dom

    screenshot = tmp_path / "report.png"
    shot = chromium(f"--screenshot={screenshot}", url, profile=tmp_path / "profile")
    assert shot.returncode == 0, shot.stderr[-2000:]
    png = screenshot.read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", png[16:24])
    assert (width, height) == (1280, 2000)
    assert len(png) > 50_000, "a blank page compresses to a few kB"
