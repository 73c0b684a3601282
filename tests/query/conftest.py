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
