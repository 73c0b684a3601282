"""Routes depend only on the RunStore interface: an in-memory store drives every endpoint."""

from __future__ import annotations

import warnings
from pathlib import Path

from tests.server.fakes import FakeStore
from trainledger.server.app import create_app

with warnings.catch_warnings():
    warnings.simplefilter("ignore", DeprecationWarning)
    from fastapi.testclient import TestClient


def test_app_runs_on_any_store_and_closes_it(tmp_path: Path) -> None:
    store = FakeStore(tmp_path, n=5, points=5000)
    with TestClient(create_app(tmp_path, store=store)) as c:
        body = c.post(
            "/api/v1/runs", json={"sorted_name": "learning_rate", "limit": 2, "offset": 0}
        ).json()
        assert [o["run_id"] for o in body["object"]] == ["run000", "run001"]
        assert c.get("/api/v1/status").json()["count"] == 5
        assert c.get("/api/v1/runs/run001").json()["status"] == "finished"
        series = c.post(
            "/api/v1/scalars/series", json={"runs": ["run002"], "tags": ["loss"]}
        ).json()["series"]
        assert series[0]["total"] == 5000 and len(series[0]["points"]) <= 1000
        assert c.post("/api/v1/runs", params={"where": "epoch > 2"}, json={}).json()["count"] == 2
        assert c.get("/api/v1/runs/nope").status_code == 404
        assert not store.closed
    assert store.closed
