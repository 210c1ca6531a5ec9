"""`--autotune-html`: the report a run writes, the same report re-rendered from its records,
and the page as headless Chromium renders it."""

from __future__ import annotations

import html as htmllib
import json
import re
import shutil
import struct
import subprocess
from pathlib import Path
from typing import Any

import pytest

from pytest_autotune.cli import main
from pytest_autotune.report.html import render_html, write_html
from pytest_autotune.tune.records import read_records
from tests.plugin.harness import run
from tests.plugin.test_tune_mode import SCALE_TESTS

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
    assert text.count('<svg class="chart roofline"') == 1  # one per device, both winners on it
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
    assert dom.count('<svg class="chart roofline"') == 1
    assert dom.count('<svg class="chart bars"') == 2
    assert dom.count('<table class="candidates sortable">') == 2
    # The report's own script ran (the policy admits it by its hash): it wrote this count.
    assert "2 of 2 groups shown" in dom
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


PROBE = """<script>
window.addEventListener("load", function () {
  var width = document.documentElement.clientWidth;
  var wide = [];
  document.querySelectorAll("body *").forEach(function (element) {
    var box = element.getBoundingClientRect();
    var clipped = element.parentElement && element.parentElement.closest(".scroll");
    if (box.width > 0 && box.right > width + 1 && !clipped) {
      wide.push(element.tagName.toLowerCase() + " " + (element.getAttribute("class") || ""));
    }
  });
  var cards = Array.prototype.map.call(
    document.querySelectorAll("details.decision"),
    function (card) {
      return [card.dataset.failed, card.open, Math.round(card.getBoundingClientRect().height)];
    }
  );
  var roofline = document.querySelector("svg.chart.roofline");
  parent.postMessage(JSON.stringify({
    width: width, scroll: document.documentElement.scrollWidth, wide: wide, cards: cards,
    height: document.documentElement.scrollHeight,
    roofline: roofline ? Math.round(roofline.getBoundingClientRect().width) : null
  }), "*");
});
</script>"""
"""Measures the laid-out page: which elements reach past the viewport's right edge (a
table inside its own scrolling box may; the box may not), each card's state, and the width
the device's roofline is drawn at."""

FRAME = """<!DOCTYPE html><html><body style="margin:0">
<iframe src="{src}" style="width:{width}px;height:1200px;border:0"></iframe>
<script>
window.addEventListener("message", function (event) {{
  document.body.setAttribute("data-probe", event.data);
}});
</script></body></html>"""
"""The page in a frame of the width under test: headless Chromium keeps its window at least
500 pixels wide, a frame can be as narrow as a phone."""


def layout(html: Path, width: int, profile: Path) -> dict[str, Any]:
    """The probe's findings for `html` in a window `width` pixels wide. The probe runs in a
    copy without the page's policy, which would (rightly) refuse it."""
    page = html.read_text(encoding="utf-8")
    page = re.sub(r'<meta http-equiv="Content-Security-Policy"[^>]*>', "", page)
    probed = html.with_name(f"probe-{width}.html")
    probed.write_text(page.replace("</body>", PROBE + "</body>"), encoding="utf-8")
    frame = html.with_name(f"frame-{width}.html")
    frame.write_text(FRAME.format(src=probed.name, width=width), encoding="utf-8")
    flags = [f for f in CHROMIUM_FLAGS if not f.startswith("--window-size")]
    assert CHROMIUM is not None
    dumped = subprocess.run(
        [
            CHROMIUM,
            *flags,
            f"--window-size={width + 200},1400",
            f"--user-data-dir={profile}",
            "--allow-file-access-from-files",
            "--virtual-time-budget=5000",
            "--dump-dom",
            frame.resolve().as_uri(),
        ],
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    assert dumped.returncode == 0, dumped.stderr[-2000:]
    found = re.search(r'data-probe="([^"]*)"', dumped.stdout)
    assert found is not None, "the probe did not run"
    return json.loads(htmllib.unescape(found.group(1)))


@pytest.mark.skipif(CHROMIUM is None, reason="no chromium (or chrome) binary on PATH")
@pytest.mark.parametrize("width", [1400, 420])
def test_at_desktop_and_phone_width_nothing_overflows_and_only_failures_are_open(
    tmp_path: Path, width: int
) -> None:
    from tests.unit.test_html import local_record, saxpy_record, sum_record

    html = tmp_path / "report.html"
    write_html(html, [sum_record(), local_record(), saxpy_record()])
    found = layout(html, width, tmp_path / "profile")
    assert found["wide"] == [] and found["scroll"] <= found["width"], found
    # The failing group first and open; the passing ones one collapsed line each.
    states = [(failed, is_open) for failed, is_open, _ in found["cards"]]
    assert states == [("true", True), ("false", False), ("false", False)]
    assert all(height < 180 for _, _, height in found["cards"][1:]), found["cards"]


def test_the_report_names_the_roof_a_winner_reached_as_the_terminal_does(
    autotune_pytester: pytest.Pytester,
) -> None:
    autotune_pytester.makepyfile(test_scale=SCALE_TESTS)
    result = run(autotune_pytester, "--autotune", "--autotune-html=r.html")
    rows = [line for line in result.outlines if line.startswith("test_scale.py::")]
    terminal = [row.split()[5:7] for row in rows if "(winner" not in row]
    html = (autotune_pytester.path / "r.html").read_text(encoding="utf-8")
    cells = re.findall(r'<span class="cell roof">.*?</svg> ([^<]*)</span>', html)
    assert [cell.split() for cell in cells] == terminal
    assert all(roof == "DRAM" for _, roof in terminal)


HINT_PROBE = """<script>
var hints = [];
document.querySelectorAll("details.decision").forEach(function (card) { card.open = true; });
document.querySelectorAll(".facts dd.hint").forEach(function (hint) {
  hints.push([hint.dataset.term, getComputedStyle(hint, "::before").content, hint.offsetHeight]);
});
document.body.setAttribute("data-probe", JSON.stringify(hints));
</script>"""
"""What the browser shows under each fact of each card, opened: the hint's drawn text."""


@pytest.mark.skipif(CHROMIUM is None, reason="no chromium (or chrome) binary on PATH")
def test_chromium_shows_each_terms_explanation_under_every_fact_without_the_pages_script(
    tmp_path: Path,
) -> None:
    # Each explanation is written once, in the style, not in each card: the browser still
    # draws it under every fact, with the page's own script removed (JavaScript off).
    from pytest_autotune.report.html import TERMS
    from tests.unit.test_html import saxpy_record, sum_record

    page = render_html([saxpy_record(), sum_record()])
    page = re.sub(r'<meta http-equiv="Content-Security-Policy"[^>]*>', "", page)
    page = re.sub(r"<script>.*?</script>", "", page, flags=re.S)
    probed = tmp_path / "hints.html"
    probed.write_text(page.replace("</body>", HINT_PROBE + "</body>"), encoding="utf-8")
    dumped = chromium("--dump-dom", probed.resolve().as_uri(), profile=tmp_path / "profile")
    assert dumped.returncode == 0, dumped.stderr[-2000:]
    found = re.search(r'data-probe="([^"]*)"', dumped.stdout)
    assert found is not None, "the probe did not run"
    shown = json.loads(htmllib.unescape(found.group(1)))
    expected = [[term.replace(" ", "-"), json.dumps(meaning)] for term, meaning in TERMS.items()]
    assert [[term, content] for term, content, _ in shown] == expected * 2
    assert all(height > 0 for _, _, height in shown)


LABEL_PROBE = """<!DOCTYPE html><html><head><meta charset="utf-8"><style>{css}</style></head>
<body><main>{charts}</main><script>
var left = [];
document.querySelectorAll("svg.chart text.label").forEach(function (label) {{
  left.push([label.textContent, Math.round(label.getBBox().x * 10) / 10]);
}});
document.body.setAttribute("data-probe", JSON.stringify(left));
</script></body></html>"""
"""Bar charts in the report's own style, and where each label's drawn text starts."""


@pytest.mark.skipif(CHROMIUM is None, reason="no chromium (or chrome) binary on PATH")
def test_a_candidates_label_starts_inside_its_bar_chart(tmp_path: Path) -> None:
    # The label column was sized at 7 px a character: "boom2", or a name with an m or a w,
    # runs wider in the report's font, and its first letter was drawn left of the chart.
    from importlib.resources import files

    from pytest_autotune.report.svg.bars import Bar, bar_chart
    from pytest_autotune.tune.log import format_duration

    names = ["boom2", "mmmmmm", "WWMM_wide", "sum_m", "累加", "x" * 80, "m" * 80]
    charts = "".join(
        str(bar_chart([Bar(name, 1e-6, highlight=bold)], format_value=format_duration, title=name))
        for name in names
        for bold in (False, True)
    )
    css = files("pytest_autotune.report").joinpath("templates/report.css").read_text("utf-8")
    page = tmp_path / "labels.html"
    page.write_text(LABEL_PROBE.format(css=css, charts=charts), encoding="utf-8")
    dumped = chromium("--dump-dom", page.resolve().as_uri(), profile=tmp_path / "profile")
    assert dumped.returncode == 0, dumped.stderr[-2000:]
    found = re.search(r'data-probe="([^"]*)"', dumped.stdout)
    assert found is not None, "the probe did not run"
    starts = json.loads(htmllib.unescape(found.group(1)))
    assert len(starts) == 2 * len(names)
    assert [(text, x) for text, x in starts if x < 0] == []


@pytest.mark.skipif(CHROMIUM is None, reason="no chromium (or chrome) binary on PATH")
def test_a_sortable_columns_explanation_stays_its_tooltip_once_the_script_has_run(
    tmp_path: Path,
) -> None:
    # The sorting script set each header's title to "sort by <name>", replacing what the
    # column means ("median over the fastest candidate's median") with nothing new.
    from tests.unit.test_html import saxpy_record

    page = tmp_path / "report.html"
    page.write_text(render_html([saxpy_record()]), encoding="utf-8")
    dumped = chromium("--dump-dom", page.resolve().as_uri(), profile=tmp_path / "profile")
    assert dumped.returncode == 0, dumped.stderr[-2000:]
    titles = [
        htmllib.unescape(title)
        for title in re.findall(r'<th scope="col"[^>]*title="([^"]*)"', dumped.stdout)
    ]
    assert "median over the fastest candidate's median; click to sort" in titles
    assert "candidate: click to sort" in titles


@pytest.mark.skipif(CHROMIUM is None, reason="no chromium (or chrome) binary on PATH")
def test_at_a_narrow_width_the_roofline_goes_under_the_peaks_at_a_readable_size(
    tmp_path: Path,
) -> None:
    # Beside the 280-pixel table of peaks until 640 pixels, a 700-pixel window drew the
    # 640-unit roofline 300 pixels wide, its 11-pixel labels at 5 pixels: unreadable.
    from tests.unit.test_html import saxpy_record, sum_record

    html = tmp_path / "report.html"
    write_html(html, [sum_record(), saxpy_record()])
    found = layout(html, 700, tmp_path / "profile")
    assert found["wide"] == [] and found["scroll"] <= found["width"], found
    assert found["roofline"] >= 480, found


@pytest.mark.skipif(CHROMIUM is None, reason="no chromium (or chrome) binary on PATH")
def test_the_filter_shows_only_where_the_script_runs_that_makes_it_work(tmp_path: Path) -> None:
    # With JavaScript off the page showed a filter box and a "failures only" box that did
    # nothing when typed in or ticked.
    from tests.unit.test_html import saxpy_record

    written = render_html([saxpy_record()])
    assert re.search(r'<div class="controls"[^>]* hidden>', written)
    page = tmp_path / "report.html"
    page.write_text(written, encoding="utf-8")
    dumped = chromium("--dump-dom", page.resolve().as_uri(), profile=tmp_path / "profile")
    assert dumped.returncode == 0, dumped.stderr[-2000:]
    controls = re.search(r'<div class="controls"[^>]*>', dumped.stdout)
    assert controls is not None and "hidden" not in controls.group(0)
    assert "1 of 1 groups shown" in dumped.stdout
