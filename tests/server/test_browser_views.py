"""The run page's histogram and loss-landscape views in headless Chromium, checked by what
is on screen: the geometry of the SVG texts ECharts draws against the chart's own grid, the
axes' pixel scales, and screenshots of plotly's WebGL scene (issue: the web UI as a demanding
ML engineer sees it)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tests.runs import sample_run
from tests.server.browser_support import LiveServer, doc_image, shot
from trainledger.summary import SummaryRecord

pytestmark = pytest.mark.browser

HIST_STEPS = 40
HIST_TAGS = ("activations", "fc.bias", "fc.weight")  # alphabetically, the input comes first


@pytest.fixture(scope="module")
def hist_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    base = tmp_path_factory.mktemp("views") / "base"
    run = sample_run(base, "ours", 0, scalars=3)
    rng = np.random.default_rng(2)
    with SummaryRecord(run) as record:
        for step in range(1, HIST_STEPS + 1):
            for k, tag in enumerate(HIST_TAGS):  # centred on 0: the x axis spans both signs
                record.add_histogram(tag, rng.normal(0.0, 1.0 + step / 20 + k, 500), step)
            record.record(step)
    server = LiveServer(base).start()
    yield server
    server.stop()


def _open_section(page: Any, url: str, run: str, section: str) -> Any:
    page.goto(f"{url}#/run/{run}")
    page.wait_for_function("document.body.dataset.ready === 'run'")
    page.click(f"#{section} > summary")
    page.wait_for_function(f"document.getElementById({section!r}).dataset.loaded === {run!r}")
    return page.locator(f"#{section}")


# The plot rectangle of an ECharts chart (its grid model) and every SVG text it drew, in
# pixels from the chart's top left corner.
CHART_TEXTS = """(sel) => {
  const el = document.querySelector(sel);
  const chart = echarts.getInstanceByDom(el);
  const rect = chart.getModel().getComponent("grid").coordinateSystem.getRect();
  const box = el.getBoundingClientRect();
  const texts = [...el.querySelectorAll("svg text")].map((t) => {
    const r = t.getBoundingClientRect();
    return { text: t.textContent, x0: r.left - box.left, x1: r.right - box.left,
             y0: r.top - box.top, y1: r.bottom - box.top };
  }).filter((t) => t.text !== "");
  return { grid: { x0: rect.x, x1: rect.x + rect.width, y0: rect.y, y1: rect.y + rect.height },
           texts };
}"""


def _chart_texts(page: Any, selector: str) -> tuple[dict[str, float], list[dict[str, Any]]]:
    found = page.evaluate(CHART_TEXTS, selector)
    return found["grid"], found["texts"]


def _overlap(a: dict[str, float], b: dict[str, float]) -> bool:
    return a["x0"] < b["x1"] and b["x0"] < a["x1"] and a["y0"] < b["y1"] and b["y0"] < a["y1"]


def _inside(text: dict[str, float], grid: dict[str, float]) -> bool:
    return _overlap(text, grid)


def _number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def test_histograms_open_on_a_weight_with_axes_at_the_edges_and_step_labels(
    page: Any, hist_server: LiveServer
) -> None:
    section = _open_section(page, hist_server.url, "ours", "run-histograms")
    page.wait_for_function("document.getElementById('run-histograms').dataset.drawn")
    assert section.locator("select").input_value() == "fc.weight"  # not "activations"
    assert section.get_attribute("data-mode") == "offset"
    grid, texts = _chart_texts(page, "#run-histograms .hist-chart")
    assert not [t for t in texts if _inside(t, grid)], texts  # no axis in the plot's middle
    right = [t for t in texts if t["x0"] >= grid["x1"]]
    assert [t["text"] for t in right if not _number(t["text"])] == ["step"]
    labels = sorted((t for t in right if _number(t["text"])), key=lambda t: -t["y0"])
    steps = [int(t["text"]) for t in labels]
    # every k-th step labelled from the newest (bottom) up, k the same throughout
    assert len(steps) >= 6 and steps[0] == HIST_STEPS, steps
    gaps = {a - b for a, b in zip(steps, steps[1:], strict=False)}
    assert len(gaps) == 1 and gaps.pop() > 0, steps
    assert not any(_overlap(a, b) for a, b in zip(labels, labels[1:], strict=False)), labels
    # ... each beside its step's baseline (the y axis of the chart's model is in rows)
    rows = page.evaluate(
        """(steps) => {
          const chart = echarts.getInstanceByDom(document.querySelector('#run-histograms .hist-chart'));
          const n = chart.getOption().series.length;
          const names = chart.getOption().series.map((s) => s.name);
          return steps.map((s) => chart.convertToPixel({ yAxisIndex: 0 }, n - 1 - names.indexOf(`step ${s}`)));
        }""",
        steps,
    )
    for label, y in zip(labels, rows, strict=True):
        assert abs((label["y0"] + label["y1"]) / 2 - y) < 3, (label, y)
    page.mouse.move(5, 5)
    doc_image(section.locator(".media-body"), "histograms")

    page.check("#run-histograms input[value=overlay]")
    page.wait_for_function("document.getElementById('run-histograms').dataset.mode === 'overlay'")
    grid, texts = _chart_texts(page, "#run-histograms .hist-chart")
    assert not [t for t in texts if _inside(t, grid)], texts
    (title,) = [t for t in texts if t["text"] == "count"]
    middle = (grid["y0"] + grid["y1"]) / 2
    assert title["x1"] <= grid["x0"] and abs((title["y0"] + title["y1"]) / 2 - middle) < 20, title
    counts = [t for t in texts if _number(t["text"]) and t["y1"] <= grid["y1"]]
    assert len(counts) >= 3 and all(t["x1"] <= grid["x0"] for t in counts), counts
    shot(page, "views-histogram-overlay")
