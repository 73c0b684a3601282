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
from trainledger.server import csv_export, run_store

EXPORT = "/api/v1/runs/export.csv"


def _rows(text: str) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(text)))


@pytest.fixture
def run_info_calls(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The names of the threads that read a run's ``run`` fields (large results only)."""
    threads: list[str] = []
    original = run_store.IndexedRunStore.run_info

    def spy(self: Any, run_id: str) -> dict[str, Any]:
        threads.append(threading.current_thread().name)
        return original(self, run_id)

    monkeypatch.setattr(run_store, "_RUN_INFO_MAX", 0)  # as for a result of > 100 runs
    monkeypatch.setattr(run_store.IndexedRunStore, "run_info", spy)
    return threads


def test_streamed_parts_make_the_same_table(
    base: Path, monkeypatch: pytest.MonkeyPatch, run_info_calls: list[str]
) -> None:
    with client_for(base) as client:
        whole = client.post(EXPORT, json={"sorted_name": "loss"}).text  # one part of rows
        monkeypatch.setattr(csv_export, "CHUNK_ROWS", 2)
        store = client.app.state.store  # type: ignore[attr-defined]
        cond = {"sorted_name": "loss", "sorted_type": "ascending"}  # same order, new result
        parts = list(csv_export.csv_parts(store, store.search(cond), None))
    assert len(parts) == 4  # header, then 6 runs in parts of 2
    assert "".join(parts) == whole
    rows = _rows(whole)
    assert len(rows) == 6 and all(row["run/status"] for row in rows)


def test_rows_are_made_on_the_export_pool(base: Path, run_info_calls: list[str]) -> None:
    with client_for(base) as client:
        assert len(_rows(client.post(EXPORT).text)) == 6
    assert len(run_info_calls) == 6
    assert all(name.startswith("trainledger-export") for name in run_info_calls)


def test_the_same_export_is_made_once_per_data_version(
    base: Path, run_info_calls: list[str]
) -> None:
    with client_for(base) as client:
        first = client.post(EXPORT, json={"optimizer": {"in": ["Adam", "SGD"]}}).text
        made = len(run_info_calls)
        assert client.post(EXPORT, json={"optimizer": {"in": ["Adam", "SGD"]}}).text == first
        assert len(run_info_calls) == made  # sent again, not made again
        run_id = _rows(first)[0]["run_id"]
        client.put(f"/api/v1/runs/{run_id}/annotation", json={"tag": 9})  # a new data version
        again = _rows(client.post(EXPORT, json={"optimizer": {"in": ["Adam", "SGD"]}}).text)
        assert again[0]["tag"] == "9" and len(run_info_calls) > made
