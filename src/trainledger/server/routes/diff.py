"""What differs between two or more runs (the diff view): ``GET /api/v1/diff?run=A&run=B``.

The rules live in ``server.run_diff``; this route only checks the request, reads each run's
search object and run record through the store (so the usual run-id rules apply) and hands
them over.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, HTTPException, Query

from trainledger.server.routes import get_store
from trainledger.server.run_diff import MAX_DIFF_RUNS, diff_runs, run_fields
from trainledger.server.run_store import RunStore
from trainledger.server.security import check_run_id

router = APIRouter(prefix="/api/v1", tags=["runs"])

StoreDep = Annotated[RunStore, Depends(get_store)]


def _checked_ids(runs: list[str] | None) -> list[str]:
    """The run ids asked for, or a 400 naming what was expected and what came."""
    ids = [check_run_id(run_id) for run_id in runs or []]
    if len(ids) < 2 or len(set(ids)) != len(ids):
        raise HTTPException(
            400,
            f"a diff needs two or more distinct runs (?run=A&run=B); received {len(ids)}: {ids!r}",
        )
    if len(ids) > MAX_DIFF_RUNS:
        raise HTTPException(
            400, f"a diff compares at most {MAX_DIFF_RUNS} runs; received {len(ids)}"
        )
    return ids


@router.get("/diff", summary="What differs between two or more runs, field by field")
def diff(
    store: StoreDep,
    run: Annotated[list[str] | None, Query(description="A run id; two or more.")] = None,
    show_all: Annotated[
        bool, Query(alias="all", description="Every field, not only those that differ.")
    ] = False,
) -> dict[str, Any]:
    """``{"runs", "fields", "differing", "groups": [{"group", "fields": [{"name", "same",
    "values": [{"missing", "value", "text"}]}]}]}``, one value per run in the order asked;
    404 names the runs the index does not know."""
    ids = _checked_ids(run)
    condition = {"summary_dir": {"in": [f"./{i}" for i in ids]}, "offset": 0, "limit": len(ids)}
    found = {obj["run_id"]: obj for obj in store.search(condition)["object"]}
    unknown = [i for i in ids if i not in found]
    if unknown:
        raise HTTPException(404, f"no such runs under the base: {unknown!r}")
    records = []
    for run_id in ids:
        record = store.run_detail(run_id)["lineage"].get("run") or {}
        records.append((run_id, run_fields(found[run_id], record)))
    return diff_runs(records, show_all=show_all)
