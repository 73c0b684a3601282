"""Hyperparameter importance for a metric over the runs a filter selects (the UI's panel)."""

from __future__ import annotations

import threading
from collections import OrderedDict
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query

from trainledger.query import hyperparameter_importance
from trainledger.server.routes import get_store
from trainledger.server.routes.runs import combined_search
from trainledger.server.run_store import RunStore

router = APIRouter(prefix="/api/v1", tags=["importance"])

#: answers per (store, data version, question): seconds of forests, asked again each time the
#: panel opens; a new data version (a run added or changed, an annotation) is a new key
_CACHED = 32
_CACHE: OrderedDict[tuple[Any, ...], dict[str, Any]] = OrderedDict()
_LOCK = threading.Lock()


@router.get("/importance", summary="Importance of each hyperparameter for a metric")
def importance(
    store: Annotated[RunStore, Depends(get_store)],
    metric: Annotated[str, Query(min_length=1, description="e.g. accuracy or metric/accuracy")],
    where: Annotated[list[str] | None, Query(description="Filter, as --where.")] = None,
    include_ids: Annotated[
        bool, Query(description="Keep id-like fields (run counters, seeds), left out by default")
    ] = False,
) -> dict[str, Any]:
    """Permutation importance of a random forest on held-out runs, with its spread, direction,
    held-out R^2 and verdict, and scatter points (``trainledger.query.
    hyperparameter_importance``); ``reason`` instead when too few runs."""
    key = (id(store), store.stamp()["stamp"], metric, tuple(where or ()), include_ids)
    with _LOCK:
        hit = _CACHE.get(key)
        if hit is not None:
            _CACHE.move_to_end(key)
            return hit
    result = combined_search(store, None, where)
    answer = hyperparameter_importance(result, metric, include_ids=include_ids)
    with _LOCK:
        _CACHE[key] = answer
        while len(_CACHE) > _CACHED:
            _CACHE.popitem(last=False)
    return answer
