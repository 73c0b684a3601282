"""API routes, one module per resource; each reads ``request.app.state.store`` only."""

from __future__ import annotations

from fastapi import Request

from trainledger.server.run_store import RunStore


def get_store(request: Request) -> RunStore:
    """FastAPI dependency: the app's store (set by ``create_app``)."""
    store: RunStore = request.app.state.store
    return store
