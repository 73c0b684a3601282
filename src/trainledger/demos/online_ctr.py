"""The online CTR example: a DeepFM model trained forever on a drifting click stream.

What it shows, end to end: a producer *process* writes JSONL files of generated clicks; the
trainer tails them with ``FileTailSource`` (offsets persisted atomically); ``RecModel``
trains online with windowed AUC and log loss, a checkpoint every N seconds, TensorBoard
summaries and lineage; Ctrl-C (or SIGTERM) stops it cleanly with a final checkpoint and a
lineage status "stopped", and ``max_steps``/``max_seconds`` stop it as "finished".

``run()`` is what ``trainledger demo --online`` and ``examples/online_ctr.py`` call.
"""

from __future__ import annotations

import multiprocessing
import shutil
import sys
import time
import warnings
from multiprocessing.synchronize import Event
from pathlib import Path
from typing import Any

import torch
from torch import nn

from trainledger.callbacks import ModelCheckpoint, SummaryCollector, TrainLineage
from trainledger.checkpoint import CheckpointConfig
from trainledger.data import BadRecordWarning, FileTailSource
from trainledger.demos.click_stream import DENSE, FIELDS, collate_clicks, produce
from trainledger.demos.ctr_model import DeepFM
from trainledger.demos.dirs import next_run_dir
from trainledger.run import Callback, RecModel, RunContext

__all__ = ["run"]


def run(
    out: Path,
    max_steps: int = 2000,
    max_seconds: float | None = None,
    *,
    batch_size: int = 256,
    checkpoint_seconds: float = 10.0,
    metric_window: int = 200,
    log_every: int = 50,
    seed: int = 0,
    quiet: bool = False,
) -> dict[str, Any]:
    """Train the online CTR model until ``max_steps``, ``max_seconds`` or Ctrl-C.

    Writes ``out/online_ctr[_N]/`` (summaries, lineage, ``checkpoints/``) and the stream
    files under ``out/online_ctr_stream/``. Returns a summary of the run (run_dir, steps,
    stop_reason, window_metrics, latest_checkpoint, bad_records, records_read, seconds).
    The windowed metrics (over the last ``metric_window`` batches) are recomputed and written
    as summaries every ``log_every`` steps.
    """
    limit = max_steps if max_steps and max_steps > 0 else None  # 0/None: until Ctrl-C
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    run_dir = next_run_dir(out, "online_ctr")
    stream_dir = out / "online_ctr_stream"
    shutil.rmtree(stream_dir, ignore_errors=True)  # a fresh stream: old offsets would not match
    stream_dir.mkdir(parents=True)
    offsets = stream_dir / "_offsets.json"
    stop, producer = _start_producer(stream_dir, offsets, seed, limit, batch_size)
    model = _make_model(seed)
    source = FileTailSource(
        stream_dir,
        pattern="part-*.jsonl",
        batch_size=batch_size,
        collate_fn=collate_clicks,
        offsets_path=offsets,
        commit_interval=0.5,
        poll_interval=0.05,
    )
    result: dict[str, Any] = {}
    callbacks = _callbacks(run_dir, source, result, seed, batch_size, checkpoint_seconds, quiet)
    summary = _summary_collector(run_dir, log_every)
    started = time.monotonic()
    try:
        with warnings.catch_warnings():
            # bad lines are expected here (the producer injects some): the progress line and
            # the lineage carry their count; one warning per line would only be noise
            warnings.simplefilter("ignore", BadRecordWarning)
            model.online_train(
                source,
                callbacks=[callbacks[0], summary, *callbacks[1:]],
                max_steps=limit,
                max_seconds=max_seconds,
                metric_window=metric_window,
                metric_every=log_every,
            )
    finally:
        _stop_producer(stop, producer, source)
    seconds = time.monotonic() - started
    result.update(
        run_dir=str(run_dir),
        stream_dir=str(stream_dir),
        bad_records=source.bad_records,
        records_read=source.records_read,
        seconds=seconds,
        steps_per_second=result.get("steps", 0) / seconds if seconds > 0 else 0.0,
    )
    return result


def _start_producer(
    stream_dir: Path, offsets: Path, seed: int, limit: int | None, batch_size: int
) -> tuple[Event, Any]:
    """The click producer, a separate process writing the stream files."""
    ctx = multiprocessing.get_context("spawn")
    stop = ctx.Event()
    total = (limit + 10) * batch_size if limit else None
    producer = ctx.Process(
        target=produce,
        args=(str(stream_dir), str(offsets), stop),
        kwargs={"seed": seed, "total": total},
        name="click-producer",
        daemon=True,
    )
    producer.start()
    return stop, producer


def _stop_producer(stop: Event, producer: Any, source: FileTailSource) -> None:
    stop.set()
    source.close()
    producer.join(timeout=10)
    if producer.is_alive():
        producer.terminate()
        producer.join(timeout=5)


def _make_model(seed: int) -> RecModel:
    torch.manual_seed(seed)
    net = DeepFM(num_fields=len(FIELDS), num_dense=len(DENSE), num_buckets=2**14, dim=8)
    return RecModel(
        net,
        nn.BCEWithLogitsLoss(),
        torch.optim.Adam(net.parameters(), lr=2e-3),
        metrics={"auc": "auc", "logloss": "loss"},
    )


def _callbacks(
    run_dir: Path,
    source: FileTailSource,
    result: dict[str, Any],
    seed: int,
    batch_size: int,
    checkpoint_seconds: float,
    quiet: bool,
) -> list[Callback]:
    """Checkpoint first, then stream info, lineage, the report line and the result keeper
    (``run`` puts the SummaryCollector after the checkpoint)."""
    lineage = TrainLineage(
        str(run_dir),
        user_defined_info={"model": "DeepFM", "stream": "drifting-clicks", "seed": seed},
    )
    checkpoint = ModelCheckpoint(
        prefix="ctr",
        directory=run_dir / "checkpoints",
        config=CheckpointConfig(
            save_checkpoint_steps=0,
            save_checkpoint_seconds=max(1, round(checkpoint_seconds)),
            keep_checkpoint_max=3,
            append_info=["step_num", {"stream_batch_size": batch_size}],
        ),
    )
    report: list[Callback] = [] if quiet else [_Report(source)]
    return [checkpoint, _StreamInfo(source, lineage), lineage, *report, _Keep(result)]


def _summary_collector(run_dir: Path, log_every: int) -> SummaryCollector:
    """Lineage is written by the explicit TrainLineage; the collector writes loss, lr and the
    windowed metrics (window/auc, window/logloss) at every collection."""
    return SummaryCollector(
        str(run_dir),
        collect_freq=log_every,
        collect_specified_data={
            "collect_train_lineage": False,
            "collect_eval_lineage": False,
            "collect_dataset_graph": False,
            "collect_input_data": False,
            "collect_landscape": None,  # no weight snapshots: a stream has no loss landscape
        },
    )


class _StreamInfo(Callback):
    """Commits the source's offsets and puts how many records it read into lineage before
    TrainLineage writes its end record (the bad-record count is recorded by TrainLineage
    itself, as ``run.bad_records``)."""

    def __init__(self, source: FileTailSource, lineage: TrainLineage) -> None:
        self.source, self.lineage = source, lineage

    def on_train_end(self, run_context: RunContext) -> None:
        self.source.commit()
        self.lineage.update_user_defined_info({"records_read": self.source.records_read})


class _Report(Callback):
    """One line every ``every`` steps: the windowed metrics an online learner watches."""

    def __init__(self, source: FileTailSource, every: int = 250) -> None:
        self.source, self.every, self.start = source, every, time.monotonic()

    def on_train_step_end(self, run_context: RunContext) -> None:
        p = run_context.original_args()
        if p.cur_step_num % self.every:
            return
        w = p.window_metrics
        rate = p.cur_step_num / max(time.monotonic() - self.start, 1e-9)
        print(
            f"step {p.cur_step_num:>6}  window auc {w.get('auc', float('nan')):.4f}  "
            f"logloss {w.get('logloss', float('nan')):.4f}  "
            f"bad records {self.source.bad_records}  {rate:.0f} steps/s",
            file=sys.stderr,
        )


class _Keep(Callback):
    """Keeps the run's outcome for ``run``'s result."""

    def __init__(self, result: dict[str, Any]) -> None:
        self.result = result

    def on_train_end(self, run_context: RunContext) -> None:
        p = run_context.original_args()
        self.result.update(
            steps=p.cur_step_num,
            epochs=p.cur_epoch_num,
            stop_reason=p.stop_reason,
            window_metrics=dict(p.window_metrics),
            latest_checkpoint=p.latest_ckpt_file,
        )
