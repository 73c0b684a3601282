"""The runs page, run page and diff over a sweep that went wrong in places
(``tests/ui_sweep.py``), in real headless Chromium (issue 51 items 1, 2, 10 and 12): every run
is drawn on the parallel coordinates, a diverged one included, numeric axes keep round ticks
with a NaN among them, the checkpoint table shows the global step, and every view formats a
number, a time, a duration and a NaN the same way."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest

from tests.server.browser_support import LiveServer, shot
from tests.server.test_browser import open_view
from tests.ui_sweep import HEALTHY, STEPS_PER_EPOCH, write_sweep_base

pytestmark = pytest.mark.browser

RUNS = HEALTHY + 1
CHART = "echarts.getInstanceByDom(document.querySelector('#parcoords'))"


@pytest.fixture(scope="module")
def sweep(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    server = LiveServer(write_sweep_base(tmp_path_factory.mktemp("sweep") / "runs")).start()
    yield server
    server.stop()


def open_chart(page: Any, url: str) -> None:
    open_view(page, url, "lineage")
    page.wait_for_function(f"document.querySelector('#parcoords')?.dataset.lines === '{RUNS}'")


def axis_of(page: Any, name: str) -> dict[str, Any]:
    """An axis as drawn: its option, and the pixel y of each of its tick labels."""
    return dict(
        page.evaluate(
            f"""(name) => {{
          const chart = {CHART};
          const axes = chart.getOption().parallelAxis;
          const i = axes.findIndex((a) => a.name === name);
          const axis = chart.getModel().getComponent('parallelAxis', i).axis;
          const ticks = axis.scale.getTicks().map((t) => t.value);
          const fmt = axes[i].axisLabel.formatter;
          return {{ index: i, type: axes[i].type, min: axes[i].min, max: axes[i].max,
                    labels: ticks.map((v) => [v, fmt ? fmt(v) : String(v)]) }};
        }}""",
            name,
        )
    )


def line_points(page: Any, run: str) -> list[Any]:
    """The run's line as ECharts drew it: its value on each axis, and its pixel there."""
    return list(
        page.evaluate(
            f"""(run) => {{
          const chart = {CHART};
          const series = chart.getModel().getSeriesByIndex(0);
          const data = series.getData();
          const i = data.indexOfName(run);
          if (i < 0) return [];
          const el = data.getItemGraphicEl(i);
          const sys = chart.getModel().getComponent('parallel').coordinateSystem;
          const dims = sys.dimensions;
          return dims.map((d, j) => {{
            const v = data.get(data.mapDimension(d), i);
            return [v, sys.dataToPoint(v, d), el ? el.style.stroke : null];
          }});
        }}""",
            run,
        )
    )


def test_a_diverged_run_is_drawn_at_the_marked_place_in_a_colour_outside_the_scale(
    page: Any, sweep: LiveServer
) -> None:
    """Item 1: the run whose train loss is NaN and accuracy inf draws its line, reaching the
    train-loss axis at its labelled "NaN" place and the accuracy axis at "inf", in the red the
    key beside the colour bar names; its lr of 8 is on the lr axis."""
    open_chart(page, sweep.url)
    loss = axis_of(page, "train loss")
    labels = dict((label, v) for v, label in loss["labels"])
    assert "NaN" in labels and labels["NaN"] == loss["max"]  # the place, at the axis's top
    points = line_points(page, "diverged")
    assert len(points) == 6, "the diverged run draws a line across every axis"
    value, (x, y), stroke = points[loss["index"]]
    assert value == labels["NaN"]
    top = page.evaluate(
        f"(i) => {CHART}.getModel().getComponent('parallel').coordinateSystem"
        f".dataToPoint({loss['max']}, 'dim' + i)",
        loss["index"],
    )
    assert y == pytest.approx(top[1])
    accuracy = axis_of(page, "accuracy (eval)")
    acc_labels = {label: v for v, label in accuracy["labels"]}
    assert points[accuracy["index"]][0] == acc_labels["inf"]
    # every run drawn: 13 line elements in the SVG
    drawn = page.eval_on_selector_all(
        '#parcoords svg path[fill="none"][stroke-width="1.5"]', "ps => ps.length"
    )
    assert drawn == RUNS
    # the colour axis (eval loss) of the diverged run is not on the scale: its own colour
    colors = {run: line_points(page, run)[0][2] for run in ("diverged", "run-00", "run-11")}
    assert colors["run-00"] != colors["run-11"]
    assert colors["diverged"] not in (colors["run-00"], colors["run-11"])
    shot(page, "parcoords-diverged")


def test_one_nan_among_numbers_keeps_the_axis_numeric_with_round_ticks(
    page: Any, sweep: LiveServer
) -> None:
    """Item 2: twelve train losses of 8-9 digits and one NaN: a value axis, to scale, whose
    ticks are round multiples of one step; the NaN is one labelled place beyond them."""
    open_chart(page, sweep.url)
    loss = axis_of(page, "train loss")
    assert loss["type"] == "value"
    numbers = [v for v, label in loss["labels"] if label != "NaN"]
    steps = {round(b - a, 9) for a, b in zip(numbers, numbers[1:], strict=False)}
    assert len(steps) == 1 and len(numbers) <= 8
    (step,) = steps
    assert all(abs(v / step - round(v / step)) < 1e-6 for v in numbers)  # round ticks
    assert all(len(label) <= 4 for v, label in loss["labels"])  # "0.4", never "0.26123457"
    # to scale: run-00 (0.2) and run-11 (0.8736) sit at their values' heights
    low, high = (line_points(page, r)[loss["index"]] for r in ("run-00", "run-11"))
    assert low[0] == pytest.approx(0.2) and high[0] == pytest.approx(0.2 + 0.061234567 * 11)


def test_the_learning_rate_axis_is_log_with_decades(page: Any, sweep: LiveServer) -> None:
    open_chart(page, sweep.url)
    lr = axis_of(page, "learning_rate")
    assert lr["type"] == "log" and lr["min"] == pytest.approx(1e-4) and lr["max"] == 10
    assert [label for _, label in lr["labels"]] == ["1e-4", "0.001", "0.01", "0.1", "1", "10"]


def test_one_formatting_in_the_table_the_hover_the_run_page_and_the_diff(
    page: Any, sweep: LiveServer
) -> None:
    """Item 12: a NaN reads "NaN" and an inf "inf" in the table, the hover, the run page and the
    diff; floats have at most 5 significant digits (the exact value in the title); times are
    dates and durations have a unit."""
    open_chart(page, sweep.url)
    cells = page.evaluate(
        """() => Object.fromEntries([...document.querySelectorAll(
          '#runs-table tbody tr[data-run="diverged"] td[data-column]')].map(
          (td) => [td.dataset.column, [td.textContent, td.title]]))"""
    )
    assert cells["loss"] == ["NaN", "NaN"]
    assert cells["metric/accuracy"] == ["inf", "Infinity"]
    run11 = page.evaluate(
        """() => [...document.querySelectorAll(
          '#runs-table tbody tr[data-run="run-11"] td[data-column="loss"]')].map(
          (td) => [td.textContent, td.title])[0]"""
    )
    assert run11[0] == "0.87358" and run11[1].startswith("0.873580")
    # the hover of the diverged run's line names its values as the table does (the chart's
    # own tooltip formatter, as ECharts calls it for that line)
    text = page.evaluate(
        f"() => {CHART}.getOption().tooltip[0].formatter("
        "{ seriesType: 'parallel', name: 'diverged', value: [] })"
    )
    assert "train loss: <b>NaN</b>" in text and "accuracy (eval): <b>inf</b>" in text
    # the run page: the same words; times as dates, the duration with its unit
    open_view(page, sweep.url, "run/diverged")
    page.wait_for_function("document.querySelector('#run-title').textContent === 'diverged'")
    page.wait_for_function("document.querySelectorAll('#run-cards dd').length > 5")
    fields = page.evaluate(
        """() => Object.fromEntries([...document.querySelectorAll('#run-cards dt')].map(
          (dt) => [dt.textContent, dt.nextElementSibling.textContent]))"""
    )
    assert fields["loss"] == "NaN" and fields["accuracy"] == "inf"
    assert fields["duration"] == "10m00s"
    assert fields["start_time"].startswith("2027-01-15 ")
    # the diff: the same, never "null" nor 17 digits nor epoch seconds
    page.goto(f"{sweep.url}#/diff?run=diverged&run=run-11")
    page.wait_for_function(
        "document.querySelector('#view-diff').dataset.loaded === 'diverged\\nrun-11'"
    )
    rows = page.evaluate(
        """() => Object.fromEntries([...document.querySelectorAll('#diff-table tr[data-field]')]
          .map((tr) => [tr.dataset.field, [...tr.querySelectorAll('td:not(.field)')]
          .map((td) => td.textContent)]))"""
    )
    assert rows["loss"] == ["NaN", "0.87358"]
    assert rows["metric/accuracy"][0] == "inf"
    assert rows["metric/eval_loss"][1] == "1.2535"
    assert rows["run/end_time"][0].startswith("2027-01-15 ")
    assert rows["run/start_time"][0].startswith("2027-01-15 ")
    texts = [t for r in rows.values() for t in r]
    assert "null" not in texts
    assert not [t for t in texts if re.fullmatch(r"-?[\d.]+(e-?\d+)?", t) and len(t) > 8]


def test_the_checkpoint_table_shows_the_global_step(page: Any, sweep: LiveServer) -> None:
    """Item 10: every file is "step 25" of its epoch by name; the table shows the global
    step the lineage recorded (25, 50, 75), the step the curves use."""
    open_view(page, sweep.url, "run/run-02")
    page.wait_for_function("document.querySelectorAll('#run-checkpoints tbody tr').length === 4")
    rows = page.evaluate(
        """() => [...document.querySelectorAll('#run-checkpoints tbody tr')].map(
          (tr) => [...tr.children].map((td) => [td.textContent, td.title]))"""
    )
    steps = sorted(int(r[2][0]) for r in rows)
    assert steps == [STEPS_PER_EPOCH * e for e in (1, 2, 3, 4)]
    assert all(r[2][1].startswith(f"step {STEPS_PER_EPOCH} of epoch ") for r in rows)
    shot(page, "run-checkpoints")


def run_importance(page: Any, url: str, metric: str) -> None:
    open_chart(page, url)
    page.click("#importance-card summary")
    page.select_option("#importance-metric", metric)
    page.evaluate("document.querySelector('#importance-card').dataset.ready = ''")
    page.click("#importance-run")
    page.wait_for_selector("#importance-card[data-ready='1']")


def test_importance_draws_no_bars_for_a_metric_it_does_not_explain(
    page: Any, sweep: LiveServer
) -> None:
    """Item 13: the sweep's accuracy is noise: the verdict says the parameters do not explain
    it, and no bar and no scatter is drawn under it."""
    run_importance(page, sweep.url, "metric/accuracy")
    assert page.locator("#importance-card").get_attribute("data-explains") == "false"
    assert "do not explain metric/accuracy" in page.locator("#importance-note").inner_text()
    bars = page.evaluate(
        "(echarts.getInstanceByDom(document.querySelector('#importance-bars'))"
        "?.getOption().series[0]?.data || []).length"
    )
    assert bars == 0
    assert not page.locator("#importance-bars").is_visible()
    assert page.locator("#importance-scatter .chart.scatter").count() == 0


def test_importance_shows_one_value_under_two_names_once_with_a_log_scatter(
    page: Any, sweep: LiveServer
) -> None:
    """Item 13: ``learning_rate`` and ``optimizer/lr`` are one bar named with its alias, and
    its scatter's x axis is logarithmic (the lr spans four decades)."""
    run_importance(page, sweep.url, "metric/eval_loss")
    assert page.locator("#importance-card").get_attribute("data-explains") == "true"
    names = page.evaluate(
        "echarts.getInstanceByDom(document.querySelector('#importance-bars'))"
        ".getOption().yAxis[0].data"
    )
    assert "learning_rate (= optimizer/lr)" in names
    assert not [n for n in names if n.startswith("optimizer/lr")]
    axis = page.evaluate(
        "echarts.getInstanceByDom(document.querySelector("
        "'#importance-scatter [data-param=\"learning_rate\"]')).getOption().xAxis[0].type"
    )
    assert axis == "log"
    shot(page, "importance-sweep")


def test_a_nan_metric_is_on_its_axis_nan_place_in_the_keys_colour(
    page: Any, sweep: LiveServer
) -> None:
    """Item 1 for a metric: the index stores the diverged run's NaN eval loss as NULL, yet the
    chart draws it at the eval-loss axis's "NaN" place (not "—", the place of a missing
    value), in the red outside the colour scale that the key names "NaN"."""
    open_chart(page, sweep.url)
    names = page.evaluate(f"{CHART}.getOption().parallelAxis.map((a) => a.name)")
    [name] = [n for n in names if "eval" in n and "loss" in n]
    axis = axis_of(page, name)
    labels = {label: v for v, label in axis["labels"]}
    assert "NaN" in labels, axis["labels"]
    value, _, stroke = line_points(page, "diverged")[axis["index"]]
    assert value == labels["NaN"] and labels.get("—") != value
    assert stroke.lower() == "#e5484d"  # NONFINITE_COLOR (parcoords_lines.js)
    key = page.evaluate(
        f"{CHART}.getOption().graphic[0].elements.find((e) => e.id === 'nonfinite-key').style.text"
    )
    assert key.startswith("━ NaN")
    healthy = {line_points(page, r)[0][2] for r in ("run-00", "run-05", "run-11")}
    assert stroke not in healthy
