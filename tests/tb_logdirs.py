"""TensorBoard logdirs written by the real writers (torch, Lightning, TensorBoard's own), for
the tests of runs without lineage files (``query/tb_runs.py``)."""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any


def torch_run(
    run_dir: Path, hparams: Mapping[str, Any], metrics: Mapping[str, float], losses: Sequence[float]
) -> Path:
    """``torch.utils.tensorboard.SummaryWriter``: ``loss`` per step, then ``add_hparams``
    (which writes a ``<time.time()>/`` folder of its own)."""
    from torch.utils.tensorboard import SummaryWriter  # (torch: only where a test needs it)

    with SummaryWriter(str(run_dir)) as writer:
        for step, loss in enumerate(losses):
            writer.add_scalar("loss", loss, step)
        writer.add_hparams(dict(hparams), dict(metrics))
    return run_dir


def lightning_version(
    save_dir: Path, name: str, hparams: Mapping[str, Any], hp_metric: float, loss: float
) -> Path:
    """One ``TensorBoardLogger`` run: ``<save_dir>/<name>/version_N`` (N the next free one),
    hyper-parameters logged as ``Trainer`` does (default ``hp_metric`` -1), then metrics."""
    from lightning.pytorch.loggers import TensorBoardLogger

    logger = TensorBoardLogger(str(save_dir), name=name)
    logger.log_hyperparams(dict(hparams))
    logger.log_metrics({"loss": loss, "hp_metric": hp_metric}, step=1)
    logger.finalize("success")
    return Path(logger.log_dir)


def scalar_event(tag: str, value: float, step: int) -> Any:
    """A TensorBoard ``Event`` of one ``simple_value`` (TensorBoard's own protobuf classes)."""
    from tensorboard.compat.proto import event_pb2, summary_pb2

    summary = summary_pb2.Summary(value=[summary_pb2.Summary.Value(tag=tag, simple_value=value)])
    return event_pb2.Event(wall_time=time.time(), step=step, summary=summary)


def keras_run(
    run_dir: Path,
    train: Sequence[float],
    validation: Sequence[float],
    hparams: Mapping[str, Any] | None = None,
    end_time: float | None = None,
) -> Path:
    """Keras's layout, with TensorBoard's own ``EventFileWriter``: ``epoch_loss`` per epoch in
    ``train/`` and ``validation/``; with ``hparams``, TensorBoard's HParams API in the run
    folder (the metric ``validation/epoch_loss``), and a session end at ``end_time``."""
    from tensorboard.compat.proto import event_pb2, summary_pb2
    from tensorboard.plugins.hparams import api_pb2, metadata, plugin_data_pb2
    from tensorboard.plugins.hparams import summary_v2 as hp
    from tensorboard.summary.writer.event_file_writer import EventFileWriter

    if hparams is not None:
        writer = EventFileWriter(str(run_dir))
        config = hp.hparams_config_pb(
            hparams=[hp.HParam(k) for k in hparams],
            metrics=[hp.Metric("epoch_loss", group="validation")],
        )
        for summary in (config, hp.hparams_pb(dict(hparams), start_time_secs=time.time())):
            writer.add_event(event_pb2.Event(wall_time=time.time(), summary=summary))
        if end_time is not None:
            end = plugin_data_pb2.HParamsPluginData(
                session_end_info=plugin_data_pb2.SessionEndInfo(
                    status=api_pb2.STATUS_SUCCESS, end_time_secs=end_time
                )
            )
            value = summary_pb2.Summary.Value(
                tag=metadata.SESSION_END_INFO_TAG, metadata=metadata.create_summary_metadata(end)
            )
            writer.add_event(
                event_pb2.Event(wall_time=time.time(), summary=summary_pb2.Summary(value=[value]))
            )
        writer.close()
    for part, losses in (("train", train), ("validation", validation)):
        writer = EventFileWriter(str(run_dir / part))
        for epoch, loss in enumerate(losses):
            writer.add_event(scalar_event("epoch_loss", loss, epoch))
        writer.close()
    return run_dir
