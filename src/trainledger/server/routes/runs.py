"""Runs: search (filter/sort/page), chart columns, CSV export, one run, annotations."""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Annotated, Any

from fastapi import APIRouter, Body, Depends, Query
from fastapi.responses import Response, StreamingResponse

from trainledger.lineage import json_float
from trainledger.query import flatten_object, is_field, missing_field_notes, parse_series_field
from trainledger.server import schemas
from trainledger.server.columns import (
    COLUMN_GROUPS,
    SORTABLE_RUN_FIELDS,
    STANDARD_FIELDS,
    column_group,
    columns_of,
)
from trainledger.server.condition_merge import merge_conditions
from trainledger.server.csv_export import csv_parts, on_export_pool, stream_on_pool
from trainledger.server.dataset_groups import group_datasets
from trainledger.server.divergence import diverged
from trainledger.server.routes import get_store, get_writer
from trainledger.server.run_store import RunStore

router = APIRouter(prefix="/api/v1", tags=["runs"])
#: the statistics of each tag the column chooser offers (the query takes every one of STATS)
SHOWN_STATS = ("last", "min", "max", "nonfinite_step")

StoreDep = Annotated[RunStore, Depends(get_store)]
WriterDep = Annotated[str, Depends(get_writer)]
WhereQuery = Annotated[
    list[str] | None,
    Query(description="Filter expressions in the CLI's --where syntax, ANDed with the body."),
]
ConditionBody = Annotated[
    dict[str, Any] | None,
    Body(
        description="A search condition, as for filter_summary_lineage.",
        examples=[
            {
                "optimizer": {"in": ["Adam"]},
                "sorted_name": "metric/accuracy",
                "sorted_type": "descending",
                "offset": 0,
                "limit": 10,
            }
        ],
    ),
]


#: the most characters a string carries in a list page; the run page and the CSV keep it whole
LIST_FIELD_CHARS = 4096


def cap_long_values(value: Any) -> Any:
    """``value`` with every string over ``LIST_FIELD_CHARS`` cut, ending in a visible marker
    (a copy: the store's cached result is shared), and every non-finite float as protobuf
    JSON's string (``nonfinite_json``). A 150 MB ``user_defined`` string would otherwise
    travel with every table page."""
    if isinstance(value, float):
        return nonfinite_json(value)
    if isinstance(value, str):
        if len(value) <= LIST_FIELD_CHARS:
            return value
        return (
            f"{value[:LIST_FIELD_CHARS]}… [truncated: {len(value):,} characters; the run page "
            "and the CSV export hold the whole value]"
        )
    if isinstance(value, dict):
        return {k: cap_long_values(v) for k, v in value.items()}
    if isinstance(value, list):
        return [cap_long_values(v) for v in value]
    return value


def nonfinite_json(value: Any) -> Any:
    """A NaN or infinite float as ``"NaN"``, ``"Infinity"`` or ``"-Infinity"`` (protobuf
    JSON's strings, as the lineage's own ``loss`` already arrives); anything else unchanged.

    Why: JSON has no NaN, and the response model sends one as null, which the UI cannot tell
    from a missing value: a run whose eval loss went NaN would read as a run without one
    (issue 51, items 1 and 12)."""
    if isinstance(value, float) and not math.isfinite(value):
        return json_float(value)
    return value


def _nonfinite_deep(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _nonfinite_deep(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_nonfinite_deep(v) for v in value]
    return nonfinite_json(value)


def _empty_result() -> dict[str, Any]:
    return {"customized": {}, "object": [], "count": 0}


def combined_search(
    store: RunStore, condition: dict[str, Any] | None, where: list[str] | None
) -> dict[str, Any]:
    """The body's condition ANDed with the compiled ``where`` expressions, searched."""
    if where:
        try:
            condition = merge_conditions(store.compile_where(where), condition)
        except ValueError as exc:
            if "cannot combine" in str(exc):  # contradictory constraints: nothing matches
                return _empty_result()
            raise
    return store.search(condition or None)


def _unpaged(condition: dict[str, Any] | None) -> dict[str, Any]:
    return {k: v for k, v in (condition or {}).items() if k not in ("offset", "limit")}


def _with_series(condition: dict[str, Any], columns: list[str] | None) -> dict[str, Any]:
    """``condition`` asking for the series statistics among ``columns`` (``max(loss)``...),
    so that their values are in the objects (``"series"``) and in the flat rows."""
    series = [c for c in columns or [] if parse_series_field(c)]
    if not series:
        return condition
    return {**condition, "series": list(dict.fromkeys([*condition.get("series", []), *series]))}


@router.post("/runs", response_model=schemas.SearchResult, summary="Filter, sort and page runs")
def search_runs(
    store: StoreDep, condition: ConditionBody = None, where: WhereQuery = None
) -> dict[str, Any]:
    """The body is a search condition; errors in it are 400 with the engine's message.
    Strings over 4 KiB are cut with a visible marker (``cap_long_values``)."""
    result = combined_search(store, condition, where)
    notes = _field_notes(store, condition, where, result)
    return {
        **result,
        "object": [cap_long_values(row) for row in result["object"]],
        "warnings": notes,
    }


def _field_notes(
    store: RunStore,
    condition: dict[str, Any] | None,
    where: list[str] | None,
    result: dict[str, Any],
) -> list[str]:
    """``filter_summary_lineage``'s warnings, as the answer's ``warnings``: a field the
    condition or the filter box names that no run has, with the nearest the runs have."""
    named: dict[str, Any] = {"and": [condition or {}, store.compile_where(where) if where else {}]}

    def known() -> list[str]:
        return [*store.search({"limit": 1})["customized"]]

    return missing_field_notes(named, result["customized"], known)


@router.post(
    "/runs/points",
    response_model=schemas.PointsResult,
    summary="Column values of all matching runs (for the chart)",
)
def run_points(store: StoreDep, request: schemas.PointsRequest) -> dict[str, Any]:
    condition = _with_series(_unpaged(request.condition), request.columns)
    result = combined_search(store, condition, request.where)
    rows = [flatten_object(obj, scalar_cells=True) for obj in result["object"][: request.max_runs]]
    return {
        "run_ids": [row["run_id"] for row in rows],
        "columns": {
            name: [nonfinite_json(row.get(name)) for row in rows] for name in request.columns
        },
        "count": result["count"],
    }


@router.post(
    "/runs/columns",
    response_model=schemas.ColumnsResult,
    summary="Columns of the matching runs, grouped for the column chooser",
)
def run_columns(
    store: StoreDep, condition: ConditionBody = None, where: WhereQuery = None
) -> dict[str, Any]:
    # one row is enough: ``customized`` describes every matching run, not just the page
    result = combined_search(store, {**_unpaged(condition), "offset": 0, "limit": 1}, where)
    names = columns_of([], result.get("customized", {}))
    groups: dict[str, list[str]] = {group: [] for group in COLUMN_GROUPS}
    for name in names:
        groups[column_group(name)].append(name)
    # the statistics of every scalar tag: the best of a curve, not only its last value
    groups["Series"] = [f"{stat}({tag})" for tag in store.series_tags() for stat in SHOWN_STATS]
    sortable = [
        n
        for n in [*names, *groups["Series"]]
        if n in STANDARD_FIELDS or n in SORTABLE_RUN_FIELDS or is_field(n) or parse_series_field(n)
    ]
    return {"groups": groups, "sortable": sortable}


@router.post(
    "/runs/export.csv",
    response_class=Response,
    summary="CSV of the filtered table",
    responses={200: {"content": {"text/csv": {}}}},
)
async def export_csv(
    store: StoreDep,
    condition: ConditionBody = None,
    where: WhereQuery = None,
    columns: Annotated[list[str] | None, Query()] = None,
) -> Response:
    """Every matching run (paging ignored, sort kept), chosen columns or all of them.

    Streamed, and made on the export pool (``server.export``): a bad condition is still a 400
    before the first byte, and exports never hold up the page's own requests.
    """

    def prepare() -> Iterator[str]:
        result = combined_search(store, _with_series(_unpaged(condition), columns), where)
        return csv_parts(store, result, columns)

    parts = await on_export_pool(prepare)
    return StreamingResponse(
        stream_on_pool(parts),
        media_type="text/csv; charset=utf-8",
        headers={"Content-Disposition": 'attachment; filename="trainledger-runs.csv"'},
    )


@router.post(
    "/where",
    response_model=schemas.WhereResult,
    summary="Compile --where expressions to a search condition",
)
def compile_where(store: StoreDep, request: schemas.WhereRequest) -> dict[str, Any]:
    return {"condition": store.compile_where(request.where)}


@router.get(
    "/datasets",
    response_model=schemas.DatasetGroups,
    summary="Dataset graphs, runs grouped by their data (loader settings aside)",
)
def dataset_groups(store: StoreDep) -> dict[str, Any]:
    return {"groups": group_datasets(store.search(None)["object"])}


@router.put(
    "/runs/{run_id:run}/annotation",
    response_model=schemas.AnnotationResult,
    summary="Set a run's tag (0..10) and/or remark (<= 1000 chars)",
)
def annotate(
    store: StoreDep, actor: WriterDep, run_id: str, body: schemas.Annotation
) -> dict[str, Any]:
    before = store.run_detail(run_id)["added_info"]
    after = store.annotate(run_id, tag=body.tag, remark=body.remark)
    changed = {k: after[k] for k in ("tag", "remark") if getattr(body, k) is not None}
    store.audit(
        actor, "annotate", run_id, before={k: before.get(k) for k in changed}, after=changed
    )
    return after


@router.get(
    "/runs/{run_id:run}",
    response_model=schemas.RunDetail,
    summary="One run: full lineage, checkpoints, status, annotation",
)
def run_detail(store: StoreDep, run_id: str) -> dict[str, Any]:
    detail = store.run_detail(run_id)
    detail["lineage"] = _nonfinite_deep(detail.get("lineage"))
    detail["checkpoints"] = store.checkpoints(run_id)
    detail["nonfinite"] = diverged(store.nonfinite(run_id))
    return detail
