"""The run page's layout in headless Chromium (issue 51 item 14): its curves above the fold,
the loss landscape's axis titles whole, its contour not a strip and both its views on one
colour scale, a key for the histogram overlay's step colours, and any chart enlarged to the
whole window (Escape to go back). Each test measures what is drawn: element boxes, the
ECharts instance's option and pixels, the text drawn on the canvas."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.server.browser_support import LiveServer, shot
from tests.server.structure_runs import make_structure_base
from tests.server.test_browser import open_view

pytestmark = pytest.mark.browser

CONTOUR = "echarts.getInstanceByDom(document.querySelector('#run-landscapes .landscape-contour'))"
HIST = "echarts.getInstanceByDom(document.querySelector('#run-histograms .hist-chart'))"


@pytest.fixture(scope="module")
def layout_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    base = make_structure_base(tmp_path_factory.mktemp("layout") / "base", size=25)
    server = LiveServer(base).start()
    yield server
    server.stop()


def _open_section(page: Any, section: str, run: str) -> Any:
    page.click(f"#{section} > summary")
    page.wait_for_function(f"document.getElementById({section!r}).dataset.loaded === {run!r}")
    return page.locator(f"#{section}")


def _landscape(page: Any, url: str) -> Any:
    """The run page of "ours" with its landscape of steps 5-12 drawn (x range 2.9, y 0.5)."""
    open_view(page, url, "run/ours")
    section = _open_section(page, "run-landscapes", "ours")
    section.locator("select").select_option(index=1)
    page.wait_for_function(
        "document.getElementById('run-landscapes').dataset.drawn === 'landscape_[5, 12]'"
    )
    return section


def test_the_run_pages_curves_are_above_the_fold_at_1280_by_800(
    page: Any, layout_server: LiveServer
) -> None:
    page.set_viewport_size({"width": 1280, "height": 800})
    open_view(page, layout_server.url, "run/ours")
    page.wait_for_selector("#run-scalars:not([hidden]) .chart-small[data-points]")
    page.wait_for_selector("#run-cards .card")
    first = page.locator("#run-scalars .chart-small").first.bounding_box()
    assert first["y"] >= 0 and first["y"] + first["height"] <= 800, first
    drawn = page.evaluate(
        "echarts.getInstanceByDom(document.querySelector('#run-scalars .chart-small'))"
        ".getOption().series[0].data.length"
    )
    assert drawn > 0
    shot(page, "run-page-fold")


def test_the_landscapes_axis_titles_are_drawn_whole(page: Any, layout_server: LiveServer) -> None:
    """The 3-D scene's titles are short (plotly puts them at the box's corners, where the long
    ones ran off the canvas); the long names are in a caption that is not cut; the contour's
    axis names, as drawn on its canvas, lie inside it."""
    section = _landscape(page, layout_server.url)
    titles = page.evaluate(
        "(() => { const s = document.querySelector('#run-landscapes .landscape-surface')"
        "._fullLayout.scene; return [s.xaxis.title.text, s.yaxis.title.text]; })()"
    )
    assert titles == ["PC1", "PC2"]
    caption = section.locator(".landscape-axes")
    text = caption.inner_text()
    assert "PC1: PC1 (" in text and "% of variance)" in text and "PC2: PC2 (" in text
    assert caption.evaluate("(e) => e.scrollWidth <= e.clientWidth")
    drawn = page.evaluate(
        f"""(() => {{
          const chart = {CONTOUR};
          const names = chart.getOption().xAxis.concat(chart.getOption().yAxis)
            .map((a) => a.name).filter(Boolean);
          const texts = chart.getZr().storage.getDisplayList()
            .filter((el) => el.style && names.includes(el.style.text));
          return {{ names, width: chart.getWidth(), height: chart.getHeight(),
            boxes: texts.map((el) => {{
              const r = el.getBoundingRect().clone();
              r.applyTransform(el.getComputedTransform());
              return [el.style.text, r.x, r.y, r.width, r.height];
            }}) }};
        }})()"""
    )
    assert len(drawn["boxes"]) == 2, drawn
    for name, x, y, w, h in drawn["boxes"]:
        assert x >= 0 and y >= 0, (name, x, y)
        assert x + w <= drawn["width"] and y + h <= drawn["height"], (name, x, y, w, h)


def test_the_contour_is_not_a_strip(page: Any, layout_server: LiveServer) -> None:
    """This landscape's plane spans 2.9 by 0.5: to one scale, a 420 x 75 px strip; now at most
    twice as wide as high, and saying its axes are to different scales."""
    _landscape(page, layout_server.url)
    plot = page.evaluate(
        f"""(() => {{
          const chart = {CONTOUR};
          const [x, y] = [chart.getOption().xAxis[0], chart.getOption().yAxis[0]];
          const a = chart.convertToPixel({{ xAxisIndex: 0, yAxisIndex: 0 }}, [x.min, y.min]);
          const b = chart.convertToPixel({{ xAxisIndex: 0, yAxisIndex: 0 }}, [x.max, y.max]);
          return {{ width: Math.abs(b[0] - a[0]), height: Math.abs(b[1] - a[1]),
                    title: (chart.getOption().title[0] || {{}}).text }};
        }})()"""
    )
    assert plot["height"] >= 150, plot
    assert 0.5 <= plot["width"] / plot["height"] <= 2.0 + 1e-6, plot
    assert "different scales" in plot["title"]


def test_both_landscape_views_share_one_colour_scale(page: Any, layout_server: LiveServer) -> None:
    """The surface's scale runs over the contour's levels (same min and max), and the colour
    the surface gives each band's middle is the band's colour in the contour's key."""
    _landscape(page, layout_server.url)
    got = page.evaluate(
        f"""(() => {{
          const surface = document.querySelector('#run-landscapes .landscape-surface').data[0];
          const pieces = {CONTOUR}.getOption().visualMap[0].pieces;
          const rgb = (c) => c.startsWith('#')
            ? [1, 3, 5].map((i) => parseInt(c.slice(i, i + 2), 16))
            : c.match(/[0-9.]+/g).slice(0, 3).map(Number);
          const scale = surface.colorscale;
          const at = (v) => {{
            const t = (v - surface.cmin) / (surface.cmax - surface.cmin);
            const k = scale.findIndex(([s]) => s >= t);
            if (k <= 0) return rgb(scale[0][1]);
            const [[s0, c0], [s1, c1]] = [scale[k - 1], scale[k]];
            const [a, b] = [rgb(c0), rgb(c1)];
            return a.map((x, i) => x + (b[i] - x) * (t - s0) / (s1 - s0));
          }};
          return {{ cmin: surface.cmin, cmax: surface.cmax, scale: typeof scale,
            lo: pieces[0].min, hi: pieces.at(-1).max,
            diffs: pieces.map((p) => {{
              const want = at((p.min + p.max) / 2);
              return Math.max(...rgb(p.color).map((x, i) => Math.abs(x - want[i])));
            }}) }};
        }})()"""
    )
    assert got["scale"] == "object", got  # stops, not plotly's named "Viridis"
    assert got["cmin"] == got["lo"] and got["cmax"] == got["hi"], got
    assert len(got["diffs"]) >= 4 and max(got["diffs"]) <= 2, got


def test_the_histogram_overlay_has_a_key_for_its_step_colours(
    page: Any, layout_server: LiveServer
) -> None:
    open_view(page, layout_server.url, "run/ms")
    section = _open_section(page, "run-histograms", "ms")
    page.check("#run-histograms input[value=overlay]")
    page.wait_for_function("document.getElementById('run-histograms').dataset.mode === 'overlay'")
    key = page.evaluate(
        f"""(() => {{
          const option = {HIST}.getOption();
          const lines = option.series.filter((s) => s.name);
          const map = option.visualMap && option.visualMap[0];
          return map && {{ min: map.min, max: map.max, colors: map.inRange.color,
            first: lines[0].lineStyle.color, last: lines.at(-1).lineStyle.color,
            steps: [lines[0].name, lines.at(-1).name] }};
        }})()"""
    )
    assert key is not None, "no key in overlay mode"
    assert key["steps"] == ["step 1", "step 12"]
    assert [key["min"], key["max"]] == [1, 12]
    assert key["colors"] == [key["first"], key["last"]]
    # ... and drawn: its two end labels, inside the chart's box
    chart = section.locator(".hist-chart").bounding_box()
    for label in ("step 1", "step 12"):
        box = section.locator(".hist-chart svg text", has_text=label).first.bounding_box()
        assert box is not None, label
        assert chart["x"] <= box["x"] and box["x"] + box["width"] <= chart["x"] + chart["width"]
        assert chart["y"] <= box["y"] and box["y"] + box["height"] <= chart["y"] + chart["height"]
    shot(page, "histogram-overlay-key")


def test_a_chart_is_enlarged_to_the_window_and_escape_closes_it(
    page: Any, layout_server: LiveServer
) -> None:
    open_view(page, layout_server.url, "run/ours")
    page.wait_for_selector("#run-scalars:not([hidden]) .chart-small[data-points]")
    host = page.locator("#run-scalars .chart-small").first
    small = host.bounding_box()
    width = "echarts.getInstanceByDom(document.querySelector('#run-scalars .chart-small'))"
    assert page.evaluate(f"{width}.getWidth()") < 700
    page.locator("#run-scalars .chart-expand").first.click()
    view = page.viewport_size
    page.wait_for_function(f"{width}.getWidth() > {view['width'] - 100}")
    big = host.bounding_box()
    assert big["width"] >= view["width"] - 40 and big["height"] >= view["height"] - 60, big
    assert big["y"] <= 40
    shot(page, "chart-enlarged")
    page.keyboard.press("Escape")
    page.wait_for_function(f"{width}.getWidth() < 700")
    assert host.bounding_box()["height"] == pytest.approx(small["height"], abs=1)
