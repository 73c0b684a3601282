"""One run's loss landscapes, computational graph and family, for the run page.

Registered before the ``/runs/{run_id:run}`` route, which would otherwise swallow these
paths. The run id goes through the store, hence ``security.resolve_run``: only runs the index
knows, inside BASE.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, HTTPException, Query

from trainledger.server.graph_view import MAX_NODES
from trainledger.server.routes import get_store
from trainledger.server.run_store import RunStore

router = APIRouter(prefix="/api/v1/runs", tags=["landscape and graph"])

StoreDep = Annotated[RunStore, Depends(get_store)]


@router.get(
    "/{run_id:run}/landscapes",
    summary="The run's loss landscapes: axes, losses, training path",
)
def landscapes(store: StoreDep, run_id: str) -> dict[str, Any]:
    """``{"landscapes": [{tag, kind, decomposition, intervals, unit, source, x, y, z, path,
    convergence_point}]}``; ``z[i][j]`` is the loss at ``(x[j], y[i])`` (null: not finite)."""
    return {"landscapes": store.landscapes(run_id)}


@router.get(
    "/{run_id:run}/graph",
    summary="The run's computational graph: nodes by module scope, edges with tensor shapes",
)
def graph(
    store: StoreDep,
    run_id: str,
    max_nodes: Annotated[int, Query(ge=10, le=20_000)] = MAX_NODES,
) -> dict[str, Any]:
    """A graph of more than ``max_nodes`` nodes comes collapsed to module level
    (``collapsed_depth``); 404 when the run recorded no graph."""
    found = store.graph(run_id, max_nodes)
    if found is None:
        raise HTTPException(404, f"run {run_id!r} has no computational graph")
    return found


@router.get(
    "/{run_id:run}/family",
    tags=["runs"],
    summary="The run's family: the runs it started from, those that started from it, and "
    "the evaluations of its checkpoints",
)
def family(store: StoreDep, run_id: str) -> dict[str, Any]:
    """``trainledger.run_family``'s answer (``{"run", "metric", "ancestors", "descendants",
    "evaluations"}``, each entry with ``run``, ``checkpoint``, ``step``, ``match``, ``depth``
    and ``metric``), with ``run_id`` on the answer and on every entry (null for a file from
    outside the base), ``child_id`` on ancestors and ``parent_id`` on descendants; 404 for a
    run the index does not know."""
    return store.family(run_id)
