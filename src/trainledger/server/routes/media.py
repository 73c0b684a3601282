"""One run's images, histograms and tensors (TensorBoard and MindSpore summaries alike).

Registered before the ``/runs/{run_id:run}`` route, which would otherwise swallow these
paths. Tags travel as query parameters (they may hold slashes); an unknown tag or index is a
404 naming it. The run id goes through the store, hence ``security.resolve_run``.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, HTTPException, Query
from fastapi.responses import Response

from trainledger.server.downsample import json_number
from trainledger.server.media_store import Kind, image_type, pick_indices, rebin, tensor_view
from trainledger.server.routes import get_store
from trainledger.server.run_store import RunStore

router = APIRouter(prefix="/api/v1/runs", tags=["media"])

StoreDep = Annotated[RunStore, Depends(get_store)]
TagQuery = Annotated[str, Query(max_length=1000, description="The summary tag.")]
IndexQuery = Annotated[
    int, Query(description="Position in the tag's steps (negative counts from the end).")
]


def _events(store: RunStore, run_id: str, kind: Kind, tag: str, index: int | None) -> Any:
    events = store.media(run_id, kind).get(tag)
    if not events:
        raise HTTPException(404, f"no {kind[:-1]} tag {tag!r} in run {run_id!r}")
    if index is None:
        return events
    if not -len(events) <= index < len(events):
        raise HTTPException(404, f"index expected in [0, {len(events)}), received: {index}")
    return events[index]


@router.get("/{run_id:run}/images", summary="Image tags of a run, with their steps")
def image_tags(store: StoreDep, run_id: str) -> dict[str, Any]:
    items = store.media(run_id, "images")
    return {
        "tags": [
            {
                "tag": tag,
                "steps": [e.step for e in events],
                "width": events[-1].width,
                "height": events[-1].height,
            }
            for tag, events in sorted(items.items())
        ]
    }


@router.get(
    "/{run_id:run}/images/file",
    response_class=Response,
    summary="One image, as the encoded bytes written (PNG, JPEG or GIF)",
    responses={200: {"content": {"image/png": {}}}},
)
def image_file(store: StoreDep, run_id: str, tag: TagQuery, index: IndexQuery = -1) -> Response:
    event = _events(store, run_id, "images", tag, index)
    media_type = image_type(event.encoded)
    if media_type is None:
        raise HTTPException(415, f"image {tag!r} at step {event.step} is not PNG, JPEG or GIF")
    return Response(
        event.encoded,
        media_type=media_type,
        headers={"X-Content-Type-Options": "nosniff", "Cache-Control": "no-cache"},
    )


@router.get("/{run_id:run}/histograms", summary="Histogram tags of a run")
def histogram_tags(store: StoreDep, run_id: str) -> dict[str, Any]:
    items = store.media(run_id, "histograms")
    return {
        "tags": [
            {"tag": tag, "count": len(ev), "first_step": ev[0].step, "last_step": ev[-1].step}
            for tag, ev in sorted(items.items())
        ]
    }


@router.get(
    "/{run_id:run}/histograms/series",
    summary="A tag's histograms on one grid of bins, at most max_steps of them",
)
def histogram_series(
    store: StoreDep,
    run_id: str,
    tag: TagQuery,
    max_steps: Annotated[int, Query(ge=2, le=500)] = 50,
    bins: Annotated[int, Query(ge=2, le=500)] = 30,
) -> dict[str, Any]:
    """Counts are re-binned onto ``bins`` equal bins over the range of the chosen steps, as
    TensorBoard's view does, so steps written with different bucketings can be overlaid."""
    events = _events(store, run_id, "histograms", tag, None)
    chosen = [events[i] for i in pick_indices(len(events), max_steps)]
    edges, counts = rebin(chosen, bins)
    return {
        "tag": tag,
        "total": len(events),
        "edges": edges.tolist(),
        "histograms": [
            {
                "step": e.step,
                "wall_time": e.wall_time,
                "counts": row.tolist(),
                "min": json_number(e.min),
                "max": json_number(e.max),
                "count": json_number(e.count),
                "sum": json_number(e.sum),
            }
            for e, row in zip(chosen, counts, strict=True)
        ],
    }


@router.get("/{run_id:run}/tensors", summary="Tensor tags of a run, with steps, shape, dtype")
def tensor_tags(store: StoreDep, run_id: str) -> dict[str, Any]:
    items = store.media(run_id, "tensors")
    return {
        "tags": [
            {
                "tag": tag,
                "steps": [e.step for e in events],
                "shape": list(events[-1].value.shape),
                "dtype": str(events[-1].value.dtype),
            }
            for tag, events in sorted(items.items())
        ]
    }


@router.get(
    "/{run_id:run}/tensors/value",
    summary="One tensor: shape, dtype, values of small ones, statistics of numeric ones",
)
def tensor_value(
    store: StoreDep,
    run_id: str,
    tag: TagQuery,
    index: IndexQuery = -1,
    max_values: Annotated[int, Query(ge=0, le=100_000)] = 1024,
) -> dict[str, Any]:
    event = _events(store, run_id, "tensors", tag, index)
    return {
        "tag": tag,
        "step": event.step,
        "wall_time": event.wall_time,
        **tensor_view(event.value, max_values),
    }
