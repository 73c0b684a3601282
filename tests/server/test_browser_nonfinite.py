"""Charts that tell the truth when training goes wrong, in real headless Chromium over a
small base (``tests/diverging_runs.py``): a run whose loss went inf at step 72 then NaN is
marked where its line stops and its hover says so; it is flagged in the table and on its
run page; a single point between two gaps is drawn."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.diverging_runs import INF_STEP, LONE_STEP, NAN_STEP, write_diverging_base
from tests.server.browser_support import LiveServer, shot
from tests.server.test_browser import open_view

pytestmark = pytest.mark.browser

CHART = "echarts.getInstanceByDom(document.querySelector('.chart-scalar'))"


def open_scalars(page: Any, url: str, query: str) -> None:
    page.goto(f"{url}#/scalars?{query}")
    page.wait_for_function("document.body.dataset.ready === 'scalars'")


@pytest.fixture(scope="module")
def diverging(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    base = write_diverging_base(tmp_path_factory.mktemp("diverging") / "runs")
    server = LiveServer(base).start()
    yield server
    server.stop()


def test_a_diverged_curve_is_marked_where_it_stops_and_its_hover_says_why(
    page: Any, diverging: LiveServer
) -> None:
    open_scalars(page, diverging.url, "run=healthy&run=diverged&tag=loss&smooth=0")
    page.wait_for_function("document.querySelector('.chart-scalar')?.dataset.lines === '2'")
    marks = page.evaluate(
        f"() => {CHART}.getOption().series.filter((s) => s.name.endsWith(' (non-finite)'))"
        ".map((s) => [s.name, s.data])"
    )
    assert [name for name, _ in marks] == ["diverged (non-finite)"]
    [(_, data)] = marks
    assert [(x, step, kind) for x, _, step, kind in data] == [
        (INF_STEP, INF_STEP, "inf"),
        (NAN_STEP, NAN_STEP, "nan"),
    ]
    # at the height where the line stopped: the last finite loss (step 71, scale 1.1)
    last = page.evaluate(
        f"() => {CHART}.getOption().series.find((s) => s.name === 'diverged').data"
        f".filter((p) => p[1] !== null && p[0] < {INF_STEP}).at(-1)"
    )
    assert last[0] == INF_STEP - 1 and all(y == last[1] for _, y, _, _ in data)
    # drawn, not only configured: the labels are in the SVG
    texts = page.eval_on_selector_all(".chart-scalar svg text", "ts => ts.map(t => t.textContent)")
    assert f"inf @{INF_STEP}" in texts and f"nan @{NAN_STEP}" in texts
    # the hover at step 100: the healthy run's value and what became of the diverged one
    index = page.evaluate(
        f"() => {CHART}.getOption().series.findIndex((s) => s.name === 'healthy')"
    )
    page.evaluate(
        f"() => {CHART}.dispatchAction({{ type: 'showTip', seriesIndex: {index}, dataIndex: 100 }})"
    )
    tip = page.locator(".chart-scalar div").filter(has_text="step 100").first
    tip.wait_for()
    text = tip.inner_text()
    assert "healthy" in text
    assert f"diverged: inf at step {INF_STEP}, nan at step {NAN_STEP}" in text
    shot(page, "scalars-nonfinite")


def test_a_point_between_two_gaps_is_drawn_with_a_symbol(page: Any, diverging: LiveServer) -> None:
    """The diverged run's one finite loss among NaN (step 110) has no segment to draw: it
    gets a dot, in the SVG; the runs' lines get none."""
    open_scalars(page, diverging.url, "run=healthy&run=diverged&tag=loss&smooth=0")
    page.wait_for_function("document.querySelector('.chart-scalar')?.dataset.lines === '2'")
    lone = page.evaluate(
        f"() => {CHART}.getOption().series.filter((s) => s.name.endsWith(' (point)'))"
        ".map((s) => [s.name, s.data.map((p) => [p[0], p[1]])])"
    )
    assert lone == [["diverged (point)", [[LONE_STEP, 3.0]]]]
    dots = page.eval_on_selector_all(
        ".chart-scalar svg path",
        "ps => ps.filter(p => /A|C/.test(p.getAttribute('d') || '')).length",
    )
    assert dots >= 1


def test_a_diverged_run_is_flagged_in_the_table_and_on_its_page(
    page: Any, diverging: LiveServer
) -> None:
    open_view(page, diverging.url, "lineage")
    page.wait_for_function("document.querySelectorAll('#runs-table tbody tr').length === 3")
    flags = page.eval_on_selector_all(
        "#runs-table tbody tr",
        "rows => rows.map(r => [r.dataset.run, [...r.querySelectorAll('.badge.diverged')]"
        ".map(b => [b.textContent, b.title])])",
    )
    said = f"loss: inf at step {INF_STEP}; eval/loss: nan at step {NAN_STEP}"
    assert sorted(flags) == [
        ["diverged", [["diverged", said]]],
        ["healthy", []],
        ["outlier", []],
    ]
    open_view(page, diverging.url, "run/diverged")
    page.wait_for_function("document.querySelector('#run-status').textContent === 'finished'")
    badge = page.locator("#run-diverged")
    assert badge.is_visible() and badge.text_content() == "diverged"
    assert badge.get_attribute("title") == said
    open_view(page, diverging.url, "run/healthy")
    page.wait_for_function("document.querySelector('#run-title').textContent === 'healthy'")
    page.wait_for_function("document.querySelector('#run-diverged').hidden")
