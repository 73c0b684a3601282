"""A read-only base (a shared mount, another user's files) served by ``trainledger ui``: reads
work, a tag and its audit entry go to the user's cache together, and with nowhere writable a
change is a 409 naming the read-only path, never a 500.

Real read-only files: as root (who may write anywhere) the server runs in a mount namespace of
its own where the paths are read-only bind mounts, as a read-only NFS share is; as another
user they are made read-only with ``chmod``.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.runs import make_base

ROOT = os.geteuid() == 0


def _call(url: str, method: str = "GET", body: Any = None) -> tuple[int, dict[str, Any]]:
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, method=method)
    request.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(request, timeout=30) as answer:
            return answer.status, json.loads(answer.read())
    except urllib.error.HTTPError as err:
        return err.code, json.loads(err.read() or b"{}")


@pytest.fixture
def world() -> Iterator[Path]:
    """A directory every user can enter (pytest's own are private to root)."""
    top = Path(tempfile.mkdtemp(prefix="tl-ro-"))
    top.chmod(0o755)
    yield top
    for path in [top, *top.rglob("*")]:
        if path.is_dir() and not path.is_symlink():
            path.chmod(0o755)
    shutil.rmtree(top, ignore_errors=True)


def _serve(base: Path, cache: Path, read_only: list[Path]) -> tuple[subprocess.Popen[bytes], str]:
    """``trainledger ui`` over ``base`` with ``read_only`` paths read-only to it."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    env = {**os.environ, "XDG_CACHE_HOME": str(cache)}
    serve = [sys.executable, "-m", "trainledger", "ui", str(base), "--port", str(port)]
    if ROOT:
        mounts = " && ".join(
            f"mount --bind {p} {p} && mount -o remount,bind,ro {p} {p}" for p in read_only
        )
        command = ["unshare", "-m", "sh", "-c", f"{mounts} && exec {' '.join(serve)}"]
    else:
        for path in read_only:
            for item in [path, *path.rglob("*")]:
                item.chmod(0o555 if item.is_dir() else 0o444)
        command = serve
    proc = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    url = f"http://127.0.0.1:{port}/"
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and proc.poll() is None:
        try:
            urllib.request.urlopen(f"{url}api/v1/status", timeout=5)
            return proc, url
        except OSError:
            time.sleep(0.2)
    proc.kill()
    raise AssertionError(f"the server did not start: {proc.stderr.read()!r}")  # type: ignore[union-attr]


@pytest.mark.slow
def test_a_read_only_base_reads_and_keeps_tags_with_their_audit_in_the_cache(world: Path) -> None:
    base = make_base(world / "base", n=3, scalars=0)
    cache = world / "cache"
    cache.mkdir()
    proc, url = _serve(base, cache, [base])
    try:
        status, found = _call(f"{url}api/v1/runs", "POST", {})
        assert status == 200 and found["count"] == 3
        status, tagged = _call(f"{url}api/v1/runs/run01/annotation", "PUT", {"tag": 4})
        assert status == 200, tagged
        status, log = _call(f"{url}api/v1/audit")
        assert status == 200 and [e["action"] for e in log["entries"]] == ["annotate"], log
        status, found = _call(f"{url}api/v1/runs", "POST", {})
        tags = {o["run_id"]: o["added_info"].get("tag") for o in found["object"]}
        assert tags["run01"] == 4
        status, archived = _call(f"{url}api/v1/runs/run02/archive", "POST")
        assert status == 409 and str(base) in archived["detail"], archived
    finally:
        proc.kill()
        proc.wait(timeout=30)
    assert not (base / ".trainledger").exists()  # nothing written into the base
    assert list(cache.rglob("audit.jsonl"))  # beside the annotations


@pytest.mark.slow
def test_with_nowhere_writable_a_change_is_409_naming_the_path(world: Path) -> None:
    base = make_base(world / "base", n=2, scalars=0)
    cache = world / "cache"
    cache.mkdir()
    proc, url = _serve(base, cache, [base, cache])
    try:
        status, found = _call(f"{url}api/v1/runs", "POST", {})
        assert status == 200 and found["count"] == 2  # reads work (index in scratch space)
        status, refused = _call(f"{url}api/v1/runs/run01/annotation", "PUT", {"tag": 4})
        assert status == 409, refused
        assert str(base / ".trainledger") in refused["detail"] and str(cache) in refused["detail"]
        status, log = _call(f"{url}api/v1/audit")
        assert status == 200 and log["entries"] == []
    finally:
        proc.kill()
        proc.wait(timeout=30)
