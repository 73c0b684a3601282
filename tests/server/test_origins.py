"""Issue 49 item 6: a write (POST, PUT, PATCH, DELETE) from another origin is refused.

A page on another site used to archive and restore runs through the user's browser by
submitting a form to ``http://127.0.0.1:PORT/api/v1/...``. The browser tests serve such a
page from a second loopback port (another origin) and drive real Chromium to it.
"""

from __future__ import annotations

import functools
import http.server
import json
import threading
import time
import urllib.request
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.runs import make_base
from tests.server.browser_support import WAIT_MS, LiveServer
from trainledger.server import allowed_hosts, create_app
from trainledger.server.origins import own_origin
from trainledger.server.run_store import IndexedRunStore

with warnings.catch_warnings():
    warnings.simplefilter("ignore", DeprecationWarning)
    from fastapi.testclient import TestClient

TOKEN = "0123456789abcdef-token"


def _client(base: Path, bind: str = "127.0.0.1", extra: tuple[str, ...] = ()) -> TestClient:
    store = IndexedRunStore(base, rescan_interval=0.0, background_rescan=False)
    app = create_app(base, store=store, allowed_hosts=allowed_hosts(bind, extra), warm=False)
    return TestClient(app, base_url=f"http://{bind}:8080", follow_redirects=False)


@pytest.mark.parametrize(
    "origin",
    [
        "http://127.0.0.1:9999",  # another port: another origin
        "http://evil.example",
        "http://10.1.2.3:8080",  # another machine on the same port
        "https://127.0.0.1:8080",  # another scheme
        "null",  # a sandboxed frame, a file:// page
        "garbage",
    ],
)
def test_a_write_from_another_origin_is_403_with_the_reason(base: Path, origin: str) -> None:
    with _client(base) as client:
        writes = [
            ("post", "/api/v1/runs/run01/archive", None),
            ("put", "/api/v1/runs/run01/annotation", {"tag": 3}),
            ("delete", "/api/v1/runs/run01", None),
            ("post", "/api/v1/runs", {}),  # read-like POSTs follow the same rule
            ("post", "/api/v1/scalars/series", {"runs": ["run01"], "tags": ["loss"]}),
        ]
        for method, path, body in writes:
            answer = client.request(method, path, json=body, headers={"origin": origin})
            assert answer.status_code == 403, (method, path)
            detail = answer.json()["detail"]
            assert "expected Origin http://127.0.0.1:8080" in detail and repr(origin) in detail
        assert (base / "run01").is_dir()
        assert client.get("/api/v1/runs/run01").json()["added_info"]["tag"] == 0


def test_a_cross_site_fetch_without_origin_is_403(base: Path) -> None:
    with _client(base) as client:
        for site in ("cross-site", "same-site"):
            answer = client.post("/api/v1/runs/run01/archive", headers={"sec-fetch-site": site})
            assert answer.status_code == 403 and repr(site) in answer.json()["detail"]
        assert (base / "run01").is_dir()


@pytest.mark.parametrize(
    "kind", ["application/x-www-form-urlencoded", "multipart/form-data; boundary=x", "text/plain"]
)
def test_a_form_encoded_write_is_415_whatever_its_origin(base: Path, kind: str) -> None:
    with _client(base) as client:
        for headers in ({}, {"origin": "http://127.0.0.1:8080"}):
            answer = client.post(
                "/api/v1/runs/run01/archive",
                content=b"a=b",
                headers={"content-type": kind, **headers},
            )
            assert answer.status_code == 415 and "application/json" in answer.json()["detail"]
        assert (base / "run01").is_dir()


def test_own_origins_and_scripts_without_origin_may_write(base: Path) -> None:
    with _client(base, extra=("box.lan",)) as client:
        for origin, host in [
            ("http://127.0.0.1:8080", "127.0.0.1:8080"),
            ("http://localhost:8080", "localhost:8080"),
            ("http://box.lan:8080", "box.lan:8080"),
        ]:
            headers = {"origin": origin, "host": host}
            answer = client.put("/api/v1/runs/run01/annotation", json={"tag": 4}, headers=headers)
            assert answer.status_code == 200, (origin, answer.text)
        assert client.post("/api/v1/runs", json={}).status_code == 200  # curl: no Origin
        assert client.post("/api/v1/runs/run02/archive").status_code == 200
        assert not (base / "run02").exists()


def test_behind_a_proxy_the_forwarded_scheme_and_host_are_the_own_origin(base: Path) -> None:
    store = IndexedRunStore(base, rescan_interval=0.0, background_rescan=False)
    names = allowed_hosts("127.0.0.1", ["lineage.example.com"])
    app = create_app(base, store=store, allowed_hosts=names, warm=False)
    # (uvicorn applies a trusted proxy's X-Forwarded-Proto to the scheme, as base_url does)
    with TestClient(app, base_url="https://lineage.example.com") as client:
        ok = client.put(
            "/api/v1/runs/run01/annotation",
            json={"tag": 2},
            headers={"origin": "https://lineage.example.com"},
        )
        assert ok.status_code == 200
        plain = client.put(
            "/api/v1/runs/run01/annotation",
            json={"tag": 3},
            headers={"origin": "http://lineage.example.com"},
        )
        assert plain.status_code == 403
        assert "expected Origin https://lineage.example.com" in plain.json()["detail"]


def test_own_origin_rules() -> None:
    names = allowed_hosts("127.0.0.1", ["box.lan"])
    ask = functools.partial(own_origin, scheme="http", bound_port=8080, names=names)
    assert ask("http://127.0.0.1:8080", host_header="127.0.0.1:8080")
    assert ask("http://BOX.lan:8080", host_header="127.0.0.1:8080")  # a name, the bound port
    assert ask("http://box.lan", host_header="box.lan")  # a proxy passing Host $host
    assert not ask("http://box.lan:81", host_header="box.lan")
    assert not ask("http://127.0.0.1:9999", host_header="127.0.0.1:8080")
    assert not ask("http://10.0.0.5:8080", host_header="127.0.0.1:8080")
    assert not ask("http://127.0.0.1:99999", host_header="127.0.0.1:8080")


# -- in Chromium: an attacking page on another loopback port ---------------------------------

ATTACK = """<!doctype html><title>prize</title>
<iframe name="a"></iframe><iframe name="b"></iframe>
<form id="plain" method="POST" target="a" enctype="text/plain"
      action="{api}/runs/run01/archive"><input name='{{"x":"' value='"}}'></form>
<form id="urlenc" method="POST" target="b" action="{api}/runs/run00/archive?force=true">
  <input name="force" value="true"></form>
<script>
fetch("{api}/archive/run02/restore", {{method: "POST", mode: "no-cors", credentials: "include"}});
document.getElementById("plain").submit();
document.getElementById("urlenc").submit();
</script>"""


@pytest.fixture
def attacker(tmp_path: Path) -> Iterator[tuple[Path, str]]:
    """A tiny http.server on another loopback port: (its folder, its URL)."""
    site = tmp_path / "attacker"
    site.mkdir()
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(site))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, name="attacker", daemon=True)
    thread.start()
    yield site, f"http://127.0.0.1:{server.server_address[1]}/"
    server.shutdown()
    server.server_close()


def _api(url: str, token: str | None, method: str = "GET") -> Any:
    """Our own request without Origin (as curl sends it)."""
    headers = {"authorization": f"Bearer {token}"} if token else {}
    request = urllib.request.Request(url, method=method, headers=headers)
    with urllib.request.urlopen(request, timeout=10) as answer:
        return json.loads(answer.read())


@pytest.mark.browser
@pytest.mark.parametrize("token", [None, TOKEN])
def test_a_page_on_another_origin_cannot_archive_or_restore_runs(
    browser: Any, tmp_path: Path, attacker: tuple[Path, str], token: str | None
) -> None:
    base = make_base(tmp_path / "runs", n=3, scalars=0)
    server = LiveServer(base, token=token, allowed_hosts=allowed_hosts("127.0.0.1")).start()
    auth = f"?token={token}" if token else ""
    site, attacker_url = attacker
    (site / "index.html").write_text(ATTACK.format(api=server.url + "api/v1"))
    context = browser.new_context()
    try:
        page = context.new_page()
        page.set_default_timeout(WAIT_MS)
        page.goto(server.url + auth)  # the user's session (with a token: its cookie)
        page.wait_for_function("document.body.dataset.ready === 'lineage'")
        _api(f"{server.url}api/v1/runs/run02/archive", token, "POST")  # (no Origin: curl)
        answers: list[tuple[str, int]] = []
        page.on("response", lambda r: "/api/v1/" in r.url and answers.append((r.url, r.status)))
        page.goto(attacker_url)
        deadline = time.monotonic() + WAIT_MS / 1000
        while len(answers) < 3 and time.monotonic() < deadline:
            page.wait_for_timeout(50)
        assert sorted(status for _, status in answers) == [403, 403, 403], answers
        assert (base / "run00").is_dir() and (base / "run01").is_dir()
        assert _api(f"{server.url}api/v1/archive", token)["run_ids"] == ["run02"]
    finally:
        context.close()
        server.stop()


@pytest.mark.browser
def test_the_uis_own_pages_still_tag_and_archive(browser: Any, tmp_path: Path) -> None:
    base = make_base(tmp_path / "runs", n=3, scalars=0)
    server = LiveServer(base, token=TOKEN, allowed_hosts=allowed_hosts("127.0.0.1")).start()
    context = browser.new_context(viewport={"width": 1400, "height": 900})
    try:
        page = context.new_page()
        page.set_default_timeout(WAIT_MS)
        own = server.url.replace("127.0.0.1", "localhost")  # a loopback name: its own origin
        page.goto(f"{own}?token={TOKEN}#/lineage")
        page.wait_for_function("document.body.dataset.ready === 'lineage'")
        page.click('#runs-table tr[data-run="run01"] .tag')
        page.click('.tag-menu [data-pick="5"]')
        page.wait_for_selector('#runs-table tr[data-run="run01"] .tag[data-tag="5"]')
        page.goto(own + "#/run/run02")
        page.wait_for_selector("#run-archive:not([hidden])")
        page.once("dialog", lambda dialog: dialog.accept())
        page.click("#run-archive")
        page.wait_for_function("window.location.hash === '#/lineage'")
        assert (base / ".trainledger-archive" / "run02").is_dir()
        tags = json.loads((base / ".trainledger" / "annotations.json").read_text())
        assert "5" in json.dumps(tags)
    finally:
        context.close()
        server.stop()
