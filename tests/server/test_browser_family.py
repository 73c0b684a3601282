"""The run's family in headless Chromium (issue 53 item 6): the run page's Family card, its
nodes and edge labels where they are drawn, no family request on the runs table, and the
scalar comparison's "Continue from parent"."""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import pytest

from tests.server.browser_support import LiveServer, doc_image
from tests.server.family_runs import make_family_base
from tests.server.test_browser import open_view
from tests.server.test_browser_curves import hover_at

pytestmark = pytest.mark.browser


@pytest.fixture(scope="module")
def family_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    server = LiveServer(make_family_base(tmp_path_factory.mktemp("family") / "base")).start()
    yield server
    server.stop()


def _family(page: Any, url: str, run: str) -> Any:
    open_view(page, url, f"run/{run}")
    page.wait_for_function(f"document.getElementById('run-family').dataset.loaded === {run!r}")
    return page.locator("#run-family")


def _box(page: Any, selector: str) -> dict[str, float]:
    box: dict[str, float] = page.locator(selector).bounding_box()
    return box


def test_a_childs_family_card_draws_its_parent_left_and_its_evaluation_below(
    page: Any, family_server: LiveServer
) -> None:
    page.set_viewport_size({"width": 1280, "height": 800})
    card = _family(page, family_server.url, "fine")
    assert card.is_visible()
    parent = card.locator(".family-link.ancestor")
    assert parent.locator(".family-edge").inner_text() == "step 8 · 100%"
    assert parent.locator("a.family-run").get_attribute("href") == "#/run/pre"
    me = _box(page, "#run-family .family-node.self")
    left = _box(page, "#run-family .family-node.ancestor")
    below = _box(page, "#run-family .family-node.evaluation")
    assert left["x"] + left["width"] <= me["x"], (left, me)  # the parent to the left
    assert below["y"] >= me["y"] + me["height"], (below, me)  # the evaluation below
    ev = card.locator(".family-link.evaluation")
    assert ev.locator(".family-edge").inner_text() == "step 8 · 100%"
    assert ev.locator("a.family-run").inner_text() == "fine-eval"
    assert card.locator(".family-node.descendant").count() == 0
    doc_image(card, "family")
    # the parent's link opens its page, where the child is drawn to its right
    parent.locator("a.family-run").click()
    page.wait_for_function("document.getElementById('run-family').dataset.loaded === 'pre'")
    me = _box(page, "#run-family .family-node.self")
    right = _box(page, "#run-family .family-node.descendant")
    assert right["x"] >= me["x"] + me["width"], (right, me)
    assert page.locator("#run-family .family-link.descendant .family-edge").inner_text() == (
        "step 8 · 100%"
    )
    assert page.locator("#run-family .family-node.descendant").get_attribute("data-run") == "fine"


def test_a_run_without_family_has_no_card(page: Any, family_server: LiveServer) -> None:
    card = _family(page, family_server.url, "alone")
    assert card.is_hidden()
    assert page.locator("#run-family .family-node").count() == 0


def test_the_curves_stay_above_the_fold_with_a_family(page: Any, family_server: LiveServer) -> None:
    page.set_viewport_size({"width": 1280, "height": 800})
    _family(page, family_server.url, "fine")
    page.wait_for_selector("#run-scalars:not([hidden]) .chart-small[data-points]")
    first = _box(page, "#run-scalars .chart-small")
    assert first["y"] >= 0 and first["y"] + first["height"] <= 800, first


def test_the_runs_table_asks_for_no_family(page: Any, family_server: LiveServer) -> None:
    asked: list[str] = []
    page.on("request", lambda request: asked.append(request.url))
    open_view(page, family_server.url, "lineage")
    page.wait_for_function("document.querySelectorAll('#runs-table tbody tr').length === 4")
    assert [u for u in asked if "/api/" in u and u.endswith("/family")] == []


def test_the_parent_column_is_an_index_field_with_links(
    page: Any, family_server: LiveServer
) -> None:
    """Filled from the rows themselves (no request per run), sortable like any index field;
    an evaluation-only run's parent is the checkpoint it evaluated."""
    asked: list[str] = []
    page.on("request", lambda request: asked.append(request.url))
    open_view(page, family_server.url, "lineage")
    page.wait_for_function("document.querySelectorAll('#runs-table tbody tr').length === 4")
    page.click("#columns-btn")
    group = page.locator('#columns-panel input[data-column="parent/run"]')
    group.check()
    cells = 'td[data-column="parent/run"]'
    page.wait_for_function(f"[...document.querySelectorAll('#runs-table {cells}')].length === 4")
    fine = page.locator(f'#runs-table tr[data-run="fine"] {cells}')
    assert fine.inner_text() == "pre @8"
    assert fine.locator("a").get_attribute("href") == "#/run/pre"
    assert "100% of the weights" in (fine.locator("a").get_attribute("title") or "")
    assert page.locator(f'#runs-table tr[data-run="pre"] {cells}').inner_text() == "—"
    evaluated = page.locator(f'#runs-table tr[data-run="fine-eval"] {cells}')
    assert evaluated.inner_text().startswith("fine @")
    assert [u for u in asked if u.endswith("/family")] == []
    page.click("#columns-btn")  # (closes the chooser)
    header = page.locator('#runs-table th[data-column="parent/run"]')
    assert "sortable" in (header.get_attribute("class") or "")
    header.click()  # ascending: no parent first, then by the parent's name (./fine, then ./pre)
    page.wait_for_function(
        "document.querySelector('#runs-table tbody tr:last-child')?.dataset.run === 'fine'"
    )
    page.evaluate("localStorage.clear()")


HOST = "document.querySelector('[data-chart-tag=\"loss\"] .chart-scalar')"
SCALARS = f"echarts.getInstanceByDom({HOST})"


def _lines(page: Any) -> dict[str, dict[str, Any]]:
    """The loss chart's line series by id (a run's own line: its name), as drawn."""
    found: dict[str, dict[str, Any]] = page.evaluate(
        f"""() => Object.fromEntries({SCALARS}.getOption().series
          .filter((s) => s.type === 'line')
          .map((s) => [s.id && s.id.startsWith('parent') ? s.id : s.name, {{
            color: s.color, dash: (s.lineStyle || {{}}).type || 'solid',
            x: s.data.map((p) => p[0]), y: s.data.map((p) => p[1]),
            step: s.data.map((p) => p[2]) }}]))"""
    )
    return found


def test_continue_from_parent_draws_the_childs_curve_after_its_parents(
    page: Any, family_server: LiveServer
) -> None:
    """Issue 53 item 6: off by default, ``fine``'s loss starts at its own first step; on, its
    parent's points up to the fork (step 8) are drawn dashed in its colour, then its own at
    8 + step; the hover names the run of each point; on the epoch axis the option is off."""
    bodies: list[str] = []
    page.on(
        "request",
        lambda r: bodies.append(r.post_data or "") if r.url.endswith("/scalars/series") else None,
    )
    page.goto(f"{family_server.url}#/scalars?run=fine&run=pre&tag=loss")
    page.wait_for_function("document.body.dataset.ready === 'scalars'")
    page.wait_for_function(f"{HOST}?.dataset.lines === '2'")
    assert not page.is_checked("#continue-parent")
    off = _lines(page)
    assert set(off) == {"fine", "pre"}
    assert off["fine"]["x"] == list(range(1, 9))  # its own first step
    assert off["fine"]["y"] == pytest.approx([1.0 - 0.1 * s for s in range(1, 9)])
    assert bodies and not any("continue_parent" in b for b in bodies)  # no parent asked for
    page.check("#continue-parent")
    page.wait_for_function(f"{SCALARS}.getOption().series.some((s) => s.id === 'parent:fine')")
    assert any('"continue_parent":true' in b for b in bodies)
    assert "parent=1" in page.url
    on = _lines(page)
    head, own = on["parent:fine"], on["fine"]
    # pre's points at steps 1-8, joined to fine's first point
    assert head["x"] == [*range(1, 9), 9] and head["step"] == [*range(1, 9), 1]
    assert head["y"] == pytest.approx([2.0 - 0.1 * s for s in range(1, 9)] + [0.9])
    assert head["dash"] == "dashed" and own["dash"] == "solid"
    assert head["color"] == own["color"]
    assert own["x"] == list(range(9, 17)) and own["step"] == list(range(1, 9))
    assert own["y"] == pytest.approx([1.0 - 0.1 * s for s in range(1, 9)])
    assert on["pre"]["x"] == list(range(1, 9))  # a run without a parent, as before
    assert re.search(r"fine: 1\.6 \(parent pre\)", hover_at(page, "loss", 4))
    assert re.search(r"fine: 0\.6 @ step 4", hover_at(page, "loss", 12))
    # epochs: each run's own, the option disabled and said so
    page.click("#x-axis button[data-x='epoch']")
    page.wait_for_function("document.getElementById('continue-parent').disabled")
    title = page.locator("label:has(#continue-parent)").get_attribute("title")
    assert "Step axis" in str(title)
    page.wait_for_function(f"!{SCALARS}.getOption().series.some((s) => s.id === 'parent:fine')")
    assert _lines(page)["fine"]["x"][0] == pytest.approx(0.25)  # step 1 of 4 per epoch
    page.click("#x-axis button[data-x='step']")
    page.wait_for_function(f"{SCALARS}.getOption().series.some((s) => s.id === 'parent:fine')")
    page.uncheck("#continue-parent")
    page.wait_for_function(f"!{SCALARS}.getOption().series.some((s) => s.id === 'parent:fine')")
    assert _lines(page)["fine"]["x"] == list(range(1, 9))
