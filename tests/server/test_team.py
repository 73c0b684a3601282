"""A team's UI: a read-write and a read-only token, writes recorded in the audit log (never
the token), and archiving, restoring and deleting runs through the API."""

from __future__ import annotations

from pathlib import Path

from tests.server.conftest import client_for

RW = "rw-token-0123456789abcdef"
RO = "ro-token-0123456789abcdef"


def _ids(client, headers):  # type: ignore[no-untyped-def]
    found = client.post("/api/v1/runs", json={"limit": 100}, headers=headers).json()
    return sorted(o["run_id"] for o in found["object"])


def test_a_read_token_reads_and_cannot_write(base: Path) -> None:
    with client_for(base, token=RW, read_token=RO) as client:
        ro = {"Authorization": f"Bearer {RO}"}
        assert client.get("/api/v1/status", headers=ro).status_code == 200
        assert len(_ids(client, ro)) == 6
        body = {"tag": 3}
        assert client.put("/api/v1/runs/run00/annotation", json=body, headers=ro).status_code == 403
        assert client.post("/api/v1/runs/run00/archive", headers=ro).status_code == 403
        assert client.delete("/api/v1/runs/run00", headers=ro).status_code == 403
        assert client.get("/api/v1/status").status_code == 401  # no token at all
        assert client.get("/api/v1/audit", headers=ro).json()["entries"] == []


def test_writes_are_audited_with_a_fingerprint_never_the_token(base: Path) -> None:
    with client_for(base, token=RW, read_token=RO) as client:
        rw = {"Authorization": f"Bearer {RW}"}
        done = client.put("/api/v1/runs/run01/annotation", json={"remark": "best"}, headers=rw)
        assert done.status_code == 200 and done.json()["remark"] == "best"
        entries = client.get("/api/v1/audit", headers=rw).json()["entries"]
    assert len(entries) == 1
    entry = entries[0]
    assert entry["action"] == "annotate" and entry["run"] == "run01"
    assert entry["before"] == {"remark": ""} and entry["after"] == {"remark": "best"}
    assert entry["actor"].startswith("ui:write:") and "@" in entry["actor"]
    text = (base / ".trainledger" / "audit.jsonl").read_text()
    assert RW not in text and RO not in text


def test_archive_restore_and_delete_through_the_api(base: Path) -> None:
    with client_for(base) as client:  # no token: the owner's machine, writes allowed
        assert client.post("/api/v1/runs/run02/archive").status_code == 200
        assert "run02" not in _ids(client, {})
        assert client.get("/api/v1/runs/run02").status_code == 404
        assert client.get("/api/v1/archive").json() == {"run_ids": ["run02"]}
        assert client.post("/api/v1/archive/run02/restore").status_code == 200
        assert "run02" in _ids(client, {})
        done = client.delete("/api/v1/runs/run03")
        assert done.status_code == 200 and done.json()["files"] == 1
        assert "run03" not in _ids(client, {}) and not (base / "run03").exists()
        assert client.delete("/api/v1/runs/run03").status_code == 404
        assert client.delete("/api/v1/runs/..%2F..%2Fetc").status_code == 404
        actions = [e["action"] for e in client.get("/api/v1/audit").json()["entries"]]
    assert actions == ["archive", "restore", "delete"]
