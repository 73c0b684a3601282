"""Scalars: the tags of a set of runs and downsampled (runs x tags) series."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query

from trainledger.server import schemas
from trainledger.server.downsample import json_number, keep_indices
from trainledger.server.routes import get_store
from trainledger.server.run_store import RunStore

router = APIRouter(prefix="/api/v1/scalars", tags=["scalars"])

StoreDep = Annotated[RunStore, Depends(get_store)]


@router.get("/tags", response_model=schemas.ScalarTags, summary="Scalar tags of runs")
def scalar_tags(
    store: StoreDep,
    run: Annotated[list[str], Query(max_length=500, description="Run ids (repeat the key).")],
) -> dict[str, Any]:
    runs = {run_id: store.scalar_tags(run_id) for run_id in dict.fromkeys(run)}
    tags = sorted({tag for run_tags in runs.values() for tag in run_tags})
    return {"runs": runs, "tags": tags}


@router.post(
    "/series",
    response_model=schemas.SeriesResult,
    summary="Series for (runs x tags), at most max_points points each",
)
def scalar_series(store: StoreDep, request: schemas.SeriesRequest) -> dict[str, Any]:
    """Runs without a tag are left out of the answer rather than failing the request. With
    ``step_min``/``step_max`` (a zoomed chart) only that range is downsampled, from the full
    data: a spike or a plateau inside it shows at its real resolution."""
    out: list[dict[str, Any]] = []
    for run_id in dict.fromkeys(request.runs):
        available = set(store.scalar_tags(run_id))
        for tag in dict.fromkeys(request.tags):
            if tag not in available:
                continue
            steps, walls, values, sessions = store.scalar_series(run_id, tag, request.view)
            total = len(values)
            if request.step_min is not None or request.step_max is not None:
                low = request.step_min if request.step_min is not None else -(2**63)
                high = request.step_max if request.step_max is not None else 2**63 - 1
                inside = (steps >= low) & (steps <= high)
                steps, walls, values, sessions = (
                    steps[inside],
                    walls[inside],
                    values[inside],
                    sessions[inside],
                )
            kept = keep_indices(values, request.max_points)
            out.append(
                {
                    "run_id": run_id,
                    "tag": tag,
                    "total": total,
                    "in_range": len(values),
                    "points": [
                        (int(s), float(w), json_number(float(v)))
                        for s, w, v in zip(
                            steps[kept].tolist(),
                            walls[kept].tolist(),
                            values[kept].tolist(),
                            strict=True,
                        )
                    ],
                    "sessions": sessions[kept].tolist(),
                }
            )
    return {"series": out}
