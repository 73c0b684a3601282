"""Status of the server and its base: what the page polls to see new runs."""

from __future__ import annotations

import time
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Request

from trainledger.server import schemas
from trainledger.server.routes import get_store, role_of
from trainledger.server.run_store import RunStore
from trainledger.storage import staged_locations
from trainledger.version import __version__

router = APIRouter(prefix="/api/v1", tags=["meta"])


@router.get("/status", response_model=schemas.Status, summary="Run count and change stamp")
def status(
    request: Request, store: Annotated[RunStore, Depends(get_store)], scan: bool = True
) -> dict[str, Any]:
    """Cheap: a re-scan of the base (directory listing + stats) when one is due, no lineage
    parsing unless something changed. The page polls it and reloads its data when the stamp
    moves. ``scan=false``: the runs as last scanned, no re-scan (the page's first call: at
    10,000 runs a re-scan is 0.3-1 s of the server's interpreter, which its first requests
    would share; the next poll scans)."""
    stamp = store.stamp(scan=scan)
    return {
        "version": __version__,
        "base": store.base.name or str(store.base),
        "count": stamp["count"],
        "stamp": stamp["stamp"],
        "token_required": request.app.state.token_required,
        "role": role_of(request),
        "unsynced": _unsynced(request, store),
    }


#: seconds a look at the staging directories is reused (the page polls every few seconds)
UNSYNCED_TTL = 30.0


def _unsynced(request: Request, store: RunStore) -> list[str]:
    """The locations under an ``s3://`` base left unsynced on this machine (cached briefly)."""
    remote = getattr(store, "remote", None)
    if not remote:
        return []
    cached = getattr(request.app.state, "unsynced", None)
    now = time.monotonic()
    if cached is None or now - cached[0] > UNSYNCED_TTL:
        found = [s.url for s in staged_locations(under=remote) if s.unsynced]
        cached = (now, found)
        request.app.state.unsynced = cached
    return list(cached[1])
