"""Real run directories for the tests: framed MindInsight LineageEvent records, summaries.

``write_run`` writes one lineage file with exactly the facts given (the query tests);
``sample_run`` builds a varied, complete run on top of it (train + eval lineage, user fields,
dataset graph, run record, a checkpoint file, scalars) for the server tests; ``make_base``
writes several.
"""

from __future__ import annotations

import math
import os
import time
from pathlib import Path
from typing import Any

from trainledger.lineage.records import (
    EvalValues,
    RunValues,
    TrainValues,
    dataset_graph_event,
    eval_event,
    run_event,
    train_event,
    user_defined_event,
)
from trainledger.storage import frame, lineage_file_name
from trainledger.summary.record import SummaryRecord

GRAPH = {"op_type": "Batch", "batch_size": 16, "children": []}
OPTIMIZERS = ("Adam", "SGD", "Momentum")


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
    eval_values: dict[str, Any] | None = None,
    run: RunValues | None = None,
    **values: Any,
) -> Path:
    """A run directory ``base/name`` with one lineage file holding the given facts.

    ``values`` are TrainValues fields (optimizer, learning_rate, batch_size, epoch, loss, ...);
    ``eval_values`` EvalValues fields besides the metrics (default: 10 validation samples);
    ``run`` the run record (status, times, host, checkpoints).
    """
    run_dir = Path(base) / name
    run_dir.mkdir(parents=True, exist_ok=True)
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
        evals = {"valid_dataset_size": 10, **(eval_values or {})}
        events.append(eval_event(EvalValues(metrics=metrics, **evals), wall_time=ts))
    if run is not None:
        events.append(run_event(run, wall_time=ts))
    path = run_dir / lineage_file_name(ts, 0, "testhost", 1, seq)
    with open(path, "ab") as fh:
        for event in events:
            fh.write(frame(event.SerializeToString()))
    if mtime is not None:
        os.utime(path, (mtime, mtime))
    return run_dir


def graph_for(batch_size: int, source: str = "TensorDataset") -> dict[str, Any]:
    return {
        "op_type": "DataLoader",
        "batch_size": batch_size,
        "num_workers": 0,
        "children": [
            {
                "op_type": "RandomSampler",
                "children": [{"op_type": source, "num_samples": 512, "children": []}],
            }
        ],
    }


def sample_run(
    base: Path,
    name: str,
    i: int,
    *,
    scalars: int = 0,
    status: str = "finished",
    checkpoint: bool = True,
    **over: Any,
) -> Path:
    """Run number ``i`` of a varied set: train + eval lineage, user fields, dataset graph, run
    record, a checkpoint, and ``scalars`` points of ``loss`` and ``accuracy``."""
    run_dir = base / name
    run_dir.mkdir(parents=True, exist_ok=True)
    batch = (16, 32, 64)[i % 3]
    values = dict(
        optimizer=OPTIMIZERS[i % 3],
        learning_rate=round(0.01 * (i + 1), 6),
        loss_function="CrossEntropyLoss",
        epoch=1 + i % 3,
        device_num=1,
        batch_size=batch,
        train_dataset_path="/data/train",
        train_dataset_size=512,
        network="MLP",
        loss=1.0 / (i + 2),
        model_size=1000 + i,
    )
    values.update(over)
    ckpt = None
    if checkpoint:
        (run_dir / "ckpt").mkdir(exist_ok=True)
        ckpt = run_dir / "ckpt" / f"mlp-{values['epoch']}_{10 * (i + 1)}.ckpt"
        ckpt.write_bytes(b"x" * (100 + i))
        values["model_path"] = f'{{"ckpt": "{ckpt}"}}'
    now = time.time()
    record = RunValues(
        status=status,
        start_time=now - 60,
        end_time=now,
        hostname="host",
        # (50 steps an epoch: the global step the lineage records, not the file name's)
        checkpoints=[(str(ckpt), 100 + i, (values["epoch"] - 1) * 50 + 10 * (i + 1))]
        if ckpt
        else [],
    )
    write_run(
        base,
        name,
        ts=int(now),
        user={"team": "ab"[i % 2], "trial": i},
        graph=graph_for(batch),
        metrics={"accuracy": 0.5 + i / 100},
        eval_values={"valid_dataset_path": "/data/test", "valid_dataset_size": 128},
        run=record,
        **values,
    )
    if scalars:
        write_scalars(run_dir, i, scalars)
    return run_dir


def write_scalars(run_dir: Path, i: int, n: int, start: int = 0) -> None:
    with SummaryRecord(run_dir) as record:
        for step in range(start, start + n):
            record.add_scalar(
                "loss", 2.0 * math.exp(-step / 20) + i * 0.1, step, wall_time=1_700_000_000.0 + step
            )
            record.add_scalar(
                "accuracy",
                0.5 + 0.4 * (1 - math.exp(-step / 15)),
                step,
                wall_time=1_700_000_000.0 + step,
            )


def make_base(base: Path, n: int = 6, scalars: int = 30) -> Path:
    base.mkdir(parents=True, exist_ok=True)
    for i in range(n):
        sample_run(base, f"run{i:02d}", i, scalars=scalars)
    return base


def make_diff_base(base: Path) -> Path:
    """Three runs for the diff view: ``a``, ``b`` and ``c`` differ only in ``batch_size``
    (16, 32, 16), ``user_defined/team`` (``b`` lacks it) and ``run/python_version`` (``c``);
    their learning rates are written ``1e-3`` and ``0.001``, the same float."""
    run = RunValues(status="finished", python_version="3.11.9", git_commit="abc")
    write_run(base, "a", learning_rate=1e-3, batch_size=16, user={"team": "a"}, run=run)
    write_run(base, "b", learning_rate=0.001, batch_size=32, run=run)
    other = RunValues(status="finished", python_version="3.12.1", git_commit="abc")
    write_run(base, "c", learning_rate=0.001, batch_size=16, user={"team": "a"}, run=other)
    return base
