"""Headless Chromium for the browser tests: the live server, the fixtures (``browser``,
``page``, shared through ``tests/server/conftest.py`` so one Playwright runs per worker) and
screenshots (and what they show: `pixels`; the docs' pictures: `doc_image`).

Debian's /usr/bin/chromium, driven by Playwright through ``executable_path``.
"""

from __future__ import annotations

import base64
import os
import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

CHROMIUM = "/usr/bin/chromium"
ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"
WAIT_MS = 15_000


class LiveServer:
    """uvicorn in a background thread on 127.0.0.1 and a free port; ``options`` go to
    ``create_app`` (``token=``, ``allowed_hosts=``...)."""

    def __init__(self, base: Path, **options: Any) -> None:
        self.base = base
        self.options = options
        self.port = 0
        self.server: Any = None
        self.thread: threading.Thread | None = None
        self.url = ""

    def start(self) -> LiveServer:
        import uvicorn

        from trainledger.server.app import create_app
        from trainledger.server.run_store import IndexedRunStore

        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            port = sock.getsockname()[1]
        store = IndexedRunStore(self.base, rescan_interval=0.2)
        app = create_app(self.base, store=store, **self.options)
        self.server = uvicorn.Server(
            uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan="on")
        )
        self.thread = threading.Thread(target=self.server.run, name="ui-test-server", daemon=True)
        self.thread.start()
        deadline = time.monotonic() + 15
        while not self.server.started:
            if time.monotonic() > deadline or not self.thread.is_alive():
                raise RuntimeError("the test server did not start")
            time.sleep(0.02)
        self.url = f"http://127.0.0.1:{port}/"
        self.port = port
        return self

    def stop(self) -> None:
        if self.server is not None and self.thread is not None:
            self.server.should_exit = True
            self.thread.join(timeout=15)


@pytest.fixture(scope="session")
def browser() -> Iterator[Any]:
    if not Path(CHROMIUM).exists():
        pytest.fail(f"{CHROMIUM} is missing: install Debian's chromium (make system-deps)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(
            executable_path=CHROMIUM,
            args=["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"],
        )
        yield browser
        browser.close()


@pytest.fixture
def page(browser: Any) -> Iterator[Any]:
    context = browser.new_context(viewport={"width": 1400, "height": 1000})
    page = context.new_page()
    page.set_default_timeout(WAIT_MS)
    errors: list[str] = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    yield page
    context.close()
    assert errors == [], errors


def shot(page: Any, name: str) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"ui-{name}.png"), full_page=True)


DOC_IMAGES = Path(__file__).resolve().parents[2] / "docs" / "img"
# Counts, in a PNG, the opaque pixels that are not the white background ("inked"), those that
# are coloured (not white, grey or black) and those that are the path's red; run in the page,
# so no image library is needed here.
#: (JS, to start a page function with) ``decode(url)``: a PNG's RGBA bytes and its width
DECODE_PNG = """const decode = async (url) => {
  const img = new Image();
  img.src = url;
  await img.decode();
  const canvas = document.createElement("canvas");
  canvas.width = img.width;
  canvas.height = img.height;
  const g = canvas.getContext("2d");
  g.drawImage(img, 0, 0);
  return [g.getImageData(0, 0, img.width, img.height).data, img.width];
};
"""
COUNT_PIXELS = (
    """async ([url, skipTop]) => {
  """
    + DECODE_PNG
    + """
  const [all, width] = await decode(url);
  const d = all.subarray(skipTop * width * 4);
  let inked = 0, coloured = 0, red = 0;
  for (let i = 0; i < d.length; i += 4) {
    if (d[i + 3] < 200) continue;
    if (Math.min(d[i], d[i + 1], d[i + 2]) < 220) inked++;
    if (Math.max(d[i], d[i + 1], d[i + 2]) - Math.min(d[i], d[i + 1], d[i + 2]) > 60) coloured++;
    if (d[i] > 200 && d[i + 1] < 100 && d[i + 2] < 100) red++;
  }
  return { inked, coloured, red, total: d.length / 4 };
}"""
)


def pixels(page: Any, element: Any, skip_top: int = 0) -> dict[str, int]:
    """What a screenshot of ``element`` shows (the pixels on screen, WebGL included), less
    its top ``skip_top`` pixels (where a legend would count)."""
    data = base64.b64encode(element.screenshot()).decode("ascii")
    counts: dict[str, int] = page.evaluate(
        COUNT_PIXELS, [f"data:image/png;base64,{data}", skip_top]
    )
    return counts


def doc_image(element: Any, name: str) -> None:
    """Screenshots for the docs: test-artifacts/ always, docs/img/ with UPDATE_DOC_IMAGES=1
    (so a test run leaves the work tree as it was)."""
    ARTIFACTS.mkdir(exist_ok=True)
    element.screenshot(path=str(ARTIFACTS / f"ui-{name}.png"))
    if os.environ.get("UPDATE_DOC_IMAGES") == "1":
        element.screenshot(path=str(DOC_IMAGES / f"{name}.png"))
