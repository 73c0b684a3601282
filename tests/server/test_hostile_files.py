"""Files in a run directory that must not freeze or leak through the server: a FIFO named
like a summary file (its ``open`` blocks for ever) and a symlink out of the base."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.server.conftest import client_for
from trainledger.storage import list_lineage_files
from trainledger.summary import list_event_files, list_mindspore_files
from trainledger.summary.mindspore_landscape import list_ms_files


def _plant(run: Path, outside: Path) -> None:
    os.mkfifo(run / "x.summary.1795700000_MS")
    os.mkfifo(run / "events.out.tfevents.1795700000.host.1.0")
    os.mkfifo(run / "events.out.events.summary.1795700000.0.host.1.0_lineage")
    secret = outside / "secret_MS"
    secret.write_bytes(b"not yours")
    os.symlink(secret, run / "y.summary.1795700001_MS")


@pytest.mark.timeout(60)
def test_fifos_and_links_are_never_listed_and_the_server_keeps_answering(
    base: Path, tmp_path: Path
) -> None:
    run = sorted(p for p in base.iterdir() if p.is_dir() and not p.name.startswith("."))[0]
    outside = tmp_path / "outside"
    outside.mkdir()
    _plant(run, outside)
    assert list_ms_files(run) == []
    assert list_mindspore_files(run) == []
    assert all("1795700000" not in p.name for p in list_event_files(run))
    assert all("1795700000" not in f.name for f in list_lineage_files(run))
    with client_for(base) as client:
        for _ in range(3):  # each would have hung a worker thread before
            answer = client.get(f"/api/v1/runs/{run.name}/landscapes")
            assert answer.status_code == 200, answer.text
        assert client.get(f"/api/v1/runs/{run.name}").status_code == 200
        assert client.get(f"/api/v1/runs/{run.name}/scalars").status_code in (200, 404)
        assert client.get("/api/v1/status").status_code == 200


@pytest.mark.parametrize("name", ["a\nb", "tab\there", "esc\x1b[31m", "100%", "ü ñ"])
def test_every_run_name_round_trips_through_every_route(tmp_path: Path, name: str) -> None:
    """On a real uvicorn (starlette's TestClient decodes a path twice: ``%2525`` became
    ``%``, not the ``%25`` a browser's request carries)."""
    import json
    import urllib.request
    from urllib.parse import quote

    from tests.runs import write_run
    from tests.server.browser_support import LiveServer
    from trainledger.storage import id_of_name

    def call(path: str, method: str = "GET", body: object = None) -> tuple[int, dict]:
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(server.url + path.lstrip("/"), data, method=method)
        request.add_header("Content-Type", "application/json")
        with urllib.request.urlopen(request, timeout=30) as answer:
            return answer.status, json.loads(answer.read())

    write_run(tmp_path, name, learning_rate=0.1)
    run_id = id_of_name(name)  # the name itself, but a literal "%" is written "%25"
    assert run_id == name.replace("%", "%25")
    server = LiveServer(tmp_path).start()
    try:
        (row,) = call("/api/v1/runs", "POST", {})[1]["object"]
        assert row["run_id"] == run_id
        url = f"/api/v1/runs/{quote(run_id, safe='')}"  # what the page's encodeURIComponent does
        assert call(url)[1]["run_id"] == run_id
        assert call(f"{url}/annotation", "PUT", {"tag": 3})[0] == 200
        for tail in ("landscapes", "images", "histograms", "tensors"):
            assert call(f"{url}/{tail}")[0] == 200, tail
        assert call(url)[1]["added_info"]["tag"] == 3
    finally:
        server.stop()
