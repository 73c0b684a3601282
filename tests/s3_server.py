"""A real S3 server for the tests: moto in server mode, on 127.0.0.1, started by the tests.

``s3_env`` (session) starts ``python -m moto.server`` on a free port, waits for it with a
bounded loop and points botocore at it through the standard variables (``AWS_ENDPOINT_URL``,
test credentials, no shared config files), exactly as a user points trainledger at MinIO.
``s3_bucket`` gives each test a bucket of its own.
"""

from __future__ import annotations

import os
import re
import socket
import subprocess
import sys
import time
import urllib.request
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def start_moto(home: Path) -> tuple[subprocess.Popen[bytes], dict[str, str]]:
    """A moto server on a free port of 127.0.0.1, answering; and the variables that point
    botocore at it (its log in ``home/moto.log``)."""
    port = _free_port()
    env = {
        "AWS_ENDPOINT_URL": f"http://127.0.0.1:{port}",
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_DEFAULT_REGION": "us-east-1",
        "AWS_CONFIG_FILE": str(home / "config"),
        "AWS_SHARED_CREDENTIALS_FILE": str(home / "credentials"),
    }
    with open(home / "moto.log", "wb") as log:
        server = subprocess.Popen(
            [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    deadline = time.monotonic() + 60
    while True:
        try:
            urllib.request.urlopen(env["AWS_ENDPOINT_URL"], timeout=1).close()
            return server, env
        except OSError:
            if server.poll() is not None or time.monotonic() > deadline:
                stop_moto(server)
                raise RuntimeError(
                    f"moto server did not start: {(home / 'moto.log').read_text()[-2000:]}"
                ) from None
            time.sleep(0.1)


def stop_moto(server: subprocess.Popen[bytes]) -> None:
    server.terminate()
    try:
        server.wait(10)
    except subprocess.TimeoutExpired:
        server.kill()
        server.wait(10)


@pytest.fixture(scope="session")
def s3_env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    pytest.importorskip("moto", reason="moto[server] is a dev dependency (make install)")
    home = tmp_path_factory.mktemp("aws")
    server, env = start_moto(home)
    env["TRAINLEDGER_TEST_MOTO_LOG"] = str(home / "moto.log")  # (server_requests reads it)
    try:
        with pytest.MonkeyPatch.context() as mp:
            for key, value in env.items():
                mp.setenv(key, value)
            yield env
    finally:
        stop_moto(server)


@pytest.fixture
def s3_bucket(s3_env: dict[str, str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """A new empty bucket; staging and cache directories under the test's tmp_path."""
    import boto3

    name = f"tl-{uuid.uuid4().hex[:12]}"
    boto3.client("s3").create_bucket(Bucket=name)
    monkeypatch.setenv("TRAINLEDGER_STAGING_DIR", str(tmp_path / "staging"))
    monkeypatch.setenv("TRAINLEDGER_CACHE_DIR", str(tmp_path / "cache"))
    return name


def objects(bucket: str, prefix: str = "", records: bool = False) -> dict[str, bytes]:
    """Every object under ``prefix`` with its bytes, read with boto3 (not with our client);
    the bucket's change records (``.trainledger/changes/``) only with ``records``."""
    import boto3

    client = boto3.client("s3")
    out: dict[str, bytes] = {}
    for page in client.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix):
        for item in page.get("Contents", []):
            if item["Key"].startswith(".trainledger/changes/") and not records:
                continue
            out[item["Key"]] = client.get_object(Bucket=bucket, Key=item["Key"])["Body"].read()
    return out


class server_requests:  # noqa: N801 - used as a context manager, like a function
    """The requests the moto server answered for ``bucket`` inside a ``with`` block, counted
    at the server (its log), not by our client: ``with server_requests(b) as seen: ...``,
    then ``seen.lines``."""

    def __init__(self, bucket: str) -> None:
        self.bucket = bucket
        self.path = os.environ["TRAINLEDGER_TEST_MOTO_LOG"]
        self.lines: list[str] = []

    def __enter__(self) -> server_requests:
        self._start = os.path.getsize(self.path)
        return self

    def __exit__(self, *exc: object) -> None:
        pattern = re.compile(rf'"(GET|PUT|HEAD|POST|DELETE) /{re.escape(self.bucket)}[/? ]')
        last = -1
        for _ in range(50):  # (the server logs after it answered: until the log is still)
            time.sleep(0.05)
            size = os.path.getsize(self.path)
            if size == last:
                break
            last = size
        with open(self.path, "rb") as fh:
            fh.seek(self._start)
            text = fh.read().decode("utf-8", "replace")
        self.lines = [line for line in text.splitlines() if pattern.search(line)]

    def count(self, what: str = "") -> int:
        """Requests whose log line holds ``what`` (all with "")."""
        return sum(what in line for line in self.lines)


__all__ = ["s3_env", "s3_bucket", "objects", "start_moto", "stop_moto", "server_requests"]
