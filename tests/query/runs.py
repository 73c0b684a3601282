"""Write real lineage files for query tests (MindInsight's LineageEvent records, framed)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from trainledger.lineage.records import (
    EvalValues,
    TrainValues,
    dataset_graph_event,
    eval_event,
    train_event,
    user_defined_event,
)
from trainledger.storage import frame, lineage_file_name

GRAPH = {"op_type": "Batch", "batch_size": 16, "children": []}


def write_run(
    base: Path | str,
    name: str,
    *,
    mtime: float | None = None,
    ts: int = 1_800_000_000,
    metrics: dict[str, Any] | None = None,
    user: dict[str, Any] | None = None,
    graph: dict[str, Any] | None = None,
    train: bool = True,
    seq: int = 0,
    **values: Any,
) -> Path:
    """A run directory ``base/name`` with one lineage file holding the given facts.

    ``values`` are TrainValues fields (optimizer, learning_rate, batch_size, epoch, loss, ...).
    """
    run = Path(base) / name
    run.mkdir(parents=True, exist_ok=True)
    events = []
    if user:
        events.append(user_defined_event(user, wall_time=ts))
    if train:
        defaults = {
            "optimizer": "SGD",
            "learning_rate": 0.1,
            "batch_size": 16,
            "epoch": 1,
            "network": "MLP",
            "loss": 0.5,
            "device_num": 1,
        }
        defaults.update(values)
        events.append(train_event(TrainValues(**defaults), wall_time=ts))
    if graph is not None or train:
        events.append(dataset_graph_event(graph if graph is not None else GRAPH, wall_time=ts))
    if metrics is not None:
        events.append(eval_event(EvalValues(metrics=metrics, valid_dataset_size=10), wall_time=ts))
    path = run / lineage_file_name(ts, 0, "testhost", 1, seq)
    with open(path, "ab") as fh:
        for event in events:
            fh.write(frame(event.SerializeToString()))
    if mtime is not None:
        os.utime(path, (mtime, mtime))
    return run
