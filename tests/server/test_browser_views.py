"""The run page's histogram and loss-landscape views in headless Chromium, checked by what
is on screen: the geometry of the SVG texts ECharts draws against the chart's own grid, the
axes' pixel scales, and screenshots of plotly's WebGL scene (issue: the web UI as a demanding
ML engineer sees it)."""

from __future__ import annotations

import base64
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

from tests.runs import sample_run
from tests.server.browser_support import ARTIFACTS, LiveServer, doc_image, shot
from tests.server.structure_runs import make_structure_base
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
          const box = document.querySelector('#run-histograms .hist-chart');
          const chart = echarts.getInstanceByDom(box);
          const n = chart.getOption().series.length;
          const names = chart.getOption().series.map((s) => s.name);
          const row = (s) => n - 1 - names.indexOf(`step ${s}`);
          return steps.map((s) => chart.convertToPixel({ yAxisIndex: 0 }, row(s)));
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


# --- loss landscapes ------------------------------------------------------------------------


@pytest.fixture(scope="module")
def landscape_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    base = make_structure_base(tmp_path_factory.mktemp("views-landscape") / "base", size=25)
    server = LiveServer(base).start()
    yield server
    server.stop()


def _show_landscape(page: Any, url: str, run: str, tag: str) -> Any:
    section = _open_section(page, url, run, "run-landscapes")
    labels = section.locator("select option").all_inner_texts()
    section.locator("select").select_option(label=next(x for x in labels if x.startswith(tag)))
    page.wait_for_function(f"document.getElementById('run-landscapes').dataset.drawn === {tag!r}")
    page.mouse.move(5, 5)  # no hover label
    return section


# The contour chart's own model: the value axes' extents and pixel ends, their labels and
# names, and the plot rectangle.
CONTOUR_MODEL = """() => {
  const box = document.querySelector('#run-landscapes .landscape-contour');
  const chart = echarts.getInstanceByDom(box);
  const axis = (dim) => {
    const a = chart.getModel().getComponent(dim + 'Axis', 0).axis;
    const [lo, hi] = a.scale.getExtent();
    const px = (v) => chart.convertToPixel({ [dim + 'AxisIndex']: 0 }, v);
    return { lo, hi, pxLo: px(lo), pxHi: px(hi), name: chart.getOption()[dim + 'Axis'][0].name,
             labels: a.getViewLabels().map((l) => l.formattedLabel).filter((t) => t !== '') };
  };
  const rect = chart.getModel().getComponent('grid').coordinateSystem.getRect();
  const pieces = chart.getOption().visualMap[0].pieces.map((p) => p.label);
  return { x: axis('x'), y: axis('y'), width: rect.width, height: rect.height, pieces };
}"""


def _round_steps(labels: list[str]) -> bool:
    """Labels of values 1, 2, 2.5, 3 or 5 times a power of ten apart, evenly spaced."""
    values = [float(t) for t in labels]
    steps = {round(b - a, 9) for a, b in zip(values, values[1:], strict=False)}
    if len(steps) != 1:
        return False
    mantissa = f"{steps.pop():e}".split("e")[0]
    return float(mantissa) in (1.0, 2.0, 2.5, 3.0, 5.0)


def test_landscape_contour_is_not_a_strip_with_round_ticks_and_named_directions(
    page: Any, landscape_server: LiveServer
) -> None:
    _show_landscape(page, landscape_server.url, "ours", "landscape_[5, 12]")
    model = page.evaluate(CONTOUR_MODEL)
    x, y = model["x"], model["y"]
    # one scale for both directions would make this plane (spans over 3:1) a strip: it is
    # drawn at most 2:1 instead (issue 51 item 14), as wide as that allows
    spans = (x["hi"] - x["lo"]) / (y["hi"] - y["lo"])
    assert spans > 3 and model["width"] / model["height"] == pytest.approx(2, rel=0.01), model
    for axis in (x, y):
        assert axis["labels"] and all(len(t) <= 5 for t in axis["labels"]), axis
    assert len(x["labels"]) >= 3 and _round_steps(x["labels"]), x
    # the axes are the principal directions, with the variance the API says they explain
    (item,) = [
        i
        for i in page.request.get(landscape_server.url + "api/v1/runs/ours/landscapes").json()[
            "landscapes"
        ]
        if i["tag"] == "landscape_[5, 12]"
    ]
    first, second = (round(100 * r, 1) for r in item["explained_variance"])
    assert x["name"] == f"PC1 ({first:g} % of variance)"
    assert y["name"] == f"PC2 ({second:g} % of variance)"
    # the legend's bands are round losses
    assert all(len(p) <= 14 for p in model["pieces"]) and len(model["pieces"]) >= 4, model
    surface = page.evaluate(
        "document.querySelector('#run-landscapes .landscape-surface')._fullLayout.scene"
        ".xaxis.title.text"
    )
    assert surface == "PC1"  # short at the 3-D box's corner; the caption has the long name
    assert f"PC1: {x['name']}" in page.locator("#run-landscapes .landscape-axes").inner_text()


def test_mindspore_landscapes_name_their_directions_without_a_variance(
    page: Any, landscape_server: LiveServer
) -> None:
    section = _open_section(page, landscape_server.url, "ms", "run-landscapes")
    names = []
    for label in section.locator("select option").all_inner_texts():
        tag = label.split(": ")[0]
        section.locator("select").select_option(label=label)
        page.wait_for_function(
            f"document.getElementById('run-landscapes').dataset.contour === {tag!r}"
        )
        model = page.evaluate(CONTOUR_MODEL)
        names.append((label.split("(")[1].split(")")[0], model["x"]["name"], model["y"]["name"]))
    assert ("PCA", "direction 1", "direction 2") in names, names
    assert {n for n in names if n[0] == "PCA"} == {("PCA", "direction 1", "direction 2")}
    assert {n for n in names if n[0] != "PCA"} <= {
        ("Random", "random direction 1", "random direction 2")
    }


# Pixel masks of what each of several screenshots adds to the first (channels differing by
# more than 40), grown by `grow` pixels; returns each mask's size, the pixels two masks share
# and the white pixels each adds.
MASKS = """async ([urls, grow]) => {
  const load = async (url) => {
    const img = new Image();
    img.src = url;
    await img.decode();
    const c = document.createElement('canvas');
    c.width = img.width; c.height = img.height;
    const g = c.getContext('2d');
    g.drawImage(img, 0, 0);
    return g.getImageData(0, 0, c.width, c.height);
  };
  const [base, ...others] = await Promise.all(urls.map(load));
  const { width, height } = base;
  const masks = others.map((im) => {
    const m = new Uint8Array(width * height);
    let white = 0;
    for (let p = 0; p < width * height; p++) {
      const i = 4 * p;
      if (Math.max(...[0, 1, 2].map((k) => Math.abs(im.data[i + k] - base.data[i + k]))) > 40) {
        m[p] = 1;
        if (Math.min(im.data[i], im.data[i + 1], im.data[i + 2]) > 225) white++;
      }
    }
    return { m, white };
  });
  const grown = masks.map(({ m }) => {
    const out = new Uint8Array(width * height);
    for (let yy = 0; yy < height; yy++) for (let xx = 0; xx < width; xx++) {
      if (!m[yy * width + xx]) continue;
      for (let dy = -grow; dy <= grow; dy++) for (let dx = -grow; dx <= grow; dx++) {
        const a = xx + dx, b = yy + dy;
        if (a >= 0 && b >= 0 && a < width && b < height) out[b * width + a] = 1;
      }
    }
    return out;
  });
  const sizes = masks.map(({ m }) => m.reduce((s, v) => s + v, 0));
  const shared = [];
  for (let i = 0; i < masks.length; i++) for (let j = i + 1; j < masks.length; j++) {
    let n = 0;
    for (let p = 0; p < width * height; p++) if (grown[i][p] && masks[j].m[p]) n++;
    shared.push(n);
  }
  return { sizes, shared, white: masks.map((x) => x.white) };
}"""


def _masks(page: Any, shots: list[bytes], grow: int) -> dict[str, list[int]]:
    urls = ["data:image/png;base64," + base64.b64encode(s).decode("ascii") for s in shots]
    found: dict[str, list[int]] = page.evaluate(MASKS, [urls, grow])
    return found


SURFACE = "#run-landscapes .landscape-surface"


def _relayout(page: Any, update: dict[str, Any]) -> None:
    page.evaluate(f"(u) => Plotly.relayout(document.querySelector({SURFACE!r}), u)", update)
    page.wait_for_timeout(300)  # the WebGL frame after the relayout


@pytest.mark.parametrize("tag", ["landscape_[5, 12]", "landscape_[12]"])
def test_3d_tick_labels_do_not_collide_and_the_final_weights_show(
    page: Any, landscape_server: LiveServer, tag: str
) -> None:
    section = _show_landscape(page, landscape_server.url, "ours", tag)
    canvas = section.locator(".landscape-surface")
    labels = {f"scene.{a}axis.showticklabels": False for a in "xyz"}
    titles = {f"scene.{a}axis.title.text": "" for a in "xyz"}
    names = {
        f"scene.{a}axis.title.text": page.evaluate(
            f"document.querySelector({SURFACE!r})._fullLayout.scene.{a}axis.title.text"
        )
        for a in "xyz"
    }
    _relayout(page, {**labels, **titles})
    shots = [canvas.screenshot()]
    for a in "xyz":  # one axis's tick labels at a time, on the same scene
        _relayout(page, {**labels, f"scene.{a}axis.showticklabels": True})
        shots.append(canvas.screenshot())
    found = _masks(page, shots, grow=2)
    assert all(n > 40 for n in found["sizes"]), found  # each axis's labels are drawn...
    assert found["shared"] == [0, 0, 0], found  # ... and no two within 2 px of each other
    _relayout(page, {**{k.replace("title.text", "showticklabels"): True for k in names}, **names})

    # the final weights: what the marker adds to the picture (legend hidden), white
    _relayout(page, {"showlegend": False})
    index = page.evaluate(
        f"document.querySelector({SURFACE!r}).data.findIndex((t) => t.name === 'final weights')"
    )
    restyle = (
        f"(v) => Plotly.restyle(document.querySelector({SURFACE!r}), {{visible: v}}, [{index}])"
    )
    page.evaluate(restyle, False)
    page.wait_for_timeout(300)
    hidden = canvas.screenshot()
    page.evaluate(restyle, True)
    page.wait_for_timeout(300)
    shown = canvas.screenshot()
    (ARTIFACTS / f"ui-views-final-weights-{tag}.png").write_bytes(shown)
    found = _masks(page, [hidden, shown], grow=0)
    assert found["white"][0] > 20, found  # a marker of 8 px shows at least a few dozen pixels
