"""The series API says which session each point belongs to, and ``view=sessions`` serves a
re-run directory's points as written (each session apart), where ``merged`` (the default)
serves each step once by the series rule: never a line back to step 0."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from tests.runs import write_run
from tests.server.conftest import client_for
from trainledger.storage import frame
from trainledger.summary.proto import summary_pb2 as pb


def _event(step: int, value: float | None = None, start: bool = False) -> bytes:
    if start:
        log = pb.SessionLog(status=pb.SessionLog.START)
        return frame(
            pb.Event(step=step, wall_time=1.7e9 + step, session_log=log).SerializeToString()
        )
    summary = pb.Summary(value=[pb.Summary.Value(tag="loss", simple_value=value)])
    return frame(pb.Event(step=step, wall_time=1.7e9 + step, summary=summary).SerializeToString())


def _resumed_run(base: Path) -> None:
    """Steps 1..10 by one writer, then a resumed writer from step 6 (its START at 6)."""
    run = write_run(base, "resumed")
    first = b"".join(_event(s, 1.0 / s) for s in range(1, 11))
    second = _event(6, start=True) + b"".join(_event(s, 0.5 / s) for s in range(6, 13))
    (run / "events.out.tfevents.1700000000.host.111.0").write_bytes(first)
    (run / "events.out.tfevents.1700000100.host.222.0").write_bytes(second)


def _series(client: Any, view: str | None) -> dict[str, Any]:
    body: dict[str, Any] = {"runs": ["resumed"], "tags": ["loss"]}
    if view:
        body["view"] = view
    answer = client.post("/api/v1/scalars/series", json=body)
    assert answer.status_code == 200, answer.text
    (series,) = answer.json()["series"]
    return series


def test_merged_serves_each_step_once_and_sessions_serve_them_apart(tmp_path: Path) -> None:
    _resumed_run(tmp_path)
    with client_for(tmp_path) as client:
        merged = _series(client, None)
        assert [p[0] for p in merged["points"]] == list(range(1, 13))  # 1..5, then 6..12
        assert merged["sessions"] == [0] * 5 + [1] * 7
        assert merged["points"][5][2] == pytest.approx(0.5 / 6)  # the resumed session's won
        apart = _series(client, "sessions")
        assert [p[0] for p in apart["points"]] == [*range(1, 11), *range(6, 13)]
        assert apart["sessions"] == [0] * 10 + [1] * 7
        bad = client.post(
            "/api/v1/scalars/series", json={"runs": ["resumed"], "tags": ["loss"], "view": "x"}
        )
        assert bad.status_code == 422
