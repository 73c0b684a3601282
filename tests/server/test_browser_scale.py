"""The runs page at 2,000 runs, in Chromium: the parallel-coordinates chart draws every run
(on the page's own canvas layer under ECharts' axes, js/parcoords_lines.js), and the
category labels stay readable over the lines (issue 32: "at 2,000 runs the category labels
vanish under the lines"); the layer's lines meet the axes (log and category ones included),
name their run on hover, open it on click, and dim outside a brush; a missing category value
is drawn at its axis's "—"."""

from __future__ import annotations

import base64
import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.runs import OPTIMIZERS, write_run
from tests.server.browser_support import DECODE_PNG, LiveServer, shot

RUNS = 2000

# Each category label's box (the zrender text element's own rectangle, in CSS pixels of the
# chart), for comparing two screenshots of the chart: with the lines, and with them hidden.
LABEL_BOXES = """(names) => {
  const chart = echarts.getInstanceByDom(document.querySelector('#parcoords'));
  return chart.getZr().storage.getDisplayList(true)
    .filter((e) => e.style && names.includes(e.style.text))
    .map((e) => {
      const r = e.getBoundingRect().clone();
      r.applyTransform(e.getComputedTransform());
      return [e.style.text, r.x, r.y, r.width, r.height];
    });
}"""
# The lines are the page's own canvas layer under ECharts' (js/parcoords_lines.js): hidden,
# the chart shows only what ECharts drew (axes, labels, colour bar).
HIDE_LINES = """() => new Promise((done) => {
  document.querySelector('#parcoords canvas.parcoords-lines').style.visibility = 'hidden';
  requestAnimationFrame(() => requestAnimationFrame(done));
})"""
# How much of each box changes between the two screenshots (a channel moved by more than 40):
# a label drawn above the lines with its halo changes little; the same box just right of it
# (or a little above or below: where the lines of that category leave the axis) changes a lot.
DIFFS = (
    """async ([a, b, boxes]) => {
  """
    + DECODE_PNG
    + """
  const [[one, width], [two]] = [await decode(a), await decode(b)];
  const changed = (x, y, w, h) => {
    let n = 0, total = 0;
    for (let j = Math.floor(y); j < y + h; j++) {
      for (let i = Math.floor(x); i < x + w; i++) {
        const k = (j * width + i) * 4;
        const d = Math.max(Math.abs(one[k] - two[k]), Math.abs(one[k + 1] - two[k + 1]),
                           Math.abs(one[k + 2] - two[k + 2]));
        total += 1;
        if (d > 40) n += 1;
      }
    }
    return n / total;
  };
  return boxes.map(([text, x, y, w, h]) => (
    { text, label: changed(x, y, w, h),
      lines: Math.max(...[-2, -1, 0, 1, 2].map((k) => changed(x + w + 4, y + k * h, w, h))) }));
}"""
)


@pytest.fixture(scope="module")
def big_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    base: Path = tmp_path_factory.mktemp("scale") / "runs"
    for i in range(RUNS):
        write_run(
            base,
            f"r{i:04d}",
            optimizer=OPTIMIZERS[i % 3],
            learning_rate=round(1e-4 * (1 + i % 97), 6),
            batch_size=(16, 32, 64)[i % 3],
            loss=1.0 / (i + 2),
            metrics={"accuracy": (i * 37 % 101) / 100},
        )
    server = LiveServer(base).start()
    yield server
    server.stop()


def test_category_labels_stay_readable_over_two_thousand_lines(
    page: Any, big_server: LiveServer
) -> None:
    page.goto(f"{big_server.url}#/lineage")
    page.wait_for_function(f"document.querySelector('#parcoords')?.dataset.lines === '{RUNS}'")
    chart = page.locator("#parcoords")
    boxes = page.evaluate(LABEL_BOXES, list(OPTIMIZERS))
    drawn = chart.screenshot()
    shot(page, "runs-2000")
    page.evaluate(HIDE_LINES)
    bare = chart.screenshot()
    urls = ["data:image/png;base64," + base64.b64encode(s).decode("ascii") for s in (drawn, bare)]
    diffs: list[dict[str, Any]] = page.evaluate(DIFFS, [*urls, boxes])
    assert sorted(d["text"] for d in diffs) == sorted(OPTIMIZERS)  # one label each, drawn
    for d in diffs:
        assert d["lines"] > 0.3, d  # the category's lines pass right beside it
        assert d["label"] < 0.1, d  # and hardly touch its label


# Where ECharts drew each axis, from its own text elements: the x of the axis (its name is
# centred on it) and the y of each tick or category label right of it (labels are centred
# on their value). Independent of the coordinate system the line layer asks for positions.
AXES_DRAWN = """() => {
  const chart = echarts.getInstanceByDom(document.querySelector('#parcoords'));
  const names = chart.getOption().parallelAxis.map((a) => a.name);
  const texts = chart.getZr().storage.getDisplayList(true)
    .filter((e) => e.style && typeof e.style.text === 'string' && e.style.text)
    .map((e) => {
      const r = e.getBoundingRect().clone();
      r.applyTransform(e.getComputedTransform());
      return { text: e.style.text, x: r.x + r.width / 2, y: r.y + r.height / 2, left: r.x };
    });
  const axes = {};
  for (const name of names) axes[name] = { x: texts.find((t) => t.text === name).x, labels: {} };
  for (const t of texts) {
    const axis = names.find((n) => t.left - axes[n].x >= 0 && t.left - axes[n].x < 40);
    if (axis && !names.includes(t.text)) axes[axis].labels[t.text] = t.y;
  }
  return axes;
}"""
# The strongest pixel (RGBA, un-premultiplied) of a layer canvas within 2 device pixels of
# each point given in CSS pixels of the chart.
SAMPLE = """([layer, points]) => {
  const canvas = document.querySelector(`#parcoords canvas.${layer}`);
  const scale = canvas.width / canvas.getBoundingClientRect().width;
  const g = canvas.getContext('2d');
  return points.map(([x, y]) => {
    const d = g.getImageData(Math.round(x * scale) - 2, Math.round(y * scale) - 2, 5, 5).data;
    let best = [0, 0, 0, 0];
    for (let k = 0; k < d.length; k += 4) if (d[k + 3] > best[3]) best = [...d.slice(k, k + 4)];
    return best;
  });
}"""
# A run's point on an axis, in page pixels, from ECharts' coordinate system
POINT = """([axisName, value]) => {
  const host = document.querySelector('#parcoords');
  const chart = echarts.getInstanceByDom(host);
  const axes = chart.getOption().parallelAxis;
  const i = axes.findIndex((a) => a.name === axisName);
  const v = axes[i].data ? axes[i].data.indexOf(value) : value;
  const sys = chart.getModel().getComponent('parallel').coordinateSystem;
  const [x, y] = sys.dataToPoint(v, `dim${i}`);
  const box = host.getBoundingClientRect();
  return [box.left + x, box.top + y];
}"""


def _open_lines(page: Any, server: LiveServer) -> None:
    page.goto(f"{server.url}#/lineage")
    page.wait_for_function(f"document.querySelector('#parcoords')?.dataset.lines === '{RUNS}'")


def _log_y(labels: dict[str, float], value: float) -> float:
    """The y of ``value`` on a log axis, between its labels 1 and 0.1."""
    top, tenth = labels["1"], labels["0.1"]
    return top + (tenth - top) * -math.log10(value)


def test_large_results_draw_their_lines_where_the_axes_say_on_a_sharp_canvas(
    browser: Any, big_server: LiveServer
) -> None:
    # 2x device pixels: the layer draws at the screen's resolution, in the chart's CSS pixels
    context = browser.new_context(viewport={"width": 1400, "height": 1000}, device_scale_factor=2)
    page = context.new_page()
    try:
        _open_lines(page, big_server)
        size = page.evaluate(
            "(() => { const c = document.querySelector('#parcoords canvas.parcoords-lines');"
            " return [c.width, c.getBoundingClientRect().width]; })()"
        )
        assert size[0] == 2 * size[1]
        width = page.evaluate(
            "document.querySelector('#parcoords canvas.parcoords-lines').getContext('2d').lineWidth"
        )
        assert width == 0.5  # one device pixel: a hairline, the fast stroke on a CPU
        axes = page.evaluate(AXES_DRAWN)
        loss, opt = axes["train loss"], axes["optimizer"]
        x = loss["x"]
        # train loss is 1 / (i + 2): a log axis; r0000 alone at 0.5, r0001 at 0.333, none between
        # or above; its accuracy is the lowest, so its line has the gradient's first colour
        at_half, between, above = page.evaluate(
            SAMPLE,
            ["parcoords-lines", [[x, _log_y(loss["labels"], v)] for v in (0.5, 0.408, 0.7)]],
        )
        assert at_half[3] > 30, at_half
        assert max(abs(a - b) for a, b in zip(at_half[:3], (0x35, 0x63, 0xE9), strict=True)) < 24, (
            at_half
        )
        assert between[3] == 0 and above[3] == 0, (between, above)
        tenth = page.evaluate(SAMPLE, ["parcoords-lines", [[x, loss["labels"]["0.1"]]]])[0]
        assert tenth[3] > 30  # r0008's loss
        # the category axis: lines at each optimizer's label, none halfway between two
        ys = sorted(opt["labels"][name] for name in OPTIMIZERS)
        points = [[opt["x"], y] for y in ys] + [
            [opt["x"], (a + b) / 2] for a, b in zip(ys, ys[1:], strict=False)
        ]
        found = page.evaluate(SAMPLE, ["parcoords-lines", points])
        assert all(p[3] > 100 for p in found[:3]), found  # ~667 lines each
        assert all(p[3] == 0 for p in found[3:]), found
        # a narrower window: the chart and its lines are laid out again, still on the axes
        page.set_viewport_size({"width": 1000, "height": 1000})
        page.wait_for_function(
            "document.querySelector('#parcoords canvas.parcoords-lines').width < 2 * 1300"
        )
        opt = page.evaluate(AXES_DRAWN)["optimizer"]
        ys = sorted(opt["labels"][name] for name in OPTIMIZERS)
        found = page.evaluate(SAMPLE, ["parcoords-lines", [[opt["x"], y] for y in ys]])
        assert all(p[3] > 100 for p in found), found
    finally:
        context.close()


def test_a_large_results_line_names_its_run_on_hover_and_opens_it_on_click(
    page: Any, big_server: LiveServer
) -> None:
    _open_lines(page, big_server)
    # r0000's segment from train loss (0.5, alone there) toward accuracy 0: a little way along
    a = page.evaluate(POINT, ["train loss", 0.5])
    b = page.evaluate(POINT, ["accuracy (eval)", 0])
    x, y = a[0] + (b[0] - a[0]) * 0.04, a[1] + (b[1] - a[1]) * 0.04
    page.mouse.move(x, y)
    tip = page.locator("#parcoords div").filter(has_text="click to open").first
    tip.wait_for()
    text = tip.inner_text()
    assert text.split(" · ")[0].strip() == "r0000", text
    assert "train loss: 0.5" in text and "accuracy (eval): 0" in text and "optimizer: Adam" in text
    # the hovered line is drawn again, opaque and wider, on the focus canvas
    box = page.locator("#parcoords").bounding_box()
    focus = page.evaluate(SAMPLE, ["parcoords-focus", [[x - box["x"], y - box["y"]]]])[0]
    assert focus[3] > 200, focus
    page.mouse.move(box["x"] + 5, box["y"] + 5)  # off every line: the box goes
    tip.wait_for(state="hidden")
    page.mouse.click(x, y)
    page.wait_for_function("location.hash === '#/run/r0000'")


def test_brushing_a_log_axis_dims_the_large_results_lines_outside_it_and_filters_the_table(
    page: Any, big_server: LiveServer
) -> None:
    _open_lines(page, big_server)
    box = page.locator("#parcoords").bounding_box()
    at = {v: page.evaluate(POINT, ["train loss", v]) for v in (0.5, 0.05, 0.01, 1e-4)}
    local = [[p[0] - box["x"], p[1] - box["y"]] for p in (at[0.5], at[0.01])]
    before = page.evaluate(SAMPLE, ["parcoords-lines", local])
    assert 35 < before[0][3] < 80, before  # r0000 at the lines' normal opacity, 0.2
    page.mouse.move(at[0.05][0], at[0.05][1])
    page.mouse.down()
    page.mouse.move(at[1e-4][0], at[1e-4][1] + 4, steps=10)
    page.mouse.up()
    page.wait_for_selector("#brush-info:not([hidden])")
    page.wait_for_function(
        f"!document.querySelector('#table-count').textContent.startsWith('{RUNS} ')"
    )
    count = int(page.locator("#table-count").inner_text().split()[0])
    assert 1900 < count < RUNS  # loss <= 0.05: i >= 18
    losses = page.eval_on_selector_all(
        '#runs-table td[data-column="loss"]', "cells => cells.map(c => Number(c.title))"
    )
    assert losses and max(losses) <= 0.05
    outside, inside = page.evaluate(SAMPLE, ["parcoords-lines", local])
    assert outside[3] < 25, outside  # r0000 dimmed to 0.06
    assert inside[3] > 200, inside  # r0098 (loss 0.01) inside: 0.9
    shot(page, "runs-2000-brushed")


def test_a_missing_category_is_drawn_at_the_axis_dash(page: Any, tmp_path: Path) -> None:
    """Every fourth of 1,600 runs has no team: their lines go to the team axis's "—"."""
    base = tmp_path / "runs"
    for i in range(1600):
        write_run(
            base,
            f"t{i:04d}",
            optimizer=OPTIMIZERS[i % 3],
            loss=1.0 / (i + 2),
            user={"team": ("red", "blue")[i % 2]} if i % 4 else None,
        )
    server = LiveServer(base).start()
    try:
        page.goto(f"{server.url}#/lineage")
        page.wait_for_function("document.querySelector('#parcoords')?.dataset.lines === '1600'")
        team = page.evaluate(AXES_DRAWN)["user_defined/team"]
        assert sorted(team["labels"]) == ["blue", "red", "—"]
        ys = sorted(team["labels"].values())
        points = [[team["x"], y] for y in ys] + [
            [team["x"], (a + b) / 2] for a, b in zip(ys, ys[1:], strict=False)
        ]
        found = page.evaluate(SAMPLE, ["parcoords-lines", points])
        assert all(p[3] > 100 for p in found[:3]), found  # 400 runs at "—", 600 at each team
        assert all(p[3] == 0 for p in found[3:]), found
    finally:
        server.stop()
