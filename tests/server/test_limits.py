"""Request bodies are limited per route before they are read (413), and a real uvicorn keeps
answering under idle and half-sent connections with an open-file limit of 1,024."""

from __future__ import annotations

import http.client
import json
import os
import resource
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.s3_server import _free_port
from tests.server.browser_support import LiveServer
from trainledger.server import allowed_hosts
from trainledger.server.limits import ANNOTATION_BODY_LIMIT, QUERY_BODY_LIMIT

REPO = Path(__file__).resolve().parents[2]


def test_a_query_body_over_1_mib_is_413_and_one_under_is_answered(client: object) -> None:
    pad = " " * (QUERY_BODY_LIMIT + 1 - 2)
    answer = client.post(  # type: ignore[attr-defined]
        "/api/v1/runs", content="{}" + pad, headers={"content-type": "application/json"}
    )
    assert answer.status_code == 413 and "at most 1048576 bytes" in answer.json()["detail"]
    answer = client.post(  # type: ignore[attr-defined]
        "/api/v1/runs", content="{}" + " " * 1000, headers={"content-type": "application/json"}
    )
    assert answer.status_code == 200


def test_a_chunked_body_is_cut_off_at_the_limit(client: object) -> None:
    sent = []

    def chunks() -> Iterator[bytes]:  # no Content-Length: counted as it arrives
        yield b'{"x": "'
        for _ in range(64):
            sent.append(1)
            yield b"a" * 65536
        yield b'"}'

    answer = client.post(  # type: ignore[attr-defined]
        "/api/v1/runs", content=chunks(), headers={"content-type": "application/json"}
    )
    assert answer.status_code == 413


def test_an_annotation_over_64_kib_is_413_before_validation(client: object) -> None:
    runs = client.post("/api/v1/runs", json={}).json()  # type: ignore[attr-defined]
    run_id = runs["object"][0]["run_id"]
    body = '{"remark": "' + "r" * ANNOTATION_BODY_LIMIT + '"}'
    answer = client.put(  # type: ignore[attr-defined]
        f"/api/v1/runs/{run_id}/annotation",
        content=body,
        headers={"content-type": "application/json"},
    )
    assert answer.status_code == 413


def _limited_files() -> None:
    resource.setrlimit(resource.RLIMIT_NOFILE, (1024, 1024))


@pytest.mark.slow
def test_idle_and_half_sent_connections_do_not_starve_a_real_server(base: Path) -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and hard < 2400:
        pytest.skip(f"the test needs 2,400 open files for its own sockets (hard limit {hard})")
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, 2400), hard))
    port = _free_port()
    server = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "trainledger",
            "ui",
            str(base),
            "--port",
            str(port),
            "--max-connections",
            "200",
            "--head-timeout",
            "2",
            "--idle-timeout",
            "2",
        ],
        env={**os.environ, "PYTHONPATH": str(REPO / "src")},
        stdout=subprocess.DEVNULL,  # accept() under EMFILE logs a lot: never a full pipe
        stderr=subprocess.DEVNULL,
        preexec_fn=_limited_files,
    )
    url = f"http://127.0.0.1:{port}/api/v1/status"
    held: list[socket.socket] = []
    try:
        deadline = time.monotonic() + 60
        while True:
            try:
                urllib.request.urlopen(url, timeout=2).close()
                break
            except OSError:
                assert server.poll() is None and time.monotonic() < deadline, "no server"
                time.sleep(0.2)
        for i in range(1100):  # idle, and half-sent heads
            sock = socket.create_connection(("127.0.0.1", port), timeout=5)
            if i % 2:
                sock.sendall(b"GET /api/v1/status HTTP/1.1\r\nHost: 127.0.0.1\r\n")
            held.append(sock)
        began = time.monotonic()
        with urllib.request.urlopen(url, timeout=10) as answer:  # at once: the oldest idle go
            assert answer.status == 200
        assert time.monotonic() - began < 8  # asyncio pauses accept() 1 s after an EMFILE
        time.sleep(3)  # past the head timeout: the server closed what it kept
        closed = 0
        for sock in held[-150:]:
            sock.settimeout(2)
            try:
                closed += sock.recv(1) == b""
            except OSError:
                closed += 1
        assert closed == 150
    finally:
        for sock in held:
            sock.close()
        server.terminate()
        server.wait(20)


def test_a_list_page_caps_long_strings_and_the_run_page_keeps_them(tmp_path: Path) -> None:
    from tests.runs import write_run
    from tests.server.conftest import client_for

    big = "x" * 3_000_000
    write_run(tmp_path, "r0", user={"notes": big, "short": "kept"})
    with client_for(tmp_path) as client:
        page = client.post("/api/v1/runs", json={})
        row = page.json()["object"][0]
        notes = row["model_lineage"]["user_defined"]["notes"]
        assert notes.startswith("x" * 4096) and "[truncated: 3,000,000 characters" in notes
        assert len(notes) < 4300 and row["model_lineage"]["user_defined"]["short"] == "kept"
        assert len(page.content) < 20_000
        full = client.get("/api/v1/runs/r0").json()
        assert full["lineage"]["user_defined"]["notes"] == big
        again = client.post("/api/v1/runs", json={}).json()["object"][0]  # cache untouched
        assert again["model_lineage"]["user_defined"]["notes"] == notes


def _chunked(port: int, method: str, path: str, size: int) -> tuple[int, bytes]:
    """``size`` bytes of a JSON string sent chunked (no Content-Length): (status, body)."""

    def chunks() -> Iterator[bytes]:
        yield b'{"remark": "'
        for _ in range(size // 65536 + 1):
            yield b"a" * 65536
        yield b'"}'

    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        headers = {"content-type": "application/json", "host": f"127.0.0.1:{port}"}
        connection.request(method, path, body=chunks(), headers=headers, encode_chunked=True)
        answer = connection.getresponse()
        return answer.status, answer.read()
    finally:
        connection.close()


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    """A real uvicorn with the Host check ``trainledger ui`` adds (a middleware in front)."""
    from tests.runs import make_base

    base = make_base(tmp_path_factory.mktemp("chunked") / "runs", n=2, scalars=5)
    live = LiveServer(base, allowed_hosts=allowed_hosts("127.0.0.1")).start()
    yield live
    live.stop()


@pytest.mark.parametrize(
    ("method", "path", "limit"),
    [
        ("PUT", "/api/v1/runs/run00/annotation", ANNOTATION_BODY_LIMIT),
        ("POST", "/api/v1/runs", QUERY_BODY_LIMIT),
        ("POST", "/api/v1/scalars/series", QUERY_BODY_LIMIT),
    ],
)
def test_a_chunked_body_over_the_limit_is_413_naming_it_on_a_real_server(
    served: LiveServer, method: str, path: str, limit: int
) -> None:
    status, body = _chunked(served.port, method, path, 2 * limit)
    assert status == 413, body
    assert json.loads(body)["detail"] == f"request body too large: expected at most {limit} bytes"
    with urllib.request.urlopen(served.url + "api/v1/status", timeout=10) as answer:
        assert answer.status == 200  # and the server answers on
