"""Named models: every model with its versions (run, step, main metric) and aliases, one
model's history, a registration from a run's checkpoint table, an alias moved or removed.

Writes need the read-write token (``routes.get_writer``); the registry's history names the
request's actor (token role and fingerprint, client address), as the audit log does, where
each write is recorded too. A malformed name, alias, version or checkpoint is a 400 with the
registry's message; an unknown model, version or alias a 404 (``app.py``).
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends

from trainledger.server import model_view, schemas
from trainledger.server.routes import get_store, get_writer
from trainledger.server.routes.runs import cap_long_values
from trainledger.server.run_store import RunStore

router = APIRouter(prefix="/api/v1", tags=["models"])

StoreDep = Annotated[RunStore, Depends(get_store)]
WriterDep = Annotated[str, Depends(get_writer)]


@router.get("/models", summary="Every named model: versions (run, step, main metric), aliases")
def models(store: StoreDep) -> dict[str, Any]:
    return {"models": cap_long_values(model_view.models(store))}


@router.get("/models/{name}", summary="One named model: versions, aliases and history")
def model(store: StoreDep, name: str) -> dict[str, Any]:
    found: dict[str, Any] = cap_long_values(model_view.model(store, name))
    return found


@router.post("/models/{name}/versions", summary="Register a run's checkpoint as a new version")
def register(
    store: StoreDep, actor: WriterDep, name: str, body: schemas.ModelRegistration
) -> dict[str, Any]:
    found = model_view.register(store, name, body.run, body.checkpoint, body.alias, actor)
    store.audit(
        actor,
        "model_register",
        found["run_id"],
        model=name,
        version=found["version"],
        checkpoint=found["path"],
        alias=body.alias,
    )
    shown: dict[str, Any] = cap_long_values(found)
    return shown


@router.put("/models/{name}/aliases/{alias}", summary="Point an alias at a version")
def move_alias(
    store: StoreDep, actor: WriterDep, name: str, alias: str, body: schemas.AliasTarget
) -> dict[str, Any]:
    return _moved(store, actor, model_view.move_alias(store, name, alias, body.version, actor))


@router.delete("/models/{name}/aliases/{alias}", summary="Remove an alias")
def remove_alias(store: StoreDep, actor: WriterDep, name: str, alias: str) -> dict[str, Any]:
    return _moved(store, actor, model_view.move_alias(store, name, alias, None, actor))


def _moved(store: RunStore, actor: str, entry: dict[str, Any]) -> dict[str, Any]:
    detail = {k: entry.get(k) for k in ("alias", "version", "previous")}
    store.audit(actor, "model_alias", entry.get("run_id") or "", model=entry["name"], **detail)
    return entry
