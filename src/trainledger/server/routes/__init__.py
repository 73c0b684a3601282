"""API routes, one module per resource; each reads ``request.app.state.store`` only."""

from __future__ import annotations

from fastapi import HTTPException, Request

from trainledger.server.run_store import RunStore
from trainledger.server.security import WRITE, actor_of


def get_store(request: Request) -> RunStore:
    """FastAPI dependency: the app's store (set by ``create_app``)."""
    store: RunStore = request.app.state.store
    return store


def role_of(request: Request) -> str:
    """What the request may do: its token's role; without tokens every request may write."""
    return str(getattr(request.state, "role", WRITE))


def get_writer(request: Request) -> str:
    """FastAPI dependency of every write: the actor for the audit log, or 403 for a
    read-only token."""
    if role_of(request) != WRITE:
        raise HTTPException(403, "this token may only read; writes need the read-write token")
    actor = getattr(request.state, "actor", None)
    return str(actor) if actor else actor_of(request, WRITE, None)
