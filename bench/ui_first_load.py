"""The runs page's first load in a real browser: from navigation to the first table row and
the drawn parallel-coordinates chart (not a test; issue 32's target: <= 1 s at 10,000 runs,
median of 5 loads with a warm server, on this 2-core machine).

Generates N run directories (``bench/ui_api.py``'s generator), starts the real server
(uvicorn on 127.0.0.1, the index built once before timing), then loads ``#/lineage`` in
Debian's headless Chromium (Playwright through ``executable_path``) in a fresh browser context
each time (no cache, no saved columns) and reports each load: the first row, the drawn chart,
and both.

    .venv/bin/python bench/ui_first_load.py --runs 10000 --loads 5
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from ui_api import Server, generate  # noqa: E402 (the sibling bench module)

CHROMIUM = "/usr/bin/chromium"
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking"]
ROW = "document.querySelectorAll('#runs-table tbody tr[data-run]').length > 0"
CHART = "Number((document.querySelector('#parcoords') || {dataset: {}}).dataset.lines || 0) > 0"


def load_once(browser: object, url: str, dpr: float = 1.0) -> dict[str, float]:
    """One load in a fresh context: seconds from navigation to the row, the chart, both."""
    context = browser.new_context(  # type: ignore[attr-defined]
        viewport={"width": 1400, "height": 900}, device_scale_factor=dpr
    )
    page = context.new_page()
    page.set_default_timeout(60_000)
    start = time.perf_counter()
    page.goto(url + "#/lineage", wait_until="commit")
    marks: dict[str, float] = {}
    while len(marks) < 2:
        if "row" not in marks and page.evaluate(ROW):
            marks["row"] = time.perf_counter() - start
        if "chart" not in marks and page.evaluate(CHART):
            marks["chart"] = time.perf_counter() - start
        if time.perf_counter() - start > 60:
            raise TimeoutError("the page did not load in 60 s")
        page.wait_for_timeout(5)
    marks["both"] = max(marks["row"], marks["chart"])
    context.close()
    return marks


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=10_000)
    parser.add_argument("--loads", type=int, default=5)
    parser.add_argument("--dir", help="work directory (default: a temp dir)")
    parser.add_argument("--dpr", type=float, default=1.0, help="the screen's pixel density")
    args = parser.parse_args()
    work = Path(args.dir) if args.dir else Path(tempfile.mkdtemp(prefix="ui-load-"))
    base = work / f"runs{args.runs}"
    if not base.exists():
        generate(base, args.runs)
    server = Server(base)
    server.client.post("/api/v1/runs", json={"offset": 0, "limit": 20}).raise_for_status()
    url = f"http://127.0.0.1:{server.port}/"
    from playwright.sync_api import sync_playwright

    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(
                executable_path=CHROMIUM,
                args=[
                    "--headless",
                    "--no-sandbox",
                    "--disable-gpu",
                    "--disable-background-networking",
                ],
            )
            load_once(browser, url, args.dpr)  # warm-up: the server's caches, the browser's start
            loads = [load_once(browser, url, args.dpr) for _ in range(args.loads)]
            browser.close()
    finally:
        server.stop()
    for key in ("row", "chart", "both"):
        ms = sorted(load[key] * 1000 for load in loads)
        print(
            f"{args.runs} runs, first load to {key}: median {statistics.median(ms):.0f} ms "
            f"[{ms[0]:.0f}-{ms[-1]:.0f}] over {len(ms)} loads"
        )


if __name__ == "__main__":
    main()
