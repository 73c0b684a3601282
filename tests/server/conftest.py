"""Fixtures of the server tests: a base of real runs and a TestClient over it."""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.runs import make_base
from tests.server.browser_support import browser, page  # noqa: F401 (the browser fixtures)
from trainledger.server.app import create_app
from trainledger.server.run_store import IndexedRunStore

with warnings.catch_warnings():
    warnings.simplefilter("ignore", DeprecationWarning)
    from fastapi.testclient import TestClient


@pytest.fixture
def base(tmp_path: Path) -> Path:
    return make_base(tmp_path / "runs", n=6, scalars=30)


def client_for(
    base: Path, token: str | None = None, read_token: str | None = None, **store_options: object
) -> TestClient:
    store = IndexedRunStore(
        base,
        rescan_interval=0.0,
        stale_after=0.0,
        background_rescan=False,
        scalar_interval=0.0,
        **store_options,
    )  # type: ignore[arg-type]
    app = create_app(base, token=token, read_token=read_token, store=store)
    return TestClient(app, follow_redirects=False)


@pytest.fixture
def client(base: Path) -> Iterator[TestClient]:
    with client_for(base) as c:
        yield c
