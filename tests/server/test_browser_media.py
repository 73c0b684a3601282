"""The run page's images, histograms and tensors views in headless Chromium (screenshots in
``test-artifacts/``), for a run MindSpore wrote and one of ours with a hostile tag name."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tests.runs import sample_run
from tests.server.test_browser import LiveServer, browser, open_view, page, shot  # noqa: F401
from trainledger.summary import SummaryRecord

pytestmark = pytest.mark.browser

MS_RUN = Path(__file__).parents[1] / "golden" / "mindspore-full" / "run"
HOSTILE = '<img src=x onerror="window.pwned=1">'
HIST_LINES = '#run-histograms svg path[fill="none"][stroke-width="1.2"]'


@pytest.fixture
def media_server(tmp_path: Path) -> Any:
    base = tmp_path / "base"
    run = sample_run(base, "ours", 0, scalars=3)
    rng = np.random.default_rng(1)
    with SummaryRecord(run) as rec:
        for step in range(1, 4):
            rec.add_image(HOSTILE, rng.integers(0, 256, (8, 12, 3), dtype=np.uint8), step)
            rec.add_histogram("w", rng.normal(step, 1.0, 300), step)
    shutil.copytree(MS_RUN, base / "ms")
    server = LiveServer(base).start()
    yield server
    server.stop()


def _open(page: Any, section: str, run: str) -> None:  # noqa: F811
    page.click(f"#{section} > summary")
    page.wait_for_function(f"document.getElementById({section!r}).dataset.loaded === {run!r}")


def test_mindspore_run_images_histograms_tensors(page: Any, media_server: LiveServer) -> None:  # noqa: F811
    open_view(page, media_server.url, "run/ms")
    assert page.evaluate("document.getElementById('run-images').dataset.loaded") is None
    for section in ("run-images", "run-histograms", "run-tensors"):
        _open(page, section, "ms")
    captions = page.eval_on_selector_all("#run-images figcaption", "c => c.map(x => x.textContent)")
    assert captions == ["input_data/auto", "input_image"]
    first = page.locator("#run-images .image-card").nth(1)
    page.wait_for_function(
        "[...document.querySelectorAll('#run-images img')]"
        ".every(i => i.complete && i.naturalWidth === 64)"
    )
    first.locator("input[type=range]").fill("0")
    assert first.locator(".muted").inner_text() == "step 1 (1 of 12)"
    assert "index=0" in first.locator("img").get_attribute("src")
    page.wait_for_function(f"document.querySelectorAll({HIST_LINES!r}).length === 14")
    assert page.locator("#run-histograms .hist-info").inner_text() == "14 of 14 steps, 1–12"
    page.wait_for_function(
        "document.querySelectorAll('#run-tensors .tensor-values tr').length === 8"
    )
    assert page.locator("#run-tensors figcaption").inner_text() == "logits"
    assert page.locator("#run-tensors dd").nth(1).inner_text() == "[8, 3]"
    shot(page, "run-media-mindspore")


def test_our_run_hostile_tag_is_text(page: Any, media_server: LiveServer) -> None:  # noqa: F811
    open_view(page, media_server.url, "run/ours")
    _open(page, "run-images", "ours")
    assert page.locator("#run-images figcaption").inner_text() == HOSTILE
    page.wait_for_function("document.querySelector('#run-images img').naturalWidth === 12")
    _open(page, "run-histograms", "ours")
    page.wait_for_function(f"document.querySelectorAll({HIST_LINES!r}).length === 3")
    page.check("#run-histograms input[value=overlay]")
    page.wait_for_function(f"document.querySelectorAll({HIST_LINES!r}).length === 3")
    assert page.evaluate("window.pwned") is None
    shot(page, "run-media-ours")
