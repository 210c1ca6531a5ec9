"""The HTML report rendered from records: what it shows, what it escapes, what it survives."""

from __future__ import annotations

import base64
import dataclasses
import functools
import hashlib
import re
from dataclasses import replace
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest
from markupsafe import escape

from pytest_autotune.backends.peaks import Peaks
from pytest_autotune.gate import Comparison
from pytest_autotune.report.html import TERMS, key_text, render_html, run_view, write_html
from pytest_autotune.tune.records import AutotuneRecord, RecordError
from tests.fakes import texts_read_while_written

GPU = "cuda-nvidia-h200"
SCRIPT_NAME = "<script>alert(1)</script>"
N = 1 << 26
PEAKS = Peaks(
    memory={"copy": 4.28e12, "read": 4.43e12, "write": 4.1e12},
    compute={"fp32": 63e12, "fp16": 779e12},
)
DEVICE = {
    "id": GPU,
    "fingerprint": {"driver": "560.35", "cuda": "12.6", "clocks": {"sm": 1980}},
    "peaks": PEAKS.to_json(),
}


def samples(name: str, index: int, us: float, n: int = 8) -> dict[str, Any]:
    """A measured candidate: `n` samples within 2% of `us` microseconds."""
    return {
        "name": name,
        "index": index,
        "samples_ns": [round(us * 1e3 * (1 + 0.01 * ((k * 7) % 5 - 2))) for k in range(n)],
        "dropped_first": True,
    }


def failed(name: str, index: int, message: str) -> dict[str, Any]:
    return {"name": name, "index": index, "error": {"kind": "unknown", "message": message}}


def check(name: str, passed: bool = True, message: str = "") -> dict[str, Any]:
    return {"name": name, "passed": passed, "message": message, "skipped": False}


def saxpy_record(**extra: Any) -> AutotuneRecord:
    """A regression on the H200, as the plugin records it: every extra present, a candidate
    that fails its check, and one named like a script that raised."""
    return AutotuneRecord(
        tuner="example_kernels/test_saxpy.py::test_saxpy",
        device_id=GPU,
        key="n67108864",
        checksum="c1",
        fastest_index=2,
        fastest_name="float4",
        results=(
            samples("block32", 0, 1700),
            samples("block256", 1, 260),
            samples("float4", 2, 189),
            samples("cupy_ops", 3, 410),
            failed(SCRIPT_NAME, 4, "RuntimeError: boom\n  at line 3\n<b>bold</b>"),
        ),
        bounds={
            "bounds": [
                {"resource": "compute", "amount": 2 * N, "threshold": 1.0, "peak": 63e12},
                {"resource": "memory", "amount": 12 * N, "threshold": 1.0, "peak": 4.43e12},
            ],
            "launch_overhead_ns": 7000,
        },
        time_limit=189e-6,
        events=(
            {
                "event": "tuning_step",
                "batch": 0,
                "indices": [0, 1, 2, 3, 4],
                "duration_ns": 70_000_000,
            },
        ),
        checks=(
            check("block32", message="reference"),
            check("block256"),
            check("float4"),
            check("cupy_ops", False, "max abs error 0.5 at index 12\nexpected 1.0, got 1.5"),
        ),
        duration_ns=70_000_000,
        extra={
            "group": "example_kernels/test_saxpy.py::test_saxpy",
            "verdict": "regression",
            "message": "regression of +12.0% [+6.1%, +18.2%]: median 212 us against 189 us",
            "fraction_of_roof": 0.89,
            "comparison": Comparison(0.12, 0.061, 0.182, True).to_json(),
            "winner_samples_ns": [212_000 + 100 * k for k in range(50)],
            "device": DEVICE,
            "work": {"compute_ops": 2 * N, "bytes": 12 * N},
            **extra,
        },
    )


def sum_record() -> AutotuneRecord:
    """A passing group on the same device."""
    return AutotuneRecord(
        tuner="example_kernels/test_sum.py::test_sum",
        device_id=GPU,
        key="n4194304",
        checksum="c2",
        fastest_index=0,
        fastest_name="pairwise",
        results=(samples("pairwise", 0, 5.1), samples("dot", 1, 9.8)),
        extra={
            "group": "example_kernels/test_sum.py::test_sum",
            "verdict": "pass",
            "message": "",
            "fraction_of_roof": 0.84,
            "comparison": Comparison(-0.01, -0.05, 0.035, False).to_json(),
            "winner_samples_ns": [5050 + k for k in range(40)],
            "device": DEVICE,
            "work": {"compute_ops": 1 << 22, "bytes": 4 << 22},
        },
    )


def local_record() -> AutotuneRecord:
    """What a `LocalTuner` writes outside pytest: no extras at all, a dataclass key."""
    return AutotuneRecord(
        tuner="mylib-sum",
        device_id="cpu-amd-epyc-7b13-2t",
        key={"n": 1024, "dtype": "float32"},
        checksum="c3",
        fastest_index=1,
        fastest_name="blocked",
        results=(samples("pairwise", 0, 2.0, 4), samples("blocked", 1, 1.5, 4)),
    )


def realistic_records() -> list[AutotuneRecord]:
    return [saxpy_record(), local_record(), sum_record()]


class Elements(HTMLParser):
    """Tags and text of a document, to assert on structure rather than on substrings."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def parse(document: str) -> Elements:
    parser = Elements()
    parser.feed(document)
    return parser


_HINT_RULE = re.compile(
    r'dd\.hint\[data-term="([^"]+)"\]::before \{ content: "((?:[^"\\]|\\.)*)"; \}'
)


def body(document: str) -> str:
    """The document after its style."""
    return document.split("</style>", 1)[1]


def hint_explanations(page: Elements) -> dict[str, str]:
    """The text the page's style shows under each fact's hint, by its term, CSS escapes
    read (a browser's reading is the test in tests/plugin/test_html_report.py)."""
    (style,) = [text for text in page.text if "::before" in text]
    return {
        term: re.sub(r"\\([0-9a-f]{1,6}) ?", lambda m: chr(int(m.group(1), 16)), content)
        for term, content in _HINT_RULE.findall(style)
    }


def test_the_report_shows_the_run_then_each_group_with_its_candidates_and_charts() -> None:
    document = render_html(realistic_records())
    page = parse(document)
    text = " ".join(page.text)
    assert GPU in text and "4.43 TB/s" in text and "63.0 Top/s" in text
    assert "560.35" in text  # the fingerprint
    cards = [a for tag, a in page.tags if tag == "details" and "decision" in (a.get("class") or "")]
    assert len(cards) == 3
    svgs = [a.get("class") for tag, a in page.tags if tag == "svg"]
    # Each group: its bars; saxpy and sum: an interval and a roof bar; one roofline per device
    # with both GPU winners on it (the LocalTuner record states no work).
    assert svgs.count("chart bars") == 3
    assert svgs.count("chart interval-chart") == 2
    assert svgs.count("chart fraction") == 2
    assert svgs.count("chart roofline") == 1
    assert "+12.0% [+6.1%, +18.2%]" in text
    assert "REGRESSION" in text and "pass" in text
    assert "max abs error 0.5 at index 12\nexpected 1.0, got 1.5" in text  # the check, in full
    # The error, in full, said to be raised (its kind, "unknown", says nothing to a reader).
    assert "raised RuntimeError: boom\n  at line 3\n<b>bold</b>" in text
    assert "unknown: RuntimeError" not in text
    assert "214 us" in text  # the winner's precise median, not its tuning one
    assert "89.0%" in text


def test_only_a_candidate_that_raised_has_its_error_said_to_be_raised() -> None:
    # A failed check and a stop at the time limit are errors of kind "unknown" too, but
    # nothing raised them: "raised failed its check: ..." read as an exception of that name.
    record = replace(
        saxpy_record(),
        results=(
            samples("block32", 0, 1700),
            failed("block256", 1, "failed its check: differs from the reference 'block32'"),
            failed("float4", 2, "ran past its time limit of 1 s and was stopped"),
            failed("cupy_ops", 3, "ValueError: "),
            failed(SCRIPT_NAME, 4, "raised KeyError: 'n'"),
        ),
    )
    text = " ".join(parse(render_html([record])).text)
    assert "raised failed" not in text and "raised ran past" not in text
    assert "failed its check: differs from the reference 'block32'" in text
    assert "ran past its time limit of 1 s and was stopped" in text
    assert "raised ValueError:" in text
    assert "raised KeyError: 'n'" in text and "raised raised" not in text


def test_a_candidate_named_like_a_script_is_text_and_only_our_script_is_a_script() -> None:
    document = render_html(realistic_records())
    page = parse(document)
    assert [tag for tag, _ in page.tags].count("script") == 1
    assert not any(tag == "b" for tag, _ in page.tags)
    assert SCRIPT_NAME in " ".join(page.text)
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in document


def test_the_content_security_policy_admits_exactly_the_inline_script() -> None:
    document = render_html(realistic_records())
    policy = re.search(r'http-equiv="Content-Security-Policy" content="([^"]+)"', document)
    assert policy is not None
    script = re.search(r"<script>(.*?)</script>", document, re.DOTALL)
    assert script is not None
    digest = base64.b64encode(hashlib.sha256(script.group(1).encode()).digest()).decode()
    assert f"script-src 'sha256-{digest}'" in policy.group(1)
    assert "default-src 'none'" in policy.group(1)


def test_the_report_loads_nothing_from_anywhere() -> None:
    document = render_html(realistic_records())
    for tag, attrs in parse(document).tags:
        assert "src" not in attrs, tag
        assert tag != "link"
    assert "http://" not in document.replace("http://www.w3.org/2000/svg", "")
    assert "https://" not in document


def test_records_without_the_plugins_extras_show_a_dash() -> None:
    view = run_view([local_record()], title="t")
    (decision,) = view.decisions
    assert decision.group == "mylib-sum"
    assert decision.key == '{"dtype":"float32","n":1024}'
    assert (decision.verdict, decision.delta, decision.roof, decision.work) == ("-",) * 4
    assert decision.winner == "blocked"
    assert decision.median == "1.50 us"  # the winner's tuning samples stand in
    assert decision.roof_bar is None and decision.point is None
    assert view.devices[0].id == "cpu-amd-epyc-7b13-2t"
    assert view.devices[0].roofline is None and "mylib-sum" in view.devices[0].roofline_note
    assert view.devices[0].threads == "-"
    assert ("no verdict", 1, "none") in view.counts
    render_html([local_record()])


def test_a_record_without_work_extras_takes_its_roofline_from_its_bounds() -> None:
    record = saxpy_record(work=None, device=None)
    view = run_view([record], title="t")
    (decision,) = view.decisions
    assert decision.point is not None and view.devices[0].roofline is not None
    assert decision.roofs == "memory 4.43 TB/s, compute 63.0 Top/s"


def test_work_without_compute_has_no_roofline_but_a_fraction_of_roof() -> None:
    record = saxpy_record(work={"compute_ops": 0, "bytes": 12 * N})
    view = run_view([record], title="t")
    (decision,) = view.decisions
    assert view.devices[0].roofline is None
    assert "test_saxpy [n67108864]" in view.devices[0].roofline_note
    assert decision.roof_bar is not None
    float4 = next(c for c in decision.candidates if c.name == "float4")
    assert float4.roof != "-"


def test_the_winner_is_marked_and_failed_candidates_keep_their_index() -> None:
    (decision,) = run_view([saxpy_record()], title="t").decisions
    assert [(c.index, c.name, c.winner) for c in decision.candidates] == [
        (0, "block32", False),
        (1, "block256", False),
        (2, "float4", True),
        (3, "cupy_ops", False),
        (4, SCRIPT_NAME, False),
    ]
    by_name = {c.name: c for c in decision.candidates}
    assert by_name["block32"].check == "reference"
    assert by_name["cupy_ops"].check == "FAILED"
    assert by_name[SCRIPT_NAME].median == "-" and by_name[SCRIPT_NAME].check == "-"
    assert by_name["float4"].spread.count("us") == 2  # min - max


def test_groups_are_ordered_by_group_and_key_and_counted() -> None:
    view = run_view(realistic_records(), title="t")
    assert [d.group for d in view.decisions] == [
        "example_kernels/test_saxpy.py::test_saxpy",
        "example_kernels/test_sum.py::test_sum",
        "mylib-sum",
    ]
    counts = {label: n for label, n, _ in view.counts}
    assert counts["decisions"] == 3
    assert (counts["passed"], counts["failed"], counts["regression"]) == (1, 1, 1)


def test_only_groups_that_passed_the_gate_are_counted_as_passed() -> None:
    # The gate says "too noisy" rather than passing, and an update judges nothing: the
    # tally must not call them passed, as the terminal's "verdicts:" line does not.
    noisy = saxpy_record(verdict="too noisy", failed=False)
    updated = saxpy_record(verdict="updated", failed=False, comparison=None, group="t::u")
    counts = {label: n for label, n, _ in run_view([noisy, updated], title="t").counts}
    assert (counts["passed"], counts["failed"]) == (0, 0)
    assert (counts["too noisy"], counts["updated"]) == (1, 1)


def test_an_explicit_failed_flag_wins_over_the_verdict() -> None:
    strict = saxpy_record(verdict="no baseline", comparison=None, failed=True)
    (decision,) = run_view([strict], title="t").decisions
    assert decision.failed and decision.verdict_class == "verdict-no-baseline"
    assert decision.verdict_shown == "NO BASELINE"


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ({"verdict": 3}, "extra 'verdict' has the wrong type"),
        ({"comparison": {"delta": 0.1}}, "extra 'comparison' does not read"),
        ({"work": {"bytes": 1.0}}, "extra 'work' does not read"),
        ({"device": {"id": GPU, "peaks": {"memory_bytes_per_s": 1}}}, "extra 'device'"),
        ({"winner_samples_ns": [1, -2]}, "positive integers"),
    ],
)
def test_an_extra_that_does_not_read_names_the_record_and_the_field(
    extra: dict[str, Any], message: str
) -> None:
    with pytest.raises(RecordError, match=re.escape(message)) as info:
        render_html([sum_record(), saxpy_record(**extra)])
    assert "record 2 (example_kernels/test_saxpy.py::test_saxpy, key n67108864)" in str(info.value)


def test_a_result_that_does_not_read_names_the_record() -> None:
    record = AutotuneRecord(
        tuner="t",
        device_id="d",
        key=1,
        checksum="c",
        fastest_index=0,
        fastest_name="a",
        results=({"name": "a", "index": 0},),
    )
    with pytest.raises(RecordError, match=r"record 1 \(t, key 1\): results\[0\]"):
        render_html([record])


def test_an_empty_run_renders() -> None:
    page = parse(render_html([], title="nothing <tuned>"))
    assert "nothing <tuned>" in page.text


def test_an_empty_run_says_nothing_was_tuned_and_shows_no_empty_devices_section() -> None:
    # A gate whose -k matched no autotune test wrote a page of zeros under a "Devices"
    # heading with nothing below it, which read as a broken page, not as an empty run.
    page = parse(render_html([], title="t"))
    text = " ".join(page.text)
    assert "No group was tuned" in text
    assert "Devices" not in text
    assert "Devices" in " ".join(parse(render_html(realistic_records())).text)


def test_write_html_creates_the_folder_and_ends_with_a_newline(tmp_path: Path) -> None:
    target = tmp_path / "out" / "deep" / "report.html"
    write_html(target, realistic_records())
    text = target.read_text(encoding="utf-8")
    assert text.startswith("<!DOCTYPE html>") and text.endswith("</html>\n")


def test_failures_come_first_and_open_and_passing_groups_are_collapsed() -> None:
    noisy = sum_record()
    noisy = AutotuneRecord(
        **{
            **{f: getattr(noisy, f) for f in ("tuner", "device_id", "checksum", "results")},
            "key": "n1",
            "fastest_index": 0,
            "fastest_name": "pairwise",
            "extra": {**noisy.extra, "verdict": "no baseline", "comparison": None},
        }
    )
    document = render_html([sum_record(), noisy, saxpy_record(), local_record()])
    page = parse(document)
    sections = [a["id"] for tag, a in page.tags if tag == "section" and a.get("id")]
    assert sections[:3] == ["failing", "reported", "passing"]
    cards = [a for tag, a in page.tags if tag == "details" and "decision" in (a.get("class") or "")]
    assert [("open" in a, a["data-failed"]) for a in cards] == [
        (True, "true"),
        (False, "false"),
        (False, "false"),
        (False, "false"),
    ]
    assert document.index("test_saxpy") < document.index("test_sum.py::test_sum</span> <span class")


def test_a_group_whose_candidate_failed_its_check_is_open_though_the_gate_passed_it() -> None:
    # Its candidate's test fails the run, and a reader of the report of a red CI job found
    # the group collapsed under "To look at", the wrong output behind a click.
    passing = sum_record()
    wrong = replace(
        passing,
        checks=(check("pairwise", message="reference"), check("dot", False, "max abs error 2")),
        extra={**passing.extra, "expected_failures": []},  # none marked xfail
    )
    page = parse(render_html([wrong, saxpy_record(extra={"verdict": "pass", "message": ""})]))
    cards = {
        a["id"]: "open" in a
        for tag, a in page.tags
        if tag == "details" and "decision" in a["class"]
    }
    (decision,) = [d for d in run_view([wrong], title="t").decisions]
    assert (decision.failed, decision.attention, decision.failed_checks) == (False, True, 1)
    assert sorted(cards.values()) == [True, True]


def test_the_winners_median_is_one_number_in_the_summary_the_card_the_table_and_the_bars() -> None:
    (decision,) = run_view([saxpy_record()], title="t").decisions
    float4 = next(c for c in decision.candidates if c.winner)
    assert decision.median == float4.median == "214 us"
    assert float4.samples == "50 (precise)"
    assert "214 us" in str(decision.bars)
    assert float4.relative == "1.00x"


def test_a_regression_shows_the_raw_change_beside_the_gates_scaled_one_and_both_sample_sets() -> (
    None
):
    baseline = {
        "fastest_name": "float4",
        "device_id": GPU,
        "source": ".autotune/x.json",
        "samples_ns": [190_000 + 50 * k for k in range(20)],
        "calibration": None,
        "sessions": 3,
    }
    (decision,) = run_view([saxpy_record(baseline=baseline)], title="t").decisions
    assert decision.raw_change == "+12.6%"  # 214.45 us against 190.475 us, as measured
    assert decision.delta == "+12.0% [+6.1%, +18.2%]"  # what the gate judged, normalised
    assert decision.strips is not None
    strips = parse(str(decision.strips))
    assert [a["class"] for tag, a in strips.tags if tag == "g"] == ["strip winner", "strip"]
    assert sum(tag == "circle" for tag, _ in strips.tags) == 70
    assert "this run: float4" in strips.text and "baseline: float4" in strips.text


def test_a_verdict_this_version_does_not_know_still_shows_counts_and_sorts() -> None:
    unknown = saxpy_record(verdict="too noisy", failed=False, comparison=None)
    strict = sum_record()
    strict = AutotuneRecord(
        **{
            **{f: getattr(strict, f) for f in ("tuner", "device_id", "key", "checksum", "results")},
            "fastest_index": 0,
            "fastest_name": "pairwise",
            "extra": {**strict.extra, "verdict": "brand <new> kind", "failed": True},
        }
    )
    view = run_view([unknown, strict], title="t")
    assert [(s.id, [d.verdict for d in s.decisions]) for s in view.sections] == [
        ("failing", ["brand <new> kind"]),
        ("reported", ["too noisy"]),
    ]
    assert view.sections[0].decisions[0].verdict_class == "verdict-brand-new-kind"
    counts = {label: n for label, n, _ in view.counts}
    assert (counts["too noisy"], counts["brand <new> kind"], counts["failed"]) == (1, 1, 1)
    assert "BRAND &lt;NEW&gt; KIND" in render_html([unknown, strict])


def test_every_term_is_explained_where_it_is_shown() -> None:
    page = parse(render_html([saxpy_record()]))
    # Each fact's term links to its entry under Terms, and its hint names the term whose
    # explanation the style shows there, visible without hovering (a browser's test:
    # tests/plugin/test_html_report.py).
    links = [a["href"] for tag, a in page.tags if tag == "a" and "#term-" in (a.get("href") or "")]
    hints = [a["data-term"] for tag, a in page.tags if tag == "dd" and a.get("class") == "hint"]
    slugs = [term.replace(" ", "-") for term in TERMS]
    assert links == [f"#term-{slug}" for slug in slugs] and hints == slugs
    assert hint_explanations(page) == dict(zip(slugs, TERMS.values(), strict=True))
    assert {a.get("id") for tag, a in page.tags if tag == "div"} >= {
        f"term-{slug}" for slug in slugs
    }
    for meaning in TERMS.values():
        assert meaning in page.text  # under Terms, as text to select and to find


def test_the_roofline_time_limit_is_not_read_as_the_time_limit_option() -> None:
    # A card read "time limit 1.73 us" beside a 30 us winner, where the README's
    # `time_limit` (default 60 s) is the limit past which a call fails: a first reader took
    # every candidate for one that ran past its limit.
    page = parse(render_html([saxpy_record()]))
    terms = [text for tag, a in page.tags if tag == "a" for text in [a.get("href")] if text]
    assert "#term-roofline-time-limit" in terms and "#term-time-limit" not in terms
    assert "Not the time_limit option" in TERMS["roofline time limit"]


def test_each_explanation_is_written_once_however_many_groups_the_page_shows() -> None:
    # Written into each card twice (a title and a hint line), 14 explanations were 0.77 MB
    # of a 2.34 MB page of 150 groups.
    def page(groups: int) -> str:
        return render_html(
            [replace(sum_record(), key=f"n{n}", fastest_index=n % 2) for n in range(groups)]
        )

    one, many = page(1), page(40)
    for meaning in TERMS.values():
        escaped = str(escape(meaning))  # as the page writes it, under Terms only
        assert body(one).count(escaped) == body(many).count(escaped) == 1
    assert hint_explanations(parse(many)) == hint_explanations(parse(one))
    assert [a["data-term"] for tag, a in parse(many).tags if a.get("class") == "hint"] == [
        term.replace(" ", "-") for term in TERMS
    ] * 40


def test_one_device_roofline_holds_every_groups_winner() -> None:
    view = run_view([saxpy_record(), sum_record()], title="t")
    (device,) = view.devices
    chart = parse(str(device.roofline))
    labels = [t for t in chart.text if t.startswith("test_") and ":" not in t]
    # A long name is cut to fit beside its point; its tooltip holds it whole.
    assert labels == ["test_sum [n4194304]", "test_saxpy [n671088\u2026"]
    assert any(t.startswith("test_saxpy [n67108864]: ") for t in chart.text)


def test_records_of_several_runs_give_one_card_per_group_with_its_trend() -> None:
    from pytest_autotune.tune.run import RunInfo

    first = RunInfo("aaaaaaaaaaaa", "2026-11-01T10:00:00+00:00", "1" * 40, "main")
    second = RunInfo("bbbbbbbbbbbb", "2026-11-02T10:00:00+00:00", "2" * 40, "main")
    failed = {**sum_record().extra, "verdict": "regression", "failed": True}
    records = [replace(sum_record(), run=first, extra=failed), replace(sum_record(), run=second)]
    view = run_view(records, title="t")
    assert [r.failed for r in view.runs] == [1, 0]  # the first run's failure is not hidden
    assert [(r.number, r.label) for r in view.runs] == [
        ("#1", "2026-11-01 10:00:00 11111111"),
        ("#2", "2026-11-02 10:00:00 22222222"),
    ]
    (decision,) = view.decisions
    assert decision.run == "2026-11-02 10:00:00 22222222"
    assert decision.trend is not None
    trend = parse(str(decision.trend))
    assert sum(tag == "circle" for tag, _ in trend.tags) == 2
    assert [t for t in trend.text if t.startswith("#")] == ["#1", "#2"]
    assert "run #1, 2026-11-01 10:00:00 11111111: pairwise 5.07 us" in trend.text


def test_keys_read_as_people_write_them() -> None:
    assert key_text("n1024") == "n1024"
    assert key_text([1, "a"]) == '[1,"a"]'
    assert key_text(7) == "7"


def test_a_record_whose_winner_index_names_another_candidate_marks_no_winner() -> None:
    # Results out of line with the candidates (as written before every candidate had a
    # result): the samples at fastest_index are "pairwise"'s, never shown as "blocked"'s.
    record = dataclasses.replace(
        local_record(), fastest_index=0, results=(samples("pairwise", 0, 2.0, 4),)
    )
    (decision,) = run_view([record], title="t").decisions
    assert decision.winner == "blocked"
    assert decision.median == "-"
    assert not any(c.winner for c in decision.candidates)


def test_each_candidate_shows_its_device_and_enqueue_time_where_the_record_has_them() -> None:
    record = saxpy_record(
        call_costs={"float4": {"device_s": 5.5e-6, "enqueue_s": 17.3e-6}, "block32": {}}
    )
    (decision,) = run_view([record], title="t").decisions
    costs = {c.name: c.costs for c in decision.candidates}
    assert costs["float4"] == "device 5.50 us, enqueue 17.3 us"
    assert costs["block32"] == "" and costs["block256"] == ""


def test_the_roofs_name_the_memory_level_that_bound_the_problem() -> None:
    record = saxpy_record(work=None, device=None)
    bounds = dict(record.bounds or {})
    bounds["bounds"] = [
        dict(b, level="L2") if b["resource"] == "memory" else b for b in bounds["bounds"]
    ]
    (decision,) = run_view([dataclasses.replace(record, bounds=bounds)], title="t").decisions
    assert decision.roofs == "memory (L2) 4.43 TB/s, compute 63.0 Top/s"


def test_a_group_whose_every_candidate_failed_names_no_winner() -> None:
    # The plugin's record of an error verdict: nothing measured, so no fastest candidate,
    # though its `measured` extra names the candidate tuning fell back to.
    record = dataclasses.replace(
        saxpy_record(
            verdict="error",
            failed=True,
            message="every candidate failed",
            comparison=None,
            fraction_of_roof=None,
            winner_samples_ns=[],
            measured="block32",
        ),
        fastest_index=None,
        fastest_name=None,
        results=(failed("block32", 0, "ValueError: nope"), failed("float4", 1, "KeyError")),
    )
    (decision,) = run_view([record], title="t").decisions
    assert decision.winner == "-"
    assert decision.pick_note == ""
    assert not any(c.winner for c in decision.candidates)


def test_only_a_precise_measurement_is_labelled_precise() -> None:
    # A LocalTuner's record has the winner's tuning samples alone: they stand in for the
    # median, but are no precise measurement, which the plugin's records carry.
    (local,) = run_view([local_record()], title="t").decisions
    (plugin,) = run_view([sum_record()], title="t").decisions
    assert [c.samples for c in local.candidates if c.winner] == ["3"]
    assert [c.samples for c in plugin.candidates if c.winner] == ["40 (precise)"]


def test_a_winner_bound_by_a_cache_level_is_drawn_under_that_levels_roof() -> None:
    # Judged against L2 (10 TB/s), a winner streaming 8.4 TB/s would stand above the
    # device's HBM roof (4.43 TB/s), the only memory roof the chart drew.
    from pytest_autotune.tune.peaks import MemoryLevel

    peaks = replace(
        PEAKS, levels=(MemoryLevel("L2", 50 << 20, {"read": 10e12}),), outer_level="HBM"
    )
    record = sum_record()
    record = replace(
        record,
        bounds={
            "bounds": [
                {
                    "resource": "memory",
                    "amount": 4 << 22,
                    "threshold": 1.0,
                    "peak": 10e12,
                    "level": "L2",
                }
            ],
            "launch_overhead_ns": 0,
        },
        extra={
            **record.extra,
            "device": {**DEVICE, "peaks": peaks.to_json()},
            "winner_samples_ns": [2000 + k for k in range(40)],
            "fraction_of_roof": 0.84,
            "roof": "L2",
        },
    )
    (device,) = run_view([record], title="t").devices
    chart = parse(str(device.roofline))
    roofs = [
        a.get("class")
        for tag, a in chart.tags
        if tag == "line" and "roof" in (a.get("class") or "")
    ]
    assert roofs == ["roof memory", "roof level", "roof compute"]
    assert "memory 4.43 TB/s" in chart.text and "L2 10.0 TB/s" in chart.text


def test_the_device_table_lists_each_cache_levels_roof_beside_the_outer_memory() -> None:
    # A group judged against L2 showed "L2 10.0 TB/s" in its card and on the roofline,
    # while the device's table of peaks listed only the outer memory's rates: the roof a
    # card named was nowhere among the device's peaks.
    from pytest_autotune.tune.peaks import MemoryLevel

    peaks = replace(
        PEAKS,
        levels=(
            MemoryLevel("L1", 256 << 10, {"read": 20e12}),
            MemoryLevel("L2", 50 << 20, {"read": 10e12}),
        ),
        outer_level="HBM",
    )
    record = replace(
        sum_record(), extra={**sum_record().extra, "device": {**DEVICE, "peaks": peaks.to_json()}}
    )
    (device,) = run_view([record], title="t").devices
    assert device.levels == (("L1 (262 kB)", "20.0 TB/s"), ("L2 (52.4 MB)", "10.0 TB/s"))
    rows = re.findall(
        r"<tr><td>(memory [^<]*)</td><td class=\"num\">([^<]*)</td></tr>", render_html([record])
    )
    assert ("memory L2 (52.4 MB)", "10.0 TB/s") in rows
    assert ("memory read", "4.43 TB/s") in rows


def test_a_group_on_several_devices_names_its_device_in_each_cards_title() -> None:
    other = replace(sum_record(), device_id="cuda-nvidia-h100")
    other = replace(other, extra={**other.extra, "device": {**DEVICE, "id": "cuda-nvidia-h100"}})
    view = run_view([sum_record(), other, saxpy_record()], title="t")
    shown = {(d.name, d.device_named) for d in view.decisions}
    assert shown == {
        ("example_kernels/test_sum.py::test_sum [n4194304]", True),
        ("example_kernels/test_saxpy.py::test_saxpy [n67108864]", False),
    }
    titles = [
        " ".join(t.split())
        for t in re.findall(
            r'<span class="title">(.*?)</span></span>', render_html([sum_record(), other])
        )
    ]
    assert [re.sub(r"<[^>]+>", "", t) for t in titles] == [
        "example_kernels/test_sum.py::test_sum [n4194304] on cuda-nvidia-h100",
        f"example_kernels/test_sum.py::test_sum [n4194304] on {GPU}",
    ]


def test_the_samples_and_spread_columns_sort_by_their_numbers() -> None:
    # "40 (precise)" sorts below "8" as text, and "962 ns" above "2.67 us": the page's
    # script sorts by each cell's data-sort, which must be the number shown.
    page = render_html([sum_record()])
    rows = re.findall(r'<tr class="winner">(.*?)</tr>', page, re.S)
    cells = re.findall(r"<td([^>]*)>([^<]*)", rows[0])
    shown = {text.strip(): attrs for attrs, text in cells}
    assert 'data-sort="40"' in shown["40 (precise)"]
    spread = next(attrs for text, attrs in shown.items() if "\u2013" in text)
    assert f'data-sort="{5050 / 1e9!r}"' in spread


@pytest.mark.parametrize(("ops", "roof"), [(1 << 30, "compute"), (1, "L1")])
def test_a_local_tuners_record_names_the_roof_its_fraction_is_of(ops: int, roof: str) -> None:
    # No plugin extras: the fraction is computed from the bounds, and must say which roof
    # bound it, as the plugin's records do ("1.3%" beside "memory (L1)" read as L1's).
    record = replace(
        local_record(),
        bounds={
            "bounds": [
                {"resource": "compute", "amount": ops, "threshold": 1.0, "peak": 1e12},
                {
                    "resource": "memory",
                    "amount": 4096,
                    "threshold": 1.0,
                    "peak": 1e11,
                    "level": "L1",
                },
            ],
            "launch_overhead_ns": 0,
        },
    )
    (decision,) = run_view([record], title="t").decisions
    assert decision.roof.endswith(f"% {roof}")


def test_the_tally_of_one_decision_says_decision() -> None:
    counts = run_view([sum_record()], title="t").counts
    assert counts[0] == ("decision", 1, "total")
    assert run_view([sum_record(), saxpy_record()], title="t").counts[0] == (
        "decisions",
        2,
        "total",
    )


def test_the_latest_run_is_the_latest_in_time_whatever_order_the_files_come_in() -> None:
    # `pytest-autotune report *.jsonl` lists files by name: a card must still show the
    # newest run (here the one that failed), and the trend go oldest first.
    from pytest_autotune.tune.run import RunInfo

    older = RunInfo("aaaaaaaaaaaa", "2026-11-01T10:00:00+00:00")
    newer = RunInfo("bbbbbbbbbbbb", "2026-11-02T10:00:00+00:00")
    failed = {**sum_record().extra, "verdict": "regression", "failed": True}
    records = [replace(sum_record(), run=newer, extra=failed), replace(sum_record(), run=older)]
    view = run_view(records, title="t")
    assert [(r.number, r.id) for r in view.runs] == [("#1", older.id), ("#2", newer.id)]
    (decision,) = view.decisions
    assert decision.failed and decision.run == newer.label
    trend = parse(str(decision.trend))
    assert [t for t in trend.text if t.startswith("#")] == ["#1", "#2"]
    assert any(t.startswith(f"run #1, {older.label}") for t in trend.text)


def test_a_passing_group_whose_candidate_failed_its_check_is_to_look_at_unless_xfail() -> None:
    # The gate passed the winner, but a candidate's check failed, so its test failed: the
    # card sat under "Passing" beside a red CI run. Marked xfail, the failure is expected.
    passing = {"verdict": "pass", "comparison": None, "message": ""}
    view = run_view([saxpy_record(**passing, expected_failures=[])], title="t")
    (decision,) = view.decisions
    assert decision.attention and not decision.failed
    assert decision.message == "candidate cupy_ops failed its check: its test fails"
    assert [s.id for s in view.sections] == ["reported"]
    (row,) = [c for c in decision.candidates if c.name == "cupy_ops"]
    assert (row.check, row.check_class) == ("FAILED", "failed")
    for quiet in (saxpy_record(**passing, expected_failures=["cupy_ops"]), saxpy_record(**passing)):
        # Marked xfail; or a record from before the field, which cannot say.
        (decision,) = run_view([quiet], title="t").decisions
        assert not decision.attention
        assert decision.message == ""
    # Its row says the failure is the one its mark expects, in no alarm's colour.
    (decision,) = run_view(
        [saxpy_record(**passing, expected_failures=["cupy_ops"])], title="t"
    ).decisions
    (row,) = [c for c in decision.candidates if c.name == "cupy_ops"]
    assert (row.check, row.check_class) == ("failed (xfail)", "skipped")


def test_the_tally_counts_the_candidates_that_failed_their_checks() -> None:
    # The page of a run that failed on a wrong candidate read "0 failed" at its top.
    passing = {"verdict": "pass", "comparison": None, "message": ""}
    view = run_view([saxpy_record(**passing, expected_failures=[])], title="t")
    counts = {label: n for label, n, _ in view.counts}
    assert (counts["passed"], counts["failed"], counts["failed checks"]) == (1, 0, 1)
    expected = run_view([saxpy_record(**passing, expected_failures=["cupy_ops"])], title="t")
    assert "failed checks" not in {label for label, _, _ in expected.counts}


def test_a_reader_of_the_report_while_a_run_replaces_it_finds_one_whole_report(
    tmp_path: Path,
) -> None:
    # A report written in place was empty, or half of one, to a browser or an artifact
    # upload that read it meanwhile, and two runs writing one path left a mix of both.
    target = tmp_path / "report.html"
    one, three = realistic_records()[:1], realistic_records()
    write_html(target, one)
    whole = set()
    for records in (one, three):
        write_html(tmp_path / "alone.html", records)
        whole.add((tmp_path / "alone.html").read_text(encoding="utf-8"))
    writes = [functools.partial(write_html, target, (three, one)[i % 2]) for i in range(20)]
    cut = [text[-40:] for text in texts_read_while_written(target, writes) - whole]
    assert cut == []


def test_a_candidate_without_a_bar_says_why_in_a_word_as_the_terminal_does() -> None:
    # The chart's note in place of a bar gave the error's kind: "error: unknown" of a
    # candidate whose RuntimeError the page showed, and "error: skip" of one that declined
    # the key, which is no error (the terminal says "skipped").
    declined = {"name": "tiled", "index": 2, "error": {"kind": "skip", "message": "n < 4096"}}
    record = dataclasses.replace(
        sum_record(),
        results=(
            samples("pairwise", 0, 5.1),
            failed("dot", 1, "RuntimeError: boom\n  at line 3"),
            declined,
        ),
    )
    (decision,) = run_view([record], title="t").decisions
    assert decision.bars is not None
    notes = re.findall(r'<text class="note"[^>]*>([^<]*)</text>', str(decision.bars))
    assert notes == ["error: RuntimeError", "skipped: n &lt; 4096"]


def test_a_candidate_without_a_bar_whose_reason_is_long_is_not_called_an_error_twice() -> None:
    # A reason too long for the chart's note read "skipped: error" of a candidate that
    # declined the key, which is no error, and "error: error" of one that raised.
    declined = {
        "name": "tiled",
        "index": 2,
        "error": {"kind": "skip", "message": "needs n to be a multiple of 4096"},
    }
    record = dataclasses.replace(
        sum_record(),
        results=(
            samples("pairwise", 0, 5.1),
            failed("dot", 1, "the buffer was too small for it"),
            declined,
        ),
    )
    (decision,) = run_view([record], title="t").decisions
    assert decision.bars is not None
    notes = re.findall(r'<text class="note"[^>]*>([^<]*)</text>', str(decision.bars))
    assert notes == ["error", "skipped"]


def test_an_event_of_a_kind_this_version_does_not_know_is_shown_by_its_tag() -> None:
    # A later version's records may log events of new kinds: the page shows them by tag
    # instead of refusing the file; a known event that does not read is still an error.
    later = replace(
        saxpy_record(),
        events=({"event": "teleported", "to": "elsewhere"}, {"event": "tuning_step", "batch": 0,
                 "indices": [0], "duration_ns": 1_000}),
    )  # fmt: skip
    page = render_html([later])
    assert "teleported: an event this version of pytest-autotune does not read" in page
    assert "batch 0: candidates [0] in " in page
    broken = replace(saxpy_record(), events=({"event": "tuning_step", "batch": 0},))
    with pytest.raises(RecordError, match="malformed autotune log event"):
        render_html([broken])


def test_an_event_whose_tag_is_no_string_is_shown_as_one_of_an_unknown_kind() -> None:
    # A hand-edited tag that is a list or an object ended the page in "unhashable type".
    odd = replace(saxpy_record(), events=({"event": ["tuning_step"]}, {"event": {}}))
    page = render_html([odd])
    assert "[&#39;tuning_step&#39;]: an event this version of pytest-autotune" in page
    assert "{}: an event this version of pytest-autotune does not read" in page


def test_the_example_reports_page_names_the_roofs_its_report_shows() -> None:
    # docs/example-report.md said every group was bounded by a memory level, "L2 for the
    # 256x256 matmul, L3 for the others", where its report shows the matmul at "70.6% fp32
    # compute" and the small saxpy at L2: a reader checking the page against it found neither.
    docs = Path(__file__).resolve().parents[2] / "docs"
    page = " ".join((docs / "example-report.md").read_text(encoding="utf-8").split())
    shown = set(
        re.findall(
            r"\d+\.\d% (fp\d+ compute|L\d|DRAM)",
            (docs / "example-report.html").read_text(encoding="utf-8"),
        )
    )
    assert shown
    said = page[page.index("Every fraction of roof") :]
    assert {roof for roof in shown if roof not in said} == set()
