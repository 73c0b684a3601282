"""A small base of runs that go wrong, written by trainledger's own ``SummaryRecord``.

Why: the UI must tell the truth when training goes wrong (issue 51): ``healthy`` trains,
``diverged`` overflows to inf at step 72 and is NaN from step 80 on but for one finite point
at step 110 (its lr of 8 and its NaN eval loss in the lineage), and ``outlier`` has one huge
finite eval loss. Every run also writes a ``grad_norm`` with an inf (routine under mixed
precision: it flags no run).
"""

from __future__ import annotations

import math
from pathlib import Path

from tests.runs import write_run
from trainledger.lineage.records import RunValues
from trainledger.summary import SummaryRecord

STEPS = 120
INF_STEP, NAN_STEP = 72, 80
LONE_STEP = 110  # one finite loss among the diverged run's NaN: a point with no line
OUTLIER = 6.8e25


def loss_at(step: int, scale: float = 1.0) -> float:
    return scale * 2.0 * math.exp(-step / 40)


def write_diverging_base(base: Path, long_nan_at: int | None = None) -> Path:
    """The three runs under ``base``; ``long_nan_at``: the healthy run's ``loss`` is then
    30,000 points long (an overview in the index) with one NaN at that step."""
    runs = {
        "healthy": dict(learning_rate=0.01, eval_loss=0.40),
        "diverged": dict(learning_rate=8.0, eval_loss=math.nan),
        "outlier": dict(learning_rate=0.02, eval_loss=OUTLIER),
    }
    for i, (name, values) in enumerate(runs.items()):
        run_dir = write_run(
            base,
            name,
            metrics={"eval_loss": values["eval_loss"]},
            learning_rate=values["learning_rate"],
            run=RunValues(status="finished", duration=60.0),
        )
        with SummaryRecord(run_dir) as record:
            steps = STEPS if not (long_nan_at and name == "healthy") else 30_000
            for step in range(steps):
                loss = loss_at(step, 1.0 + 0.1 * i)
                if name == "diverged" and step >= INF_STEP:
                    loss = math.inf if step < NAN_STEP else math.nan
                    loss = 3.0 if step == LONE_STEP else loss
                if name == "healthy" and step == long_nan_at:
                    loss = math.nan
                record.add_scalar("loss", loss, step)
                record.add_scalar("grad_norm", math.inf if step == 30 else 1.0, step)
                if step % 10 == 0:
                    eval_loss = loss_at(step, 0.8 + 0.1 * i) + 0.05
                    if name == "outlier" and step == 50:
                        eval_loss = OUTLIER
                    if name == "diverged" and step >= INF_STEP:
                        eval_loss = math.nan
                    record.add_scalar("eval/loss", eval_loss, step)
    return base
