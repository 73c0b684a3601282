"""Scalars: the tags of a set of runs and downsampled (runs x tags) series."""

from __future__ import annotations

from typing import Annotated, Any

import numpy as np
from fastapi import APIRouter, Depends, Query

from trainledger.server import schemas
from trainledger.server.downsample import json_number, nonfinite_marks
from trainledger.server.parent_series import Fork, Line, fork_of, keep_with_fork, splice
from trainledger.server.routes import get_store
from trainledger.server.run_store import RunStore
from trainledger.server.smoothing import smooth, smooth_sessions

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
    data: a spike or a plateau inside it shows at its real resolution. A long merged series
    is answered from its overview in the index when one is fresh and spans the range with
    enough buckets (``SeriesOverview.select``), without reading its points, unless the index
    says the series went NaN or infinite: its ``nonfinite`` steps come from the full data.
    With ``smoothing`` the points are always read: the average runs over every point as
    written (``server/smoothing.py``), then the range and the downsampling pick from it.
    With ``continue_parent`` a run started from another's checkpoint continues its parent's
    line (``server/parent_series.py``), read from the points of both."""
    out: list[dict[str, Any]] = []
    for run_id in dict.fromkeys(request.runs):
        available: set[str] | None = None  # (read only when a series is read raw)
        diverged: set[str] | None = None
        fork = fork_of(store.family(run_id)) if request.continue_parent else None
        for tag in dict.fromkeys(request.tags):
            found = None
            if request.view == "merged" and not request.smoothing and fork is None:
                if diverged is None:  # (an overview drops a NaN inside a bucket: read them)
                    diverged = {str(e["tag"]) for e in store.nonfinite(run_id)}
                if tag not in diverged:
                    found = _from_overview(store, run_id, tag, request)
            if found is None:
                if available is None:
                    available = set(store.scalar_tags(run_id))
                if tag not in available:
                    continue
                found = _from_points(store, run_id, tag, request, fork)
            out.append(found)
    return {"series": out}


def _from_overview(
    store: RunStore, run_id: str, tag: str, request: schemas.SeriesRequest
) -> dict[str, Any] | None:
    """The answer from the series' overview, or None (sessions apart, no fresh overview, or
    too few of its buckets in the range: the points are read)."""
    if request.view != "merged":
        return None
    overview = store.scalar_overview(run_id, tag)
    if overview is None:
        return None
    found = overview.select(request.max_points, request.step_min, request.step_max)
    if found is None:
        return None
    kept, in_range = found
    return _answer(
        run_id,
        tag,
        overview.count,
        in_range,
        kept["step"],
        kept["wall"],
        kept["value"],
        kept["session"],
    )


def _from_points(
    store: RunStore,
    run_id: str,
    tag: str,
    request: schemas.SeriesRequest,
    fork: Fork | None = None,
) -> dict[str, Any]:
    """The series read from its points; with a ``fork``, continued from its parent's (the
    range on the drawn axis, the fork's two points kept by the downsampling)."""
    steps, walls, values, sessions = store.scalar_series(run_id, tag, request.view)
    total = len(values)
    marks = nonfinite_marks(steps, values)  # (the whole series, before any range or sampling)
    line = Line(steps, walls, values, sessions, _smoothed(values, sessions, request))
    drawn, count = steps, 0  # (the steps the range applies to; the parent's first points)
    if fork is not None:
        line, drawn, count = splice(_parent_line(store, fork, tag, request), line, fork.step)
    if request.step_min is not None or request.step_max is not None:
        low = request.step_min if request.step_min is not None else -(2**63)
        high = request.step_max if request.step_max is not None else 2**63 - 1
        inside = (drawn >= low) & (drawn <= high)
        line, count = line.take(inside), int(np.count_nonzero(inside[:count]))
    kept = keep_with_fork(line.values, count, request.max_points)
    shown = line.take(kept)
    answer = _answer(
        run_id,
        tag,
        total,
        len(line) - count,
        shown.steps,
        shown.walls,
        shown.values,
        shown.sessions,
    )
    if shown.smoothed is not None:
        answer["smoothed"] = [json_number(v) for v in shown.smoothed.tolist()]
    if fork is not None:
        answer["parent"] = fork.answer(int(np.count_nonzero(kept < count)))
    return {**answer, "nonfinite": marks}


def _parent_line(store: RunStore, fork: Fork, tag: str, request: schemas.SeriesRequest) -> Line:
    """The parent's ``tag`` (merged: each step once, its sessions never drawn apart) up to
    the fork, smoothed as the parent's own line is (the store's empty arrays when the parent
    lacks the tag)."""
    steps, walls, values, sessions = store.scalar_series(fork.run_id, tag, "merged")
    head = steps <= fork.step
    steps, walls, values, sessions = steps[head], walls[head], values[head], sessions[head]
    smoothed = smooth(values, request.smoothing) if request.smoothing else None
    return Line(steps, walls, values, sessions, smoothed)


def _smoothed(
    values: np.ndarray, sessions: np.ndarray, request: schemas.SeriesRequest
) -> np.ndarray | None:
    """The whole series smoothed (before any range: a zoom's left edge does not restart the
    average), each session apart when drawn apart; None without smoothing."""
    if not request.smoothing:
        return None
    if request.view == "sessions":
        return smooth_sessions(values, sessions, request.smoothing)
    return smooth(values, request.smoothing)


def _answer(
    run_id: str,
    tag: str,
    total: int,
    in_range: int,
    steps: np.ndarray,
    walls: np.ndarray,
    values: np.ndarray,
    sessions: np.ndarray,
) -> dict[str, Any]:
    return {
        "run_id": run_id,
        "tag": tag,
        "total": total,
        "in_range": in_range,
        "points": [
            (int(s), float(w), json_number(float(v)))
            for s, w, v in zip(steps.tolist(), walls.tolist(), values.tolist(), strict=True)
        ],
        "sessions": sessions.tolist(),
        "nonfinite": [],  # (an overview is used only for a series that never went non-finite)
    }
