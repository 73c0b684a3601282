"""Generate local MLflow tracking stores for the import tests, through MLflow's own client."""

from __future__ import annotations

import logging
import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from mlflow.entities import Metric, Param, RunTag
from mlflow.tracking import MlflowClient

OPTIMIZERS = ("SGD", "Adam", "AdamW")


@contextmanager
def fast_dir() -> Iterator[Path]:
    """A scratch directory on tmpfs when there is one (SQLite commits fsync, and a store of
    1,000 runs is ~4,000 commits), else the ordinary temp directory."""
    root = "/dev/shm" if os.access("/dev/shm", os.W_OK) else None
    with tempfile.TemporaryDirectory(prefix="trainledger-mlflow-", dir=root) as path:
        yield Path(path)


def make_store(root: Path, runs: int, steps: int = 5) -> tuple[str, list[str]]:
    """A sqlite store with ``runs`` finished runs in experiment "sweep": params lr, optimizer,
    batch_size, epochs, a tag, metric histories accuracy/loss; returns (uri, run ids)."""
    logging.getLogger("alembic").setLevel(logging.WARNING)
    uri = f"sqlite:///{root / 'mlflow.db'}"
    client = MlflowClient(uri)
    exp = client.create_experiment("sweep", artifact_location=str(root / "artifacts"))
    ids = []
    for i in range(runs):
        run = client.create_run(exp, run_name=f"run-{i}")
        lr = round(0.001 * (1 + i % 100), 6)
        acc = [round((i * 37 % 101) / 101 * (s + 1) / steps, 6) for s in range(steps)]
        metrics = [
            Metric("accuracy", a, 1_700_000_000_000 + s * 1000, s) for s, a in enumerate(acc)
        ]
        metrics += [Metric("loss", 1.0 - a, 1_700_000_000_000 + s, s) for s, a in enumerate(acc)]
        params = [
            Param("lr", str(lr)),
            Param("optimizer", OPTIMIZERS[i % 3]),
            Param("batch_size", str(16 * (1 + i % 4))),
            Param("epochs", str(steps)),
            Param("note", f"trial {i}"),
        ]
        tags = [RunTag("team", "ab"[i % 2])]
        client.log_batch(run.info.run_id, metrics=metrics, params=params, tags=tags)
        client.set_terminated(run.info.run_id, "FAILED" if i % 10 == 9 else "FINISHED")
        ids.append(run.info.run_id)
    return uri, ids
