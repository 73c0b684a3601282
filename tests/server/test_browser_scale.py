"""The runs page at 2,000 runs, in Chromium: the parallel-coordinates chart draws every run
(on a canvas), and the category labels stay readable over the lines (issue 32: "at 2,000
runs the category labels vanish under the lines")."""

from __future__ import annotations

import base64
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
HIDE_LINES = """() => new Promise((done) => {
  const chart = echarts.getInstanceByDom(document.querySelector('#parcoords'));
  chart.on('finished', function once() { chart.off('finished', once); done(); });
  chart.setOption({ series: [{ lineStyle: { opacity: 0 } }] });
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
