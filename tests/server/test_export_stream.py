"""Issue 16 item 10: export.csv is streamed in parts made on the export pool.

(Speed is measured by bench/ui_api.py's concurrent-export scenario, not here.)
"""

from __future__ import annotations

import csv
import io
import threading
from pathlib import Path
from typing import Any

import pytest

from tests.server.conftest import client_for
from trainledger.server import export, run_store


def _rows(text: str) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(text)))


def test_streamed_parts_make_the_same_table(base: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with client_for(base) as client:
        whole = client.post("/api/v1/runs/export.csv", json={"sorted_name": "loss"}).text
        monkeypatch.setattr(export, "CHUNK_ROWS", 2)  # 6 runs: header + 3 parts
        monkeypatch.setattr(run_store, "_RUN_INFO_MAX", 0)  # the parts read the run fields
        with client.stream("POST", "/api/v1/runs/export.csv", json={"sorted_name": "loss"}) as r:
            assert r.status_code == 200
            assert r.headers["content-type"].startswith("text/csv")
            parts = list(r.iter_text())
    streamed = "".join(parts)
    assert streamed == whole
    rows = _rows(streamed)
    assert len(rows) == 6 and all(row["run/status"] for row in rows)


def test_rows_are_made_on_the_export_pool(base: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    threads: list[str] = []
    original = run_store.EngineStore.run_info

    def spy(self: Any, run_id: str) -> dict[str, Any]:
        threads.append(threading.current_thread().name)
        return original(self, run_id)

    monkeypatch.setattr(run_store, "_RUN_INFO_MAX", 0)
    monkeypatch.setattr(run_store.EngineStore, "run_info", spy)
    with client_for(base) as client:
        assert len(_rows(client.post("/api/v1/runs/export.csv").text)) == 6
    assert threads and all(name.startswith("trainledger-export") for name in threads)
