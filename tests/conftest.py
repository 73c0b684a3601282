"""Shared test fixtures."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

#: fixtures of real servers the tests start themselves (S3: moto in server mode; PostgreSQL)
pytest_plugins = ["tests.s3_server", "tests.pg_server"]

REPO = Path(__file__).resolve().parents[1]
GOLDEN = REPO / "tests" / "golden"


@pytest.fixture(autouse=True, scope="session")
def _no_base_watchers() -> Iterator[None]:
    """Queries in a long-lived process watch their base (query.watch); other processes' writes
    then show after the kernel's notification, tens of milliseconds later. Tests that write
    with one process and query at once from another rely on full scans, so watching is off
    here except in tests/query/test_watch.py, which turns it on and tests it (and in a whole
    run with TRAINLEDGER_TEST_WATCH=1, to try everything with watchers)."""
    if os.environ.get("TRAINLEDGER_TEST_WATCH") == "1":
        yield
        return
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("TRAINLEDGER_WATCH", "0")
        yield


@pytest.fixture
def golden_dir() -> Path:
    return GOLDEN


@pytest.fixture
def decoded_points(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """How many scalar points each ``RunReader.read_scalar_sessions`` call decodes from now
    on (a read the series sidecar stood for decodes none)."""
    from trainledger.summary import RunReader

    counts: list[int] = []
    real = RunReader.read_scalar_sessions

    def spy(self: RunReader) -> Any:
        out = real(self)
        counts.append(sum(len(series[0]) for series in out.values()))
        return out

    monkeypatch.setattr(RunReader, "read_scalar_sessions", spy)
    return counts
