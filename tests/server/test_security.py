"""Nothing outside BASE is reachable; the token guards every request when set."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import trainledger.lineage
import trainledger.query
from tests.runs import sample_run
from tests.server.conftest import client_for
from trainledger.lineage import reader as lineage_reader
from trainledger.query import lineage_api
from trainledger.server import checkpoint_listing, media_store, structure_store
from trainledger.server import run_store as store_module
from trainledger.server.security import RunNotFound, check_run_id, resolve_run

TRAVERSALS = [
    "..",
    "../outside",
    "..%2foutside",
    "%2e%2e/outside",
    "%2e%2e%2foutside",
    "run00/../../outside",
    "run00%2f..%2f..%2foutside",
    "%2Fetc%2Fpasswd",
    "/etc/passwd",
    "./../outside",
    "run00/%2e%2e",
    "%2e",
    "run00%00",
    "run00\\..\\..",
    "link_out",
    "%252e%252e/outside",
]


@pytest.fixture
def guarded(tmp_path: Path) -> dict[str, Any]:
    """A base with runs, a run outside it, and a symlink inside pointing out; plus a spy on
    every function that could read a run's files."""
    base = tmp_path / "base"
    for i in range(2):
        sample_run(base, f"run{i:02d}", i, scalars=5)
    outside = sample_run(tmp_path, "outside", 7, scalars=5)
    (base / "link_out").symlink_to(outside, target_is_directory=True)
    return {"base": base, "outside": outside}


@pytest.fixture
def reads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    calls: list[str] = []
    real_list, real_scalars = checkpoint_listing.list_checkpoints, store_module.RunScalars

    def spy_list(path: Path) -> list[dict[str, Any]]:
        calls.append(f"checkpoints:{path}")
        return real_list(path)

    class SpyScalars(real_scalars):  # type: ignore[misc, valid-type]
        def __init__(self, run_dir: Path) -> None:
            calls.append(f"scalars:{run_dir}")
            super().__init__(run_dir)

    monkeypatch.setattr(checkpoint_listing, "list_checkpoints", spy_list)
    monkeypatch.setattr(store_module, "RunScalars", SpyScalars)

    class SpyMedia(media_store.RunMedia):
        def __init__(self, run_dir: Path) -> None:
            calls.append(f"media:{run_dir}")
            super().__init__(run_dir)

    monkeypatch.setattr(media_store, "RunMedia", SpyMedia)
    real_key = structure_store.files_key

    def spy_key(run_dir: Path) -> Any:  # the first read of the landscape and graph routes
        calls.append(f"structure:{run_dir}")
        return real_key(run_dir)

    monkeypatch.setattr(structure_store, "files_key", spy_key)
    for module, name in (
        (lineage_api, "get_summary_lineage"),
        (lineage_reader, "read_lineage"),
        (lineage_reader, "lineage_files"),
        # the packages re-export them (the query engine imports them from there) ...
        (trainledger.query, "get_summary_lineage"),
        (trainledger.lineage, "read_lineage"),
        (trainledger.lineage, "lineage_files"),
        # ... and the server binds them when it is imported
        (store_module, "get_summary_lineage"),
        (store_module, "read_lineage"),
        (store_module, "lineage_files"),
        (checkpoint_listing, "read_lineage"),
    ):
        real = getattr(module, name)

        def spy(path: Any, *args: Any, _real: Any = real, _name: str = name) -> Any:
            calls.append(f"{_name}:{path}")
            return _real(path, *args)

        monkeypatch.setattr(module, name, spy)
    return calls


@pytest.mark.parametrize("run_id", TRAVERSALS)
def test_traversal_is_404_and_reads_nothing(guarded, reads, run_id: str) -> None:  # type: ignore[no-untyped-def]
    with client_for(guarded["base"]) as c:
        c.get("/api/v1/status")  # the index's own first scan parses BASE's runs: not counted
        reads.clear()
        responses = [
            c.get(f"/api/v1/runs/{run_id}"),
            c.put(f"/api/v1/runs/{run_id}/annotation", json={"tag": 1}),
            c.get("/api/v1/scalars/tags", params={"run": run_id}),
            c.post("/api/v1/scalars/series", json={"runs": [run_id], "tags": ["loss"]}),
            *(c.get(f"/api/v1/runs/{run_id}/{kind}") for kind in media_store.KINDS),
            c.get(f"/api/v1/runs/{run_id}/images/file", params={"tag": "x"}),
            c.get(f"/api/v1/runs/{run_id}/histograms/series", params={"tag": "x"}),
            c.get(f"/api/v1/runs/{run_id}/tensors/value", params={"tag": "x"}),
            c.get(f"/api/v1/runs/{run_id}/landscapes"),
            c.get(f"/api/v1/runs/{run_id}/graph"),
        ]
        for r in responses:
            # a literal "/etc/passwd" path segment or a NUL may be refused by routing itself
            assert r.status_code == 404, (run_id, r.request.url, r.text)
    assert reads == []
    with client_for(guarded["base"]) as c:  # the spies do see reads of a real run
        assert c.get("/api/v1/runs/run00").status_code == 200
        assert c.get("/api/v1/runs/run00/landscapes").status_code == 200
    assert any(call.startswith("get_summary_lineage:") for call in reads)
    assert any(call.startswith("structure:") for call in reads)
    assert not (guarded["outside"].parent / "base" / ".trainledger" / "annotations.json").exists()


def test_symlink_out_of_base_is_not_a_run(guarded) -> None:  # type: ignore[no-untyped-def]
    with client_for(guarded["base"]) as c:
        listed = [o["run_id"] for o in c.post("/api/v1/runs", json={}).json()["object"]]
        assert sorted(listed) == ["run00", "run01"]


def test_symlink_inside_base_resolves(tmp_path: Path) -> None:
    base = tmp_path / "base"
    sample_run(base / "real", "a", 0)
    (base / "alias").symlink_to(base / "real" / "a", target_is_directory=True)
    with client_for(base) as c:
        assert c.get("/api/v1/runs/alias").status_code == 200


def test_nested_run_ids_with_slashes(tmp_path: Path) -> None:
    base = tmp_path / "base"
    sample_run(base / "group", "inner", 0)
    with client_for(base, max_depth=2) as c:
        listed = [o["run_id"] for o in c.post("/api/v1/runs", json={}).json()["object"]]
        assert listed == ["group/inner"]
        assert c.get("/api/v1/runs/group/inner").json()["run_id"] == "group/inner"
        r = c.put("/api/v1/runs/group/inner/annotation", json={"tag": 2})
        assert r.json() == {"run_id": "group/inner", "tag": 2, "remark": ""}


@pytest.mark.parametrize(
    "run_id", ["", "..", "a/../b", "/abs", "a//b", "a/./b", "a\x00b", "a\\b", "x" * 5000]
)
def test_check_run_id_rejects(run_id: str) -> None:
    with pytest.raises(RunNotFound):
        check_run_id(run_id)


@pytest.mark.parametrize(
    "run_id, clean", [("run1", "run1"), ("./run1", "run1"), ("g/run.v2", "g/run.v2")]
)
def test_check_run_id_accepts(run_id: str, clean: str) -> None:
    assert check_run_id(run_id) == clean


def test_resolve_run_needs_a_known_id(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    assert resolve_run(tmp_path, "a", {"a"}) == (tmp_path / "a").resolve()
    with pytest.raises(RunNotFound):
        resolve_run(tmp_path, "a", set())
    with pytest.raises(RunNotFound):  # known but gone
        resolve_run(tmp_path, "b", {"b"})


# ---- token ---------------------------------------------------------------------------------

TOKEN = "s3cret-token-0123456789"


@pytest.fixture
def locked(base: Path):  # type: ignore[no-untyped-def]
    with client_for(base, token=TOKEN) as c:
        yield c


@pytest.mark.parametrize(
    "path",
    ["/api/v1/status", "/", "/static/app.js", "/openapi.json", "/docs", "/api/v1/runs/run00"],
)
def test_without_token_everything_is_401(locked, path: str) -> None:  # type: ignore[no-untyped-def]
    assert locked.get(path).status_code == 401


def test_wrong_token_is_401(locked) -> None:  # type: ignore[no-untyped-def]
    assert locked.get("/api/v1/status", headers={"Authorization": "Bearer nope"}).status_code == 401
    assert locked.get("/api/v1/status", headers={"X-Trainledger-Token": "nope"}).status_code == 401
    assert locked.get("/?token=nope").status_code == 401


def test_token_in_headers(locked) -> None:  # type: ignore[no-untyped-def]
    r = locked.get("/api/v1/status", headers={"Authorization": f"Bearer {TOKEN}"})
    assert r.status_code == 200 and r.json()["token_required"] is True
    assert (
        locked.post("/api/v1/runs", json={}, headers={"X-Trainledger-Token": TOKEN}).json()["count"]
        == 6
    )


def test_token_link_sets_a_cookie_and_drops_the_token_from_the_url(locked) -> None:  # type: ignore[no-untyped-def]
    r = locked.get(f"/?token={TOKEN}&x=1")
    assert r.status_code == 303
    assert r.headers["location"] == "/?x=1"
    cookie = r.headers["set-cookie"]
    assert "trainledger_token=" in cookie and "HttpOnly" in cookie
    assert "samesite=strict" in cookie.lower()
    assert locked.get("/").status_code == 200  # the client now holds the cookie
    assert locked.get("/api/v1/status").status_code == 200
