"""Shared test fixtures."""

from __future__ import annotations

from pathlib import Path

import pytest

#: fixtures of real servers the tests start themselves (S3: moto in server mode)
pytest_plugins = ["tests.s3_server"]

REPO = Path(__file__).resolve().parents[1]
GOLDEN = REPO / "tests" / "golden"


@pytest.fixture
def golden_dir() -> Path:
    return GOLDEN
