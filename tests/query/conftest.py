"""Fixtures for the query tests: a copy of the MindSpore runs with MindInsight's run order."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

from tests.conftest import GOLDEN

# MindInsight listed these newest first (lineage file mtimes at the time it answered).
GOLDEN_ORDER = ["momentum_twice", "sgd_noeval", "adam_lr001", "momentum_lr01"]


def copy_golden(dest: Path) -> Path:
    """Copy the fixture runs and set mtimes so the default order is MindInsight's."""
    shutil.copytree(GOLDEN / "mindspore-runs", dest)
    t0 = 1_795_284_300
    for i, name in enumerate(reversed(GOLDEN_ORDER)):
        for path in (dest / name).rglob("*"):
            os.utime(path, (t0 + 10 * i, t0 + 10 * i))
    return dest


@pytest.fixture
def golden_base(tmp_path: Path) -> Path:
    return copy_golden(tmp_path / "runs")


@pytest.fixture(params=["sqlite", "postgresql"])
def index_url(request: pytest.FixtureRequest) -> str | None:
    """Each backend in turn: None (the SQLite file beside the runs) or a fresh PostgreSQL
    database on the session's server."""
    if request.param == "sqlite":
        return None
    return str(request.getfixturevalue("pg_url"))


@pytest.fixture
def small_chunks(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Any build of 1+ runs in bulk, in chunks of 3 runs, 2 asked ahead; counts the parse
    processes started."""
    from trainledger.query import bulk_build, parse_worker

    monkeypatch.setattr(bulk_build, "BULK_MIN_RUNS", 1)
    monkeypatch.setattr(parse_worker, "CHUNK", 3)
    monkeypatch.setattr(parse_worker, "AHEAD", 2)
    started: list[int] = []
    real = parse_worker._start
    monkeypatch.setattr(parse_worker, "_start", lambda: (started.append(1), real())[1])
    return started
