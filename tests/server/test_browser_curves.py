"""Scalar charts that draw the truth (issue 51 items 4-8 and 11), in headless Chromium over
``tests/curve_runs.py``: a diverging run and a finite 6.8e25 outlier, a resumed run whose
sessions overlap, four runs of different lengths and batch sizes. Each test asserts on what
is drawn: the chart's own option and pixel coordinates, its SVG, the page's DOM."""

from __future__ import annotations

import math
import re
from collections.abc import Iterator
from typing import Any

import pytest

from tests.curve_runs import RESUMED, RUNS, acc_at, write_curve_base
from tests.diverging_runs import OUTLIER
from tests.server.browser_support import LiveServer, doc_image, shot

pytestmark = pytest.mark.browser

HOST = "document.querySelector('[data-chart-tag=\"{tag}\"] .chart-scalar')"


def chart(tag: str) -> str:
    return f"echarts.getInstanceByDom({HOST.format(tag=tag)})"


@pytest.fixture(scope="module")
def curves(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    server = LiveServer(write_curve_base(tmp_path_factory.mktemp("curves") / "runs")).start()
    yield server
    server.stop()


def open_scalars(page: Any, url: str, query: str, tag: str, lines: int) -> None:
    page.goto(f"{url}#/scalars?{query}")
    page.wait_for_function("document.body.dataset.ready === 'scalars'")
    page.wait_for_function(f"{HOST.format(tag=tag)}?.dataset.lines === '{lines}'")


def y_axis(page: Any, tag: str) -> dict[str, Any]:
    axis: dict[str, Any] = page.evaluate(
        f"""() => {{ const c = {chart(tag)}; const y = c.getOption().yAxis[0];
          const labels = c.getModel().getComponent('yAxis', 0).axis.getViewLabels()
            .map((l) => l.formattedLabel);
          return {{ type: y.type, min: y.min, max: y.max, labels }}; }}"""
    )
    return axis


def series(page: Any, tag: str) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = page.evaluate(
        f"""() => {chart(tag)}.getOption().series.map((s) => ({{
          name: s.name, type: s.type, opacity: (s.lineStyle || {{}}).opacity ?? 1,
          data: s.data.map((p) => p.map((v) => (v === undefined ? null : v))) }}))"""
    )
    return found


def hover_at(page: Any, tag: str, x: float) -> str:
    """The hover's text with the pointer over ``x`` (in the axis' units)."""
    page.evaluate(
        f"""() => {{ const c = {chart(tag)};
          const y = c.getOption().yAxis[0];
          const [px, py] = c.convertToPixel({{ xAxisIndex: 0, yAxisIndex: 0 }},
                                           [{x}, (y.min + y.max) / 2]);
          c.dispatchAction({{ type: 'showTip', x: px, y: py }}); }}"""
    )
    tip = page.locator(f"[data-chart-tag='{tag}'] .chart-scalar div").filter(has_text="·").first
    tip.wait_for()
    return str(tip.inner_text())


def svg_texts(page: Any, tag: str) -> list[str]:
    texts: list[str] = page.eval_on_selector_all(
        f"[data-chart-tag='{tag}'] .chart-scalar svg text", "ts => ts.map(t => t.textContent)"
    )
    return texts


def test_an_outlier_is_clipped_and_marked_not_the_scale_of_every_run(
    page: Any, curves: LiveServer
) -> None:
    """Item 4: one finite 6.8e25 eval loss leaves the axis to the bulk of the points: the
    healthy run spans the chart, the outlier is a mark at the top edge; off, the axis takes it
    in; on a log axis every label is one rounded format (1e+26, never 9.99...e+25)."""
    tag = "eval/loss"
    open_scalars(page, curves.url, f"run=healthy&run=outlier&tag={tag}", tag, 2)
    axis = y_axis(page, tag)
    assert axis["type"] == "value" and axis["max"] < 5
    assert page.evaluate(f"() => {HOST.format(tag=tag)}.dataset.clipped") == "1"
    [clip] = [s for s in series(page, tag) if s["name"].endswith("(clipped)")]
    assert clip["name"] == "outlier (clipped)"
    [[x, y, step, _, _, real]] = clip["data"]
    assert (x, step, y, real) == (50, 50, axis["max"], pytest.approx(OUTLIER, rel=1e-6))
    # the healthy run fills the chart's height, not a flat line on 0
    span = page.evaluate(
        f"""() => {{ const c = {chart(tag)};
          const ys = c.getOption().series.find((s) => s.name === 'healthy').data.map((p) => p[1]);
          const px = (v) => c.convertToPixel({{ yAxisIndex: 0 }}, v);
          return px(Math.min(...ys)) - px(Math.max(...ys)); }}"""
    )
    assert span > 80  # (on a 7e25 axis: 0)
    assert all(re.fullmatch(r"-?\d+(\.\d+)?", label) for label in axis["labels"])
    doc_image(page.locator(f"[data-chart-tag='{tag}']"), "scalars-outliers")
    page.uncheck("#ignore-outliers")
    page.wait_for_function(f"{HOST.format(tag=tag)}.dataset.clipped === '0'")
    assert y_axis(page, tag)["max"] >= OUTLIER
    page.check("#log-scale")
    page.wait_for_function(f"{chart(tag)}.getOption().yAxis[0].type === 'log'")
    labels = y_axis(page, tag)["labels"]
    assert labels and all(re.fullmatch(r"1e[+-]\d+", label) for label in labels), labels
    assert "1e+26" in labels and set(labels) <= set(svg_texts(page, tag))


def test_groups_align_on_epochs_count_their_runs_and_band_on_a_log_axis(
    page: Any, curves: LiveServer
) -> None:
    """Item 5: runs of one optimizer with batch sizes 32 and 64 evaluate at different steps;
    on the epoch axis each is interpolated within its own range: the SGD mean at epoch 3 is
    both runs' (their offsets cancel), at epoch 8 only the longer run's (and says so); the
    band stops at epoch 5 where the shorter run ends; a log axis draws the band."""
    runs = "&".join(f"run={r}" for r in RUNS)
    tag = "eval/accuracy"
    open_scalars(page, curves.url, f"{runs}&tag={tag}&x=epoch&group=optimizer", tag, 4)
    page.wait_for_function(f"{HOST.format(tag=tag)}.dataset.groups === '2'")
    drawn = {s["name"]: s for s in series(page, tag)}
    sgd = next(
        s for n, s in drawn.items() if n.startswith("optimizer = SGD") and s["type"] == "line"
    )
    at = {p[0]: (p[1], p[5]) for p in sgd["data"]}
    assert at[3][0] == pytest.approx(acc_at(3), abs=1e-6) and at[3][1] == 2
    assert at[8][0] == pytest.approx(acc_at(8) + 0.02, abs=1e-6) and at[8][1] == 1
    band = next(
        s for n, s in drawn.items() if n.startswith("optimizer = SGD") and n.endswith("(band)")
    )
    assert band["type"] == "custom" and max(p[0] for p in band["data"]) == 5
    doc_image(page.locator(f"[data-chart-tag='{tag}']"), "scalars-grouped")
    assert "(2 runs)" in hover_at(page, tag, 3)
    page.check("#log-scale")
    page.wait_for_function(f"{chart(tag)}.getOption().yAxis[0].type === 'log'")
    polygons = page.locator(f"[data-chart-tag='{tag}'] svg path[fill-opacity='0.2']")
    assert polygons.count() == 2
    shot(page, "scalars-grouped-epochs")


def test_the_hover_lists_every_run_and_the_legend_every_series(
    page: Any, curves: LiveServer
) -> None:
    """Item 6: six runs of different lengths; at step 150 only two have a point, but the
    hover names all six (each at its nearest point); every name is drawn in the legend, which
    never pages; grouped, every group is in it."""
    names = [*RUNS, "healthy", "outlier"]
    query = "&".join(f"run={r}" for r in names) + "&tag=loss"
    open_scalars(page, curves.url, query, "loss", 6)
    text = hover_at(page, "loss", 150)
    assert all(f"{name}:" in text for name in names), text
    assert "@ step 119" in text  # the healthy run's last point, named as such
    texts = svg_texts(page, "loss")
    assert set(names) <= set(texts) and not any(re.fullmatch(r"\d+/\d+", t) for t in texts)
    assert page.evaluate(f"() => {chart('loss')}.getOption().legend[0].type") == "plain"
    page.select_option("#group-by", "batch_size")
    page.wait_for_function(f"{HOST.format(tag='loss')}.dataset.groups === '4'")
    groups = [t for t in svg_texts(page, "loss") if t.startswith("batch_size = ")]
    assert len(groups) == 4


def test_short_series_are_not_smoothed_and_the_hover_says_raw_and_smoothed(
    page: Any, curves: LiveServer
) -> None:
    """Item 7: a 5-point eval accuracy is drawn as written by default (its final value, not
    the average's lag); a 300-point loss is smoothed, its raw line visible behind it, and the
    hover gives both values."""
    open_scalars(page, curves.url, "run=sgd-64&tag=eval/accuracy&tag=loss", "loss", 1)
    page.wait_for_function(f"{HOST.format(tag='eval/accuracy')}?.dataset.lines === '1'")
    accuracy = series(page, "eval/accuracy")
    assert [s["name"] for s in accuracy if s["type"] == "line"] == ["sgd-64"]
    assert accuracy[0]["data"][-1][1] == pytest.approx(acc_at(5) - 0.02, abs=1e-6)
    loss = {s["name"]: s for s in series(page, "loss")}
    assert loss["sgd-64 (raw)"]["opacity"] >= 0.4
    assert loss["sgd-64"]["data"][-1][1] != loss["sgd-64 (raw)"]["data"][-1][1]
    text = hover_at(page, "loss", 30)
    assert re.search(r"sgd-64: [\d.]+ \(smoothed; raw [\d.]+\)", text), text


def test_zooming_keeps_each_steps_smoothed_value_and_refits_the_axes(
    page: Any, curves: LiveServer
) -> None:
    """Item 8: the server smooths the full series, so zooming to steps 100..140 keeps every
    step's smoothed value (the average does not restart at the zoom's edge); the y axis fits
    the zoomed points; the x labels are round numbers."""
    open_scalars(page, curves.url, "run=sgd-32&tag=loss&smooth=0.9", "loss", 1)
    line = (
        "() => Object.fromEntries("
        + chart("loss")
        + ".getOption().series"
        + (".find((s) => s.name === 'sgd-32').data.map((p) => [p[2], p[1]]))")
    )
    whole = page.evaluate(line)
    before = y_axis(page, "loss")
    zoom = "{ type: 'dataZoom', startValue: 100, endValue: 140 }"
    page.evaluate(f"() => {chart('loss')}.dispatchAction({zoom})")
    page.wait_for_function(f"{HOST.format(tag='loss')}.dataset.zoom === '100-140'")
    zoomed = page.evaluate(line)
    assert sorted(int(k) for k in zoomed) == list(range(100, 141))
    for step, value in zoomed.items():
        assert value == pytest.approx(whole[step], rel=1e-9)
    after = y_axis(page, "loss")
    assert after["max"] - after["min"] < (before["max"] - before["min"]) / 3
    labels = page.evaluate(
        f"() => {chart('loss')}.getModel().getComponent('xAxis', 0).axis.getViewLabels()"
        ".map((l) => Number(l.formattedLabel.replace(/,/g, '')))"
    )
    assert labels and all(math.isclose(v % 5, 0) or math.isclose(v % 5, 5) for v in labels)


def test_a_resumed_runs_sessions_are_a_table_of_dates_on_its_page(
    page: Any, curves: LiveServer
) -> None:
    """Item 11: the run page lists a resumed run's sessions as rows (dates, steps, host),
    not the record's JSON with epoch seconds."""
    page.goto(f"{curves.url}#/run/{RESUMED}")
    page.wait_for_function("document.body.dataset.ready === 'run'")
    page.wait_for_selector("#run-sessions tbody tr")
    rows = page.eval_on_selector_all(
        "#run-sessions tbody tr", "rows => rows.map(r => [...r.cells].map(c => c.textContent))"
    )
    assert [r[4] for r in rows] == ["1 – 10", "6 – 12"]
    assert [r[5] for r in rows] == ["gpu-a", "gpu-b"]
    assert all("1700000" not in cell for row in rows for cell in row[:3])
    assert rows[0][3] == "1m40s"
    cards = page.locator("#run-cards").inner_text()
    assert '"start_time"' not in cards and "1700000000" not in cards
    shot(page, "run-sessions")
