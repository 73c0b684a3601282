"""API routes, one module per resource; each reads ``request.app.state.store`` only."""

from __future__ import annotations

from fastapi import HTTPException, Request
from starlette.convertors import PathConvertor, register_url_convertor

from trainledger.server.run_store import RunStore
from trainledger.server.security import WRITE, actor_of


class RunIdConvertor(PathConvertor):
    """``{run_id:run}``: a run id of any characters a directory name may hold. Starlette's
    ``path`` (``.*``) stops at a newline, so a run named ``a\\nb`` was listed and then 404
    on every route; ``check_run_id`` still refuses what could leave the base."""

    regex = r"[\s\S]*"


register_url_convertor("run", RunIdConvertor())


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
