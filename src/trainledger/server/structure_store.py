"""Loss landscapes and computational graphs of single runs, for the run page.

Both are read from the whole of a run's summary files (a landscape is written once, after
training; the graph at the first step), so an answer is kept per run and re-read only when
the summary files changed (names, sizes or modification times), for the ``max_runs`` runs
asked last. Landscapes come from ``read_landscapes`` and graphs from ``read_graph``, which
cover trainledger's TensorBoard files and MindSpore's ``_MS`` files alike.
"""

from __future__ import annotations

import os
import threading
from collections import OrderedDict
from collections.abc import Callable
from pathlib import Path
from typing import Any

from trainledger.server.downsample import json_number
from trainledger.server.graph_view import MAX_NODES, graph_view
from trainledger.summary import list_event_files, list_mindspore_files, read_graph, read_landscapes

_Key = tuple[tuple[str, int, int], ...]


def files_key(run_dir: Path) -> _Key:
    """What changes when a run's summary files do: each file's name, size and mtime."""
    out = []
    for path in [*list_event_files(run_dir), *list_mindspore_files(run_dir)]:
        try:
            stat = os.stat(path)
        except OSError:
            continue
        out.append((Path(path).name, stat.st_size, stat.st_mtime_ns))
    return tuple(sorted(out))


def _floats(values: Any) -> list[Any]:
    return [json_number(float(v)) for v in values]


def landscape_json(item: dict[str, Any]) -> dict[str, Any]:
    """One landscape of ``read_landscapes`` as JSON (NaN and inf losses as null)."""
    path = item.get("path")
    point = item.get("convergence_point")
    return {
        "tag": item.get("tag", ""),
        "kind": item["kind"],
        "decomposition": item["decomposition"],
        "intervals": item["intervals"],
        "unit": item.get("unit"),
        "source": item.get("source"),
        "x": _floats(item["x"]),
        "y": _floats(item["y"]),
        "z": [_floats(row) for row in item["z"]],
        "path": None if path is None else {k: _floats(path[k]) for k in ("x", "y", "z")},
        "convergence_point": None if point is None else _floats(point),
        "explained_variance": item.get("explained_variance"),
    }


def read_run_landscapes(run_dir: Path) -> list[dict[str, Any]]:
    return [landscape_json(item) for item in read_landscapes(run_dir)]


def read_run_graph(run_dir: Path, max_nodes: int = MAX_NODES) -> dict[str, Any] | None:
    graph = read_graph(run_dir)
    return None if graph is None else graph_view(graph, max_nodes)


class StructureCache:
    """Answers of ``read`` per (run, what), re-read when the run's summary files changed."""

    def __init__(self, max_runs: int = 16) -> None:
        self.max_runs = max_runs
        self._lock = threading.Lock()
        self._items: OrderedDict[tuple[str, str], tuple[Path, _Key, Any]] = OrderedDict()

    def get(self, run_id: str, run_dir: Path, what: str, read: Callable[[Path], Any]) -> Any:
        """``read(run_dir)``, or the answer kept from the last call if no file changed."""
        key = files_key(run_dir)
        with self._lock:
            hit = self._items.get((run_id, what))
            if hit is not None and hit[0] == run_dir and hit[1] == key:
                self._items.move_to_end((run_id, what))
                return hit[2]
        value = read(run_dir)
        with self._lock:
            self._items[(run_id, what)] = (run_dir, key, value)
            self._items.move_to_end((run_id, what))
            while len(self._items) > 2 * self.max_runs:
                self._items.popitem(last=False)
        return value
