"""A team's writes beyond annotations: archive, restore and delete runs; the audit log.

Every write needs the read-write token (``routes.get_writer``) and is recorded in the base's
audit log with the actor (token role and fingerprint, client address), never the token.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query

from trainledger.server.routes import get_store, get_writer
from trainledger.server.run_store import RunStore

router = APIRouter(prefix="/api/v1", tags=["admin"])

StoreDep = Annotated[RunStore, Depends(get_store)]
WriterDep = Annotated[str, Depends(get_writer)]
ForceQuery = Annotated[
    bool, Query(description="Also when the lineage still says 'running' (a dead writer).")
]


@router.post("/runs/{run_id:run}/archive", summary="Move a run into the base's archive")
def archive(
    store: StoreDep, actor: WriterDep, run_id: str, force: ForceQuery = False
) -> dict[str, Any]:
    moved = store.archive(run_id, force=force)
    store.audit(actor, "archive", run_id, force=force)
    return {"run_id": run_id, "archived": True, "path": moved}


@router.post("/archive/{run_id:run}/restore", summary="Bring an archived run back")
def restore(store: StoreDep, actor: WriterDep, run_id: str) -> dict[str, Any]:
    store.restore(run_id)
    store.audit(actor, "restore", run_id)
    return {"run_id": run_id, "archived": False}


@router.get("/archive", summary="Run ids in the base's archive")
def archived(store: StoreDep) -> dict[str, Any]:
    return {"run_ids": store.archived()}


@router.delete("/runs/{run_id:run}", summary="Delete a run and its checkpoints")
def delete(
    store: StoreDep, actor: WriterDep, run_id: str, force: ForceQuery = False
) -> dict[str, Any]:
    removed = store.delete(run_id, force=force)
    store.audit(actor, "delete", run_id, force=force, removed=len(removed))
    return {"run_id": run_id, "deleted": True, "files": len(removed)}


@router.get("/audit", summary="The audit log of writes, newest last")
def audit(store: StoreDep, limit: Annotated[int, Query(ge=1, le=10_000)] = 200) -> dict[str, Any]:
    return {"entries": store.audit_log(limit)}
