"""Real run directories for the server tests, written with the package's own writers."""

from __future__ import annotations

import math
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
from trainledger.lineage.writer import LineageWriter

OPTIMIZERS = ("Adam", "SGD", "Momentum")


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


def write_run(
    base: Path,
    name: str,
    i: int,
    *,
    scalars: int = 0,
    status: str = "finished",
    checkpoint: bool = True,
    **over: Any,
) -> Path:
    """One run: train + eval lineage, user fields, dataset graph, run record, a checkpoint,
    and ``scalars`` points of ``loss`` and ``accuracy``."""
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
    events = [
        user_defined_event({"team": "ab"[i % 2], "trial": i}),
        dataset_graph_event(graph_for(batch)),
        train_event(TrainValues(**values)),
        eval_event(
            EvalValues(
                metrics={"accuracy": 0.5 + i / 100},
                valid_dataset_path="/data/test",
                valid_dataset_size=128,
            )
        ),
        run_event(
            RunValues(
                status=status,
                start_time=now - 60,
                end_time=now,
                hostname="host",
                checkpoints=[(str(ckpt), 100 + i)] if ckpt else [],
            )
        ),
    ]
    LineageWriter(run_dir).write(events)
    if scalars:
        write_scalars(run_dir, i, scalars)
    return run_dir


def write_scalars(run_dir: Path, i: int, n: int, start: int = 0) -> None:
    from trainledger.summary.record import SummaryRecord

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
        write_run(base, f"run{i:02d}", i, scalars=scalars)
    return base
