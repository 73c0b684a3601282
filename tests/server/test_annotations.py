"""Tags and remarks: validated, persisted, surviving a restart and an index rebuild."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.server.conftest import client_for


def added(client, run_id: str) -> dict:  # type: ignore[no-untyped-def, type-arg]
    r = client.post("/api/v1/runs", json={"summary_dir": {"eq": f"./{run_id}"}})
    return r.json()["object"][0]["added_info"]


def test_set_tag_and_remark(client) -> None:  # type: ignore[no-untyped-def]
    r = client.put("/api/v1/runs/run02/annotation", json={"tag": 4, "remark": "baseline"})
    assert r.status_code == 200
    assert r.json() == {"run_id": "run02", "tag": 4, "remark": "baseline"}
    assert added(client, "run02") == {"tag": 4, "remark": "baseline"}
    assert client.get("/api/v1/runs/run02").json()["added_info"] == {"tag": 4, "remark": "baseline"}


def test_partial_updates_keep_the_other_field(client) -> None:  # type: ignore[no-untyped-def]
    client.put("/api/v1/runs/run02/annotation", json={"tag": 4, "remark": "baseline"})
    client.put("/api/v1/runs/run02/annotation", json={"tag": 7})
    assert added(client, "run02") == {"tag": 7, "remark": "baseline"}
    client.put("/api/v1/runs/run02/annotation", json={"remark": ""})
    client.put("/api/v1/runs/run02/annotation", json={"tag": 0})
    assert added(client, "run02") == {}


@pytest.mark.parametrize(
    "body",
    [
        {"tag": 11},
        {"tag": -1},
        {"tag": "3"},
        {"tag": 2.5},
        {"remark": "x" * 1001},
        {"remark": 5},
        {"other": 1},
        [1],
    ],
)
def test_bad_annotation_is_422(client, body) -> None:  # type: ignore[no-untyped-def]
    r = client.put("/api/v1/runs/run02/annotation", json=body)
    assert r.status_code == 422
    assert r.json()["detail"]


def test_longest_remark_and_highest_tag_are_accepted(client) -> None:  # type: ignore[no-untyped-def]
    r = client.put("/api/v1/runs/run02/annotation", json={"tag": 10, "remark": "é" * 1000})
    assert r.status_code == 200 and r.json()["remark"] == "é" * 1000


def test_annotations_survive_restart_and_index_rebuild(base: Path) -> None:
    with client_for(base) as c:
        c.put("/api/v1/runs/run01/annotation", json={"tag": 3, "remark": "keep me"})
    with client_for(base) as c:  # a new server process would do the same
        assert added(c, "run01") == {"tag": 3, "remark": "keep me"}
    index = base / ".trainledger" / "index.db"
    assert index.exists()
    for suffix in ("", "-wal", "-shm"):
        Path(str(index) + suffix).unlink(missing_ok=True)
    with client_for(base) as c:
        assert added(c, "run01") == {"tag": 3, "remark": "keep me"}
        r = c.post("/api/v1/runs", json={"sorted_name": "summary_dir"})
        assert r.json()["count"] == 6
    saved = json.loads((base / ".trainledger" / "annotations.json").read_text())
    assert saved["annotations"]["./run01"] == {"tag": 3, "remark": "keep me"}


def test_annotation_by_another_process_shows_up(client, base: Path) -> None:  # type: ignore[no-untyped-def]
    from trainledger.query.index import LineageIndex

    before = client.get("/api/v1/status").json()["stamp"]
    with LineageIndex(base) as other:
        other.set_annotation("./run05", tag=9)
    assert added(client, "run05") == {"tag": 9}
    assert client.get("/api/v1/status").json()["stamp"] != before
