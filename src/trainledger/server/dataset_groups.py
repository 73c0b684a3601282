"""The Data lineage page's groups: runs on the same data, whatever their loader settings.

Why not group by ``dataset_mark``: MindInsight's mark is the hash of the whole dataset graph,
the loader's batch size included, so four runs over the same data with four batch sizes showed
as four "datasets". A group here is the graph without the loader-only settings (batch size,
workers, pinning, prefetching, dropping the last batch); the batch sizes and the marks of its
runs are listed as attributes of the group.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from trainledger.query import run_id_of

__all__ = ["LOADER_SETTINGS", "group_datasets"]

#: dataset-graph parameters that say how data is loaded, not which data it is
LOADER_SETTINGS = frozenset(
    {
        "batch_size",
        "drop_last",
        "drop_remainder",
        "num_workers",
        "num_parallel_workers",
        "pin_memory",
        "prefetch_factor",
        "persistent_workers",
    }
)


def _data_only(graph: Any) -> Any:
    if isinstance(graph, dict):
        return {k: _data_only(v) for k, v in graph.items() if k not in LOADER_SETTINGS}
    if isinstance(graph, list):
        return [_data_only(v) for v in graph]
    return graph


def _batch_sizes(graph: Any) -> set[int]:
    found: set[int] = set()
    if isinstance(graph, dict):
        value = graph.get("batch_size")
        if isinstance(value, int) and not isinstance(value, bool):
            found.add(value)
        for child in graph.values():
            found |= _batch_sizes(child)
    elif isinstance(graph, list):
        for child in graph:
            found |= _batch_sizes(child)
    return found


def group_datasets(objects: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    """Groups ``{"dataset_mark", "dataset_marks", "batch_sizes", "dataset_graph",
    "run_ids"}`` of a query's result objects, ordered by their first mark (runs without a
    graph last); ``dataset_mark`` is the group's first mark, its graph the first run's."""
    groups: dict[str, dict[str, Any]] = {}
    for obj in objects:
        graph = obj.get("dataset_graph") or {}
        key = json.dumps(_data_only(graph), sort_keys=True, default=str) if graph else ""
        mark = (obj.get("model_lineage") or {}).get("dataset_mark")
        group = groups.setdefault(
            key,
            {"dataset_graph": graph, "marks": set(), "batch_sizes": set(), "run_ids": []},
        )
        if mark is not None:
            group["marks"].add(str(mark))
        group["batch_sizes"] |= _batch_sizes(graph)
        group["run_ids"].append(run_id_of(str(obj.get("summary_dir", ""))))

    def mark_order(mark: str) -> tuple[int, str]:
        return (int(mark), "") if mark.isdigit() else (1 << 62, mark)

    out = []
    for group in groups.values():
        marks = sorted(group.pop("marks"), key=mark_order)
        out.append(
            {
                "dataset_mark": marks[0] if marks else None,
                "dataset_marks": marks,
                "batch_sizes": sorted(group.pop("batch_sizes")),
                **group,
            }
        )
    out.sort(key=lambda g: mark_order(g["dataset_mark"]) if g["dataset_mark"] else (1 << 63, ""))
    return out
