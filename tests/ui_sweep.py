"""A sweep of thirteen runs as a team's first week leaves it, for the UI's tests of issue 51.

Why: the charts and tables must stay truthful over what real sweeps hold: learning rates
over four decades (``learning_rate`` and ``optimizer/lr`` one value under two names), batch
sizes of 16 to 64, summaries of different lengths, a resumed run (two sessions), checkpoints
whose file names hold the step within their epoch while the lineage records the global step,
and ``diverged``: lr 8, its train loss NaN, its eval loss NaN, its accuracy inf.
"""

from __future__ import annotations

import math
from pathlib import Path

from tests.runs import write_run
from trainledger.lineage.records import RunValues
from trainledger.summary import SummaryRecord

HEALTHY = 12
STEPS_PER_EPOCH = 25
START = 1_800_000_000.0


def lr_of(k: int) -> float:
    return float(f"{10 ** (-4 + k * 0.3):.3g}")  # 1e-4 .. 0.2


def write_sweep_base(base: Path) -> Path:
    """``run-00`` .. ``run-11`` and ``diverged`` under ``base``."""
    for k in range(HEALTHY + 1):
        name = f"run-{k:02d}" if k < HEALTHY else "diverged"
        lr = lr_of(k) if k < HEALTHY else 8.0
        epochs = 2 + k % 3
        batch = (16, 32, 64)[k % 3]
        run_dir = base / name
        ckpt_dir = run_dir / "ckpt"
        ckpt_dir.mkdir(parents=True)
        checkpoints = []
        for epoch in range(1, epochs + 1):
            path = ckpt_dir / f"m-{epoch}_{STEPS_PER_EPOCH}.ckpt"
            path.write_bytes(b"x" * 64)
            checkpoints.append((str(path), 64, epoch * STEPS_PER_EPOCH))
        start = START + 3600 * k
        sessions = [
            {
                "start_time": start,
                "end_time": start + 600.0,
                "first_step": 1,
                "last_step": epochs * STEPS_PER_EPOCH,
            }
        ]
        if k == 3:  # resumed: a second process trained it on
            sessions = [
                {"start_time": start, "end_time": start + 300.0, "first_step": 1, "last_step": 25},
                {
                    "start_time": start + 900,
                    "end_time": start + 1200.0,
                    "first_step": 26,
                    "last_step": epochs * STEPS_PER_EPOCH,
                },
            ]
        diverged = k == HEALTHY
        write_run(
            base,
            name,
            ts=int(start),
            metrics={
                "eval_loss": math.nan if diverged else 0.3 + 0.0731 * k + 0.00123456789 * k * k,
                "accuracy": math.inf if diverged else 0.5 + ((k * 7919) % 13) / 40,
            },
            learning_rate=lr,
            optimizer_settings={"lr": lr, "momentum": 0.9},
            batch_size=batch,
            epoch=epochs,
            loss=math.nan if diverged else 0.2 + 0.061234567 * k,
            run=RunValues(
                status="finished",
                start_time=start,
                end_time=sessions[-1]["end_time"],
                duration=sum(s["end_time"] - s["start_time"] for s in sessions),
                total_steps=epochs * STEPS_PER_EPOCH,
                sessions=sessions,
                checkpoints=checkpoints,
            ),
        )
        with SummaryRecord(run_dir) as record:
            for step in range(1, epochs * STEPS_PER_EPOCH + 1):
                loss = 2.0 * math.exp(-step * (0.01 + 0.002 * k))
                if diverged and step > 30:
                    loss = math.inf if step < 40 else math.nan
                record.add_scalar("loss", loss, step)
                if step % STEPS_PER_EPOCH == 0:
                    record.add_scalar("eval/loss", math.nan if diverged else loss + 0.05, step)
    return base
