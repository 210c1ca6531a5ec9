"""The report's SVG charts: well-formed, escaped, and drawn where the numbers say."""

from __future__ import annotations

import itertools
import math
import re
import xml.etree.ElementTree as ET

import pytest

from pytest_autotune.report.svg import (
    Bar,
    RooflinePoint,
    SampleRow,
    TrendPoint,
    bar_chart,
    format_si,
    fraction_bar,
    interval_chart,
    linear_ticks,
    log_ticks,
    roofline_chart,
    strip_chart,
    trend_chart,
)
from pytest_autotune.report.svg.draw import CHAR_WIDTH
from pytest_autotune.tune.log import format_duration

SVG = "{http://www.w3.org/2000/svg}"
SCRIPT_NAME = "<script>alert(1)</script>"


def parse(markup: str) -> ET.Element:
    """The chart as XML: parsing fails on anything not escaped."""
    return ET.fromstring(str(markup))


def texts(root: ET.Element) -> list[str]:
    return ["".join(t.itertext()) for t in root.iter(f"{SVG}text")]


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (4.28e12, "4.28 T"),
        (63e12, "63.0 T"),
        (779e12, "779 T"),
        (999.6e9, "1.00 T"),
        (512.0, "512 "),
        (1.0, "1.00 "),
        (0.25, "0.25 "),
        (0.0, "0 "),
        (3e21, "3000 E"),
    ],
)
def test_rates_read_with_three_digits_and_an_si_prefix(value: float, text: str) -> None:
    assert format_si(value) == text


def test_linear_ticks_step_by_one_two_or_five_and_end_at_or_above_the_top() -> None:
    assert linear_ticks(1.7e-3) == pytest.approx([0, 0.5e-3, 1e-3, 1.5e-3, 2e-3])
    assert linear_ticks(10.0) == pytest.approx([0, 2, 4, 6, 8, 10])
    assert linear_ticks(0.0) == [0.0, 1.0]


def test_log_ticks_span_whole_decades() -> None:
    assert log_ticks(0.03, 70) == pytest.approx([0.01, 0.1, 1, 10, 100])
    assert log_ticks(1e9, 1e9) == pytest.approx([1e9, 1e10])
    with pytest.raises(ValueError, match="0 < low <= high"):
        log_ticks(0, 1)


def test_a_bar_chart_draws_one_bar_per_measured_candidate_and_a_note_for_a_failed_one() -> None:
    root = parse(
        bar_chart(
            [
                Bar("block32", 1.7e-3, 1.6e-3, 1.8e-3),
                Bar("float4", 189e-6, 185e-6, 193e-6, highlight=True),
                Bar(SCRIPT_NAME, None, note="error: unknown"),
            ],
            format_value=format_duration,
            title="medians",
        )
    )
    bars = [g for g in root.iter(f"{SVG}g") if "bar" in g.get("class", "").split()]
    assert [g.get("class") for g in bars] == ["bar", "bar winner", "bar"]
    widths = [float(r.get("width", "0")) for r in root.iter(f"{SVG}rect")]
    assert len(widths) == 2
    assert widths[0] / widths[1] == pytest.approx(1.7e-3 / 189e-6, rel=0.02)
    labels = texts(root)
    assert SCRIPT_NAME in labels and "error: unknown" in labels
    assert "1.70 ms" in labels and "189 us" in labels


def test_a_bar_chart_of_a_group_that_measured_nothing_draws_no_scale() -> None:
    # Every candidate failed: the chart drew an axis from 0 to "1.00 s", a time that no
    # candidate took and that no record holds.
    root = parse(
        bar_chart(
            [Bar("a", None, note="error: RuntimeError"), Bar("b", None, note="error: ValueError")],
            format_value=format_duration,
            title="medians",
        )
    )
    assert texts(root) == ["a", "error: RuntimeError", "b", "error: ValueError"]
    assert not [line for line in root.iter(f"{SVG}line") if line.get("class") == "grid"]


def test_a_bar_chart_escapes_every_label_and_cuts_long_ones_keeping_the_full_title() -> None:
    long_name = "grid_stride_block_1024_with_four_blocks_per_sm_" * 3
    markup = str(
        bar_chart(
            [Bar(SCRIPT_NAME, 1e-6), Bar(long_name, 2e-6)],
            format_value=format_duration,
            title='a "quoted" & <title>',
        )
    )
    assert "<script>" not in markup
    root = parse(markup)
    assert root.find(f"{SVG}title") is not None
    assert root.find(f"{SVG}title").text == 'a "quoted" & <title>'  # type: ignore[union-attr]
    cut = [t for t in texts(root) if t.startswith("grid_stride")]
    assert cut and cut[0].endswith("\u2026") and len(cut[0]) < len(long_name)
    titles = ["".join(t.itertext()) for t in root.iter(f"{SVG}title")]
    assert any(t.startswith(long_name) for t in titles)


@pytest.mark.parametrize("name", ["add_reduce", "grid_stride_block_1024_" * 3])
def test_a_winners_bold_label_has_the_room_its_bold_text_takes(name: str) -> None:
    # The winner's label is bold (report.css), about a tenth wider than the plain width
    # the label column was sized by: "add_reduce" lost its first letter to the edge.
    root = parse(
        str(
            bar_chart(
                [Bar("dot", 2e-6), Bar(name, 1e-6, highlight=True)],
                format_value=format_duration,
                title="t",
            )
        )
    )
    (label,) = [t for t in root.iter(f"{SVG}text") if t.get("class") == "label" and t.text != "dot"]
    assert float(label.get("x", "nan")) >= len(label.text or "") * CHAR_WIDTH * 1.1


def point_centres(root: ET.Element) -> dict[str, tuple[float, float]]:
    """Each point's label (from its title) and the centre of its marker."""
    centres = {}
    for group in root.iter(f"{SVG}g"):
        if "point" not in group.get("class", "").split():
            continue
        title = group.find(f"{SVG}title")
        assert title is not None and title.text is not None
        name = title.text.split(":")[0].removesuffix(" (winner)")
        circle = group.find(f"{SVG}circle")
        if circle is not None:
            centres[name] = (float(circle.get("cx", "nan")), float(circle.get("cy", "nan")))
        else:
            path = group.find(f"{SVG}path")
            assert path is not None
            x, y = map(float, re.findall(r"[-\d.]+", path.get("d", ""))[:2])
            centres[name] = (x, y + 7)  # the diamond's path starts at its top corner
    return centres


def roof_lines(root: ET.Element) -> dict[str, ET.Element]:
    return {
        line.get("class", "").split()[1]: line
        for line in root.iter(f"{SVG}line")
        if line.get("class", "").startswith("roof ")
    }


def test_the_roofline_draws_both_roofs_meeting_at_the_ridge_and_every_candidate() -> None:
    root = parse(
        roofline_chart(
            [
                RooflinePoint("float4", 2 / 12, 2 / 12 * 4.3e12, highlight=True),
                RooflinePoint("block32", 2 / 12, 2 / 12 * 0.48e12),
                RooflinePoint(SCRIPT_NAME, 2 / 12, 2 / 12 * 1e12),
            ],
            memory_peak=4.43e12,
            compute_peak=63e12,
            title="roofline",
        )
    )
    roofs = roof_lines(root)
    assert set(roofs) == {"memory", "compute"}
    memory, compute = roofs["memory"], roofs["compute"]
    # The memory roof ends where the compute roof starts (the ridge), at the same height.
    assert float(memory.get("x2", "nan")) == pytest.approx(float(compute.get("x1", "nan")), abs=0.2)
    assert float(memory.get("y2", "nan")) == pytest.approx(float(compute.get("y1", "nan")), abs=0.2)
    # On log-log axes the memory roof has slope 1: equal decades in x and y.
    centres = point_centres(root)
    assert set(centres) == {"float4", "block32", SCRIPT_NAME}
    xs = {round(x, 1) for x, _ in centres.values()}
    assert len(xs) == 1, "candidates of one problem share its intensity"
    # Faster is higher: a smaller y on screen.
    assert centres["float4"][1] < centres[SCRIPT_NAME][1] < centres["block32"][1]
    winners = [g for g in root.iter(f"{SVG}g") if g.get("class") == "point winner"]
    assert len(winners) == 1
    assert "float4 (winner)" in texts(root)
    assert any(t.startswith("memory 4.43 TB/s") for t in texts(root))
    assert "compute 63.0 Top/s" in texts(root)


def test_the_roofline_labels_of_one_column_of_points_do_not_overlap() -> None:
    points = [RooflinePoint(f"c{i}", 0.5, 1e9 * (1 + i * 0.01)) for i in range(8)]
    root = parse(roofline_chart(points, memory_peak=4e9, compute_peak=8e9, title="r"))
    ys = sorted(
        float(t.get("y", "nan"))
        for g in root.iter(f"{SVG}g")
        if g.get("class") == "point"
        for t in g.iter(f"{SVG}text")
    )
    assert len(ys) == 8
    assert all(b - a >= 13.9 for a, b in itertools.pairwise(ys))


def test_a_roof_whose_peak_was_not_measured_is_not_drawn() -> None:
    only_memory = parse(
        roofline_chart([RooflinePoint("a", 1.0, 1e9)], memory_peak=4e9, compute_peak=0.0, title="r")
    )
    assert set(roof_lines(only_memory)) == {"memory"}
    only_compute = parse(
        roofline_chart(
            [RooflinePoint("a", 1.0, 1e9)], memory_peak=math.nan, compute_peak=2e9, title="r"
        )
    )
    assert set(roof_lines(only_compute)) == {"compute"}


@pytest.mark.parametrize("absurd", [1e308, 1e-308])
def test_a_peak_or_point_too_large_or_small_for_log_axes_is_left_out(absurd: float) -> None:
    # A hand-edited record's peak of 1e308 made a tick of 10**309: an OverflowError.
    root = parse(
        roofline_chart(
            [RooflinePoint("ok", 1.0, 1e9), RooflinePoint("absurd", absurd, absurd)],
            memory_peak=4e9,
            compute_peak=absurd,
            title="r",
        )
    )
    assert set(roof_lines(root)) == {"memory"}
    assert set(point_centres(root)) == {"ok"}


def test_points_that_cannot_sit_on_log_axes_are_left_out() -> None:
    root = parse(
        roofline_chart(
            [RooflinePoint("zero", 0.0, 1e9), RooflinePoint("ok", 1.0, 1e9)],
            memory_peak=4e9,
            compute_peak=8e9,
            title="r",
        )
    )
    assert set(point_centres(root)) == {"ok"}


def test_an_interval_right_of_zero_is_drawn_failed_and_an_unbounded_end_gets_an_arrow() -> None:
    root = parse(interval_chart(0.12, 0.06, math.inf, failed=True, title="change"))
    group = next(g for g in root.iter(f"{SVG}g") if "interval" in g.get("class", ""))
    assert group.get("class") == "interval failed"
    rect = group.find(f"{SVG}rect")
    zero = next(line for line in root.iter(f"{SVG}line") if line.get("class") == "zero")
    assert rect is not None
    assert float(rect.get("x", "nan")) > float(zero.get("x1", "nan"))
    assert [p.get("class") for p in group.iter(f"{SVG}path")] == ["arrow"]
    assert "0%" in texts(root)


def test_an_interval_that_spans_zero_passes() -> None:
    root = parse(interval_chart(-0.01, -0.05, 0.035, failed=False, title="change"))
    group = next(g for g in root.iter(f"{SVG}g") if "interval" in g.get("class", ""))
    assert group.get("class") == "interval"
    assert not list(group.iter(f"{SVG}path"))


@pytest.mark.parametrize(
    ("delta", "low", "high", "ticks"),
    [
        (2.011, 1.742, 2.306, ["0%", "-100%", "+231%"]),
        # Zero sits near the left end: a "-100%" there would run into its "0%".
        (-0.918, -0.999, 7.591, ["0%", "+759%"]),
        (-0.01, -0.05, 0.035, ["0%", "-5%", "+5%"]),
    ],
)
def test_the_change_axis_ends_where_a_time_can_go_and_no_lower(
    delta: float, low: float, high: float, ticks: list[str]
) -> None:
    # Drawn symmetric about zero, a regression of +201% had its axis start at "-231%", and a
    # too-noisy +759% at "-759%": changes no time can make, as a time cannot fall below 0.
    root = parse(interval_chart(delta, low, high, failed=False, title="change"))
    assert texts(root) == ticks
    zero = next(line for line in root.iter(f"{SVG}line") if line.get("class") == "zero")
    axis = next(line for line in root.iter(f"{SVG}line") if line.get("class") == "axis-line")
    start, end = float(axis.get("x1", "nan")), float(axis.get("x2", "nan"))
    span = max(abs(v) for v in (delta, low, high)) * 1.15
    below = min(span, 1.0)  # the axis runs from -100% at the lowest
    at = (float(zero.get("x1", "nan")) - start) / (end - start)
    assert at == pytest.approx(below / (below + span), abs=1e-3)


def test_a_fraction_past_the_roof_fills_the_bar_and_is_marked_not_drawn_wider() -> None:
    over = str(fraction_bar(1.4, title="t"))
    assert 'class="fill" x="0" y="0" width="80.0"' in over and 'class="over"' in over
    half = str(fraction_bar(0.5, title="t"))
    assert 'class="fill" x="0" y="0" width="40.0"' in half and 'class="over"' not in half


def test_a_strip_plot_draws_every_sample_even_when_all_are_equal() -> None:
    chart = str(
        strip_chart(
            [SampleRow("now", (2e-6,) * 5, True), SampleRow("baseline", ())],
            format_value=format_duration,
            title="t",
        )
    )
    assert chart.count("<circle") == 5 and "nan" not in chart


def test_a_trend_of_one_run_is_a_point_and_a_run_that_measured_nothing_says_so() -> None:
    one = str(trend_chart([TrendPoint("#1", 1e-3)], format_value=format_duration, title="t"))
    assert one.count("<circle") == 1 and "trend-line" not in one
    gap = str(
        trend_chart(
            [
                TrendPoint("#1", 1e-3, winner="a"),
                TrendPoint("#2", None),
                TrendPoint("#3", 2e-3, winner="b"),
            ],
            format_value=format_duration,
            title="t",
        )
    )
    assert gap.count("<circle") == 2 and "no result" in gap
    assert ">a</text>" in gap and ">b</text>" in gap  # the winner named where it changed


def test_a_strip_of_thousands_of_samples_draws_a_few_hundred_dots_tails_included() -> None:
    samples = tuple(1e-6 * (1 + k / 5000) for k in range(5000))
    chart = str(strip_chart([SampleRow("now", samples)], format_value=format_duration, title="t"))
    dots = re.findall(r'<circle class="dot" cx="([0-9.]+)"', chart)
    assert len(dots) == 200
    xs = sorted(float(x) for x in dots)
    assert xs[-1] - xs[0] > 500  # the lowest and the highest sample are among the dots


def test_a_sample_far_slower_than_the_rest_is_counted_at_the_edge_not_given_the_axis() -> None:
    samples = (*(1e-3 * (1 + k / 100) for k in range(20)), 0.1)
    chart = str(strip_chart([SampleRow("now", samples)], format_value=format_duration, title="t"))
    assert "1 slower \u2192" in chart
    xs = [float(x) for x in re.findall(r'<circle class="dot" cx="([0-9.]+)"', chart)]
    assert max(xs[:20]) - min(xs[:20]) > 200  # unclipped, the twenty would share 2 pixels
