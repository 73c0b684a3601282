"""The index going away is never an empty answer: with the UI serving (uvicorn on 127.0.0.1),
``index.db`` deleted or replaced makes the API answer from the rebuilt index, or 503 with
Retry-After while it is rebuilt; never fewer runs and never a 404 for a run that exists."""

from __future__ import annotations

import json
import os
import shutil
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from tests.runs import make_base
from tests.server.browser_support import LiveServer
from trainledger.query import filter_summary_lineage

RUNS = 120


def _get(url: str, body: dict[str, Any] | None = None) -> tuple[int, dict[str, Any], str]:
    data = None if body is None else json.dumps(body).encode()
    headers = {"Content-Type": "application/json"} if data else {}
    request = urllib.request.Request(url, data=data, headers=headers)
    try:
        with urllib.request.urlopen(request, timeout=60) as answer:
            return answer.status, json.loads(answer.read()), ""
    except urllib.error.HTTPError as err:
        return err.code, json.loads(err.read() or b"{}"), err.headers.get("Retry-After") or ""


def _check(url: str, body: dict[str, Any] | None, ok: Any) -> str:
    """'ok', 'wait' (a 503 that says why and when to retry) or what went wrong."""
    status, answer, retry = _get(url, body)
    if status == 503 and retry and "rebuilt" in answer.get("detail", ""):
        return "wait"
    return "ok" if status == 200 and ok(answer) else f"{status} {str(answer)[:200]}"


def _probe(url: str, stop: threading.Event, seen: list[str], i: int) -> None:
    limits = iter(range(1, 10**6))
    while not stop.is_set():
        if i == 0:
            seen.append(_check(f"{url}api/v1/status", None, lambda a: a["count"] == RUNS))
        elif i == 1:  # a new page size each time: never a cached answer
            body = {"limit": next(limits) % 50 + 1, "offset": 0}
            seen.append(_check(f"{url}api/v1/runs", body, lambda a: a["count"] == RUNS))
        else:
            seen.append(_check(f"{url}api/v1/runs/run07", None, lambda a: "run_id" in a))


@pytest.mark.slow
@pytest.mark.parametrize("how", ["delete", "replace", "another-base", "whole-directory"])
def test_a_deleted_or_replaced_index_is_never_an_empty_answer(tmp_path: Path, how: str) -> None:
    base = make_base(tmp_path / "b", n=RUNS, scalars=0)
    server = LiveServer(base).start()
    try:
        assert _check(f"{server.url}api/v1/status", None, lambda a: a["count"] == RUNS) == "ok"
        stop = threading.Event()
        seen: list[str] = []
        probes = [
            threading.Thread(target=_probe, args=(server.url, stop, seen, i)) for i in range(3)
        ]
        for probe in probes:
            probe.start()
        time.sleep(0.3)
        index = base / ".trainledger" / "index.db"
        other = make_base(tmp_path / "other", n=7, scalars=0)
        filter_summary_lineage(str(other))  # a built index of another base, to copy in
        for _ in range(3):  # more than once: each new file is a new rebuild
            if how == "delete":
                index.unlink()
            elif how == "replace":  # an empty file in its place (a restore gone wrong)
                (tmp_path / "empty").write_bytes(b"")
                os.replace(tmp_path / "empty", index)
            elif how == "another-base":  # another base's index copied over this one's
                shutil.copy(other / ".trainledger" / "index.db", tmp_path / "copy.db")
                os.replace(tmp_path / "copy.db", index)
            else:
                shutil.rmtree(base / ".trainledger")
            time.sleep(2.0)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and (not seen or seen[-1] != "ok"):
            time.sleep(0.2)
        stop.set()
        for probe in probes:
            probe.join(timeout=60)
    finally:
        server.stop()
    wrong = sorted({s for s in seen if s not in ("ok", "wait")})
    assert not wrong, wrong
    assert seen.count("ok") > 10 and seen[-1] == "ok"
