"""A base of curves that the scalar charts must draw truthfully (issue 51 items 4-8, 11): the
diverging base (``tests/diverging_runs.py``: a healthy run, a diverged one, one with a finite
6.8e25 eval loss), a resumed run whose sessions overlap (steps 6..10 written twice), and four
runs of different lengths and batch sizes, two per optimizer, with an eval accuracy at each
epoch's end (5 to 10 points) and a 300-point-or-so training loss.

On an epoch axis the four runs line up (their accuracy is ``acc_at(epoch) + offset``), on a
step axis they do not (a batch of 64 takes half the steps per epoch of a batch of 32).
"""

from __future__ import annotations

import math
from pathlib import Path

from tests.diverging_runs import write_diverging_base
from tests.runs import write_run
from trainledger.lineage.records import RunValues
from trainledger.summary import SummaryRecord

#: name: (optimizer, batch size, epochs, offset of its accuracy); 640 samples per epoch
RUNS = {
    "sgd-32": ("SGD", 32, 10, 0.02),
    "sgd-64": ("SGD", 64, 5, -0.02),
    "adam-32": ("Adam", 32, 8, 0.03),
    "adam-128": ("Adam", 128, 4, -0.03),
}
SAMPLES_PER_EPOCH = 640
RESUMED = "resumed"
RESUMED_AT = 6  # the second session starts again at step 6 (steps 6..10 written twice)
WALL0 = 1_700_000_000.0


def acc_at(epoch: float) -> float:
    return 0.9 - 0.5 * math.exp(-epoch / 2)


def loss_at(step: int, per_epoch: int) -> float:
    return 2.0 * math.exp(-step / (3 * per_epoch)) + 0.1


def write_curve_base(base: Path) -> Path:
    write_diverging_base(base)
    for name, (optimizer, batch, epochs, offset) in RUNS.items():
        per_epoch = SAMPLES_PER_EPOCH // batch
        steps = per_epoch * epochs
        run_dir = write_run(
            base,
            name,
            optimizer=optimizer,
            batch_size=batch,
            epoch=epochs,
            train_dataset_size=SAMPLES_PER_EPOCH,
            run=RunValues(status="finished", duration=60.0, total_steps=steps),
        )
        with SummaryRecord(run_dir) as record:
            for step in range(1, steps + 1):
                wall = WALL0 + step
                record.add_scalar("loss", loss_at(step, per_epoch), step, wall_time=wall)
                if step % per_epoch == 0:
                    accuracy = acc_at(step / per_epoch) + offset
                    record.add_scalar("eval/accuracy", accuracy, step, wall_time=wall)
    _resumed(base)
    return base


def _resumed(base: Path) -> None:
    """Steps 1..10 by one process, then a resumed one from step 6 to 12, a START at 6."""
    from tests.server.test_series_sessions import _event

    run = write_run(
        base,
        RESUMED,
        run=RunValues(
            status="finished",
            total_steps=12,
            sessions=[
                {
                    "start_time": WALL0,
                    "end_time": WALL0 + 100,
                    "first_step": 1,
                    "last_step": 10,
                    "hostname": "gpu-a",
                    "pid": 111,
                },
                {
                    "start_time": WALL0 + 200,
                    "end_time": WALL0 + 300,
                    "first_step": 6,
                    "last_step": 12,
                    "hostname": "gpu-b",
                    "pid": 222,
                },
            ],
        ),
    )
    first = b"".join(_event(s, 1.0 / s) for s in range(1, 11))
    second = _event(RESUMED_AT, start=True) + b"".join(_event(s, 0.5 / s) for s in range(6, 13))
    (run / "events.out.tfevents.1700000000.host.111.0").write_bytes(first)
    (run / "events.out.tfevents.1700000100.host.222.0").write_bytes(second)
