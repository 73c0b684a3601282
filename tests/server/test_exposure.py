"""Issue 16 items 4, 6 (UI side) and 11: Host checks, redirect targets, token length, 4xx.

DNS rebinding: a page on evil.example whose name resolves to 127.0.0.1 makes the browser send
``Host: evil.example``; only the bound names (and loopback names on loopback) are answered.
"""

from __future__ import annotations

import warnings
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.server.conftest import client_for
from trainledger.cli.main import cli
from trainledger.server import allowed_hosts, create_app, is_loopback
from trainledger.server.run_store import IndexedRunStore

with warnings.catch_warnings():
    warnings.simplefilter("ignore", DeprecationWarning)
    from fastapi.testclient import TestClient

TOKEN = "0123456789abcdef-token"


def _guarded(base: Path, bind: str, extra: tuple[str, ...] = ()) -> TestClient:
    store = IndexedRunStore(base, rescan_interval=0.0, background_rescan=False)
    app = create_app(base, store=store, allowed_hosts=allowed_hosts(bind, extra), warm=False)
    return TestClient(app, base_url=f"http://{bind}:8080", follow_redirects=False)


@pytest.mark.parametrize(
    "host",
    ["127.0.0.1:8080", "localhost:8080", "LOCALHOST", "[::1]:8080", "127.0.0.1", "10.1.2.3:80"],
)
def test_loopback_server_answers_its_names(base: Path, host: str) -> None:
    with _guarded(base, "127.0.0.1") as client:
        assert client.get("/api/v1/status", headers={"host": host}).status_code == 200


@pytest.mark.parametrize(
    "host", ["evil.example", "evil.example:8080", "localhost.evil.example", "127.0.0.1.nip.io", ""]
)
def test_rebinding_names_are_refused(base: Path, host: str) -> None:
    with _guarded(base, "127.0.0.1") as client:
        for method, path in [("get", "/api/v1/status"), ("post", "/api/v1/runs"), ("get", "/")]:
            r = client.request(method, path, headers={"host": host})
            assert r.status_code == 421, (method, path, host)
            assert "--allowed-host" in r.json()["detail"]
        # writes are refused too: no tag reached the annotation file
        r = client.put("/api/v1/runs/run00/annotation", json={"tag": 3}, headers={"host": host})
        assert r.status_code == 421
        assert client.get("/api/v1/runs/run00").json()["added_info"]["tag"] == 0


def test_allowed_host_adds_a_name(base: Path) -> None:
    with _guarded(base, "127.0.0.1", ("box.lan",)) as client:
        assert client.get("/api/v1/status", headers={"host": "box.lan:8080"}).status_code == 200
        assert client.get("/api/v1/status", headers={"host": "other.lan"}).status_code == 421


def test_cli_passes_allowed_hosts(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import uvicorn

    apps: list[Any] = []
    monkeypatch.setattr(uvicorn, "run", lambda app, **kw: apps.append(app))
    args = ["ui", str(tmp_path), "--allowed-host", "box.lan"]
    assert CliRunner().invoke(cli, args).exit_code == 0
    with TestClient(apps[0]) as client:
        assert client.get("/api/v1/status", headers={"host": "box.lan"}).status_code == 200
        assert client.get("/api/v1/status", headers={"host": "evil.example"}).status_code == 421


@pytest.mark.parametrize("host", ["127.1", "127.0.1", "0x7f000001", "localhost"])
def test_shorthand_loopback_is_loopback(host: str) -> None:
    assert is_loopback(host)
    assert "localhost" in allowed_hosts(host)


# ---- ?token= redirect and token length ---------------------------------------------------------


@pytest.mark.parametrize("path", ["//evil.example/x", "/\\evil.example", "///evil.example"])
def test_token_redirect_stays_local(base: Path, path: str) -> None:
    with client_for(base, token=TOKEN) as client:
        r = client.get(f"http://testserver{path}?token={TOKEN}")
        assert r.status_code == 303
        location = r.headers["location"]
        assert location.startswith("/") and not location.startswith(("//", "/\\"))


@pytest.mark.parametrize("token", ["x", "a" * 15, ""])
def test_short_tokens_are_refused(base: Path, tmp_path: Path, token: str) -> None:
    with pytest.raises(ValueError, match="at least 16 characters"):
        create_app(base, token=token)
    result = CliRunner().invoke(cli, ["ui", str(tmp_path), "--token", token])
    assert result.exit_code == 2 and "at least 16 characters" in result.output


# ---- bad conditions are 4xx, never 500 ------------------------------------------------------


@pytest.mark.parametrize(
    "body",
    [
        b'{"metric/\\ud800": {"eq": 1}}',
        b'{"optimizer": {"eq": "\\udc00"}}',
        b'{"sorted_name": "metric/\\ud800"}',
        b'{"lineage_type": {"not_in": ["model", "x"]}}',
    ],
)
def test_bad_conditions_are_400(client: TestClient, body: bytes) -> None:
    for path in ("/api/v1/runs", "/api/v1/runs/export.csv"):
        r = client.post(path, content=body, headers={"content-type": "application/json"})
        assert r.status_code == 400, (path, r.text)


@pytest.mark.parametrize(
    "where", ["metric/loss > 99999999999999999999999", "learning_rate < " + "9" * 5000]
)
def test_huge_numbers_in_where_are_answered(client: TestClient, where: str) -> None:
    r = client.post("/api/v1/runs", params={"where": where})
    assert r.status_code == 200


@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
@given(
    where=st.lists(st.text(max_size=25), max_size=2),
    big=st.integers(min_value=2**63, max_value=2**200),
)
def test_fuzzed_api_conditions_are_never_500(
    client: TestClient, where: list[str], big: int
) -> None:
    r = client.post("/api/v1/runs", params={"where": where})
    assert r.status_code < 500, r.text
    for body in (
        {"metric/loss": {"lt": big}},
        {"summary_dir": {"in": [big]}},
        {"epoch": {"eq": big}},
    ):
        r = client.post("/api/v1/runs", json=body)
        assert r.status_code < 500, r.text


# ---- a uint64 metric poisons nothing ------------------------------------------------------------


def test_a_uint64_metric_is_served_everywhere(tmp_path: Path) -> None:
    from tests.runs import write_run

    base = tmp_path / "runs"
    write_run(base, "counter", metrics={"seen": 2**64 - 1})
    write_run(base, "plain", metrics={"seen": 3})
    with client_for(base) as client:
        result = client.post("/api/v1/runs", json={"sorted_name": "metric/seen"}).json()
        assert [o["run_id"] for o in result["object"]] == ["plain", "counter"]
        r = client.post("/api/v1/runs/export.csv", params={"where": ["metric/seen > 2**63"]})
        assert r.status_code == 400  # (not an expression) - and never a 500
        text = client.post("/api/v1/runs/export.csv").text
        assert str(2**64 - 1) in text  # exact in the export
        assert client.get("/api/v1/runs/counter").status_code == 200
    code = CliRunner().invoke(cli, ["lineage", str(base), "--where", f"metric/seen >= {2**63}"])
    assert code.exit_code == 0, code.output
    assert "counter" in code.output and "plain" not in code.output
