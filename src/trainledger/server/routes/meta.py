"""Status of the server and its base: what the page polls to see new runs."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Request

from trainledger.server import schemas
from trainledger.server.routes import get_store, role_of
from trainledger.server.run_store import RunStore
from trainledger.version import __version__

router = APIRouter(prefix="/api/v1", tags=["meta"])


@router.get("/status", response_model=schemas.Status, summary="Run count and change stamp")
def status(request: Request, store: Annotated[RunStore, Depends(get_store)]) -> dict[str, Any]:
    """Cheap: a re-scan of the base (directory listing + stats), no lineage parsing unless
    something changed. The page polls it and reloads its data when the stamp moves."""
    stamp = store.stamp()
    return {
        "version": __version__,
        "base": store.base.name or str(store.base),
        "count": stamp["count"],
        "stamp": stamp["stamp"],
        "token_required": request.app.state.token_required,
        "role": role_of(request),
    }
